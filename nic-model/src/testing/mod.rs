//! Multi-process test harness: a test re-runs its own test binary as the ranks of a job.
//!
//! ```no_run
//! #[test]
//! fn two_ranks_talk() {
//!     if nic_model::testing::is_rank() {
//!         let nic = nic_model::Nic::from_env().unwrap();
//!         // ... the rank's side of the test; panicking fails the job ...
//!         return;
//!     }
//!     let out = nic_model::testing::run_ranks("two_ranks_talk", 2, &[]);
//!     assert!(out.success(), "{out:?}");
//! }
//! ```
//! Works under `cargo test` and `cargo nextest` (both accept libtest's `--exact`).

use crate::fabric::{Job, JobConfig, JobOutcome};
use std::process::Command;
use std::time::Duration;

const RANK_ENV: &str = "NIC_TEST_RANK_OF";

/// True inside a rank started by [`run_ranks`].
pub fn is_rank() -> bool {
    std::env::var_os(RANK_ENV).is_some()
}

/// Runs test `test_name` of the current binary as `n` ranks of a fresh job, with extra
/// environment `env`, and returns how they ended. Each rank gets 60 s at most. The ranks'
/// output is kept in files and printed (to the test's captured output) only if the job fails.
pub fn run_ranks(test_name: &str, n: usize, env: &[(&str, &str)]) -> JobOutcome {
    run_ranks_with(test_name, &JobConfig::new(n), env, Duration::from_secs(60))
}

/// As [`run_ranks`], with a chosen fabric configuration and timeout.
pub fn run_ranks_with(
    test_name: &str,
    cfg: &JobConfig,
    env: &[(&str, &str)],
    timeout: Duration,
) -> JobOutcome {
    let exe = std::env::current_exe().expect("current test binary");
    let job = Job::new(cfg).expect("creating the job's fabric");
    let logs: Vec<std::fs::File> = (0..cfg.nranks).map(|_| tempfile()).collect();
    let out = job
        .run(
            |rank| {
                let mut c = Command::new(&exe);
                c.args([
                    test_name,
                    "--exact",
                    "--include-ignored",
                    "--nocapture",
                    "--test-threads",
                    "1",
                ])
                .env(RANK_ENV, test_name);
                for (k, v) in env {
                    c.env(k, v);
                }
                let log = logs[rank].try_clone().expect("dup of a log file");
                c.stdout(log.try_clone().expect("dup of a log file"))
                    .stderr(log);
                c
            },
            Duration::from_secs(2),
            Some(timeout),
        )
        .expect("starting the job");
    if !out.success() {
        for (rank, f) in logs.iter().enumerate() {
            println!(
                "---- rank {rank} ({:?}) ----\n{}",
                out.exits[rank],
                contents(f)
            );
        }
    }
    out
}

/// Runs `program` as `n` ranks of a fresh job with extra environment `env` (stdin closed);
/// returns how the job ended and each rank's (stdout, stderr). Each rank gets 120 s at most.
/// For tests of programs that are not test binaries, such as the C examples.
pub fn run_program(
    program: &std::path::Path,
    n: usize,
    env: &[(&str, &str)],
) -> (JobOutcome, Vec<(String, String)>) {
    let job = Job::new(&JobConfig::new(n)).expect("creating the job's fabric");
    let files: Vec<(std::fs::File, std::fs::File)> =
        (0..n).map(|_| (tempfile(), tempfile())).collect();
    let outcome = job
        .run(
            |rank| {
                let mut c = Command::new(program);
                c.envs(env.iter().copied())
                    .stdin(std::process::Stdio::null())
                    .stdout(files[rank].0.try_clone().expect("dup of a log file"))
                    .stderr(files[rank].1.try_clone().expect("dup of a log file"));
                c
            },
            Duration::from_secs(2),
            Some(Duration::from_secs(120)),
        )
        .expect("starting the job");
    let logs = files
        .iter()
        .map(|(o, e)| (contents(o), contents(e)))
        .collect();
    (outcome, logs)
}

/// Runs `program` as `n` ranks (see [`run_program`]) and asserts that the job succeeded and
/// that rank 0's standard output contains `expect`; on failure, prints every rank's output.
pub fn assert_program_succeeds(
    program: &std::path::Path,
    n: usize,
    env: &[(&str, &str)],
    expect: &str,
) {
    let (outcome, logs) = run_program(program, n, env);
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
        "{} failed: {outcome:?}\n{}",
        program.display(),
        report()
    );
    assert!(
        logs[0].0.contains(expect),
        "rank 0 did not print {expect:?}\n{}",
        report()
    );
}

