//! The `layers` benchmark end to end: a short sweep of four layers (the raw NIC, BIP, FM 2.x
//! and MPI over BIP through our C ABI) under the native and a modeled profile, written as a
//! report directory, and the `MPI_COUNTERS` dump of a C MPI program.
//!
//! Figures are not judged (this machine is shared and noisy); what is checked is that every
//! layer was measured, that the numbers are real (positive, and counters that match what the
//! layers must do: packets and copies for every message), and that the files exist.

mod common;

use serde_json::Value;
use std::path::{Path, PathBuf};

const LAYERS: &[&str] = &["nic", "bip", "fm", "mpi-bip"];
const PROFILES: &[&str] = &["native", "myrinet-lanai4"];

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("layers-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// Checks one profile's document: every layer, positive figures, the bidirectional field,
/// the summary and the counters.
fn check_document(doc: &Value, profile: &str) {
    assert_eq!(doc["profile"], profile);
    for layer in LAYERS {
        let points = doc["layers"][layer]
            .as_array()
            .unwrap_or_else(|| panic!("{profile}: no points for {layer}: {doc}"));
        let sizes: Vec<u64> = points.iter().map(|p| p["size"].as_u64().unwrap()).collect();
        assert_eq!(sizes, [8, 65536], "{profile} {layer}");
        for p in points {
            for field in ["latency_us", "bandwidth_mb_s", "bidir_bandwidth_mb_s"] {
                let v = p[field]
                    .as_f64()
                    .unwrap_or_else(|| panic!("{profile} {layer}: no {field} in {p}"));
                assert!(v > 0.0 && v.is_finite(), "{profile} {layer}: {field} = {v}");
            }
        }
        let summary = &doc["summary"][layer];
        assert!(
            summary["peak_bandwidth_mb_s"].as_f64().unwrap() > 0.0,
            "{profile} {layer}: {summary}"
        );
        assert!(
            summary["peak_bidir_bandwidth_mb_s"].as_f64().unwrap() > 0.0,
            "{profile} {layer}: {summary}"
        );

        let counters = doc["counters"][layer]
            .as_array()
            .unwrap_or_else(|| panic!("{profile}: no counters for {layer}"));
        let sizes: Vec<u64> = counters
            .iter()
            .map(|c| c["size"].as_u64().unwrap())
            .collect();
        assert_eq!(sizes, [8, 65536], "{profile} {layer} counters");
        for c in counters {
            let size = c["size"].as_f64().unwrap();
            let f = |k: &str| {
                c[k].as_f64()
                    .unwrap_or_else(|| panic!("{profile} {layer}: no {k} in {c}"))
            };
            assert!(
                c["messages"].as_u64().unwrap() >= 2,
                "{profile} {layer}: {c}"
            );
            // Every message crosses the NIC in at least one packet and is copied at least
            // once (into a packet buffer, or by single copy), all its bytes.
            assert!(f("packets_per_msg") >= 1.0, "{profile} {layer}: {c}");
            assert!(f("copies_per_msg") >= 1.0, "{profile} {layer}: {c}");
            assert!(f("bytes_copied_per_msg") >= size, "{profile} {layer}: {c}");
            if !layer.starts_with("mpi-") {
                // Counted in the loop itself (an MPI layer's are a run minus an empty run, in
                // which timing-dependent counts such as stalls may differ either way).
                assert!(f("stalls_per_msg") >= 0.0, "{profile} {layer}: {c}");
            }
        }
        // A 64 KiB message: the raw NIC cuts it into packets; BIP and MPI over BIP move it by
        // single copy.
        let big = &counters[1];
        if *layer == "nic" {
            assert!(
                big["packets_per_msg"].as_f64().unwrap() > 1.0,
                "{profile}: {big}"
            );
        } else {
            assert!(
                big["dma_per_msg"].as_f64().unwrap() >= 0.5,
                "{profile} {layer}: {big}"
            );
        }
    }
}

/// The files under `dir` (at any depth) whose name ends in `.ext`.
fn files_with_extension(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().filter_map(|e| e.ok()) {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files_with_extension(&path, ext));
        } else if path.extension().is_some_and(|e| e == ext) {
            found.push(path);
        }
    }
    found
}

