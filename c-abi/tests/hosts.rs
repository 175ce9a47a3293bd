//! MPI across hosts, as users run it: C programs built with our `mpicc`, started by MPICH's
//! Hydra (`mpiexec.hydra`), Slurm (`srun --mpi=pmi2`) and our `mpirun --hosts`, with ranks on
//! two "hosts" that reach each other over TCP (see nic-model's `net`).
//!
//! The hosts are either simulated on loopback (two ranks with `MPI_HOST_ID=a` on 127.0.0.2,
//! two with `MPI_HOST_ID=b` on 127.0.0.3: each pair shares a memory fabric, the pairs talk
//! over TCP), or network namespaces joined by veth links (`mpi_staging::netns`, and the nodes
//! of `mpi_staging::slurm`). The 2 x 2 job runs in two layouts: ranks 0, 1 on host a and 2, 3 on
//! host b ("blocked"), or a, b, a, b ("interleaved", so that programs which use ranks 0 and 1
//! only cross hosts as well).
//!
//! * point-to-point: `hosts/p2p_sizes` (every size up to 64 MiB between every pair, wildcard
//!   receives, every byte checked) and the programs of `tests/c/` that stress matching,
//!   protocols and progress;
//! * every collective (`tests/c/coll/`) on the 2 x 2 job;
//! * the one-sided programs (`tests/c/rma/`) on the 2 x 2 job;
//! * the NAS kernels (`benches/nas/`) in class S on 4 ranks, which must print VERIFIED;
//! * MPI-IO (`tests/c/file/`): the processes of both hosts write and read one file in a
//!   directory both see (the hosts share this machine's file system, as cluster nodes share a
//!   parallel one), with Hydra on loopback hosts and our `mpirun` across namespace hosts;
//! * launchers: Hydra on loopback hosts and across namespace hosts, Slurm with two nodes,
//!   our `mpirun --hosts` across namespace hosts and on loopback hosts;
//! * `MPI_WIRE=tcp`: four ranks of one host all over TCP;
//! * the fault injector (`MPI_NIC_FAULTS`) under the network device.
//!
//! Every program checks itself and rank 0 prints `OK <name>` (see `tests/c/mpitest.h`). The
//! jobs run one at a time (two cores), each bounded by [`JOB_GUARD`]; after each, no process of
//! the job may be left: neither in the launcher's process group nor any process running the
//! program. Tests needing network namespaces or Slurm print why and pass where the machine
//! cannot make them (no root, no namespaces, packages missing).

mod common;

use common::{assert_ok, JobRun};
use mpi_staging::netns::{self, Hosts};
use mpi_staging::slurm::{Cluster, NodeSpec};
use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

/// The longest one job may run before the harness kills it and fails the test.
const JOB_GUARD: Duration = Duration::from_secs(50);

/// How long the processes of a job may take to disappear after its launcher has ended.
const LEFTOVER_GRACE: Duration = Duration::from_secs(3);

/// The loopback "hosts" of the 2 x 2 jobs: host id and the address its ranks listen on.
const LOOPBACK_HOSTS: [(&str, &str); 2] = [("a", "127.0.0.2"), ("b", "127.0.0.3")];

/// Hydra's program.
const HYDRA: &str = "mpiexec.hydra";

/// The fault mix of the fault-injection test (the issue's).
const NIC_FAULTS: &str = "drop=0.01,corrupt=0.01,dup=0.01,seed=7";

static ONE_JOB_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The turn of the calling test to run jobs (a failed test does not block the others).
fn one_at_a_time() -> MutexGuard<'static, ()> {
    ONE_JOB_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

// ---- programs ----

/// The NAS kernels; all accept 4 ranks (CG and FT need a power of two).
const NAS_KERNELS: [&str; 5] = ["ep", "cg", "ft", "is", "mg"];

