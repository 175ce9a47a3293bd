//! The papers' published figures (`benches/data/published.json`, compiled in), as series to
//! draw dashed beside our measurements and rows for the report's table of sources.

use serde_json::Value;

/// What a published series measures.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    Latency,
    Bandwidth,
    /// A layer's bandwidth as a percentage of the layer below.
    Efficiency,
}

/// One published series.
#[derive(Clone, Debug)]
pub struct Reference {
    pub kind: Kind,
    /// Our layer it corresponds to.
    pub layer: String,
    pub label: String,
    /// (size in bytes, value) to draw.
    pub points: Vec<(f64, f64)>,
    /// Where the numbers come from.
    pub source: String,
}

/// All published series and the profile they belong beside.
#[derive(Clone, Debug)]
pub struct Published {
    pub profile: String,
    pub about: String,
    pub series: Vec<Reference>,
}

impl Published {
    /// Published series of `kind`.
    pub fn of(&self, kind: Kind) -> impl Iterator<Item = &Reference> {
        self.series.iter().filter(move |r| r.kind == kind)
    }
}

const FILE: &str = include_str!("../../data/published.json");

/// Sizes at which a half-power curve is drawn: 1 B to 8 MiB, every power of two.
fn curve_sizes() -> impl Iterator<Item = f64> {
    (0..=23).map(|k| 2f64.powi(k))
}

/// Reads the compiled-in `published.json`.
pub fn load() -> Result<Published, String> {
    parse(FILE).map_err(|e| format!("benches/data/published.json: {e}"))
}

fn parse(text: &str) -> Result<Published, String> {
    let doc: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let mut series = Vec::new();
    for s in doc["series"].as_array().ok_or("no \"series\" list")? {
        let text = |key: &str| {
            s[key]
                .as_str()
                .map(str::to_string)
                .ok_or(format!("a series has no \"{key}\""))
        };
        let kind = match text("kind")?.as_str() {
            "latency" => Kind::Latency,
            "bandwidth" => Kind::Bandwidth,
            "efficiency" => Kind::Efficiency,
            other => {
                return Err(format!(
                    "unknown kind {other:?}: use latency, bandwidth or efficiency"
                ))
            }
        };
        // Stated points first, so that where a curve passes the same size the stated one stays.
        let mut points: Vec<(f64, f64)> = Vec::new();
        for p in s["points"].as_array().into_iter().flatten() {
            match (p[0].as_f64(), p[1].as_f64()) {
                (Some(x), Some(y)) => points.push((x, y)),
                _ => {
                    return Err(format!(
                        "a point of {:?} is not [size, value]",
                        text("label")?
                    ))
                }
            }
        }
        if let Some(h) = s.get("half_power") {
            let peak = h["peak_mb_s"]
                .as_f64()
                .ok_or("half_power needs peak_mb_s")?;
            let n_half = h["n_half_bytes"]
                .as_f64()
                .ok_or("half_power needs n_half_bytes")?;
            points.extend(curve_sizes().map(|n| (n, peak * n / (n + n_half))));
        }
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        points.dedup_by(|a, b| a.0 == b.0);
        series.push(Reference {
            kind,
            layer: text("layer")?,
            label: text("label")?,
            points,
            source: text("source")?,
        });
    }
    Ok(Published {
        profile: doc["profile"]
            .as_str()
            .unwrap_or("myrinet-lanai4")
            .to_string(),
        about: doc["about"].as_str().unwrap_or_default().to_string(),
        series,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_file_reads_and_cites_every_series() {
        let p = load().expect("published.json");
        assert_eq!(p.profile, "myrinet-lanai4");
        let bip = p
            .of(Kind::Bandwidth)
            .find(|r| r.layer == "bip")
            .expect("BIP bandwidth");
        // The curve through Table 1's figures: half of 126 MB/s at 4 KiB.
        let at_4k = bip.points.iter().find(|p| p.0 == 4096.0).unwrap().1;
        assert!((at_4k - 63.0).abs() < 1e-9, "{at_4k}");
        assert!(p
            .series
            .iter()
            .all(|s| s.source.contains("seed 00") && !s.points.is_empty()));
    }
}
