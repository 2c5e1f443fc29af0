//! Tests of profiles: the JSON format and its checks, the fallbacks between levels, the level a
//! group of ranks spans, and the costs a team takes from its profile.

use super::*;
use crate::error::Error;
use crate::topology::Topology;

fn measured() -> Profile {
    let mut p = Profile {
        host: Host {
            hostname: Some("test".into()),
            cores: 2,
            topology: "1 package, 1 L3 group, 2 cores (synthetic)".into(),
        },
        ..Profile::default()
    };
    let mut l3 = LevelCosts::measured(150.0, 0.05);
    l3.r2 = Some(0.99);
    l3.samples = 1200;
    l3.note = "cores 0 and 1".into();
    p.set_level(Level::L3, l3);
    p.set_level(Level::Oversubscribed, LevelCosts::measured(2500.0, 0.06));
    p.gamma.f64_sum_ns = Some(0.12);
    p
}

#[test]
fn json_round_trip() {
    for p in [Profile::default(), measured()] {
        let text = p.to_json();
        let back = Profile::from_json(&text).unwrap();
        assert_eq!(back, p, "{text}");
    }
    // Every level is written, measured or not.
    let text = Profile::default().to_json();
    for l in Level::ALL {
        assert!(text.contains(&format!("\"{}\"", l.name())), "{text}");
    }
}

/// A profile as `--calibrate` wrote it before the oversubscribed level was measured from a
/// busy pipeline (no `pingpong` record) still loads, with the same constants; one with the
/// record round-trips, and the record never changes what the level resolves to.
#[test]
fn profiles_before_and_after_the_busy_pipeline_load() {
    let old = r#"{
  "version": 1,
  "host": { "hostname": "vm", "cores": 2, "topology": "1 package, 1 L3 group, 2 cores (sysfs)" },
  "levels": {
    "l3": { "alpha_ns": 110.1, "beta_ns": 0.0287, "r2": 0.865, "samples": 114417,
            "note": "cores 0 and 1" },
    "package": { "alpha_ns": null, "beta_ns": null, "samples": 0,
                 "note": "no package with two L3 groups on this machine" },
    "machine": { "alpha_ns": null, "beta_ns": null, "samples": 0,
                 "note": "one package on this machine" },
    "mpi": { "alpha_ns": 389.5, "beta_ns": 1.31, "r2": 0.971, "samples": 97226,
             "note": "2 processes, mpirun --bind-to none" },
    "oversubscribed": { "alpha_ns": 1576.3, "beta_ns": 0.0213, "r2": 1.0, "samples": 139568,
                        "note": "both ranks on core 0" }
  },
  "gamma": { "f64_sum_ns": 0.0213, "u64_sum_ns": 0.0213 }
}"#;
    let p = Profile::from_json(old).unwrap();
    let o = p.level(Level::Oversubscribed).unwrap();
    assert_eq!(o.pingpong, None);
    assert_eq!(p.costs(Level::Oversubscribed), Costs::new(1576.3, 0.0213));
    // Written again, the old file has no `pingpong` either.
    assert!(!p.to_json().contains("pingpong"));

    let mut q = p.clone();
    let mut busy = LevelCosts::measured(9500.0, 0.2);
    busy.pingpong = Some(Box::new(o.clone()));
    q.set_level(Level::Oversubscribed, busy);
    let text = q.to_json();
    assert!(text.contains("\"pingpong\""), "{text}");
    let back = Profile::from_json(&text).unwrap();
    assert_eq!(back, q);
    assert_eq!(back.costs(Level::Oversubscribed), Costs::new(9500.0, 0.2));
    // A misspelt field inside the record is still an error.
    let bad = text.replace("\"note\": \"both", "\"notes\": \"both");
    assert!(Profile::from_json(&bad).is_err());
}