/// `benches/nas/<kernel>.c` built with our `mpicc` (once per test binary).
fn nas_kernel(kernel: &str) -> PathBuf {
    static BUILT: Mutex<BTreeMap<String, PathBuf>> = Mutex::new(BTreeMap::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(path) = built.get(kernel) {
        return path.clone();
    }
    let sources = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("benches")
        .join("nas");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hosts-nas");
    std::fs::create_dir_all(&dir)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    let target = dir.join(kernel);
    let partial = dir.join(format!("{kernel}.{}.partial", std::process::id()));
    let source = sources.join(format!("{kernel}.c"));
    let out = Command::new(common::mpicc())
        .args(["-O2", "-Wall", "-o"])
        .arg(&partial)
        .arg(&source)
        .arg("-lm")
        .output()
        .unwrap_or_else(|e| panic!("cannot run mpicc: {e}"));
    assert!(
        out.status.success(),
        "mpicc failed to build {} ({}):\n{}{}",
        source.display(),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::rename(&partial, &target)
        .unwrap_or_else(|e| panic!("cannot move {}: {e}", partial.display()));
    built.insert(kernel.to_owned(), target.clone());
    target
}

// ---- jobs ----

/// One program to run on every rank, with its arguments and extra environment.
#[derive(Debug, Clone)]
struct Job {
    program: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
}

impl Job {
    fn new(program: PathBuf) -> Job {
        Job {
            program,
            args: Vec::new(),
            env: Vec::new(),
        }
    }

    fn arg(mut self, arg: &str) -> Job {
        self.args.push(arg.to_owned());
        self
    }

    fn env(mut self, name: &str, value: &str) -> Job {
        self.env.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Puts the job's environment, and this build's library first on the library path, on
    /// `command` (`cargo test` puts `target/<profile>/` there, whose library may be stale).
    fn environment(&self, command: &mut Command) {
        command.env("LD_LIBRARY_PATH", common::library_dir());
        for (name, value) in &self.env {
            command.env(name, value);
        }
    }
}

/// Where the two loopback hosts' ranks go.
#[derive(Debug, Clone, Copy)]
enum Layout {
    /// Ranks 0, 1 on host a; 2, 3 on host b.
    Blocked,
    /// Ranks 0, 2 on host a; 1, 3 on host b.
    Interleaved,
}

/// Hydra running `job` on 2 loopback hosts x 2 ranks: one MPMD section per group of ranks,
/// each with its host's `MPI_HOST_ID` and `MPI_NET_ADDR`.
fn hydra_loopback(job: &Job, layout: Layout) -> Command {
    let sections: &[(usize, usize)] = match layout {
        Layout::Blocked => &[(0, 2), (1, 2)],
        Layout::Interleaved => &[(0, 1), (1, 1), (0, 1), (1, 1)],
    };
    let mut command = Command::new(HYDRA);
    for (k, &(host, ranks)) in sections.iter().enumerate() {
        if k > 0 {
            command.arg(":");
        }
        let (id, addr) = LOOPBACK_HOSTS[host];
        command
            .args(["-n", &ranks.to_string()])
            .args(["-env", "MPI_HOST_ID", id])
            .args(["-env", "MPI_NET_ADDR", addr])
            .arg(&job.program)
            .args(&job.args);
    }
    hydra_timeout(&mut command);
    job.environment(&mut command);
    command
}

/// Hydra running `job` on 4 ranks of this host, every pair over TCP on 127.0.0.1.
fn hydra_wire_tcp(job: &Job) -> Command {
    let mut command = Command::new(HYDRA);
    command
        .args(["-n", "4"])
        .args(["-genv", "MPI_WIRE", "tcp"])
        .args(["-genv", "MPI_NET_ADDR", "127.0.0.1"])
        .arg(&job.program)
        .args(&job.args);
    hydra_timeout(&mut command);
    job.environment(&mut command);
    command
}

/// Hydra, started in host 0, running `job` with 2 ranks on each namespace host: the hosts by
/// address with 2 slots each, reached through the launcher-exec script in the place of ssh,
/// Hydra's own traffic on the hosts' interface.
fn hydra_netns(hosts: &Hosts, job: &Job) -> Command {
    let slots: Vec<String> = (0..hosts.len())
        .map(|i| format!("{}:2", hosts.addr(i)))
        .collect();
    let mut command = hosts.command_in(0, HYDRA);
    command
        .args(["-launcher", "ssh", "-launcher-exec"])
        .arg(hosts.launcher_exec())
        .args(["-hosts", &slots.join(",")])
        .args(["-n", &(2 * hosts.len()).to_string()])
        .args(["-iface", netns::INTERFACE])
        .arg(&job.program)
        .args(&job.args);
    hydra_timeout(&mut command);
    job.environment(&mut command);
    command
}

/// Hydra's own time limit, a little before the harness's, so that it cleans up after itself.
fn hydra_timeout(command: &mut Command) {
    command.env("MPIEXEC_TIMEOUT", (JOB_GUARD.as_secs() - 5).to_string());
}

/// Our `mpirun`, started in host 0, running `job` with 2 ranks on each namespace host.
fn mpirun_netns(hosts: &Hosts, job: &Job) -> Command {
    let slots: Vec<String> = (0..hosts.len())
        .map(|i| format!("{}:2", hosts.addr(i)))
        .collect();
    let mut command = hosts.command_in(0, common::mpirun_path());
    command
        .args(["--hosts", &slots.join(",")])
        .arg("--launcher-exec")
        .arg(hosts.launcher_exec())
        .args(["-n", &(2 * hosts.len()).to_string()]);
    mpirun_timeout(&mut command);
    command.arg(&job.program).args(&job.args);
    job.environment(&mut command);
    command
}

/// Our `mpirun` running `job` on the two loopback hosts (2 slots each), named by their
/// addresses; `launch` is a launcher-exec script that gives each its host id.
fn mpirun_loopback(launch: &Path, job: &Job) -> Command {
    let slots: Vec<String> = LOOPBACK_HOSTS
        .iter()
        .map(|(_, addr)| format!("{addr}:2"))
        .collect();
    let mut command = Command::new(common::mpirun_path());
    command
        .args(["--hosts", &slots.join(",")])
        .arg("--launcher-exec")
        .arg(launch)
        .args(["--pmi-address", "127.0.0.1"])
        .args(["-n", "4"]);
    mpirun_timeout(&mut command);
    command.arg(&job.program).args(&job.args);
    job.environment(&mut command);
    command
}

/// Our `mpirun`'s own time limit, a little before the harness's.
fn mpirun_timeout(command: &mut Command) {
    command
        .arg("--timeout")
        .arg((JOB_GUARD.as_secs() - 5).to_string());
}

/// A launcher-exec script for [`mpirun_loopback`]: called as ssh is (`SCRIPT HOST COMMAND...`)
/// with a loopback host's address, it runs COMMAND here with that host's `MPI_HOST_ID` and
/// `MPI_NET_ADDR`.
fn loopback_launch_script(dir: &Path) -> PathBuf {
    let mut cases = String::new();
    for (id, addr) in LOOPBACK_HOSTS {
        cases.push_str(&format!("    {addr}) id={id} ;;\n"));
    }
    let text = format!(
        "#!/bin/sh\n\
         # launcher-exec for loopback hosts: runs the command here as that host.\n\
         host=$1\n\
         shift\n\
         case \"$host\" in\n\
         {cases}    *) echo \"launch: unknown host $host\" >&2; exit 255 ;;\n\
         esac\n\
         MPI_HOST_ID=$id MPI_NET_ADDR=$host\n\
         export MPI_HOST_ID MPI_NET_ADDR\n\
         exec sh -c \"$*\"\n"
    );
    let script = dir.join("launch-loopback");
    std::fs::write(&script, text)
        .and_then(|()| std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)))
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", script.display()));
    script
}

/// Runs `command` (a launcher) in a process group of its own for at most [`JOB_GUARD`], then
/// checks that nothing of the job is left (see [`assert_nothing_left`]).
fn run_job(mut command: Command, program: &Path) -> JobRun {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let description = format!("{command:?}");
    let started = Instant::now();
    let mut child = command
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {description}: {e}"));
    let group = child.id();
    let stdout = read_all(child.stdout.take().expect("piped stdout"));
    let stderr = read_all(child.stderr.take().expect("piped stderr"));
    let deadline = started + JOB_GUARD;
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(10)),
            Ok(None) => {
                timed_out = true;
                signal_group(group, libc::SIGTERM);
                thread::sleep(Duration::from_secs(2));
                signal_group(group, libc::SIGKILL);
                let _ = child.wait();
                break None;
            }
            Err(e) => panic!("cannot wait for {description}: {e}"),
        }
    };
    let ended_at = Instant::now();
    // Processes left behind would hold the output pipes open: find (and end) them before
    // reading the output to its end.
    let left = leftovers(Some(group), program);
    let run = JobRun {
        command: description,
        status,
        timed_out,
        stdout: stdout.join().expect("stdout reader"),
        stderr: stderr.join().expect("stderr reader"),
        elapsed: ended_at - started,
        watched_line_at: None,
        ended_at,
    };
    assert!(
        left.is_empty(),
        "the job left processes behind (now killed):\n{}{}",
        left.join("\n"),
        run.describe()
    );
    run
}

