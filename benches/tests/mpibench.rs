//! `mpibench` end to end: builds `mpibench.c` with our `mpicc` (and MPICH's when installed),
//! runs every benchmark in quick mode on two sizes at both placements, and checks that the
//! tables and the JSON hold a positive figure for every placement, benchmark, size and library,
//! and a ratio when MPICH ran; a quick round of the one-sided benchmarks under MPICH; and a
//! library whose `mpicc` cannot build them (a stand-in) still running its other benchmarks.

mod common;

use std::path::Path;
use std::process::Command;

const PLACEMENTS: [&str; 2] = ["default", "bound"];

/// One `mpibench` at a time in this test binary: the tests run on threads of one process, and
/// two jobs of spinning MPICH ranks on this machine's 2 cores stall each other for whole
/// scheduler time slices (milliseconds where microseconds are expected).
fn one_job_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static JOBS: std::sync::Mutex<()> = std::sync::Mutex::new(());
    JOBS.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

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
    let _alone = one_job_at_a_time();
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

/// The one-sided benchmarks, as `--benchmarks rma` names them.
const ONE_SIDED: [&str; 7] = [
    "put_lat", "get_lat", "acc_lat", "fop_lat", "cas_lat", "put_bw", "get_bw",
];

#[test]
fn quick_one_sided_round_for_mpich_checks_every_row() {
    if !mpich_installed() {
        eprintln!(
            "skipped: mpicc.mpich or mpirun.mpich not installed (scripts/install-deps installs MPICH)"
        );
        return;
    }
    let _alone = one_job_at_a_time();
    let out =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("mpibench-rma-{}", std::process::id()));
    let result = common::command("mpibench")
        .args([
            "--quick",
            "--libs",
            "mpich",
            "--benchmarks",
            "rma",
            "--sizes",
            "8,65536",
            "--placement",
            "bound",
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
    assert!(
        stdout.contains("MPI_Win_allocate") && stdout.contains("MPI_Barrier"),
        "the table says how the one-sided rows were measured:\n{stdout}"
    );
    assert!(
        out.join("build").join("mpibench-rma-mpich").is_file(),
        "the RMA build has its own executable"
    );
    assert!(
        !out.join("build").join("mpibench-mpich").exists(),
        "no base build when only one-sided benchmarks are asked for"
    );

    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("mpibench.json")).expect("mpibench.json written"),
    )
    .expect("mpibench.json is JSON");
    let runs = json["runs"].as_array().expect("runs");
    assert_eq!(
        runs.len(),
        ONE_SIDED.len(),
        "one run per benchmark: {runs:?}"
    );
    let rows = json["rows"].as_array().expect("rows");
    for benchmark in ONE_SIDED {
        let of: Vec<&serde_json::Value> = rows
            .iter()
            .filter(|r| r["benchmark"] == benchmark)
            .collect();
        // The atomics move one MPI_LONG whatever --sizes says; the others run both sizes.
        let sizes: &[u64] = if matches!(benchmark, "fop_lat" | "cas_lat") {
            &[8]
        } else {
            &[8, 65536]
        };
        let got: Vec<u64> = of.iter().map(|r| r["size"].as_u64().unwrap()).collect();
        assert_eq!(got, sizes, "{benchmark} rows");
        let bandwidth = benchmark.ends_with("_bw");
        for row in of {
            assert_eq!(row["placement"], "bound", "{row}");
            assert_eq!(row["np"], 2, "{row}");
            assert_eq!(row["unit"], if bandwidth { "MB/s" } else { "us" }, "{row}");
            assert_eq!(row["lower_is_better"], !bandwidth, "{row}");
            let median = row["medians"]["mpich"].as_f64().unwrap();
            assert!(median > 0.0 && median.is_finite(), "{row}");
        }
    }
    let _ = std::fs::remove_dir_all(&out);
}

/// A tools directory like [`common::tools_dir`] whose `mpicc` refuses the RMA build, as the
/// compiler of a library without MPI-3 RMA does; everything else is the real thing.
fn tools_without_rma() -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let real = common::tools_dir();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("benches-tools-no-rma-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("tools directory");
    for file in ["mpibench", "mpirun", "mpiexec", "libmpi.so"] {
        std::fs::copy(real.join(file), dir.join(file)).expect("copy a tool");
    }
    std::fs::copy(real.join("mpicc"), dir.join("mpicc-real")).expect("copy mpicc");
    for alias in ["libmpi.so.12", "libmpich.so.12", "libmpich.so"] {
        std::os::unix::fs::symlink("libmpi.so", dir.join(alias)).expect("library alias");
    }
    let script = "#!/bin/sh\n\
        for a in \"$@\"; do\n\
          if [ \"$a\" = -DMPIBENCH_RMA ]; then\n\
            echo 'mpibench.c:1:1: error: unknown type name MPI_Win (stand-in for an mpi.h without RMA)' >&2\n\
            exit 1\n\
          fi\n\
        done\n\
        exec \"$(dirname \"$0\")/mpicc-real\" \"$@\"\n";
    let mpicc = dir.join("mpicc");
    std::fs::write(&mpicc, script).expect("write mpicc");
    std::fs::set_permissions(&mpicc, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    dir
}

#[test]
fn a_library_without_rma_still_runs_its_other_benchmarks() {
    let _alone = one_job_at_a_time();
    let dir = tools_without_rma();
    let out = dir.join("out");
    let result = Command::new(dir.join("mpibench"))
        .env("LD_LIBRARY_PATH", &dir)
        .args([
            "--quick",
            "--libs",
            "ours",
            "--benchmarks",
            "latency,put_lat,barrier",
            "--sizes",
            "8",
            "--placement",
            "bound",
            "--out",
        ])
        .arg(&out)
        .output()
        .expect("mpibench starts");
    let stdout = String::from_utf8_lossy(&result.stdout);
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(
        result.status.code(),
        Some(1),
        "the one-sided runs count as failed, the others ran:\n{stdout}\n{stderr}"
    );
    assert!(
        stderr.contains("ours: the one-sided benchmarks cannot run")
            && stderr.contains("needs MPI-3 RMA")
            && stderr.contains("unknown type name MPI_Win"),
        "a clear message with the compiler's error:\n{stderr}"
    );
    assert!(stderr.contains("put_lat ours (not built)"), "{stderr}");
    assert!(
        out.join("build").join("mpibench-rma-ours.log").is_file(),
        "the compiler's output is kept"
    );
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("mpibench.json")).expect("mpibench.json written"),
    )
    .expect("mpibench.json is JSON");
    let ran: Vec<&str> = json["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .map(|r| r["benchmark"].as_str().unwrap())
        .collect();
    assert_eq!(ran, ["latency", "barrier"]);
    for row in json["rows"].as_array().expect("rows") {
        assert!(row["medians"]["ours"].as_f64().unwrap() > 0.0, "{row}");
    }
    let notes = json["notes"].as_array().expect("the JSON carries the note");
    assert!(
        notes[0]
            .as_str()
            .unwrap()
            .contains("did not build the one-sided benchmarks"),
        "{notes:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
