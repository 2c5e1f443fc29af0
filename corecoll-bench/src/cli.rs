//! The command line: the options (clap) and the parsers of their values — sizes, placements,
//! collectives, element types, ops.

use clap::{Parser, ValueEnum};
use std::path::PathBuf;

/// Sweeps a collective over message sizes and algorithms on this machine's cores, beside
/// baselines (the ideal data movement, a std-only version, a channel ring and, with the `mpi`
/// feature, the MPI library's own collective), and prints the table; writes CSV, JSON and an
/// SVG plot.
#[derive(Debug, Clone, Parser)]
#[command(name = "corecoll-bench", version, about, long_about = None)]
pub struct Args {
    /// Collectives to sweep, comma-separated, or `all`.
    #[arg(long, default_value = "allreduce", value_parser = parse_collectives)]
    pub collective: Collectives,
    /// Algorithms and baselines: `all`, or a comma-separated list of names (`auto`, `direct`,
    /// `ring`, …, `limit`, `std-naive`, `channels`, `mpi`). `NAME:VALUE` sets a parameter:
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
    /// A different buffer every iteration (caches cold) instead of reusing one (warm).
    #[arg(long)]
    pub cold: bool,
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
    /// Internal: run as one process of the MPI baseline (started by `mpirun`).
    #[arg(long, hide = true)]
    pub mpi_worker: bool,
    /// Internal: where an MPI worker's rank 0 writes its records (a JSON array).
    #[arg(long, hide = true)]
    pub mpi_out: Option<PathBuf>,
}

/// A collective the bench can sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Collective {
    /// `Comm::allreduce_with`.
    Allreduce,
    /// `Comm::broadcast_with`.
    Broadcast,
    /// `Comm::reduce_with`.
    Reduce,
    /// `Comm::scan_with`.
    Scan,
    /// `Comm::exscan_with`.
    Exscan,
    /// `Comm::gather_with`.
    Gather,
    /// `Comm::scatter_with`.
    Scatter,
    /// `Comm::allgather_with`.
    Allgather,
    /// `Comm::alltoall_with`.
    Alltoall,
    /// `Comm::reduce_scatter_block_with`.
    ReduceScatter,
    /// `Comm::gatherv` (equal counts).
    Gatherv,
    /// `Comm::scatterv` (equal counts).
    Scatterv,
    /// `Comm::allgatherv` (equal counts).
    Allgatherv,
    /// `Comm::alltoallv` (equal counts).
    Alltoallv,
    /// `Comm::barrier_with` (no data: one row per algorithm, size 0).
    Barrier,
}

impl Collective {
    /// Every collective, in the order `all` sweeps them.
    pub const ALL: [Collective; 15] = [
        Collective::Allreduce,
        Collective::Broadcast,
        Collective::Reduce,
        Collective::Scan,
        Collective::Exscan,
        Collective::Gather,
        Collective::Scatter,
        Collective::Allgather,
        Collective::Alltoall,
        Collective::ReduceScatter,
        Collective::Gatherv,
        Collective::Scatterv,
        Collective::Allgatherv,
        Collective::Alltoallv,
        Collective::Barrier,
    ];

    /// The name on the command line and in the results.
    pub fn name(self) -> &'static str {
        match self {
            Collective::Allreduce => "allreduce",
            Collective::Broadcast => "broadcast",
            Collective::Reduce => "reduce",
            Collective::Scan => "scan",
            Collective::Exscan => "exscan",
            Collective::Gather => "gather",
            Collective::Scatter => "scatter",
            Collective::Allgather => "allgather",
            Collective::Alltoall => "alltoall",
            Collective::ReduceScatter => "reduce-scatter",
            Collective::Gatherv => "gatherv",
            Collective::Scatterv => "scatterv",
            Collective::Allgatherv => "allgatherv",
            Collective::Alltoallv => "alltoallv",
            Collective::Barrier => "barrier",
        }
    }

    /// Whether it combines values with `--op`.
    pub fn reduces(self) -> bool {
        matches!(
            self,
            Collective::Allreduce
                | Collective::Reduce
                | Collective::Scan
                | Collective::Exscan
                | Collective::ReduceScatter
        )
    }

    /// Whether the buffer of `bytes` holds p blocks (one per rank) rather than one vector.
    pub fn blocked(self) -> bool {
        matches!(
            self,
            Collective::Gather
                | Collective::Scatter
                | Collective::Allgather
                | Collective::Alltoall
                | Collective::ReduceScatter
                | Collective::Gatherv
                | Collective::Scatterv
                | Collective::Allgatherv
                | Collective::Alltoallv
        )
    }
}