/// Reads a pipe to its end on a thread of its own.
fn read_all(mut pipe: impl Read + Send + 'static) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// Sends `signal` to the process group `group` (one this harness created).
fn signal_group(group: u32, signal: libc::c_int) {
    let group = libc::pid_t::try_from(group).expect("a process id fits pid_t");
    // SAFETY: kill(2) with a negative pid signals the process group the harness created for
    // the launcher it started (process_group(0)); it touches no memory of ours.
    unsafe { libc::kill(-group, signal) };
}

/// `pgrep ARGS`: the matching processes as `pid command line`, without the caller.
fn pgrep(args: &[&str]) -> Vec<String> {
    let out = Command::new("pgrep")
        .arg("-a")
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run pgrep (install procps): {e}"));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(str::to_owned)
        .collect()
}

/// `text` as a regular expression that matches exactly it.
fn regex_literal(text: &str) -> String {
    let mut escaped = String::new();
    for c in text.chars() {
        if "\\^$.|?*+()[]{}".contains(c) {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

/// The processes still in process group `group` (if given) or running `program`, waiting up
/// to [`LEFTOVER_GRACE`] for them to end; those still there are killed and returned.
fn leftovers(group: Option<u32>, program: &Path) -> Vec<String> {
    let pattern = regex_literal(&program.to_string_lossy());
    let find = || {
        let mut found = pgrep(&["-f", &pattern]);
        if let Some(group) = group {
            found.extend(pgrep(&["-g", &group.to_string()]));
        }
        found.sort();
        found.dedup();
        found
    };
    let until = Instant::now() + LEFTOVER_GRACE;
    let mut found = find();
    while !found.is_empty() && Instant::now() < until {
        thread::sleep(Duration::from_millis(50));
        found = find();
    }
    for line in &found {
        if let Some(pid) = line
            .split_whitespace()
            .next()
            .and_then(|p| p.parse::<i32>().ok())
        {
            // SAFETY: kill(2) on a process id pgrep just reported as running our program or
            // being in our job's process group; it touches no memory of ours.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
    found
}

/// Asserts that no process runs `program` (within [`LEFTOVER_GRACE`]).
fn assert_nothing_left(program: &Path) {
    let left = leftovers(None, program);
    assert!(
        left.is_empty(),
        "processes of {} were left behind (now killed):\n{}",
        program.display(),
        left.join("\n")
    );
}

/// Runs `command` for `job` and asserts the program printed `OK <name>`; prints the time.
fn run_ok(what: &str, name: &str, command: Command, job: &Job) -> JobRun {
    let run = run_job(command, &job.program);
    assert_ok(&run, name);
    println!("{what}: {name} passed in {:.2?}", run.elapsed);
    run
}

/// `hosts/p2p_sizes` with sizes up to `max` bytes.
fn p2p_sizes(max: usize) -> Job {
    Job::new(common::program("hosts/p2p_sizes")).env("P2P_MAX_BYTES", &max.to_string())
}

const MIB: usize = 1 << 20;

/// The existing point-to-point programs the 2 x 2 job runs.
const P2P_PROGRAMS: [&str; 6] = [
    "progress_rule",
    "storm",
    "long_sends",
    "anysource_anytag",
    "probe",
    "sync_send",
];

/// The collective programs of `tests/c/coll/`.
const COLLECTIVE_PROGRAMS: [&str; 6] = [
    "coll/coll_all",
    "coll/coll_ops",
    "coll/coll_types",
    "coll/coll_nb",
    "coll/nb_progress",
    "coll/coll_errors",
];

/// A program of `tests/c/` with the environment it runs with here: `long_sends` sends
/// twenty 1 MiB messages; `coll_all`'s large count keeps it within a few seconds on 4 ranks
/// over TCP.
fn c_job(name: &str) -> Job {
    let job = Job::new(common::program(name));
    match name {
        "long_sends" => job.env("LONG_SENDS", "20"),
        "coll/coll_all" => job.env("COLL_BIG", &(1usize << 18).to_string()),
        _ => job,
    }
}

/// Makes `n` namespace hosts, or prints why the kernel does not allow it (`None`: skip).
/// Any other failure to make them fails the test.
fn namespace_hosts_or_skip(n: usize) -> Option<Hosts> {
    match Hosts::create(n) {
        Ok(hosts) => Some(hosts),
        Err(reason) if reason.starts_with("network namespaces are not available") => {
            println!("skipped: {reason}");
            None
        }
        Err(reason) => panic!("cannot make {n} namespace hosts: {reason}"),
    }
}

/// The processes left in the namespaces of `hosts`, which must be none once a job ended.
fn assert_hosts_empty(hosts: &Hosts) {
    for i in 0..hosts.len() {
        let out = Command::new("ip")
            .args(["netns", "pids", hosts.netns(i)])
            .output()
            .expect("ip netns pids");
        let pids = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        assert!(
            pids.is_empty(),
            "processes left in host {i} ({}): {pids}",
            hosts.netns(i)
        );
    }
}

// ---- 1. point-to-point on the 2 x 2 job ----

#[test]
fn p2p_every_size_up_to_64_mib_between_every_pair_2x2_hydra() {
    let _turn = one_at_a_time();
    let job = p2p_sizes(64 * MIB);
    let run = run_ok(
        "2x2 hydra loopback",
        "p2p_sizes",
        hydra_loopback(&job, Layout::Blocked),
        &job,
    );
    print!("{}", run.stdout);
}

#[test]
fn p2p_programs_2x2_hydra_both_layouts() {
    let _turn = one_at_a_time();
    for name in P2P_PROGRAMS {
        let job = c_job(name);
        for layout in [Layout::Blocked, Layout::Interleaved] {
            run_ok(
                &format!("2x2 hydra loopback {layout:?}"),
                name,
                hydra_loopback(&job, layout),
                &job,
            );
        }
    }
}

// ---- 2. collectives on the 2 x 2 job ----

#[test]
fn every_collective_2x2_hydra() {
    let _turn = one_at_a_time();
    for name in COLLECTIVE_PROGRAMS {
        let job = c_job(name);
        run_ok(
            "2x2 hydra loopback",
            name,
            hydra_loopback(&job, Layout::Blocked),
            &job,
        );
    }
    // Every communicator coll_all splits off then spans both hosts.
    let job = c_job("coll/coll_all");
    run_ok(
        "2x2 hydra loopback Interleaved",
        "coll/coll_all",
        hydra_loopback(&job, Layout::Interleaved),
        &job,
    );
}

/// The one-sided programs of `tests/c/rma/`: windows spanning both hosts (the message path),
/// shared windows on each host's two ranks (`MPI_Comm_split_type`), every operation and
/// synchronization mode, the erroneous calls.
const RMA_PROGRAMS: [&str; 5] = [
    "rma/win_create",
    "rma/rma_ops",
    "rma/rma_sync",
    "rma/rma_errors",
    "rma/rma_vmmc",
];

#[test]
fn one_sided_2x2_hydra_both_layouts() {
    let _turn = one_at_a_time();
    for name in RMA_PROGRAMS {
        let job = c_job(name);
        run_ok(
            "2x2 hydra loopback",
            name,
            hydra_loopback(&job, Layout::Blocked),
            &job,
        );
    }
    let job = c_job("rma/rma_sync");
    run_ok(
        "2x2 hydra loopback Interleaved",
        "rma/rma_sync",
        hydra_loopback(&job, Layout::Interleaved),
        &job,
    );
    // Puts and gets across hosts and on one, through the device for every size it can carry
    // (Write frames applied by the target's device; single copy between a host's ranks), and
    // as messages only.
    for (device, value) in [("MPI_RMA_VMMC_MIN", "1"), ("MPI_RMA_VMMC", "0")] {
        for name in ["rma/rma_vmmc", "rma/rma_sync"] {
            let job = c_job(name).env(device, value);
            run_ok(
                &format!("2x2 hydra loopback Interleaved {device}={value}"),
                name,
                hydra_loopback(&job, Layout::Interleaved),
                &job,
            );
        }
    }
}

// ---- 3. NAS kernels on the 2 x 2 job ----

/// Asserts that `kernel`'s result line says class S on `np` ranks, VERIFIED, and the job
/// succeeded.
fn assert_verified(run: &JobRun, kernel: &str, np: usize) {
    assert!(!run.timed_out, "{kernel} hung:{}", run.describe());
    assert_eq!(run.code(), Some(0), "{kernel} failed:{}", run.describe());
    let want = [
        kernel.to_uppercase(),
        "S".to_owned(),
        format!("np={np}"),
        "VERIFIED".to_owned(),
    ];
    let verified = run.stdout.lines().any(|line| {
        let words: Vec<&str> = line.split_whitespace().collect();
        words.len() == 8 && words[..4] == want[..]
    });
    assert!(
        verified,
        "{kernel}: no '{} ...' result line:{}",
        want.join(" "),
        run.describe()
    );
}

#[test]
fn nas_kernels_class_s_verify_2x2_hydra() {
    let _turn = one_at_a_time();
    for kernel in NAS_KERNELS {
        let job = Job::new(nas_kernel(kernel)).arg("S");
        let run = run_job(hydra_loopback(&job, Layout::Blocked), &job.program);
        assert_verified(&run, kernel, 4);
        println!(
            "2x2 hydra loopback: {} in {:.2?}",
            run.stdout.trim(),
            run.elapsed
        );
    }
}

// ---- 3b. MPI-IO on the 2 x 2 job ----

/// The MPI-IO programs of `tests/c/file/` that use every rank of the job on shared files.
const FILE_PROGRAMS: [&str; 3] = ["file/file_views", "file/file_sieve", "file/file_collective"];

/// A directory both hosts' ranks see, for one job's files; removed when dropped.
struct SharedDir(PathBuf);

impl SharedDir {
    fn new(tag: &str) -> SharedDir {
        let dir = std::env::temp_dir().join(format!("mpi-hosts-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
        SharedDir(dir)
    }

    fn job(&self, name: &str) -> Job {
        c_job(name).env("FILE_TEST_DIR", &self.0.to_string_lossy())
    }
}

impl Drop for SharedDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn file_io_2x2_hydra_loopback_and_our_mpirun_across_namespace_hosts() {
    let _turn = one_at_a_time();
    for name in FILE_PROGRAMS {
        for layout in [Layout::Blocked, Layout::Interleaved] {
            let dir = SharedDir::new("file-loopback");
            let job = dir.job(name);
            run_ok(
                &format!("2x2 hydra loopback {layout:?}"),
                name,
                hydra_loopback(&job, layout),
                &job,
            );
        }
    }
    let Some(hosts) = namespace_hosts_or_skip(2) else {
        return;
    };
    for name in FILE_PROGRAMS {
        let dir = SharedDir::new("file-netns");
        let job = dir.job(name);
        run_ok(
            "2x2 mpirun --hosts netns",
            name,
            mpirun_netns(&hosts, &job),
            &job,
        );
        assert_hosts_empty(&hosts);
    }
}

// ---- 4. launchers ----

#[test]
fn hydra_across_two_namespace_hosts() {
    let _turn = one_at_a_time();
    let Some(hosts) = namespace_hosts_or_skip(2) else {
        return;
    };
    for (name, job) in [
        ("p2p_sizes", p2p_sizes(64 * MIB)),
        ("storm", c_job("storm")),
        ("progress_rule", c_job("progress_rule")),
        ("coll/coll_all", c_job("coll/coll_all")),
        ("rma/rma_sync", c_job("rma/rma_sync")),
        ("rma/rma_vmmc", c_job("rma/rma_vmmc")),
        (
            "rma/rma_vmmc",
            c_job("rma/rma_vmmc").env("MPI_RMA_VMMC_MIN", "1"),
        ),
    ] {
        run_ok("2x2 hydra netns", name, hydra_netns(&hosts, &job), &job);
        assert_hosts_empty(&hosts);
    }
}

#[test]
fn slurm_two_nodes_srun_pmi2() {
    let _turn = one_at_a_time();
    let nodes = [NodeSpec::new("n0", 2), NodeSpec::new("n1", 2)];
    let started = Instant::now();
    let cluster = match Cluster::start(&nodes) {
        Ok(cluster) => cluster,
        Err(e) if e.is_unavailable() => {
            println!("skipped: {e}");
            return;
        }
        Err(e) => panic!("cannot start the Slurm cluster: {e}"),
    };
    println!("slurm: 2 nodes ready in {:.2?}", started.elapsed());
    for (name, job) in [
        ("p2p_sizes", p2p_sizes(64 * MIB)),
        ("coll/coll_all", c_job("coll/coll_all")),
        ("coll/coll_nb", c_job("coll/coll_nb")),
    ] {
        let run = srun(&cluster, &job);
        assert_ok(&run, name);
        println!("slurm 2 nodes x 2: {name} passed in {:.2?}", run.elapsed);
        assert_nothing_left(&job.program);
    }
}

/// `srun --mpi=pmi2 -N 2 -n 4 PROGRAM` on `cluster`, bounded by [`JOB_GUARD`]; on failure,
/// the output holds the daemons' last log lines too.
fn srun(cluster: &Cluster, job: &Job) -> JobRun {
    let mut srun = cluster.command("srun");
    srun.args(["--mpi=pmi2", "-N", "2", "-n", "4", "--kill-on-bad-exit=1"])
        .arg(&job.program)
        .args(&job.args);
    job.environment(&mut srun);
    let command = format!("{srun:?}");
    let began = Instant::now();
    let result = cluster.output(srun, JOB_GUARD);
    let ended_at = Instant::now();
    let (status, stdout, stderr, timed_out) = match result {
        Ok(out) => (
            Some(out.status),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
            false,
        ),
        Err(e) => (None, String::new(), e.to_string(), true),
    };
    let failed = timed_out || !status.is_some_and(|s| s.success());
    let logs = if failed {
        format!("---- Slurm's logs ----{}\n", cluster.log_tails())
    } else {
        String::new()
    };
    JobRun {
        command,
        status,
        timed_out,
        stdout,
        stderr: format!("{stderr}{logs}"),
        elapsed: ended_at - began,
        watched_line_at: None,
        ended_at,
    }
}

#[test]
fn our_mpirun_across_two_namespace_hosts() {
    let _turn = one_at_a_time();
    let Some(hosts) = namespace_hosts_or_skip(2) else {
        return;
    };
    for (name, job) in [
        ("p2p_sizes", p2p_sizes(64 * MIB)),
        ("storm", c_job("storm")),
        ("coll/coll_all", c_job("coll/coll_all")),
    ] {
        run_ok(
            "2x2 mpirun --hosts netns",
            name,
            mpirun_netns(&hosts, &job),
            &job,
        );
        assert_hosts_empty(&hosts);
    }
}

#[test]
fn our_mpirun_on_two_loopback_hosts() {
    let _turn = one_at_a_time();
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("hosts-launch-{}", std::process::id()));
    std::fs::create_dir_all(&dir)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    let script = loopback_launch_script(&dir);
    for (name, job) in [
        ("p2p_sizes", p2p_sizes(16 * MIB)),
        ("storm", c_job("storm")),
    ] {
        run_ok(
            "2x2 mpirun --hosts loopback",
            name,
            mpirun_loopback(&script, &job),
            &job,
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

// ---- 5. MPI_WIRE=tcp ----

#[test]
fn wire_tcp_4_ranks_one_host_hydra() {
    let _turn = one_at_a_time();
    let job = p2p_sizes(64 * MIB);
    let run = run_ok(
        "hydra -n 4 MPI_WIRE=tcp",
        "p2p_sizes",
        hydra_wire_tcp(&job),
        &job,
    );
    print!("{}", run.stdout);
}

// ---- 6. fault injection under the network device ----

#[test]
fn nic_faults_on_the_network_path_2x2_hydra() {
    let _turn = one_at_a_time();
    for (name, job) in [("storm", c_job("storm")), ("p2p_sizes", p2p_sizes(4 * MIB))] {
        let job = job.env("MPI_NIC_FAULTS", NIC_FAULTS);
        for layout in [Layout::Blocked, Layout::Interleaved] {
            run_ok(
                &format!("2x2 hydra loopback {layout:?} MPI_NIC_FAULTS={NIC_FAULTS}"),
                name,
                hydra_loopback(&job, layout),
                &job,
            );
        }
    }
}
