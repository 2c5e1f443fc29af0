//! Checks the crate's collectives between MPI processes (`corecoll::hybrid::ProcessComm`, feature
//! `mpi`) against sequential references computed in the program: every process can compute
//! every process's input from (rank, index), so each knows the exact answer.
//!
//! ```text
//! cargo build --release --features mpi --example mpi_check
//! mpirun -np 2 target/release/examples/mpi_check
//! mpirun -np 3 --oversubscribe target/release/examples/mpi_check
//! ```
//!
//! (As root, Open MPI also wants `OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1`.)
//!
//! What it checks, one line per check on rank 0 (`ok` or `FAIL`), with counts 0, 1, 2, 7,
//! 1000 and 100 003:
//! - the transport's point-to-point (`ProcessComm::transport_checks`, hidden): exchanges at
//!   every size, zero-sized elements, many messages at once, and its mismatch errors (another
//!   call's tag, another length, another zero-sized count), which the collectives' call check
//!   otherwise catches first;
//! - allreduce with every transport-generic algorithm and `Auto`, on `u64` sum (exact),
//!   `f64` sum (close to the sequential sum, and bit-identical on every process) and a
//!   non-commutative op (composition of affine maps mod 2⁶¹ − 1 on a small `Copy` struct,
//!   which any reordering changes), and on a zero-sized element type;
//! - broadcast from every root with every transport-generic algorithm and `Auto`;
//! - reduce to every root with every transport-generic algorithm and `Auto` (the other
//!   processes' buffers unchanged);
//! - barrier;
//! - refusals that must be an error on every process: shared-memory-only algorithms, the ring
//!   with a non-commutative op;
//! - mismatched calls (length, root, algorithm, collective kind, element type): the same
//!   `Error::Mismatch` on every process, and the next call works.
//!
//! The exit code is non-zero if any check fails on any process. `--time BYTES` times one
//! allreduce size with every algorithm and `MPI_Allreduce` instead of checking. With `--panic`, process 0's
//! op panics inside an allreduce (the linear one, which combines there) instead, and the job must end (through `MPI_Abort`) rather
//! than hang: the integration test `tests/mpi_transport.rs` runs both.

use corecoll::algorithm::{Broadcast, Reduce};
use corecoll::hybrid::ProcessComm;
use corecoll::{op, Algorithm, Block, Error};
use mpi::collective::SystemOperation;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use std::fmt::Debug;
use std::process::ExitCode;
use std::time::Instant;

/// The vector lengths every collective is checked at.
const COUNTS: [usize; 6] = [0, 1, 2, 7, 1000, 100_003];

/// 2⁶¹ − 1, a Mersenne prime: the affine maps' modulus.
const M61: u64 = (1 << 61) - 1;

/// SplitMix64's finaliser: a well-mixed word from (rank, index, salt).
fn mix(r: usize, i: usize, salt: u64) -> u64 {
    let mut z = ((r as u64) << 40 ^ i as u64 ^ salt << 56).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// x ↦ a·x + b mod 2⁶¹ − 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Affine {
    a: u64,
    b: u64,
}

/// (a·b) mod 2⁶¹ − 1.
fn mul_mod(a: u64, b: u64) -> u64 {
    (u128::from(a) * u128::from(b) % u128::from(M61)) as u64
}

/// `f` then `g`: x ↦ g(f(x)). Associative, not commutative.
fn then(f: &Affine, g: &Affine) -> Affine {
    Affine {
        a: mul_mod(g.a, f.a),
        b: (mul_mod(g.a, f.b) + g.b) % M61,
    }
}

/// An element type the checks run on: its inputs and how results are compared.
trait Case: Copy + PartialEq + Debug + Send + Sync + 'static {
    /// Process `r`'s element `i`.
    fn input(r: usize, i: usize) -> Self;
    /// Whether `got` is an acceptable result for the reference `want`.
    fn close(got: &Self, want: &Self) -> bool {
        got == want
    }
    /// The value's bits, for the check that every process holds the same result.
    fn bits(&self) -> u64;
}

