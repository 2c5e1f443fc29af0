//! The table against the peers, what a program would use instead of corecoll: per group and
//! size, for each family of peers (OpenMP, rayon, each MPI library), the family's fastest
//! row that passed its check, and how many times faster corecoll's `auto` and best are
//! (the peer's median over theirs).

use super::grid::{fmt_sig, fmt_time, Align, Grid, Titled};
use super::groups;
use super::table::{best, by_size};
use crate::peers;
use crate::record::{Record, Source, Validation};
use std::io::Write;

/// The family of `r` if it is a peer's row: its peer's (`OpenMP`, `rayon`), or for an MPI
/// library's row the library, from the note its worker writes (`Open MPI v4.1.4`, `MPICH
/// Version: 4.0.2`).
pub fn peer_family(r: &Record) -> Option<String> {
    match r.source {
        Source::Peer => peers::family(&r.algorithm).map(str::to_string),
        Source::Mpi if r.note.contains("MPICH") => Some("MPICH".into()),
        Source::Mpi if r.note.contains("Open MPI") => Some("Open MPI".into()),
        Source::Mpi => Some("MPI".into()),
        _ => None,
    }
}

/// Whether `r` was timed and passed (or skipped) its check.
fn timed(r: &Record) -> bool {
    r.validation != Validation::Fail && r.median_us.is_finite() && r.median_us > 0.0
}

/// `peer`'s median over `ours`', as `"12.3×"`, or `-` when either is missing.
fn faster(peer: &Record, ours: Option<&Record>) -> String {
    match ours.filter(|o| timed(o)) {
        Some(o) => format!("{}×", fmt_sig(peer.median_us / o.median_us, 3)),
        None => "-".into(),
    }
}

/// The tables of every group with peer rows.
fn peer_tables(records: &[Record]) -> Vec<Titled> {
    use Align::{Left, Right};
    let mut tables = Vec::new();
    for g in groups(records) {
        if !g.rows.iter().any(|&i| peer_family(&records[i]).is_some()) {
            continue;
        }
        let mut grid = Grid::new(&[
            ("size", Right),
            ("peer", Left),
            ("its fastest", Left),
            ("median", Right),
            ("auto", Right),
            ("auto ×", Right),
            ("best", Right),
            ("best ×", Right),
        ]);
        for run in by_size(records, &g) {
            let auto = run
                .iter()
                .map(|&i| &records[i])
                .find(|r| r.source == Source::Corecoll && r.algorithm == "auto");
            let top = best(records, &run).map(|i| &records[i]);
            let mut families: Vec<String> = Vec::new();
            for &i in &run {
                if let Some(f) = peer_family(&records[i]) {
                    if !families.contains(&f) {
                        families.push(f);
                    }
                }
            }
            if !grid.rows.is_empty() && !families.is_empty() {
                grid.rows.push(None);
            }
            for (j, f) in families.iter().enumerate() {
                let fastest = run
                    .iter()
                    .map(|&i| &records[i])
                    .filter(|r| peer_family(r).as_ref() == Some(f) && timed(r))
                    .min_by(|a, b| a.median_us.total_cmp(&b.median_us));
                let size = if j == 0 {
                    crate::domain::fmt_bytes(records[run[0]].bytes)
                } else {
                    String::new()
                };
                let time = |r: Option<&Record>| {
                    r.filter(|r| timed(r))
                        .map_or("-".into(), |r| fmt_time(r.median_us))
                };
                let cells = match fastest {
                    Some(p) => vec![
                        size,
                        f.clone(),
                        p.algorithm.clone(),
                        fmt_time(p.median_us),
                        time(auto),
                        faster(p, auto),
                        time(top),
                        faster(p, top),
                    ],
                    None => vec![
                        size,
                        f.clone(),
                        "(failed)".into(),
                        "-".into(),
                        time(auto),
                        "-".into(),
                        time(top),
                        "-".into(),
                    ],
                };
                grid.rows.push(Some(cells));
            }
        }
        tables.push(Titled {
            heading: g.key.heading(),
            grid,
        });
    }
    tables
}

