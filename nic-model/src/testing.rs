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
pub fn run_ranks_with(test_name: &str, cfg: &JobConfig, env: &[(&str, &str)], timeout: Duration) -> JobOutcome {
    let exe = std::env::current_exe().expect("current test binary");
    let job = Job::new(cfg).expect("creating the job's fabric");
    let logs: Vec<std::fs::File> = (0..cfg.nranks).map(|_| tempfile()).collect();
    let out = job
        .run(
            |rank| {
                let mut c = Command::new(&exe);
                c.args([test_name, "--exact", "--include-ignored", "--nocapture", "--test-threads", "1"]).env(RANK_ENV, test_name);
                for (k, v) in env {
                    c.env(k, v);
                }
                let log = logs[rank].try_clone().expect("dup of a log file");
                c.stdout(log.try_clone().expect("dup of a log file")).stderr(log);
                c
            },
            Duration::from_secs(2),
            Some(timeout),
        )
        .expect("starting the job");
    if !out.success() {
        for (rank, mut f) in logs.into_iter().enumerate() {
            use std::io::{Read, Seek};
            let mut s = String::new();
            let _ = f.rewind().and_then(|_| f.read_to_string(&mut s));
            println!("---- rank {rank} ({:?}) ----\n{s}", out.exits[rank]);
        }
    }
    out
}

/// An anonymous temporary file (unlinked at once), for a rank's output.
fn tempfile() -> std::fs::File {
    let dir = std::env::temp_dir();
    let path = dir.join(format!("nic-rank-log-{}-{}", std::process::id(), fastrand::u64(..)));
    let f = std::fs::OpenOptions::new().read(true).write(true).create_new(true).open(&path).expect("creating a rank log file");
    let _ = std::fs::remove_file(&path);
    f
}