impl Case for u64 {
    fn input(r: usize, i: usize) -> u64 {
        mix(r, i, 1)
    }
    fn bits(&self) -> u64 {
        *self
    }
}

impl Case for f64 {
    fn input(r: usize, i: usize) -> f64 {
        // Irregular magnitudes and signs, so that sums round and their order shows.
        let m = mix(r, i, 2);
        (m >> 11) as f64 / (1u64 << 53) as f64 * 2000.0 - 1000.0 + (m & 7) as f64 * 1e-7
    }
    fn close(got: &f64, want: &f64) -> bool {
        (got - want).abs() <= 1e-9 * want.abs().max(1.0)
    }
    fn bits(&self) -> u64 {
        self.to_bits()
    }
}

impl Case for i32 {
    fn input(r: usize, i: usize) -> i32 {
        mix(r, i, 5) as i32
    }
    fn bits(&self) -> u64 {
        *self as u32 as u64
    }
}

impl Case for Affine {
    fn input(r: usize, i: usize) -> Affine {
        Affine {
            a: mix(r, i, 3) % M61,
            b: mix(r, i, 4) % M61,
        }
    }
    fn bits(&self) -> u64 {
        self.a.rotate_left(17) ^ self.b
    }
}

/// The run: the communicators and the tally.
struct Checker<'a> {
    world: &'a SimpleCommunicator,
    pc: &'a ProcessComm,
    rank: usize,
    p: usize,
    checks: usize,
    failures: usize,
}

