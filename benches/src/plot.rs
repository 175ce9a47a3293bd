//! Line charts as SVG and PNG, for the layers report and the MPI comparison.
//!
//! [`draw`] turns a [`Chart`] (title, axis labels, log or linear scales, a few [`Series`])
//! into `<stem>.svg` and `<stem>.png` with the `plotters` crate. Text in the PNG is rendered
//! from the DejaVu Sans font shipped in `benches/data/fonts/` (compiled in), so charts come
//! out the same on a machine with no fonts and no fontconfig.
//!
//! Axis ticks are chosen here rather than by plotters: a log axis whose label names bytes or
//! a size gets power-of-two ticks written as "1 KiB", "1 MiB"; other log axes get decades
//! (with 2 and 5 between them when the range is short); linear axes get round steps. On a log
//! axis, points at or below zero (a 0-byte message) cannot be placed and are left out.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::prelude::*;

mod axis;
use axis::Axis;
pub use axis::{format_bytes, format_number};

/// One line of a chart.
#[derive(Clone, Debug)]
pub struct Series {
    pub label: String,
    /// (x, y) points, in increasing x.
    pub points: Vec<(f64, f64)>,
    /// Drawn dashed (used for reference data such as the papers' published figures).
    pub dashed: bool,
}

/// A chart: axes, scales and lines.
#[derive(Clone, Debug)]
pub struct Chart<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    pub log_x: bool,
    pub log_y: bool,
    pub series: &'a [Series],
}

/// Picture size in pixels (the SVG uses the same units).
const WIDTH: u32 = 960;
const HEIGHT: u32 = 600;

/// The font family name the shipped font is registered under.
const FONT: &str = "sans-serif";

/// Line colours, in series order: distinguishable, and readable on white.
const COLOURS: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
];

/// Draws `chart` into `<stem>.svg` and `<stem>.png`; returns both paths.
pub fn draw(chart: &Chart, stem: &Path) -> Result<[PathBuf; 2], String> {
    register_font()?;
    if let Some(dir) = stem.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let svg = with_extension(stem, "svg");
    let png = with_extension(stem, "png");
    {
        let area = SVGBackend::new(&svg, (WIDTH, HEIGHT)).into_drawing_area();
        render(&area, chart).map_err(|e| format!("drawing {}: {e}", svg.display()))?;
        area.present()
            .map_err(|e| format!("writing {}: {e}", svg.display()))?;
    }
    {
        let area = BitMapBackend::new(&png, (WIDTH, HEIGHT)).into_drawing_area();
        render(&area, chart).map_err(|e| format!("drawing {}: {e}", png.display()))?;
        area.present()
            .map_err(|e| format!("writing {}: {e}", png.display()))?;
    }
    Ok([svg, png])
}

/// `stem` with `.ext` appended (a stem such as `latency.native` keeps its dot).
fn with_extension(stem: &Path, ext: &str) -> PathBuf {
    let mut name = stem.as_os_str().to_owned();
    name.push(".");
    name.push(ext);
    PathBuf::from(name)
}

/// Makes the shipped font known to plotters (once per process).
fn register_font() -> Result<(), String> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| {
        let bytes: &'static [u8] = include_bytes!("../data/fonts/DejaVuSans.ttf");
        plotters::style::register_font(FONT, FontStyle::Normal, bytes).is_ok()
            && plotters::style::register_font(FONT, FontStyle::Bold, bytes).is_ok()
    });
    if ok {
        Ok(())
    } else {
        Err("benches/data/fonts/DejaVuSans.ttf is not a usable font: restore it from the repository".into())
    }
}

/// Whether a log x axis measures message sizes in bytes (then ticks are powers of two).
fn is_size_axis(label: &str) -> bool {
    let l = label.to_ascii_lowercase();
    l.contains("byte") || l.contains("size")
}

