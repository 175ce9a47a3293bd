//! The `vmmc` layer of `layers`: a short sweep of `nic,vmmc` under the native and a modeled
//! profile, written as a report. Figures are not judged (the machine is shared and noisy);
//! what is checked is that the vmmc rows exist with positive figures, that the share of the
//! NIC is in the JSON and in the report beside the paper's 98%, and that the counters show
//! what VMMC does: one single copy per update, no packet.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const PROFILES: &[&str] = &["native", "myrinet-lanai4"];

fn scratch() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("layers-vmmc-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

fn check_document(doc: &Value, profile: &str) {
    assert_eq!(doc["profile"], profile);
    for layer in ["nic", "vmmc"] {
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
        assert!(
            doc["summary"][layer]["peak_bandwidth_mb_s"]
                .as_f64()
                .unwrap()
                > 0.0,
            "{profile} {layer}"
        );
    }
    // The share of the NIC, beside the paper's and the figures.
    let share = &doc["vmmc"];
    assert_eq!(share["of"], "nic", "{share}");
    assert_eq!(share["paper_share"], 0.98, "{share}");
    assert_eq!(share["target_share"], 0.95, "{share}");
    assert!(share["target_met"].is_boolean(), "{share}");
    let shares = share["shares"].as_array().expect("shares");
    assert_eq!(shares.len(), 2, "{share}");
    for s in shares {
        assert!(s["bandwidth_share"].as_f64().unwrap() > 0.0, "{s}");
        assert!(s["latency_share"].as_f64().unwrap() > 0.0, "{s}");
    }
    // One single copy per update, no packets: VMMC's data never goes through the inboxes.
    let counters = doc["counters"]["vmmc"].as_array().expect("vmmc counters");
    assert_eq!(counters.len(), 2, "{counters:?}");
    for c in counters {
        let f = |k: &str| c[k].as_f64().unwrap_or_else(|| panic!("no {k} in {c}"));
        assert!((f("dma_per_msg") - 1.0).abs() < 1e-9, "{profile}: {c}");
        assert_eq!(f("packets_per_msg"), 0.0, "{profile}: {c}");
        assert!(
            f("bytes_copied_per_msg") >= c["size"].as_f64().unwrap(),
            "{c}"
        );
    }
}

#[test]
fn nic_and_vmmc_short_sweep() {
    let dir = scratch();
    let out = Command::new(env!("CARGO_BIN_EXE_layers"))
        .args(["--layers", "nic,vmmc", "--profile", &PROFILES.join(",")])
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
    assert!(stdout.contains("vmmc as a share of nic"), "{stdout}");
    assert!(
        stdout.contains("target: vmmc keeps >= 95% of nic's bandwidth from 64 KiB up"),
        "{stdout}"
    );
    for profile in PROFILES {
        check_document(
            &read_json(&dir.join(format!("layers-{profile}.json"))),
            profile,
        );
    }
    let md = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(
        md.contains("VMMC's deliberate update as a share of the NIC") && md.contains("| 98% |"),
        "the report lacks the vmmc share:\n{md}"
    );
    assert!(
        std::fs::read_to_string(dir.join("efficiency-native.svg"))
            .expect("the efficiency chart")
            .contains("98% of the hardware limit"),
        "the paper's 98% is not drawn beside vmmc / nic"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
