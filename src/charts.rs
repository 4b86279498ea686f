//! `kernelgate plot`: PNG and SVG charts of a results file with `plotters`.
//!
//! Per GPU and family: latency by backend across problems (log scale), throughput by backend
//! (TFLOP/s, or GB/s with the measured copy roofline drawn in), speedup vs the baseline backend
//! (bars, 1× line = the baseline; see [`crate::speedup`]), and for attention families (`mha`,
//! `nsa`) latency against the sequence length. When the file spans several GPUs, one chart per
//! family puts every GPU's throughput (or latency) side by side.
//!
//! Text is rendered with the bundled DejaVu Sans through `ab_glyph` (plotters' `ttf` feature
//! is off), so PNGs need no system fonts, fontconfig or freetype; SVGs name `sans-serif` and
//! leave the font to the viewer.

use crate::error::{Error, Result};
use crate::results::ResultsFile;
use crate::speedup::{self, FamilyTable, Metric};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::FontTransform;
use std::path::{Path, PathBuf};

/// Families whose records get a sequence-length chart.
pub const ATTENTION_FAMILIES: [&str; 2] = ["mha", "nsa"];
/// Dimension names taken as the sequence length, in order of preference.
pub const SEQ_DIMS: [&str; 6] = ["s", "seq", "seqlen", "sq", "skv", "t"];

/// Size of rotated x labels, px.
const LABEL_PX: u32 = 13;

static FONT: &[u8] = include_bytes!("../assets/fonts/DejaVuSans.ttf");

fn register_font() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        for style in [FontStyle::Normal, FontStyle::Bold] {
            // The bundled font is a valid TrueType file; a failure here is a build defect.
            if plotters::style::register_font("sans-serif", style, FONT).is_err() {
                panic!("bundled font assets/fonts/DejaVuSans.ttf does not parse");
            }
        }
    });
}

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// PNG bitmap.
    Png,
    /// SVG vector.
    Svg,
}

impl Format {
    fn ext(self) -> &'static str {
        match self {
            Format::Png => "png",
            Format::Svg => "svg",
        }
    }
}

const COLORS: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

#[derive(Debug, Clone, Copy)]
enum Style {
    Line,
    /// Bars at x + offset, of the given width (x units).
    Bar {
        offset: f64,
        width: f64,
    },
}

#[derive(Debug, Clone)]
struct Series {
    name: String,
    color: usize,
    style: Style,
    points: Vec<(f64, f64)>,
}

#[derive(Debug, Clone)]
struct Chart {
    title: String,
    x_desc: String,
    y_desc: String,
    x_ticks: Vec<(f64, String)>,
    x_range: (f64, f64),
    rotate_x: bool,
    log_y: bool,
    series: Vec<Series>,
    hlines: Vec<(f64, String)>,
}

/// Ticks for a linear axis over [lo, hi]: steps of 1, 2 or 5 × 10^k, about 8 of them.
fn linear_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let span = (hi - lo).max(1e-12);
    let raw = span / 8.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let mut t = (lo / step).ceil() * step;
    let mut out = Vec::new();
    while t <= hi + step * 1e-9 {
        out.push(t);
        t += step;
    }
    out
}

/// Ticks (in log10 units) for a log axis over [lo, hi] (log10 units): 1-2-5 per decade when
/// the range is short, decades otherwise.
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let mults: &[f64] = if hi - lo <= 3.0 {
        &[1.0, 2.0, 5.0]
    } else {
        &[1.0]
    };
    let mut out = Vec::new();
    for d in (lo.floor() as i32)..=(hi.ceil() as i32) {
        for m in mults {
            let v = (m * 10f64.powi(d)).log10();
            if v >= lo - 1e-9 && v <= hi + 1e-9 {
                out.push(v);
            }
        }
    }
    out
}

fn fmt_num(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 10.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else if a >= 0.01 {
        format!("{v:.2}")
    } else {
        format!("{v:.0e}")
    }
}

/// A linear f64 axis with exactly the given tick positions (the caller formats them).
#[derive(Debug, Clone)]
struct Axis {
    lo: f64,
    hi: f64,
    ticks: Vec<f64>,
}

