//! Comments explain why; measured figures live in docs/ and docs/results/, with the command
//! that measured them (docs/architecture.md, "Conventions"). This fails on a comment line of
//! `src/` that carries a measurement: a ratio (`1.3×`, `1.1–1.4×`), a rate (`GB/s`), a time
//! set against another (`16 µs against 20 µs`), or what something took (`took 3.7 ms`).
//! Constants' values (`α = 12 µs`) and shapes (`2 × 2`) are not measurements and pass.

use std::fs;
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Whether `text` (a comment) carries a measured figure.
fn measured(text: &str) -> bool {
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        // A number directly before `×`: a ratio (a shape is written `2 × 2`, with spaces).
        if c == '×' && i > 0 && chars[i - 1].is_ascii_digit() {
            return true;
        }
    }
    let units = ["µs", "ms", "ns"];
    let timed = |w: &str| units.iter().any(|u| w.ends_with(u) || w == *u);
    let words: Vec<&str> = text.split_whitespace().collect();
    words.windows(3).any(|w| {
        // "16 µs against", "took 3.7 ms"
        (timed(w[1]) && w[0].chars().any(|c| c.is_ascii_digit()) && w[2] == "against")
            || (w[0] == "took" && w[1].chars().next().is_some_and(|c| c.is_ascii_digit()))
    }) || words
        .windows(2)
        .any(|w| w[1].starts_with("GB/s") && w[0].ends_with(|c: char| c.is_ascii_digit()))
}

#[test]
fn no_comment_carries_a_measured_figure() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    for f in rust_files(&src) {
        for (i, line) in fs::read_to_string(&f).unwrap().lines().enumerate() {
            let Some(at) = line.find("//") else {
                continue;
            };
            if measured(&line[at..]) {
                let rel = f.strip_prefix(&src).unwrap().display();
                found.push(format!("src/{rel}:{}: {}", i + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "measured figures in comments (move them to docs/results/ and name the file):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_check_sees_figures() {
    assert!(measured("// measured 1.14–1.20× the flat algorithm"));
    assert!(measured("/// 16 µs against 20 µs for 8 B"));
    assert!(measured("//! took 3.7 ms"));
    assert!(measured("// 57–67 GB/s"));
    assert!(!measured("// on 2 × 2 with groups of two"));
    assert!(!measured(
        "//! α = 12 µs and β = 0.02 ns/B (`OVERSUBSCRIBED`)"
    ));
    assert!(!measured("/// 1/β is the bandwidth in GB/s"));
}
