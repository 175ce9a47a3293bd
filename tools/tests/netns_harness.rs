//! Network namespaces as test hosts (`mpi_staging::netns`): hosts reach each other over the
//! switch, a cut link isolates its host only, the launcher-exec script maps host names and
//! addresses to namespaces as ssh would, killing a host ends its processes, and dropping the
//! hosts removes everything; then MPICH's Hydra and Open MPI run a ping-pong with one rank on
//! each of two hosts, across the veth links.
//!
//! A test whose hosts cannot be made (no network namespaces here) prints why and passes.
//! Programs that must run inside a host are this test executable itself, started in the host
//! with a role in [`ROLE_VAR`] (see [`role_helper`]).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use mpi_staging::netns::{hydra_command, openmpi_command, Hosts};

/// The variable that gives the test executable, started inside a host, its role.
const ROLE_VAR: &str = "NETNS_HARNESS_ROLE";

/// The port the echo server of [`role_helper`] listens on.
const ECHO_PORT: u16 = 7071;

/// No command a test starts may run longer than this; past it it is killed and the test fails.
const HARD_LIMIT: Duration = Duration::from_secs(120);

/// Makes `n` hosts, or prints why they cannot be made (the test then passes without them).
fn hosts_or_skip(n: usize) -> Option<Hosts> {
    match Hosts::create(n) {
        Ok(hosts) => Some(hosts),
        Err(reason) => {
            eprintln!("skipped: {reason}");
            None
        }
    }
}

/// What a finished command did.
struct Finished {
    success: bool,
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs `command` to its end, killing it after [`HARD_LIMIT`].
fn finish(mut command: Command) -> Finished {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {command:?}: {e}"));
    let stdout = drain(child.stdout.take().expect("piped"));
    let stderr = drain(child.stderr.take().expect("piped"));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the command") {
            break status;
        }
        if start.elapsed() > HARD_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{command:?} ran longer than {HARD_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Finished {
        success: status.success(),
        code: status.code(),
        stdout: stdout.join().expect("stdout reader"),
        stderr: stderr.join().expect("stderr reader"),
    }
}

/// Reads a pipe to its end on a thread.
fn drain(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = pipe.read_to_string(&mut text);
        text
    })
}

/// This test executable started in host `i` with `role`.
fn helper_in(hosts: &Hosts, i: usize, role: &str) -> Command {
    let exe = std::env::current_exe().expect("the test knows its executable");
    let mut command = hosts.command_in(i, exe);
    command
        .args(["--exact", "role_helper", "--nocapture", "--test-threads=1"])
        .env(ROLE_VAR, role);
    command
}

/// How long a host waits for the echo server where it must get through (generous: the
/// machine may be loaded) and where it must not (the wait the failing check costs).
const REACHABLE_WAIT: Duration = Duration::from_secs(10);
const UNREACHABLE_WAIT: Duration = Duration::from_secs(1);

/// Whether host `i` gets an answer from the echo server at `server` within `wait`.
fn echo_from(hosts: &Hosts, i: usize, server: SocketAddr, wait: Duration) -> bool {
    let role = format!("ask {server} {}", wait.as_millis());
    let run = finish(helper_in(hosts, i, &role));
    run.stdout.contains("ROLE: reply ping")
}

/// Host `i` reaches the echo server.
fn reaches(hosts: &Hosts, i: usize, server: SocketAddr) -> bool {
    echo_from(hosts, i, server, REACHABLE_WAIT)
}

/// Host `i` does not reach the echo server.
fn cannot_reach(hosts: &Hosts, i: usize, server: SocketAddr) -> bool {
    !echo_from(hosts, i, server, UNREACHABLE_WAIT)
}

