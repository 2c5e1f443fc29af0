//! Where a sweep's ranks run: the placements of `--placement` and the described machines of
//! `--machine` (packages of L3 groups of cores), as the command line spells them.

/// Where the ranks run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// Rank r on the r-th core in topology order (socket by socket).
    Compact,
    /// Round-robin over the sockets (and over the L3 groups within each).
    Spread,
    /// The cores of one socket: package N of the detected topology (`--topology` lists
    /// them; numbered as their `physical_package_id`s sort).
    Socket(usize),
    /// Rank r on `cores[r % len]` (operating-system core ids).
    Cores(Vec<usize>),
    /// Not pinned.
    Unpinned,
}

impl std::fmt::Display for Placement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Placement::Compact => write!(f, "compact"),
            Placement::Spread => write!(f, "spread"),
            Placement::Socket(n) => write!(f, "socket:{n}"),
            Placement::Cores(list) => {
                let l: Vec<String> = list.iter().map(usize::to_string).collect();
                write!(f, "cores:{}", l.join(","))
            }
            Placement::Unpinned => write!(f, "none"),
        }
    }
}

/// Parses a core list as Linux prints them: `0,2,4-7`.
pub fn parse_core_list(s: &str) -> Result<Vec<usize>, String> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let num = |x: &str| {
            x.trim()
                .parse::<usize>()
                .map_err(|_| format!("`{x}` in core list `{s}` is not a core number"))
        };
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (num(a)?, num(b)?);
                if a > b {
                    return Err(format!("`{part}` in core list `{s}` is an empty range"));
                }
                out.extend(a..=b);
            }
            None => out.push(num(part)?),
        }
    }
    if out.is_empty() {
        return Err(format!("core list `{s}` is empty"));
    }
    Ok(out)
}

/// Parses `--placement`.
pub fn parse_placement(s: &str) -> Result<Placement, String> {
    let s = s.trim();
    match s {
        "compact" => return Ok(Placement::Compact),
        "spread" => return Ok(Placement::Spread),
        "none" => return Ok(Placement::Unpinned),
        _ => {}
    }
    if let Some(n) = s.strip_prefix("socket:") {
        return n
            .trim()
            .parse()
            .map(Placement::Socket)
            .map_err(|_| format!("`{s}`: socket:N takes a socket number"));
    }
    if let Some(list) = s.strip_prefix("cores:") {
        return parse_core_list(list).map(Placement::Cores);
    }
    Err(format!(
        "unknown placement `{s}` (compact, spread, socket:N, cores:LIST, none)"
    ))
}

/// A described machine of `--machine`: per package the core counts of its L3 groups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Machine {
    /// The spec as given (trimmed), e.g. `2x2x4` or `3+2/4`.
    pub spec: String,
    /// `groups[p][g]`: cores of L3 group g of package p.
    pub groups: Vec<Vec<usize>>,
}

/// The most cores a described machine may have (each is a thread of the sweep).
pub const MACHINE_MAX_CORES: usize = 4096;

impl Machine {
    /// The library's synthetic topology of this machine.
    pub fn topology(&self) -> Result<corecoll::Topology, String> {
        corecoll::Topology::synthetic_groups(self.groups.clone())
            .map_err(|e| format!("--machine {}: {e}", self.spec))
    }

    /// Total cores.
    pub fn cores(&self) -> usize {
        self.groups.iter().flatten().sum()
    }

    /// A description for the results, e.g. `2x2x4 (synthetic: 2 packages, 4 L3 groups, 16
    /// cores)`.
    pub fn describe(&self) -> String {
        let l3: usize = self.groups.iter().map(Vec::len).sum();
        format!(
            "{} (synthetic: {} packages, {l3} L3 groups, {} cores)",
            self.spec,
            self.groups.len(),
            self.cores()
        )
    }
}

