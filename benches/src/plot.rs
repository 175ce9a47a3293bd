//! Line charts as SVG and PNG, for the layers report and the MPI comparison.
//!
//! PLACEHOLDER: the signature below is the contract; the drawing is being written.

use std::path::{Path, PathBuf};

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

/// Draws `chart` into `<stem>.svg` and `<stem>.png`; returns both paths.
pub fn draw(chart: &Chart, stem: &Path) -> Result<[PathBuf; 2], String> {
    let _ = chart;
    Err(format!("plotting is not written yet ({})", stem.display()))
}