impl plotters::coord::ranged1d::Ranged for Axis {
    type FormatOption = plotters::coord::ranged1d::DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let f = (value - self.lo) / (self.hi - self.lo);
        limit.0 + (f * (limit.1 - limit.0) as f64).round() as i32
    }

    fn key_points<Hint: plotters::coord::ranged1d::KeyPointHint>(&self, _hint: Hint) -> Vec<f64> {
        self.ticks.clone()
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

fn draw<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, c: &Chart) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let ty = |y: f64| if c.log_y { y.log10() } else { y };
    let mut ys: Vec<f64> = c
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .chain(c.hlines.iter().map(|h| h.0))
        .filter(|y| y.is_finite() && (!c.log_y || *y > 0.0))
        .collect();
    if ys.is_empty() {
        ys.push(1.0);
    }
    let (ymin, ymax) = ys
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), y| {
            (a.min(*y), b.max(*y))
        });
    let has_bars = c
        .series
        .iter()
        .any(|s| matches!(s.style, Style::Bar { .. }));
    let (lo, hi) = if c.log_y {
        let (a, b) = (ymin.log10(), ymax.log10());
        let pad = ((b - a) * 0.08).max(0.1);
        (a - pad, b + pad)
    } else {
        let lo = if has_bars || ymin >= 0.0 { 0.0 } else { ymin };
        (lo, ymax * 1.12 + 1e-12)
    };
    let yt = if c.log_y {
        log_ticks(lo, hi)
    } else {
        linear_ticks(lo, hi)
    };
    let xt: Vec<f64> = c.x_ticks.iter().map(|t| t.0).collect();
    let labels = c.x_ticks.clone();
    let xfmt = move |x: &f64| {
        labels
            .iter()
            .find(|(p, _)| (p - x).abs() < 1e-6)
            .map(|(_, l)| l.clone())
            .unwrap_or_default()
    };
    let log_y = c.log_y;
    let step = if yt.len() > 1 { yt[1] - yt[0] } else { 1.0 };
    let decimals = (-step.log10().floor()).max(0.0) as usize;
    let yfmt = move |y: &f64| {
        if log_y {
            fmt_num(10f64.powf(*y))
        } else {
            format!("{y:.decimals$}")
        }
    };
    let longest = c.x_ticks.iter().map(|t| t.1.len()).max().unwrap_or(4);
    let x_area = if c.rotate_x {
        (longest as u32 * LABEL_PX * 6 / 10 + 50).clamp(60, 300)
    } else {
        60
    };
    let mut chart = ChartBuilder::on(&root)
        .caption(&c.title, ("sans-serif", 24))
        .margin(16)
        .x_label_area_size(x_area)
        .y_label_area_size(80)
        .build_cartesian_2d(
            Axis {
                lo: c.x_range.0,
                hi: c.x_range.1,
                ticks: xt,
            },
            Axis { lo, hi, ticks: yt },
        )
        .map_err(|e| e.to_string())?;
    // Rotated labels are drawn by hand below: plotters centres a label on its tick before
    // rotating it, which puts rotated labels across the plot.
    let blank = |_: &f64| String::new();
    let rotate = c.rotate_x;
    chart
        .configure_mesh()
        .x_desc(&c.x_desc)
        .y_desc(&c.y_desc)
        .x_label_formatter(if rotate { &blank } else { &xfmt })
        .y_label_formatter(&yfmt)
        .x_label_style(("sans-serif", 14))
        .y_label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 16))
        .light_line_style(WHITE.mix(0.0))
        .bold_line_style(BLACK.mix(0.12))
        .draw()
        .map_err(|e| e.to_string())?;
    if rotate {
        let font = ("sans-serif", LABEL_PX)
            .into_font()
            .transform(FontTransform::Rotate90);
        for (x, label) in &c.x_ticks {
            let (px, py) = chart.backend_coord(&(*x, lo));
            root.draw(&Text::new(
                label.clone(),
                (px + LABEL_PX as i32 / 2, py + 8),
                font.clone(),
            ))
            .map_err(|e| e.to_string())?;
        }
    }
    for (y, label) in &c.hlines {
        let y = ty(*y);
        let style = ShapeStyle::from(BLACK.mix(0.6)).stroke_width(2);
        chart
            .draw_series(DashedLineSeries::new(
                vec![(c.x_range.0, y), (c.x_range.1, y)],
                8,
                6,
                style,
            ))
            .map_err(|e| e.to_string())?
            .label(label.clone())
            .legend(move |(x, yy)| PathElement::new(vec![(x, yy), (x + 20, yy)], style));
    }
    for s in &c.series {
        let color = COLORS[s.color % COLORS.len()];
        let pts: Vec<(f64, f64)> = s
            .points
            .iter()
            .filter(|p| p.1.is_finite() && (!c.log_y || p.1 > 0.0))
            .map(|p| (p.0, ty(p.1)))
            .collect();
        match s.style {
            Style::Line => {
                chart
                    .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                    .map_err(|e| e.to_string())?
                    .label(s.name.clone())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(3))
                    });
                chart
                    .draw_series(pts.iter().map(|p| Circle::new(*p, 4, color.filled())))
                    .map_err(|e| e.to_string())?;
            }
            Style::Bar { offset, width } => {
                let base = if c.log_y { lo } else { 0.0 };
                chart
                    .draw_series(pts.iter().map(|p| {
                        Rectangle::new(
                            [
                                (p.0 + offset - width / 2.0, base),
                                (p.0 + offset + width / 2.0, p.1),
                            ],
                            color.filled(),
                        )
                    }))
                    .map_err(|e| e.to_string())?
                    .label(s.name.clone())
                    .legend(move |(x, y)| {
                        Rectangle::new([(x, y - 6), (x + 16, y + 6)], color.filled())
                    });
            }
        }
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .label_font(("sans-serif", 15))
        .draw()
        .map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())?;
    Ok(())
}

