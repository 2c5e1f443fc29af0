//! Smoke runs of the `corecoll-bench` binary with tiny sizes: it exits cleanly, prints its
//! table, writes the CSV, JSON and plot where it is told, checks every cell, and refuses bad
//! arguments with a message instead of running.

mod common;

use common::{records, run, run_ok, run_ok_into, scratch, text};

#[test]
fn a_tiny_allreduce_sweep_writes_its_outputs() {
    let dir = scratch("allreduce");
    let (csv, json, svg) = (dir.join("r.csv"), dir.join("r.json"), dir.join("r.svg"));
    let stdout = run_ok(&[
        "--sizes",
        "8,1KiB,4KiB",
        "--time",
        "0.002",
        "--quiet",
        "--ranks",
        "3",
        "--csv",
        csv.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "--plot",
        svg.to_str().unwrap(),
    ]);
    for name in ["auto", "direct", "dual-root", "two-tree", "ring"] {
        assert!(stdout.contains(name), "no `{name}` row:\n{stdout}");
    }
    assert!(!stdout.contains("FAIL"), "a cell failed:\n{stdout}");
    let csv_text = std::fs::read_to_string(&csv).unwrap();
    // A header and one row per (size, algorithm or baseline): 3 sizes × at least 11 algorithms.
    assert!(csv_text.lines().count() > 3 * 11, "{csv_text}");
    assert!(csv_text
        .lines()
        .next()
        .unwrap()
        .starts_with("collective,algorithm,source"));
    let json_text = std::fs::read_to_string(&json).unwrap();
    let v: serde_json::Value = serde_json::from_str(&json_text).unwrap();
    let records = v["records"].as_array().expect("a records array");
    assert!(records
        .iter()
        .all(|r| r["validation"] == "pass" || r["validation"] == "skipped"));
    assert!(records
        .iter()
        .any(|r| r["algorithm"] == "direct" && r["ranks"] == 3));
    assert!(std::fs::read_to_string(&svg).unwrap().contains("<svg"));
    assert!(stdout.contains(csv.to_str().unwrap()) && stdout.contains(svg.to_str().unwrap()));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn every_collective_runs_with_integers() {
    let dir = scratch("all");
    let stdout = run_ok_into(
        &dir,
        "a",
        &[
            "--collective",
            "all",
            "--sizes",
            "0,24",
            "--type",
            "i32",
            "--op",
            "bxor",
            "--iters",
            "2",
            "--warmup",
            "1",
            "--quiet",
            "--ranks",
            "3",
            "--root",
            "2",
        ],
    );
    for c in [
        "allreduce",
        "reduce-scatter",
        "alltoallv",
        "scatterv",
        "barrier",
        "exscan",
    ] {
        assert!(stdout.contains(c), "no {c}:\n{stdout}");
        assert!(dir.join(format!("a-{c}.svg")).exists(), "no plot for {c}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--algorithms direct` selects the shared-memory gather and scatter too, and their cells
/// pass the check at every root-relative layout the sizes give.
#[test]
fn direct_gather_and_scatter_run_and_pass_their_check() {
    let dir = scratch("direct-sg");
    let json = dir.join("d.json");
    let stdout = run_ok(&[
        "--collective",
        "gather,scatter",
        "--algorithms",
        "direct",
        "--sizes",
        "0,24,4KiB",
        "--iters",
        "2",
        "--warmup",
        "1",
        "--quiet",
        "--ranks",
        "3",
        "--root",
        "1",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(!stdout.contains("FAIL"), "a cell failed:\n{stdout}");
    let records = records(&json);
    for c in ["gather", "scatter"] {
        let direct: Vec<_> = records
            .iter()
            .filter(|r| r["collective"] == c && r["algorithm"] == "direct")
            .collect();
        assert_eq!(direct.len(), 3, "{c}: {records:?}");
        assert!(
            direct.iter().all(|r| r["validation"] == "pass"),
            "{c}: {direct:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cold_buffers_pass_their_check() {
    let dir = scratch("cold");
    let stdout = run_ok_into(
        &dir,
        "c",
        &[
            "--collective",
            "alltoall,allreduce",
            "--sizes",
            "24,4KiB",
            "--cold",
            "--iters",
            "3",
            "--warmup",
            "1",
            "--quiet",
            "--ranks",
            "2",
        ],
    );
    assert!(
        stdout.contains("cold") && !stdout.contains("FAIL"),
        "{stdout}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn touched_buffers_pass_their_check_and_time_the_touch() {
    let dir = scratch("touch");
    let json = dir.join("t.json");
    let stdout = run_ok_into(
        &dir,
        "t",
        &[
            "--sizes",
            "8,4KiB",
            "--touch",
            "--algorithms",
            "auto,direct,limit,std-naive,channels",
            "--iters",
            "3",
            "--warmup",
            "1",
            "--quiet",
            "--ranks",
            "3",
        ],
    );
    assert!(!stdout.contains("FAIL"), "{stdout}");
    assert!(
        stdout.contains("· touch") && stdout.contains("touch:"),
        "{stdout}"
    );
    let recs = records(&json);
    assert_eq!(recs.len(), 2 * 5, "{stdout}");
    for r in &recs {
        assert_eq!(r["cache"], "touch", "{r}");
        assert!(r["touch_us"].as_f64().is_some_and(|t| t >= 0.0), "{r}");
        // Context switches per iteration, counted for every row.
        assert!(r["switches"].as_f64().is_some_and(|s| s >= 0.0), "{r}");
    }
    let _ = std::fs::remove_dir_all(&dir);
    let out = run(&["--cold", "--touch", "--sizes", "8"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("--touch"),
        "{}",
        text(&out.stderr)
    );
}

/// The peers (OpenMP when the build found a compiler for it, rayon always) in a tiny sweep on
/// 2 and 3 ranks, warm and `--touch`: their rows pass their checks and the table against the
/// peers compares them with auto; where OpenMP was not built, the sweep says why instead.
#[test]
fn peers_join_the_sweep() {
    let openmp_missing = option_env!("CORECOLL_OPENMP_MISSING");
    for (ranks, mode) in [("2", "--touch"), ("3", "--warmup=2")] {
        let dir = scratch(&format!("peers-{ranks}"));
        let json = dir.join("p.json");
        let stdout = run_ok_into(
            &dir,
            "p",
            &[
                "--sizes",
                "8,4KiB",
                "--algorithms",
                "auto,openmp-reduction,openmp-slices,rayon-reduce,rayon-chunks",
                "--time",
                "0.002",
                mode,
                "--quiet",
                "--ranks",
                ranks,
            ],
        );
        assert!(!stdout.contains("FAIL"), "{stdout}");
        assert!(stdout.contains("Against the peers"), "{stdout}");
        let recs = records(&json);
        let rows = |name: &str| recs.iter().filter(|r| r["algorithm"] == name).count();
        assert_eq!(rows("auto"), 2, "{stdout}");
        for name in ["rayon-reduce", "rayon-chunks"] {
            assert_eq!(rows(name), 2, "{name}: {stdout}");
        }
        for name in ["openmp-reduction", "openmp-slices"] {
            match openmp_missing {
                None => assert_eq!(rows(name), 2, "{name}: {stdout}"),
                Some(why) => {
                    assert_eq!(rows(name), 0, "{name}: {stdout}");
                    assert!(stdout.contains(&format!("Not measured: {name}: not built: {why}")));
                }
            }
        }
        assert!(recs
            .iter()
            .filter(|r| r["source"] == "peer")
            .all(|r| r["validation"] == "pass" && r["ranks"].as_u64() == ranks.parse().ok()));
        let _ = std::fs::remove_dir_all(&dir);
    }
    // Peers have no --cold mode: the sweep runs without them and says so.
    let dir = scratch("peers-cold");
    let stdout = run_ok_into(
        &dir,
        "c",
        &[
            "--sizes",
            "8",
            "--algorithms",
            "auto,rayon-chunks",
            "--cold",
            "--iters",
            "2",
            "--quiet",
            "--ranks",
            "2",
        ],
    );
    assert!(
        stdout.contains("Not measured: rayon-chunks: peers run on one buffer"),
        "{stdout}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_arguments_are_refused_with_a_message() {
    for (args, says) in [
        (&["--type", "f64", "--op", "bxor"][..], "not defined"),
        (&["--sizes", "1MiB..1KiB"][..], "empty"),
        (&["--collective", "allreduse"][..], "unknown collective"),
        (&["--algorithms", "fastest"][..], "unknown algorithm"),
        (&["--placement", "cores:999999"][..], "not available"),
        (&["--root", "7", "--ranks", "2", "--sizes", "8"][..], "root"),
        (&["--time", "0"][..], "--time"),
        (&["--rounds", "0", "--sizes", "8"][..], "--rounds"),
    ] {
        let out = run(args);
        let stderr = text(&out.stderr);
        assert!(!out.status.success(), "{args:?} succeeded");
        assert!(
            stderr.contains(says),
            "{args:?}: stderr does not say `{says}`:\n{stderr}"
        );
    }
}

#[test]
fn a_described_machine_with_hierarchical_and_parameterised_rows() {
    let dir = scratch("machine");
    let json = dir.join("m.json");
    let stdout = run_ok_into(
        &dir,
        "m",
        &[
            "--machine",
            "2x2",
            "--ranks",
            "4",
            "--sizes",
            "8,4KiB",
            "--time",
            "0.01",
            "--collective",
            "allreduce",
            "--algorithms",
            "auto,hierarchical,hierarchical:1KiB,direct",
            "--quiet",
        ],
    );
    assert!(
        stdout.starts_with("machine: 2x2 (synthetic: 2 packages"),
        "{stdout}"
    );
    assert!(stdout.contains("hierarchical:1KiB"), "{stdout}");
    assert!(stdout.contains("Hierarchical vs flat"), "{stdout}");
    assert!(!stdout.contains("FAIL"), "a cell failed:\n{stdout}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(v["info"]["machine"]
        .as_str()
        .unwrap()
        .starts_with("2x2 (synthetic"));
    let records = v["records"].as_array().unwrap();
    // 2 sizes × 4 algorithms, every one on 4 ranks.
    assert_eq!(records.len(), 8);
    assert!(records.iter().all(|r| r["ranks"] == 4));
    assert!(records
        .iter()
        .any(|r| r["algorithm"] == "hierarchical:1KiB" && r["bytes"] == 4096));
    let md = std::fs::read_to_string(dir.join("m.md")).unwrap();
    assert!(md.starts_with("machine: 2x2"), "{md}");
    assert!(md.contains("### Hierarchical vs flat"), "{md}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_described_machine_per_socket() {
    let dir = scratch("machine-sockets");
    let stdout = run_ok_into(
        &dir,
        "s",
        &[
            "--machine",
            "2x2x2",
            "--per-socket",
            "--sizes",
            "64",
            "--iters",
            "3",
            "--warmup",
            "1",
            "--collective",
            "allreduce",
            "--algorithms",
            "auto,hierarchical,direct",
            "--quiet",
        ],
    );
    // Each socket of 4 cores, then the whole machine of 8, each with its hierarchy line.
    for heading in [
        "4 ranks · socket 0, socket:0",
        "4 ranks · socket 1, socket:1",
        "8 ranks · all, compact",
    ] {
        assert!(
            stdout.matches(heading).count() >= 3,
            "`{heading}` not in table, summary and hierarchy:\n{stdout}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_machines_and_parameters_are_refused_with_a_message() {
    for (args, says) in [
        (&["--machine", "2x0"][..], "at least 1"),
        (&["--machine", "2x2x2x2"][..], "at most three levels"),
        (&["--machine", "3+two"][..], "not a count"),
        (
            &["--machine", "2x2", "--placement", "socket:5"][..],
            "no socket 5",
        ),
        (&["--algorithms", "direct:1KiB"][..], "takes no parameter"),
        (&["--algorithms", "hierarchical:quick"][..], "block size"),
        (
            &["--collective", "alltoall", "--algorithms", "ring-leaders:0"][..],
            "fanout",
        ),
    ] {
        let out = run(args);
        let stderr = text(&out.stderr);
        assert!(!out.status.success(), "{args:?} succeeded");
        assert!(
            stderr.contains(says),
            "{args:?}: stderr does not say `{says}`:\n{stderr}"
        );
    }
    let out = run(&["--machine", "3+2/4", "--topology"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success());
    assert!(
        stdout.contains("9 cores") && stdout.contains("--machine 3+2/4"),
        "{stdout}"
    );
}

#[test]
fn calibrate_writes_a_profile_that_loads() {
    let dir = scratch("calibrate");
    let path = dir.join("profile.json");
    let stdout = run_ok(&[
        "--calibrate",
        "--time",
        "0.001",
        "--profile-out",
        path.to_str().unwrap(),
    ]);
    for word in ["level", "oversubscribed", "mpi", "γ", "wrote"] {
        assert!(stdout.contains(word), "no `{word}`:\n{stdout}");
    }
    let profile = corecoll::Profile::load(&path).expect("the profile loads");
    use corecoll::profile::Level;
    // Shared cores can always be measured (a busy pipeline of four ranks per core, and the
    // ping-pong of two ranks on one core beside it); every level is listed, measured or not.
    let shared = profile.level(Level::Oversubscribed).unwrap();
    assert!(shared.is_measured());
    assert!(shared.pingpong.as_ref().is_some_and(|p| p.is_measured()));
    assert!(profile.gamma.f64_sum_ns.is_some() && profile.gamma.u64_sum_ns.is_some());
    for level in Level::ALL {
        let c = profile.level(level).expect("every level is listed");
        assert!(
            c.is_measured() || !c.note.is_empty(),
            "{level}: no reason given"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);

    // --calibrate measures the detected machine only.
    let out = run(&["--calibrate", "--machine", "2x2"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert!(text(&out.stderr).contains("--machine"));
}

#[test]
fn guidelines_run_the_users_rows_and_print_the_rules() {
    let dir = scratch("guidelines");
    let json = dir.join("g.json");
    let stdout = run_ok_into(
        &dir,
        "g",
        &[
            "--guidelines",
            "--ranks",
            "2",
            "--sizes",
            "8,4KiB",
            "--time",
            "0.002",
            "--quiet",
        ],
    );
    assert!(
        stdout.contains("Self-consistent performance guidelines"),
        "{stdout}"
    );
    // 8 B is rounded up to one f64 per rank on 2 ranks: 16 B, for every collective.
    for rule in [
        "allreduce(m) ≤ reduce(m) + broadcast(m)",
        "broadcast(m) ≤ scatter(m) + allgather(m)",
        "alltoall(m) ≤ alltoallv(m)",
        "barrier ≤ allreduce(m)",
    ] {
        for size in ["16 B", "4 KiB"] {
            assert!(
                stdout
                    .lines()
                    .any(|l| l.starts_with(rule) && l.contains(size)),
                "no `{rule}` at {size}:\n{stdout}"
            );
        }
    }
    assert!(stdout.contains("check(s)"), "{stdout}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    // Only the rows a user gets: auto, and the v forms' one algorithm.
    let records = v["records"].as_array().unwrap();
    assert!(records.iter().all(
        |r| ["auto", "linear", "ring", "pairwise"].contains(&r["algorithm"].as_str().unwrap())
    ));
    let checks = v["checks"]["guidelines"]["checks"].as_array().unwrap();
    assert_eq!(checks.len(), 2 * 15, "{checks:?}");
    assert_eq!(v["checks"]["guidelines"]["skipped"], 0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn blocks_add_fixed_block_rows_and_their_table() {
    let dir = scratch("blocks");
    let stdout = run_ok_into(
        &dir,
        "b",
        &[
            "--collective",
            "allreduce,broadcast",
            "--algorithms",
            "auto,ring,dual-root,pipelined-tree",
            "--blocks",
            "1KiB,4KiB",
            "--ranks",
            "2",
            "--sizes",
            "8KiB",
            "--time",
            "0.002",
            "--quiet",
        ],
    );
    for row in ["dual-root:1KiB", "dual-root:4KiB", "pipelined-tree:4KiB"] {
        assert!(stdout.contains(row), "no `{row}` row:\n{stdout}");
    }
    assert!(
        stdout.contains("Block::Auto against fixed blocks"),
        "{stdout}"
    );
    for heading in [
        "allreduce · f64 sum · 2 ranks · all, compact · warm · dual-root",
        "allreduce · f64 sum · 2 ranks · all, compact · warm · pipelined-tree",
        "broadcast · f64 · 2 ranks · all, compact · warm · pipelined-tree",
    ] {
        assert!(stdout.contains(heading), "no `{heading}`:\n{stdout}");
    }
    // The cliff lines after the summary, one per collective.
    assert!(stdout.contains("No cliffs"), "{stdout}");
    assert_eq!(stdout.matches("size(s) above 1.25×").count(), 2, "{stdout}");
    assert!(!stdout.contains("FAIL"), "{stdout}");
    // Blocks where no selected algorithm takes one, and with --guidelines, are refused.
    for (args, says) in [
        (
            &["--algorithms", "direct", "--blocks", "1KiB"][..],
            "takes a block",
        ),
        (&["--guidelines", "--blocks", "1KiB"][..], "separately"),
        (&["--blocks", "0"][..], "at least 1 byte"),
        (
            &["--guidelines", "--guideline-tolerance=-1"][..],
            "tolerance",
        ),
    ] {
        let out = run(args);
        assert!(!out.status.success(), "{args:?} succeeded");
        let stderr = text(&out.stderr);
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--rounds`: each row is measured in that many interleaved rounds, its iterations split
/// between them (rounded up) and pooled, every check passing.
#[test]
fn interleaved_rounds_pool_each_rows_iterations() {
    let dir = scratch("rounds");
    let json = dir.join("r.json");
    let out = run(&[
        "--sizes",
        "8,4KiB",
        "--ranks",
        "3",
        "--algorithms",
        "auto,ring,dual-root,limit",
        "--iters",
        "7",
        "--warmup",
        "1",
        "--rounds",
        "3",
        "--quiet",
        "--csv",
        dir.join("r.csv").to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "--plot",
        dir.join("r.svg").to_str().unwrap(),
        "--samples",
        dir.join("s.csv").to_str().unwrap(),
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    let records = records(&json);
    assert_eq!(records.len(), 8, "{records:?}");
    // --samples: every iteration of every row, by round; each row's median is the median of
    // its rounds' medians.
    let samples = std::fs::read_to_string(dir.join("s.csv")).unwrap();
    let mut lines = samples.lines();
    assert_eq!(
        lines.next(),
        Some("scope,collective,algorithm,ranks,bytes,pass,round,iteration,seconds")
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 8 * 9, "{samples}");
    for r in &records {
        let name = r["algorithm"].as_str().unwrap();
        let bytes = r["bytes"].to_string();
        let mine: Vec<(usize, usize, f64)> = rows
            .iter()
            .filter(|s| s[2] == name && s[4] == bytes)
            .map(|s| {
                (
                    s[6].parse().unwrap(),
                    s[7].parse().unwrap(),
                    s[8].parse().unwrap(),
                )
            })
            .collect();
        let order: Vec<(usize, usize)> = mine.iter().map(|&(r, i, _)| (r, i)).collect();
        let want: Vec<(usize, usize)> = (0..3).flat_map(|r| (0..3).map(move |i| (r, i))).collect();
        assert_eq!(order, want, "{name} {bytes}");
        let mut medians: Vec<f64> = mine
            .chunks(3)
            .map(|round| {
                let mut t: Vec<f64> = round.iter().map(|x| x.2).collect();
                t.sort_by(f64::total_cmp);
                t[1]
            })
            .collect();
        medians.sort_by(f64::total_cmp);
        let median_us = medians[1] * 1e6;
        let got = r["median_us"].as_f64().unwrap();
        assert!(
            (median_us - got).abs() <= 1e-6 * got.max(1.0),
            "{name}: {median_us} {got}"
        );
    }
    for r in records {
        // 7 iterations in 3 rounds: 3 in each.
        assert_eq!(r["iters"], 9, "{r}");
        assert!(
            r["note"].as_str().unwrap().contains("3 interleaved rounds"),
            "{r}"
        );
        assert_ne!(r["validation"], "fail", "{r}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `corecoll-bench --topology` prints the detected tree and its source and exits; a socket
/// the machine does not have is refused.
#[test]
fn the_bench_prints_the_topology() {
    let stdout = run_ok(&["--topology"]);
    let t = corecoll::Topology::detect();
    assert_eq!(stdout.lines().next(), t.to_string().lines().next());
    assert!(
        stdout.contains(&format!("(source: {};", t.source())),
        "{stdout}"
    );
    let out = run(&["--placement", "socket:4096"]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(stderr.contains("no socket 4096 here"), "{stderr}");
}
