//! Text tables: a grid of cells under a header, written as fixed-width text or as a GitHub
//! markdown table, and the number formats of the printed results (times, significant digits,
//! relative errors, percentages).

use std::io::Write;

/// How a column's cells line up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Text: padded on the right.
    Left,
    /// Numbers: padded on the left.
    Right,
}

/// A table of text cells under a header; a `None` row is a blank line.
#[derive(Debug, Default)]
pub struct Grid {
    /// Column titles.
    header: Vec<String>,
    /// One per column.
    align: Vec<Align>,
    /// The rows, each as long as the header.
    pub rows: Vec<Option<Vec<String>>>,
}

impl Grid {
    /// A grid with the columns `cols` (title and alignment).
    pub fn new(cols: &[(&str, Align)]) -> Grid {
        Grid {
            header: cols.iter().map(|c| c.0.to_string()).collect(),
            align: cols.iter().map(|c| c.1).collect(),
            rows: Vec::new(),
        }
    }

    /// Writes the grid as fixed-width text, two spaces between columns, no trailing blanks.
    pub fn render(&self, w: &mut dyn Write) -> std::io::Result<()> {
        let mut width: Vec<usize> = self.header.iter().map(|h| h.chars().count()).collect();
        for row in self.rows.iter().flatten() {
            for (wd, cell) in width.iter_mut().zip(row) {
                *wd = (*wd).max(cell.chars().count());
            }
        }
        let line = |cells: &[String]| {
            let mut s = String::new();
            for (k, cell) in cells.iter().enumerate() {
                if k > 0 {
                    s.push_str("  ");
                }
                let wd = width[k];
                match self.align[k] {
                    Align::Left => s.push_str(&format!("{cell:<wd$}")),
                    Align::Right => s.push_str(&format!("{cell:>wd$}")),
                }
            }
            s.trim_end().to_string()
        };
        writeln!(w, "{}", line(&self.header))?;
        for row in &self.rows {
            match row {
                Some(cells) => writeln!(w, "{}", line(cells))?,
                None => writeln!(w)?,
            }
        }
        Ok(())
    }

    /// The grid as a GitHub markdown table (blank rows dropped).
    pub fn markdown(&self) -> String {
        let esc = |c: &String| c.replace('|', "\\|");
        let mut s = String::new();
        let row = |cells: Vec<String>| format!("| {} |\n", cells.join(" | "));
        s.push_str(&row(self.header.iter().map(esc).collect()));
        s.push_str(&row(self
            .align
            .iter()
            .map(|a| match a {
                Align::Left => ":---".to_string(),
                Align::Right => "---:".to_string(),
            })
            .collect()));
        for cells in self.rows.iter().flatten() {
            s.push_str(&row(cells.iter().map(esc).collect()));
        }
        s
    }
}

/// `x` rounded to `n` significant digits.
fn round_sig(x: f64, n: i32) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let f = 10f64.powi(n - 1 - x.abs().log10().floor() as i32);
    (x * f).round() / f
}

/// `x` with `n` significant digits in plain notation (`12.3`, `0.00412`, `12300`); `-` when it
/// is not a number.
pub fn fmt_sig(x: f64, n: i32) -> String {
    if !x.is_finite() {
        return "-".into();
    }
    if x == 0.0 {
        return "0".into();
    }
    let r = round_sig(x, n);
    let decimals = (n - 1 - r.abs().log10().floor() as i32).max(0) as usize;
    format!("{r:.decimals$}")
}

/// A time given in µs, with three significant digits in ns, µs, ms or s (`812 ns`,
/// `1.50 µs`, `12.3 ms`); `-` when it is not a number.
pub fn fmt_time(us: f64) -> String {
    if !us.is_finite() {
        return "-".into();
    }
    // Round first, so that 999.7 ns is shown as 1.00 µs and not as 1000 ns.
    let ns = round_sig(us * 1e3, 3);
    let (v, unit) = match ns.abs() {
        a if a < 1e3 => (ns, "ns"),
        a if a < 1e6 => (ns / 1e3, "µs"),
        a if a < 1e9 => (ns / 1e6, "ms"),
        _ => (ns / 1e9, "s"),
    };
    format!("{} {unit}", fmt_sig(v, 3))
}

/// A relative error as `3.1e-16`; `0` for none at all, `-` when there is no figure.
pub fn fmt_rel_err(e: Option<f64>) -> String {
    match e {
        None => "-".into(),
        Some(0.0) => "0".into(),
        Some(e) => format!("{e:.1e}"),
    }
}

/// A percentage of the limit, or `-`.
pub fn fmt_pct(p: Option<f64>) -> String {
    p.map_or_else(|| "-".into(), |p| fmt_sig(p, 3))
}

/// A grid under a heading: one group's table of the summary, the peers or the hierarchy's
/// overhead.
pub struct Titled {
    /// The group's heading.
    pub heading: String,
    /// Its rows.
    pub grid: Grid,
}

impl Titled {
    /// Prints `tables` as a section: a blank line, `title`, a blank line, then each table
    /// under its heading, followed by a blank line.
    pub fn print_all(w: &mut dyn Write, title: &str, tables: &[Titled]) -> std::io::Result<()> {
        writeln!(w)?;
        writeln!(w, "{title}")?;
        writeln!(w)?;
        for t in tables {
            writeln!(w, "{}", t.heading)?;
            t.grid.render(w)?;
            writeln!(w)?;
        }
        Ok(())
    }

    /// `tables` as GitHub markdown: each heading in bold above its table.
    pub fn markdown_all(tables: &[Titled]) -> String {
        tables
            .iter()
            .map(|t| format!("**{}**\n\n{}", t.heading, t.grid.markdown()))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_with_three_significant_digits() {
        assert_eq!(fmt_sig(12.345, 3), "12.3");
        assert_eq!(fmt_sig(0.004_123, 3), "0.00412");
        assert_eq!(fmt_sig(1.0, 3), "1.00");
        assert_eq!(fmt_sig(99.96, 3), "100");
        assert_eq!(fmt_sig(12_345.0, 3), "12300");
        assert_eq!(fmt_sig(0.0, 3), "0");
        assert_eq!(fmt_sig(f64::NAN, 3), "-");
        assert_eq!(fmt_time(0.8123), "812 ns");
        assert_eq!(fmt_time(0.9997), "1.00 µs");
        assert_eq!(fmt_time(1.5), "1.50 µs");
        assert_eq!(fmt_time(12_345.0), "12.3 ms");
        assert_eq!(fmt_time(2.5e6), "2.50 s");
        assert_eq!(fmt_time(f64::NAN), "-");
        assert_eq!(fmt_rel_err(Some(3.1e-16)), "3.1e-16");
        assert_eq!(fmt_rel_err(Some(0.0)), "0");
        assert_eq!(fmt_rel_err(None), "-");
        assert_eq!(fmt_pct(Some(87.345)), "87.3");
        assert_eq!(fmt_pct(None), "-");
    }
}
