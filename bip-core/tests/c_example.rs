//! The C interface end to end: the C example `examples-c/pingpong.c` (the `bip-c-example`
//! binary) as the ranks of a real job, over single copy and over the packet fallback, and
//! started outside any job.

use std::path::{Path, PathBuf};

const EXE: &str = env!("CARGO_BIN_EXE_bip-c-example");

fn assert_example_passes(env: &[(&str, &str)]) {
    nic_model::testing::assert_program_succeeds(Path::new(EXE), 2, env, "bip c example: OK");
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
    let out = nic_model::testing::run_outside_job(Path::new(EXE));
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
    nic_model::testing::check_c_interface(
        &dir.join("include"),
        &dir.join("examples-c/pingpong.c"),
        &dir.join("include/bip.h"),
    );
}
