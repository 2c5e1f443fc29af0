//! The runs of the fault test: a random sequence of collective calls (steps) and at most one
//! fault, a function of the run's seed and the number of ranks alone, so that every rank of
//! every process draws the same plan.

use corecoll::algorithm::{Allgather, Alltoall, Barrier, Broadcast};
use corecoll::Algorithm;

/// SplitMix64 (Steele, Lea, Flood 2014): a small generator whose every seed gives a good stream.
pub struct Rng(u64);

impl Rng {
    /// The generator of seed `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next word.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number below `n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// One of `items`.
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

/// What a step calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Allreduce,
    Broadcast,
    Reduce,
    Scan,
    Exscan,
    Gather,
    Scatter,
    Allgather,
    Alltoall,
    ReduceScatter,
    Gatherv,
    Allgatherv,
    Barrier,
    /// `split` by process (a hybrid team's colours must each stay in one process; on a plain
    /// team, by group), keys in reverse rank order, then an allreduce on the part.
    Split,
    /// `dup`, then a broadcast on the duplicate.
    Dup,
    /// `iallreduce` in a scope, waited for.
    Iallreduce,
    /// `allreduce_init` in a scope, started and waited for twice.
    Persistent,
}

impl Kind {
    /// Every kind.
    pub const ALL: [Kind; 17] = [
        Kind::Allreduce,
        Kind::Broadcast,
        Kind::Reduce,
        Kind::Scan,
        Kind::Exscan,
        Kind::Gather,
        Kind::Scatter,
        Kind::Allgather,
        Kind::Alltoall,
        Kind::ReduceScatter,
        Kind::Gatherv,
        Kind::Allgatherv,
        Kind::Barrier,
        Kind::Split,
        Kind::Dup,
        Kind::Iallreduce,
        Kind::Persistent,
    ];

    /// The faults a step of this kind can carry.
    pub fn faults(self) -> &'static [Fault] {
        use Fault::*;
        match self {
            Kind::Allreduce => &[Count, Op, Type, Algorithm, Collective, Panic, Return],
            Kind::Broadcast => &[Root, Count, Type, Algorithm, Collective, Panic, Return],
            Kind::Reduce => &[Root, Count, Op, Type, Collective, Panic, Return],
            Kind::Scan | Kind::Exscan | Kind::ReduceScatter => {
                &[Count, Op, Type, Collective, Panic, Return]
            }
            Kind::Gather | Kind::Scatter | Kind::Gatherv => {
                &[Root, Count, Type, Collective, Panic, Return]
            }
            Kind::Allgather => &[Count, Type, Algorithm, Collective, Panic, Return],
            Kind::Alltoall => &[Count, Type, Collective, Panic, Return],
            Kind::Allgatherv | Kind::Split | Kind::Dup => &[Count, Collective, Panic, Return],
            Kind::Barrier => &[Algorithm, Collective, Panic, Return],
            Kind::Iallreduce | Kind::Persistent => &[Count, Op, Collective, Panic, Return],
        }
    }

    /// Whether the step combines with an op (and so may run on the non-commutative type).
    fn reduces(self) -> bool {
        matches!(
            self,
            Kind::Allreduce
                | Kind::Reduce
                | Kind::Scan
                | Kind::Exscan
                | Kind::ReduceScatter
                | Kind::Split
                | Kind::Iallreduce
                | Kind::Persistent
        )
    }
}

/// How the misbehaving rank departs from the others at its step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Another root.
    Root,
    /// One element more.
    Count,
    /// Another op.
    Op,
    /// Another element type (and with it another op).
    Type,
    /// Another algorithm.
    Algorithm,
    /// Another collective: a barrier (a broadcast where the step is a barrier); where the
    /// step is a request, another request (a barrier's), since a request on some ranks
    /// against a blocking call on others is a deadlock that between processes only the
    /// team's timeout ends.
    Collective,
    /// A panic instead of the call.
    Panic,
    /// A return from the run instead of the call.
    Return,
}

/// The element type of a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    /// `u64`, wrapping sums.
    U64,
    /// Affine maps, composed: a non-commutative op.
    Affine,
}

/// One call of a run.
#[derive(Debug, Clone, Copy)]
pub struct Step {
    pub kind: Kind,
    /// Elements per rank (per block, for the collectives in blocks).
    pub n: usize,
    pub root: usize,
    pub ty: Ty,
    /// Which of the kind's algorithms ([`allreduce_algorithms`] and the like).
    pub alg: usize,
    /// The algorithm the misbehaving rank names instead, in an algorithm fault.
    pub other_alg: usize,
}

/// A run: its steps, then a barrier of the whole communicator, and at most one fault.
#[derive(Debug, Clone)]
pub struct Plan {
    pub steps: Vec<Step>,
    /// The step, the rank and the way of the fault, if the run has one.
    pub fault: Option<(usize, usize, Fault)>,
}

