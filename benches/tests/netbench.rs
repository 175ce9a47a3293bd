//! `netbench` end to end: a quick round of the side-by-side between two network namespace
//! hosts at small sizes (8 B latency, 64 KiB bandwidth), core-bound placement, with every
//! library installed here. Checks that the table and its ratios are printed and that
//! `netbench.json` holds a positive median for every library and both benchmarks.
//!
//! Where network namespaces cannot be made (not root, a sandbox), `netbench` says so and exits
//! with status 77: the test prints the reason and passes.

mod common;

use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// `netbench`'s status when namespaces cannot be made.
const SKIPPED: i32 = 77;

fn on_path(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn quick_round_across_two_namespace_hosts() {
    if !on_path("mpiexec.hydra") {
        eprintln!("skipped: mpiexec.hydra (MPICH) is needed to start our ranks across the hosts");
        return;
    }
    let mut libs = vec!["ours", "mpich"];
    if on_path("mpirun.openmpi") && on_path("mpicc.openmpi") {
        libs.push("openmpi");
    } else {
        eprintln!("Open MPI not installed: comparing ours and MPICH only");
    }
    let out = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("netbench-quick-{}", std::process::id()));
    let result = common::command("netbench")
        .args(["--quick", "--repeat", "1", "--bind", "core"])
        .args(["--latency-sizes", "8", "--bw-sizes", "65536"])
        .args(["--libs", &libs.join(",")])
        .arg("--out")
        .arg(&out)
        .output()
        .expect("netbench starts");
    let stdout = String::from_utf8_lossy(&result.stdout);
    let stderr = String::from_utf8_lossy(&result.stderr);
    if result.status.code() == Some(SKIPPED) {
        eprintln!("skipped: {}", stdout.trim());
        return;
    }
    assert!(
        result.status.success(),
        "netbench failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("placement core"), "{stdout}");
    assert!(stdout.contains("ours/mpich"), "{stdout}");

    let path = out.join("netbench.json");
    let text = std::fs::read_to_string(&path).expect("netbench.json written");
    let doc: Value = serde_json::from_str(&text).expect("netbench.json is JSON");
    let rows = doc["placements"]["core"]["comparison"]["rows"]
        .as_array()
        .unwrap_or_else(|| panic!("no rows for the core placement: {doc}"));
    let found: Vec<(String, u64)> = rows
        .iter()
        .map(|r| {
            (
                r["benchmark"].as_str().unwrap_or("").to_string(),
                r["size"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(
        found,
        [("latency".to_string(), 8), ("bw".to_string(), 65536)],
        "{doc}"
    );
    for row in rows {
        for lib in &libs {
            let v = row["medians"][lib].as_f64().unwrap_or(-1.0);
            assert!(v > 0.0 && v.is_finite(), "{lib}: {v} in {row}");
        }
        for other in libs.iter().filter(|l| **l != "ours") {
            let r = row["ratios"][other].as_f64().unwrap_or(-1.0);
            assert!(r > 0.0 && r.is_finite(), "ours/{other}: {r} in {row}");
        }
    }
    let per_round = &doc["placements"]["core"]["per_round_ratios"];
    for key in ["latency 8", "bw 65536"] {
        let r = per_round[key]["mpich"].as_f64().unwrap_or(-1.0);
        assert!(r > 0.0 && r.is_finite(), "{key}: {per_round}");
    }
    let _ = std::fs::remove_dir_all(&out);
}
