//! `mpibench` end to end: builds `mpibench.c` with our `mpicc` (and MPICH's when installed),
//! runs every benchmark in quick mode on two sizes at both placements, and checks that the
//! tables and the JSON hold a positive figure for every placement, benchmark, size and library,
//! and a ratio when MPICH ran.

mod common;

use std::path::Path;
use std::process::Command;

const PLACEMENTS: [&str; 2] = ["default", "bound"];

const BENCHMARKS: [&str; 8] = [
    "latency",
    "bw",
    "bibw",
    "multibw",
    "allreduce",
    "bcast",
    "alltoall",
    "barrier",
];

fn mpich_installed() -> bool {
    Command::new("sh")
        .args(["-c", "command -v mpicc.mpich && command -v mpirun.mpich"])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn quick_run_reports_every_benchmark_with_positive_figures() {
    let mut libs = vec!["ours"];
    if mpich_installed() {
        libs.push("mpich");
    } else {
        eprintln!(
            "mpicc.mpich not installed: comparing ours only (scripts/install-deps installs MPICH)"
        );
    }
    let out = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("mpibench-quick-{}", std::process::id()));
    let result = common::command("mpibench")
        .args([
            "--quick",
            "--sizes",
            "8,4096",
            "--libs",
            &libs.join(","),
            "--out",
        ])
        .arg(&out)
        .output()
        .expect("mpibench starts");
    let stdout = String::from_utf8_lossy(&result.stdout);
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(
        result.status.success(),
        "mpibench failed:\n{stdout}\n{stderr}"
    );

    let table = std::fs::read_to_string(out.join("mpibench.md")).expect("mpibench.md written");
    assert!(
        stdout.contains(table.lines().next().unwrap()),
        "the table is printed too"
    );
    for benchmark in BENCHMARKS {
        let rows: Vec<&str> = table
            .lines()
            .filter(|l| l.starts_with(&format!("| {benchmark} |")))
            .collect();
        let expected = PLACEMENTS.len() * if benchmark == "barrier" { 1 } else { 2 };
        assert_eq!(
            rows.len(),
            expected,
            "{benchmark} rows in the table:\n{table}"
        );
        for row in rows {
            let cells: Vec<&str> = row
                .split('|')
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .collect();
            // benchmark, np, size, unit, one median per library, one ratio per other library.
            assert_eq!(
                cells.len(),
                4 + libs.len() + (libs.len() - 1),
                "cells of {row:?}"
            );
            for cell in &cells[4..] {
                let number: f64 = cell
                    .trim_end_matches(" !")
                    .parse()
                    .unwrap_or_else(|_| panic!("{cell:?} in {row:?}"));
                assert!(number > 0.0, "non-positive figure in {row:?}");
            }
        }
    }

    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("mpibench.json")).expect("mpibench.json written"),
    )
    .expect("mpibench.json is JSON");
    let runs = json["runs"].as_array().expect("runs");
    assert_eq!(
        runs.len(),
        PLACEMENTS.len() * BENCHMARKS.len() * libs.len(),
        "one run per placement, benchmark and library"
    );
    for (placement, benchmark) in PLACEMENTS
        .iter()
        .flat_map(|p| BENCHMARKS.iter().map(move |b| (*p, *b)))
    {
        for lib in &libs {
            let run = runs
                .iter()
                .find(|r| {
                    r["placement"] == placement
                        && r["benchmark"] == benchmark
                        && r["library"] == *lib
                })
                .unwrap_or_else(|| panic!("no {lib} {benchmark} {placement} run in the JSON"));
            let results = run["results"].as_array().expect("results");
            assert!(!results.is_empty(), "{lib} {benchmark} has results");
            for m in results {
                assert!(m["value"].as_f64().unwrap() > 0.0, "{lib} {benchmark}: {m}");
                assert!(m["samples"].as_u64().unwrap() > 0, "{lib} {benchmark}: {m}");
            }
        }
    }
    let rows = json["rows"].as_array().expect("rows");
    assert_eq!(
        rows.len(),
        PLACEMENTS.len() * (2 * (BENCHMARKS.len() - 1) + 1)
    );
    for row in rows {
        for lib in &libs {
            assert!(row["medians"][lib].as_f64().unwrap() > 0.0, "{row}");
        }
        if libs.contains(&"mpich") {
            assert!(row["ratios"]["mpich"].as_f64().unwrap() > 0.0, "{row}");
        }
    }
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn unknown_library_is_refused_with_the_choices() {
    let result = common::command("mpibench")
        .args(["--libs", "lam"])
        .output()
        .expect("mpibench starts");
    assert!(!result.status.success());
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(stderr.contains("ours, mpich, openmpi"), "{stderr}");
}
