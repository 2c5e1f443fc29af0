//! The SVG plot of one collective's sweep (plotters, SVG backend, no font library).
//!
//! Two panels stacked in one 1200 × 900 picture, with the legend in a column of its own to the
//! right so that it never covers data: the median time per call (µs) against bytes per rank,
//! log–log, and the bus bandwidth (GB/s) against bytes per rank, log x. One line with point
//! markers per series; a series is one (source, algorithm, scope, placement, ranks, cache,
//! dtype, op), labelled by its algorithm plus just those qualifiers that tell series apart
//! (`direct`, or `direct (socket 0)` under `--per-socket`). corecoll's algorithms are solid
//! with round markers; the `limit` is a dashed grey-to-black line with crosses; the other
//! baselines are dashed with triangles; MPI's collectives are thick and dotted with squares.
//! A cell whose check failed keeps its point, overlaid with a red cross; a cell without a
//! finite positive value (it failed to run, or its size is 0 on a log axis) is left out and
//! breaks its line.
//!
//! When no record has a positive size (the barrier), the picture is one panel of horizontal
//! bars, the median time of each series on a log axis. With nothing measured at all it is a
//! page saying so, not an error. PNG is not written: plotters' bitmap backend draws text only
//! with a font library or a font file embedded in the binary; `rsvg-convert` turns the SVG
//! into a PNG when one is wanted.

mod series;
#[cfg(test)]
mod tests;

use crate::domain::fmt_bytes;
use crate::record::Record;
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use series::{series_of, Kind, Point, Series};
use std::path::Path;

/// Width of the picture, pixels.
const WIDTH: u32 = 1200;
/// Height of the picture, pixels.
const HEIGHT: u32 = 900;
/// The font family of every text (the SVG viewer's sans-serif).
const FONT: &str = "sans-serif";
/// Rough width of one character of the legend and bar labels, pixels (to size their columns).
const CHAR_PX: u32 = 8;

/// Plots `records` (one collective) into `path`. The error names the path.
pub fn plot_svg(path: &Path, title: &str, records: &[Record]) -> Result<(), String> {
    let svg = render(title, records).map_err(|e| format!("plot {}: {e}", path.display()))?;
    std::fs::write(path, svg).map_err(|e| format!("{}: {e}", path.display()))
}

/// The SVG text of the plot of `records` under `title`.
fn render(title: &str, records: &[Record]) -> Result<String, String> {
    let series = series_of(records);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let body = root.titled(title, (FONT, 30)).map_err(err)?;
        let sized = series
            .iter()
            .any(|s| s.points.iter().any(|p| p.bytes > 0 && ok(p.time_us)));
        let timed = series
            .iter()
            .any(|s| s.points.iter().any(|p| ok(p.time_us)));
        if !timed {
            let what = if records.is_empty() {
                "no records".to_string()
            } else {
                format!("{} records, none with a measured time", records.len())
            };
            nothing(&body, &format!("nothing to plot: {what}"))?;
        } else if sized {
            panels(&body, &series)?;
        } else {
            bars(&body, &series)?;
        }
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// A drawing error as text.
fn err<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

/// A value that can go on a log axis: finite and positive.
fn ok(v: f64) -> bool {
    v.is_finite() && v > 0.0
}

/// Evaluates `$body` with `$make` bound to a function from a position to the point marker of
/// a series of kind `$kind` and colour `$color` there. A macro rather than a function because
/// each kind's marker is an element of another type.
macro_rules! with_marker {
    ($kind:expr, $color:expr, |$make:ident| $body:expr) => {{
        let color: RGBColor = $color;
        match $kind {
            Kind::Corecoll => {
                let $make = |at| Circle::new(at, 3, color.filled());
                $body
            }
            Kind::Limit => {
                let $make = |at| Cross::new(at, 4, color.stroke_width(2));
                $body
            }
            Kind::Baseline => {
                let $make = |at| TriangleMarker::new(at, 5, color.filled());
                $body
            }
            Kind::Peer => {
                let $make =
                    |at| EmptyElement::at(at) + Rectangle::new([(-4, -4), (4, 4)], color.filled());
                $body
            }
        }
    }};
}

/// A page with `message` in its middle.
fn nothing<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, message: &str) -> Result<(), String> {
    let (w, h) = area.dim_in_pixel();
    let style = (FONT, 22)
        .into_text_style(area)
        .pos(Pos::new(HPos::Center, VPos::Center));
    area.draw_text(message, &style, (w as i32 / 2, h as i32 / 2))
        .map_err(err)
}

