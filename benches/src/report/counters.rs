//! The counters section of the report: each layer's per-message counters as a table (whatever
//! numeric keys the `layers` document holds), and one sentence per layer on what it does
//! more than the layer below (more copies, packets, stalls), which is why it loses what it
//! loses.
//!
//! Accepted shapes of `counters[LAYER]`: a list of objects (one per size, with a `size` key),
//! an object of objects (one row per key), or one flat object (one row). Nested objects
//! inside a row (such as the raw counts) are left to the JSON.

use std::fmt::Write as _;

use serde_json::Value;

use super::data::{below, Profile};
use crate::plot::{format_bytes, format_number};

/// One row of a layer's counters: its label (a size when known) and numeric fields.
struct Row {
    label: String,
    size: Option<u64>,
    fields: Vec<(String, f64)>,
}

impl Row {
    fn get(&self, key: &str) -> Option<f64> {
        self.fields.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
    }
}

/// Readable names of the counters the `layers` binary writes (others are shown by key).
const KNOWN: &[(&str, &str, &str)] = &[
    // (key, what one unit is, phrase for a sentence)
    (
        "copy_passes",
        "times each byte is copied",
        "copies each byte",
    ),
    (
        "copies_per_msg",
        "memory copies per message",
        "memory copies per message",
    ),
    (
        "bytes_copied_per_msg",
        "bytes copied per message",
        "bytes copied per message",
    ),
    (
        "packets_per_msg",
        "packets per message",
        "packets per message",
    ),
    (
        "stalls_per_msg",
        "sender stalls per message",
        "sender stalls per message",
    ),
    (
        "credit_waits_per_msg",
        "credit waits per message",
        "waits for credit per message",
    ),
    (
        "dma_per_msg",
        "single-copy transfers per message",
        "single-copy transfers per message",
    ),
    (
        "suspensions_per_msg",
        "handler suspensions per message",
        "handler suspensions per message",
    ),
];

/// The counters section of `profile` (empty when the document has no counters).
pub fn section(profile: &Profile) -> String {
    let tables: Vec<(String, Vec<Row>)> = profile
        .layers
        .iter()
        .filter_map(|(layer, _)| {
            profile
                .counters
                .get(layer)
                .map(|c| (layer.clone(), rows(c)))
        })
        .filter(|(_, rows)| !rows.is_empty())
        .collect();
    if tables.is_empty() {
        return String::new();
    }
    let mut s = format!("### Counters per message ({})\n\n", profile.name);
    s.push_str(
        "Counted over a short loop of round trips at each size, both processes together, divided \
         by the number of messages. The raw counts are in the JSON.\n\n",
    );
    s.push_str("Why each layer loses what it loses, from the counters:\n\n");
    for (layer, rows) in &tables {
        let lower = below(layer).and_then(|b| tables.iter().find(|(l, _)| l == b));
        writeln!(s, "- {}", explain(layer, rows, lower)).unwrap();
    }
    s.push('\n');
    for (layer, rows) in &tables {
        s.push_str(&table(layer, rows));
    }
    let legend: Vec<String> = KNOWN
        .iter()
        .map(|(key, unit, _)| format!("`{key}`: {unit}"))
        .collect();
    writeln!(s, "Columns: {}.\n", legend.join("; ")).unwrap();
    s
}

/// The rows of one layer's counters, whatever shape they come in.
fn rows(v: &Value) -> Vec<Row> {
    let numeric = |obj: &serde_json::Map<String, Value>| -> Vec<(String, f64)> {
        obj.iter()
            .filter(|(k, _)| *k != "size")
            .filter_map(|(k, v)| v.as_f64().map(|n| (k.clone(), n)))
            .collect()
    };
    let row = |label: String, obj: &serde_json::Map<String, Value>| {
        let size = obj
            .get("size")
            .and_then(Value::as_u64)
            .or_else(|| label.parse().ok());
        let label = size.map(format_bytes).unwrap_or(label);
        Row {
            label,
            size,
            fields: numeric(obj),
        }
    };
    let mut out: Vec<Row> = match v {
        Value::Array(list) => list
            .iter()
            .enumerate()
            .filter_map(|(i, r)| Some(row(i.to_string(), r.as_object()?)))
            .collect(),
        Value::Object(map) if map.values().all(Value::is_object) && !map.is_empty() => map
            .iter()
            .filter_map(|(k, r)| Some(row(k.clone(), r.as_object()?)))
            .collect(),
        Value::Object(map) => vec![row("all".into(), map)],
        _ => vec![],
    };
    out.retain(|r| !r.fields.is_empty());
    out.sort_by_key(|r| r.size.unwrap_or(u64::MAX));
    out
}