/// Draws the whole chart onto `area`.
fn render<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, chart: &Chart) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    area.fill(&WHITE).map_err(err)?;

    // Points that can be placed on the chosen scales, in the axes' own (transformed) units.
    let x_axis = Axis::new(
        chart.log_x,
        chart.log_x && is_size_axis(chart.x_label),
        false,
        xs(chart),
    );
    let percent = chart.y_label.contains('%');
    let y_axis = Axis::new(chart.log_y, false, percent, ys(chart));
    let placed: Vec<Vec<(f64, f64)>> = chart
        .series
        .iter()
        .map(|s| {
            s.points
                .iter()
                .filter_map(|&(x, y)| Some((x_axis.to_axis(x)?, y_axis.to_axis(y)?)))
                .collect()
        })
        .collect();

    let mut ctx = ChartBuilder::on(area)
        .caption(chart.title, (FONT, 24))
        .margin(16)
        .margin_right(44)
        .x_label_area_size(56)
        .y_label_area_size(84)
        .build_cartesian_2d(x_axis.coord(), y_axis.coord())
        .map_err(err)?;
    ctx.configure_mesh()
        .x_desc(chart.x_label)
        .y_desc(chart.y_label)
        .axis_desc_style((FONT, 18))
        .label_style((FONT, 15))
        .x_label_formatter(&|v| x_axis.label(*v))
        .y_label_formatter(&|v| y_axis.label(*v))
        .light_line_style(RGBColor(235, 235, 235))
        .bold_line_style(RGBColor(200, 200, 200))
        .draw()
        .map_err(err)?;

    let colours = assign_colours(chart.series);
    for ((series, points), &colour) in chart.series.iter().zip(&placed).zip(&colours) {
        let style = colour.stroke_width(if series.dashed { 2 } else { 3 });
        let anno = if series.dashed {
            ctx.draw_series(DashedLineSeries::new(points.iter().copied(), 10, 6, style))
                .map_err(err)?
        } else {
            ctx.draw_series(LineSeries::new(points.iter().copied(), style))
                .map_err(err)?
        };
        let dashed = series.dashed;
        anno.label(series.label.as_str())
            .legend(move |(x, y)| legend_mark(x, y, colour, dashed));
        // A marker on every measured point: the sweep is sparse and readers want to see where.
        ctx.draw_series(points.iter().map(|&p| Circle::new(p, 3, colour.filled())))
            .map_err(err)?;
    }

    if chart.series.iter().any(|s| !s.label.is_empty()) {
        let labels: Vec<&str> = chart.series.iter().map(|s| s.label.as_str()).collect();
        let plot = ctx.plotting_area().dim_in_pixel();
        ctx.configure_series_labels()
            .position(legend_position(&placed, &labels, &x_axis, &y_axis, plot))
            .label_font((FONT, 15))
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(160, 160, 160))
            .draw()
            .map_err(err)?;
    }
    Ok(())
}

/// The legend's sample line: two touching segments, or two dashes for a dashed series.
fn legend_mark<'a, DB: DrawingBackend + 'a>(
    x: i32,
    y: i32,
    colour: RGBColor,
    dashed: bool,
) -> impl IntoDynElement<'a, DB, (i32, i32)> {
    let style = colour.stroke_width(3);
    let (end_first, start_second) = if dashed { (8, 13) } else { (11, 11) };
    EmptyElement::at((x, y))
        + PathElement::new(vec![(0, 0), (end_first, 0)], style)
        + PathElement::new(vec![(start_second, 0), (21, 0)], style)
}

/// One colour per series, in order; a dashed series whose label starts with a solid series'
/// label and a space ("bip (BIP paper)" after "bip") takes that series' colour, so a reference
/// curve is drawn in the colour of what it is the reference for.
fn assign_colours(series: &[Series]) -> Vec<RGBColor> {
    let reference_of = |s: &Series| -> Option<usize> {
        if !s.dashed {
            return None;
        }
        series
            .iter()
            .enumerate()
            .filter(|(_, solid)| {
                !solid.dashed
                    && s.label
                        .strip_prefix(solid.label.as_str())
                        .is_some_and(|rest| rest.starts_with(' '))
            })
            .max_by_key(|(_, solid)| solid.label.len())
            .map(|(j, _)| j)
    };
    let mut colours: Vec<Option<RGBColor>> = vec![None; series.len()];
    let mut next = 0;
    for (i, s) in series.iter().enumerate() {
        if reference_of(s).is_none() {
            colours[i] = Some(COLOURS[next % COLOURS.len()]);
            next += 1;
        }
    }
    (0..series.len())
        .map(|i| {
            colours[i]
                .or_else(|| reference_of(&series[i]).and_then(|j| colours[j]))
                .unwrap_or(BLACK)
        })
        .collect()
}

