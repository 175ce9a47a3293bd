//! Placement under `mpirun`: `--bind-to auto|core|numa|none` and `--report-bindings`, checked
//! against what the ranks themselves see.
//!
//! The rank program is a small MPI program built with this build's `mpicc`: after `MPI_Init`
//! it asks the kernel for its own affinity (`sched_getaffinity`) and prints
//! `affinity rank=R pid=P cpus=A,B,...`. Each test compares the `--report-bindings` lines
//! (`[HOST:PID] MCW rank R bound to ... (cpu N): MAP`, `... (cpus LIST): MAP`) with those
//! lines, matched by pid. Jobs are run under `taskset` on CPUs this test may use, so that the
//! expected outcome (bound, or oversubscribed) does not depend on the machine's size. Ranks on
//! "other hosts" are started by a launch script that runs the command here (as
//! `tools/tests/mpirun.rs` does); they bind themselves in `MPI_Init` from `MPI_BIND_TO`,
//! `MPI_LOCAL_RANK` and `MPI_LOCAL_SIZE`, and print their own report line.

mod common;
use common::{collect, wait_bounded};
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

/// No job may run longer than this; past it the job is killed and the test fails.
const HARD_LIMIT: Duration = Duration::from_secs(30);

const AFFINITY_C: &str = r#"#define _GNU_SOURCE
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int rank, first = 1;
    cpu_set_t set;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) {
        perror("sched_getaffinity");
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    printf("affinity rank=%d pid=%d cpus=", rank, (int)getpid());
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (CPU_ISSET(cpu, &set)) {
            printf(first ? "%d" : ",%d", cpu);
            first = 0;
        }
    }
    printf("\n");
    MPI_Finalize();
    return 0;
}
"#;

/// A fresh directory for one test, under cargo's scratch area.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("binding-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// This build's `mpicc`, `mpirun` and library staged together, and the rank program built with
/// them (once per test process).
fn tools() -> &'static (PathBuf, PathBuf) {
    static BUILT: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    BUILT.get_or_init(|| {
        let dir = scratch("build");
        mpi_staging::stage_build(&dir, &["mpicc", "mpirun"]);
        std::fs::write(dir.join("affinity.c"), AFFINITY_C).unwrap();
        let output = Command::new(dir.join("mpicc"))
            .current_dir(&dir)
            .args(["-o", "affinity", "affinity.c"])
            .env_remove("MPICH_CC")
            .output()
            .expect("run mpicc");
        assert!(
            output.status.success(),
            "mpicc failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        (dir.join("mpirun"), dir.join("affinity"))
    })
}

/// The CPUs this test process may use (mpirun inherits them).
fn allowed_here() -> Vec<usize> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .expect("Cpus_allowed_list in /proc/self/status");
    parse_list(list.trim())
}

/// A kernel CPU list (`0-3,8`) as numbers.
fn parse_list(text: &str) -> Vec<usize> {
    let mut cpus = Vec::new();
    for part in text.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => cpus.extend(a.parse::<usize>().unwrap()..=b.parse().unwrap()),
            None => cpus.push(part.parse().unwrap()),
        }
    }
    cpus
}