/// The two panels (time, and busbw when any series has one) and the legend column.
fn panels<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    series: &[Series],
) -> Result<(), String> {
    let longest = series
        .iter()
        .map(|s| s.label.chars().count())
        .max()
        .unwrap_or(0) as u32;
    let legend_w = (longest * CHAR_PX + 80).clamp(200, 420);
    let (plots, legend_area) = area.split_horizontally(WIDTH - legend_w);
    let all = || {
        series
            .iter()
            .flat_map(|s| s.points.iter())
            .filter(|p| p.bytes > 0)
    };
    let (b_lo, b_hi) = span(all().map(|p| p.bytes as f64));
    let (t_lo, t_hi) = span(all().map(|p| p.time_us).filter(|&v| ok(v)));
    let bw_hi = all()
        .map(|p| p.busbw)
        .filter(|&v| ok(v))
        .fold(0.0, f64::max);
    let (x_lo, x_hi) = (b_lo / 1.5, b_hi * 1.5);
    let (x_bold, x_light) = byte_ticks(x_lo, x_hi, b_lo);
    let x_spec = || {
        (x_lo..x_hi)
            .log_scale()
            .with_key_points(x_bold.clone())
            .with_light_points(x_light.clone())
    };
    let (time_area, bw_area) = if bw_hi > 0.0 {
        let (top, bottom) = plots.split_vertically(plots.dim_in_pixel().1 / 2);
        (top, Some(bottom))
    } else {
        (plots, None)
    };

    let (y_lo, y_hi) = (t_lo / 1.6, t_hi * 1.6);
    let (y_bold, y_light) = decade_ticks(y_lo, y_hi);
    let mut chart = ChartBuilder::on(&time_area)
        .caption("median time per call", (FONT, 21))
        .margin(12)
        .x_label_area_size(48)
        .y_label_area_size(72)
        .build_cartesian_2d(
            x_spec(),
            (y_lo..y_hi)
                .log_scale()
                .with_key_points(y_bold)
                .with_light_points(y_light),
        )
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("bytes per rank")
        .y_desc("time per call (µs)")
        .x_label_formatter(&|v| fmt_bytes(v.round() as usize))
        .y_label_formatter(&|v| fmt_num(*v))
        .label_style((FONT, 16))
        .axis_desc_style((FONT, 18))
        .bold_line_style(BLACK.mix(0.18))
        .light_line_style(BLACK.mix(0.06))
        .draw()
        .map_err(err)?;
    for s in series {
        draw_series(&mut chart, s, |p| p.time_us)?;
    }

    if let Some(bw_area) = bw_area {
        let mut chart = ChartBuilder::on(&bw_area)
            .caption("bus bandwidth", (FONT, 21))
            .margin(12)
            .x_label_area_size(48)
            .y_label_area_size(72)
            .build_cartesian_2d(x_spec(), 0.0..bw_hi * 1.1)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("bytes per rank")
            .y_desc("busbw (GB/s)")
            .x_label_formatter(&|v| fmt_bytes(v.round() as usize))
            .y_label_formatter(&|v| fmt_num(*v))
            .y_labels(8)
            .y_max_light_lines(1)
            .label_style((FONT, 16))
            .axis_desc_style((FONT, 18))
            .bold_line_style(BLACK.mix(0.18))
            .light_line_style(BLACK.mix(0.06))
            .draw()
            .map_err(err)?;
        for s in series {
            draw_series(&mut chart, s, |p| p.busbw)?;
        }
    }
    legend(&legend_area, series)
}

/// The smallest and largest of `values` (1, 1 when there are none).
fn span(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    if lo.is_finite() {
        (lo, hi)
    } else {
        (1.0, 1.0)
    }
}

