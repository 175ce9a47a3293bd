//! The Slurm test cluster of `mpi_staging::slurm` itself: one node runs a `--mpi=pmi2` step
//! whose tasks see the PMI-2 variables; two nodes are two network namespaces ("hosts") and a
//! step spans both; an MPICH-built program runs under `srun --mpi=pmi2`; and dropping a
//! cluster leaves no process, namespace or directory behind. A machine that cannot run Slurm
//! (not installed, not root, namespaces refused) skips with the reason printed.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use mpi_staging::slurm::{Cluster, NodeSpec};

/// No step of these tests may run longer than this.
const STEP_LIMIT: Duration = Duration::from_secs(20);

/// The cluster for `nodes`, or `None` (with the reason printed) where the machine cannot run
/// one; any other failure fails the test.
fn start(nodes: &[NodeSpec]) -> Option<Cluster> {
    match Cluster::start(nodes) {
        Ok(cluster) => {
            println!(
                "{} node(s) idle after {:?}",
                nodes.len(),
                cluster.startup_time()
            );
            Some(cluster)
        }
        Err(error) if error.is_unavailable() => {
            println!("skipped: {error}");
            None
        }
        Err(error) => panic!("{error}"),
    }
}

/// `srun args` on `cluster`, which must succeed; the daemons' logs are shown if not.
fn srun(cluster: &Cluster, args: &[&str]) -> String {
    let began = Instant::now();
    let output = cluster
        .srun(args, STEP_LIMIT)
        .unwrap_or_else(|error| panic!("srun {args:?}: {error}{}", cluster.log_tails()));
    println!("srun {args:?} took {:?}", began.elapsed());
    assert_succeeded(cluster, args, &output);
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn assert_succeeded(cluster: &Cluster, args: &[&str], output: &Output) {
    assert!(
        output.status.success(),
        "srun {args:?} failed ({})\nstdout: {}\nstderr: {}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
        cluster.log_tails()
    );
}

/// What a cluster leaves that must be gone after its drop.
struct Traces {
    dir: PathBuf,
    conf_mark: Vec<u8>,
    daemons: Vec<u32>,
    namespaces: Vec<String>,
}

impl Traces {
    fn of(cluster: &Cluster) -> Traces {
        let mut conf_mark = b"SLURM_CONF=".to_vec();
        conf_mark.extend_from_slice(cluster.conf().to_string_lossy().as_bytes());
        Traces {
            dir: cluster.dir().to_path_buf(),
            conf_mark,
            daemons: cluster.daemon_pids(),
            namespaces: cluster.namespaces(),
        }
    }

    /// Drops `cluster` and checks that nothing of it is left.
    fn drop_and_check(cluster: Cluster) {
        let traces = Traces::of(&cluster);
        let began = Instant::now();
        drop(cluster);
        println!("stopped and removed in {:?}", began.elapsed());
        assert!(!traces.dir.exists(), "{} is left", traces.dir.display());
        for pid in &traces.daemons {
            assert!(!running(*pid), "daemon {pid} still runs");
        }
        for name in &traces.namespaces {
            assert!(
                !Path::new("/run/netns").join(name).exists(),
                "network namespace {name} is left"
            );
        }
        let marked = processes_with(&traces.conf_mark);
        assert!(
            marked.is_empty(),
            "processes {marked:?} of the cluster are left"
        );
    }
}

fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let state = stat.rsplit_once(')').map(|(_, rest)| rest.trim_start());
        !state.is_some_and(|rest| rest.starts_with('Z'))
    })
}

/// Processes (other than this one) whose environment holds `entry`.
fn processes_with(entry: &[u8]) -> Vec<u32> {
    let own = std::process::id();
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != own && running(pid))
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|environ| environ.split(|&b| b == 0).any(|e| e == entry))
        })
        .collect()
}

/// The values of `name` in `env` output, one per task.
fn values<'a>(output: &'a str, name: &str) -> Vec<&'a str> {
    let prefix = format!("{name}=");
    output
        .lines()
        .filter_map(|line| line.strip_prefix(prefix.as_str()))
        .collect()
}

#[test]
fn one_node_runs_a_pmi2_step() {
    let Some(cluster) = start(&[NodeSpec::new("n0", 2)]) else {
        return;
    };
    let list = cluster
        .srun(&["--mpi=list"], STEP_LIMIT)
        .expect("srun --mpi=list");
    let listed = format!(
        "{}{}",
        String::from_utf8_lossy(&list.stdout),
        String::from_utf8_lossy(&list.stderr)
    );
    assert!(
        listed.lines().any(|line| line.trim() == "pmi2"),
        "srun --mpi=list does not list pmi2:\n{listed}"
    );

    let env = srun(&cluster, &["--mpi=pmi2", "-n", "2", "env"]);
    let mut ranks = values(&env, "PMI_RANK");
    ranks.sort_unstable();
    assert_eq!(ranks, ["0", "1"], "{env}");
    assert_eq!(values(&env, "PMI_SIZE"), ["2", "2"], "{env}");
    let fds = values(&env, "PMI_FD");
    assert_eq!(fds.len(), 2, "{env}");
    assert!(fds.iter().all(|fd| fd.parse::<u32>().is_ok()), "{env}");
    let jobids = values(&env, "PMI_JOBID");
    assert_eq!(jobids.len(), 2, "{env}");
    assert_eq!(jobids[0], jobids[1], "{env}");

    // Without --mpi (MpiDefault=none) no PMI server is set up.
    let plain = srun(&cluster, &["-n", "1", "env"]);
    assert!(values(&plain, "PMI_FD").is_empty(), "{plain}");
    Traces::drop_and_check(cluster);
}

