//! `corecoll-bench --simulate`: the sweep predicted by the library's cost-model simulator, on
//! a flat machine of any rank count and on a hierarchical one (nodes × sockets × cores) with
//! the compositions beside the flat algorithms, whose predicted times are checked against
//! the model's sums of terms.

mod common;

use common::{run, scratch, text};

/// `--simulate` predicts every simulable algorithm on any rank count and writes the CSV and the
/// plot; a pipelined algorithm takes a block in bytes.
#[test]
fn simulate_predicts_a_sweep() {
    let dir = scratch("simulate");
    let (csv, svg) = (dir.join("s.csv"), dir.join("s.svg"));
    let out = run(&[
        "--simulate",
        "--ranks",
        "300",
        "--sizes",
        "8,64KiB",
        "--csv",
        csv.to_str().unwrap(),
        "--plot",
        svg.to_str().unwrap(),
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    for word in ["300 ranks", "dual-root", "two-tree", "ring", "fastest"] {
        assert!(stdout.contains(word), "no `{word}`:\n{stdout}");
    }
    let rows = std::fs::read_to_string(&csv).unwrap();
    assert!(rows.lines().count() > 2 * 8, "{rows}");
    assert!(std::fs::read_to_string(&svg).unwrap().contains("<svg"));
    let out = run(&[
        "--simulate",
        "--ranks",
        "6",
        "--sizes",
        "1KiB",
        "--algorithms",
        "dual-root:64,linear:64",
        "--csv",
        csv.to_str().unwrap(),
        "--plot",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("linear:64"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// α and β of one level of the machine given on the command line below, in ns and ns/B.
type Link = (f64, f64);

/// Within a socket: `--socket-alpha-ns 1 --socket-beta-ns 0.0625`.
const SOCKET: Link = (1.0, 0.0625);
/// Between nodes: `--net-alpha-ns 256 --net-beta-ns 4`.
const NET: Link = (256.0, 4.0);
/// `--gamma-ns 0.25`, ns per byte reduced.
const GAMMA: f64 = 0.25;

/// α + βm of `l` for m bytes.
fn t((alpha, beta): Link, bytes: usize) -> f64 {
    alpha + beta * bytes as f64
}

/// Runs `--simulate` of 400 bytes of i32 on the machine of `shape` with the costs above, the
/// flat recursive doubling and the compositions of `compose`; the CSV and the plot go to
/// `dir`.
fn simulate(dir: &std::path::Path, shape: &[&str], compose: &str) -> std::process::Output {
    let (csv, plot) = (dir.join("h.csv"), dir.join("h.svg"));
    let mut args = shape.to_vec();
    args.extend_from_slice(&[
        "--simulate",
        "--type",
        "i32",
        "--sizes",
        "400",
        "--socket-alpha-ns",
        "1",
        "--socket-beta-ns",
        "0.0625",
        "--net-alpha-ns",
        "256",
        "--net-beta-ns",
        "4",
        "--gamma-ns",
        "0.25",
        "--algorithms",
        "recursive-doubling",
        "--compose",
        compose,
        "--csv",
        csv.to_str().unwrap(),
        "--plot",
        plot.to_str().unwrap(),
    ]);
    run(&args)
}

/// `--simulate --nodes … --cores …`: the flat algorithm and the composition side by side, the
/// composition's time the library's; shapes that do not fit are refused.
#[test]
fn simulate_a_hierarchical_machine() {
    let dir = scratch("simulate-hier");
    let shape = ["--nodes", "2", "--cores", "2"];
    let out = simulate(&dir, &shape, "binomial/recursive-doubling/binomial");
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("h:bin/rd/bin"), "{stdout}");
    // Binomial reduce within each socket, recursive doubling between the two leaders,
    // binomial broadcast back: 400 bytes, in µs.
    let m = 400;
    let want = SOCKET.0 + 2.0 * t(SOCKET, m) + t(NET, m) + 2.0 * GAMMA * m as f64;
    assert!(
        stdout.contains(&format!("{:.2}", want / 1000.0)),
        "{want} in {stdout}"
    );
    // The reduce-scatter/allgather composition (pieces of 200 bytes), in the default set too.
    let out = simulate(&dir, &shape, "rs-ring/recursive-doubling/ag-ring,default");
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    for label in [
        "h:rs-ring/rd/ag-ring",
        "h:rs-ring/two-tree/ag-ring",
        "h:rs-ring/rab/ag-ring",
    ] {
        assert!(stdout.contains(label), "{label} in {stdout}");
    }
    let q = 200;
    let want = 2.0 * t(SOCKET, q) + SOCKET.0 + 2.0 * t(NET, q) + 2.0 * GAMMA * q as f64;
    assert!(
        stdout.contains(&format!("{:.2}", want / 1000.0)),
        "{want} in {stdout}"
    );
    for bad in [
        &["--nodes", "2", "--cores", "2", "--ranks", "5"][..],
        &["--nodes", "0", "--cores", "2"][..],
        &["--nodes", "2", "--nic-lanes", "0"][..],
    ] {
        let out = simulate(&dir, bad, "default");
        let err = text(&out.stderr);
        assert!(!out.status.success(), "{bad:?}");
        assert!(err.contains("--nodes"), "{bad:?}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
