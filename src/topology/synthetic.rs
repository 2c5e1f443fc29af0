//! Described machines: a shape of packages, L3 groups and cores, whose cores wrap onto the
//! cores this process may use, so that placements and the hierarchy can be exercised (and
//! tested) on any machine, a 2-core one included.

use super::{available_cores, L3Group, Location, Source, Topology};
use crate::error::{Error, Result};

impl Topology {
    /// A described machine, by the number of elements at each level from the top:
    /// `[packages, l3_per_package, cores_per_l3]`, `[packages, cores_per_package]` (one L3
    /// group per package) or `[cores]` (one package).
    ///
    /// Each package is one NUMA node. Leaf i (in topology order) runs on the
    /// `i mod n`-th of the n cores the calling thread may use: the locations are the
    /// described machine's, the pinning wraps onto the real one. Every number must be at
    /// least 1.
    ///
    /// ```
    /// let t = corecoll::Topology::synthetic(&[2, 3]).unwrap();
    /// assert_eq!((t.num_packages(), t.num_l3_groups(), t.num_cores()), (2, 2, 6));
    /// ```
    pub fn synthetic(shape: &[usize]) -> Result<Topology> {
        let (packages, l3s, cores) = match *shape {
            [c] => (1, 1, c),
            [p, c] => (p, 1, c),
            [p, g, c] => (p, g, c),
            _ => {
                return Err(Error::Topology(format!(
                    "a synthetic shape has 1 to 3 levels ([cores], [packages, cores] or \
                     [packages, l3_per_package, cores_per_l3]), not {shape:?}"
                )))
            }
        };
        if shape.contains(&0) {
            return Err(Error::Topology(format!(
                "every level of a synthetic shape needs at least one element, not {shape:?}"
            )));
        }
        let mut t = Topology::synthetic_groups(vec![vec![cores; l3s]; packages])?;
        t.shape = shape
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join("x");
        Ok(t)
    }

    /// A described machine of uneven shape: `packages[p][g]` is the number of cores of L3
    /// group g of package p, e.g. `vec![vec![3, 2], vec![4]]` for a package of two L3 groups
    /// (3 and 2 cores) and one of a single group of 4. Otherwise as [`Topology::synthetic`].
    pub fn synthetic_groups(packages: Vec<Vec<usize>>) -> Result<Topology> {
        if packages.is_empty() || packages.iter().any(|gs| gs.is_empty() || gs.contains(&0)) {
            return Err(Error::Topology(format!(
                "every package of a synthetic machine needs at least one L3 group, and every \
                 group at least one core, not {packages:?}"
            )));
        }
        let real = available_cores();
        let mut t = Topology {
            source: Source::Synthetic,
            leaves: Vec::new(),
            pus: Vec::new(),
            package_os: (0..packages.len()).collect(),
            numa_os: (0..packages.len()).collect(),
            l3: Vec::new(),
            shape: format!("{packages:?}"),
        };
        for (package, groups) in packages.iter().enumerate() {
            for &cores in groups {
                t.l3.push(L3Group {
                    bytes: None,
                    cache: true,
                });
                for _ in 0..cores {
                    let core = t.leaves.len();
                    let os_index = real[core % real.len()];
                    t.leaves.push(Location {
                        package,
                        numa: package,
                        l3: t.l3.len() - 1,
                        core,
                        os_index,
                    });
                    t.pus.push(vec![os_index]);
                }
            }
        }
        Ok(t)
    }
}