#[test]
fn defaults_are_the_built_in_constants() {
    let p = Profile::default();
    assert!(!p.is_measured());
    for l in Level::ALL {
        assert!(!p.level(l).unwrap().is_measured());
        assert_eq!(p.costs(l), l.default_costs());
        assert_eq!(p.resolve(l).from, None);
    }
    assert_eq!(p.costs(Level::L3), Costs::DEDICATED);
    assert_eq!(p.costs(Level::Oversubscribed), Costs::OVERSUBSCRIBED);
    assert_eq!(p.costs(Level::Mpi), Costs::MPI);
    assert_eq!(p.gamma_ns(true), DEFAULT_GAMMA_NS);
    // A profile with only a version reads as the defaults.
    let bare = Profile::from_json(r#"{"version": 1}"#).unwrap();
    for l in Level::ALL {
        assert_eq!(bare.costs(l), l.default_costs());
    }
}

#[test]
fn fallback_order() {
    let p = measured();
    let l3 = Costs::new(150.0, 0.05);
    assert_eq!(p.costs(Level::L3), l3);
    // The wider levels take the only measured shared-memory level.
    assert_eq!(p.resolve(Level::Package).from, Some(Level::L3));
    assert_eq!(p.costs(Level::Machine), l3);
    // MPI never borrows a shared-memory level; oversubscribed has its own.
    assert_eq!(p.costs(Level::Mpi), Costs::MPI);
    assert_eq!(
        p.resolve(Level::Oversubscribed).from,
        Some(Level::Oversubscribed)
    );
    // Nearest first, the wider on a tie.
    let mut q = p.clone();
    q.set_level(Level::Machine, LevelCosts::measured(900.0, 0.2));
    assert_eq!(q.resolve(Level::Package).from, Some(Level::Machine));
    assert_eq!(q.resolve(Level::L3).from, Some(Level::L3));
    q.set_level(Level::L3, LevelCosts::not_measured("gone"));
    assert_eq!(q.resolve(Level::L3).from, Some(Level::Machine));
    q.set_level(Level::Package, LevelCosts::measured(400.0, 0.1));
    assert_eq!(q.resolve(Level::L3).from, Some(Level::Package));
    assert_eq!(q.resolve(Level::Machine).from, Some(Level::Machine));
    // Gamma: the class's own, else the other's.
    assert_eq!(p.gamma_ns(true), 0.12);
    assert_eq!(p.gamma_ns(false), 0.12);
}

#[test]
fn bad_profiles_are_errors() {
    let cases = [
        ("", "not JSON"),
        ("{", "not JSON"),
        ("[1, 2]", "no `version`"),
        (r#"{"version": 2}"#, "format version 2"),
        (r#"{"version": "1"}"#, "whole number"),
        (r#"{"version": 1, "levels": {"l4": {}}}"#, "unknown variant"),
        (
            r#"{"version": 1, "levels": {"l3": {"alpha": 1}}}"#,
            "unknown field",
        ),
        (
            r#"{"version": 1, "levels": {"l3": {"alpha_ns": 100}}}"#,
            "go together",
        ),
        (
            r#"{"version": 1, "levels": {"l3": {"alpha_ns": 0, "beta_ns": 0.1}}}"#,
            "positive",
        ),
        (
            r#"{"version": 1, "levels": {"mpi": {"alpha_ns": 10, "beta_ns": -1}}}"#,
            "zero or positive",
        ),
        (r#"{"version": 1, "gamma": {"f64_sum_ns": -0.5}}"#, "gamma"),
    ];
    for (text, expected) in cases {
        let e = Profile::from_json(text).unwrap_err();
        let msg = e.to_string();
        assert!(
            matches!(e, Error::Profile { path: None, .. }),
            "{text}: {msg}"
        );
        assert!(msg.contains(expected), "{text}: {msg}");
    }
}

#[test]
fn load_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.json");
    let e = Profile::load(&missing).unwrap_err();
    assert!(e.to_string().contains("missing.json"), "{e}");
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\"version\": 1, \"levels\": 3}").unwrap();
    let e = Profile::load(&bad).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("bad.json") && msg.contains("not a profile"),
        "{msg}"
    );
    let good = dir.path().join("good.json");
    std::fs::write(&good, measured().to_json()).unwrap();
    assert_eq!(Profile::load(&good).unwrap(), measured());
}

#[test]
fn levels_spanned_by_locations() {
    let t = Topology::synthetic_groups(vec![vec![2, 2], vec![2]]).unwrap();
    let leaves = t.leaves();
    let span = |idx: &[usize]| Level::spanned(idx.iter().map(|&i| Some(leaves[i])));
    assert_eq!(span(&[]), Level::L3);
    assert_eq!(span(&[3]), Level::L3);
    assert_eq!(span(&[0, 1]), Level::L3);
    assert_eq!(span(&[0, 1, 2]), Level::Package);
    assert_eq!(span(&[1, 4]), Level::Machine);
    assert_eq!(span(&[0, 2, 5]), Level::Machine);
    assert_eq!(
        Level::spanned([Some(leaves[0]), None].into_iter()),
        Level::Machine
    );
}

#[test]
fn teams_take_the_costs_of_the_level_their_ranks_span() {
    use crate::{Pinning, Team, Wait};
    let mut p = Profile::default();
    p.set_level(Level::L3, LevelCosts::measured(111.0, 0.01));
    p.set_level(Level::Package, LevelCosts::measured(222.0, 0.02));
    p.set_level(Level::Machine, LevelCosts::measured(333.0, 0.03));
    p.set_level(Level::Oversubscribed, LevelCosts::measured(4444.0, 0.04));
    // Two ranks in one L3 group, across L3 groups, across packages.
    for (groups, level) in [
        (vec![vec![2]], Level::L3),
        (vec![vec![1, 1]], Level::Package),
        (vec![vec![1], vec![1]], Level::Machine),
    ] {
        let team = Team::builder()
            .ranks(2)
            .topology(Topology::synthetic_groups(groups).unwrap())
            .pinning(Pinning::Compact)
            .wait(Wait::Active)
            .profile(p.clone())
            .build()
            .unwrap();
        assert_eq!(team.profile(), &p);
        let costs = team.run(|comm| comm.local().costs()).unwrap();
        assert_eq!(costs, vec![p.costs(level); 2], "{level}");
        // A sub-communicator of one rank is within one L3 group.
        let solo = team
            .run(|comm| {
                comm.split(Some(comm.rank()), 0)
                    .unwrap()
                    .unwrap()
                    .local()
                    .costs()
            })
            .unwrap();
        assert_eq!(solo, vec![p.costs(Level::L3); 2]);
    }
    // Shared cores: the oversubscribed level, whatever the locations.
    let team = Team::builder()
        .ranks(2)
        .wait(Wait::Passive)
        .profile(p.clone())
        .build()
        .unwrap();
    let costs = team.run(|comm| comm.local().costs()).unwrap();
    assert_eq!(costs, vec![p.costs(Level::Oversubscribed); 2]);
    // The block the lemma picks follows: DualRoot at p = 8 over 1 Mi f64 with the default
    // constants and with this profile's L3 ones.
    let alg = crate::Algorithm::DualRoot {
        block: crate::Block::Auto,
    };
    let n = 1 << 20;
    assert_ne!(
        alg.block_elements(8, n, 8, p.costs(Level::L3)),
        alg.block_elements(8, n, 8, Profile::default().costs(Level::L3))
    );
}
