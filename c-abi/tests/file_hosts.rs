//! Shared file pointers across hosts: `tests/c/file/file_shared.c` on 2 hosts x 2 ranks,
//! started by our `mpirun --hosts`, with its files in one directory both hosts see.
//!
//! The hosts are two network namespaces of this machine (`mpi_staging::netns::Hosts`): each
//! has its own network stack and reaches the other only over a veth link, so the two pairs of
//! ranks share nothing but the file system, as cluster nodes share a parallel one. The shared
//! pointer must therefore live in the file system (its side file, read-modify-written under an
//! `fcntl` lock): every record written at it by the four ranks at once must be in the file
//! exactly once, and no side file may be left after the close.
//!
//! `Hosts::create(2)` makes the namespaces (and a switch namespace bridging their links);
//! dropping the `Hosts` at the end of the test kills whatever still runs in them and removes
//! them, their links and their files. Namespaces left by a crashed earlier run are removed by
//! the next `Hosts::create`. Where the machine cannot make namespaces (no root, no kernel
//! support) the test prints why and passes.

mod common;

use common::{assert_ok, JobRun};
use mpi_staging::netns::Hosts;
use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The longest the job may run before this test kills it and fails.
const JOB_GUARD: Duration = Duration::from_secs(60);

/// A directory both hosts' ranks see (this machine's file system), removed when dropped.
struct SharedDir(PathBuf);

impl SharedDir {
    fn new(tag: &str) -> SharedDir {
        let dir = std::env::temp_dir().join(format!("mpi-file-hosts-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
        SharedDir(dir)
    }
}

impl Drop for SharedDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `command` to its end (killed after [`JOB_GUARD`]) and collects what it printed.
fn run_bounded(mut command: Command) -> JobRun {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let description = format!("{command:?}");
    let started = Instant::now();
    let mut child = command
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {description}: {e}"));
    let mut out = child.stdout.take().expect("piped stdout");
    let mut err = child.stderr.take().expect("piped stderr");
    let out_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if started.elapsed() < JOB_GUARD => {
                std::thread::sleep(Duration::from_millis(20))
            }
            Ok(None) => {
                timed_out = true;
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Err(e) => panic!("cannot wait for {description}: {e}"),
        }
    };
    JobRun {
        command: description,
        status,
        timed_out,
        stdout: out_reader.join().expect("stdout reader"),
        stderr: err_reader.join().expect("stderr reader"),
        elapsed: started.elapsed(),
        watched_line_at: None,
        ended_at: Instant::now(),
    }
}

#[test]
fn shared_file_pointer_on_two_namespace_hosts_serves_every_record_once() {
    let hosts = match Hosts::create(2) {
        Ok(hosts) => hosts,
        Err(reason) if reason.starts_with("network namespaces are not available") => {
            println!("skipped: {reason}");
            return;
        }
        Err(reason) => panic!("cannot make 2 namespace hosts: {reason}"),
    };
    let program = common::program("file/file_shared");
    let dir = SharedDir::new("shared");
    let slots: Vec<String> = (0..hosts.len())
        .map(|i| format!("{}:2", hosts.addr(i)))
        .collect();
    let mut command = hosts.command_in(0, common::mpirun_path());
    command
        .args(["--hosts", &slots.join(",")])
        .arg("--launcher-exec")
        .arg(hosts.launcher_exec())
        .args(["-n", "4"])
        .arg("--timeout")
        .arg((JOB_GUARD.as_secs() - 5).to_string())
        .arg(&program)
        .env("LD_LIBRARY_PATH", common::library_dir())
        .env("FILE_TEST_DIR", &dir.0);
    let run = run_bounded(command);
    assert_ok(&run, "file_shared");
    println!(
        "file_shared on 2 namespace hosts x 2 ranks passed in {:.2?}",
        run.elapsed
    );
    let left: Vec<_> = std::fs::read_dir(&dir.0).unwrap().collect();
    assert!(
        left.is_empty(),
        "file_shared on 2 hosts x 2 ranks left files behind: {left:?}"
    );
    for i in 0..hosts.len() {
        let out = Command::new("ip")
            .args(["netns", "pids", hosts.netns(i)])
            .output()
            .expect("ip netns pids");
        let pids = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        assert!(pids.is_empty(), "processes left in host {i}: {pids}");
    }
}
