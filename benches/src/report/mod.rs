//! The layering-efficiency report: `report.md` (and `index.html`) with tables and charts,
//! written from the JSON documents the `layers` binary produces (one per timing profile).
//!
//! [`write_report`] is the entry point. For each profile it reads the measured points
//! (`data`), draws latency, bandwidth and efficiency charts with [`crate::plot`]
//! (`charts`), adds the papers' published figures for the `myrinet-lanai4` profile
//! (`published`, from `benches/data/published.json`), and writes the tables, the N1/2 and
//! peak summary and the per-layer counters with a sentence on what each layer loses
//! (`tables`, `counters`).

mod charts;
mod counters;
mod data;
mod html;
mod published;
mod tables;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

pub use data::{below, Profile};

/// Writes `DIR/report.md`, its images and `DIR/index.html` from `docs` (one `layers` JSON
/// document per profile); returns the path of `report.md`.
pub fn write_report(dir: &Path, docs: &[serde_json::Value]) -> Result<PathBuf, String> {
    if docs.is_empty() {
        return Err(
            "no layers results to report: run `layers --json FILE` for at least one profile first"
                .into(),
        );
    }
    let profiles: Vec<Profile> = docs
        .iter()
        .enumerate()
        .map(|(i, d)| Profile::from_json(d, i))
        .collect::<Result<_, _>>()?;
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("cannot create the report directory {}: {e}", dir.display()))?;
    let published = published::load()?;

    let mut md = String::new();
    writeln!(
        md,
        "# Layering efficiency: how much of each layer reaches the layer above\n"
    )
    .unwrap();
    md.push_str(&tables::method(&profiles));
    for profile in &profiles {
        let refs = if profile.name == published.profile {
            Some(&published)
        } else {
            None
        };
        let images = charts::draw_profile(dir, profile, refs)?;
        md.push_str(&tables::profile_section(profile, &images, refs));
        md.push_str(&counters::section(profile));
    }
    let path = dir.join("report.md");
    std::fs::write(&path, &md).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let html_path = dir.join("index.html");
    std::fs::write(&html_path, html::from_markdown(&md))
        .map_err(|e| format!("cannot write {}: {e}", html_path.display()))?;
    Ok(path)
}

#[cfg(test)]
mod tests;