impl Checker<'_> {
    /// Whether `local` holds on every process (one `MPI_Allreduce` on the user's world,
    /// beside the crate's own communicator).
    fn everywhere(&self, local: bool) -> bool {
        let mut all = 0u64;
        self.world
            .all_reduce_into(&u64::from(local), &mut all, SystemOperation::min());
        all == 1
    }

    /// Whether every process passes the same `h`.
    fn same(&self, h: u64) -> bool {
        let mut m = [0u64; 2];
        self.world
            .all_reduce_into(&[h, !h][..], &mut m[..], SystemOperation::max());
        m[0] == !m[1]
    }

    /// Records check `name`: passed if `problem` is `None` on every process; prints one line
    /// on rank 0 and this process's problem (if any) on stderr.
    fn report(&mut self, name: &str, problem: Option<String>, t0: Instant) {
        if let Some(why) = &problem {
            eprintln!("process {}: {name}: {why}", self.rank);
        }
        let ok = self.everywhere(problem.is_none());
        self.checks += 1;
        if !ok {
            self.failures += 1;
        }
        if self.rank == 0 {
            let status = if ok { "ok  " } else { "FAIL" };
            println!("{status} {name} ({:.3} s)", t0.elapsed().as_secs_f64());
        }
    }

    /// The reference x₀ ⊙ … ⊙ x_{p−1} of element `i`.
    fn reference<T: Case>(&self, i: usize, f: &impl Fn(&T, &T) -> T) -> T {
        (1..self.p).fold(T::input(0, i), |acc, r| f(&acc, &T::input(r, i)))
    }

    /// Allreduce of `T` with `alg` at every count: the reference on every process (`close`),
    /// and the same bits on every process.
    fn allreduce<T: Case, O: op::Op<T> + Copy>(
        &mut self,
        what: &str,
        op: O,
        f: impl Fn(&T, &T) -> T,
        alg: Algorithm,
    ) {
        let t0 = Instant::now();
        let mut problem = None;
        let mut hash = 0u64;
        for n in COUNTS {
            let mut buf: Vec<T> = (0..n).map(|i| T::input(self.rank, i)).collect();
            match self.pc.allreduce_with(&mut buf, op, alg) {
                Err(e) => problem = problem.or(Some(format!("n = {n}: {e}"))),
                Ok(()) => {
                    for (i, got) in buf.iter().enumerate() {
                        let want = self.reference(i, &f);
                        if !T::close(got, &want) {
                            problem = problem.or(Some(format!(
                                "n = {n}, element {i}: got {got:?}, want {want:?}"
                            )));
                            break;
                        }
                    }
                    hash = buf
                        .iter()
                        .fold(hash ^ n as u64, |h, x| h.rotate_left(7) ^ x.bits());
                }
            }
        }
        if !self.same(hash) {
            problem = problem.or(Some("results differ between processes".to_string()));
        }
        self.report(&format!("allreduce {what} {}", alg_name(alg)), problem, t0);
    }

    /// Broadcast from every root with `alg` at every count.
    fn broadcast<T: Case>(&mut self, what: &str, alg: Broadcast) {
        let t0 = Instant::now();
        let mut problem = None;
        for root in 0..self.p {
            for n in COUNTS {
                let mut buf: Vec<T> = (0..n).map(|i| T::input(self.rank, i)).collect();
                match self.pc.broadcast_with(&mut buf, root, alg) {
                    Err(e) => problem = problem.or(Some(format!("root {root}, n = {n}: {e}"))),
                    Ok(()) => {
                        if let Some(i) = (0..n).find(|&i| buf[i] != T::input(root, i)) {
                            problem = problem.or(Some(format!(
                                "root {root}, n = {n}, element {i}: got {:?}, want {:?}",
                                buf[i],
                                T::input(root, i)
                            )));
                        }
                    }
                }
            }
        }
        self.report(
            &format!("broadcast {what} {} (every root)", alg.name()),
            problem,
            t0,
        );
    }

    /// Reduce to every root with `alg` at every count: the reference at the root, the input
    /// unchanged elsewhere.
    fn reduce<T: Case, O: op::Op<T> + Copy>(
        &mut self,
        what: &str,
        op: O,
        f: impl Fn(&T, &T) -> T,
        alg: Reduce,
    ) {
        let t0 = Instant::now();
        let mut problem = None;
        for root in 0..self.p {
            for n in COUNTS {
                let mut buf: Vec<T> = (0..n).map(|i| T::input(self.rank, i)).collect();
                match self.pc.reduce_with(&mut buf, op, root, alg) {
                    Err(e) => problem = problem.or(Some(format!("root {root}, n = {n}: {e}"))),
                    Ok(()) => {
                        for (i, got) in buf.iter().enumerate() {
                            let want = if self.rank == root {
                                self.reference(i, &f)
                            } else {
                                T::input(self.rank, i)
                            };
                            if !T::close(got, &want) {
                                problem = problem.or(Some(format!(
                                    "root {root}, n = {n}, element {i}: got {got:?}, want {want:?}"
                                )));
                                break;
                            }
                        }
                    }
                }
            }
        }
        self.report(
            &format!("reduce {what} {} (every root)", alg.name()),
            problem,
            t0,
        );
    }

    /// A call that must fail on every process with an error `expected` accepts, the same
    /// message everywhere if `same_message`; then an allreduce that must work.
    fn refused(
        &mut self,
        name: &str,
        expected: fn(&Error) -> bool,
        same_message: bool,
        call: impl FnOnce(&ProcessComm) -> corecoll::Result<()>,
    ) {
        let t0 = Instant::now();
        let mut problem = None;
        let mut hash = 0;
        match call(self.pc) {
            Ok(()) => problem = Some("the call succeeded".to_string()),
            Err(e) if !expected(&e) => problem = Some(format!("unexpected error: {e}")),
            Err(e) => {
                if self.rank == 0 {
                    println!("     error: {e}");
                }
                hash = e.to_string().bytes().fold(0u64, |h, b| mix(0, b.into(), h));
            }
        }
        if same_message && !self.same(hash) {
            problem = problem.or(Some("the errors differ between processes".to_string()));
        }
        let mut v: Vec<u64> = (0..7).map(|i| u64::input(self.rank, i)).collect();
        match self.pc.allreduce(&mut v, op::Sum) {
            Err(e) => problem = problem.or(Some(format!("the next call failed: {e}"))),
            Ok(()) => {
                let sum = |a: &u64, b: &u64| a.wrapping_add(*b);
                if (0..7).any(|i| v[i] != self.reference(i, &sum)) {
                    problem = problem.or(Some("the next call's result is wrong".to_string()));
                }
            }
        }
        self.report(name, problem, t0);
    }
}

