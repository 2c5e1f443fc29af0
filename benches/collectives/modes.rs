//! The bench's two modes: criterion's groups of every collective, and the interleaved table.

use super::*;

/// The criterion groups of every collective at `p` ranks.
pub(super) fn criterion_groups(c: &mut Criterion, p: usize) {
    let team = Team::new(p).expect("a team");
    for coll in collectives() {
        let algs = available(&team, &coll);
        let kernels = kernels(&coll, &algs);
        let mut g = c.benchmark_group(format!("{}_p{p}", coll.name));
        if !coll.sized {
            let store = Store::new(p, 0, coll.wholes);
            configure(&mut g, false, TIME_SCALE);
            for &k in &kernels {
                g.bench_function(k.name, |bch| {
                    bch.iter_custom(|iters| timed(&team, k, &store, iters))
                });
            }
            g.finish();
            continue;
        }
        for bytes in sizes(p) {
            // Allocated on the first benchmark of this size that the filter lets through.
            let store = OnceCell::new();
            configure(&mut g, bytes > 128 << 10, TIME_SCALE);
            g.throughput(Throughput::Bytes(bytes as u64));
            for &k in &kernels {
                g.bench_function(BenchmarkId::new(k.name, bytes), |bch| {
                    let s = store.get_or_init(|| {
                        let s = Store::new(p, bytes / 8, coll.wholes);
                        touch(&team, &kernels, &s);
                        s
                    });
                    bch.iter_custom(|iters| timed(&team, k, s, iters))
                });
            }
        }
        g.finish();
    }
}

/// Formats `num / den` as a percentage, or a dash.
fn percent(num: Option<f64>, den: Option<f64>) -> String {
    match (num, den) {
        (Some(a), Some(b)) => format!("{:.0} %", 100.0 * a / b),
        _ => "—".into(),
    }
}

/// The interleaved mode at `p` ranks (the bench's module docs, `benches/collectives.rs`).
pub(super) fn interleaved(p: usize) {
    let team = Team::new(p).expect("a team");
    let colls = collectives();
    let algs: Vec<_> = colls.iter().map(|c| available(&team, c)).collect();
    let kernels: Vec<Vec<Kernel<'_>>> = colls
        .iter()
        .zip(&algs)
        .map(|(c, a)| kernels(c, a))
        .collect();
    let wholes = colls.iter().map(|c| c.wholes).max().unwrap_or(1);
    let sizes = sizes(p);
    let rounds = rounds();
    // medians[collective][size] = the median per kernel (empty where the collective does not
    // run at that size: a size-less one runs at the first size only).
    let mut medians = vec![vec![Vec::new(); sizes.len()]; colls.len()];
    for (si, &bytes) in sizes.iter().enumerate() {
        eprintln!("p = {p}, {}: measuring", fmt_size(bytes));
        let store = Store::new(p, bytes / 8, wholes);
        let here: Vec<(usize, Kernel<'_>)> = (0..colls.len())
            .filter(|&c| colls[c].sized || si == 0)
            .flat_map(|c| kernels[c].iter().map(move |&k| (c, k)))
            .collect();
        let probe = if bytes >= 1 << 20 { 1 } else { 8 };
        let iters: Vec<u64> = here
            .iter()
            .map(|&(_, k)| {
                timed(&team, k, &store, warm_up(bytes, 100).max(2));
                iters_for(per_call(&team, k, &store, probe))
            })
            .collect();
        let mut samples = vec![Vec::with_capacity(rounds); here.len()];
        for _ in 0..rounds {
            for (i, &(_, k)) in here.iter().enumerate() {
                samples[i].push(per_call(&team, k, &store, iters[i]));
            }
        }
        for (i, &(c, _)) in here.iter().enumerate() {
            medians[c][si].push(median(&mut samples[i]));
        }
    }
    for (c, coll) in colls.iter().enumerate() {
        let names: Vec<&str> = kernels[c].iter().map(|k| k.name).collect();
        let has = |n: &str| names.contains(&n);
        println!(
            "\n### {}, {p} ranks, u64{}, interleaved: median time per call ({rounds} rounds)\n",
            coll.name,
            if coll.sized { " per rank" } else { "" }
        );
        let mut head = format!("| size | {} | best | auto/best |", names.join(" | "));
        let direct_memcpy = has("direct") && has("memcpy");
        let direct_limit = has("direct") && has("limit");
        if direct_memcpy {
            head += " direct vs memcpy |";
        }
        if direct_limit {
            head += " direct vs limit |";
        }
        println!("{head}");
        println!("|{}", " --- |".repeat(head.matches('|').count() - 1));
        for (si, &bytes) in sizes.iter().enumerate() {
            let m = &medians[c][si];
            if m.is_empty() {
                continue;
            }
            let of = |n: &str| names.iter().position(|&x| x == n).map(|i| m[i]);
            let best = names
                .iter()
                .zip(m)
                .filter(|(n, _)| !matches!(**n, "auto" | "memcpy" | "limit"))
                .min_by(|a, b| a.1.total_cmp(b.1));
            let (best_name, ratio) = match best {
                Some((n, &t)) => (
                    n.to_string(),
                    of("auto").map_or("—".into(), |a| format!("{:.2}", a / t)),
                ),
                None => ("—".into(), "—".into()),
            };
            let cells: Vec<String> = m.iter().map(|&t| fmt_secs(t)).collect();
            let size = if coll.sized {
                fmt_size(bytes)
            } else {
                "—".into()
            };
            let mut row = format!("| {size} | {} | {best_name} | {ratio} |", cells.join(" | "));
            if direct_memcpy {
                row += &format!(" {} |", percent(of("memcpy"), of("direct")));
            }
            if direct_limit {
                row += &format!(" {} |", percent(of("limit"), of("direct")));
            }
            println!("{row}");
        }
    }
    // Goal 3: each collective's smallest-size Auto beside allreduce's.
    let auto_at_first = |c: usize| {
        let names: Vec<&str> = kernels[c].iter().map(|k| k.name).collect();
        let i = names.iter().position(|&n| n == "auto")?;
        medians[c][0].get(i).copied()
    };
    let allreduce = colls
        .iter()
        .position(|c| c.name == "allreduce")
        .and_then(auto_at_first);
    println!(
        "\n### latency at {}, {p} ranks, Auto, interleaved: collective / allreduce\n",
        fmt_size(sizes[0])
    );
    println!("| collective | time | allreduce | ratio |");
    println!("| --- | --- | --- | --- |");
    for (c, coll) in colls.iter().enumerate() {
        let t = auto_at_first(c);
        let ratio = match (t, allreduce) {
            (Some(t), Some(a)) => format!("{:.2}", t / a),
            _ => "—".into(),
        };
        println!(
            "| {} | {} | {} | {ratio} |",
            coll.name,
            t.map_or("—".into(), fmt_secs),
            allreduce.map_or("—".into(), fmt_secs)
        );
    }
}
