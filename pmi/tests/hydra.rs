//! The client under MPICH's real Hydra (`mpiexec.hydra`, Debian package `mpich`): the
//! example `pmi_check` started as 4 ranks puts, fences and gets every rank's value, over
//! PMI-1 (Hydra's default) and over PMI-2 (which Hydra speaks to clients that ask for it);
//! and a PMI-1 abort ends the job with its code. Skipped, saying why, without Hydra.

mod common;

use common::{example, in_path, ChildGuard};
use std::process::{Command, Stdio};

fn hydra() -> Option<std::path::PathBuf> {
    let found = in_path("mpiexec.hydra");
    if found.is_none() {
        eprintln!("skipped: mpiexec.hydra is not installed (Debian package mpich)");
    }
    found
}

fn run(
    hydra: &std::path::Path,
    version: Option<&str>,
    n: usize,
    args: &[&str],
) -> (i32, String, String) {
    let mut command = Command::new(hydra);
    command
        .arg("-n")
        .arg(n.to_string())
        .arg(example("pmi_check"))
        .args(args)
        .env_remove("MPI_PMI_VERSION")
        .env_remove("PMI_FD")
        .env_remove("PMI_PORT")
        .env_remove("PMI_JOBID")
        .env("MPI_PMI_TIMEOUT", "15")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(version) = version {
        command.env("MPI_PMI_VERSION", version);
    }
    let (status, out, err) = ChildGuard::spawn(&mut command).finish();
    (status.code().unwrap_or(-1), out, err)
}

fn check_four_ranks(version: Option<&str>, protocol: &str) {
    let Some(hydra) = hydra() else { return };
    let (status, out, err) = run(&hydra, version, 4, &[]);
    assert_eq!(status, 0, "{out}{err}");
    let mut lines: Vec<&str> = out.lines().collect();
    lines.sort();
    assert_eq!(lines.len(), 4, "{out}");
    for (rank, line) in lines.iter().enumerate() {
        assert!(
            line.starts_with(&format!("pmi_check: rank {rank} of 4 ok ({protocol}, kvs ")),
            "{line}"
        );
        assert!(line.contains("mapping (vector,"), "{line}");
    }
}

#[test]
fn four_ranks_under_hydra_over_pmi1() {
    check_four_ranks(None, "PMI-1");
}

#[test]
fn four_ranks_under_hydra_over_pmi2() {
    check_four_ranks(Some("2"), "PMI-2");
}

#[test]
fn a_pmi1_abort_ends_the_hydra_job_with_its_code() {
    let Some(hydra) = hydra() else { return };
    let (status, out, err) = run(&hydra, None, 3, &["abort", "1", "7"]);
    assert_eq!(status, 7, "{out}{err}");
}