fn table(layer: &str, rows: &[Row]) -> String {
    // Columns: the known counters first, in their order, then any other key.
    let mut keys: Vec<String> = KNOWN
        .iter()
        .map(|k| k.0.to_string())
        .filter(|k| rows.iter().any(|r| r.get(k).is_some()))
        .collect();
    for r in rows {
        for (k, _) in &r.fields {
            if !keys.contains(k) {
                keys.push(k.clone());
            }
        }
    }
    let mut s = format!("**{layer}**\n\n| size |");
    for k in &keys {
        write!(s, " {k} |").unwrap();
    }
    s.push_str("\n|---:|");
    s.push_str(&"---:|".repeat(keys.len()));
    s.push('\n');
    for r in rows {
        write!(s, "| {} |", r.label).unwrap();
        for k in &keys {
            write!(s, " {} |", r.get(k).map_or("-".into(), cell)).unwrap();
        }
        s.push('\n');
    }
    s.push('\n');
    s
}

fn cell(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e6 {
        format!("{v:.0}")
    } else {
        format_number(v)
    }
}

/// One sentence: what `layer` does per message beyond the layer below, at the smallest and
/// largest sizes both were counted at.
fn explain(layer: &str, rows: &[Row], lower: Option<&(String, Vec<Row>)>) -> String {
    let Some((lower_name, lower_rows)) = lower else {
        let first = rows.iter().rev().find(|r| r.size.is_some()).or(rows.last());
        let what = first.map(describe).unwrap_or_default();
        return match below(layer) {
            Some(b) => format!("**{layer}**: no counters for {b} to compare with; {what}."),
            None => format!("**{layer}** is the bottom of the stack: {what}."),
        };
    };
    let common: Vec<(&Row, &Row)> = rows
        .iter()
        .filter_map(|r| {
            Some((
                r,
                lower_rows
                    .iter()
                    .find(|l| l.size.is_some() && l.size == r.size)?,
            ))
        })
        .filter(|(r, _)| r.size != Some(0))
        .collect();
    let picks: Vec<&(&Row, &Row)> = match (common.first(), common.last()) {
        (Some(a), Some(b)) if a.0.size != b.0.size => vec![a, b],
        (Some(a), _) => vec![a],
        _ => vec![],
    };
    if picks.is_empty() {
        return format!("**{layer}**: its counters and {lower_name}'s share no message size, so they cannot be compared.");
    }
    let mut parts = Vec::new();
    let (mut more, mut less) = (false, false);
    for (upper, low) in &picks {
        let diffs: Vec<String> = KNOWN
            .iter()
            .filter_map(|(key, _, phrase)| {
                let (u, l) = (upper.get(key)?, low.get(key)?);
                let differs = (u - l).abs() > 0.05 * l.abs().max(0.1);
                if differs && *key != "dma_per_msg" && *key != "suspensions_per_msg" {
                    // Single-copy transfers and suspensions are how a layer avoids copies, not costs.
                    more |= u > l;
                    less |= u < l;
                }
                differs.then(|| {
                    if *key == "copy_passes" {
                        format!("{phrase} {} against {}", times(round3(u)), times(round3(l)))
                    } else {
                        format!("{} {phrase} against {}", cell(round3(u)), cell(round3(l)))
                    }
                })
            })
            .collect();
        let at = &upper.label;
        if diffs.is_empty() {
            parts.push(format!(
                "at {at} no more copies, packets or stalls than {lower_name}"
            ));
        } else {
            parts.push(format!("at {at} {}", diffs.join(", ")));
        }
    }
    let verdict = if more {
        format!("the extra copies and packets are time on the path that {lower_name} does not spend, and that is where it loses")
    } else if less {
        format!("it moves the data with less work than {lower_name}, so what it loses, if anything, is software time per message")
    } else {
        format!("so what it loses against {lower_name} is software time per message (matching, headers, calls), not data movement")
    };
    format!(
        "**{layer}** against {lower_name}: {}; {verdict}.",
        parts.join("; ")
    )
}

/// The known counters of one row, as words.
fn describe(row: &Row) -> String {
    let words: Vec<String> = KNOWN
        .iter()
        .filter_map(|(key, unit, _)| {
            row.get(key)
                .filter(|v| *v != 0.0 || key.starts_with("cop"))
                .map(|v| match *key {
                    "copy_passes" => format!("each byte copied {}", times(round3(v))),
                    _ => format!("{} {unit}", cell(round3(v))),
                })
        })
        .collect();
    if words.is_empty() {
        format!(
            "counters at {}: {}",
            row.label,
            row.fields
                .iter()
                .map(|(k, v)| format!("{k} {}", cell(*v)))
                .collect::<Vec<_>>()
                .join(", ")
        )
    } else {
        format!("at {}, {}", row.label, words.join(", "))
    }
}

/// "once", "twice", "2.5 times".
fn times(v: f64) -> String {
    if v == 1.0 {
        "once".into()
    } else if v == 2.0 {
        "twice".into()
    } else {
        format!("{} times", cell(v))
    }
}

fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}