/// The collectives of `--collective`, in the order given (duplicates dropped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Collectives(pub Vec<Collective>);

/// Parses `--collective`: `all` or a comma-separated list of names.
pub fn parse_collectives(s: &str) -> Result<Collectives, String> {
    if s.trim() == "all" {
        return Ok(Collectives(Collective::ALL.to_vec()));
    }
    let mut out = Vec::new();
    for name in s.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let c = Collective::ALL
            .into_iter()
            .find(|c| {
                c.name() == name || (name == "reduce_scatter" && c.name() == "reduce-scatter")
            })
            .ok_or_else(|| {
                let names: Vec<&str> = Collective::ALL.iter().map(|c| c.name()).collect();
                format!(
                    "unknown collective `{name}` (one of: all, {})",
                    names.join(", ")
                )
            })?;
        if !out.contains(&c) {
            out.push(c);
        }
    }
    if out.is_empty() {
        return Err("no collective given".into());
    }
    Ok(Collectives(out))
}

/// Message sizes in bytes per rank, ascending, without duplicates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sizes(pub Vec<usize>);

/// Parses one size: the library's spelling of sizes in algorithm rules.
pub use corecoll::tuning::parse_size;

/// Parses `--sizes`: `LO..HI` (LO, 4·LO, 16·LO, … up to HI, and HI itself) or a comma list.
pub fn parse_sizes(s: &str) -> Result<Sizes, String> {
    let mut out = if let Some((lo, hi)) = s.split_once("..") {
        let (lo, hi) = (parse_size(lo)?, parse_size(hi)?);
        if lo > hi {
            return Err(format!("`{s}`: the range is empty ({lo} > {hi})"));
        }
        let mut v = Vec::new();
        let mut x = lo;
        while x < hi {
            v.push(x);
            // 0 stays 0; go on from 1.
            x = if x == 0 { 1 } else { x.saturating_mul(4) };
        }
        v.push(hi);
        v
    } else {
        s.split(',')
            .filter(|x| !x.trim().is_empty())
            .map(parse_size)
            .collect::<Result<Vec<_>, _>>()?
    };
    if out.is_empty() {
        return Err("no size given".into());
    }
    out.sort_unstable();
    out.dedup();
    Ok(Sizes(out))
}

/// Where the ranks run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// Rank r on the r-th core in topology order (socket by socket).
    Compact,
    /// Round-robin over the sockets (and over the L3 groups within each).
    Spread,
    /// The cores of one socket: package N of the detected topology (`--topology` lists
    /// them; numbered as their `physical_package_id`s sort).
    Socket(usize),
    /// Rank r on `cores[r % len]` (operating-system core ids).
    Cores(Vec<usize>),
    /// Not pinned.
    Unpinned,
}

impl std::fmt::Display for Placement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Placement::Compact => write!(f, "compact"),
            Placement::Spread => write!(f, "spread"),
            Placement::Socket(n) => write!(f, "socket:{n}"),
            Placement::Cores(list) => {
                let l: Vec<String> = list.iter().map(usize::to_string).collect();
                write!(f, "cores:{}", l.join(","))
            }
            Placement::Unpinned => write!(f, "none"),
        }
    }
}

/// Parses a core list as Linux prints them: `0,2,4-7`.
pub fn parse_core_list(s: &str) -> Result<Vec<usize>, String> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let num = |x: &str| {
            x.trim()
                .parse::<usize>()
                .map_err(|_| format!("`{x}` in core list `{s}` is not a core number"))
        };
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (num(a)?, num(b)?);
                if a > b {
                    return Err(format!("`{part}` in core list `{s}` is an empty range"));
                }
                out.extend(a..=b);
            }
            None => out.push(num(part)?),
        }
    }
    if out.is_empty() {
        return Err(format!("core list `{s}` is empty"));
    }
    Ok(out)
}

