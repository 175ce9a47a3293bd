//! The `nas` runner, end to end: it builds the NAS kernels with our `mpicc`, runs them under
//! our `mpirun` and every kernel's class S verifies at 1, 2 and 4 ranks; a kernel that fails,
//! crashes or is missing is reported as such; bad usage is refused clearly; and
//! `--fabric-memory` measures real jobs.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

const KERNELS: [&str; 5] = ["ep", "is", "cg", "mg", "ft"];

fn sources() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("nas")
}

fn nas(args: &[&str]) -> Output {
    common::command("nas")
        .args(args)
        .output()
        .expect("the nas runner starts")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn class_s_verifies_for_every_kernel_at_1_2_and_4_ranks() {
    // All five are required once they all exist; until then, the ones present.
    let present: Vec<&str> = KERNELS
        .iter()
        .copied()
        .filter(|k| sources().join(format!("{k}.c")).is_file())
        .collect();
    assert!(
        present.contains(&"ep") && present.contains(&"is"),
        "ep.c and is.c belong to this runner's own suite"
    );
    let list = present.join(",");
    for np in ["1", "2", "4"] {
        let out = nas(&["--class", "S", "--np", np, "--kernels", &list]);
        let stdout = text(&out.stdout);
        assert!(
            out.status.success(),
            "np={np}: nas failed ({})\nstdout:\n{stdout}\nstderr:\n{}",
            out.status,
            text(&out.stderr)
        );
        for kernel in &present {
            let prefix = format!("{} S np={np} VERIFIED ", kernel.to_ascii_uppercase());
            let line = stdout.lines().find(|l| l.starts_with(&prefix));
            let line = line.unwrap_or_else(|| panic!("no `{prefix}...` line in:\n{stdout}"));
            let words: Vec<&str> = line.split_whitespace().collect();
            let seconds: f64 = words[4].parse().expect("a time");
            let mops: f64 = words[6].parse().expect("a rate");
            assert!(
                seconds > 0.0 && mops > 0.0 && words[7] == "Mop/s",
                "odd result line: {line}"
            );
        }
    }
}

#[test]
fn failing_crashing_and_missing_kernels_are_failed() {
    // A private source directory: an `ep` that does not verify, an `is` that crashes, no `cg`.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("nas-bad-kernels-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(sources().join("nas.h"), dir.join("nas.h")).unwrap();
    std::fs::write(
        dir.join("ep.c"),
        "/* A kernel whose verification fails. */\n#include \"nas.h\"\n\
         int main(int argc, char **argv)\n{\n    MPI_Init(&argc, &argv);\n    char c = nas_class(argc, argv, \"ep\", \"S\");\n\
         \x20   int status = nas_report(\"EP\", c, 0, 0.5, 1.0);\n    MPI_Finalize();\n    return status;\n}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("is.c"),
        "/* A kernel that dies before printing its result. */\n#include \"nas.h\"\n\
         int main(int argc, char **argv)\n{\n    MPI_Init(&argc, &argv);\n    (void)argv;\n    abort();\n}\n",
    )
    .unwrap();
    let out = common::command("nas")
        .args(["--class", "S", "--np", "2", "--kernels", "ep,is,cg"])
        .env("NAS_SOURCE_DIR", &dir)
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(
        out.status.code(),
        Some(1),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("EP S np=2 FAILED 0.500 s")),
        "{stdout}"
    );
    assert!(stdout.lines().any(|l| l == "IS S np=2 FAILED"), "{stdout}");
    assert!(
        stderr.contains("IS (ours): printed no result line"),
        "{stderr}"
    );
    assert!(stdout.lines().any(|l| l == "CG S np=2 FAILED"), "{stdout}");
    assert!(stderr.contains("cg.c not found"), "{stderr}");
}

#[test]
fn bad_usage_is_refused_with_a_clear_message() {
    let out = nas(&["--class", "S", "--np", "2", "--kernels", "ep,lu"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("unknown kernel 'lu': choose from ep, is, cg, mg, ft"),
        "{}",
        text(&out.stderr)
    );
    let out = nas(&["--class", "Q", "--np", "2"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("unknown class Q"),
        "{}",
        text(&out.stderr)
    );
    let out = nas(&["--class", "S"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--np"), "{}", text(&out.stderr));
}

#[test]
fn fabric_memory_is_measured_from_running_jobs() {
    let json = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("nas-fabric-{}.json", std::process::id()));
    let out = nas(&[
        "--fabric-memory",
        "--ranks",
        "2,8",
        "--json",
        json.to_str().unwrap(),
    ]);
    let stdout = text(&out.stdout);
    assert!(
        out.status.success(),
        "stdout:\n{stdout}\nstderr:\n{}",
        text(&out.stderr)
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let rows = doc["fabric_memory"].as_array().expect("a list of sizes");
    assert_eq!(rows.len(), 2);
    let mut totals = Vec::new();
    for (row, ranks) in rows.iter().zip([2u64, 8]) {
        assert_eq!(row["ranks"].as_u64(), Some(ranks));
        let segment = row["segment_bytes"].as_u64().unwrap();
        let resident = row["resident_bytes"].as_u64().unwrap();
        // One inbox per rank; resident pages within the segment.
        let stride = row["inbox_stride"].as_u64().expect("the header was read");
        assert!(segment >= ranks * stride && segment % 4096 == 0, "{row}");
        assert!(resident > 0 && resident <= segment, "{row}");
        totals.push(segment);
    }
    assert!(
        totals[1] > 3 * totals[0] && totals[1] < 8 * totals[0],
        "8 ranks need about 4x the memory of 2 (linear): {totals:?}"
    );
    assert!(
        stdout.contains("per-rank bytes") && stdout.contains("inboxes"),
        "{stdout}"
    );
}
