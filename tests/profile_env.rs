//! `CORECOLL_PROFILE`: a team without `TeamBuilder::profile` loads the file it names, and a
//! file that cannot be read or is not a profile makes `build()` fail. Environment variables are
//! process-wide, so this is the only test in its binary, and it sets and unsets the variable
//! itself.

use corecoll::profile::{Level, LevelCosts, ENV_VAR};
use corecoll::{Error, Profile, Team};

#[test]
fn teams_load_the_profile_the_environment_names() {
    let dir = tempfile::tempdir().unwrap();

    // Unset: the built-in defaults.
    std::env::remove_var(ENV_VAR);
    let team = Team::builder().ranks(2).build().unwrap();
    assert_eq!(team.profile(), &Profile::default());
    drop(team);

    // A file that is not there.
    let missing = dir.path().join("no-such-profile.json");
    std::env::set_var(ENV_VAR, &missing);
    let e = Team::builder().ranks(2).build().unwrap_err();
    assert!(matches!(e, Error::Profile { .. }), "{e}");
    assert!(e.to_string().contains("no-such-profile.json"), "{e}");

    // A file that is not a profile.
    let bad = dir.path().join("bad.json");
    std::fs::write(
        &bad,
        "{\"version\": 1, \"levels\": {\"l3\": {\"alpha_ns\": -3, \"beta_ns\": 1}}}",
    )
    .unwrap();
    std::env::set_var(ENV_VAR, &bad);
    let e = corecoll::run(2, |comm| comm.rank()).unwrap_err();
    assert!(
        e.to_string().contains("bad.json") && e.to_string().contains("alpha_ns"),
        "{e}"
    );

    // A good one is loaded; the builder's own profile wins over it.
    let mut p = Profile::default();
    p.set_level(Level::L3, LevelCosts::measured(123.0, 0.045));
    let good = dir.path().join("good.json");
    std::fs::write(&good, p.to_json()).unwrap();
    std::env::set_var(ENV_VAR, &good);
    let team = Team::builder().ranks(2).build().unwrap();
    assert_eq!(team.profile(), &p);
    drop(team);
    let team = Team::builder()
        .ranks(2)
        .profile(Profile::default())
        .build()
        .unwrap();
    assert_eq!(team.profile(), &Profile::default());
    drop(team);

    // Empty counts as unset.
    std::env::set_var(ENV_VAR, "");
    assert_eq!(Profile::from_env(), Ok(None));
    std::env::remove_var(ENV_VAR);
}
