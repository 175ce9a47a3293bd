//! A job of 256 ranks on this machine (issue 13: fabric memory that scales): the README's
//! `examples/hello.c`, in which every rank says hello and a token goes once around all the
//! ranks, built with our `mpicc` and run with our `mpirun -n 256`. Every rank's line and the
//! token's sum are checked; the job is bounded in time (it oversubscribes two cores 128 times,
//! so start-up must not be quadratic in the ranks).

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const RANKS: usize = 256;
/// Bound of the whole job, start-up of 256 processes included.
const LIMIT: Duration = Duration::from_secs(120);

#[test]
fn hello_and_a_token_ring_on_256_ranks() {
    let program = common::build_with(&common::mpicc(), "../../examples/hello", "scale_hello");
    let mut command = Command::new(common::mpirun_path());
    command
        .arg("-n")
        .arg(RANKS.to_string())
        .arg("--timeout")
        .arg((LIMIT.as_secs() - 10).to_string())
        .arg(&program)
        .env("LD_LIBRARY_PATH", common::library_dir())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let child = command.spawn().expect("starting mpirun");
    // mpirun's own --timeout ends the job; wait_with_output returns once it has.
    let out = child.wait_with_output().expect("waiting for mpirun");
    let elapsed = started.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let report = format!(
        "after {elapsed:?}, {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    assert!(out.status.success(), "the job failed {report}");
    assert!(elapsed < LIMIT, "the job took too long {report}");
    let mut seen = vec![0; RANKS];
    for line in stdout.lines() {
        if let Some(rest) = line.strip_prefix("hello from rank ") {
            let mut words = rest.split_whitespace();
            let rank: usize = words.next().unwrap().parse().unwrap();
            assert_eq!(words.next(), Some("of"), "{line}");
            assert_eq!(words.next(), Some("256"), "{line}");
            seen[rank] += 1;
        }
    }
    let missing: Vec<usize> = (0..RANKS).filter(|&r| seen[r] != 1).collect();
    assert!(
        missing.is_empty(),
        "ranks without exactly one hello: {missing:?} {report}"
    );
    let sum = RANKS * (RANKS - 1) / 2;
    let token = format!("token came back as {sum} (expected {sum}): OK");
    assert!(stdout.lines().any(|l| l == token), "no '{token}' {report}");
    println!("256-rank hello and token ring: {elapsed:?}");
}
