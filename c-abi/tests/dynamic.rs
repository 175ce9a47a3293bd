//! Dynamic processes: the C programs `tests/c/dynamic/*.c`, built with our `mpicc` and run by
//! our `mpirun` (spawned jobs are started by that `mpirun`'s PMI server as child `mpirun`s).
//! Every program checks its data both ways; each test also checks that the job left no
//! process of the program and no new `/dev/shm` entry behind.
//!
//! Under `MPI_THREAD_MULTIPLE` (the programs of `tests/c/thread/` named `*_waits` and
//! `connect_pair`): the dynamic-process calls wait with the library's lock let go, so the
//! other threads of the process communicate meanwhile; each of those programs is built so that
//! the call can return only after another thread made MPI calls while it waited (it hangs,
//! and the test fails on its time limit, with a build whose call held the lock).

mod common;

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long one job may run (every program takes well under a second when things work).
const GUARD: Duration = Duration::from_secs(40);

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Run {
    fn describe(&self) -> String {
        format!(
            "\nexit: {:?}\n--- stdout\n{}--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

/// Starts `mpirun -n ranks program args...` with `env`; not waited for.
fn start(
    program: &Path,
    ranks: usize,
    args: &[&str],
    env: &[(&str, OsString)],
) -> std::process::Child {
    let mut c = Command::new(common::mpirun_path());
    c.arg("-n")
        .arg(ranks.to_string())
        .arg("--timeout")
        .arg((GUARD.as_secs() - 5).to_string())
        .arg(program)
        .args(args)
        .env("LD_LIBRARY_PATH", common::library_dir())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    c.spawn().expect("mpirun starts")
}

/// Waits for a job started by [`start`] (killing it past [`GUARD`]).
fn finish(mut child: std::process::Child) -> Run {
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let o = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let e = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + GUARD;
    let status = loop {
        match child.try_wait().unwrap() {
            Some(s) => break Some(s),
            None if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            None => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    Run {
        code: status.and_then(|s| s.code()),
        stdout: o.join().unwrap(),
        stderr: e.join().unwrap(),
    }
}

fn shm_entries() -> BTreeSet<OsString> {
    std::fs::read_dir("/dev/shm")
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name()).collect())
        .unwrap_or_default()
}

/// Processes whose command line names `program`.
fn running(program: &Path) -> Vec<String> {
    let needle = program.to_string_lossy().into_owned();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().filter_map(|e| e.ok()) {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if text.contains(&needle) {
            found.push(format!("{}: {text}", entry.file_name().to_string_lossy()));
        }
    }
    found
}

/// Asserts that nothing of `program` runs any more and no `/dev/shm` entry appeared since
/// `before` (allowing a moment for the kernel to reap).
fn assert_nothing_left(program: &Path, before: &BTreeSet<OsString>) {
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let procs = running(program);
        let new: Vec<_> = shm_entries().difference(before).cloned().collect();
        if procs.is_empty() && new.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "left behind: processes {procs:?}, /dev/shm entries {new:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn assert_ok(run: &Run, name: &str) {
    assert_eq!(run.code, Some(0), "{name} failed:{}", run.describe());
    let ok = format!("OK {name}");
    let n = run.stdout.lines().filter(|l| l.trim_end() == ok).count();
    assert_eq!(n, 1, "{name}: expected one '{ok}' line:{}", run.describe());
}

/// Runs `tests/c/<program>.c` as `mpirun -n PARENTS program CHILDREN` for each pair: it
/// must succeed (`OK ok_name`), and its children print one `child ok`; nothing left behind.
fn spawn_runs(program: &str, ok_name: &str, pairs: &[(usize, usize)]) {
    let exe = common::program(program);
    let before = shm_entries();
    for &(parents, children) in pairs {
        let run = finish(start(&exe, parents, &[&children.to_string()], &[]));
        assert_ok(&run, ok_name);
        assert_eq!(
            run.stdout
                .lines()
                .filter(|l| l.trim_end() == "child ok")
                .count(),
            1,
            "{parents} parents, {children} children: the children did not finish:{}",
            run.describe()
        );
    }
    assert_nothing_left(&exe, &before);
}

#[test]
fn spawn_one_to_three_children_from_one_and_two_parents() {
    spawn_runs(
        "dynamic/spawn",
        "dynamic_spawn",
        &[(1, 1), (1, 2), (2, 3), (2, 1), (1, 3)],
    );
}

#[test]
fn spawn_multiple_two_commands_share_one_world_with_appnum_and_wdir() {
    runs_at("dynamic/spawn_multiple", "dynamic_spawn_multiple", &[1, 2]);
}

/// Runs `tests/c/<program>.c` as two jobs at once sharing a name service directory, for each
/// pair of sizes: `mpirun -n A program ROLES.0 NAME` and `mpirun -n B program ROLES.1 NAME`
/// (`NAME` unique per pair); both must succeed (`OK ok_name`), leaving no published name,
/// process or `/dev/shm` entry behind.
fn two_jobs(program: &str, ok_name: &str, roles: [&str; 2], sizes: &[(usize, usize)]) {
    let exe = common::program(program);
    let names = common::Scratch::new("dynamic", &format!("{ok_name}-names"));
    let before = shm_entries();
    for &(a, b) in sizes {
        let name = format!("{ok_name}-{}-{a}-{b}", std::process::id());
        let env = [("MPI_NAME_SERVICE_DIR", names.0.clone().into_os_string())];
        let first = start(&exe, a, &[roles[0], &name], &env);
        let second = start(&exe, b, &[roles[1], &name], &env);
        let (r1, r2) = (finish(first), finish(second));
        assert_ok(&r1, ok_name);
        assert_ok(&r2, ok_name);
    }
    let left: Vec<_> = std::fs::read_dir(&names.0).unwrap().collect();
    assert!(left.is_empty(), "published names left behind: {left:?}");
    assert_nothing_left(&exe, &before);
}

#[test]
fn accept_and_connect_between_two_jobs_through_the_name_service() {
    two_jobs(
        "dynamic/ports",
        "dynamic_ports",
        ["server", "client"],
        &[(1, 1), (2, 3), (3, 2)],
    );
}

/// Runs `tests/c/<program>.c` (no arguments) at each size: it must succeed (`OK ok_name`),
/// leaving nothing behind.
fn runs_at(program: &str, ok_name: &str, sizes: &[usize]) {
    let exe = common::program(program);
    let before = shm_entries();
    for &ranks in sizes {
        assert_ok(&finish(start(&exe, ranks, &[], &[])), ok_name);
    }
    assert_nothing_left(&exe, &before);
}

#[test]
fn comm_join_over_a_socket() {
    runs_at("dynamic/join", "dynamic_join", &[2, 3]);
}

#[test]
fn bad_command_bad_port_and_unknown_name_error_classes() {
    let exe = common::program("dynamic/errors");
    let names = common::Scratch::new("dynamic", "error-names");
    let env = [
        ("MPI_NAME_SERVICE_DIR", names.0.clone().into_os_string()),
        ("MPI_PORT_TIMEOUT", OsString::from("2")),
    ];
    let before = shm_entries();
    for ranks in [1, 2] {
        assert_ok(&finish(start(&exe, ranks, &[], &env)), "dynamic_errors");
    }
    assert_nothing_left(&exe, &before);
}

#[test]
fn a_child_that_dies_ends_the_job_naming_it() {
    let exe = common::program("dynamic/child_dies");
    let before = shm_entries();
    let started = Instant::now();
    let run = finish(start(&exe, 1, &[], &[]));
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "took {:?}",
        started.elapsed()
    );
    assert_ne!(run.code, Some(0), "the job went on:{}", run.describe());
    // The parent names the child it lost (its rank in the child job and its address); the
    // child job's mpirun may say how it ended too, unless the parent's abort came first.
    assert!(
        run.stderr.contains("process 0 of another job"),
        "no message names the dead child:{}",
        run.describe()
    );
    assert_nothing_left(&exe, &before);
}

/// `mpiexec.hydra` (MPICH's process manager, PMI-1 `spawn`), if installed.
fn hydra() -> Option<std::path::PathBuf> {
    let found = common::installed("mpiexec.hydra");
    if found.is_none() {
        eprintln!("skipped: mpiexec.hydra is not installed (Debian package mpich)");
    }
    found
}

/// Starts `mpiexec.hydra -n ranks program args...`; not waited for.
fn start_hydra(
    hydra: &Path,
    program: &Path,
    ranks: usize,
    args: &[&str],
    env: &[(&str, OsString)],
) -> std::process::Child {
    let mut c = Command::new(hydra);
    c.arg("-n")
        .arg(ranks.to_string())
        .arg(program)
        .args(args)
        .env("LD_LIBRARY_PATH", common::library_dir())
        .env_remove("MPI_PMI_VERSION")
        .env_remove("PMI_FD")
        .env_remove("PMI_PORT")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    c.spawn().expect("mpiexec.hydra starts")
}

#[test]
fn spawn_and_ports_under_hydra() {
    let Some(hydra) = hydra() else { return };
    let exe = common::program("dynamic/spawn");
    let before = shm_entries();
    for (parents, children) in [(1, 2), (2, 3)] {
        let run = finish(start_hydra(
            &hydra,
            &exe,
            parents,
            &[&children.to_string()],
            &[],
        ));
        assert_ok(&run, "dynamic_spawn");
        assert!(run.stdout.contains("child ok"), "{}", run.describe());
    }
    assert_nothing_left(&exe, &before);
    // A Hydra job accepts, a job of our mpirun connects.
    let exe = common::program("dynamic/ports");
    let names = common::Scratch::new("dynamic", "hydra-names");
    let service = format!("dyn-hydra-{}", std::process::id());
    let env = [("MPI_NAME_SERVICE_DIR", names.0.clone().into_os_string())];
    let server = start_hydra(&hydra, &exe, 2, &["server", &service], &env);
    let client = start(&exe, 2, &["client", &service], &env);
    let (s, c) = (finish(server), finish(client));
    assert_ok(&s, "dynamic_ports");
    assert_ok(&c, "dynamic_ports");
    assert_nothing_left(&exe, &before);
}

/// A server job's thread blocks in `MPI_Comm_accept` while two other threads of every rank
/// run ring exchanges and allreduces on communicators of their own; the port is published
/// only once they are done, so the client job (single-threaded: the path that holds the lock,
/// interoperating) connects only then. Data both ways, merge, allreduce over both jobs.
#[test]
fn accept_waits_while_the_other_threads_communicate() {
    two_jobs(
        "thread/accept_waits",
        "accept_waits",
        ["server", "client"],
        &[(1, 1), (2, 2), (4, 1)],
    );
}

/// Two threads of every process of two jobs: one accepts on its job's port while the other
/// connects to the other job's, at once; then both intercommunicators carry data at once.
#[test]
fn two_threads_accept_and_connect_at_once() {
    two_jobs(
        "thread/connect_pair",
        "connect_pair",
        ["a", "b"],
        &[(1, 1), (2, 2), (1, 2)],
    );
}

/// `MPI_Comm_spawn` on one thread while another communicates: the children start their
/// `MPI_Init` only once the parents' workers are done.
#[test]
fn spawn_waits_while_another_thread_communicates() {
    spawn_runs(
        "thread/spawn_waits",
        "spawn_waits",
        &[(1, 2), (2, 1), (2, 3)],
    );
}

/// `MPI_Comm_join` from a thread, waiting for the partner while another thread of the rank
/// must answer it first.
#[test]
fn join_waits_while_another_thread_answers() {
    runs_at("thread/join_waits", "join_waits", &[2, 4]);
}
