//! How the measurements of one row are combined: the interleaved rounds of `--rounds` (the
//! order of each round, and one record from a row's rounds) and the passes of `--repeat`
//! (each cell's best pass).

use crate::record::{Record, Source, Validation};
use crate::stats::Summary;

/// Of `records` from `passes` passes of one sweep, each cell's record with the lowest median,
/// in the order of the first pass, its note saying how many passes there were; a cell that
/// failed its check in any pass keeps that failure (a failure is never hidden by a pass that
/// passed).
pub(super) fn best_of_passes(records: Vec<Record>, passes: usize) -> Vec<Record> {
    if passes <= 1 {
        return records;
    }
    type Key = (String, String, String, usize, usize, Source);
    let key = |r: &Record| -> Key {
        (
            r.scope.clone(),
            r.collective.clone(),
            r.algorithm.clone(),
            r.ranks,
            r.bytes,
            r.source,
        )
    };
    let mut order: Vec<Key> = Vec::new();
    let mut best: std::collections::HashMap<Key, Record> = std::collections::HashMap::new();
    for r in records {
        let k = key(&r);
        match best.get(&k) {
            None => {
                order.push(k.clone());
                best.insert(k, r);
            }
            Some(old) if old.validation == Validation::Fail => {}
            Some(old)
                if r.validation == Validation::Fail
                    || old.median_us.is_nan()
                    || r.median_us < old.median_us =>
            {
                best.insert(k, r);
            }
            Some(_) => {}
        }
    }
    order
        .into_iter()
        .filter_map(|k| best.remove(&k))
        .map(|mut r| {
            let note = format!("best median of {passes} passes");
            r.note = if r.note.is_empty() {
                note
            } else {
                format!("{}; {note}", r.note)
            };
            r
        })
        .collect()
}

/// The order in which round `round` measures `n` rows: all of them, starting at row
/// `round mod n`, so that no row always follows the same one (nor always comes first, after
/// the previous size's last row).
pub(super) fn round_order(n: usize, round: usize) -> impl Iterator<Item = usize> {
    let first = if n == 0 { 0 } else { round % n };
    (0..n).map(move |k| (first + k) % n)
}

