//! Command lines of MPICH's Hydra for the tests: loopback "hosts" in this namespace, or
//! network-namespace hosts.

use mpi_staging::netns::{Hosts, INTERFACE};
use std::path::Path;
use std::process::Command;

/// Who ends the job after a rank ends abnormally.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cleanup {
    /// Hydra's default: it kills every process as soon as one ends abnormally.
    Launcher,
    /// `-disable-auto-cleanup`, and every rank under `sh` that ignores `SIGUSR1` and passes
    /// the program's status on as an exit status (see the crate documentation): the ranks
    /// left end by themselves, through what the library tells them.
    ByTheRanks,
}

/// One group of ranks with the same environment (Hydra's `-n N -env K V ... : ...`).
#[derive(Clone, Debug)]
pub struct Section {
    pub ranks: usize,
    pub env: Vec<(String, String)>,
}

impl Section {
    pub fn new(ranks: usize, env: &[(&str, &str)]) -> Section {
        Section {
            ranks,
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }
}

/// The two loopback hosts of the issue: two ranks each, host ids a and b, on 127.0.0.2 and
/// 127.0.0.3.
pub fn two_loopback_hosts() -> Vec<Section> {
    vec![
        Section::new(2, &[("MPI_HOST_ID", "a"), ("MPI_NET_ADDR", "127.0.0.2")]),
        Section::new(2, &[("MPI_HOST_ID", "b"), ("MPI_NET_ADDR", "127.0.0.3")]),
    ]
}

/// Appends the sections, each running `program args`, to `command`.
fn add_sections(
    command: &mut Command,
    sections: &[Section],
    cleanup: Cleanup,
    program: &Path,
    args: &[&str],
) {
    for (i, section) in sections.iter().enumerate() {
        if i > 0 {
            command.arg(":");
        }
        command.args(["-n", &section.ranks.to_string()]);
        for (k, v) in &section.env {
            command.args(["-env", k, v]);
        }
        if cleanup == Cleanup::ByTheRanks {
            command.args(["/bin/sh", "-c", "trap '' USR1; \"$0\" \"$@\"; exit $?"]);
        }
        command.arg(program).args(args);
    }
}

/// Global options every job gets: the library of this build for the ranks, and Hydra's own
/// time limit as a second guard.
fn common(command: &mut Command, cleanup: Cleanup) {
    command
        .env("LD_LIBRARY_PATH", crate::common::library_dir())
        .env("MPIEXEC_TIMEOUT", crate::JOB_GUARD.as_secs().to_string());
    if cleanup == Cleanup::ByTheRanks {
        command.arg("-disable-auto-cleanup");
    }
}

/// Hydra in this namespace running `sections` of `program args` (ranks numbered in order).
pub fn loopback(sections: &[Section], cleanup: Cleanup, program: &Path, args: &[&str]) -> Command {
    let mut command = Command::new("mpiexec.hydra");
    common(&mut command, cleanup);
    add_sections(&mut command, sections, cleanup, program, args);
    command
}

/// Hydra in host 0 running `sections` of `program args` with `per_host` ranks on each host
/// of `hosts`, in order (ranks 0..per_host on host 0, ...), over the hosts' interface.
pub fn across(
    hosts: &Hosts,
    per_host: usize,
    sections: &[Section],
    cleanup: Cleanup,
    program: &Path,
    args: &[&str],
) -> Command {
    let slots: Vec<String> = (0..hosts.len())
        .map(|i| format!("{}:{per_host}", hosts.addr(i)))
        .collect();
    let mut command = hosts.command_in(0, "mpiexec.hydra");
    common(&mut command, cleanup);
    command
        .args(["-launcher", "ssh", "-launcher-exec"])
        .arg(hosts.launcher_exec())
        .args(["-iface", INTERFACE])
        .args(["-hosts", &slots.join(",")]);
    add_sections(&mut command, sections, cleanup, program, args);
    command
}

/// `n` ranks with nothing set: each host's ranks share it, as on real hosts.
pub fn plain(n: usize) -> Vec<Section> {
    vec![Section::new(n, &[])]
}