/// Parses `--machine`: `PxGxC`, `PxC` or `C` (every number at least 1), or the uneven form
/// `3+2/4` (packages separated by `/`, the core counts of a package's L3 groups by `+`).
pub fn parse_machine(s: &str) -> Result<Machine, String> {
    let spec = s.trim().to_string();
    let help = "PxGxC (packages x L3 groups x cores, e.g. 2x2x4), PxC, C, or uneven groups \
                such as 3+2/4";
    let num = |x: &str| -> Result<usize, String> {
        match x.trim().parse::<usize>() {
            Ok(0) => Err(format!(
                "machine `{spec}`: every count must be at least 1 ({help})"
            )),
            Ok(n) => Ok(n),
            Err(_) => Err(format!(
                "machine `{spec}`: `{}` is not a count ({help})",
                x.trim()
            )),
        }
    };
    let groups: Vec<Vec<usize>> = if spec.contains(['+', '/']) {
        spec.split('/')
            .map(|pkg| pkg.split('+').map(num).collect::<Result<Vec<_>, _>>())
            .collect::<Result<_, _>>()?
    } else {
        let dims = spec
            .split(['x', 'X'])
            .map(num)
            .collect::<Result<Vec<_>, _>>()?;
        let (p, g, c) = match dims[..] {
            [c] => (1, 1, c),
            [p, c] => (p, 1, c),
            [p, g, c] => (p, g, c),
            _ => return Err(format!("machine `{spec}`: at most three levels ({help})")),
        };
        if p.saturating_mul(g).saturating_mul(c) > MACHINE_MAX_CORES {
            return Err(format!(
                "machine `{spec}`: more than {MACHINE_MAX_CORES} cores"
            ));
        }
        vec![vec![c; g]; p]
    };
    let m = Machine { spec, groups };
    if m.groups
        .iter()
        .flatten()
        .fold(0usize, |a, &c| a.saturating_add(c))
        > MACHINE_MAX_CORES
    {
        return Err(format!(
            "machine `{}`: more than {MACHINE_MAX_CORES} cores",
            m.spec
        ));
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placements_parse() {
        assert_eq!(parse_placement("compact"), Ok(Placement::Compact));
        assert_eq!(parse_placement("spread"), Ok(Placement::Spread));
        assert_eq!(parse_placement("none"), Ok(Placement::Unpinned));
        assert_eq!(parse_placement("socket:1"), Ok(Placement::Socket(1)));
        assert_eq!(
            parse_placement("cores:0,2-4,7"),
            Ok(Placement::Cores(vec![0, 2, 3, 4, 7]))
        );
        assert!(parse_placement("socket:x").is_err());
        assert!(parse_placement("cores:").is_err());
        assert!(parse_placement("cores:3-1").is_err());
        assert!(parse_placement("cores:a").is_err());
        assert!(parse_placement("sideways").is_err());
        for s in ["compact", "spread", "none", "socket:3", "cores:1,5"] {
            assert_eq!(parse_placement(s).unwrap().to_string(), s);
        }
    }

    #[test]
    fn machines_parse() {
        let m = parse_machine("2x2x4").unwrap();
        assert_eq!(m.groups, vec![vec![4, 4], vec![4, 4]]);
        assert_eq!((m.cores(), m.spec.as_str()), (16, "2x2x4"));
        assert_eq!(parse_machine("2x3").unwrap().groups, vec![vec![3], vec![3]]);
        assert_eq!(parse_machine(" 4 ").unwrap().groups, vec![vec![4]]);
        assert_eq!(
            parse_machine("3+2/4").unwrap().groups,
            vec![vec![3, 2], vec![4]]
        );
        assert_eq!(
            parse_machine("2x2x4").unwrap().describe(),
            "2x2x4 (synthetic: 2 packages, 4 L3 groups, 16 cores)"
        );
        for bad in [
            "",
            "2x0",
            "2x2x2x2",
            "x",
            "3+/4",
            "2y2",
            "-1",
            "0",
            "1+0",
            "99999x99999",
        ] {
            let e = parse_machine(bad).unwrap_err();
            assert!(e.starts_with("machine `"), "{bad}: {e}");
        }
        let t = parse_machine("3+2/4").unwrap().topology().unwrap();
        assert_eq!(
            (t.num_packages(), t.num_l3_groups(), t.num_cores()),
            (2, 3, 9)
        );
    }
}