/// The allreduce algorithms a step picks from (each runs between threads and between
/// processes, and keeps a non-commutative op's order, but the ring, which a step on the
/// non-commutative type does not pick).
pub fn allreduce_algorithms() -> Vec<Algorithm> {
    [
        "auto",
        "linear",
        "chain",
        "binomial",
        "recursive-doubling",
        "rabenseifner",
        "pipelined-tree",
        "dual-root",
        "two-tree",
        "hierarchical",
        "ring",
    ]
    .into_iter()
    .map(|name| Algorithm::from_name(name).expect("an allreduce algorithm"))
    .collect()
}

/// The broadcast algorithms a step picks from.
pub const BROADCASTS: [Broadcast; 4] = [
    Broadcast::Auto,
    Broadcast::Binomial,
    Broadcast::ScatterAllgather,
    Broadcast::Hierarchical,
];
/// The allgather algorithms a step picks from.
pub const ALLGATHERS: [Allgather; 3] = [Allgather::Auto, Allgather::Ring, Allgather::Bruck];
/// The alltoall algorithms a step picks from (Bruck is refused between processes).
pub const ALLTOALLS: [Alltoall; 2] = [Alltoall::Auto, Alltoall::Pairwise];
/// The barrier algorithms a step picks from.
pub const BARRIERS: [Barrier; 4] = [
    Barrier::Auto,
    Barrier::Dissemination,
    Barrier::Tree,
    Barrier::Hierarchical,
];

/// The algorithms of `kind`'s list (by index) that an algorithm fault sets against each other:
/// named flat ones. Not `Auto` (the first), which may choose the other one, nor the
/// hierarchical one, which on a machine of one group is the flat `Auto`; nor the allreduce's
/// ring (the last), which a step on the non-commutative type does not take.
fn distinct(kind: Kind) -> std::ops::Range<usize> {
    match kind {
        Kind::Allreduce => 1..algorithms(kind) - 2,
        Kind::Broadcast | Kind::Barrier => 1..algorithms(kind) - 1,
        Kind::Allgather => 1..algorithms(kind),
        _ => 0..0,
    }
}

/// How many algorithms a step of `kind` picks from.
pub fn algorithms(kind: Kind) -> usize {
    match kind {
        Kind::Allreduce => allreduce_algorithms().len(),
        Kind::Broadcast => BROADCASTS.len(),
        Kind::Allgather => ALLGATHERS.len(),
        Kind::Alltoall => ALLTOALLS.len(),
        Kind::Barrier => BARRIERS.len(),
        _ => 1,
    }
}

/// The plan of the run of seed `seed` on `p` ranks whose parts of a split (processes) have
/// `part(r)` ranks beside rank r; `faulty` out of 10 runs have a fault.
pub fn plan(seed: u64, p: usize, part: &dyn Fn(usize) -> usize, faulty: usize) -> Plan {
    let mut g = Rng::new(seed);
    let len = 1 + g.below(4);
    let mut steps: Vec<Step> = (0..len)
        .map(|_| {
            let kind = g.pick(&Kind::ALL);
            let n = g.pick(&[0, 1, 2, 7, 33, 1000, 20_000]);
            let n = if kind == Kind::Alltoall || kind == Kind::ReduceScatter {
                n.min(1000)
            } else {
                n
            };
            let ty = if kind.reduces() && g.below(3) == 0 {
                Ty::Affine
            } else {
                Ty::U64
            };
            let mut alg = g.below(algorithms(kind));
            if kind == Kind::Allreduce && ty == Ty::Affine {
                // Not the ring (the last), which refuses a non-commutative op.
                alg %= algorithms(kind) - 1;
            }
            Step {
                kind,
                n,
                root: g.below(p),
                ty,
                alg,
                other_alg: alg,
            }
        })
        .collect();
    steps.push(Step {
        kind: Kind::Barrier,
        n: 0,
        root: 0,
        ty: Ty::U64,
        alg: 0,
        other_alg: 0,
    });
    let fault = (g.below(10) < faulty).then(|| {
        let at = g.below(steps.len());
        let victim = g.below(p);
        let mut how = g.pick(steps[at].kind.faults());
        if how == Fault::Count && steps[at].kind == Kind::Split && part(victim) == 1 {
            // Alone in its part, a rank with another count disagrees with no one.
            how = Fault::Collective;
        }
        if how == Fault::Algorithm {
            // Two distinct named algorithms: the others' and the misbehaving rank's.
            let named = distinct(steps[at].kind);
            let k = named.len();
            let first = g.below(k);
            let second = (first + 1 + g.below(k - 1)) % k;
            steps[at].alg = named.start + first;
            steps[at].other_alg = named.start + second;
        }
        (at, victim, how)
    });
    Plan { steps, fault }
}
