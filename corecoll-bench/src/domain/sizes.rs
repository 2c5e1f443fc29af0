//! Message sizes: the list of `--sizes` (and `--blocks`), and bytes written as B, KiB, MiB or
//! GiB. One size is parsed by the library's own parser, the spelling of sizes in its algorithm
//! rules.

/// Parses one size: the library's spelling of sizes in algorithm rules (`8`, `1KiB`, `4k`,
/// `64MiB`).
pub use corecoll::unstable::parse_size;

/// Message sizes in bytes per rank, ascending, without duplicates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sizes(pub Vec<usize>);

/// Parses `--sizes`: `LO..HI` (LO, 4·LO, 16·LO, … up to HI, and HI itself) or a comma list.
pub fn parse_sizes(s: &str) -> Result<Sizes, String> {
    let mut out = if let Some((lo, hi)) = s.split_once("..") {
        let (lo, hi) = (parse_size(lo)?, parse_size(hi)?);
        if lo > hi {
            return Err(format!("`{s}`: the range is empty ({lo} > {hi})"));
        }
        let mut v = Vec::new();
        let mut x = lo;
        while x < hi {
            v.push(x);
            // 0 stays 0; go on from 1.
            x = if x == 0 { 1 } else { x.saturating_mul(4) };
        }
        v.push(hi);
        v
    } else {
        s.split(',')
            .filter(|x| !x.trim().is_empty())
            .map(parse_size)
            .collect::<Result<Vec<_>, _>>()?
    };
    if out.is_empty() {
        return Err("no size given".into());
    }
    out.sort_unstable();
    out.dedup();
    Ok(Sizes(out))
}

/// A byte count as B, KiB, MiB or GiB (the largest unit that divides it).
pub fn fmt_bytes(b: usize) -> String {
    match b {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_units() {
        assert_eq!(parse_size("8"), Ok(8));
        assert_eq!(parse_size("8B"), Ok(8));
        assert_eq!(parse_size("1KiB"), Ok(1024));
        assert_eq!(parse_size("4k"), Ok(4096));
        assert_eq!(parse_size("64MiB"), Ok(64 << 20));
        assert_eq!(parse_size(" 2 M "), Ok(2 << 20));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert!(parse_size("").is_err());
        assert!(parse_size("KiB").is_err());
        assert!(parse_size("3 parsecs").is_err());
        assert!(parse_size("-1").is_err());
    }

    #[test]
    fn ranges_are_powers_of_four_with_the_end() {
        let s = parse_sizes("8..64MiB").unwrap().0;
        assert_eq!(s.first(), Some(&8));
        assert_eq!(s.last(), Some(&(64 << 20)));
        assert_eq!(s.len(), 13); // 8·4^0 … 8·4^11 = 32 MiB, then 64 MiB
        assert!(s.windows(2).take(11).all(|w| w[1] == 4 * w[0]));
        assert_eq!(parse_sizes("1KiB..1KiB").unwrap().0, vec![1024]);
        assert_eq!(parse_sizes("0..16").unwrap().0, vec![0, 1, 4, 16]);
        assert!(parse_sizes("1MiB..1KiB").is_err());
    }

    #[test]
    fn lists_sort_and_dedup() {
        assert_eq!(
            parse_sizes("1MiB,8,8,1K").unwrap().0,
            vec![8, 1024, 1 << 20]
        );
        assert!(parse_sizes(",").is_err());
        assert!(parse_sizes("8,x").is_err());
    }

    #[test]
    fn byte_counts_in_whole_units() {
        assert_eq!(fmt_bytes(0), "0 B");
        assert_eq!(fmt_bytes(3 << 20), "3 MiB");
        assert_eq!(fmt_bytes(2 << 30), "2 GiB");
        assert_eq!(fmt_bytes(1536), "1536 B");
    }
}