/// One row's record from its rounds (each a record and that round's per-iteration times): the
/// check's outcome of the first round that failed (or else of the first round), the largest
/// error of any round, min, p95, mean and iterations over every round's times together, and
/// as the median **the median of the rounds' medians** (and as the touch time and the
/// switches per iteration the medians of the rounds'). `None` for no rounds.
///
/// Why not the median of all the times: the rounds of a size run a second or so apart, and
/// this machine has spells of seconds in which everything is several times slower (at 8 MiB
/// on 2 ranks, 1.5–2 ms a call against 0.33 ms, for every row of the size in the same
/// rounds). Each round runs for a fixed time, so a row gets fewer iterations in a slow round,
/// and how its pooled times divide between the two modes differs from row to row: one row's
/// pooled median fell in the slow mode and its neighbour's in the fast one, 2.5× apart. Each
/// round counts once in the median of the rounds' medians, and as every row met the same
/// spells in the same rounds, the rows' medians come from the same rounds' modes.
pub(super) fn merge_rounds(rounds: Vec<(Record, Vec<f64>)>) -> Option<Record> {
    let n = rounds.len();
    if n <= 1 {
        return rounds.into_iter().next().map(|(r, _)| r);
    }
    let worst = rounds
        .iter()
        .position(|(r, _)| r.validation == Validation::Fail)
        .unwrap_or(0);
    let max_err = rounds
        .iter()
        .filter_map(|(r, _)| r.max_rel_error)
        .reduce(f64::max);
    let unmeasured = rounds.iter().any(|(r, t)| t.is_empty() && r.iters == 0);
    let times: Vec<f64> = rounds.iter().flat_map(|(_, t)| t.iter().copied()).collect();
    let medians: Vec<f64> = rounds
        .iter()
        .filter_map(|(_, t)| Summary::of(t).map(|s| s.median))
        .collect();
    let touches: Vec<f64> = rounds.iter().filter_map(|(r, _)| r.touch_us).collect();
    let switches: Vec<f64> = rounds.iter().filter_map(|(r, _)| r.switches).collect();
    let mut rec = rounds.into_iter().nth(worst).map(|(r, _)| r)?;
    rec.max_rel_error = max_err;
    rec.touch_us = Summary::of(&touches).map(|s| s.median);
    rec.switches = Summary::of(&switches).map(|s| s.median);
    if !unmeasured {
        rec.set_times(&times);
        if let Some(m) = Summary::of(&medians) {
            rec.set_median(m.median);
        }
    }
    let note = format!("{n} interleaved rounds");
    rec.note = if rec.note.is_empty() {
        note
    } else {
        format!("{}; {note}", rec.note)
    };
    Some(rec)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each cell keeps its fastest pass, a failure in any pass stays, order of the first.
    #[test]
    fn best_of_passes_keeps_the_fastest_and_every_failure() {
        use crate::record::testing::rec;
        let mut fail = rec("ring", 8, 1.0);
        fail.validation = Validation::Fail;
        let passes = vec![
            rec("ring", 8, 5.0),
            rec("chain", 8, 2.0),
            rec("direct", 8, 3.0),
            rec("ring", 8, 4.0),
            rec("chain", 8, 3.0),
            rec("direct", 8, f64::NAN),
        ];
        let best = best_of_passes(passes.clone(), 2);
        let got: Vec<(&str, f64)> = best
            .iter()
            .map(|r| (r.algorithm.as_str(), r.median_us))
            .collect();
        assert_eq!(got, vec![("ring", 4.0), ("chain", 2.0), ("direct", 3.0)]);
        assert!(best
            .iter()
            .all(|r| r.note.contains("best median of 2 passes")));
        let mut with_fail = passes.clone();
        with_fail.insert(3, fail);
        let best = best_of_passes(with_fail, 2);
        assert_eq!(best[0].validation, Validation::Fail);
        // One pass: unchanged (NaN ≠ NaN, so compare the medians' bits).
        let one = best_of_passes(passes.clone(), 1);
        let bits = |v: &[Record]| -> Vec<u64> { v.iter().map(|r| r.median_us.to_bits()).collect() };
        assert_eq!(bits(&one), bits(&passes));
    }

    /// Every round measures every row once, each round starting one row later.
    #[test]
    fn rounds_rotate_through_every_row() {
        let order = |n, r| round_order(n, r).collect::<Vec<_>>();
        assert_eq!(order(3, 0), [0, 1, 2]);
        assert_eq!(order(3, 1), [1, 2, 0]);
        assert_eq!(order(3, 5), [2, 0, 1]);
        assert_eq!(order(1, 7), [0]);
        assert!(order(0, 3).is_empty());
        for n in 1..6 {
            for r in 0..2 * n {
                let mut o = order(n, r);
                assert_eq!(o[0], r % n);
                o.sort_unstable();
                assert_eq!(o, (0..n).collect::<Vec<_>>());
            }
        }
    }

    /// A row's rounds: statistics over all their times, a failure in any round kept (with
    /// its note), the largest error of any round.
    #[test]
    fn merged_rounds_pool_their_times_and_keep_failures() {
        use crate::record::testing::rec;
        let round = |median: f64, times: &[f64]| (rec("ring", 8, median), times.to_vec());
        assert!(merge_rounds(Vec::new()).is_none());
        // One round: the record as it was.
        let one = merge_rounds(vec![round(4.0, &[1e-6])]).unwrap();
        assert_eq!(
            (one.median_us, one.iters, one.note.as_str()),
            (4.0, 100, "")
        );
        // Three rounds of 3, 1 and 2 iterations: the statistics of the 6 times, but as the
        // median that of the rounds' medians (2, 1 and 3 µs), each round counting once.
        let m = merge_rounds(vec![
            round(2.0, &[2e-6, 2e-6, 9e-6]),
            round(1.0, &[1e-6]),
            round(3.0, &[3e-6, 3e-6]),
        ])
        .unwrap();
        assert_eq!(m.iters, 6);
        assert!((m.median_us - 2.0).abs() < 1e-9, "{}", m.median_us);
        assert!(
            (m.algbw_gbs - 8.0 / 2e-6 / 1e9).abs() < 1e-9,
            "{}",
            m.algbw_gbs
        );
        assert!((m.min_us - 1.0).abs() < 1e-9);
        assert!((m.p95_us - 9.0).abs() < 1e-9);
        assert!((m.mean_us - 20.0 / 6.0).abs() < 1e-9);
        assert!(m.note.contains("3 interleaved rounds"), "{}", m.note);
        // A failed check in the second round is the row's outcome, with its note and the
        // largest error of the rounds.
        let mut bad = round(1.0, &[1e-6]);
        bad.0.validation = Validation::Fail;
        bad.0.note = "rank 1 differs".into();
        bad.0.max_rel_error = Some(1e-3);
        let mut good = round(2.0, &[2e-6]);
        good.0.max_rel_error = Some(1e-2);
        let m = merge_rounds(vec![good, bad]).unwrap();
        assert_eq!(m.validation, Validation::Fail);
        assert!(m.note.starts_with("rank 1 differs"), "{}", m.note);
        assert_eq!(m.max_rel_error, Some(1e-2));
        assert_eq!(m.iters, 2);
        // A round that could not run: the row is that round's error, unmeasured.
        let mut err = rec("ring", 8, f64::NAN);
        (err.iters, err.validation) = (0, Validation::Fail);
        err.note = "rank 0: cannot start".into();
        let m = merge_rounds(vec![round(2.0, &[2e-6]), (err, Vec::new())]).unwrap();
        assert!(m.median_us.is_nan());
        assert_eq!(m.validation, Validation::Fail);
        assert!(m.note.starts_with("rank 0: cannot start"), "{}", m.note);
    }
}
