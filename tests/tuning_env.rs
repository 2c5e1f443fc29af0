//! `CORECOLL_ALLREDUCE` and its siblings: read when a team is built, they override the
//! program's rules and the tables; bad rules make `build()` fail naming the variable.
//! Environment variables are process-wide, so this is the only test in its binary.

use corecoll::op::Sum;
use corecoll::tuning::Origin;
use corecoll::Collective;
use corecoll::{Error, Team};

#[test]
fn environment_rules_override_program_and_tables() {
    for c in Collective::ALL {
        std::env::remove_var(c.env_var());
    }
    std::env::set_var("CORECOLL_ALLREDUCE", "linear:0-100; ring:101-max");
    std::env::set_var("CORECOLL_BARRIER", "tree");
    let team = Team::builder()
        .ranks(3)
        .algorithm_rules(Collective::Allreduce, "chain")
        .algorithm_rules(Collective::Broadcast, "binomial")
        .build()
        .unwrap();
    let d = |c, bytes, commutative| {
        let d = team.decide(c, 3, bytes, commutative).unwrap();
        (d.algorithm, d.origin)
    };
    assert_eq!(
        d(Collective::Allreduce, 8, true),
        ("linear", Origin::Environment)
    );
    assert_eq!(
        d(Collective::Allreduce, 4096, true),
        ("ring", Origin::Environment)
    );
    // The ring cannot keep a non-commutative op's order: the program's rule decides.
    assert_eq!(
        d(Collective::Allreduce, 4096, false),
        ("chain", Origin::Program)
    );
    assert_eq!(
        d(Collective::Broadcast, 8, true),
        ("binomial", Origin::Program)
    );
    assert_eq!(
        d(Collective::Barrier, 0, true),
        ("tree", Origin::Environment)
    );
    assert!(matches!(
        d(Collective::Reduce, 8, true).1,
        Origin::BuiltIn { .. }
    ));
    // The collectives run with what was decided.
    let out = team
        .run(|comm| {
            let mut small = vec![comm.rank() as u64; 3];
            let mut large = vec![comm.rank() as u64 + 1; 1000];
            comm.allreduce(&mut small, Sum)?;
            comm.allreduce(&mut large, Sum)?;
            comm.barrier()?;
            Ok::<_, Error>((small, large))
        })
        .unwrap();
    for r in out {
        let (small, large) = r.unwrap();
        assert_eq!(small, vec![3; 3]);
        assert_eq!(large, vec![6; 1000]);
    }
    drop(team);

    // Read when the team is built: a later change does not touch a built team, and bad
    // rules fail the build, naming the variable.
    std::env::set_var("CORECOLL_REDUCE_SCATTER", "ring:0-10;direct:5-max");
    let e = Team::builder().ranks(2).build().unwrap_err();
    assert!(matches!(e, Error::Tuning { .. }), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("CORECOLL_REDUCE_SCATTER") && msg.contains("overlap"),
        "{msg}"
    );
    std::env::set_var("CORECOLL_REDUCE_SCATTER", "");
    assert!(Team::builder().ranks(2).build().is_ok());
    for c in Collective::ALL {
        std::env::remove_var(c.env_var());
    }
}
