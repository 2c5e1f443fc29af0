//! Starting an MPI job from the bench and waiting for it: finding the launcher (`mpirun`, or
//! the one of a given MPI), the files the job writes, a limit after which a hung job is
//! stopped, the tail of its output for an error message, and Open MPI's consent to run as
//! root. The MPI rows of the sweep and the MPI level of `--calibrate` start their jobs
//! through these.

use crate::on_path::find_on_path;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Runs this very executable as a job of `np` processes under `mpirun` with the launcher's
/// `options`, the executable taking the arguments that `program_args` gives for the file it
/// is to write its result into, and returns that file's text. `Err` says why there is none:
/// `mpirun` missing, the job failed (with the tail of its output), or it ran past `limit` and
/// was stopped.
pub fn run_job(
    np: usize,
    options: &[&str],
    program_args: impl FnOnce(&Path) -> Vec<String>,
    limit: Option<Duration>,
) -> Result<String, String> {
    let mpirun = find_on_path("mpirun").ok_or_else(|| {
        "mpirun not found on PATH (Open MPI's is in Debian's openmpi-bin package)".to_string()
    })?;
    run_job_with(&mpirun, np, options, program_args, limit)
}

/// [`run_job`] with the launcher at `mpirun` (Open MPI's `mpirun`, MPICH's `mpiexec`: both
/// take `-np`).
pub fn run_job_with(
    mpirun: &Path,
    np: usize,
    options: &[&str],
    program_args: impl FnOnce(&Path) -> Vec<String>,
    limit: Option<Duration>,
) -> Result<String, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    let files = TempFiles::new()?;
    let log_err = |e: std::io::Error| format!("{}: {e}", files.log.display());
    let log = File::create(&files.log).map_err(log_err)?;
    let log2 = log.try_clone().map_err(log_err)?;
    let mut cmd = Command::new(mpirun);
    cmd.arg("-np").arg(np.to_string()).args(options);
    cmd.arg(&exe).args(program_args(&files.out));
    if running_as_root() {
        // Open MPI refuses to start as root unless told twice that this is intended (CI
        // containers run as root).
        cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    }
    cmd.stdin(Stdio::null()).stdout(log).stderr(log2);
    let shown = format!("{cmd:?}");
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", mpirun.display()))?;
    let status = wait(&mut child, limit);
    let tail = || log_tail(&files.log);
    let status = status.map_err(|e| format!("{e} ({shown}){}", tail()))?;
    if !status.success() {
        return Err(format!("{shown} failed ({status}){}", tail()));
    }
    std::fs::read_to_string(&files.out)
        .map_err(|e| format!("no result from the MPI job ({e}){}", tail()))
}

/// Waits for `child`; past `limit`, asks `mpirun` to stop (SIGTERM, which it passes on to its
/// processes), then kills it, and says so.
fn wait(child: &mut std::process::Child, limit: Option<Duration>) -> Result<ExitStatus, String> {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            return Ok(status);
        }
        if limit.is_some_and(|l| start.elapsed() > l) {
            if let Ok(pid) = libc::pid_t::try_from(child.id()) {
                // SAFETY: kill(2) with the id of our own child, which has not been reaped yet
                // (try_wait above found it running), so the id cannot belong to another
                // process; it only sends a signal.
                unsafe { libc::kill(pid, libc::SIGTERM) };
            }
            let grace = Instant::now();
            while grace.elapsed() < Duration::from_secs(5) {
                if child.try_wait().map_err(|e| e.to_string())?.is_some() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "the MPI job did not finish in {:.0} s and was stopped",
                start.elapsed().as_secs_f64()
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The last lines of the job's output (its stdout and stderr), prefixed for an error message;
/// empty when there is none.
fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() {
        return String::new();
    }
    let from = lines.len().saturating_sub(30);
    format!(":\n{}", lines[from..].join("\n"))
}

/// Whether `launcher --version` runs and its output mentions `marker`.
pub fn version_mentions(launcher: &Path, marker: &str) -> bool {
    Command::new(launcher)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .is_ok_and(|o| {
            String::from_utf8_lossy(&o.stdout).contains(marker)
                || String::from_utf8_lossy(&o.stderr).contains(marker)
        })
}

/// Whether this process runs as root (effective user id 0).
fn running_as_root() -> bool {
    // SAFETY: geteuid(2) takes no arguments, cannot fail and touches no memory of ours.
    unsafe { libc::geteuid() == 0 }
}

/// The job's two files in the temporary directory, named after this process and the time;
/// removed on drop.
struct TempFiles {
    /// The records that the worker's rank 0 writes.
    out: PathBuf,
    /// `mpirun`'s stdout and stderr.
    log: PathBuf,
}

impl TempFiles {
    /// Names two fresh files (they are created by whoever writes them first).
    fn new() -> Result<TempFiles, String> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let stem = format!("corecoll-bench-mpi-{}-{nanos}", std::process::id());
        let dir = std::env::temp_dir();
        Ok(TempFiles {
            out: dir.join(format!("{stem}.json")),
            log: dir.join(format!("{stem}.log")),
        })
    }
}

impl Drop for TempFiles {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.out);
        let _ = std::fs::remove_file(&self.log);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_past_its_deadline_is_stopped() {
        let mut child = Command::new("sleep").arg("30").spawn().unwrap();
        let e = wait(&mut child, Some(Duration::from_millis(100))).unwrap_err();
        assert!(e.contains("was stopped"), "{e}");
        let mut child = Command::new("true").spawn().unwrap();
        assert!(wait(&mut child, None).unwrap().success());
    }
}
