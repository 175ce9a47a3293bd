//! The server in this process, the example `pmi_check` as real rank processes: two reach it
//! over inherited socket pairs (`PMI_FD`), two over TCP (`PMI_PORT`, `PMI_ID`,
//! `MPI_PMI_KEY`), as `mpirun` starts ranks on its own and on other hosts.

mod common;

use common::{example, ChildGuard, TestServer};
use pmi::server::{ServerConfig, ServerEvent};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

/// How rank processes reach the server.
enum Via {
    Fd(RawFd),
    Tcp { key: String },
}

fn rank_command(server: &TestServer, rank: usize, size: usize, via: Via, args: &[&str]) -> Command {
    let mut command = Command::new(example("pmi_check"));
    command
        .args(args)
        .env_remove("PMI_FD")
        .env_remove("PMI_PORT")
        .env_remove("PMI_JOBID")
        .env_remove("MPI_PMI_VERSION")
        .env("PMI_RANK", rank.to_string())
        .env("PMI_SIZE", size.to_string())
        .env("MPI_PMI_TIMEOUT", "10")
        .env("MPI_PMI_FENCE_TIMEOUT", "10")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    match via {
        Via::Fd(fd) => {
            command.env("PMI_FD", fd.to_string());
            // SAFETY: runs in the child between fork and exec; fcntl is async-signal-safe
            // and touches only the descriptor the child is to inherit.
            unsafe {
                command.pre_exec(move || {
                    if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        Via::Tcp { key } => {
            command
                .env("PMI_PORT", server.port.unwrap().to_string())
                .env("PMI_ID", rank.to_string())
                .env("MPI_PMI_KEY", key);
        }
    }
    command
}

/// Starts 4 ranks (0 and 1 over socket pairs, 2 and 3 over TCP) with `args`.
fn start_four(server: &mut TestServer, args: &[&str]) -> Vec<ChildGuard> {
    let key = server.key.to_hex();
    let mut children = Vec::new();
    for rank in 0..4 {
        let inherited = server.fds.remove(&rank);
        let via = match &inherited {
            Some(fd) => Via::Fd(fd.as_raw_fd()),
            None => Via::Tcp { key: key.clone() },
        };
        children.push(ChildGuard::spawn(&mut rank_command(
            server, rank, 4, via, args,
        )));
        // The rank has its copy; with ours closed, its exit closes the connection.
        drop(inherited);
    }
    children
}

fn config(size: usize) -> ServerConfig {
    let mut config = ServerConfig::new(size);
    config.process_mapping = Some(pmi::mapping::encode(&[0, 0, 1, 1][..size]));
    config
}

#[test]
fn rank_processes_over_socket_pairs_and_tcp() {
    let mut server = TestServer::start(config(4), &[0, 1], true);
    let children = start_four(&mut server, &[]);
    for (rank, child) in children.into_iter().enumerate() {
        let (status, out, err) = child.finish();
        assert!(status.success(), "rank {rank}: {status}\n{out}{err}");
        assert!(
            out.starts_with(&format!("pmi_check: rank {rank} of 4 ok (PMI-1, kvs kvs_"))
                && out.contains("mapping (vector,(0,2,2))"),
            "{out}"
        );
    }
    let events = server.drain_events(Duration::from_millis(300));
    for rank in 0..4 {
        assert!(
            events.contains(&ServerEvent::Finalized { rank }),
            "{events:?}"
        );
    }
}

#[test]
fn an_abort_in_one_process_reaches_the_server_and_fails_the_others_fence() {
    let mut server = TestServer::start(config(4), &[0, 1], true);
    let children = start_four(&mut server, &["abort", "2", "7"]);
    for (rank, child) in children.into_iter().enumerate() {
        let (status, _, err) = child.finish();
        if rank == 2 {
            assert_eq!(status.code(), Some(7), "{err}");
        } else {
            assert_eq!(status.code(), Some(1), "rank {rank}: {err}");
            assert!(err.contains("rank_2_aborted"), "rank {rank}: {err}");
        }
    }
    let events = server.drain_events(Duration::from_millis(300));
    assert!(
        events.contains(&ServerEvent::Aborted {
            rank: 2,
            code: 7,
            message: "pmi_check rank 2 aborts with 7".into()
        }),
        "{events:?}"
    );
}

#[test]
fn a_process_with_the_wrong_key_is_refused_and_says_so() {
    let server = TestServer::start(config(1), &[], true);
    let wrong = "00".repeat(16);
    let mut command = rank_command(&server, 0, 1, Via::Tcp { key: wrong }, &[]);
    let (status, _, err) = ChildGuard::spawn(&mut command).finish();
    assert_eq!(status.code(), Some(1));
    assert!(
        err.contains("PMI initack: the process manager refused it")
            && err.contains("wrong_or_missing_job_key"),
        "{err}"
    );
    let events = server.drain_events(Duration::from_millis(300));
    assert!(
        matches!(events[..], [ServerEvent::Rejected { .. }]),
        "{events:?}"
    );
}
