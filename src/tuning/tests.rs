//! Rules, tables and the order of the decision's sources.

use super::*;
use crate::error::Error;

fn rules(c: Collective, text: &str) -> Rules {
    Rules::parse(c, text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn table(c: Collective, ranks: usize, oversubscribed: bool, text: &str) -> Table {
    Table {
        collective: c,
        ranks,
        oversubscribed,
        rules: text.into(),
        noncommutative: None,
        measured: String::new(),
    }
}

#[test]
fn rules_parse_choose_and_print() {
    let r = rules(
        Collective::Allreduce,
        " ring:4KiB-max ; recursive-doubling:0-4095",
    );
    assert_eq!(r.choose(0), Some("recursive-doubling"));
    assert_eq!(r.choose(4095), Some("recursive-doubling"));
    assert_eq!(r.choose(4096), Some("ring"));
    assert_eq!(r.choose(usize::MAX), Some("ring"));
    // Sorted, printed in the syntax it reads.
    assert_eq!(r.to_string(), "recursive-doubling:0-4095;ring:4096-max");
    assert_eq!(rules(Collective::Allreduce, &r.to_string()), r);
    // A name alone covers everything; gaps fall through.
    assert_eq!(rules(Collective::Barrier, "tree").choose(0), Some("tree"));
    let gap = rules(Collective::Broadcast, "binomial:0-100;direct:1M-max");
    assert_eq!(gap.choose(101), None);
    assert_eq!(gap.choose(1 << 20), Some("direct"));
    assert_eq!(
        rules(Collective::Scan, "pipelined-tree:2k-3K").choose(2048),
        Some("pipelined-tree")
    );
}

#[test]
fn bad_rules_say_what_is_wrong() {
    let err = |c, t| Rules::parse(c, t).unwrap_err();
    assert!(err(Collective::Allreduce, "").contains("no rule"));
    assert!(err(Collective::Allreduce, "bogus:0-max").contains("not a allreduce algorithm"));
    assert!(err(Collective::Allreduce, "bogus").contains("recursive-doubling"));
    // `auto`, `native` and the hierarchical ones are not for tables.
    for name in ["auto", "native", "hierarchical", "hierarchical-direct"] {
        assert!(
            err(Collective::Allreduce, name).contains("not a allreduce algorithm"),
            "{name}"
        );
    }
    assert!(err(Collective::Alltoall, "ring-leaders").contains("not a alltoall"));
    // Another collective's algorithm.
    assert!(err(Collective::Broadcast, "rabenseifner").contains("broadcast"));
    assert!(err(Collective::Allreduce, "ring:10").contains("FROM-TO"));
    assert!(err(Collective::Allreduce, "ring:x-10").contains("not a size"));
    assert!(err(Collective::Allreduce, "ring:1-10Q").contains("unknown unit"));
    assert!(err(Collective::Allreduce, "ring:10-1").contains("ends before"));
    assert!(err(Collective::Allreduce, "ring:0-10;linear:10-max").contains("overlap"));
    assert!(err(Collective::Allreduce, "ring;linear:5-6").contains("overlap"));
    assert!(err(Collective::Allreduce, "ring:99999999999999999999G-max").contains("size"));
}

#[test]
fn every_collective_has_names_and_a_variable() {
    for c in Collective::ALL {
        assert_eq!(Collective::from_name(c.name()), Some(c));
        assert!(c.env_var().starts_with("CORECOLL_"));
        let names = c.algorithms();
        assert!(!names.is_empty() && !names.contains(&"auto"), "{c}");
        // Every name a rule may use parses back into the collective's enum.
        for n in names {
            let ok = match c {
                Collective::Allreduce => crate::select::Algorithm::named(n).is_some(),
                Collective::Broadcast => crate::select::Broadcast::named(n).is_some(),
                Collective::Reduce => crate::select::Reduce::named(n).is_some(),
                Collective::Scan => crate::select::Scan::named(n).is_some(),
                Collective::Gather => crate::select::Gather::named(n).is_some(),
                Collective::Scatter => crate::select::Scatter::named(n).is_some(),
                Collective::Allgather => crate::select::Allgather::named(n).is_some(),
                Collective::Alltoall => crate::select::Alltoall::named(n).is_some(),
                Collective::ReduceScatter => crate::select::ReduceScatter::named(n).is_some(),
                Collective::Barrier => crate::select::Barrier::named(n).is_some(),
            };
            assert!(ok, "{c} {n}");
        }
    }
    assert!(!Collective::Allreduce.admits("ring", false));
    assert!(Collective::Allreduce.admits("ring", true));
    assert!(Collective::ReduceScatter.admits("ring", false));
}

#[test]
fn tables_are_checked() {
    let mut t = table(Collective::Reduce, 4, false, "binomial:0-max");
    assert!(Table::check_all(std::slice::from_ref(&t)).is_ok());
    t.noncommutative = Some("binomial".into());
    assert!(Table::check_all(std::slice::from_ref(&t))
        .unwrap_err()
        .contains("allreduce only"));
    let mut t = table(Collective::Allreduce, 4, false, "ring");
    t.noncommutative = Some("ring".into());
    assert!(Table::check_all(std::slice::from_ref(&t))
        .unwrap_err()
        .contains("reorders"));
    let t = table(Collective::Allreduce, 0, false, "ring");
    assert!(Table::check_all(&[t]).unwrap_err().contains("at least 1"));
    let t = table(Collective::Allreduce, 2, false, "ring:0-5;ring:3-9");
    assert!(Table::check_all(&[t])
        .unwrap_err()
        .contains("allreduce table for 2 ranks"));
}

/// The nearest table: doublings apart, the other regime one doubling farther.
#[test]
fn nearest_table_by_ranks_and_regime() {
    let tables = [
        table(Collective::Allreduce, 2, false, "linear"),
        table(Collective::Allreduce, 8, true, "ring"),
        table(Collective::Allreduce, 64, false, "rabenseifner"),
    ];
    let t = Tuning::new(&tables, &[]).unwrap();
    let at = |p, over| {
        t.decide(Collective::Allreduce, p, over, 100, true)
            .map(|d| (d.algorithm, d.origin))
    };
    let prof = |ranks, oversubscribed| Origin::Profile {
        ranks,
        oversubscribed,
    };
    assert_eq!(at(2, false), Some(("linear", prof(2, false))));
    assert_eq!(at(3, false), Some(("linear", prof(2, false))));
    // 8 dedicated: 2 doublings to the 2-rank table, 0 + 1 to the oversubscribed 8.
    assert_eq!(at(8, false), Some(("ring", prof(8, true))));
    assert_eq!(at(8, true), Some(("ring", prof(8, true))));
    assert_eq!(at(4, true), Some(("ring", prof(8, true))));
    assert_eq!(at(40, false), Some(("rabenseifner", prof(64, false))));
    // Tie (4 dedicated: 1 doubling to 2, 1 + 1 to 8): the same regime.
    assert_eq!(at(4, false), Some(("linear", prof(2, false))));
    // A collective the profile has no table for takes the built-in ones (here: none).
    assert_eq!(
        t.decide(Collective::Broadcast, 2, false, 8, true),
        Tuning::default().decide(Collective::Broadcast, 2, false, 8, true)
    );
}

/// Non-commutative ops: the table's order-keeping rules, and an override naming the ring is
/// passed over.
#[test]
fn noncommutative_allreduce() {
    let mut t = table(Collective::Allreduce, 2, false, "ring");
    t.noncommutative = Some("chain:0-max".into());
    let program = [(Collective::Allreduce, "ring:0-1000".to_string())];
    let tuning = Tuning::new(&[t], &program).unwrap();
    let d = |bytes, commutative| {
        let d = tuning
            .decide(Collective::Allreduce, 2, false, bytes, commutative)
            .unwrap();
        (d.algorithm, d.origin)
    };
    assert_eq!(d(10, true), ("ring", Origin::Program));
    assert_eq!(
        d(10, false),
        (
            "chain",
            Origin::Profile {
                ranks: 2,
                oversubscribed: false
            }
        )
    );
    assert_eq!(
        d(2000, true),
        (
            "ring",
            Origin::Profile {
                ranks: 2,
                oversubscribed: false
            }
        )
    );
}

#[test]
fn program_rules_are_checked_when_built() {
    let e = Tuning::new(&[], &[(Collective::Scan, "ring".into())]).unwrap_err();
    assert!(
        matches!(&e, Error::Tuning { origin, .. } if origin.contains("algorithm_rules(scan)")),
        "{e}"
    );
    let bad = table(Collective::Scan, 2, false, "nope");
    let e = Tuning::new(&[bad], &[]).unwrap_err();
    assert!(
        matches!(&e, Error::Tuning { origin, .. } if origin == "profile"),
        "{e}"
    );
}

/// The built-in tables parse, and cover every collective at every size in both regimes.
#[test]
fn builtin_tables_cover_everything() {
    let tables: Vec<Table> = serde_json::from_str(include_str!("builtin.json")).unwrap();
    Table::check_all(&tables).unwrap();
    assert_eq!(builtin().len(), tables.len());
    for c in Collective::ALL {
        for over in [false, true] {
            let regime: Vec<_> = tables
                .iter()
                .filter(|t| t.collective == c && t.oversubscribed == over)
                .collect();
            assert!(
                !regime.is_empty(),
                "no built-in {c} table, oversubscribed = {over}"
            );
            for t in regime {
                let r = Rules::parse(c, &t.rules).unwrap();
                for bytes in [0, 1, 8, 4095, 4096, 1 << 20, usize::MAX] {
                    assert!(r.choose(bytes).is_some(), "{c}/{}: {bytes} B", t.ranks);
                }
            }
        }
    }
}

/// `flatten` gives, at every size, what `decide` gives.
#[test]
fn flatten_agrees_with_decide() {
    let mut t = table(
        Collective::Allreduce,
        4,
        true,
        "linear:0-99;ring:100-5000;direct:5001-max",
    );
    t.noncommutative = Some("linear:0-99;chain:100-max".into());
    let program = [(Collective::Allreduce, "binomial:64-200".to_string())];
    let tuning = Tuning::new(&[t], &program).unwrap();
    for c in [
        Collective::Allreduce,
        Collective::Broadcast,
        Collective::Barrier,
    ] {
        for (p, over) in [(2, false), (4, true), (9, false)] {
            for commutative in [true, false] {
                let flat = tuning.flatten(c, p, over, commutative);
                assert_eq!(flat[0].0, 0);
                assert!(flat.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 != w[1].1));
                for bytes in (0..6000).chain([1 << 20, 12_000_000, usize::MAX]) {
                    let i = flat.partition_point(|&(from, _)| from <= bytes) - 1;
                    let want = tuning
                        .decide(c, p, over, bytes, commutative)
                        .map(|d| d.algorithm);
                    assert_eq!(flat[i].1, want, "{c} p={p} {bytes} B");
                }
            }
        }
    }
}