/// Not a test of its own: the program run inside a host by the other tests when [`ROLE_VAR`]
/// is set; without it, it does nothing.
/// - `serve ADDR`: an echo server of lines at ADDR, printing `ROLE: listening` once ready and
///   ending after 60 s;
/// - `ask ADDR MS`: connects to ADDR, sends `ping` and prints `ROLE: reply <line>`, each step
///   within MS milliseconds.
#[test]
fn role_helper() {
    let Ok(role) = std::env::var(ROLE_VAR) else {
        return;
    };
    let words: Vec<&str> = role.split_whitespace().collect();
    let address: SocketAddr = words[1].parse().expect("ROLE's address");
    match words[0] {
        "serve" => serve_echo(address),
        "ask" => match ask_echo(
            address,
            Duration::from_millis(words[2].parse().expect("ROLE's wait")),
        ) {
            Ok(line) => println!("ROLE: reply {line}"),
            Err(e) => println!("ROLE: error {e}"),
        },
        other => panic!("unknown role {other}"),
    }
}

/// The echo server of [`role_helper`].
fn serve_echo(address: SocketAddr) {
    let listener = TcpListener::bind(address).expect("bind the echo server");
    listener
        .set_nonblocking(true)
        .expect("non-blocking listener");
    println!("ROLE: listening");
    std::io::stdout().flush().expect("flush stdout");
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(60) {
        match listener.accept() {
            Ok((stream, _)) => {
                stream.set_nonblocking(false).expect("blocking stream");
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                let mut reader = BufReader::new(&stream);
                let mut line = String::new();
                if reader.read_line(&mut line).is_ok() {
                    let _ = (&stream).write_all(line.as_bytes());
                }
            }
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

/// The client of [`role_helper`].
fn ask_echo(address: SocketAddr, wait: Duration) -> std::io::Result<String> {
    let stream = TcpStream::connect_timeout(&address, wait)?;
    stream.set_read_timeout(Some(wait))?;
    (&stream).write_all(b"ping\n")?;
    let mut line = String::new();
    BufReader::new(&stream).read_line(&mut line)?;
    Ok(line.trim().to_string())
}

/// Waits for the `ROLE: listening` line of a server started with [`helper_in`].
fn wait_listening(stdout: ChildStdout) {
    let mut lines = BufReader::new(stdout).lines();
    let ready = lines.any(|line| line.is_ok_and(|l| l.contains("ROLE: listening")));
    assert!(ready, "the echo server ended without listening");
}

/// A child process that is killed when the test ends, also on failure.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn hosts_reach_each_other_and_cut_links_isolate_one_host() {
    let Some(hosts) = hosts_or_skip(3) else {
        return;
    };
    assert_eq!(hosts.len(), 3);
    assert_eq!(hosts.addr(2).to_string(), "192.0.2.3");
    let server = SocketAddr::new(hosts.addr(2).into(), ECHO_PORT);
    let mut child = helper_in(&hosts, 2, &format!("serve {server}"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the echo server in host 2");
    let stdout = child.stdout.take().expect("piped");
    let mut server_process = KillOnDrop(child);
    wait_listening(stdout);

    assert!(reaches(&hosts, 0, server), "host 0 cannot reach host 2");
    assert!(reaches(&hosts, 1, server), "host 1 cannot reach host 2");

    hosts.set_link(1, false);
    assert!(
        cannot_reach(&hosts, 1, server),
        "host 1 reached host 2 with its link cut"
    );
    assert!(
        reaches(&hosts, 0, server),
        "cutting host 1's link cut host 0 off"
    );
    hosts.set_link(1, true);
    assert!(
        reaches(&hosts, 1, server),
        "host 1 did not come back with its link"
    );

    // Killing host 2 ends the server (started by us, so we reap it).
    hosts.kill_host(2);
    let start = Instant::now();
    let status = loop {
        if let Some(status) = server_process.0.try_wait().expect("wait for the server") {
            break status;
        }
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "host 2's server survived kill_host"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(!status.success());
    assert!(
        cannot_reach(&hosts, 0, server),
        "host 2 still answers after kill_host"
    );
}

#[test]
fn launcher_exec_maps_hosts_to_namespaces_like_ssh() {
    let Some(hosts) = hosts_or_skip(2) else {
        return;
    };
    let script = hosts.launcher_exec().to_path_buf();
    // By address, with ssh's options before it; the words are read by sh, as over ssh.
    let mut by_address = Command::new(&script);
    by_address
        .args(["-x", "-o", "BatchMode=yes"])
        .arg(hosts.addr(1).to_string())
        .args([
            "ip",
            "-4",
            "-o",
            "addr",
            "show",
            "dev",
            "eth0",
            "&&",
            "echo",
            "'two words'",
        ]);
    let run = finish(by_address);
    assert!(run.success, "launcher-exec failed: {}", run.stderr);
    assert!(
        run.stdout.contains("192.0.2.2/24"),
        "not in host 1: {}",
        run.stdout
    );
    assert!(run.stdout.contains("two words"), "{}", run.stdout);

    // By name (with a user, as ssh takes it); the names resolve inside the hosts.
    let mut by_name = Command::new(&script);
    by_name.args(["root@host0", "getent", "hosts", "host1"]);
    let run = finish(by_name);
    assert!(run.success, "launcher-exec failed: {}", run.stderr);
    assert!(
        run.stdout.contains("192.0.2.2") && run.stdout.contains("host1"),
        "{}",
        run.stdout
    );

    // A lone command replaces the script's process: killing that (as a launcher kills its
    // ssh) ends the command, leaving nothing in the host.
    let mut lone = Command::new(&script);
    lone.args(["host1", "sleep", "30"]);
    let child = KillOnDrop(lone.spawn().expect("start launcher-exec"));
    let comm = format!("/proc/{}/comm", child.0.id());
    let start = Instant::now();
    while std::fs::read_to_string(&comm).map_or(true, |name| name.trim() != "sleep") {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "the command did not replace launcher-exec"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    drop(child);
    let left = finish({
        let mut pids = Command::new("ip");
        pids.args(["netns", "pids", hosts.netns(1)]);
        pids
    });
    assert!(
        left.stdout.trim().is_empty(),
        "left in host 1: {}",
        left.stdout
    );

    // An unknown host, as ssh: 255 and a message naming it.
    let mut unknown = Command::new(&script);
    unknown.args(["192.0.2.77", "true"]);
    let run = finish(unknown);
    assert_eq!(run.code, Some(255));
    assert!(run.stderr.contains("192.0.2.77"), "{}", run.stderr);
}

#[test]
fn dropping_hosts_removes_namespaces_and_files() {
    let Some(hosts) = hosts_or_skip(2) else {
        return;
    };
    let namespaces: Vec<String> = (0..2).map(|i| hosts.netns(i).to_string()).collect();
    let script = hosts.launcher_exec().to_path_buf();
    // A process left running in a host must not keep anything alive.
    let mut sleeper = hosts.command_in(1, "sleep");
    let sleeper = KillOnDrop(sleeper.arg("30").spawn().expect("start sleep in host 1"));
    assert!(script.is_file());
    assert!(Path::new("/etc/netns")
        .join(&namespaces[0])
        .join("hosts")
        .is_file());
    let listed = String::from_utf8(
        Command::new("ip")
            .args(["netns", "list"])
            .output()
            .expect("ip netns list")
            .stdout,
    )
    .expect("utf-8");
    assert!(namespaces.iter().all(|ns| listed.contains(ns.as_str())));

    drop(hosts);
    let listed = String::from_utf8(
        Command::new("ip")
            .args(["netns", "list"])
            .output()
            .expect("ip netns list")
            .stdout,
    )
    .expect("utf-8");
    for ns in &namespaces {
        assert!(!listed.contains(ns.as_str()), "{ns} is left: {listed}");
        assert!(
            !Path::new("/etc/netns").join(ns).exists(),
            "/etc/netns/{ns} is left"
        );
    }
    assert!(!script.exists(), "{} is left", script.display());
    drop(sleeper);
}

/// A temporary directory removed when the test ends.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("netns-harness-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create a temporary directory");
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `benches/c/mpi_pingpong.c` built with a system MPI's compiler wrapper into `dir`.
fn build_pingpong(mpicc: &str, dir: &Path) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../benches/c/mpi_pingpong.c");
    let exe = dir.join(format!("mpi_pingpong-{mpicc}"));
    let mut compile = Command::new(mpicc);
    compile
        .env_remove("LD_LIBRARY_PATH")
        .args(["-O2", "-o"])
        .arg(&exe)
        .arg(&source);
    let run = finish(compile);
    assert!(
        run.success,
        "{mpicc} failed (install mpich / openmpi-bin and their -dev packages): {}",
        run.stderr
    );
    exe
}

/// Bytes host `i` has received on its interface.
fn received_bytes(hosts: &Hosts, i: usize) -> u64 {
    let mut read = hosts.command_in(i, "cat");
    read.arg("/sys/class/net/eth0/statistics/rx_bytes");
    let run = finish(read);
    assert!(
        run.success,
        "cannot read host {i}'s counters: {}",
        run.stderr
    );
    run.stdout.trim().parse().expect("a byte count")
}

/// How long a job may take to end after printing its last row before it counts as hung in
/// `MPI_Finalize`.
const FINALIZE_GRACE: Duration = Duration::from_secs(20);

/// What a ping-pong job did: its output, and whether it ended by itself (false: it printed its
/// last row and then hung until killed).
struct Job {
    run: Finished,
    ended: bool,
}

/// Runs a ping-pong job to its end, or kills it (and everything in the hosts) when it has
/// printed its row for `last_size` and not ended [`FINALIZE_GRACE`] later.
///
/// MPICH 4.0.2 (ch4:ucx) over UCX 1.13's TCP sometimes hangs in `MPI_Finalize` when the
/// machine is loaded (about one run in ten here): one rank waits in `ucp_worker_progress`
/// for its peer, which has finished its part and waits in the PMI barrier without progressing
/// UCX (as in openucx/ucx#2254). The measurement is complete by then.
fn finish_job(hosts: &Hosts, mut command: Command, last_size: &str) -> Job {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {command:?}: {e}"));
    let seen = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let stdout = {
        let seen = seen.clone();
        let pipe = BufReader::new(child.stdout.take().expect("piped"));
        std::thread::spawn(move || {
            for line in pipe.lines().map_while(Result::ok) {
                let mut text = seen.lock().expect("stdout text");
                text.push_str(&line);
                text.push('\n');
            }
        })
    };
    let stderr = drain(child.stderr.take().expect("piped"));
    let start = Instant::now();
    let mut last_row_at = None;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the job") {
            break Some(status);
        }
        let printed_last = seen
            .lock()
            .expect("stdout text")
            .lines()
            .any(|line| line.split_whitespace().next() == Some(last_size));
        if printed_last && last_row_at.is_none() {
            last_row_at = Some(Instant::now());
        }
        if last_row_at.is_some_and(|at| at.elapsed() > FINALIZE_GRACE) {
            break None;
        }
        if start.elapsed() > HARD_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{command:?} ran longer than {HARD_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    if status.is_none() {
        for i in 0..hosts.len() {
            hosts.kill_host(i);
        }
        let _ = child.wait();
    }
    stdout.join().expect("stdout reader");
    let stdout = seen.lock().expect("stdout text").clone();
    Job {
        ended: status.is_some(),
        run: Finished {
            success: status.is_some_and(|s| s.success()),
            code: status.and_then(|s| s.code()),
            stdout,
            stderr: stderr.join().expect("stderr reader"),
        },
    }
}

/// Runs a ping-pong job across the hosts and checks its table: the library named, a row for
/// 8 B and 64 KiB, and the 64 KiB streaming traffic gone through host 1's veth. (Sizes stay
/// small: with busy-polling ranks on a loaded machine, 1 MiB round trips can take many ms.)
fn check_pingpong_job(hosts: &Hosts, mut job: Command, library_line: &str) {
    job.args(["--sizes", "8,65536"])
        .env("MPIEXEC_TIMEOUT", "100");
    let before = received_bytes(hosts, 1);
    let Job { run, ended } = finish_job(hosts, job, "65536");
    let after = received_bytes(hosts, 1);
    println!("{}", run.stdout);
    if !ended {
        eprintln!(
            "warning: the {library_line} job hung in MPI_Finalize after its last row and was \
             killed (see finish_job)"
        );
    }
    assert!(
        run.success || !ended,
        "the job failed:\n{}\n{}",
        run.stdout,
        run.stderr
    );
    assert!(
        run.stdout.contains(library_line),
        "not {library_line}: {}",
        run.stdout
    );
    for size in ["8", "65536"] {
        let row = run
            .stdout
            .lines()
            .map(|line| line.split_whitespace().collect::<Vec<_>>())
            .find(|fields| fields.first() == Some(&size))
            .unwrap_or_else(|| panic!("no row for {size} B in {}", run.stdout));
        let latency: f64 = row[1].parse().expect("a latency");
        let bandwidth: f64 = row[2].parse().expect("a bandwidth");
        assert!(latency > 0.0 && bandwidth > 0.0, "row {row:?}");
    }
    // Rank 1 (host 1) received at least a streaming window of 64 x 64 KiB over its veth.
    assert!(
        after - before > 4 << 20,
        "only {} bytes crossed host 1's link: the ranks did not talk over the network",
        after - before
    );
}

#[test]
fn mpich_and_open_mpi_run_across_two_hosts() {
    let Some(hosts) = hosts_or_skip(2) else {
        return;
    };
    let dir = TempDir::new("mpi");
    let mpich = build_pingpong("mpicc.mpich", &dir.0);
    let openmpi = build_pingpong("mpicc.openmpi", &dir.0);
    check_pingpong_job(&hosts, hydra_command(&hosts, &mpich), "MPICH Version");
    check_pingpong_job(&hosts, openmpi_command(&hosts, &openmpi), "Open MPI");
}

#[test]
fn what_an_ended_test_process_left_is_removed() {
    let Some(probe) = hosts_or_skip(1) else {
        return;
    };
    drop(probe);
    // A pid no process has: what a crashed run left carries its creator's pid in its names.
    let dead = (1_000_000..1_100_000u32)
        .rev()
        .find(|pid| !Path::new(&format!("/proc/{pid}")).exists())
        .expect("a free pid");
    let stale = format!("mpins-{dead}-0-h0");
    let made = Command::new("ip")
        .args(["netns", "add", &stale])
        .status()
        .expect("ip netns add");
    assert!(made.success());
    let etc = Path::new("/etc/netns").join(&stale);
    let temp = std::env::temp_dir().join(format!("mpins-{dead}-0"));
    std::fs::create_dir_all(&etc).expect("a stale /etc/netns entry");
    std::fs::create_dir_all(&temp).expect("a stale temporary directory");

    let hosts = Hosts::create(1).expect("hosts after a probe succeeded");
    let listed = String::from_utf8(
        Command::new("ip")
            .args(["netns", "list"])
            .output()
            .expect("ip netns list")
            .stdout,
    )
    .expect("utf-8");
    let left = listed.contains(&stale);
    if left {
        let _ = Command::new("ip").args(["netns", "del", &stale]).status();
    }
    assert!(!left, "{stale} was not removed");
    assert!(
        !etc.exists() && !temp.exists(),
        "stale files were not removed"
    );
    drop(hosts);
}