fn render(c: &Chart, path: &Path, fmt: Format) -> Result<()> {
    let (w, h) = (1280u32, 760u32);
    let res = match fmt {
        Format::Png => draw(BitMapBackend::new(path, (w, h)).into_drawing_area(), c),
        Format::Svg => draw(SVGBackend::new(path, (w, h)).into_drawing_area(), c),
    };
    res.map_err(|e| Error::Results {
        path: path.to_path_buf(),
        message: format!("drawing chart: {e}"),
    })
}

fn categorical(rows: usize) -> (Vec<f64>, (f64, f64)) {
    (
        (0..rows).map(|i| i as f64).collect(),
        (-0.6, rows as f64 - 0.4),
    )
}

fn backend_color(all: &[String], b: &str) -> usize {
    all.iter().position(|x| x == b).unwrap_or(0)
}

fn family_charts(t: &FamilyTable, backends_all: &[String]) -> Vec<(String, Chart)> {
    let mut out = Vec::new();
    let (xs, xr) = categorical(t.rows.len());
    let ticks: Vec<(f64, String)> = xs
        .iter()
        .zip(&t.rows)
        .map(|(x, r)| (*x, r.problem.clone()))
        .collect();
    let base = |title: String, y_desc: &str, log_y: bool| Chart {
        title,
        x_desc: "problem (dims_dtype)".into(),
        y_desc: y_desc.into(),
        x_ticks: ticks.clone(),
        x_range: xr,
        rotate_x: true,
        log_y,
        series: vec![],
        hlines: vec![],
    };
    // Latency.
    let mut c = base(
        format!("{} on {}: median latency by backend", t.family, t.gpu),
        "median latency (ms, log scale)",
        true,
    );
    // One line per backend over the problems, with the value `y` gives for (row, backend).
    let lines = |y: &dyn Fn(&crate::speedup::Row, &str) -> Option<f64>| -> Vec<Series> {
        t.backends
            .iter()
            .map(|b| Series {
                name: b.clone(),
                color: backend_color(backends_all, b),
                style: Style::Line,
                points: xs
                    .iter()
                    .zip(&t.rows)
                    .filter_map(|(x, r)| Some((*x, y(r, b)?)))
                    .collect(),
            })
            .collect()
    };
    c.series = lines(&|r, b| r.median(b));
    out.push(("latency".to_string(), c));
    // Throughput.
    if t.metric != Metric::Latency {
        let mut c = base(
            format!("{} on {}: throughput by backend", t.family, t.gpu),
            &format!("achieved {} at the median", t.metric.unit()),
            false,
        );
        c.series = lines(&|r, b| t.metric.value(r.cells.get(b)?));
        if t.metric == Metric::Gbps {
            let roof: Vec<f64> = t
                .rows
                .iter()
                .flat_map(|r| r.cells.values().filter_map(|r| r.roofline_gbps))
                .collect();
            if let Some(m) = roof.iter().cloned().reduce(f64::max) {
                c.hlines
                    .push((m, format!("measured copy bandwidth {m:.0} GB/s")));
            }
        }
        out.push(("throughput".to_string(), c));
    }
    // Speedup.
    if let Some(baseline) = &t.baseline {
        let cont = t.contenders();
        if !cont.is_empty() {
            let mut c = base(
                format!("{} on {}: speedup vs {baseline}", t.family, t.gpu),
                &format!("speedup = {baseline} median / backend median"),
                false,
            );
            let width = 0.8 / cont.len() as f64;
            for (i, b) in cont.iter().enumerate() {
                c.series.push(Series {
                    name: format!("{b} vs {baseline}"),
                    color: backend_color(backends_all, b),
                    style: Style::Bar {
                        offset: (i as f64 - (cont.len() as f64 - 1.0) / 2.0) * width,
                        width: width * 0.9,
                    },
                    points: xs
                        .iter()
                        .zip(&t.rows)
                        .filter_map(|(x, r)| Some((*x, r.speedup(b, baseline)?)))
                        .collect(),
                });
            }
            c.hlines.push((1.0, format!("{baseline} (1×)")));
            out.push(("speedup".to_string(), c));
        }
    }
    // Sequence-length scaling.
    if ATTENTION_FAMILIES.contains(&t.family.as_str()) {
        if let Some(c) = seqlen_chart(t, backends_all) {
            out.push(("seqlen".to_string(), c));
        }
    }
    out
}

