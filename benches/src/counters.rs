//! Per-message counters: what each layer does for one message, from counter snapshots.
//!
//! Every layer reports its counters in one JSON shape (see [`crate::transport`] and the MPI
//! library's `MPI_COUNTERS` dump): `{"nic": {...}, "bip": {...}, "fm": {...}, "channel":
//! {...}, "adi": {...}, "layer": {...}}`, each part present only where that layer is in the
//! stack. A measurement takes the counts of a loop of round trips (after minus before, or a
//! run minus an empty run), sums both ranks ([`sum`]) and divides by the messages the loop
//! sent ([`per_message`]).
//!
//! What a copy is: a memory copy of message data, counted where it happens. BIP counts its
//! copies into and out of packet buffers and of unexpected messages; the NIC counts its
//! single-copy transfers (`dma_ops`, one or two per long message: a split transfer is two);
//! FM its handlers' copies out of packets and FM 1.x staging (`fm.bytes_copied`) and the copy
//! of short pieces into the packet it builds (`fm.send_bytes_copied`); the MPI channel, the
//! ADI and the benchmark's side of a layer count theirs. Bytes copied include the headers that
//! travel with the data (BIP copies FM's packet header with FM's data, for instance).

use serde_json::{Map, Value};

/// `after - before`, field by field (numbers in nested objects; anything else is `after`'s).
pub fn difference(after: &Value, before: &Value) -> Value {
    combine(after, before, |a, b| a - b)
}

/// `a + b`, field by field (for the two ranks of a measurement).
pub fn sum(a: &Value, b: &Value) -> Value {
    combine(a, b, |a, b| a + b)
}

fn combine(a: &Value, b: &Value, op: fn(f64, f64) -> f64) -> Value {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut out = Map::new();
            for (k, va) in x {
                let v = match y.get(k) {
                    Some(vb) => combine(va, vb, op),
                    None => va.clone(),
                };
                out.insert(k.clone(), v);
            }
            for (k, vb) in y {
                out.entry(k.clone()).or_insert_with(|| vb.clone());
            }
            Value::Object(out)
        }
        (Value::Number(x), Value::Number(y)) => {
            let r = op(x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
            if r.fract() == 0.0 && r.abs() < 9.0e15 {
                Value::from(r as i64)
            } else {
                Value::from(r)
            }
        }
        (a, _) => a.clone(),
    }
}

/// A counter at `part.name`, 0 where absent.
fn get(raw: &Value, part: &str, name: &str) -> f64 {
    raw.get(part)
        .and_then(|p| p.get(name))
        .and_then(Value::as_f64)
        .unwrap_or(0.0)
}

/// The per-message summary of `raw` (counts of `messages` messages of `size` bytes, both
/// ranks summed):
///
/// - `copies_per_msg`, `bytes_copied_per_msg`: memory copies of message data, all layers;
///   `copy_passes` is bytes copied / message size (how many times each byte was copied),
///   given from 1 KiB up only (below, the headers copied with the data would dominate it);
/// - `packets_per_msg`: packets the NIC sent; `stalls_per_msg`: times a sender found the
///   route full; `credit_waits_per_msg`: BIP sends that waited for buffer credit;
///   `dma_per_msg`: single-copy transfers; `suspensions_per_msg`: FM handlers descheduled;
/// - `raw`: the summed counts themselves.
pub fn per_message(raw: &Value, size: usize, messages: u64) -> Value {
    let m = messages.max(1) as f64;
    let copy_parts = ["bip", "fm", "channel", "adi", "layer"];
    let copies = copy_parts
        .iter()
        .map(|p| get(raw, p, "copies"))
        .sum::<f64>()
        + get(raw, "nic", "dma_ops");
    let bytes = copy_parts
        .iter()
        .map(|p| get(raw, p, "bytes_copied"))
        .sum::<f64>()
        + get(raw, "fm", "send_bytes_copied")
        + get(raw, "nic", "dma_bytes");
    let round = |x: f64| (x * 1000.0).round() / 1000.0;
    serde_json::json!({
        "size": size,
        "messages": messages,
        "copies_per_msg": round(copies / m),
        "bytes_copied_per_msg": round(bytes / m),
        "copy_passes": (size >= 1024).then(|| round(bytes / m / size as f64)),
        "packets_per_msg": round(get(raw, "nic", "packets_tx") / m),
        "stalls_per_msg": round(get(raw, "nic", "stalls") / m),
        "credit_waits_per_msg": round(get(raw, "bip", "credit_waits") / m),
        "dma_per_msg": round(get(raw, "nic", "dma_ops") / m),
        "suspensions_per_msg": round(get(raw, "fm", "suspensions") / m),
        "raw": raw,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differences_sums_and_per_message() {
        let before = serde_json::json!({"nic": {"packets_tx": 10, "dma_ops": 0}, "bip": {"copies": 4, "bytes_copied": 40}});
        let after = serde_json::json!({"nic": {"packets_tx": 30, "dma_ops": 0}, "bip": {"copies": 24, "bytes_copied": 200}});
        let d = difference(&after, &before);
        assert_eq!(d["nic"]["packets_tx"], 20);
        let both = sum(&d, &d);
        assert_eq!(both["bip"]["bytes_copied"], 320);
        let p = per_message(&both, 8, 20);
        assert_eq!(p["packets_per_msg"], 2.0);
        assert_eq!(p["copies_per_msg"], 2.0);
        assert_eq!(p["bytes_copied_per_msg"], 16.0);
        assert!(p["copy_passes"].is_null(), "headers dominate below 1 KiB");
        assert_eq!(per_message(&both, 4096, 1)["copy_passes"], 0.078);
    }
}
