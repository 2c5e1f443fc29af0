//! `include/corecoll.h` is what cbindgen makes of the crate's code (with `cbindgen.toml`):
//! the header a C program compiles against declares every function the library exports, with
//! its signature as the code has it. `CORECOLL_WRITE_HEADER=1` writes the header instead of
//! comparing.

use std::path::Path;

#[test]
fn the_header_is_generated_from_the_code() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_crate(dir)
        .with_config(config)
        .generate()
        .expect("cbindgen reads the crate")
        .write(&mut generated);
    let generated = String::from_utf8(generated).expect("UTF-8");
    let path = dir.join("include/corecoll.h");
    if std::env::var_os("CORECOLL_WRITE_HEADER").is_some() {
        std::fs::write(&path, &generated).expect("include/corecoll.h is writable");
        return;
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "include/corecoll.h differs from the code; regenerate it with \
         CORECOLL_WRITE_HEADER=1 cargo test -p corecoll-c --test header"
    );
}
