//! The report's charts for one profile: latency (log-log), bandwidth and bidirectional
//! bandwidth (log size axis), and each layer's bandwidth and latency as a percentage of the
//! layer below, in the form of the FM 2.x paper's Figures 4(b) and 6(b). References (MPICH,
//! the papers' figures) are dashed, in the colour of the layer they belong to.

use std::path::Path;

use super::data::{at, Point, Profile};
use super::published::{Kind, Published};
use crate::plot::{self, Chart, Series};

/// One drawn chart: what it shows and its SVG/PNG file names (relative to the report).
#[derive(Clone, Debug)]
pub struct Image {
    pub title: String,
    pub svg: String,
    pub png: String,
}

/// Draws every chart of `profile` into `dir`; `published` adds the papers' figures.
pub fn draw_profile(
    dir: &Path,
    profile: &Profile,
    published: Option<&Published>,
) -> Result<Vec<Image>, String> {
    let mut images = Vec::new();
    let p = &profile.name;
    let size_label = "message size (bytes)";

    // Latency against size, every layer.
    let mut latency = layer_series(profile, |pt| Some(pt.latency_us));
    add_references(&mut latency, profile, published, Kind::Latency, |pt| {
        Some(pt.latency_us)
    });
    let title = format!("Latency per layer ({p}): half round trip, median");
    images.push(draw(
        dir,
        &format!("latency-{p}"),
        &title,
        size_label,
        "latency (us)",
        true,
        &latency,
    )?);

    // Streaming bandwidth against size.
    let mut bandwidth = layer_series(profile, |pt| Some(pt.bandwidth_mb_s));
    add_references(&mut bandwidth, profile, published, Kind::Bandwidth, |pt| {
        Some(pt.bandwidth_mb_s)
    });
    let title = format!("Streaming bandwidth per layer ({p})");
    images.push(draw(
        dir,
        &format!("bandwidth-{p}"),
        &title,
        size_label,
        "bandwidth (MB/s, 10^6 B/s)",
        false,
        &bandwidth,
    )?);

    // Both directions at once, when measured.
    let bidir = layer_series(profile, |pt| pt.bidir_mb_s);
    if !bidir.is_empty() {
        let title = format!("Bidirectional bandwidth per layer ({p}): both ways together");
        images.push(draw(
            dir,
            &format!("bidir-{p}"),
            &title,
            size_label,
            "bandwidth, both ways (MB/s)",
            false,
            &bidir,
        )?);
    }

    // Each layer as a percentage of the layer below (FM 2.x paper, Figures 4(b) and 6(b)).
    let pairs = profile.pairs();
    if !pairs.is_empty() {
        let mut eff: Vec<Series> = pairs
            .iter()
            .map(|&(upper, lower)| {
                ratio_series(profile, upper, lower, |u, l| {
                    percent(u.bandwidth_mb_s, l.bandwidth_mb_s)
                })
            })
            .filter(|s| !s.points.is_empty())
            .collect();
        if pairs.contains(&("vmmc", "nic")) {
            // The VMMC paper's share of its hardware's limit, for every profile: the claim is
            // a ratio, not a figure of 1997 hardware.
            eff.push(Series {
                label: format!(
                    "vmmc / nic (VMMC paper: {:.0}% of the hardware limit)",
                    VMMC_PAPER_PERCENT
                ),
                points: vec![(1.0, VMMC_PAPER_PERCENT), (8_388_608.0, VMMC_PAPER_PERCENT)],
                dashed: true,
            });
        }
        if let Some(refs) = published {
            for r in refs.of(Kind::Efficiency) {
                if let Some(solid) = pairs.iter().find(|(u, _)| *u == r.layer) {
                    let key = format!("{} / {}", solid.0, solid.1);
                    eff.push(Series {
                        label: format!("{key} {}", paper_part(&r.label)),
                        points: r.points.clone(),
                        dashed: true,
                    });
                }
            }
        }
        let title = format!("Bandwidth of each layer as % of the layer below ({p})");
        images.push(draw(
            dir,
            &format!("efficiency-{p}"),
            &title,
            size_label,
            "% of the layer below's bandwidth",
            false,
            &eff,
        )?);

        let lat_eff: Vec<Series> = pairs
            .iter()
            .map(|&(upper, lower)| {
                ratio_series(profile, upper, lower, |u, l| {
                    percent(l.latency_us, u.latency_us)
                })
            })
            .filter(|s| !s.points.is_empty())
            .collect();
        let title = format!("Latency of the layer below as % of each layer's ({p})");
        images.push(draw(
            dir,
            &format!("latency-efficiency-{p}"),
            &title,
            size_label,
            "% (100 = adds nothing)",
            false,
            &lat_eff,
        )?);
    }
    Ok(images)
}

