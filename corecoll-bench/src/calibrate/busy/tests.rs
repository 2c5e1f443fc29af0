//! Tests of the busy pipeline: the fit against times built from the model's formula, the
//! simulated coefficients against the chain's closed forms, and the whole path on one core.

use super::*;

/// A busy case with the chain's closed-form coefficients (docs/model.md): 2(p − 2 + b)
/// steps of m/b bytes, and the reduce half's p − 2 + b folds of m/b bytes.
fn closed_form(p: usize, bytes: usize, blocks: usize) -> Coeffs {
    let steps = 2.0 * (p + blocks - 2) as f64;
    let per_step = bytes as f64 / blocks as f64;
    Coeffs {
        alpha: steps,
        beta: steps * per_step,
        gamma: steps / 2.0 * per_step,
    }
}

fn synthetic(p: usize, alpha: f64, beta: f64, gamma: f64) -> Vec<BusyTime> {
    cases()
        .into_iter()
        .map(|(bytes, blocks)| {
            let coeffs = closed_form(p, bytes, blocks);
            BusyTime {
                bytes,
                blocks,
                block: block_for(bytes / ELEM, blocks),
                median_ns: coeffs.time(alpha, beta, gamma),
                samples: 7,
                coeffs,
            }
        })
        .collect()
}

#[test]
fn the_fit_recovers_alpha_and_beta_from_the_formula() {
    for (p, alpha, beta, gamma) in [
        (8, 20_000.0, 0.07, 0.0),
        (8, 9_500.0, 0.31, 0.021),
        (4, 1_600.0, 0.02, 0.1),
        (16, 123_456.0, 1.5, 0.5),
    ] {
        let t = synthetic(p, alpha, beta, gamma);
        let c = fit(&t, gamma);
        let (a, b) = (c.alpha_ns.unwrap(), c.beta_ns.unwrap());
        assert!((a - alpha).abs() < 1e-6 * alpha, "p={p}: α {a} for {alpha}");
        assert!(
            (b - beta).abs() < 1e-9 * beta.max(1.0),
            "p={p}: β {b} for {beta}"
        );
        assert!(c.r2.unwrap() > 1.0 - 1e-9, "{:?}", c.r2);
        assert_eq!(c.samples, 7 * t.len() as u64);
    }
    // γ is taken off: fitted without it, the reduce's folds would land in β.
    let t = synthetic(8, 10_000.0, 0.05, 0.05);
    let c = fit(&t, 0.0);
    assert!(c.beta_ns.unwrap() > 0.06, "{c:?}");
}

/// A step that costs more on long vectors whatever its block (caches): one slope, an
/// intercept per size. The fit takes β from within each size, α as the intercepts' mean;
/// a single line through all cases would have taken the sizes' spread for a per-byte cost.
#[test]
fn the_fit_takes_beta_within_each_size() {
    let alpha_of = |m: usize| match m {
        m if m < 1 << 20 => 10_000.0,
        m if m < 4 << 20 => 15_000.0,
        _ => 50_000.0,
    };
    let (beta, gamma) = (0.07, 0.02);
    let t: Vec<BusyTime> = synthetic(8, 0.0, beta, gamma)
        .into_iter()
        .map(|mut x| {
            x.median_ns += x.coeffs.alpha * alpha_of(x.bytes);
            x
        })
        .collect();
    let c = fit(&t, gamma);
    assert!((c.beta_ns.unwrap() - beta).abs() < 1e-9, "{c:?}");
    assert!((c.alpha_ns.unwrap() - 25_000.0).abs() < 1e-6, "{c:?}");
    assert!(c.r2.unwrap() > 1.0 - 1e-9);
    let pts = step_points(&t, gamma);
    let pooled: Vec<(f64, f64)> = pts.iter().map(|p| (p.1, p.2)).collect();
    let (_, pooled_beta) = super::super::line(&pooled).unwrap();
    assert!(pooled_beta > 1.5 * beta, "{pooled_beta}");
}

#[test]
fn lines_with_one_slope() {
    let pts = [
        (1, 0.0, 1.0),
        (1, 1.0, 3.0),
        (2, 0.0, 5.0),
        (2, 2.0, 9.0),
        (3, 7.0, 4.0),
    ];
    let l = fit_lines(&pts).unwrap();
    assert_eq!(l.slope, 2.0);
    assert_eq!(l.intercepts, vec![(1, 1.0), (2, 5.0), (3, -10.0)]);
    assert_eq!(l.r2, Some(1.0));
    assert!(fit_lines(&[]).is_none());
    let l = fit_lines(&[(4, 1.0, 2.0), (4, 1.0, 4.0)]).unwrap();
    assert_eq!((l.slope, l.intercepts), (0.0, vec![(4, 3.0)]));
}