/// Parses `--placement`.
pub fn parse_placement(s: &str) -> Result<Placement, String> {
    let s = s.trim();
    match s {
        "compact" => return Ok(Placement::Compact),
        "spread" => return Ok(Placement::Spread),
        "none" => return Ok(Placement::Unpinned),
        _ => {}
    }
    if let Some(n) = s.strip_prefix("socket:") {
        return n
            .trim()
            .parse()
            .map(Placement::Socket)
            .map_err(|_| format!("`{s}`: socket:N takes a socket number"));
    }
    if let Some(list) = s.strip_prefix("cores:") {
        return parse_core_list(list).map(Placement::Cores);
    }
    Err(format!(
        "unknown placement `{s}` (compact, spread, socket:N, cores:LIST, none)"
    ))
}

/// A described machine of `--machine`: per package the core counts of its L3 groups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Machine {
    /// The spec as given (trimmed), e.g. `2x2x4` or `3+2/4`.
    pub spec: String,
    /// `groups[p][g]`: cores of L3 group g of package p.
    pub groups: Vec<Vec<usize>>,
}

/// The most cores a described machine may have (each is a thread of the sweep).
pub const MACHINE_MAX_CORES: usize = 4096;

impl Machine {
    /// The library's synthetic topology of this machine.
    pub fn topology(&self) -> Result<corecoll::Topology, String> {
        corecoll::Topology::synthetic_groups(self.groups.clone())
            .map_err(|e| format!("--machine {}: {e}", self.spec))
    }

    /// Total cores.
    pub fn cores(&self) -> usize {
        self.groups.iter().flatten().sum()
    }

    /// A description for the results, e.g. `2x2x4 (synthetic: 2 packages, 4 L3 groups, 16
    /// cores)`.
    pub fn describe(&self) -> String {
        let l3: usize = self.groups.iter().map(Vec::len).sum();
        format!(
            "{} (synthetic: {} packages, {l3} L3 groups, {} cores)",
            self.spec,
            self.groups.len(),
            self.cores()
        )
    }
}

/// Parses `--machine`: `PxGxC`, `PxC` or `C` (every number at least 1), or the uneven form
/// `3+2/4` (packages separated by `/`, the core counts of a package's L3 groups by `+`).
pub fn parse_machine(s: &str) -> Result<Machine, String> {
    let spec = s.trim().to_string();
    let help = "PxGxC (packages x L3 groups x cores, e.g. 2x2x4), PxC, C, or uneven groups \
                such as 3+2/4";
    let num = |x: &str| -> Result<usize, String> {
        match x.trim().parse::<usize>() {
            Ok(0) => Err(format!(
                "machine `{spec}`: every count must be at least 1 ({help})"
            )),
            Ok(n) => Ok(n),
            Err(_) => Err(format!(
                "machine `{spec}`: `{}` is not a count ({help})",
                x.trim()
            )),
        }
    };
    let groups: Vec<Vec<usize>> = if spec.contains(['+', '/']) {
        spec.split('/')
            .map(|pkg| pkg.split('+').map(num).collect::<Result<Vec<_>, _>>())
            .collect::<Result<_, _>>()?
    } else {
        let dims = spec
            .split(['x', 'X'])
            .map(num)
            .collect::<Result<Vec<_>, _>>()?;
        let (p, g, c) = match dims[..] {
            [c] => (1, 1, c),
            [p, c] => (p, 1, c),
            [p, g, c] => (p, g, c),
            _ => return Err(format!("machine `{spec}`: at most three levels ({help})")),
        };
        if p.saturating_mul(g).saturating_mul(c) > MACHINE_MAX_CORES {
            return Err(format!(
                "machine `{spec}`: more than {MACHINE_MAX_CORES} cores"
            ));
        }
        vec![vec![c; g]; p]
    };
    let m = Machine { spec, groups };
    if m.groups
        .iter()
        .flatten()
        .fold(0usize, |a, &c| a.saturating_add(c))
        > MACHINE_MAX_CORES
    {
        return Err(format!(
            "machine `{}`: more than {MACHINE_MAX_CORES} cores",
            m.spec
        ));
    }
    Ok(m)
}

