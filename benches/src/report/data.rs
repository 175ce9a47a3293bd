//! One profile's results as the report reads them from a `layers` JSON document: the points
//! of every layer, the summary (peaks, N1/2), the counters and the MPICH reference, plus the
//! fixed picture of which layer sits on which ([`below`]).

use std::collections::BTreeMap;

use serde_json::Value;

/// The layers in the order the report shows them, bottom up.
pub const LAYER_ORDER: &[&str] = &[
    "nic", "vmmc", "bip", "fm", "fm1", "mpi-bip", "mpi-fm", "mpi-fm1",
];

/// The layer that `layer` is built on, the one it is compared with.
pub fn below(layer: &str) -> Option<&'static str> {
    match layer {
        "bip" | "vmmc" => Some("nic"),
        "fm" | "fm1" | "mpi-bip" => Some("bip"),
        "mpi-fm" => Some("fm"),
        "mpi-fm1" => Some("fm1"),
        _ => None,
    }
}

/// One measured size.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    pub size: u64,
    pub latency_us: f64,
    pub bandwidth_mb_s: f64,
    /// Both directions at once, when measured.
    pub bidir_mb_s: Option<f64>,
}

/// One profile's results.
#[derive(Clone, Debug)]
pub struct Profile {
    pub name: String,
    /// Layers in `LAYER_ORDER` (then any others by name), each with its points by size.
    pub layers: Vec<(String, Vec<Point>)>,
    /// `summary[LAYER]` as the document gives it.
    pub summary: BTreeMap<String, Value>,
    /// `counters[LAYER]` as the document gives it.
    pub counters: BTreeMap<String, Value>,
    /// MPICH measured the same way, when the document has it.
    pub mpich: Option<Vec<Point>>,
}

impl Profile {
    /// Reads document number `index` (for error messages).
    pub fn from_json(doc: &Value, index: usize) -> Result<Profile, String> {
        let name = doc["profile"].as_str().unwrap_or("unnamed").to_string();
        let layers_obj = doc["layers"]
            .as_object()
            .ok_or_else(|| format!("layers document {index} (profile {name}) has no \"layers\" object: is it the output of `layers --json`?"))?;
        let mut layers: Vec<(String, Vec<Point>)> = Vec::new();
        for (layer, pts) in layers_obj {
            let points = points(pts).map_err(|e| format!("profile {name}, layer {layer}: {e}"))?;
            layers.push((layer.clone(), points));
        }
        layers.sort_by_key(|(l, _)| {
            (
                LAYER_ORDER
                    .iter()
                    .position(|k| k == l)
                    .unwrap_or(LAYER_ORDER.len()),
                l.clone(),
            )
        });
        let object = |key: &str| -> BTreeMap<String, Value> {
            doc[key]
                .as_object()
                .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
                .unwrap_or_default()
        };
        let mpich = match &doc["reference"]["mpich"] {
            Value::Null => None,
            v => Some(points(v).map_err(|e| format!("profile {name}, MPICH reference: {e}"))?),
        };
        Ok(Profile {
            name,
            layers,
            summary: object("summary"),
            counters: object("counters"),
            mpich,
        })
    }

    /// The points of `layer`, if measured.
    pub fn points(&self, layer: &str) -> Option<&[Point]> {
        self.layers
            .iter()
            .find(|(l, _)| l == layer)
            .map(|(_, p)| p.as_slice())
    }

    /// Every size measured by any layer, ascending.
    pub fn sizes(&self) -> Vec<u64> {
        let mut sizes: Vec<u64> = self
            .layers
            .iter()
            .flat_map(|(_, p)| p.iter().map(|p| p.size))
            .collect();
        sizes.sort_unstable();
        sizes.dedup();
        sizes
    }

    /// Layers measured together with the layer they sit on: (layer, below).
    pub fn pairs(&self) -> Vec<(&str, &'static str)> {
        self.layers
            .iter()
            .filter_map(|(l, _)| {
                below(l)
                    .filter(|b| self.points(b).is_some())
                    .map(|b| (l.as_str(), b))
            })
            .collect()
    }

    /// A number from `summary[layer][key]`.
    pub fn summary_value(&self, layer: &str, key: &str) -> Option<f64> {
        self.summary
            .get(layer)
            .and_then(|s| s.get(key))
            .and_then(Value::as_f64)
    }
}

/// The point of `points` at `size`.
pub fn at(points: &[Point], size: u64) -> Option<&Point> {
    points.iter().find(|p| p.size == size)
}

fn points(v: &Value) -> Result<Vec<Point>, String> {
    let list = v.as_array().ok_or("expected a list of points")?;
    let mut out = Vec::with_capacity(list.len());
    for p in list {
        let num = |key: &str| p.get(key).and_then(Value::as_f64);
        let size = num("size").ok_or("a point has no \"size\"")?;
        out.push(Point {
            size: size as u64,
            latency_us: num("latency_us").unwrap_or(f64::NAN),
            bandwidth_mb_s: num("bandwidth_mb_s").unwrap_or(f64::NAN),
            bidir_mb_s: num("bidir_bandwidth_mb_s").filter(|b| *b > 0.0),
        });
    }
    out.sort_by_key(|p| p.size);
    Ok(out)
}