/// A CPU list for `taskset -c`.
fn list_text(cpus: &[usize]) -> String {
    cpus.iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

struct Run {
    status: i32,
    stdout: String,
    stderr: String,
}

/// Runs `mpirun ARGS affinity` under `taskset -c CPUS` (when given), bounded in time.
fn run_job(cpus: Option<&[usize]>, args: &[&str]) -> Run {
    let (mpirun, program) = tools();
    let mut command = match cpus {
        Some(cpus) => {
            let mut c = Command::new("taskset");
            c.arg("-c").arg(list_text(cpus)).arg(mpirun);
            c
        }
        None => Command::new(mpirun),
    };
    command.args(args).arg(program);
    for var in [
        "MPI_CHANNEL",
        "MPI_NIC_PROFILE",
        "MPIEXEC_TIMEOUT",
        "MPI_TRACE",
        "MPI_WIRE",
        "MPI_BIND_TO",
        "MPI_LOCAL_RANK",
        "MPI_LOCAL_SIZE",
        "MPI_REPORT_BINDINGS",
        "PMI_FD",
        "PMI_PORT",
        "PMI_ID",
        "PMI_RANK",
        "PMI_SIZE",
        "MPI_PMI_KEY",
    ] {
        command.env_remove(var);
    }
    finish(command)
}

fn finish(mut command: Command) -> Run {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("start mpirun");
    let stdout = collect(child.stdout.take().unwrap());
    let stderr = collect(child.stderr.take().unwrap());
    let status = wait_bounded(&mut child, HARD_LIMIT).code().unwrap_or(255);
    Run {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

/// One `--report-bindings` line.
#[derive(Debug)]
struct Report {
    pid: u32,
    rank: usize,
    bound: bool,
    /// "core", "numa" or the reason it is not bound.
    how: String,
    cpus: Vec<usize>,
}

/// The report lines of `stderr`, by rank (each rank once).
fn reports(stderr: &str) -> BTreeMap<usize, Report> {
    let mut found = BTreeMap::new();
    for line in stderr.lines() {
        let Some(rest) = line.find("] MCW rank ").map(|i| &line[i..]) else {
            continue;
        };
        let pid: u32 = line[..line.len() - rest.len()]
            .rsplit(':')
            .next()
            .unwrap()
            .parse()
            .unwrap_or_else(|_| panic!("no pid in {line:?}"));
        let words: Vec<&str> = rest.split_whitespace().collect();
        let rank: usize = words[3].parse().unwrap();
        let bound = words[4] == "bound";
        let how = if bound {
            if rest.contains(" numa node ") {
                "numa".to_string()
            } else {
                "core".to_string()
            }
        } else {
            let start = rest.find("not bound (").unwrap() + "not bound (".len();
            let end = rest[start..].find(") (cpus").unwrap() + start;
            rest[start..end].to_string()
        };
        let cpus = if let Some(i) = rest.find("(cpu ") {
            let text = &rest[i + 5..];
            vec![text[..text.find(')').unwrap()].parse().unwrap()]
        } else {
            let i = rest
                .rfind("(cpus ")
                .unwrap_or_else(|| panic!("no cpus in {line:?}"));
            let text = &rest[i + 6..];
            parse_list(&text[..text.find(')').unwrap()])
        };
        let report = Report {
            pid,
            rank,
            bound,
            how,
            cpus,
        };
        assert!(
            found.insert(rank, report).is_none(),
            "rank {rank} reported twice:\n{stderr}"
        );
    }
    found
}

/// What each rank printed about itself: rank -> (pid, cpus).
fn affinities(stdout: &str) -> BTreeMap<usize, (u32, Vec<usize>)> {
    let mut found = BTreeMap::new();
    for line in stdout.lines() {
        let Some(rest) = line.strip_prefix("affinity ") else {
            continue;
        };
        let field = |name: &str| {
            rest.split_whitespace()
                .find_map(|w| w.strip_prefix(name))
                .unwrap_or_else(|| panic!("no {name} in {line:?}"))
        };
        let rank = field("rank=").parse().unwrap();
        let pid = field("pid=").parse().unwrap();
        let cpus = field("cpus=")
            .split(',')
            .map(|c| c.parse().unwrap())
            .collect();
        found.insert(rank, (pid, cpus));
    }
    found
}

/// Runs a job and checks that it succeeded, that every rank of `n` reported once and printed
/// its affinity once, and that each report names the rank's pid and exactly the CPUs the rank
/// runs on. Returns the reports.
fn checked_job(cpus: Option<&[usize]>, n: usize, args: &[&str]) -> (Run, BTreeMap<usize, Report>) {
    let n_text = n.to_string();
    let mut all = vec!["-n", &n_text, "--report-bindings"];
    all.extend_from_slice(args);
    let run = run_job(cpus, &all);
    assert_eq!(run.status, 0, "{}{}", run.stdout, run.stderr);
    let reported = reports(&run.stderr);
    let seen = affinities(&run.stdout);
    assert_eq!(reported.len(), n, "{}", run.stderr);
    assert_eq!(seen.len(), n, "{}", run.stdout);
    for (rank, report) in &reported {
        let (pid, actual) = &seen[rank];
        assert_eq!(report.rank, *rank);
        assert_eq!(report.pid, *pid, "rank {rank}: report {report:?}");
        assert_eq!(
            &report.cpus, actual,
            "rank {rank}: the report says {:?}, the rank runs on {actual:?}\n{}",
            report.cpus, run.stderr
        );
    }
    (run, reported)
}

/// The first `n` CPUs this test may use, if it may use that many.
fn some_cpus(n: usize) -> Option<Vec<usize>> {
    let allowed = allowed_here();
    (allowed.len() >= n).then(|| allowed[..n].to_vec())
}

#[test]
fn two_ranks_on_two_cpus_are_bound_to_distinct_cpus_by_default() {
    let Some(two) = some_cpus(2) else {
        eprintln!("skipped: this test may use fewer than 2 CPUs");
        return;
    };
    let (_, reported) = checked_job(Some(&two), 2, &[]);
    let mut used = Vec::new();
    for report in reported.values() {
        assert!(report.bound && report.how == "core", "{report:?}");
        assert_eq!(report.cpus.len(), 1);
        assert!(two.contains(&report.cpus[0]), "{report:?} outside {two:?}");
        used.push(report.cpus[0]);
    }
    used.sort_unstable();
    assert_eq!(used, two, "not one CPU each: {reported:?}");
    // The same without taskset, on whatever this machine allows.
    let (_, reported) = checked_job(None, 2, &[]);
    let cpus: Vec<&Vec<usize>> = reported.values().map(|r| &r.cpus).collect();
    assert!(cpus[0].len() == 1 && cpus[0] != cpus[1], "{reported:?}");
}

#[test]
fn oversubscribed_ranks_are_left_unbound_on_every_allowed_cpu() {
    let Some(two) = some_cpus(2) else {
        eprintln!("skipped: this test may use fewer than 2 CPUs");
        return;
    };
    let (_, reported) = checked_job(Some(&two), 4, &[]);
    for report in reported.values() {
        assert!(!report.bound, "{report:?}");
        assert_eq!(report.how, "oversubscribed: 4 ranks on 2 cpus");
        assert_eq!(report.cpus, two);
    }
}

#[test]
fn bind_to_none_leaves_ranks_unbound() {
    let allowed = allowed_here();
    let (_, reported) = checked_job(None, 2, &["--bind-to", "none"]);
    for report in reported.values() {
        assert!(
            !report.bound && report.how == "--bind-to none",
            "{report:?}"
        );
        assert_eq!(report.cpus, allowed);
    }
}

#[test]
fn a_restricted_mpirun_binds_within_its_cpus() {
    // taskset -c <one CPU> mpirun -n 1: bound, to that CPU.
    let last = *allowed_here().last().unwrap();
    let (_, reported) = checked_job(Some(&[last]), 1, &[]);
    assert!(reported[&0].bound, "{reported:?}");
    assert_eq!(reported[&0].cpus, [last]);
    // MPICH's spelling, and core binding asked for with more ranks than CPUs: bound round
    // robin, with a warning.
    let (run, reported) = checked_job(Some(&[last]), 2, &["-bind-to", "core"]);
    for report in reported.values() {
        assert_eq!(report.cpus, [last], "{report:?}");
    }
    assert!(
        run.stderr
            .contains("warning: --bind-to core with 2 ranks on 1 cpu(s)"),
        "{}",
        run.stderr
    );
}

#[test]
fn numa_binding_gives_each_rank_every_cpu_of_a_node() {
    let allowed = allowed_here();
    let mut nodes: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for entry in std::fs::read_dir("/sys/devices/system/node")
        .into_iter()
        .flatten()
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(node) = name.strip_prefix("node").and_then(|n| n.parse().ok()) else {
            continue;
        };
        let list = std::fs::read_to_string(entry.path().join("cpulist")).unwrap();
        let cpus: Vec<usize> = parse_list(list.trim())
            .into_iter()
            .filter(|c| allowed.contains(c))
            .collect();
        if !cpus.is_empty() {
            nodes.insert(node, cpus);
        }
    }
    if nodes.is_empty() {
        // No NUMA information: the whole machine is one node.
        nodes.insert(0, allowed.clone());
    }
    let n = 2 * nodes.len();
    let (_, reported) = checked_job(None, n, &["--bind-to", "numa"]);
    let node_list: Vec<&Vec<usize>> = nodes.values().collect();
    for (rank, report) in &reported {
        assert!(report.bound && report.how == "numa", "{report:?}");
        assert_eq!(
            &report.cpus,
            node_list[rank % node_list.len()],
            "rank {rank}: {report:?}"
        );
    }
}

/// A launch script that records nothing and runs the command here, as sshd would.
fn launch_script(dir: &Path) -> PathBuf {
    let path = dir.join("launch");
    std::fs::write(&path, "#!/bin/sh\nshift\nexec sh -c \"$*\"\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[test]
fn ranks_on_other_hosts_bind_and_report_themselves() {
    let Some(two) = some_cpus(2) else {
        eprintln!("skipped: this test may use fewer than 2 CPUs");
        return;
    };
    let dir = scratch("remote");
    let script = launch_script(&dir);
    let script = script.to_str().unwrap();
    // Two "hosts" with two ranks each; on each, the two ranks take distinct CPUs.
    let hosts = [
        "--hosts",
        "hostA:2,hostB:2",
        "--launcher-exec",
        script,
        "--pmi-address",
        "127.0.0.1",
    ];
    let (_, reported) = checked_job(Some(&two), 4, &hosts);
    for pair in [[0, 1], [2, 3]] {
        let mut used: Vec<usize> = pair
            .iter()
            .map(|rank| {
                let report = &reported[rank];
                assert!(report.bound && report.how == "core", "{report:?}");
                report.cpus[0]
            })
            .collect();
        used.sort_unstable();
        assert_eq!(used, two, "{reported:?}");
    }
    // Oversubscribed on its host (3 ranks, 2 CPUs): unbound, as mpirun would leave it.
    let hosts3 = [
        "--hosts",
        "hostA:3",
        "--launcher-exec",
        script,
        "--pmi-address",
        "127.0.0.1",
    ];
    let (_, reported) = checked_job(Some(&two), 3, &hosts3);
    for report in reported.values() {
        assert_eq!(
            report.how, "oversubscribed: 3 ranks on 2 cpus",
            "{report:?}"
        );
        assert_eq!(report.cpus, two);
    }
    // Explicit policies travel too.
    let mut unbound = hosts.to_vec();
    unbound.extend(["--bind-to", "none"]);
    let (_, reported) = checked_job(Some(&two), 4, &unbound);
    assert!(
        reported.values().all(|r| r.how == "--bind-to none"),
        "{reported:?}"
    );
    let _ = std::fs::remove_dir_all(dir);
}