fn seqlen_chart(t: &FamilyTable, backends_all: &[String]) -> Option<Chart> {
    let dim = SEQ_DIMS
        .iter()
        .find(|d| t.rows.iter().any(|r| r.dim(d).is_some()))?;
    // One series per backend × the other dimensions and dtype.
    let mut series: std::collections::BTreeMap<(String, String), Vec<(f64, f64)>> =
        Default::default();
    let mut seqs: Vec<u64> = Vec::new();
    for r in &t.rows {
        let Some(s) = r.dim(dim) else { continue };
        let rest: Vec<String> = r
            .dims
            .iter()
            .filter(|(k, _)| k != dim)
            .map(|(k, v)| format!("{k}{v}"))
            .chain([r.dtype.clone()])
            .collect();
        for b in &t.backends {
            if let Some(ms) = r.median(b) {
                series
                    .entry((b.clone(), rest.join(" ")))
                    .or_default()
                    .push(((s as f64).log2(), ms));
                seqs.push(s);
            }
        }
    }
    seqs.sort();
    seqs.dedup();
    if seqs.len() < 2 {
        return None;
    }
    let lo = (seqs[0] as f64).log2();
    let hi = (*seqs.last().expect("non-empty") as f64).log2();
    let pad = ((hi - lo) * 0.05).max(0.2);
    let mut c = Chart {
        title: format!(
            "{} on {}: latency vs sequence length ({dim})",
            t.family, t.gpu
        ),
        x_desc: format!("sequence length {dim} (log2 scale)"),
        y_desc: "median latency (ms, log scale)".into(),
        x_ticks: seqs
            .iter()
            .map(|s| ((*s as f64).log2(), s.to_string()))
            .collect(),
        x_range: (lo - pad, hi + pad),
        rotate_x: false,
        log_y: true,
        series: vec![],
        hlines: vec![],
    };
    for ((b, rest), mut pts) in series {
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        c.series.push(Series {
            name: format!("{b} {rest}"),
            color: backend_color(backends_all, &b) + c.series.len(),
            style: Style::Line,
            points: pts,
        });
    }
    Some(c)
}