/// Runs `program` once with none of a launcher's environment (stdin closed), as a user who
/// forgot `mpirun` would, and returns what it did.
pub fn run_outside_job(program: &std::path::Path) -> std::process::Output {
    let mut cmd = Command::new(program);
    for var in [
        crate::fabric::env::FABRIC_FD,
        crate::fabric::env::RANK,
        crate::fabric::env::JOB_KEY,
    ] {
        cmd.env_remove(var);
    }
    cmd.stdin(std::process::Stdio::null())
        .output()
        .expect("running the program")
}

/// For small tools and examples that must run inside a job: outside one, runs this same
/// program (same arguments, inherited stdio) as the `n` ranks of a fresh job and returns the
/// exit code to leave with; inside a job (a rank), returns `None` and the caller goes on.
pub fn relaunch_as_job(n: usize) -> Option<i32> {
    if std::env::var_os(crate::fabric::env::RANK).is_some() {
        return None;
    }
    let exe = std::env::current_exe().expect("own path");
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let job = Job::new(&JobConfig::new(n)).expect("creating the job's fabric");
    let out = job
        .run(
            |_| {
                let mut c = Command::new(&exe);
                c.args(&args);
                c
            },
            Duration::from_secs(1),
            None,
        )
        .expect("starting the job");
    Some(if out.success() { 0 } else { 1 })
}

/// Checks that `header` is clean C11 and C++11 and that `c_source` compiles warning-free
/// (`-Wall -Wextra -Wpedantic -Werror`), with `include` on the include path, for each of `cc`
/// and `c++` that is installed. For the C interfaces of the layers (`bip.h`, `fm.h`).
pub fn check_c_interface(
    include: &std::path::Path,
    c_source: &std::path::Path,
    header: &std::path::Path,
) {
    let mut tried = 0;
    for (compiler, lang, std, file) in [
        ("cc", "c", "-std=c11", c_source),
        ("c++", "c++", "-std=c++11", header),
    ] {
        let mut cmd = Command::new(compiler);
        cmd.args([
            "-x",
            lang,
            std,
            "-Wall",
            "-Wextra",
            "-Wpedantic",
            "-Werror",
            "-fsyntax-only",
            "-I",
        ])
        .arg(include)
        .arg(file);
        let Ok(out) = cmd.output() else {
            eprintln!("note: no `{compiler}` found; skipping its check");
            continue;
        };
        tried += 1;
        assert!(
            out.status.success(),
            "{compiler}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    if tried == 0 {
        eprintln!("note: no C or C++ compiler found; nothing checked");
    }
}

/// Everything written to a log file so far.
fn contents(mut f: &std::fs::File) -> String {
    use std::io::{Read, Seek};
    let mut s = String::new();
    let _ = f.rewind().and_then(|_| f.read_to_string(&mut s));
    s
}

/// An anonymous temporary file (unlinked at once), for a rank's output.
fn tempfile() -> std::fs::File {
    let dir = std::env::temp_dir();
    let path = dir.join(format!(
        "nic-rank-log-{}-{}",
        std::process::id(),
        fastrand::u64(..)
    ));
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .expect("creating a rank log file");
    let _ = std::fs::remove_file(&path);
    f
}

mod hosts;
pub use hosts::{run_on_hosts, FileExchange, HostsOutcome};

thread_local! {
    /// Packets [`poll_from`] took while it waited for another source, per source.
    static SET_ASIDE: std::cell::RefCell<Vec<std::collections::VecDeque<Vec<u8>>>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Takes every packet that has arrived and sets it aside for [`poll_from`]: what a sender
/// that waits for room must do (the receive queue is shared by all senders, so a receiver
/// that stops polling while it sends can hold up everyone, itself included).
pub fn set_aside_arrivals(dev: &mut (impl crate::Device + ?Sized)) {
    SET_ASIDE.with(|aside| {
        let mut aside = aside.borrow_mut();
        if aside.len() < dev.nranks() {
            aside.resize(dev.nranks(), Default::default());
        }
        while let Some((from, p)) = crate::poll_bytes(dev) {
            aside[from].push_back(p);
        }
    })
}

/// The next packet from `src` as an owned copy, if one has arrived (for tests that wait for
/// one source while others send). The device lends packets from any source: those from other
/// sources are set aside, in order, for later calls. One device per thread.
pub fn poll_from(dev: &mut (impl crate::Device + ?Sized), src: crate::Rank) -> Option<Vec<u8>> {
    SET_ASIDE.with(|aside| {
        let mut aside = aside.borrow_mut();
        if aside.len() < dev.nranks() {
            aside.resize(dev.nranks(), Default::default());
        }
        if let Some(p) = aside[src].pop_front() {
            return Some(p);
        }
        while let Some((from, p)) = crate::poll_bytes(dev) {
            if from == src {
                return Some(p);
            }
            aside[from].push_back(p);
        }
        None
    })
}
