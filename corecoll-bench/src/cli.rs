//! The command line: the options of `corecoll-bench` (clap), over the values and parsers of
//! `domain`.

use crate::domain::{
    parse_calls, parse_machine, parse_placement, parse_sizes, Cache, Calls, Dtype, Machine, OpName,
    Placement, Sizes,
};
use clap::builder::PossibleValue;
use clap::{Parser, ValueEnum};
use std::path::PathBuf;

/// Sweeps a collective over message sizes and algorithms on this machine's cores, beside
/// baselines (the ideal data movement, a std-only version, a channel ring) and peers (OpenMP,
/// rayon, Open MPI's and MPICH's own collectives, where the build found them), and prints the
/// table; writes CSV, JSON and an SVG plot.
#[derive(Debug, Clone, Parser)]
#[command(name = "corecoll-bench", version, about, long_about = None)]
pub struct Args {
    /// Collectives to sweep, comma-separated, or `all`.
    #[arg(long, default_value = "allreduce", value_parser = parse_calls)]
    pub collective: Calls,
    /// Algorithms, baselines and peers: `all`, or a comma-separated list of names (`auto`,
    /// `direct`, `ring`, …, `limit`, `std-naive`, `channels`, `openmp-reduction`,
    /// `openmp-slices`, `rayon-reduce`, `rayon-chunks`, `openmpi`, `mpich`, and
    /// `openmpi-reduce-bcast`, `mpich-reduce-bcast`; `mpi` and `mpi-reduce-bcast` select those
    /// of every MPI library, `openmp` and `rayon` both rows of that peer). `NAME:VALUE` sets a parameter:
    /// the block or segment size in bytes of `chain`, `ring` (its largest piece),
    /// `pipelined-tree`, `dual-root`, `two-tree` and `hierarchical` (`hierarchical:64KiB`),
    /// the fanout of `ring-leaders` (`ring-leaders:2` or `ring-leaders:fanout=2`).
    #[arg(long, default_value = "all")]
    pub algorithms: String,
    /// Run on a described (synthetic) machine instead of the detected one: `PxGxC`
    /// (packages × L3 groups per package × cores per group, e.g. `2x2x4`), `PxC`, `C`, or
    /// uneven `3+2/4` (packages split by `/`, their L3 groups' core counts by `+`). Its
    /// cores wrap onto the real ones; placements and `--per-socket` apply to it.
    #[arg(long, value_parser = parse_machine)]
    pub machine: Option<Machine>,
    /// Ranks (threads); default: one per available core (or per core of the placement).
    #[arg(long)]
    pub ranks: Option<usize>,
    /// Bytes per rank: a range `LO..HI` (powers of 4 from LO, HI included) or a list
    /// `8,1KiB,1MiB`; suffixes B, KiB, MiB, GiB (also K, M, G).
    #[arg(long, default_value = "8..64MiB", value_parser = parse_sizes)]
    pub sizes: Sizes,
    /// Element type.
    #[arg(long = "type", value_enum, default_value_t = Dtype::F64)]
    pub dtype: Dtype,
    /// Reduction op of the reducing collectives.
    #[arg(long, value_enum, default_value_t = OpName::Sum)]
    pub op: OpName,
    /// Root of the rooted collectives.
    #[arg(long, default_value_t = 0)]
    pub root: usize,
    /// Timed iterations per cell; default: as many as fit in `--time`, at least 3.
    #[arg(long)]
    pub iters: Option<usize>,
    /// Warm-up iterations per cell; default: enough for a tenth of `--time`, at least 2.
    #[arg(long)]
    pub warmup: Option<usize>,
    /// Run the whole sweep this many times, one pass after another, and keep each cell's pass
    /// with the lowest median: on a shared machine slow spells last seconds and hit whole
    /// runs of consecutive cells, which repeating the passes, not the iterations, gets past.
    #[arg(long, default_value_t = 1)]
    pub repeat: usize,
    /// Measure each size's rows in this many interleaved rounds: round by round every row
    /// runs for `--time`/ROUNDS (and `--iters`/ROUNDS iterations, rounded up), each round
    /// starting one row later. A row's median is the median of its rounds' medians (each
    /// round counts once); its min, p95 and mean are over all its rounds' iterations.
    /// A slow spell of the machine then falls on every row of the size alike instead of on
    /// whichever rows it happened to meet, so that rows compared with each other (auto
    /// against the best, Block::Auto against fixed blocks, the guidelines) are measured
    /// under the same conditions. Each round builds the row's buffers anew and warms up
    /// (`--warmup` per round).
    #[arg(long, default_value_t = 1)]
    pub rounds: usize,
    /// Seconds of timed iterations per cell when `--iters` is not given.
    #[arg(long, default_value_t = 0.1)]
    pub time: f64,
    /// Where the ranks run: `compact`, `spread`, `socket:N`, `cores:LIST` (e.g. `cores:0,2-3`),
    /// `none` (not pinned).
    #[arg(long, default_value = "compact", value_parser = parse_placement)]
    pub placement: Placement,
    /// The sweep on each socket's cores alone, then on all of them.
    #[arg(long)]
    pub per_socket: bool,
    /// Print the detected topology (packages, NUMA nodes, L3 groups, cores, as hwloc's
    /// `lstopo` would, briefly) and where it came from, and exit; with `--machine`, the
    /// described one.
    #[arg(long)]
    pub topology: bool,
    /// A different buffer every iteration (caches cold) instead of reusing one (warm). The
    /// buffers of all ranks together span twice the last-level cache, or the size in
    /// `CORECOLL_COLD_BYTES` (e.g. `64MiB`) when it is set.
    #[arg(long, conflicts_with = "touch")]
    pub cold: bool,
    /// Application-like buffers: before every call (outside its timed window) each rank
    /// writes its whole input, as a solver or a training step does, so that no algorithm
    /// profits from data that the previous call left in a cache where it reads it. The
    /// slowest rank's write is timed apart (the `touch_us` column).
    #[arg(long)]
    pub touch: bool,
    /// Check the self-consistent performance guidelines (Träff, Gropp and Thakur): sweep the
    /// collectives the rules need, each with the algorithm a user gets (`auto`), instead of
    /// `--collective` and `--algorithms`, and print which rules hold. Sizes are rounded down to
    /// multiples of ranks × element size so that every collective moves the same bytes.
    /// (A sweep that measures both sides of a rule prints the checks without it.)
    #[arg(long)]
    pub guidelines: bool,
    /// The guidelines' tolerance: a rule is violated when its left side is above
    /// (1 + this) × its right side (the sides are separate cells; their medians are noisy).
    #[arg(long, default_value_t = crate::output::checks::DEFAULT_TOLERANCE)]
    pub guideline_tolerance: f64,
    /// Fixed blocks to sweep beside `Block::Auto`: each selected pipelined algorithm
    /// (chain, ring, pipelined-tree, dual-root, two-tree) also runs with each of these block
    /// sizes (a list or range as `--sizes` takes), and a table compares Auto with the best fixed block.
    #[arg(long, value_parser = parse_sizes)]
    pub blocks: Option<Sizes>,
    /// CSV output (default: target/corecoll-bench/results.csv).
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// JSON output (default: target/corecoll-bench/results.json).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Also write every timed iteration of every row as CSV (pass, round, iteration and its
    /// time beside the row's scope, collective, algorithm, ranks and bytes): the
    /// distributions behind the statistics, which on shared cores can have several modes.
    #[arg(long)]
    pub samples: Option<PathBuf>,
    /// SVG plot (default: `target/corecoll-bench/COLLECTIVE.svg` per collective).
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
    /// Measure this machine's cost constants (α and β per level by ping-pong, γ of a sum) and
    /// write them as a profile that teams load (`CORECOLL_PROFILE=PATH`); `--time` is the
    /// seconds per size and level. See docs/calibration.md.
    #[arg(long)]
    pub calibrate: bool,
    /// Where `--calibrate` writes the profile (default: target/corecoll-bench/profile.json).
    #[arg(long, value_name = "PATH")]
    pub profile_out: Option<PathBuf>,
    /// Derive `Auto`'s decision tables from these sweeps' JSON results (`--json`; comma
    /// separated, one per rank count): per collective and rank count the fastest algorithm
    /// over each range of sizes. Writes them into a profile at `--profile-out` (on top of the
    /// profile `CORECOLL_PROFILE` names, if any) and, with `--tables-out`, alone as JSON. No
    /// measuring. See docs/tuning.md.
    #[arg(long, value_name = "RESULTS", value_delimiter = ',')]
    pub tune: Vec<PathBuf>,
    /// `--tune`: also write the tables alone (a JSON array, the form of the crate's
    /// built-in tables).
    #[arg(long, value_name = "PATH")]
    pub tables_out: Option<PathBuf>,
    /// `--tune`: keep the algorithm of the next smaller size while it is within this fraction
    /// of the fastest (fewer switches for noise to cause).
    #[arg(long, default_value_t = 0.05)]
    pub tune_hysteresis: f64,
    /// Predict instead of measure: run the selected collectives' algorithms in the cost-model
    /// simulator on `--ranks` ranks (default 1152, the 36 × 32 machine of Träff 2021) over
    /// `--sizes`, under `--alpha-ns`, `--beta-ns`, `--gamma-ns` (or `--model-profile`). See
    /// docs/model.md.
    #[arg(long)]
    pub simulate: bool,
    /// `--simulate`: start-up time per message, ns. The default, with `--beta-ns`, is
    /// estimated from Table 2 of Träff 2021 (36 × 8 processes on OmniPath; docs/model.md).
    #[arg(long, default_value_t = 1200.0)]
    pub alpha_ns: f64,
    /// `--simulate`: transfer time per byte, ns.
    #[arg(long, default_value_t = 0.73)]
    pub beta_ns: f64,
    /// `--simulate`: reduction time per byte, ns.
    #[arg(long, default_value_t = 0.1)]
    pub gamma_ns: f64,
    /// `--simulate`: one transfer at a time per rank (a send or a receive), instead of one send
    /// and one receive at once.
    #[arg(long)]
    pub one_port: bool,
    /// `--simulate`: take α, β and γ from this calibrated profile (`--calibrate`) instead.
    #[arg(long, value_name = "PATH")]
    pub model_profile: Option<PathBuf>,
    /// `--simulate --model-profile`: the profile's level (`l3`, `package`, `machine`, `mpi`,
    /// `oversubscribed`).
    #[arg(long, default_value = "mpi")]
    pub model_level: String,
    /// `--simulate` on a hierarchical machine: nodes (with `--sockets`, `--cores`; any of the
    /// three selects it, the others default to 1). Ranks are placed compactly; the flat
    /// algorithms and the hierarchical compositions (`--compose`) are predicted side by side.
    #[arg(long)]
    pub nodes: Option<usize>,
    /// `--simulate`: sockets per node of the hierarchical machine.
    #[arg(long)]
    pub sockets: Option<usize>,
    /// `--simulate`: cores (ranks) per socket of the hierarchical machine.
    #[arg(long)]
    pub cores: Option<usize>,
    /// `--simulate --nodes`: α within a socket, ns (default: the profile's `l3` level).
    #[arg(long)]
    pub socket_alpha_ns: Option<f64>,
    /// `--simulate --nodes`: β within a socket, ns/B (default: the profile's `l3` level).
    #[arg(long)]
    pub socket_beta_ns: Option<f64>,
    /// `--simulate --nodes`: α across the sockets of a node, ns (default: the profile's
    /// `machine` level).
    #[arg(long)]
    pub node_alpha_ns: Option<f64>,
    /// `--simulate --nodes`: β across the sockets of a node, ns/B (default: the profile's
    /// `machine` level).
    #[arg(long)]
    pub node_beta_ns: Option<f64>,
    /// `--simulate --nodes`: α between nodes, ns (default: the `--model-profile`'s `mpi`
    /// level, else 1200, Träff 2021's machine as estimated in docs/model.md).
    #[arg(long)]
    pub net_alpha_ns: Option<f64>,
    /// `--simulate --nodes`: β of a node's link, ns/B (default: the `--model-profile`'s `mpi`
    /// level, else 0.08: 100 Gb/s OmniPath).
    #[arg(long)]
    pub net_beta_ns: Option<f64>,
    /// `--simulate --nodes`: transfers a node's link carries at once in each direction
    /// (network adapters, rails).
    #[arg(long, default_value_t = 1)]
    pub nic_lanes: usize,
    /// `--simulate --nodes`: the hierarchical compositions to predict, each its stages'
    /// algorithms joined by `/` — allreduce through the leaders `REDUCE/TOP/BROADCAST`
    /// (`pipelined-tree/two-tree/pipelined-tree`, with an optional segment in bytes:
    /// `…:1MiB`), allreduce by reduce-scatter, concurrent allreduces and allgather
    /// `rs-REDUCE_SCATTER/TOP/ag-ALLGATHER` (`rs-ring/two-tree/ag-ring`), broadcast
    /// `GROUPS/TOP` (`binomial/pipelined-tree`); `default` for a standard set (also in a
    /// list: `default,rs-ring/ring/ag-ring`), `none` for none.
    #[arg(long, default_value = "default")]
    pub compose: String,
    /// `--simulate --nodes`: how the compositions group the ranks: `sockets` (socket, node,
    /// nodes' leaders) or `nodes` (node, nodes' leaders).
    #[arg(long, default_value = "sockets", value_parser = ["sockets", "nodes"])]
    pub group_by: String,
    /// Internal: run as one process of the MPI ping-pong of `--calibrate` (started by
    /// `mpirun`).
    #[arg(long, hide = true)]
    pub calibrate_mpi_worker: bool,
    /// Internal: run as one process of an MPI library's rows (started by its launcher).
    #[arg(long, hide = true)]
    pub mpi_worker: bool,
    /// Internal: which MPI library an MPI worker measures (`openmpi`, `mpich`).
    #[arg(long, hide = true)]
    pub mpi_label: Option<String>,
    /// Internal: the layer over that library that an MPI worker loads.
    #[arg(long, hide = true)]
    pub mpi_layer: Option<PathBuf>,
    /// Internal: where an MPI worker's rank 0 writes its records (a JSON array).
    #[arg(long, hide = true)]
    pub mpi_out: Option<PathBuf>,
}

