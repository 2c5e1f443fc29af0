//! Finding an executable on `PATH`: the one search that the crate (MPI launchers) and its
//! build script (compilers, MPI compiler wrappers, which it includes this file for) share. Uses
//! the standard library only.

use std::path::PathBuf;

/// The first executable file named `name` in the directories of `PATH`.
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}
