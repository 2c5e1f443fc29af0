//! The environment variables the crate reads for its settings: a value it does not take makes
//! the team's build fail with `Error::Environment`, naming the variable, its value and what
//! it takes, instead of being ignored; a good value builds. Environment variables are
//! process-wide, so this is the only test in its binary.

use corecoll::{op, Error, Team};

#[test]
fn a_bad_value_fails_the_build_and_a_good_one_builds() {
    let vars = [
        ("CORECOLL_WAIT_POLICY", "pasive", "passive"),
        ("CORECOLL_SPINS", "lots", "64"),
        ("CORECOLL_YIELD_US", "soon", "100"),
        ("CORECOLL_NODE_SIZE", "two", "2"),
        ("CORECOLL_NODE_CMA", "yes", "0"),
        ("CORECOLL_NODE_SHM", "strict", "require"),
    ];
    for (name, _, _) in vars {
        std::env::remove_var(name);
    }
    for (name, bad, good) in vars {
        std::env::set_var(name, bad);
        match Team::builder().ranks(2).build() {
            Err(Error::Environment {
                name: n,
                value,
                accepted,
            }) => {
                assert_eq!(n, name);
                assert_eq!(value, bad);
                assert!(!accepted.is_empty());
                let text = Error::Environment {
                    name: n,
                    value,
                    accepted,
                }
                .to_string();
                assert!(text.contains(name) && text.contains(bad), "{text}");
            }
            other => panic!("{name}={bad}: {other:?}"),
        }
        assert!(corecoll::run(2, |_| ()).is_err(), "{name}={bad} in run");
        std::env::set_var(name, good);
        let team = Team::builder()
            .ranks(2)
            .build()
            .expect("a good value builds");
        let sums = team
            .run(|comm| comm.allreduce_value(comm.rank() as u64, op::Sum))
            .unwrap();
        assert!(sums.into_iter().all(|s| matches!(s, Ok(1))));
        std::env::remove_var(name);
    }
}