/// Draws `s` on `chart` at y = `value` of each cell of positive size: lines through runs of
/// cells with a finite positive value, a marker on each, a red cross on each failed check.
fn draw_series<DB: DrawingBackend, CT: CoordTranslate<From = (f64, f64)>>(
    chart: &mut ChartContext<'_, DB, CT>,
    s: &Series,
    value: fn(&Point) -> f64,
) -> Result<(), String> {
    let cells: Vec<Option<(f64, f64)>> = (s.points.iter().filter(|p| p.bytes > 0))
        .map(|p| Some((p.bytes as f64, value(p))).filter(|&(_, v)| ok(v)))
        .collect();
    let runs: Vec<Vec<(f64, f64)>> = cells
        .split(Option::is_none)
        .map(|run| run.iter().flatten().copied().collect())
        .collect();
    let style = s.color.stroke_width(s.kind.width());
    for run in runs.iter().filter(|r| r.len() > 1) {
        match s.kind.dashes() {
            None => chart.draw_series(LineSeries::new(run.iter().copied(), style)),
            Some((dash, gap)) => {
                chart.draw_series(DashedLineSeries::new(run.iter().copied(), dash, gap, style))
            }
        }
        .map_err(err)?;
    }
    let points = runs.iter().flatten().copied();
    with_marker!(s.kind, s.color, |make| chart
        .draw_series(points.map(make))
        .map(drop))
    .map_err(err)?;
    let failed = s
        .points
        .iter()
        .filter(|p| p.failed && p.bytes > 0 && ok(value(p)));
    chart
        .draw_series(failed.map(|p| Cross::new((p.bytes as f64, value(p)), 7, RED.stroke_width(2))))
        .map_err(err)?;
    Ok(())
}

/// The legend column: a sample of each series' line and marker, then its label; a note on
/// the red cross when some check failed.
fn legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    series: &[Series],
) -> Result<(), String> {
    let failed = series
        .iter()
        .any(|s| s.points.iter().any(|p| p.failed && ok(p.time_us)));
    let rows = series.len() + usize::from(failed);
    let (_, h) = area.dim_in_pixel();
    let top = 60;
    let step = ((h as i32 - top - 20) / rows.max(1) as i32).clamp(8, 26);
    let text = (FONT, 17)
        .into_text_style(area)
        .pos(Pos::new(HPos::Left, VPos::Center));
    for (i, s) in series.iter().enumerate() {
        let y = top + step * i as i32;
        let style = s.color.stroke_width(s.kind.width());
        let line = [(8, y), (52, y)];
        match s.kind.dashes() {
            None => area.draw(&PathElement::new(line, style)),
            Some((dash, gap)) => area.draw(&DashedPathElement::new(line, dash, gap, style)),
        }
        .map_err(err)?;
        with_marker!(s.kind, s.color, |make| area.draw(&make((30, y)))).map_err(err)?;
        area.draw_text(&s.label, &text, (62, y)).map_err(err)?;
    }
    if failed {
        let y = top + step * series.len() as i32;
        area.draw(&Cross::new((30, y), 7, RED.stroke_width(2)))
            .map_err(err)?;
        area.draw_text("check failed", &text, (62, y))
            .map_err(err)?;
    }
    Ok(())
}