/// The parameter of an algorithm in `--algorithms` (`NAME:VALUE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Param {
    /// A block or segment size in bytes (at least 1).
    Bytes(usize),
    /// The fanout of `ring-leaders`: exchanges in flight per round (at least 1).
    Fanout(usize),
}

impl Param {
    /// The spelling in the row's name: `64KiB`, `100B`, `2`.
    pub fn label(self) -> String {
        match self {
            Param::Bytes(b) => crate::sweep::fmt_bytes(b).replace(' ', ""),
            Param::Fanout(n) => n.to_string(),
        }
    }
}

/// One item of `--algorithms`: a name and its parameter, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlgSpec {
    /// The algorithm's or baseline's name.
    pub name: String,
    /// The parameter after `:`.
    pub param: Option<Param>,
}

impl AlgSpec {
    /// The row's name: `NAME`, or `NAME:VALUE` with the value in canonical form.
    pub fn label(&self) -> String {
        match self.param {
            None => self.name.clone(),
            Some(p) => format!("{}:{}", self.name, p.label()),
        }
    }
}

/// Parses one item of `--algorithms`: `NAME`, `NAME:SIZE` (bytes, with the size suffixes;
/// `block=` or `segment=` may precede it) or, for `ring-leaders`, `NAME:N` or
/// `NAME:fanout=N`.
pub fn parse_alg_spec(item: &str) -> Result<AlgSpec, String> {
    let item = item.trim();
    let Some((name, value)) = item.split_once(':') else {
        return Ok(AlgSpec {
            name: item.to_string(),
            param: None,
        });
    };
    let (name, value) = (name.trim(), value.trim());
    let param = if name == "ring-leaders" {
        let v = value.strip_prefix("fanout=").unwrap_or(value).trim();
        match v.parse::<usize>() {
            Ok(n) if n >= 1 => Param::Fanout(n),
            _ => {
                return Err(format!(
                    "`{item}`: ring-leaders takes a fanout of at least 1 (`ring-leaders:2` or \
                     `ring-leaders:fanout=2`)"
                ))
            }
        }
    } else {
        let v = value
            .strip_prefix("block=")
            .or_else(|| value.strip_prefix("segment="))
            .unwrap_or(value);
        match parse_size(v) {
            Ok(0) => return Err(format!("`{item}`: the block size must be at least 1 byte")),
            Ok(b) => Param::Bytes(b),
            Err(e) => return Err(format!("`{item}`: the parameter is a block size: {e}")),
        }
    };
    Ok(AlgSpec {
        name: name.to_string(),
        param: Some(param),
    })
}

/// Parses the list of `--algorithms` (not `all`): its items in order, duplicates dropped.
pub fn parse_alg_specs(s: &str) -> Result<Vec<AlgSpec>, String> {
    let mut out: Vec<AlgSpec> = Vec::new();
    for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let a = parse_alg_spec(item)?;
        if !out.iter().any(|b| b.label() == a.label()) {
            out.push(a);
        }
    }
    Ok(out)
}

/// Element types of `--type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Dtype {
    /// 64-bit float.
    F64,
    /// 32-bit float.
    F32,
    /// 64-bit signed integer.
    I64,
    /// 32-bit signed integer.
    I32,
    /// Byte.
    U8,
}

impl Dtype {
    /// The name in the results.
    pub fn name(self) -> &'static str {
        match self {
            Dtype::F64 => "f64",
            Dtype::F32 => "f32",
            Dtype::I64 => "i64",
            Dtype::I32 => "i32",
            Dtype::U8 => "u8",
        }
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Dtype::F64 | Dtype::I64 => 8,
            Dtype::F32 | Dtype::I32 => 4,
            Dtype::U8 => 1,
        }
    }

    /// Whether it is a floating-point type.
    pub fn is_float(self) -> bool {
        matches!(self, Dtype::F64 | Dtype::F32)
    }
}

