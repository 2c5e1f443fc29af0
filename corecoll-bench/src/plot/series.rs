//! The series of a plot: records grouped by everything but their measurements, each with a
//! label that tells it apart from the others, a kind that says how it is drawn, and a colour.

use crate::record::{Record, Source, Validation};
use plotters::style::{RGBColor, BLACK};

/// Colours of the series other than the limit, in order of appearance (then again from the
/// start): sixteen hues and shades that stay apart from each other on white.
const PALETTE: [RGBColor; 16] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
    RGBColor(0, 0, 128),
    RGBColor(128, 0, 0),
    RGBColor(0, 100, 0),
    RGBColor(255, 215, 0),
    RGBColor(112, 128, 144),
    RGBColor(70, 240, 160),
    RGBColor(200, 0, 255),
];

/// Colours of the limit series: black for the first, greys for further scopes' limits.
pub(super) const LIMIT_GREYS: [RGBColor; 3] = [
    RGBColor(0, 0, 0),
    RGBColor(90, 90, 90),
    RGBColor(150, 150, 150),
];

/// How a series is drawn, from where its numbers come.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// One of corecoll's algorithms: solid, round markers.
    Corecoll,
    /// The data-movement limit: dashed, crosses, black or grey.
    Limit,
    /// Another baseline run by this binary: dashed, triangles.
    Baseline,
    /// What a program would use instead, an MPI library's collective or a peer with threads
    /// of its own (OpenMP, rayon): thick, dotted, squares.
    Peer,
}

impl Kind {
    /// The kind of rows from `source` running `algorithm`.
    pub(super) fn of(source: Source, algorithm: &str) -> Kind {
        match source {
            Source::Corecoll => Kind::Corecoll,
            Source::Baseline if algorithm == "limit" => Kind::Limit,
            Source::Baseline => Kind::Baseline,
            Source::Mpi | Source::Peer => Kind::Peer,
        }
    }

    /// The dash length and gap (pixels) of its line, or `None` for a solid one.
    pub(super) fn dashes(self) -> Option<(i32, i32)> {
        match self {
            Kind::Corecoll => None,
            Kind::Limit => Some((12, 6)),
            Kind::Baseline => Some((6, 4)),
            Kind::Peer => Some((3, 4)),
        }
    }

    /// The line's width (pixels).
    pub(super) fn width(self) -> u32 {
        match self {
            Kind::Peer => 3,
            _ => 2,
        }
    }
}

/// One cell of a series.
#[derive(Debug, Clone, Copy)]
pub(super) struct Point {
    /// Bytes per rank.
    pub(super) bytes: usize,
    /// Median time per call, µs (NaN for a cell that did not run).
    pub(super) time_us: f64,
    /// Bus bandwidth, GB/s.
    pub(super) busbw: f64,
    /// Its check failed.
    pub(super) failed: bool,
}

/// One line of the plot.
#[derive(Debug, Clone)]
pub(super) struct Series {
    /// The legend's text.
    pub(super) label: String,
    /// How it is drawn.
    pub(super) kind: Kind,
    /// Its colour.
    pub(super) color: RGBColor,
    /// Its cells by increasing size.
    pub(super) points: Vec<Point>,
}

/// What sets one series apart from another: every field of a record but the measured ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Key {
    /// The algorithm or baseline.
    pub(super) algorithm: String,
    /// Where the numbers come from.
    pub(super) source: Source,
    /// `all`, `socket N`, `processes`.
    pub(super) scope: String,
    /// The placement's spelling.
    pub(super) placement: String,
    /// Ranks.
    pub(super) ranks: usize,
    /// `warm` or `cold`.
    pub(super) cache: String,
    /// Element type.
    pub(super) dtype: String,
    /// Reduction op.
    pub(super) op: String,
}

impl Key {
    /// The key of `r`.
    pub(super) fn of(r: &Record) -> Key {
        Key {
            algorithm: r.algorithm.clone(),
            source: r.source,
            scope: r.scope.clone(),
            placement: r.placement.clone(),
            ranks: r.ranks,
            cache: r.cache.clone(),
            dtype: r.dtype.clone(),
            op: r.op.clone(),
        }
    }
}

/// The qualifiers a label may carry after its algorithm, in the order they are tried.
pub(super) const QUALIFIERS: [fn(&Key) -> String; 7] = [
    |k| k.scope.clone(),
    |k| k.placement.clone(),
    |k| format!("{} ranks", k.ranks),
    |k| k.cache.clone(),
    |k| k.dtype.clone(),
    |k| k.op.clone(),
    |k| format!("{:?}", k.source).to_lowercase(),
];

/// Labels for `keys` (all different): the algorithm, followed in parentheses by the fewest
/// qualifiers, tried in [`QUALIFIERS`] order, that make the labels different. A qualifier is
/// taken when it differs between two series whose labels are still the same, and then it is
/// on every label.
pub(super) fn labels(keys: &[Key]) -> Vec<String> {
    let make = |used: &[usize], k: &Key| {
        let q: Vec<String> = used.iter().map(|&i| QUALIFIERS[i](k)).collect();
        if q.is_empty() {
            k.algorithm.clone()
        } else {
            format!("{} ({})", k.algorithm, q.join(", "))
        }
    };
    let mut used = Vec::new();
    for (qi, q) in QUALIFIERS.iter().enumerate() {
        let now: Vec<String> = keys.iter().map(|k| make(&used, k)).collect();
        let splits = (0..keys.len())
            .any(|i| (i + 1..keys.len()).any(|j| now[i] == now[j] && q(&keys[i]) != q(&keys[j])));
        if splits {
            used.push(qi);
        }
    }
    keys.iter().map(|k| make(&used, k)).collect()
}

/// The series of `records`, in order of first appearance, labelled and coloured.
pub(super) fn series_of(records: &[Record]) -> Vec<Series> {
    let mut groups: Vec<(Key, Vec<Point>)> = Vec::new();
    for r in records {
        let key = Key::of(r);
        let point = Point {
            bytes: r.bytes,
            time_us: r.median_us,
            busbw: r.busbw_gbs,
            failed: r.validation == Validation::Fail,
        };
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, points)) => points.push(point),
            None => groups.push((key, vec![point])),
        }
    }
    let keys: Vec<Key> = groups.iter().map(|(k, _)| k.clone()).collect();
    let (mut colours, mut greys) = (PALETTE.iter().cycle(), LIMIT_GREYS.iter().cycle());
    groups
        .into_iter()
        .zip(labels(&keys))
        .map(|((key, mut points), label)| {
            points.sort_by_key(|p| p.bytes);
            let kind = Kind::of(key.source, &key.algorithm);
            let color = match kind {
                Kind::Limit => *greys.next().unwrap_or(&BLACK),
                _ => *colours.next().unwrap_or(&BLACK),
            };
            Series {
                label,
                kind,
                color,
                points,
            }
        })
        .collect()
}