/// One panel of horizontal bars, for records that all have size 0 (the barrier): a bar per
/// series to its median time on a log axis, its label on the left, its value at its end.
fn bars<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    series: &[Series],
) -> Result<(), String> {
    let values: Vec<(&Series, Option<Point>)> = series
        .iter()
        .map(|s| (s, s.points.iter().find(|p| ok(p.time_us)).copied()))
        .collect();
    let (lo, hi) = span(values.iter().filter_map(|(_, p)| p.map(|p| p.time_us)));
    let (x_lo, x_hi) = (lo / 2.0, hi * 2.5);
    let (bold, light) = decade_ticks(x_lo, x_hi);
    let n = values.len();
    let longest = series
        .iter()
        .map(|s| s.label.chars().count())
        .max()
        .unwrap_or(0) as u32;
    let row = |i: usize| (n - 1 - i) as f64;
    let height = (160 + 56 * n as u32).min(area.dim_in_pixel().1);
    let (area, _) = area.split_vertically(height);
    let mut chart = ChartBuilder::on(&area)
        .caption("median time per call", (FONT, 21))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size((longest * CHAR_PX + 24).min(WIDTH / 3))
        .build_cartesian_2d(
            (x_lo..x_hi)
                .log_scale()
                .with_key_points(bold)
                .with_light_points(light),
            -0.6..n as f64 - 0.4,
        )
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("time per call (µs)")
        .x_label_formatter(&|v| fmt_num(*v))
        .y_labels(0)
        .disable_y_mesh()
        .label_style((FONT, 16))
        .axis_desc_style((FONT, 18))
        .bold_line_style(BLACK.mix(0.18))
        .light_line_style(BLACK.mix(0.06))
        .draw()
        .map_err(err)?;
    let name = (FONT, 17)
        .into_text_style(&area)
        .pos(Pos::new(HPos::Right, VPos::Center));
    let end = (FONT, 16)
        .into_text_style(&area)
        .pos(Pos::new(HPos::Left, VPos::Center));
    for (i, (s, p)) in values.iter().enumerate() {
        let y = row(i);
        chart
            .draw_series(
                [EmptyElement::at((x_lo, y)) + Text::new(s.label.clone(), (-10, 0), &name)],
            )
            .map_err(err)?;
        let Some(p) = p else {
            chart
                .draw_series([
                    EmptyElement::at((x_lo, y)) + Text::new("no time (failed)", (6, 0), &end)
                ])
                .map_err(err)?;
            continue;
        };
        let fill = match s.kind {
            Kind::Corecoll => s.color.mix(0.85).filled(),
            _ => s.color.mix(0.3).filled(),
        };
        let corners = [(x_lo, y - 0.3), (p.time_us, y + 0.3)];
        chart
            .draw_series([
                Rectangle::new(corners, fill),
                Rectangle::new(corners, s.color.stroke_width(s.kind.width())),
            ])
            .map_err(err)?;
        let note = if p.failed { " (check failed)" } else { "" };
        let value = format!("{} µs{note}", fmt_num(p.time_us));
        chart
            .draw_series([EmptyElement::at((p.time_us, y)) + Text::new(value, (6, 0), &end)])
            .map_err(err)?;
    }
    Ok(())
}

/// Ticks of a log axis over `lo..hi` (both positive) at powers of two, labelled as sizes:
/// every `step`-th power counted from `anchor`'s is a labelled line, `step` keeping the labels
/// to at most eleven; the powers between are light lines.
fn byte_ticks(lo: f64, hi: f64, anchor: f64) -> (Vec<f64>, Vec<f64>) {
    let (e0, e1) = (lo.log2().ceil() as i32, hi.log2().floor() as i32);
    let step = ((e1 - e0 + 11) / 11).max(1);
    let anchor = anchor.log2().round() as i32;
    let (mut bold, mut light) = (Vec::new(), Vec::new());
    for e in e0..=e1 {
        let x = 2f64.powi(e);
        if (e - anchor).rem_euclid(step) == 0 {
            bold.push(x);
        } else {
            light.push(x);
        }
    }
    (bold, light)
}

/// Ticks of a log axis over `lo..hi` (both positive) at decades: labelled lines at 1, 2 and 5
/// times a power of ten over at most 2.5 decades, at powers of ten over more, with light lines
/// at the other integer multiples; when fewer than two labels would fall in range, every
/// multiple is labelled.
fn decade_ticks(lo: f64, hi: f64) -> (Vec<f64>, Vec<f64>) {
    let (e0, e1) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    let labelled: &[u32] = if hi / lo <= 300.0 { &[1, 2, 5] } else { &[1] };
    let (mut bold, mut light) = (Vec::new(), Vec::new());
    for e in e0..=e1 {
        for m in 1..10 {
            let x = f64::from(m) * 10f64.powi(e);
            if x < lo || x > hi {
                continue;
            }
            if labelled.contains(&m) {
                bold.push(x);
            } else {
                light.push(x);
            }
        }
    }
    if bold.len() < 2 {
        bold.append(&mut light);
        bold.sort_by(f64::total_cmp);
    }
    (bold, light)
}

/// A tick value with three significant digits at most and no trailing zeros.
fn fmt_num(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let decimals = (2 - v.abs().log10().floor() as i32).max(0) as usize;
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}