#[test]
fn short_sweep_writes_the_report_for_two_profiles() {
    let dir = scratch("report");
    let out = common::command("layers")
        .args([
            "--layers",
            &LAYERS.join(","),
            "--profile",
            &PROFILES.join(","),
        ])
        .args([
            "--sizes",
            "8,65536",
            "--iters",
            "50",
            "--counter-sizes",
            "8,65536",
            "--counter-round-trips",
            "6",
            "--no-bind",
        ])
        .arg("--report")
        .arg(&dir)
        .output()
        .expect("running layers");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        out.status.success(),
        "layers failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(
        stderr.contains("note: 50 round trips per latency figure"),
        "the short-run note is missing: {stderr}"
    );
    assert!(stdout.contains("counters per message"), "{stdout}");
    for profile in PROFILES {
        check_document(
            &read_json(&dir.join(format!("layers-{profile}.json"))),
            profile,
        );
    }
    let report = dir.join("report.md");
    let md = std::fs::read_to_string(&report)
        .unwrap_or_else(|e| panic!("no {}: {e}\nstdout:\n{stdout}", report.display()));
    assert!(!md.trim().is_empty(), "report.md is empty");
    for ext in ["svg", "png"] {
        let plots = files_with_extension(&dir, ext);
        assert!(!plots.is_empty(), "no .{ext} plot in {}", dir.display());
        for p in plots {
            assert!(
                std::fs::metadata(&p).unwrap().len() > 0,
                "{} is empty",
                p.display()
            );
        }
    }
}

#[test]
fn mpi_counters_dump_of_a_c_program() {
    let dir = scratch("dump");
    let exe = dir.join("mpi_pingpong");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("c/mpi_pingpong.c");
    let st = common::command("mpicc")
        .args(["-O2", "-Wall", "-Wextra", "-o"])
        .arg(&exe)
        .arg(&src)
        .status()
        .expect("running mpicc");
    assert!(st.success(), "mpicc failed on {}", src.display());
    for channel in ["bip", "fm1"] {
        let base = dir.join(format!("counters-{channel}"));
        let st = common::command("mpirun")
            .args(["-n", "2", "--channel", channel])
            .arg(&exe)
            .args(["--sizes", "1024", "--roundtrips", "20"])
            .env("MPI_COUNTERS", &base)
            .status()
            .expect("running mpirun");
        assert!(st.success(), "the counted run over {channel} failed");
        for rank in 0..2u64 {
            let v = read_json(Path::new(&format!("{}.{rank}.json", base.display())));
            assert_eq!(v["channel_name"], channel, "{v}");
            assert_eq!(v["rank"], rank, "{v}");
            // Each rank sent and received 20 messages of 1 KiB, one packet each at least.
            let nic = &v["nic"];
            assert!(
                nic["packets_tx"].as_u64().unwrap() >= 20
                    && nic["packets_rx"].as_u64().unwrap() >= 20,
                "{v}"
            );
            assert!(nic["bytes_tx"].as_u64().unwrap() >= 20 * 1024, "{v}");
            let copied: u64 = ["bip", "fm", "channel", "adi"]
                .iter()
                .map(|p| v[p]["bytes_copied"].as_u64().unwrap_or(0))
                .sum();
            // Into a packet buffer and out of it, at least, for every message both ways.
            assert!(copied >= 2 * 20 * 1024, "{v}");
            match channel {
                "bip" => assert!(
                    v["fm"].is_null() && v["channel"]["copies"].as_u64().unwrap() >= 20,
                    "{v}"
                ),
                // FM 1.x stages envelope and data into one buffer for every send.
                _ => assert!(
                    v["fm"]["messages_sent"].as_u64().unwrap() >= 20
                        && v["channel"]["bytes_copied"].as_u64().unwrap() >= 20 * 1024,
                    "{v}"
                ),
            }
        }
    }
}
