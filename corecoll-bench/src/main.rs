//! `corecoll-bench`: the benchmark sweep, in the manner of OSU's `osu_allreduce` and
//! ReproMPI. For each collective, size and algorithm (corecoll's, then the baselines) it times
//! the call on a team of pinned threads (`measure`: a barrier before each iteration, the
//! iteration's time max(end) − min(start) over the ranks), checks the result against a
//! sequential reference (`cell::check`), and prints a table; it writes CSV, JSON and an SVG
//! plot per collective. `--help` lists the options; docs/benchmarks.md explains the columns.
//! `--calibrate` measures the machine's cost constants instead and writes a profile
//! (`calibrate`, docs/calibration.md). Every part lives in the crate's library; this is the
//! dispatch of the command line to it.

use clap::Parser;
use corecoll_bench::{calibrate, cli, placement, simulate, sweep, tune};
use std::process::ExitCode;

fn main() -> ExitCode {
    // Die quietly of SIGPIPE when the reader of stdout goes away (`corecoll-bench | head`),
    // as command-line tools do, instead of panicking on the failed write: Rust sets SIGPIPE to
    // ignored before `main`.
    // SAFETY: `signal` with `SIG_DFL` installs no handler, only the default action; nothing
    // else in the process has touched SIGPIPE, and no other thread runs yet.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let args = cli::Args::parse();
    let result = if args.topology {
        print_topology(&args)
    } else if args.calibrate_mpi_worker {
        calibrate_worker(&args)
    } else if args.calibrate {
        calibrate::main(&args)
    } else if !args.tune.is_empty() {
        tune::main(&args)
    } else if args.simulate {
        simulate::main(&args)
    } else if args.mpi_worker {
        mpi_worker(&args)
    } else if args
        .collective
        .0
        .iter()
        .any(|c| c.form == corecoll_bench::domain::Form::Nonblocking)
    {
        corecoll_bench::overlap::main(&args)
    } else {
        sweep::main(&args)
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("corecoll-bench: {e}");
            ExitCode::from(2)
        }
    }
}

/// `--topology`: the detected machine, or the described one of `--machine`.
fn print_topology(args: &cli::Args) -> Result<ExitCode, String> {
    match &args.machine {
        Some(m) => {
            let t = m.topology()?;
            print!("{t}");
            println!(
                "(described by --machine {}: its {} cores wrap onto the {} this process may \
                 use)",
                m.spec,
                t.num_cores(),
                placement::available_cores().len()
            );
        }
        None => {
            let t = corecoll::Topology::detect();
            print!("{t}");
            println!(
                "(source: {}; one rank per core, SMT siblings left out)",
                t.source()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// One process of an MPI library's rows, started by its launcher from a sweep.
fn mpi_worker(args: &cli::Args) -> Result<ExitCode, String> {
    corecoll_bench::mpi_baseline::worker(args).map(|()| ExitCode::SUCCESS)
}

/// One process of the MPI ping-pong of `--calibrate`, started by `mpirun`.
#[cfg(feature = "mpi")]
fn calibrate_worker(args: &cli::Args) -> Result<ExitCode, String> {
    calibrate::mpi::worker(args).map(|()| ExitCode::SUCCESS)
}

/// Without the `mpi` feature there is no MPI ping-pong.
#[cfg(not(feature = "mpi"))]
fn calibrate_worker(_args: &cli::Args) -> Result<ExitCode, String> {
    Err("--calibrate-mpi-worker needs the `mpi` feature (cargo build --features mpi)".into())
}