#[test]
fn the_fit_keeps_alpha_positive_and_beta_not_negative() {
    // Times that fall with the block size give a negative slope; a step cheaper than its
    // bytes gives a negative intercept.
    let mut t = synthetic(8, 10_000.0, 0.05, 0.0);
    for x in &mut t {
        x.median_ns = x.coeffs.alpha * 1000.0 / x.coeffs.beta * x.coeffs.alpha;
    }
    let c = fit(&t, 0.0);
    assert!(
        c.alpha_ns.unwrap() >= 1.0 && c.beta_ns.unwrap() == 0.0,
        "{c:?}"
    );
    let mut t = synthetic(8, 0.0, 0.05, 0.0);
    for x in &mut t {
        x.median_ns -= 100.0 * x.coeffs.alpha;
    }
    assert!(fit(&t, 0.0).alpha_ns.unwrap() >= 1.0);
    // One block size: all start-up.
    let one: Vec<BusyTime> = synthetic(8, 5000.0, 0.0, 0.0).into_iter().take(1).collect();
    let c = fit(&one, 0.0);
    assert!((c.alpha_ns.unwrap() - 5000.0).abs() < 1e-6 && c.beta_ns == Some(0.0));
}

#[test]
fn the_simulated_coefficients_are_the_chains_counts() {
    for p in [2, 3, 8, 13] {
        for &bytes in &BYTES[..2] {
            let n = bytes / ELEM;
            for &blocks in &BLOCKS {
                let block = block_for(n, blocks);
                assert_eq!(n / block + 1, blocks, "the schedule cuts b blocks");
                let c = coeffs(p, n, block).unwrap();
                let cf = closed_form(p, bytes, blocks);
                assert_eq!(c.alpha, cf.alpha, "p={p} m={bytes} b={blocks}");
                // Every step on the critical path moves a block of B elements or the
                // last one, a few elements shorter.
                let last = n - (blocks - 1) * block;
                let full = c.alpha * (block * ELEM) as f64;
                let low = c.alpha * (last * ELEM) as f64;
                assert!(c.beta <= full && c.beta >= low, "{c:?} {low} {full}");
                // Folds: a block at each of the reduce half's p − 2 + b steps.
                assert!(c.gamma <= full / 2.0 && c.gamma >= low / 2.0, "{c:?}");
            }
        }
    }
}

#[test]
fn cases_keep_to_the_blocks_auto_can_pick() {
    let c = cases();
    assert!(c.iter().all(|&(m, b)| m / b <= MAX_AUTO_BLOCK));
    assert!(c.contains(&(128 << 10, 1)) && c.contains(&(4 << 20, 32)));
    assert!(!c.contains(&(4 << 20, 4)));
    assert_eq!(c.len(), 14);
}

#[test]
fn auto_blocks_follow_the_constants() {
    // The lemma's b* = √(6βm/α) for the chain on 8 ranks: a start-up 12.5 times the
    // ping-pong's gives about √12.5 ≈ 3.5 times fewer blocks.
    let busy = LevelCosts::measured(20_000.0, 0.07);
    let pp = LevelCosts::measured(1_600.0, 0.07);
    let (_, b_busy) = auto_block(8, 1 << 20, &busy).unwrap();
    let (_, b_pp) = auto_block(8, 1 << 20, &pp).unwrap();
    assert_eq!(b_busy, 5, "√(6 · 0.07 · 2^20 / 20000) = 4.7");
    assert_eq!(b_pp, 17, "√(6 · 0.07 · 2^20 / 1600) = 16.6");
    assert_eq!(auto_block(8, 1 << 20, &LevelCosts::default()), None);
}

#[test]
fn busy_team_shape() {
    assert_eq!(shape(&[0, 1]), (vec![0, 1], 8));
    assert_eq!(shape(&[5]), (vec![5], 4));
    let many: Vec<usize> = (0..64).collect();
    let (used, p) = shape(&many);
    assert_eq!((used.len(), p), (MAX_CORES, RANKS_PER_CORE * MAX_CORES));
}

/// The whole path on a tiny budget: a team of 4 ranks on one core runs the cases and the
/// fit gives a positive α.
#[test]
fn measures_end_to_end_on_one_core() {
    let core = corecoll::Topology::detect().leaves()[0].os_index;
    let mut seen = 0;
    let t = measure_busy(&[core], Duration::from_millis(1), |_| seen += 1).unwrap();
    assert_eq!(seen, PASSES);
    assert_eq!(t.len(), cases().len());
    assert!(t
        .iter()
        .all(|x| x.samples >= 3 * PASSES as u64 && x.median_ns.is_finite()));
    let c = fit(&t, 0.02);
    assert!(c.alpha_ns.unwrap() >= 1.0, "{c:?}");
}