impl Args {
    /// What the buffers hold when a call starts: `--cold`, `--touch`, or warm.
    pub fn cache(&self) -> Cache {
        if self.cold {
            Cache::Cold
        } else if self.touch {
            Cache::Touch
        } else {
            Cache::Warm
        }
    }
}

/// `--type` takes the element types by their names.
impl ValueEnum for Dtype {
    fn value_variants<'a>() -> &'a [Self] {
        &Dtype::ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.name()))
    }
}

/// `--op` takes the ops by their names.
impl ValueEnum for OpName {
    fn value_variants<'a>() -> &'a [Self] {
        &OpName::ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.name()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_parse() {
        assert!(Args::try_parse_from(["corecoll-bench"]).is_ok());
        assert!(Args::try_parse_from(["corecoll-bench", "--type", "f16"]).is_err());
        let a = Args::try_parse_from([
            "corecoll-bench",
            "--collective",
            "alltoall,exscan",
            "--sizes",
            "8,1KiB",
            "--type",
            "u8",
            "--op",
            "bxor",
            "--ranks",
            "3",
            "--cold",
            "--placement",
            "cores:0,1",
        ])
        .unwrap();
        let names: Vec<&str> = a.collective.0.iter().map(|c| c.name()).collect();
        assert_eq!(names, ["alltoall", "exscan"]);
        assert_eq!(a.sizes.0, vec![8, 1024]);
        assert_eq!((a.dtype, a.op), (Dtype::U8, OpName::Bxor));
        assert_eq!(a.ranks, Some(3));
        assert_eq!(a.placement, Placement::Cores(vec![0, 1]));
        assert!(a.cold);
        let a = Args::try_parse_from(["corecoll-bench", "--machine", "2x2"]).unwrap();
        assert_eq!(a.machine.unwrap().groups, vec![vec![2], vec![2]]);
        assert!(Args::try_parse_from(["corecoll-bench", "--machine", "2x0"]).is_err());
        assert!(Args::try_parse_from(["corecoll-bench", "--collective", "allreduse"]).is_err());
    }
}