/// Reduction ops of `--op` (the crate's built-in ops).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OpName {
    /// `op::Sum` (wrapping for integers).
    Sum,
    /// `op::Prod`.
    Prod,
    /// `op::Min`.
    Min,
    /// `op::Max`.
    Max,
    /// `op::BitAnd` (integer types).
    Band,
    /// `op::BitOr` (integer types).
    Bor,
    /// `op::BitXor` (integer types).
    Bxor,
}

impl OpName {
    /// The name in the results.
    pub fn name(self) -> &'static str {
        match self {
            OpName::Sum => "sum",
            OpName::Prod => "prod",
            OpName::Min => "min",
            OpName::Max => "max",
            OpName::Band => "band",
            OpName::Bor => "bor",
            OpName::Bxor => "bxor",
        }
    }

    /// Whether it is defined on `dtype`.
    pub fn applies_to(self, dtype: Dtype) -> bool {
        !dtype.is_float() || matches!(self, OpName::Sum | OpName::Prod | OpName::Min | OpName::Max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_units() {
        assert_eq!(parse_size("8"), Ok(8));
        assert_eq!(parse_size("8B"), Ok(8));
        assert_eq!(parse_size("1KiB"), Ok(1024));
        assert_eq!(parse_size("4k"), Ok(4096));
        assert_eq!(parse_size("64MiB"), Ok(64 << 20));
        assert_eq!(parse_size(" 2 M "), Ok(2 << 20));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert!(parse_size("").is_err());
        assert!(parse_size("KiB").is_err());
        assert!(parse_size("3 parsecs").is_err());
        assert!(parse_size("-1").is_err());
    }

    #[test]
    fn ranges_are_powers_of_four_with_the_end() {
        let s = parse_sizes("8..64MiB").unwrap().0;
        assert_eq!(s.first(), Some(&8));
        assert_eq!(s.last(), Some(&(64 << 20)));
        assert_eq!(s.len(), 13); // 8·4^0 … 8·4^11 = 32 MiB, then 64 MiB
        assert!(s.windows(2).take(11).all(|w| w[1] == 4 * w[0]));
        assert_eq!(parse_sizes("1KiB..1KiB").unwrap().0, vec![1024]);
        assert_eq!(parse_sizes("0..16").unwrap().0, vec![0, 1, 4, 16]);
        assert!(parse_sizes("1MiB..1KiB").is_err());
    }

    #[test]
    fn lists_sort_and_dedup() {
        assert_eq!(
            parse_sizes("1MiB,8,8,1K").unwrap().0,
            vec![8, 1024, 1 << 20]
        );
        assert!(parse_sizes(",").is_err());
        assert!(parse_sizes("8,x").is_err());
    }

    #[test]
    fn placements_parse() {
        assert_eq!(parse_placement("compact"), Ok(Placement::Compact));
        assert_eq!(parse_placement("spread"), Ok(Placement::Spread));
        assert_eq!(parse_placement("none"), Ok(Placement::Unpinned));
        assert_eq!(parse_placement("socket:1"), Ok(Placement::Socket(1)));
        assert_eq!(
            parse_placement("cores:0,2-4,7"),
            Ok(Placement::Cores(vec![0, 2, 3, 4, 7]))
        );
        assert!(parse_placement("socket:x").is_err());
        assert!(parse_placement("cores:").is_err());
        assert!(parse_placement("cores:3-1").is_err());
        assert!(parse_placement("cores:a").is_err());
        assert!(parse_placement("sideways").is_err());
        for s in ["compact", "spread", "none", "socket:3", "cores:1,5"] {
            assert_eq!(parse_placement(s).unwrap().to_string(), s);
        }
    }

    #[test]
    fn collectives_parse() {
        assert_eq!(
            parse_collectives("all").unwrap().0.len(),
            Collective::ALL.len()
        );
        assert_eq!(
            parse_collectives("broadcast, allreduce,broadcast")
                .unwrap()
                .0,
            vec![Collective::Broadcast, Collective::Allreduce]
        );
        assert_eq!(
            parse_collectives("reduce_scatter").unwrap().0,
            vec![Collective::ReduceScatter]
        );
        assert!(parse_collectives("allreduse").is_err());
        for c in Collective::ALL {
            assert_eq!(parse_collectives(c.name()).unwrap().0, vec![c]);
        }
    }

    #[test]
    fn ops_and_types() {
        assert!(OpName::Sum.applies_to(Dtype::F64));
        assert!(!OpName::Bxor.applies_to(Dtype::F32));
        assert!(OpName::Band.applies_to(Dtype::U8));
        assert_eq!(Dtype::U8.size(), 1);
        assert!(Args::try_parse_from(["corecoll-bench"]).is_ok());
        assert!(Args::try_parse_from(["corecoll-bench", "--type", "f16"]).is_err());
        let a = Args::try_parse_from([
            "corecoll-bench",
            "--collective",
            "alltoall",
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
        assert_eq!(a.sizes.0, vec![8, 1024]);
        assert_eq!(a.dtype, Dtype::U8);
        assert_eq!(a.ranks, Some(3));
        assert!(a.cold);
    }

    #[test]
    fn machines_parse() {
        let m = parse_machine("2x2x4").unwrap();
        assert_eq!(m.groups, vec![vec![4, 4], vec![4, 4]]);
        assert_eq!((m.cores(), m.spec.as_str()), (16, "2x2x4"));
        assert_eq!(parse_machine("2x3").unwrap().groups, vec![vec![3], vec![3]]);
        assert_eq!(parse_machine(" 4 ").unwrap().groups, vec![vec![4]]);
        assert_eq!(
            parse_machine("3+2/4").unwrap().groups,
            vec![vec![3, 2], vec![4]]
        );
        assert_eq!(
            parse_machine("2x2x4").unwrap().describe(),
            "2x2x4 (synthetic: 2 packages, 4 L3 groups, 16 cores)"
        );
        for bad in [
            "",
            "2x0",
            "2x2x2x2",
            "x",
            "3+/4",
            "2y2",
            "-1",
            "0",
            "1+0",
            "99999x99999",
        ] {
            let e = parse_machine(bad).unwrap_err();
            assert!(e.starts_with("machine `"), "{bad}: {e}");
        }
        let t = parse_machine("3+2/4").unwrap().topology().unwrap();
        assert_eq!(
            (t.num_packages(), t.num_l3_groups(), t.num_cores()),
            (2, 3, 9)
        );
    }

    #[test]
    fn algorithm_parameters_parse() {
        let a = parse_alg_spec("hierarchical:64KiB").unwrap();
        assert_eq!(a.param, Some(Param::Bytes(64 << 10)));
        assert_eq!(a.label(), "hierarchical:64KiB");
        assert_eq!(parse_alg_spec("direct").unwrap().label(), "direct");
        assert_eq!(
            parse_alg_spec("dual-root:block=100").unwrap().label(),
            "dual-root:100B"
        );
        assert_eq!(
            parse_alg_spec("ring-leaders:2").unwrap().param,
            Some(Param::Fanout(2))
        );
        assert_eq!(
            parse_alg_spec("ring-leaders:fanout=3").unwrap().label(),
            "ring-leaders:3"
        );
        assert!(parse_alg_spec("ring-leaders:0").is_err());
        assert!(parse_alg_spec("ring-leaders:1KiB").is_err());
        assert!(parse_alg_spec("hierarchical:0").is_err());
        assert!(parse_alg_spec("hierarchical:lots").is_err());
        let list =
            parse_alg_specs("auto, hierarchical,hierarchical:1KiB,hierarchical:1024").unwrap();
        let labels: Vec<String> = list.iter().map(AlgSpec::label).collect();
        assert_eq!(labels, ["auto", "hierarchical", "hierarchical:1KiB"]);
        let a = Args::try_parse_from(["corecoll-bench", "--machine", "2x2"]).unwrap();
        assert_eq!(a.machine.unwrap().groups, vec![vec![2], vec![2]]);
        assert!(Args::try_parse_from(["corecoll-bench", "--machine", "2x0"]).is_err());
    }
}
