//! A distributed dot product that gives the same bits however the vectors are cut: each rank
//! adds its products into a `repro::Accumulator`, and one allreduce with
//! `op::ReproducibleSum` merges the ranks' accumulators. The result is the correctly rounded
//! sum of all the products, whatever the rank count, the split of ranks over processes and
//! threads, and the algorithm. Beside it, the same dot product with a plain `f64` sum, whose
//! bits change with the rank count.
//!
//! ```text
//! cargo run --release --example repro_dot                  # threads, p = 1 ..= 33
//! cargo build --release --features mpi --example repro_dot
//! mpirun -np 2 --bind-to none target/release/examples/repro_dot --mpi --threads 3
//! mpirun -np 3 --oversubscribe --bind-to none target/release/examples/repro_dot --mpi --threads 1
//! ```
//!
//! Options: `--n N` elements (default 100 000), `--threads T` ranks per process with `--mpi`
//! (default 2). The exit code is non-zero unless every rank of every run got the bits of the
//! sequential exact sum, and every element-wise reproducible sum of vectors (allreduce with
//! several algorithms, reduce, scan, two deals of the numbers among the ranks) was the
//! correctly rounded sum of its contributions.

use corecoll::op::{ReproducibleSum, Sum};
use corecoll::repro::Accumulator;
use corecoll::{Comm, Result, Team};
use std::process::ExitCode;

/// Element i of one of the two vectors: values spread over 2⁻²⁰⁰ … 2²⁰⁰ whose products
/// cancel, so that the order of a plain sum shows.
fn element(i: usize, salt: u64) -> f64 {
    let mut z = (i as u64 ^ salt).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 31)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z ^= z >> 29;
    let unit = (z >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
    unit * 2f64.powi((z % 401) as i32 - 200)
}

/// The i-th product.
fn product(i: usize) -> f64 {
    element(i, 1) * element(i, 2)
}

/// This rank's block of the n elements.
fn block(n: usize, p: usize, r: usize) -> std::ops::Range<usize> {
    n * r / p..n * (r + 1) / p
}

/// The dot product of the two vectors on `comm`: the reproducible one and the plain one.
fn dot(comm: &Comm, n: usize) -> Result<(f64, f64)> {
    let mine = block(n, comm.size(), comm.rank());
    let mut acc = [Accumulator::<f64>::new()];
    let mut plain = 0.0;
    for i in mine {
        acc[0].add(product(i));
        plain += product(i);
    }
    comm.allreduce(&mut acc, ReproducibleSum)?;
    let plain = comm.allreduce_value(plain, Sum)?;
    Ok((acc[0].value(), plain))
}

/// Elements of the vectors the ranks sum element-wise with `op::ReproducibleSum`.
const COLUMNS: usize = 100;

/// Contribution `k` of `p` to element `j` of the element-wise sum; rank r holds contribution
/// (r + `shift`·j) mod p, so that each shift deals the same numbers differently.
fn contribution(j: usize, k: usize) -> f64 {
    product(j * 64 + k)
}

/// Whether every element-wise reproducible sum on `comm` — allreduce with several algorithms,
/// reduce, scan, two deals of the contributions — is the correctly rounded sum of the
/// contributions (an accumulator's, computed here); a message on the first that is not.
fn columns(comm: &Comm) -> Result<Option<String>> {
    use corecoll::algorithm::Reduce;
    use corecoll::Algorithm;
    let (p, r) = (comm.size(), comm.rank());
    let exact = |j: usize, ranks: std::ops::Range<usize>| {
        let mut acc = Accumulator::<f64>::new();
        ranks.for_each(|k| acc.add(contribution(j, k)));
        acc.value().to_bits()
    };
    for shift in [0, 1] {
        let mine: Vec<f64> = (0..COLUMNS)
            .map(|j| contribution(j, (r + shift * j) % p))
            .collect();
        let algorithms = [
            Algorithm::Auto,
            Algorithm::Ring {
                block: corecoll::Block::Auto,
            },
            Algorithm::RecursiveDoubling,
            Algorithm::Hierarchical {
                segment: corecoll::Block::Auto,
            },
        ];
        for alg in algorithms {
            let mut v = mine.clone();
            comm.allreduce_with(&mut v, ReproducibleSum, alg)?;
            if let Some(j) = (0..COLUMNS).find(|&j| v[j].to_bits() != exact(j, 0..p)) {
                return Ok(Some(format!("allreduce {alg:?}, element {j}")));
            }
        }
        let mut v = mine.clone();
        comm.reduce_with(&mut v, ReproducibleSum, p - 1, Reduce::Auto)?;
        if r == p - 1 {
            if let Some(j) = (0..COLUMNS).find(|&j| v[j].to_bits() != exact(j, 0..p)) {
                return Ok(Some(format!("reduce, element {j}")));
            }
        }
        // The scan's prefix holds the contributions ranks 0..=r hold.
        let mut v = mine.clone();
        comm.scan(&mut v, ReproducibleSum)?;
        let prefix = |j: usize| {
            let mut acc = Accumulator::<f64>::new();
            (0..=r).for_each(|q| acc.add(contribution(j, (q + shift * j) % p)));
            acc.value().to_bits()
        };
        if let Some(j) = (0..COLUMNS).find(|&j| v[j].to_bits() != prefix(j)) {
            return Ok(Some(format!("scan, element {j}")));
        }
    }
    Ok(None)
}