/// Prints the tables against the peers, with their legend; nothing when no peer ran.
pub fn print_peers(w: &mut dyn Write, records: &[Record]) -> std::io::Result<()> {
    let tables = peer_tables(records);
    if tables.is_empty() {
        return Ok(());
    }
    Titled::print_all(w, "Against the peers", &tables)?;
    writeln!(
        w,
        "peer: what a program would use instead (OpenMP, rayon, an MPI library); its fastest: \
         that family's fastest row that passed its check. auto ×, best ×: the peer's median \
         over corecoll's auto and best, i.e. how many times faster corecoll is."
    )
}

/// The tables of [`print_peers`] as GitHub markdown under a heading, or nothing.
pub fn peers_markdown(records: &[Record]) -> String {
    let tables = peer_tables(records);
    if tables.is_empty() {
        return String::new();
    }
    format!(
        "\n### Against the peers\n\n{}",
        Titled::markdown_all(&tables)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::testing::{cells, set};
    use crate::record::testing::rec;

    /// The set of `testing` with peer rows at 1 KiB: two OpenMP rows (the faster one counts),
    /// a rayon row that failed, and the MPI row (Open MPI's note).
    fn with_peers() -> Vec<Record> {
        let mut v = set();
        for (name, us) in [
            ("openmp-reduction", 33.0),
            ("openmp-slices", 9.9),
            ("rayon-chunks", 1.0),
        ] {
            let mut r = rec(name, 1024, us);
            r.source = Source::Peer;
            v.push(r);
        }
        let n = v.len();
        v[n - 1].validation = Validation::Fail;
        let mpi = v.iter_mut().find(|r| r.algorithm == "mpi").unwrap();
        mpi.note = "Open MPI v4.1.4".into();
        v
    }

    #[test]
    fn each_family_against_auto_and_best() {
        let v = with_peers();
        assert_eq!(peer_family(&v[10]).as_deref(), Some("Open MPI"));
        let mut out = Vec::new();
        print_peers(&mut out, &v).unwrap();
        let text = String::from_utf8(out).unwrap();
        // auto 3.30 µs, best (direct, as ring failed) 3.00 µs.
        assert_eq!(
            cells(&text, "1 KiB", "OpenMP"),
            [
                "1",
                "KiB",
                "OpenMP",
                "openmp-slices",
                "9.90",
                "µs",
                "3.30",
                "µs",
                "3.00×",
                "3.00",
                "µs",
                "3.30×"
            ]
        );
        let rayon = text.lines().find(|l| l.contains("rayon")).unwrap();
        assert_eq!(
            rayon.split_whitespace().collect::<Vec<_>>()[..3],
            ["rayon", "(failed)", "-"]
        );
        assert!(!text.contains("best ×\n\n"), "{text}");
        let line = text.lines().find(|l| l.contains("Open MPI")).unwrap();
        assert!(line.contains("4.55×") && line.contains("5.00×"), "{line}");
        // 8 B has no peer row: no line for it.
        assert!(
            !text.lines().any(|l| l.trim_start().starts_with("8 B")),
            "{text}"
        );
        let md = peers_markdown(&v);
        assert!(
            md.starts_with("\n### Against the peers\n\n**allreduce"),
            "{md}"
        );
        assert!(md.contains("| 1 KiB | OpenMP | openmp-slices | 9.90 µs | 3.30 µs | 3.00× |"));
    }

    #[test]
    fn no_peers_no_table() {
        let v: Vec<Record> = set().into_iter().filter(|r| r.algorithm != "mpi").collect();
        let mut out = Vec::new();
        print_peers(&mut out, &v).unwrap();
        assert!(out.is_empty());
        assert_eq!(peers_markdown(&v), "");
    }
}