#[test]
fn two_nodes_are_two_hosts() {
    let Some(cluster) = start(&[NodeSpec::new("n0", 2), NodeSpec::new("n1", 2)]) else {
        return;
    };
    let own_namespace = std::fs::read_link("/proc/self/ns/net").expect("own namespace");
    let output = srun(
        &cluster,
        &[
            "--mpi=pmi2",
            "-N",
            "2",
            "-n",
            "4",
            "sh",
            "-c",
            "echo $PMI_RANK $PMI_SIZE $SLURMD_NODENAME $(readlink /proc/self/ns/net)",
        ],
    );
    let mut ranks = BTreeSet::new();
    let mut namespace_of_node = std::collections::BTreeMap::new();
    for line in output.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(words.len(), 4, "{output}");
        assert_eq!(words[1], "4", "{output}");
        ranks.insert(words[0].parse::<u32>().expect("a rank"));
        let previous = namespace_of_node.insert(words[2].to_string(), words[3].to_string());
        if let Some(previous) = previous {
            assert_eq!(
                previous, words[3],
                "a node's tasks in two namespaces: {output}"
            );
        }
    }
    assert_eq!(ranks, (0..4).collect(), "{output}");
    assert_eq!(
        namespace_of_node.keys().collect::<Vec<_>>(),
        ["n0", "n1"],
        "{output}"
    );
    let namespaces: BTreeSet<&String> = namespace_of_node.values().collect();
    assert_eq!(namespaces.len(), 2, "both nodes in one namespace: {output}");
    assert!(
        !namespaces.contains(&own_namespace.to_string_lossy().into_owned()),
        "a task ran in the test's own namespace: {output}"
    );
    assert_eq!(
        cluster.node_address("n1").map(|a| a.to_string()),
        Some("192.0.2.11".to_string())
    );
    Traces::drop_and_check(cluster);
}

#[test]
fn mpich_program_runs_under_srun_pmi2() {
    if Command::new("mpicc.mpich").arg("-v").output().is_err() {
        println!("skipped: mpicc.mpich is not installed (Debian: mpich libmpich-dev)");
        return;
    }
    let Some(cluster) = start(&[NodeSpec::new("n0", 4)]) else {
        return;
    };
    let source = cluster.dir().join("hello.c");
    let program = cluster.dir().join("hello");
    std::fs::write(
        &source,
        r#"#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    int rank, size, sum = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("rank %d of %d sum %d\n", rank, size, sum);
    MPI_Finalize();
    return 0;
}
"#,
    )
    .expect("write hello.c");
    let built = Command::new("mpicc.mpich")
        .arg(&source)
        .arg("-o")
        .arg(&program)
        .output()
        .expect("run mpicc.mpich");
    assert!(
        built.status.success(),
        "mpicc.mpich failed: {}",
        String::from_utf8_lossy(&built.stderr)
    );
    let program = program.to_str().expect("a UTF-8 path");
    let output = srun(&cluster, &["--mpi=pmi2", "-n", "4", program]);
    let mut lines: Vec<&str> = output.lines().collect();
    lines.sort_unstable();
    assert_eq!(
        lines,
        (0..4)
            .map(|rank| format!("rank {rank} of 4 sum 6"))
            .collect::<Vec<_>>(),
        "{output}"
    );
    Traces::drop_and_check(cluster);
}

#[test]
fn steps_past_their_limit_or_the_cluster_are_ended() {
    let Some(cluster) = start(&[NodeSpec::new("n0", 2)]) else {
        return;
    };
    let began = Instant::now();
    let error = cluster
        .srun(&["-n", "1", "sleep", "60"], Duration::from_secs(2))
        .expect_err("a 60 s step ends within 2 s");
    assert_eq!(error.kind(), std::io::ErrorKind::TimedOut, "{error}");
    assert!(
        began.elapsed() < Duration::from_secs(10),
        "{:?}",
        began.elapsed()
    );

    // A step still running when the cluster is dropped ends with it, srun included.
    let mut srun = cluster.command("srun");
    srun.args(["-n", "2", "sleep", "60"])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut srun = srun.spawn().expect("start srun");
    let deadline = Instant::now() + STEP_LIMIT;
    let squeue = || {
        let mut squeue = cluster.command("squeue");
        squeue.args(["--noheader", "--states=RUNNING", "--format=%i"]);
        let output = cluster.output(squeue, STEP_LIMIT).expect("squeue");
        String::from_utf8_lossy(&output.stdout).trim().to_string()
    };
    while squeue().is_empty() {
        assert!(
            Instant::now() < deadline,
            "the step never ran{}",
            cluster.log_tails()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    Traces::drop_and_check(cluster);
    let status = srun.wait().expect("wait for srun");
    assert!(!status.success(), "srun of a cancelled step succeeded");
}