/// The sequential exact sum of every product, rounded once.
fn reference(n: usize) -> f64 {
    let mut acc = Accumulator::<f64>::new();
    for i in 0..n {
        acc.add(product(i));
    }
    acc.value()
}

fn option(args: &[String], name: &str) -> Option<usize> {
    let at = args.iter().position(|a| a == name)?;
    args.get(at + 1)?.parse().ok()
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let n = option(&args, "--n").unwrap_or(100_000);
    if args.iter().any(|a| a == "--mpi") {
        return run_mpi(&args, n);
    }
    let want = reference(n);
    let mut plains: Vec<u64> = Vec::new();
    let mut ok = true;
    for p in 1..=33 {
        let out = Team::builder()
            .ranks(p)
            .build()
            .and_then(|team| team.run(|comm| Result::Ok((dot(comm, n)?, columns(comm)?))));
        let results = match out {
            Ok(results) => results
                .into_iter()
                .map(|res| res.map(|((repro, plain), wrong)| (repro, plain, wrong))),
            Err(e) => {
                eprintln!("repro_dot: {p} ranks: {e}");
                return ExitCode::FAILURE;
            }
        };
        for (r, res) in results.into_iter().enumerate() {
            match res {
                Ok((_, _, Some(wrong))) => {
                    eprintln!("repro_dot: p = {p}, rank {r}: element-wise sum wrong: {wrong}");
                    ok = false;
                }
                Ok((repro, plain, None)) => {
                    if repro.to_bits() != want.to_bits() {
                        eprintln!("repro_dot: p = {p}, rank {r}: {repro:e}, want {want:e}");
                        ok = false;
                    }
                    plains.push(plain.to_bits());
                }
                Err(e) => {
                    eprintln!("repro_dot: p = {p}, rank {r}: {e}");
                    ok = false;
                }
            }
        }
    }
    plains.sort_unstable();
    plains.dedup();
    println!(
        "reproducible sum: {want:e} ({:#018x}) on every rank for 1 to 33 ranks: {}",
        want.to_bits(),
        if ok { "yes" } else { "no" }
    );
    println!(
        "element-wise reproducible sums ({COLUMNS} elements; allreduce, reduce, scan; two \
         deals) correctly rounded for 1 to 33 ranks: {}",
        if ok { "yes" } else { "no" }
    );
    println!(
        "plain f64 sum: {} different results over the same runs",
        plains.len()
    );
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

#[cfg(feature = "mpi")]
fn run_mpi(args: &[String], n: usize) -> ExitCode {
    use mpi::environment::Threading;
    use mpi::traits::*;
    let threads = option(args, "--threads").unwrap_or(2);
    let (universe, level) =
        mpi::initialize_with_threading(Threading::Multiple).expect("MPI initialises once");
    if level < Threading::Multiple {
        eprintln!("repro_dot: MPI gave {level:?}");
        return ExitCode::FAILURE;
    }
    let world = universe.world();
    let team = match Team::builder().ranks(threads).mpi(&world) {
        Ok(team) => team,
        Err(e) => {
            eprintln!("repro_dot: {e}");
            return ExitCode::FAILURE;
        }
    };
    let want = reference(n);
    let results = match team.run(|comm| {
        let (repro, _) = dot(comm, n)?;
        Result::Ok((comm.size(), repro, columns(comm)?))
    }) {
        Ok(results) => results,
        Err(e) => {
            eprintln!("repro_dot: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut ok = true;
    let mut ranks = 0;
    for res in results {
        match res {
            Ok((p, _, Some(wrong))) => {
                eprintln!("repro_dot: {p} ranks: element-wise sum wrong: {wrong}");
                ok = false;
            }
            Ok((p, repro, None)) if repro.to_bits() == want.to_bits() => ranks = p,
            Ok((p, repro, None)) => {
                eprintln!("repro_dot: {p} ranks: {repro:e}, want {want:e}");
                ok = false;
            }
            Err(e) => {
                eprintln!("repro_dot: {e}");
                ok = false;
            }
        }
    }
    if ok && world.rank() == 0 {
        println!(
            "reproducible sum on {ranks} ranks ({} processes, {threads} thread(s) each): {want:e}, \
             the sequential bits; element-wise sums ({COLUMNS} elements) correctly rounded",
            world.size()
        );
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

#[cfg(not(feature = "mpi"))]
fn run_mpi(_args: &[String], _n: usize) -> ExitCode {
    eprintln!(
        "repro_dot: --mpi needs the mpi feature (cargo build --features mpi --example repro_dot)"
    );
    ExitCode::FAILURE
}