/// What the VMMC paper's implementation delivered of its hardware's limit, in percent (seed
/// 003, section 5: 108.4 MB/s of the 110 MB/s that 4 KiB host-to-LANai DMA allows).
pub const VMMC_PAPER_PERCENT: f64 = 98.0;

/// `a / b` in percent, when both are usable.
pub fn percent(a: f64, b: f64) -> Option<f64> {
    (a.is_finite() && b.is_finite() && b > 0.0 && a >= 0.0).then(|| 100.0 * a / b)
}

/// The part of a published label after the layer name: "(BIP paper: ...)".
fn paper_part(label: &str) -> &str {
    label.find('(').map_or(label, |i| &label[i..])
}

/// One solid series per layer (sizes above 0), named by the layer.
fn layer_series(profile: &Profile, value: impl Fn(&Point) -> Option<f64>) -> Vec<Series> {
    profile
        .layers
        .iter()
        .map(|(layer, pts)| Series {
            label: layer.clone(),
            points: xy(pts, &value),
            dashed: false,
        })
        .filter(|s| !s.points.is_empty())
        .collect()
}

/// MPICH and, when given, the papers' figures for layers this profile measured: dashed.
fn add_references(
    series: &mut Vec<Series>,
    profile: &Profile,
    published: Option<&Published>,
    kind: Kind,
    value: impl Fn(&Point) -> Option<f64>,
) {
    if let Some(m) = &profile.mpich {
        let points = xy(m, &value);
        if !points.is_empty() {
            series.push(Series {
                label: "MPICH (same method)".into(),
                points,
                dashed: true,
            });
        }
    }
    if let Some(refs) = published {
        for r in refs.of(kind).filter(|r| profile.points(&r.layer).is_some()) {
            series.push(Series {
                label: r.label.clone(),
                points: r.points.clone(),
                dashed: true,
            });
        }
    }
}

fn xy(points: &[Point], value: &impl Fn(&Point) -> Option<f64>) -> Vec<(f64, f64)> {
    points
        .iter()
        .filter(|p| p.size > 0)
        .filter_map(|p| {
            value(p)
                .filter(|v| v.is_finite() && *v > 0.0)
                .map(|v| (p.size as f64, v))
        })
        .collect()
}

/// `ratio(upper point, lower point)` at every size both measured, labelled "upper / lower".
fn ratio_series(
    profile: &Profile,
    upper: &str,
    lower: &str,
    ratio: impl Fn(&Point, &Point) -> Option<f64>,
) -> Series {
    let (u, l) = (
        profile.points(upper).unwrap_or(&[]),
        profile.points(lower).unwrap_or(&[]),
    );
    let points = u
        .iter()
        .filter(|p| p.size > 0)
        .filter_map(|p| Some((p.size as f64, ratio(p, at(l, p.size)?)?)))
        .collect();
    Series {
        label: format!("{upper} / {lower}"),
        points,
        dashed: false,
    }
}

fn draw(
    dir: &Path,
    stem: &str,
    title: &str,
    x_label: &str,
    y_label: &str,
    log_y: bool,
    series: &[Series],
) -> Result<Image, String> {
    let chart = Chart {
        title,
        x_label,
        y_label,
        log_x: true,
        log_y,
        series,
    };
    plot::draw(&chart, &dir.join(stem))?;
    Ok(Image {
        title: title.to_string(),
        svg: format!("{stem}.svg"),
        png: format!("{stem}.png"),
    })
}