/// An allreduce algorithm's name, with its block if one is given.
fn alg_name(alg: Algorithm) -> String {
    match alg {
        Algorithm::DualRoot {
            block: Block::Elements(b),
        }
        | Algorithm::PipelinedTree {
            block: Block::Elements(b),
        }
        | Algorithm::TwoTree {
            block: Block::Elements(b),
        } => format!("{} (blocks of {b})", alg.name()),
        _ => alg.name().to_string(),
    }
}

fn is_mismatch(e: &Error) -> bool {
    matches!(e, Error::Mismatch { .. })
}

fn is_unsupported(e: &Error) -> bool {
    matches!(e, Error::Unsupported { .. })
}

/// Every check, tallied in `c`.
fn check_all(c: &mut Checker<'_>) {
    for (name, problem) in c.pc.transport_checks() {
        c.report(name, problem, Instant::now());
    }
    let sum_u64 = |a: &u64, b: &u64| a.wrapping_add(*b);
    let sum_f64 = |a: &f64, b: &f64| a + b;
    let affine = op::non_commutative(then);
    let mut algs: Vec<Algorithm> = Algorithm::ALL
        .into_iter()
        .filter(|a| !a.needs_shared_memory())
        .collect();
    // Small explicit blocks, so that the pipelines run many blocks at 100 003 elements.
    algs.push(Algorithm::PipelinedTree {
        block: Block::Elements(4000),
    });
    algs.push(Algorithm::DualRoot {
        block: Block::Elements(4000),
    });
    algs.push(Algorithm::TwoTree {
        block: Block::Elements(4000),
    });
    for &alg in &algs {
        c.allreduce::<u64, _>("u64 sum", op::Sum, sum_u64, alg);
        c.allreduce::<f64, _>("f64 sum", op::Sum, sum_f64, alg);
        // MPI's own collective takes built-in ops only (refused below).
        if !matches!(alg, Algorithm::Ring { .. }) && alg != Algorithm::Native {
            c.allreduce::<Affine, _>("affine (non-commutative)", affine, then, alg);
        }
    }
    // MPI's predefined ops against the crate's, on more types and ops.
    let max_i32 = |a: &i32, b: &i32| *a.max(b);
    let prod_i32 = |a: &i32, b: &i32| a.wrapping_mul(*b);
    let xor_u64 = |a: &u64, b: &u64| a ^ b;
    c.allreduce::<i32, _>("i32 max", op::Max, max_i32, Algorithm::Native);
    c.allreduce::<i32, _>("i32 prod (wrapping)", op::Prod, prod_i32, Algorithm::Native);
    c.allreduce::<u64, _>("u64 xor", op::BitXor, xor_u64, Algorithm::Native);
    c.reduce::<i32, _>("i32 max", op::Max, max_i32, Reduce::Native);
    let t0 = Instant::now();
    let mut problem = None;
    for n in [0usize, 7] {
        let mut units = vec![(); n];
        let unit = op::commutative(|_: &(), _: &()| ());
        if let Err(e) =
            c.pc.allreduce_with(&mut units, unit, Algorithm::RecursiveDoubling)
        {
            problem = Some(format!("n = {n}: {e}"));
        }
        if let Err(e) = c.pc.broadcast(&mut units, c.p - 1) {
            problem = Some(format!("n = {n}: {e}"));
        }
    }
    c.report("allreduce and broadcast of a zero-sized type", problem, t0);

    for alg in Broadcast::ALL {
        if alg.needs_shared_memory() {
            continue;
        }
        c.broadcast::<u64>("u64", alg);
        c.broadcast::<Affine>("16-byte struct", alg);
    }
    for alg in Reduce::ALL {
        if alg.needs_shared_memory() {
            continue;
        }
        c.reduce::<u64, _>("u64 sum", op::Sum, sum_u64, alg);
        c.reduce::<f64, _>("f64 sum", op::Sum, sum_f64, alg);
        if alg != Reduce::Native {
            c.reduce::<Affine, _>("affine (non-commutative)", affine, then, alg);
        }
    }
    let t0 = Instant::now();
    let problem = (0..3)
        .find_map(|_| c.pc.barrier().err())
        .map(|e| e.to_string());
    c.report("barrier", problem, t0);

    // Refusals: an error on every process (each naming its own rank).
    c.refused(
        "refused: allreduce direct (shared memory only)",
        is_unsupported,
        false,
        |pc| pc.allreduce_with(&mut [1u64; 5], op::Sum, Algorithm::Direct),
    );
    c.refused(
        "refused: broadcast direct (shared memory only)",
        is_unsupported,
        false,
        |pc| pc.broadcast_with(&mut [1u64; 5], 0, Broadcast::Direct),
    );
    c.refused(
        "refused: ring with a non-commutative op",
        is_unsupported,
        false,
        |pc| {
            let mut v = vec![Affine::input(0, 0); 5];
            pc.allreduce_with(&mut v, affine, Algorithm::Ring { block: Block::Auto })
        },
    );
    c.refused(
        "refused: native with a user op",
        is_unsupported,
        false,
        |pc| {
            let mut v = vec![Affine::input(0, 0); 5];
            pc.allreduce_with(&mut v, affine, Algorithm::Native)
        },
    );
    c.refused(
        "refused: native reduce of f64 min (total_cmp against C's <)",
        is_unsupported,
        false,
        |pc| pc.reduce_with(&mut [1.0f64; 5], op::Min, 0, Reduce::Native),
    );
    c.refused(
        "refused: native u128 sum (no MPI type)",
        is_unsupported,
        false,
        |pc| pc.allreduce_with(&mut [1u128; 5], op::Sum, Algorithm::Native),
    );
    c.refused(
        "refused: root out of range",
        |e| matches!(e, Error::RankOutOfRange { .. }),
        false,
        |pc| pc.broadcast(&mut [1u64; 5], pc.size()),
    );

    // Mismatched calls: the last process differs.
    let (last, r) = (c.p - 1, c.rank);
    c.refused("mismatch: length", is_mismatch, true, |pc| {
        let mut v = vec![1u64; if r == last { 8 } else { 7 }];
        pc.allreduce(&mut v, op::Sum)
    });
    c.refused("mismatch: built-in op", is_mismatch, true, |pc| {
        let mut v = [3u64; 9];
        if r == last {
            pc.allreduce_with(&mut v, op::Max, Algorithm::Native)
        } else {
            pc.allreduce_with(&mut v, op::Sum, Algorithm::Native)
        }
    });
    c.refused("mismatch: root", is_mismatch, true, |pc| {
        pc.broadcast(&mut [1u64; 100], if r == last { 0 } else { last })
    });
    c.refused("mismatch: algorithm", is_mismatch, true, |pc| {
        let alg = if r == last {
            Algorithm::Chain { block: Block::Auto }
        } else {
            Algorithm::DualRoot { block: Block::Auto }
        };
        pc.allreduce_with(&mut [1u64; 100], op::Sum, alg)
    });
    c.refused("mismatch: element type", is_mismatch, true, |pc| {
        if r == last {
            pc.allreduce(&mut [1u32; 7], op::Sum)
        } else {
            pc.allreduce(&mut [1i32; 7], op::Sum)
        }
    });
    c.refused(
        "mismatch: collective (barrier against reduce)",
        is_mismatch,
        true,
        |pc| {
            if r == last {
                pc.barrier()
            } else {
                pc.reduce(&mut [1u64; 7], op::Sum, 0)
            }
        },
    );
}

