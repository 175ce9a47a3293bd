//! Test support: the server on a runtime thread of its own, client settings without touching
//! the process environment, the example program built once, and bounded child processes.

#![allow(dead_code)]

use pmi::env::{self, Settings};
use pmi::server::{JobKey, Server, ServerConfig, ServerEvent};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::os::fd::{IntoRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::sync::{mpsc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// No test waits longer than this for anything.
pub const LIMIT: Duration = Duration::from_secs(20);

/// A PMI server serving some ranks over socket pairs and, optionally, TCP on 127.0.0.1.
pub struct TestServer {
    pub events: mpsc::Receiver<ServerEvent>,
    pub port: Option<SocketAddr>,
    pub key: JobKey,
    pub kvs_name: String,
    /// The client ends of the socket pairs, by rank (taken by the tests).
    pub fds: HashMap<usize, OwnedFd>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl TestServer {
    /// Serves `fd_ranks` over socket pairs, and everything else over TCP when `tcp`.
    pub fn start(mut config: ServerConfig, fd_ranks: &[usize], tcp: bool) -> TestServer {
        let key = JobKey::random().unwrap();
        config.job_key = Some(key.clone());
        let kvs_name = config.kvs_name.clone();
        let (event_sender, events) = mpsc::channel();
        let (ready_sender, ready) = mpsc::channel();
        let (shutdown, mut stop) = tokio::sync::oneshot::channel::<()>();
        let fd_ranks = fd_ranks.to_vec();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let mut server = Server::new(config).unwrap();
                let mut fds = HashMap::new();
                for rank in fd_ranks {
                    let (ours, theirs) = UnixStream::pair().unwrap();
                    server.serve_rank(rank, ours).unwrap();
                    fds.insert(rank, OwnedFd::from(theirs));
                }
                let port = if tcp {
                    Some(server.listen("127.0.0.1:0".parse().unwrap()).await.unwrap())
                } else {
                    None
                };
                ready_sender.send((fds, port)).unwrap();
                loop {
                    tokio::select! {
                        event = server.next_event() => match event {
                            Some(event) => { let _ = event_sender.send(event); }
                            None => break,
                        },
                        _ = &mut stop => break,
                    }
                }
            });
        });
        let (fds, port) = ready.recv_timeout(LIMIT).expect("the server starts");
        TestServer {
            events,
            port,
            key,
            kvs_name,
            fds,
            shutdown: Some(shutdown),
            thread: Some(thread),
        }
    }

    /// Takes rank `rank`'s socket-pair end as a raw descriptor for a client to own.
    pub fn take_fd(&mut self, rank: usize) -> RawFd {
        self.fds
            .remove(&rank)
            .expect("a socket pair for that rank")
            .into_raw_fd()
    }

    /// Settings of a client reaching rank `rank`'s socket pair.
    pub fn fd_settings(&mut self, rank: usize, size: usize) -> Settings {
        let fd = self.take_fd(rank).to_string();
        settings(&[
            ("PMI_FD", &fd),
            ("PMI_RANK", &rank.to_string()),
            ("PMI_SIZE", &size.to_string()),
            ("MPI_PMI_TIMEOUT", "10"),
            ("MPI_PMI_FENCE_TIMEOUT", "10"),
        ])
    }

    /// Settings of a client connecting over TCP as `id` with `key` (hex).
    pub fn tcp_settings(&self, id: usize, key: &str) -> Settings {
        let port = self.port.expect("the server listens").to_string();
        settings(&[
            ("PMI_PORT", &port),
            ("PMI_ID", &id.to_string()),
            ("MPI_PMI_KEY", key),
            ("MPI_PMI_TIMEOUT", "10"),
            ("MPI_PMI_FENCE_TIMEOUT", "10"),
        ])
    }

    /// The next event, waiting at most `LIMIT`.
    pub fn event(&self) -> ServerEvent {
        self.events
            .recv_timeout(LIMIT)
            .expect("an event from the server")
    }

    /// Every event that arrives within `quiet` of the one before.
    pub fn drain_events(&self, quiet: Duration) -> Vec<ServerEvent> {
        let mut all = Vec::new();
        while let Ok(event) = self.events.recv_timeout(quiet) {
            all.push(event);
        }
        all
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(stop) = self.shutdown.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Client settings from `vars` alone.
pub fn settings(vars: &[(&str, &str)]) -> Settings {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    env::read(|name| map.get(name).cloned())
        .expect("valid settings")
        .expect("a process manager")
}

/// The example program `name`, built once per test process into this test's target
/// directory (`cargo test` does not build examples when a `--test` is named).
pub fn example(name: &str) -> PathBuf {
    static BUILT: OnceLock<()> = OnceLock::new();
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().unwrap().parent().unwrap().to_path_buf();
    BUILT.get_or_init(|| {
        let target_dir = profile_dir.parent().unwrap();
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut command = Command::new(cargo);
        command
            .args(["build", "--quiet", "--package", "pmi", "--examples"])
            .arg("--target-dir")
            .arg(target_dir)
            .current_dir(env!("CARGO_MANIFEST_DIR"));
        if profile_dir.file_name().is_some_and(|n| n == "release") {
            command.arg("--release");
        }
        let status = command.status().expect("run cargo");
        assert!(status.success(), "building the examples failed: {status}");
    });
    let path = profile_dir.join("examples").join(name);
    assert!(path.is_file(), "{} was not built", path.display());
    path
}

/// A child process started in a process group of its own, killed with that group if the
/// test ends first.
pub struct ChildGuard(pub Option<Child>);

impl ChildGuard {
    pub fn spawn(command: &mut Command) -> ChildGuard {
        use std::os::unix::process::CommandExt;
        command.process_group(0);
        ChildGuard(Some(command.spawn().expect("start a process")))
    }

    /// Waits for the child, at most `LIMIT`; output if it was piped.
    pub fn finish(mut self) -> (ExitStatus, String, String) {
        let mut child = self.0.take().unwrap();
        let out = child.stdout.take().map(collect);
        let err = child.stderr.take().map(collect);
        let status = wait_bounded(&mut child);
        // Whatever the child left in its group goes too.
        kill_group(child.id());
        let text = |h: Option<JoinHandle<String>>| h.map(|h| h.join().unwrap()).unwrap_or_default();
        (status, text(out), text(err))
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Some(child) = &mut self.0 {
            kill_group(child.id());
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// SIGKILL to the process group `pgid` (a child started by [`ChildGuard::spawn`] leads one).
fn kill_group(pgid: u32) {
    if let Ok(pgid) = libc::pid_t::try_from(pgid) {
        if pgid > 1 {
            // SAFETY: kill takes plain integers; the group is one this test started.
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
        }
    }
}

fn collect(mut pipe: impl std::io::Read + Send + 'static) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = pipe.read_to_string(&mut text);
        text
    })
}

fn wait_bounded(child: &mut Child) -> ExitStatus {
    let deadline = Instant::now() + LIMIT;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            kill_group(child.id());
            let _ = child.kill();
            let _ = child.wait();
            panic!("a child process did not end within {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// True if `program` is found in PATH.
pub fn in_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| Path::new(candidate).is_file())
}