fn cross_gpu_chart(file: &ResultsFile, family: &str, baseline: &str) -> Option<Chart> {
    let order = crate::tables::gpu_order(file);
    let mut tables: Vec<FamilyTable> = speedup::tables(&file.results, baseline)
        .into_iter()
        .filter(|t| t.family == family)
        .collect();
    tables.sort_by_key(|t| order.iter().position(|g| *g == t.gpu));
    if tables.len() < 2 {
        return None;
    }
    let metric = if tables.iter().all(|t| t.metric == tables[0].metric) {
        tables[0].metric
    } else {
        Metric::Latency
    };
    let mut problems: Vec<(String, String, Vec<u64>)> = tables
        .iter()
        .flat_map(|t| {
            t.rows.iter().map(|r| {
                (
                    r.problem.clone(),
                    r.dtype.clone(),
                    r.dims.iter().map(|d| d.1).collect(),
                )
            })
        })
        .collect();
    problems.sort_by(|a, b| (&a.1, &a.2).cmp(&(&b.1, &b.2)));
    problems.dedup();
    let (xs, xr) = categorical(problems.len());
    let y_desc = match metric {
        Metric::Latency => "median latency (ms, log scale)".to_string(),
        m => format!("achieved {} at the median", m.unit()),
    };
    let mut c = Chart {
        title: format!("{family} across GPUs"),
        x_desc: "problem (dims_dtype)".into(),
        y_desc,
        x_ticks: xs
            .iter()
            .zip(&problems)
            .map(|(x, p)| (*x, p.0.clone()))
            .collect(),
        x_range: xr,
        rotate_x: true,
        log_y: metric == Metric::Latency,
        series: vec![],
        hlines: vec![],
    };
    for t in &tables {
        for b in &t.backends {
            let points = xs
                .iter()
                .zip(&problems)
                .filter_map(|(x, p)| {
                    let row = t.rows.iter().find(|r| r.problem == p.0)?;
                    Some((*x, metric.value(row.cells.get(b)?)?))
                })
                .collect();
            c.series.push(Series {
                name: format!("{} {b}", t.gpu),
                color: c.series.len(),
                style: Style::Line,
                points,
            });
        }
    }
    Some(c)
}

/// Draws every chart of `file` into `dir` in each of `formats`; returns the files written.
pub fn plot(
    file: &ResultsFile,
    dir: &Path,
    baseline: &str,
    formats: &[Format],
) -> Result<Vec<PathBuf>> {
    register_font();
    std::fs::create_dir_all(dir).map_err(|e| Error::io("creating", dir, e))?;
    let tables = speedup::tables(&file.results, baseline);
    let mut backends_all: Vec<String> = file.results.iter().map(|r| r.backend.clone()).collect();
    backends_all.sort();
    backends_all.dedup();
    let mut written = Vec::new();
    let mut emit = |stem: String, c: &Chart| -> Result<()> {
        for f in formats {
            let p = dir.join(format!("{stem}.{}", f.ext()));
            render(c, &p, *f)?;
            written.push(p);
        }
        Ok(())
    };
    for t in &tables {
        let slug = crate::baseline::gpu_slug(&t.gpu);
        for (kind, c) in family_charts(t, &backends_all) {
            emit(format!("{slug}-{}-{kind}", t.family), &c)?;
        }
    }
    if speedup::gpus(&file.results).len() > 1 {
        let mut fams: Vec<&str> = tables.iter().map(|t| t.family.as_str()).collect();
        fams.sort();
        fams.dedup();
        for fam in fams {
            if let Some(c) = cross_gpu_chart(file, fam, baseline) {
                emit(format!("cross-gpu-{fam}"), &c)?;
            }
        }
    }
    Ok(written)
}
