//! Tests of the plot: pictures of hand-made records, the labels, the ticks.

use super::series::{labels, series_of, Key, Kind, LIMIT_GREYS};
use super::*;
use crate::record::{Record, Source, Validation};

/// A measured row of allreduce on 4 ranks (busbw with its factor 1.5).
fn rec(algorithm: &str, source: Source, scope: &str, bytes: usize, median_us: f64) -> Record {
    let mut r = crate::record::testing::rec(algorithm, bytes, median_us);
    r.source = source;
    r.scope = scope.into();
    if scope != "all" {
        r.placement = "socket:0".into();
    }
    r.ranks = 4;
    r.busbw_gbs = bytes as f64 / (median_us * 1e3) * 1.5;
    r.algbw_gbs = r.busbw_gbs / 1.5;
    r.validation = Validation::Pass;
    r
}

/// A unique temporary path for a test's picture.
fn temp(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("corecoll-plot-{}-{name}.svg", std::process::id()))
}

/// Plots `records` into a temporary file and returns its text, after checking that it is a
/// whole SVG with the title. The file is removed; with `PLOT_KEEP=DIR` in the environment a
/// copy stays as `DIR/<name>.svg`, to look at.
fn plotted(name: &str, records: &[Record]) -> String {
    let path = temp(name);
    plot_svg(&path, "a title", records).unwrap();
    let svg = std::fs::read_to_string(&path).unwrap();
    if let Ok(dir) = std::env::var("PLOT_KEEP") {
        std::fs::copy(&path, format!("{dir}/{name}.svg")).unwrap();
    }
    std::fs::remove_file(&path).unwrap();
    assert!(svg.trim_start().starts_with("<svg"), "{name}: not an SVG");
    assert!(svg.trim_end().ends_with("</svg>"), "{name}: unfinished SVG");
    assert!(svg.contains("a title"));
    svg
}

/// Algorithms × sizes in two scopes, a limit, a cell that failed to run, a failed check.
fn sweep() -> Vec<Record> {
    let mut v = Vec::new();
    for scope in ["socket 0", "all"] {
        for bytes in [8, 1024, 1 << 20] {
            let t = 1.0 + bytes as f64 / 1e3;
            v.push(rec("direct", Source::Corecoll, scope, bytes, t));
            v.push(rec("ring", Source::Corecoll, scope, bytes, 2.0 * t));
            v.push(rec("limit", Source::Baseline, scope, bytes, 0.5 * t));
        }
    }
    for bytes in [8, 1024, 1 << 20] {
        v.push(rec(
            "mpi",
            Source::Mpi,
            "processes",
            bytes,
            3.0 + bytes as f64 / 2e3,
        ));
    }
    v.push(rec("std-naive", Source::Baseline, "all", 8, 3.0));
    v.push(rec("std-naive", Source::Baseline, "all", 1 << 20, 3e3));
    let mut broken = rec("std-naive", Source::Baseline, "all", 1024, f64::NAN);
    (broken.busbw_gbs, broken.validation) = (f64::NAN, Validation::Fail);
    v.push(broken);
    v[1].validation = Validation::Fail;
    v
}

#[test]
fn plot_has_every_series_label_and_both_panels() {
    let svg = plotted("sweep", &sweep());
    for label in [
        "direct (socket 0)",
        "direct (all)",
        "ring (socket 0)",
        "ring (all)",
        "limit (socket 0)",
        "limit (all)",
        "std-naive (all)",
        "mpi (processes)",
        "check failed",
        "median time per call",
        "bus bandwidth",
        "bytes per rank",
        "8 B",
        "2 KiB",
        "512 KiB",
    ] {
        assert!(svg.contains(label), "no `{label}` in the plot");
    }
}

#[test]
fn labels_carry_only_the_qualifiers_that_tell_series_apart() {
    let keys = |rs: &[Record]| rs.iter().map(Key::of).collect::<Vec<_>>();
    let one_scope = [
        rec("direct", Source::Corecoll, "all", 8, 1.0),
        rec("limit", Source::Baseline, "all", 8, 1.0),
    ];
    assert_eq!(labels(&keys(&one_scope)), ["direct", "limit"]);
    let mut mixed = vec![
        rec("direct", Source::Corecoll, "all", 8, 1.0),
        rec("direct", Source::Corecoll, "all", 8, 1.0),
        rec("mpi", Source::Mpi, "processes", 8, 1.0),
    ];
    mixed[1].ranks = 2;
    assert_eq!(
        labels(&keys(&mixed)),
        ["direct (4 ranks)", "direct (2 ranks)", "mpi (4 ranks)"]
    );
    let series = series_of(&sweep());
    assert_eq!(series.len(), 8);
    assert_eq!(series[0].label, "direct (socket 0)");
    assert_eq!(series[2].kind, Kind::Limit);
    assert_eq!(series[2].color, BLACK);
    assert_eq!(series[5].color, LIMIT_GREYS[1]);
    assert_ne!(series[0].color, series[1].color);
}

#[test]
fn barrier_rows_of_size_zero_make_bars() {
    let mut rows = vec![
        rec("dissemination", Source::Corecoll, "all", 0, 0.8),
        rec("central", Source::Corecoll, "all", 0, 1.5),
        rec("std-barrier", Source::Baseline, "all", 0, 4.0),
        rec("failed", Source::Corecoll, "all", 0, f64::NAN),
    ];
    for r in &mut rows {
        r.busbw_gbs = 0.0;
    }
    let svg = plotted("barrier", &rows);
    for label in [
        "dissemination",
        "central",
        "std-barrier",
        "failed",
        "0.8 µs",
    ] {
        assert!(svg.contains(label), "no `{label}` in the plot");
    }
}

#[test]
fn nothing_to_plot_is_a_page_saying_so() {
    let svg = plotted("empty", &[]);
    assert!(svg.contains("nothing to plot: no records"));
    let mut dead = rec("direct", Source::Corecoll, "all", 8, f64::NAN);
    dead.validation = Validation::Fail;
    let svg = plotted("dead", &[dead]);
    assert!(svg.contains("none with a measured time"));
}

#[test]
fn an_unwritable_path_is_an_error_naming_it() {
    let path = temp("no-such-dir").join("plot.svg");
    let e = plot_svg(&path, "t", &sweep()).unwrap_err();
    assert!(e.contains(&path.display().to_string()), "{e}");
}

#[test]
fn ticks_and_numbers() {
    let (bold, light) = byte_ticks(5.0, 6e6, 8.0);
    assert_eq!(bold.first(), Some(&8.0));
    assert!(bold.len() <= 11 && bold.contains(&2048.0), "{bold:?}");
    assert!(light.contains(&16.0));
    let (bold, light) = decade_ticks(0.3, 40.0);
    assert_eq!(bold, [0.5, 1.0, 2.0, 5.0, 10.0, 20.0]);
    assert!(light.contains(&3.0));
    let (bold, _) = decade_ticks(0.05, 2e4);
    assert_eq!(bold, [0.1, 1.0, 10.0, 100.0, 1000.0, 10000.0]);
    assert_eq!(decade_ticks(2.1, 2.9).0, Vec::<f64>::new());
    assert_eq!(decade_ticks(2.1, 4.9).0, [3.0, 4.0]);
    assert_eq!(fmt_num(0.2), "0.2");
    assert_eq!(fmt_num(0.02), "0.02");
    assert_eq!(fmt_num(1.0), "1");
    assert_eq!(fmt_num(12.34), "12.3");
    assert_eq!(fmt_num(3000.0), "3000");
    assert_eq!(fmt_num(0.0), "0");
}
