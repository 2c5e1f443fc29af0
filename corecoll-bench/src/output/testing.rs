//! What the tests of the printed tables share: a set of records and the cells of a printed
//! line.

use super::fill_limit_pct;
use crate::record::testing::rec;
use crate::record::{Record, Validation};

/// Two sizes of one group, and a second group: at 8 B ring is fastest; at 1 KiB ring is
/// faster still but failed, so direct is the best.
pub fn set() -> Vec<Record> {
    let mut v = vec![
        rec("auto", 8, 1.1),
        rec("ring", 8, 1.0),
        rec("direct", 8, 2.0),
        rec("limit", 8, 0.5),
        rec("std-naive", 8, 12.3),
        rec("auto", 1024, 3.3),
        rec("ring", 1024, 0.1),
        rec("direct", 1024, 3.0),
        rec("limit", 1024, 1.5),
        rec("std-naive", 1024, 30.0),
        rec("mpi", 1024, 15.0),
        rec("ring", 8, 7.0),
    ];
    v[0].auto_choice = "binomial".into();
    v[5].auto_choice = "direct".into();
    v[1].max_rel_error = Some(3.1e-16);
    v[6].validation = Validation::Fail;
    v[6].note = "rank 1, element 0: 1 != 2".into();
    v[11].ranks = 4;
    fill_limit_pct(&mut v);
    v
}

/// The cells of the line of `text` that starts with `size` and names `alg`.
pub fn cells<'a>(text: &'a str, size: &str, alg: &str) -> Vec<&'a str> {
    text.lines()
        .find(|l| {
            let t: Vec<&str> = l.split_whitespace().collect();
            l.trim_start().starts_with(size) && t.contains(&alg)
        })
        .unwrap_or_else(|| panic!("no line for {size} {alg} in\n{text}"))
        .split_whitespace()
        .collect()
}
