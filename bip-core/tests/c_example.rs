//! The C interface end to end: the C example `examples-c/pingpong.c` (the `bip-c-example`
//! binary) as the ranks of a real job, over single copy and over the packet fallback, and
//! started outside any job.

use nic_model::JobOutcome;
use std::path::PathBuf;
use std::process::{Command, Stdio};

const EXE: &str = env!("CARGO_BIN_EXE_bip-c-example");

/// Runs the example as `n` ranks with extra environment `env`; returns how the job ended and
/// each rank's (stdout, stderr).
fn run_example(n: usize, env: &[(&str, &str)]) -> (JobOutcome, Vec<(String, String)>) {
    nic_model::testing::run_program(std::path::Path::new(EXE), n, env)
}

fn assert_example_passes(env: &[(&str, &str)]) {
    let (outcome, logs) = run_example(2, env);
    let report = || {
        logs.iter()
            .enumerate()
            .map(|(r, (o, e))| {
                format!(
                    "---- rank {r} ({:?})\nstdout:\n{o}\nstderr:\n{e}",
                    outcome.exits[r]
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(
        outcome.success(),
        "the C example failed: {outcome:?}\n{}",
        report()
    );
    assert!(
        logs[0].0.contains("bip c example: OK"),
        "rank 0 did not report success\n{}",
        report()
    );
}

#[test]
fn c_example_runs_as_a_two_rank_job() {
    assert_example_passes(&[]);
}

#[test]
fn c_example_runs_over_the_packet_fallback() {
    assert_example_passes(&[("MPI_NIC_DMA", "off")]);
}

#[test]
fn c_example_outside_a_job_fails_with_a_clear_message() {
    let mut cmd = Command::new(EXE);
    for var in [
        nic_model::fabric::env::FABRIC_FD,
        nic_model::fabric::env::RANK,
        nic_model::fabric::env::JOB_KEY,
    ] {
        cmd.env_remove(var);
    }
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .expect("running the example");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(1),
        "expected exit status 1, not a crash or signal: {:?}\nstderr:\n{stderr}",
        out.status
    );
    let explained = stderr
        .lines()
        .filter(|l| l.starts_with("bip_init: not started by a job launcher"))
        .count();
    assert_eq!(
        explained, 1,
        "bip_init must explain the failure exactly once:\n{stderr}"
    );
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("OK"),
        "no success may be reported"
    );
}

/// The header is clean C and C++, and the example compiles warning-free, where a compiler is
/// installed (`build.rs` compiles it in any case).
#[test]
fn header_and_example_compile_cleanly() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    nic_model::testing::check_c_interface(&dir.join("include"), &dir.join("examples-c/pingpong.c"), &dir.join("include/bip.h"));
}