/// The legend corner or side that covers the fewest points of the lines. `placed` is in axis
/// units; `plot` is the plotting area in pixels.
fn legend_position(
    placed: &[Vec<(f64, f64)>],
    labels: &[&str],
    x_axis: &Axis,
    y_axis: &Axis,
    plot: (u32, u32),
) -> SeriesLabelPosition {
    use SeriesLabelPosition::*;
    let (w, h) = (f64::from(plot.0.max(1)), f64::from(plot.1.max(1)));
    // Estimated legend box (15 px text): about 8 px a character plus the sample line, 20 px a row.
    let longest = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0) as f64;
    let (bw, bh) = (
        (longest * 8.0 + 50.0) / w,
        (labels.len() as f64 * 20.0 + 16.0) / h,
    );
    // Points along every line, as fractions of the plot (y upwards).
    let mut samples: Vec<(f64, f64)> = Vec::new();
    for line in placed {
        let frac: Vec<(f64, f64)> = line
            .iter()
            .map(|&(x, y)| (x_axis.fraction(x), y_axis.fraction(y)))
            .collect();
        samples.extend(frac.iter().copied());
        for pair in frac.windows(2) {
            let ((x0, y0), (x1, y1)) = (pair[0], pair[1]);
            samples.extend((1..24).map(|i| {
                let t = f64::from(i) / 24.0;
                (x0 + t * (x1 - x0), y0 + t * (y1 - y0))
            }));
        }
    }
    let candidates = [
        (UpperLeft, 0.0, 1.0 - bh),
        (UpperRight, 1.0 - bw, 1.0 - bh),
        (LowerRight, 1.0 - bw, 0.0),
        (LowerLeft, 0.0, 0.0),
        (MiddleRight, 1.0 - bw, 0.5 - bh / 2.0),
        (MiddleLeft, 0.0, 0.5 - bh / 2.0),
        (UpperMiddle, 0.5 - bw / 2.0, 1.0 - bh),
        (LowerMiddle, 0.5 - bw / 2.0, 0.0),
    ];
    let covered = |x0: f64, y0: f64| {
        samples
            .iter()
            .filter(|&&(x, y)| {
                x >= x0 - 0.01 && x <= x0 + bw + 0.01 && y >= y0 - 0.01 && y <= y0 + bh + 0.01
            })
            .count()
    };
    candidates
        .into_iter()
        .min_by_key(|&(_, x0, y0)| covered(x0, y0))
        .map(|c| c.0)
        .unwrap_or(UpperLeft)
}

fn xs(chart: &Chart) -> Vec<f64> {
    chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .collect()
}

fn ys(chart: &Chart) -> Vec<f64> {
    chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sweep(f: impl Fn(f64) -> f64) -> Vec<(f64, f64)> {
        (0..=20).map(|k| (2f64.powi(k), f(2f64.powi(k)))).collect()
    }

    #[test]
    fn draws_well_formed_svg_and_png() {
        let dir = std::env::temp_dir().join(format!("plot-test-{}", std::process::id()));
        let series = vec![
            Series {
                label: "bip".into(),
                points: sweep(|n| 120.0 * n / (n + 4096.0)),
                dashed: false,
            },
            Series {
                label: "BIP paper".into(),
                points: sweep(|n| 126.0 * n / (n + 4096.0)),
                dashed: true,
            },
            Series {
                label: "zero".into(),
                points: vec![(0.0, 1.0), (8.0, 2.0)],
                dashed: false,
            },
        ];
        for (log_y, name) in [(true, "loglog"), (false, "logx")] {
            let chart = Chart {
                title: "bandwidth",
                x_label: "message size (bytes)",
                y_label: "MB/s",
                log_x: true,
                log_y,
                series: &series,
            };
            let [svg, png] = draw(&chart, &dir.join(name)).expect("draw");
            let svg_text = std::fs::read_to_string(&svg).expect("read svg");
            assert!(
                svg_text.contains("<svg"),
                "no svg root in {}",
                svg.display()
            );
            assert!(svg_text.trim_end().ends_with("</svg>"), "svg not closed");
            assert!(
                svg_text.contains("1 KiB"),
                "size ticks missing: {svg_text:.400}"
            );
            assert!(svg_text.contains("BIP paper"), "legend missing");
            let png_bytes = std::fs::read(&png).expect("read png");
            assert!(png_bytes.len() > 2000, "png too small: {}", png_bytes.len());
            assert_eq!(&png_bytes[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
        }
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn empty_chart_still_draws() {
        let dir = std::env::temp_dir().join(format!("plot-empty-{}", std::process::id()));
        let chart = Chart {
            title: "nothing",
            x_label: "x",
            y_label: "y",
            log_x: false,
            log_y: true,
            series: &[],
        };
        let [svg, png] = draw(&chart, &dir.join("empty")).expect("draw");
        assert!(std::fs::metadata(svg).unwrap().len() > 0);
        assert!(std::fs::metadata(png).unwrap().len() > 0);
        std::fs::remove_dir_all(&dir).ok();
    }
}
