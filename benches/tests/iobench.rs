//! `iobench` end to end: builds `iobench.c` with our `mpicc`, runs the four MPI-IO benchmarks
//! at tiny sizes (`--quick`) under our library in one directory at one placement, and checks
//! that the report and the JSON hold a positive figure for every one (the programs check the
//! data they wrote and read themselves, so a run that succeeds moved the right bytes), and
//! that the run's files are gone afterwards.

mod common;

use std::path::Path;

/// The figures of the four benchmarks, in the order of the table.
const FIGURES: [&str; 6] = [
    "btio_write",
    "btio_read",
    "strided_write",
    "write_at_64m",
    "pwrite_64m",
    "write_at_over_pwrite",
];

#[test]
fn quick_run_under_ours_reports_every_figure_and_leaves_no_file() {
    let base = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("iobench-quick-{}", std::process::id()));
    let files = base.join("files");
    let out = base.join("out");
    std::fs::create_dir_all(&files).expect("files directory");
    let result = common::command("iobench")
        .args([
            "--quick",
            "--libs",
            "ours",
            "--placement",
            "bound",
            "--grid",
            "12",
            "--blocks",
            "8",
            "--block",
            "1000",
            "--mib",
            "1",
            "--dir",
        ])
        .arg(&files)
        .arg("--out")
        .arg(&out)
        .output()
        .expect("iobench starts");
    let stdout = String::from_utf8_lossy(&result.stdout);
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(
        result.status.success(),
        "iobench failed:\n{stdout}\n{stderr}"
    );

    let report = std::fs::read_to_string(out.join("iobench.md")).expect("iobench.md written");
    assert!(
        report.starts_with("# MPI-IO benchmarks"),
        "the report's title:\n{report}"
    );
    assert!(
        report.contains("Sync outside (after) the timed region"),
        "{report}"
    );
    for figure in FIGURES {
        let row = report
            .lines()
            .find(|l| l.starts_with(&format!("| {figure} |")))
            .unwrap_or_else(|| panic!("no {figure} row in:\n{report}"));
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        // "", figure, np, bytes, unit, ours, "".
        let value: f64 = cells[5].parse().unwrap_or_else(|_| panic!("{row:?}"));
        assert!(value > 0.0, "{row}");
    }
    assert!(
        report.contains("MPI_File_write_at against pwrite"),
        "the write_at verdict:\n{report}"
    );

    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("iobench.json")).expect("iobench.json written"),
    )
    .expect("iobench.json is JSON");
    let runs = json["runs"].as_array().expect("runs");
    let ran: Vec<(&str, u64)> = runs
        .iter()
        .map(|r| (r["benchmark"].as_str().unwrap(), r["np"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        ran,
        [
            ("btio_write", 4),
            ("btio_read", 4),
            ("strided_write", 4),
            ("write_at_64m", 1)
        ]
    );
    let rows = json["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), FIGURES.len());
    for (row, figure) in rows.iter().zip(FIGURES) {
        assert_eq!(row["figure"], figure, "{row}");
        assert_eq!(row["placement"], "bound", "{row}");
        assert!(row["medians"]["ours"].as_f64().unwrap() > 0.0, "{row}");
    }
    // btio: 12^3 doubles a step; strided: 4 ranks x 8 blocks x 1000 B; write_at: 1 MiB.
    let bytes: Vec<u64> = rows.iter().map(|r| r["bytes"].as_u64().unwrap()).collect();
    assert_eq!(bytes, [13824, 13824, 32000, 1048576, 1048576, 1048576]);
    assert_eq!(json["dirs"][0]["path"], files.display().to_string());

    let left: Vec<_> = std::fs::read_dir(&files)
        .expect("files directory still there")
        .collect();
    assert!(left.is_empty(), "files left behind: {left:?}");
    let _ = std::fs::remove_dir_all(&base);
}

#[test]
fn missing_directory_is_refused() {
    let result = common::command("iobench")
        .args(["--libs", "ours", "--dir", "/nonexistent/iobench"])
        .output()
        .expect("iobench starts");
    assert_eq!(result.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(stderr.contains("not a directory"), "{stderr}");
}
