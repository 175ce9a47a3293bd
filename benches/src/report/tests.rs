//! The report built from small synthetic `layers` documents, checked as a reader would:
//! every layer named, every referenced image present and well-formed.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::write_report;

const LAYERS: &[&str] = &["nic", "bip", "fm", "fm1", "mpi-bip", "mpi-fm", "mpi-fm1"];

/// A document shaped like `layers --json`: each layer up the stack a little slower.
fn synthetic(profile: &str) -> Value {
    let sizes = [0u64, 8, 1024, 65536, 1 << 20];
    let mut layers = serde_json::Map::new();
    let mut summary = serde_json::Map::new();
    let mut counters = serde_json::Map::new();
    for (i, layer) in LAYERS.iter().enumerate() {
        let slow = 1.0 + 0.1 * i as f64;
        let points: Vec<Value> = sizes
            .iter()
            .map(|&n| {
                let lat = 2.0 * slow + n as f64 / 1000.0;
                let bw = if n == 0 { 0.0 } else { 1000.0 / slow * n as f64 / (n as f64 + 4096.0) };
                json!({"size": n, "latency_us": lat, "bandwidth_mb_s": bw, "bidir_bandwidth_mb_s": 1.8 * bw})
            })
            .collect();
        layers.insert(layer.to_string(), Value::Array(points));
        summary.insert(
            layer.to_string(),
            json!({"peak_bandwidth_mb_s": 1000.0 / slow, "n_half_streaming_bytes": 4096.0, "n_half_pingpong_bytes": 2048.0}),
        );
        let copies = if *layer == "fm1" || *layer == "mpi-fm1" {
            4.0
        } else {
            2.0
        };
        let rows: Vec<Value> = [8u64, 65536]
            .iter()
            .map(|&n| {
                json!({"size": n, "messages": 100, "copies_per_msg": copies, "copy_passes": copies / 2.0,
                       "packets_per_msg": (n / 4096 + 1) as f64, "stalls_per_msg": 0.0, "raw": {"nic": {"packets_tx": 100}}})
            })
            .collect();
        counters.insert(layer.to_string(), Value::Array(rows));
    }
    let mpich: Vec<Value> = sizes
        .iter()
        .map(|&n| json!({"size": n, "latency_us": 3.0, "bandwidth_mb_s": n as f64 / 100.0}))
        .collect();
    json!({"profile": profile, "layers": layers, "summary": summary, "counters": counters, "reference": {"mpich": mpich}})
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("report-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Every `](file)` target in `md`.
fn referenced_files(md: &str) -> Vec<String> {
    md.split("](")
        .skip(1)
        .filter_map(|rest| rest.split(')').next())
        .map(str::to_string)
        .collect()
}

fn check_image(path: &Path) {
    let bytes = std::fs::read(path)
        .unwrap_or_else(|e| panic!("{} referenced but unreadable: {e}", path.display()));
    assert!(
        bytes.len() > 1000,
        "{} is nearly empty ({} bytes)",
        path.display(),
        bytes.len()
    );
    match path.extension().and_then(|e| e.to_str()) {
        Some("png") => assert_eq!(
            &bytes[..8],
            b"\x89PNG\r\n\x1a\n",
            "{} is not a PNG",
            path.display()
        ),
        Some("svg") => assert!(
            String::from_utf8_lossy(&bytes).contains("<svg"),
            "{} is not an SVG",
            path.display()
        ),
        other => panic!("unexpected image type {other:?}"),
    }
}

#[test]
fn report_names_every_layer_and_every_image_exists() {
    let dir = temp_dir("two-profiles");
    let docs = [synthetic("native"), synthetic("myrinet-lanai4")];
    let path = write_report(&dir, &docs).expect("write_report");
    assert_eq!(path, dir.join("report.md"));
    let md = std::fs::read_to_string(&path).unwrap();
    for layer in LAYERS {
        assert!(
            md.contains(&format!("| {layer} |")),
            "report.md has no row for {layer}"
        );
        assert!(
            md.contains(&format!("**{layer}**")),
            "report.md has no counters sentence for {layer}"
        );
    }
    for pair in [
        "bip/nic",
        "fm/bip",
        "fm1/bip",
        "mpi-bip/bip",
        "mpi-fm/fm",
        "mpi-fm1/fm1",
    ] {
        assert!(md.contains(pair), "no efficiency column for {pair}");
    }
    // The counters explain fm1's extra copies.
    assert!(
        md.contains("**fm1** against bip") && md.contains("4 memory copies per message against 2"),
        "{md}"
    );
    // Published figures only beside myrinet-lanai4.
    assert_eq!(md.matches("The papers' published figures").count(), 1);
    assert!(md.contains("126 MB/s"));
    assert!(md.contains("MPICH"));
    let files = referenced_files(&md);
    assert!(
        files.iter().filter(|f| f.ends_with(".svg")).count() >= 10,
        "{files:?}"
    );
    for f in &files {
        check_image(&dir.join(f));
    }
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    assert!(html.contains("<img src=\"latency-native.svg\""));
    if std::env::var_os("REPORT_TEST_KEEP").is_none() {
        std::fs::remove_dir_all(&dir).ok();
    }
}

#[test]
fn partial_documents_still_make_a_report() {
    // Two layers, no summary, no counters, no reference: what an early or short run writes.
    let dir = temp_dir("partial");
    let doc = json!({"profile": "native", "layers": {
        "nic": [{"size": 8, "latency_us": 1.0, "bandwidth_mb_s": 10.0}, {"size": 4096, "latency_us": 2.0, "bandwidth_mb_s": 900.0}],
        "bip": [{"size": 8, "latency_us": 1.5, "bandwidth_mb_s": 8.0}, {"size": 4096, "latency_us": 2.5, "bandwidth_mb_s": 800.0}]
    }});
    let path = write_report(&dir, &[doc]).expect("write_report");
    let md = std::fs::read_to_string(path).unwrap();
    assert!(md.contains("| bip |") && md.contains("89%"), "{md}");
    for f in referenced_files(&md) {
        check_image(&dir.join(f));
    }
    if std::env::var_os("REPORT_TEST_KEEP").is_none() {
        std::fs::remove_dir_all(&dir).ok();
    }
}

#[test]
fn a_document_without_layers_is_refused_with_advice() {
    let err = write_report(&temp_dir("bad"), &[json!({"profile": "x"})]).unwrap_err();
    assert!(err.contains("layers --json"), "{err}");
}