/// `--time BYTES`: the median time of an allreduce of `BYTES` of `f64` (sum) with each
/// transport-generic algorithm and with the MPI library's own `MPI_Allreduce`, and of the
/// barriers (the crate's is its call check alone), over
/// repetitions separated by barriers, printed by rank 0. Not a check: for a first look at the
/// schedules between processes (the benchmark's sweep is the real measurement).
fn time_allreduce(world: &SimpleCommunicator, pc: &ProcessComm, bytes: usize) {
    let n = bytes / 8;
    let reps = 50;
    let median = |f: &mut dyn FnMut()| {
        let mut ts: Vec<f64> = (0..reps)
            .map(|_| {
                world.barrier();
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64()
            })
            .collect();
        ts.sort_by(f64::total_cmp);
        // The slowest process's median is the collective's time.
        let mut m = 0.0f64;
        world.all_reduce_into(&ts[reps / 2], &mut m, SystemOperation::max());
        m
    };
    let mut v: Vec<f64> = (0..n).map(|i| f64::input(pc.rank(), i)).collect();
    let send = v.clone();
    let mpi = median(&mut || {
        world.all_reduce_into(&send[..], &mut v[..], SystemOperation::sum());
    });
    let mut rows = vec![("MPI_Allreduce (out of place, as OSU's)".to_string(), mpi)];
    rows.push(("MPI_Barrier".to_string(), median(&mut || world.barrier())));
    rows.push((
        "ProcessComm::barrier (the call check alone)".to_string(),
        median(&mut || pc.barrier().expect("barrier")),
    ));
    for alg in Algorithm::ALL {
        if alg.needs_shared_memory() {
            continue;
        }
        let t = median(&mut || {
            pc.allreduce_with(&mut v, op::Sum, alg).expect("allreduce");
        });
        rows.push((alg.name().to_string(), t));
    }
    if pc.rank() == 0 {
        println!(
            "allreduce of {bytes} bytes (f64 sum) on {} processes, median of {reps}:",
            pc.size()
        );
        for (name, t) in rows {
            println!("  {name:<50} {:>10.1} us", t * 1e6);
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let panic_mode = args.iter().any(|a| a == "--panic");
    let time_bytes = args.iter().position(|a| a == "--time").map(|i| {
        args.get(i + 1)
            .and_then(|b| b.parse::<usize>().ok())
            .unwrap_or(1 << 20)
    });
    let Some(universe) = mpi::initialize() else {
        eprintln!("mpi_check: MPI was initialised already");
        return ExitCode::FAILURE;
    };
    let world = universe.world();
    let pc = match ProcessComm::new(&world) {
        Ok(pc) => pc,
        Err(e) => {
            eprintln!("mpi_check: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (rank, p) = (pc.rank(), pc.size());
    if panic_mode {
        let me = rank;
        let boom = op::commutative(move |a: &u64, b: &u64| {
            assert!(me != 0, "the op panics on process 0, as asked (--panic)");
            a.wrapping_add(*b)
        });
        let mut v = vec![1u64; 1000];
        let r = pc.allreduce_with(&mut v, boom, Algorithm::Linear);
        eprintln!("process {rank}: the allreduce returned {r:?} instead of the job ending");
        return ExitCode::FAILURE;
    }
    if let Some(bytes) = time_bytes {
        time_allreduce(&world, &pc, bytes);
        drop(pc);
        return ExitCode::SUCCESS;
    }
    let t0 = Instant::now();
    let mut c = Checker {
        world: &world,
        pc: &pc,
        rank,
        p,
        checks: 0,
        failures: 0,
    };
    check_all(&mut c);
    let (checks, failures) = (c.checks, c.failures);
    if rank == 0 {
        println!(
            "mpi_check: {} of {checks} checks passed on {p} processes in {:.2} s",
            checks - failures,
            t0.elapsed().as_secs_f64()
        );
    }
    drop(pc); // frees its communicator before MPI is finalised with `universe`
    if failures == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
