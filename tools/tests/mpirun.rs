//! `mpirun` / `mpiexec` run with ordinary programs (`sh`, `cat`, `true`, `sleep`) as ranks:
//! the rank environment, exit statuses, a failing or killed rank ending the job, stdin and
//! output forwarding, the time limit, signals, early errors, and that no process outlives the
//! job. Every test bounds its own run time (see [`Run`]).

mod common;
use common::{collect, wait_bounded};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

const MPIRUN: &str = env!("CARGO_BIN_EXE_mpirun");
const MPIEXEC: &str = env!("CARGO_BIN_EXE_mpiexec");

/// No test's job may run longer than this; past it the job is killed and the test fails.
const HARD_LIMIT: Duration = Duration::from_secs(10);

/// The result of one `mpirun`.
struct Run {
    /// Exit status as a shell reports it (128+N for signal N).
    status: i32,
    stdout: String,
    stderr: String,
    elapsed: Duration,
}

/// A launcher command with the variables that would change its behaviour removed.
fn launcher(program: &str, args: &[&str]) -> Command {
    let mut command = Command::new(program);
    command.args(args);
    for var in [
        "MPI_CHANNEL",
        "MPI_NIC_PROFILE",
        "MPIEXEC_TIMEOUT",
        "MPI_TRACE",
    ] {
        command.env_remove(var);
    }
    command
}

fn mpirun(args: &[&str]) -> Run {
    finish(launcher(MPIRUN, args), None)
}

fn shell_status(status: ExitStatus) -> i32 {
    status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}

/// Runs `command` with `input` on its stdin (or /dev/null) and collects everything.
fn finish(mut command: Command, input: Option<&str>) -> Run {
    let start = Instant::now();
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    command.stdin(if input.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    });
    let mut child = command.spawn().expect("start mpirun");
    if let (Some(text), Some(mut pipe)) = (input, child.stdin.take()) {
        let text = text.to_string();
        std::thread::spawn(move || {
            let _ = pipe.write_all(text.as_bytes());
        });
    }
    let stdout = collect(child.stdout.take().unwrap());
    let stderr = collect(child.stderr.take().unwrap());
    let status = wait_bounded(&mut child, HARD_LIMIT);
    Run {
        status: shell_status(status),
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
        elapsed: start.elapsed(),
    }
}

fn sorted_lines(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines.sort();
    lines
}

/// True once `pid` no longer runs (gone, or a zombie waiting for a reaper).
fn is_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => {
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.trim_start().chars().next());
            matches!(state, Some('Z') | Some('X'))
        }
    }
}

fn assert_all_gone(pids: &[u32], within: Duration) {
    let deadline = Instant::now() + within;
    while !pids.iter().all(|&p| is_gone(p)) {
        assert!(
            Instant::now() < deadline,
            "processes still running after the job: {:?}",
            pids.iter().filter(|&&p| !is_gone(p)).collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn pids_in(text: &str) -> Vec<u32> {
    text.split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect()
}

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mpirun-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn send_signal(pid: u32, signal: &str) {
    let ok = Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -{signal} {pid} failed");
}

#[test]
fn every_rank_gets_its_rank_and_the_same_fabric() {
    let run = mpirun(&[
        "-n",
        "3",
        "sh",
        "-c",
        "echo $NIC_RANK $NIC_FABRIC_FD $NIC_JOB_KEY",
    ]);
    assert_eq!(run.status, 0, "{}", run.stderr);
    let lines = sorted_lines(&run.stdout);
    assert_eq!(lines.len(), 3, "{}", run.stdout);
    let fields: Vec<Vec<&str>> = lines.iter().map(|l| l.split(' ').collect()).collect();
    for (rank, f) in fields.iter().enumerate() {
        assert_eq!(f[0], rank.to_string());
        assert!(f[1].parse::<u32>().is_ok(), "NIC_FABRIC_FD {:?}", f[1]);
        assert_eq!(f[2].len(), 32, "NIC_JOB_KEY {:?}", f[2]);
        assert_eq!(f[2], fields[0][2], "ranks of one job share its key");
    }
}

#[test]
fn all_ranks_succeeding_is_success_and_mpiexec_is_the_same_tool() {
    assert_eq!(mpirun(&["-n", "2", "true"]).status, 0);
    assert_eq!(
        finish(launcher(MPIEXEC, &["-n", "2", "true"]), None).status,
        0
    );
    let run = finish(launcher(MPIEXEC, &["-n", "2", "sh", "-c", "exit 5"]), None);
    assert_eq!(run.status, 5);
    assert!(run.stderr.starts_with("mpiexec: rank "), "{}", run.stderr);
    assert_eq!(mpirun(&["-n", "2", "false"]).status, 1);
}

#[test]
fn the_first_failing_rank_gives_the_status_and_ends_the_job() {
    // As MPI_Abort(comm, 7) arrives: the rank exits 7 while its peers are still busy.
    let run = mpirun(&[
        "-n",
        "3",
        "sh",
        "-c",
        "if [ $NIC_RANK = 1 ]; then exit 7; fi; exec sleep 30",
    ]);
    assert_eq!(run.status, 7, "{}", run.stderr);
    assert!(
        run.elapsed < Duration::from_secs(2),
        "took {:?}",
        run.elapsed
    );
    assert!(
        run.stderr.contains("rank 1 (pid ") && run.stderr.contains("exited with status 7"),
        "{}",
        run.stderr
    );
    assert_eq!(
        run.stderr.matches("ending the job").count(),
        1,
        "{}",
        run.stderr
    );
}

#[test]
fn a_rank_killed_by_a_signal_ends_the_job_within_a_second() {
    let run = mpirun(&[
        "-n",
        "3",
        "sh",
        "-c",
        "if [ $NIC_RANK = 1 ]; then kill -9 $$; fi; exec sleep 30",
    ]);
    assert_eq!(run.status, 137, "{}", run.stderr);
    assert!(
        run.elapsed < Duration::from_secs(2),
        "took {:?}",
        run.elapsed
    );
    assert!(
        run.stderr.contains("rank 1 (pid ") && run.stderr.contains("killed by signal 9 (SIGKILL)"),
        "{}",
        run.stderr
    );
    assert_eq!(
        run.stderr.lines().count(),
        1,
        "one line about the failure only: {}",
        run.stderr
    );
}

#[test]
fn a_rank_that_exits_zero_leaves_the_others_running() {
    let run = mpirun(&[
        "-n",
        "2",
        "sh",
        "-c",
        "if [ $NIC_RANK = 0 ]; then exit 0; fi; sleep 0.3; echo still-here",
    ]);
    assert_eq!(run.status, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "still-here\n");
}

#[test]
fn stdin_reaches_rank_0_only() {
    let run = finish(
        launcher(MPIRUN, &["-l", "-n", "3", "sh", "-c", "cat; echo done"]),
        Some("hello\nworld\n"),
    );
    assert_eq!(run.status, 0, "{}", run.stderr);
    assert_eq!(
        sorted_lines(&run.stdout),
        ["[0] done", "[0] hello", "[0] world", "[1] done", "[2] done"]
    );
    let hello = run.stdout.find("[0] hello").unwrap();
    assert!(
        hello < run.stdout.find("[0] world").unwrap()
            && run.stdout.find("[0] done").unwrap() > hello
    );
}

#[test]
fn tagged_output_prefixes_every_line_of_both_streams() {
    let run = mpirun(&[
        "-l",
        "-n",
        "2",
        "sh",
        "-c",
        "echo one; echo two >&2; printf three",
    ]);
    assert_eq!(run.status, 0, "{}", run.stderr);
    assert_eq!(
        sorted_lines(&run.stdout),
        ["[0] one", "[0] three", "[1] one", "[1] three"]
    );
    assert_eq!(sorted_lines(&run.stderr), ["[0] two", "[1] two"]);
    // MPICH's spelling of the same option.
    let hydra = mpirun(&["-prepend-rank", "-np", "1", "echo", "x"]);
    assert_eq!(hydra.stdout, "[0] x\n");
}

#[test]
fn lines_of_many_ranks_are_never_mixed() {
    let script = "i=0; while [ $i -lt 300 ]; do \
                  echo \"rank $NIC_RANK line $i xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"; \
                  i=$((i+1)); done";
    let run = mpirun(&["-n", "4", "sh", "-c", script]);
    assert_eq!(run.status, 0, "{}", run.stderr);
    let mut next = [0usize; 4];
    for line in run.stdout.lines() {
        let words: Vec<&str> = line.split(' ').collect();
        assert!(
            words.len() == 5 && words[0] == "rank" && words[2] == "line" && words[4].len() == 80,
            "mixed line: {line:?}"
        );
        let rank: usize = words[1].parse().unwrap();
        assert_eq!(
            words[3].parse::<usize>().unwrap(),
            next[rank],
            "lines of rank {rank} out of order"
        );
        next[rank] += 1;
    }
    assert_eq!(next, [300; 4]);
}

#[test]
fn untagged_output_is_passed_through_as_written() {
    let run = mpirun(&["-n", "1", "printf", "no newline"]);
    assert_eq!(run.stdout, "no newline");
}

#[test]
fn the_time_limit_ends_the_job() {
    let run = mpirun(&["--timeout", "0.5", "-n", "2", "sleep", "30"]);
    assert_eq!(run.status, 255, "{}", run.stderr);
    assert!(
        run.elapsed < Duration::from_millis(2500),
        "took {:?}",
        run.elapsed
    );
    assert!(run.stderr.contains("time limit"), "{}", run.stderr);

    let mut command = launcher(MPIRUN, &["-n", "1", "sleep", "30"]);
    command.env("MPIEXEC_TIMEOUT", "0.3");
    let run = finish(command, None);
    assert_eq!(run.status, 255, "{}", run.stderr);
}

/// Starts `mpirun` with `args` and waits until its ranks have printed `ready_lines` lines;
/// returns the child and those lines.
fn start_and_wait_ready(
    args: &[&str],
    ready_lines: usize,
) -> (Child, Vec<String>, std::thread::JoinHandle<String>) {
    let mut child = launcher(MPIRUN, args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = collect(child.stderr.take().unwrap());
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut lines = Vec::new();
    while lines.len() < ready_lines {
        let mut line = String::new();
        assert!(
            reader.read_line(&mut line).unwrap() > 0,
            "mpirun's output ended early"
        );
        lines.push(line.trim_end().to_string());
    }
    // Keep draining so that the ranks never block on a full pipe.
    std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = reader.read_to_string(&mut rest);
    });
    (child, lines, stderr)
}

#[test]
fn sigterm_is_passed_on_to_the_ranks() {
    let dir = scratch("sigterm");
    let script = format!(
        "trap 'echo $NIC_RANK > {}/term.$NIC_RANK; exit 3' TERM; echo ready; sleep 30 & wait",
        dir.display()
    );
    let (mut child, _, stderr) = start_and_wait_ready(&["-n", "2", "sh", "-c", &script], 2);
    let start = Instant::now();
    send_signal(child.id(), "TERM");
    let status = wait_bounded(&mut child, HARD_LIMIT);
    assert_eq!(shell_status(status), 143, "{}", stderr.join().unwrap());
    assert!(start.elapsed() < Duration::from_secs(2));
    for rank in 0..2 {
        assert!(
            dir.join(format!("term.{rank}")).exists(),
            "rank {rank} did not get SIGTERM"
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn sigint_ends_the_job_and_leaves_no_process() {
    let (mut child, lines, stderr) =
        start_and_wait_ready(&["-n", "2", "sh", "-c", "echo $$; exec sleep 30"], 2);
    let pids = pids_in(&lines.join(" "));
    assert_eq!(pids.len(), 2);
    send_signal(child.id(), "INT");
    let status = wait_bounded(&mut child, HARD_LIMIT);
    let stderr = stderr.join().unwrap();
    assert_eq!(shell_status(status), 130, "{stderr}");
    assert!(stderr.contains("got SIGINT"), "{stderr}");
    assert_all_gone(&pids, Duration::from_millis(500));
}

#[test]
fn processes_started_by_ranks_do_not_outlive_the_job() {
    let run = mpirun(&["-n", "2", "sh", "-c", "sleep 30 & echo $! $$"]);
    assert_eq!(run.status, 0, "{}", run.stderr);
    assert!(
        run.elapsed < Duration::from_secs(3),
        "took {:?}",
        run.elapsed
    );
    let pids = pids_in(&run.stdout);
    assert_eq!(pids.len(), 4, "{}", run.stdout);
    assert_all_gone(&pids, Duration::from_millis(500));
}

#[test]
fn killing_mpirun_kills_the_ranks_and_what_they_started() {
    let dir = scratch("sigkill");
    let script = format!(
        "sleep 30 & echo $! > {0}/child.$NIC_RANK; echo $$ > {0}/rank.$NIC_RANK; exec sleep 30",
        dir.display()
    );
    let mut child = launcher(MPIRUN, &["-n", "2", "sh", "-c", &script])
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let files: Vec<PathBuf> = ["child.0", "child.1", "rank.0", "rank.1"]
        .iter()
        .map(|f| dir.join(f))
        .collect();
    let deadline = Instant::now() + Duration::from_secs(5);
    let pids = loop {
        let read: Vec<Option<u32>> = files
            .iter()
            .map(|f| {
                std::fs::read_to_string(f)
                    .ok()
                    .and_then(|t| t.trim().parse().ok())
            })
            .collect();
        if read.iter().all(Option::is_some) {
            break read.into_iter().map(Option::unwrap).collect::<Vec<u32>>();
        }
        assert!(Instant::now() < deadline, "ranks did not start");
        std::thread::sleep(Duration::from_millis(10));
    };
    child.kill().unwrap();
    child.wait().unwrap();
    assert_all_gone(&pids, Duration::from_secs(1));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn bad_channel_is_refused_before_anything_starts() {
    let run = mpirun(&["--channel", "tcp", "-n", "2", "sh", "-c", "echo started"]);
    assert_eq!(run.status, 2);
    assert!(run.stdout.is_empty());
    assert!(
        run.stderr.contains("'tcp'") && run.stderr.contains("bip, fm, fm1"),
        "{}",
        run.stderr
    );

    let mut command = launcher(MPIRUN, &["true"]);
    command.env("MPI_CHANNEL", "quic");
    let run = finish(command, None);
    assert_eq!(run.status, 2);
    assert!(run.stderr.contains("MPI_CHANNEL"), "{}", run.stderr);

    let run = mpirun(&["--channel", "fm1", "sh", "-c", "echo $MPI_CHANNEL"]);
    assert_eq!(run.stdout, "fm1\n");
}

#[test]
fn profile_is_checked_and_passed_on() {
    let run = mpirun(&["--profile", "no-such-nic", "true"]);
    assert_eq!(run.status, 2);
    assert!(
        run.stderr.contains("--profile") && run.stderr.contains("no-such-nic"),
        "{}",
        run.stderr
    );
    let run = mpirun(&[
        "--profile",
        "myrinet-lanai4",
        "sh",
        "-c",
        "echo $MPI_NIC_PROFILE",
    ]);
    assert_eq!(run.status, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "myrinet-lanai4\n");
}

#[test]
fn a_program_that_cannot_run_is_reported_before_anything_starts() {
    let run = mpirun(&["-n", "2", "no-such-program-anywhere"]);
    assert_eq!(run.status, 127);
    assert!(
        run.stderr
            .contains("cannot find the program 'no-such-program-anywhere'"),
        "{}",
        run.stderr
    );

    let run = mpirun(&["-n", "2", "/no/such/dir/prog"]);
    assert_eq!(run.status, 127);
    assert!(run.stderr.contains("/no/such/dir/prog"), "{}", run.stderr);

    let dir = scratch("program");
    let plain = dir.join("data.txt");
    std::fs::write(&plain, "echo hi\n").unwrap();
    let run = mpirun(&[plain.to_str().unwrap()]);
    assert_eq!(run.status, 126);
    assert!(run.stderr.contains("not executable"), "{}", run.stderr);

    let run = mpirun(&[dir.to_str().unwrap()]);
    assert_eq!(run.status, 126);
    assert!(run.stderr.contains("directory"), "{}", run.stderr);

    // Executable, but the kernel cannot start it: its interpreter does not exist.
    let script = dir.join("script");
    std::fs::write(&script, "#!/no/such/interpreter\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let run = mpirun(&["-n", "2", script.to_str().unwrap()]);
    assert_eq!(run.status, 1);
    assert!(
        run.stderr.contains("cannot start rank 0") && run.stderr.contains("interpreter"),
        "{}",
        run.stderr
    );
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn environment_options_reach_every_rank() {
    let run = mpirun(&[
        "-np",
        "2",
        "-genv",
        "GREETING",
        "hello",
        "-x",
        "WHOM=world",
        "sh",
        "-c",
        "echo $GREETING $WHOM",
    ]);
    assert_eq!(run.status, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "hello world\nhello world\n");
    // Options after the program name are the program's, even ones mpirun also has.
    let run = mpirun(&[
        "-n=2",
        "sh",
        "-c",
        "printf '%s|' \"$@\"; echo",
        "sh",
        "-n",
        "3",
        "--np",
        "-l",
    ]);
    assert_eq!(
        run.stdout, "-n|3|--np|-l|\n-n|3|--np|-l|\n",
        "{}",
        run.stderr
    );
    let run = mpirun(&["-x", "NOVALUE", "true"]);
    assert_eq!(run.status, 2);
    assert!(run.stderr.contains("NAME=VALUE"), "{}", run.stderr);
}

#[test]
fn bind_to_core_pins_each_rank_to_one_cpu() {
    let run = mpirun(&[
        "--bind-to",
        "core",
        "-n",
        "2",
        "sh",
        "-c",
        "grep Cpus_allowed_list /proc/self/status",
    ]);
    assert_eq!(run.status, 0, "{}", run.stderr);
    for line in run.stdout.lines() {
        let cpus = line.split_whitespace().last().unwrap();
        assert!(cpus.parse::<u32>().is_ok(), "not a single CPU: {line}");
    }
}

// ---- PMI, and ranks on several hosts ----
//
// Ranks on "other hosts" are started by a launch script written by the test that records its
// arguments and runs the command here, as sshd would (`sh -c` on the words after the host);
// the hosts' names (hostA, hostB) are never resolved, since `--pmi-address 127.0.0.1` says
// where ranks reach mpirun. The rank program is the `pmi` crate's example `pmi_check`, which
// puts, fences and gets every rank's value over PMI and says `rank R of N ok`.

/// The `pmi` crate's example `pmi_check`, built once per test process into this test's target
/// directory.
fn pmi_check() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let exe = std::env::current_exe().unwrap();
            let profile_dir = exe.parent().unwrap().parent().unwrap().to_path_buf();
            let target_dir = profile_dir.parent().unwrap();
            let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
            let mut command = Command::new(cargo);
            command
                .args([
                    "build",
                    "--quiet",
                    "--package",
                    "pmi",
                    "--example",
                    "pmi_check",
                ])
                .arg("--target-dir")
                .arg(target_dir)
                .current_dir(env!("CARGO_MANIFEST_DIR"));
            if profile_dir.file_name().is_some_and(|n| n == "release") {
                command.arg("--release");
            }
            let status = command.status().expect("run cargo");
            assert!(status.success(), "building pmi_check failed: {status}");
            let path = profile_dir.join("examples").join("pmi_check");
            assert!(path.is_file(), "{} was not built", path.display());
            path
        })
        .clone()
}

/// A launch script in `dir` that appends its arguments (one line per call) to `dir/calls`,
/// fails like ssh for the hosts in `failing`, and otherwise runs the command here.
fn launch_script(dir: &std::path::Path, failing: &[&str]) -> PathBuf {
    let mut text = String::from("#!/bin/sh\n");
    text.push_str(&format!(
        "printf '%s\\n' \"$*\" >> '{}/calls'\n",
        dir.display()
    ));
    text.push_str("host=$1; shift\n");
    for host in failing {
        text.push_str(&format!(
            "if [ \"$host\" = {host} ]; then echo \"ssh: connect to host $host port 22: No route to host\" >&2; exit 255; fi\n"
        ));
    }
    text.push_str("exec sh -c \"$*\"\n");
    let path = dir.join("launch");
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// The launch script's calls: (host, the rest of the line).
fn launch_calls(dir: &std::path::Path) -> Vec<(String, String)> {
    std::fs::read_to_string(dir.join("calls"))
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let (host, rest) = l.split_once(' ').unwrap();
            (host.to_string(), rest.to_string())
        })
        .collect()
}

/// The value of `NAME=` in a recorded launch call.
fn setting<'a>(call: &'a str, name: &str) -> Option<&'a str> {
    call.split(' ')
        .find_map(|word| word.strip_prefix(&format!("{name}=")))
}

/// `mpirun` with the PMI and host variables of this test process's environment removed.
fn mpirun_clean(args: &[&str]) -> Run {
    let mut command = launcher(MPIRUN, args);
    for var in [
        "PMI_FD",
        "PMI_PORT",
        "PMI_ID",
        "PMI_RANK",
        "PMI_SIZE",
        "PMI_JOBID",
        "MPI_PMI_KEY",
        "MPI_PMI_VERSION",
        "MPI_WIRE",
    ] {
        command.env_remove(var);
    }
    finish(command, None)
}

fn ok_lines(stdout: &str, n: usize) {
    let lines = sorted_lines(stdout);
    assert_eq!(lines.len(), n, "{stdout}");
    for (rank, line) in lines.iter().enumerate() {
        assert!(
            line.starts_with(&format!("pmi_check: rank {rank} of {n} ok (PMI-1")),
            "{line}"
        );
    }
}

#[test]
fn every_rank_gets_pmi_over_an_inherited_socket() {
    let check = pmi_check();
    let run = mpirun_clean(&["-n", "4", check.to_str().unwrap()]);
    assert_eq!(run.status, 0, "{}", run.stderr);
    ok_lines(&run.stdout, 4);
    // One host: the fabric and PMI side by side; the mapping says one node.
    assert!(
        run.stdout.contains("mapping (vector,(0,1,4))"),
        "{}",
        run.stdout
    );
    let run = mpirun_clean(&[
        "-n",
        "2",
        "sh",
        "-c",
        "echo $PMI_RANK/$PMI_SIZE ${PMI_FD:+fd} ${NIC_FABRIC_FD:+fabric} ${PMI_PORT:-noport}",
    ]);
    assert_eq!(
        sorted_lines(&run.stdout),
        ["0/2 fd fabric noport", "1/2 fd fabric noport"]
    );
}

#[test]
fn wire_tcp_runs_without_a_fabric_and_tells_the_ranks() {
    let check = pmi_check();
    let run = mpirun_clean(&["--wire", "tcp", "-n", "3", check.to_str().unwrap()]);
    assert_eq!(run.status, 0, "{}", run.stderr);
    ok_lines(&run.stdout, 3);
    let run = mpirun_clean(&[
        "--wire",
        "tcp",
        "-n",
        "2",
        "sh",
        "-c",
        "echo $MPI_WIRE ${PMI_FD:+fd} ${NIC_FABRIC_FD:-nofabric}",
    ]);
    assert_eq!(
        sorted_lines(&run.stdout),
        ["tcp fd nofabric", "tcp fd nofabric"]
    );
    let run = mpirun_clean(&[
        "--wire",
        "auto",
        "sh",
        "-c",
        "echo $MPI_WIRE ${NIC_FABRIC_FD:+fabric}",
    ]);
    assert_eq!(run.stdout, "auto fabric\n");
}

#[test]
fn a_pmi_abort_ends_the_job_with_its_code_and_message() {
    let check = pmi_check();
    let run = mpirun_clean(&["-n", "3", check.to_str().unwrap(), "abort", "1", "7"]);
    assert_eq!(run.status, 7, "{}", run.stderr);
    assert!(
        run.stderr.contains("rank 1 (pid ")
            && run
                .stderr
                .contains("aborted the job with status 7: pmi_check rank 1 aborts with 7"),
        "{}",
        run.stderr
    );
    assert_eq!(
        run.stderr.matches("ending the job").count(),
        1,
        "{}",
        run.stderr
    );
    assert!(
        run.elapsed < Duration::from_secs(3),
        "took {:?}",
        run.elapsed
    );
}

#[test]
fn ranks_on_other_hosts_are_launched_and_reach_pmi_over_tcp() {
    let check = pmi_check();
    let dir = scratch("remote");
    let script = launch_script(&dir, &[]);
    let run = mpirun_clean(&[
        "--hosts",
        "hostA,hostB:2,localhost",
        "--launcher-exec",
        script.to_str().unwrap(),
        "--pmi-address",
        "127.0.0.1",
        "-x",
        "SPACED=a b",
        "-n",
        "5",
        check.to_str().unwrap(),
    ]);
    assert_eq!(run.status, 0, "{}", run.stderr);
    ok_lines(&run.stdout, 5);
    // hostA, hostB, hostB, localhost, then around again: hostA.
    assert!(
        run.stdout
            .contains("mapping (vector,(0,1,1),(1,1,2),(2,1,1),(0,1,1))"),
        "{}",
        run.stdout
    );
    let mut calls = launch_calls(&dir);
    calls.sort_by_key(|(_, rest)| setting(rest, "PMI_RANK").map(str::to_string));
    let hosts: Vec<&str> = calls.iter().map(|(h, _)| h.as_str()).collect();
    assert_eq!(
        hosts,
        ["hostA", "hostB", "hostB", "hostA"],
        "rank 3 runs here"
    );
    for (rank, (_, call)) in [0, 1, 2, 4].iter().zip(&calls) {
        assert!(call.starts_with("env "), "{call}");
        assert!(call.ends_with(check.to_str().unwrap()), "{call}");
        assert_eq!(setting(call, "PMI_RANK"), Some(rank.to_string().as_str()));
        assert_eq!(setting(call, "PMI_ID"), Some(rank.to_string().as_str()));
        assert_eq!(setting(call, "PMI_SIZE"), Some("5"));
        assert!(
            setting(call, "PMI_PORT").is_some_and(|p| p.starts_with("127.0.0.1:")),
            "{call}"
        );
        assert_eq!(setting(call, "MPI_PMI_KEY").map(str::len), Some(32));
        assert!(
            call.contains("'SPACED=a b'"),
            "quoted for the remote shell: {call}"
        );
        assert!(setting(call, "PMI_FD").is_none() && setting(call, "NIC_FABRIC_FD").is_none());
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn hostfiles_place_ranks_as_hydra_does() {
    let dir = scratch("hostfile");
    let script = launch_script(&dir, &[]);
    let hostfile = dir.join("hosts");
    std::fs::write(&hostfile, "# two nodes\nhostA:2\n\nhostB   # one slot\n").unwrap();
    let run = mpirun_clean(&[
        "--hostfile",
        hostfile.to_str().unwrap(),
        "--launcher-exec",
        script.to_str().unwrap(),
        "--pmi-address",
        "127.0.0.1",
        "-n",
        "5",
        "sh",
        "-c",
        "echo $PMI_RANK",
    ]);
    assert_eq!(run.status, 0, "{}", run.stderr);
    assert_eq!(sorted_lines(&run.stdout), ["0", "1", "2", "3", "4"]);
    let mut placed: Vec<(String, String)> = launch_calls(&dir)
        .into_iter()
        .map(|(host, call)| (setting(&call, "PMI_RANK").unwrap().to_string(), host))
        .collect();
    placed.sort();
    let placed: Vec<(&str, &str)> = placed
        .iter()
        .map(|(r, h)| (r.as_str(), h.as_str()))
        .collect();
    assert_eq!(
        placed,
        [
            ("0", "hostA"),
            ("1", "hostA"),
            ("2", "hostB"),
            ("3", "hostA"),
            ("4", "hostA")
        ]
    );
    // A bad line is refused before anything starts, naming the file and the line.
    std::fs::write(&hostfile, "hostA\nhostB:none\n").unwrap();
    let run = mpirun_clean(&["-f", hostfile.to_str().unwrap(), "true"]);
    assert_eq!(run.status, 2);
    assert!(run.stderr.contains("line 2"), "{}", run.stderr);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_launch_command_that_fails_names_the_host_and_ends_the_job() {
    let dir = scratch("unreachable");
    let script = launch_script(&dir, &["hostB"]);
    let pids = dir.join("pids");
    let run = mpirun_clean(&[
        "--hosts",
        "hostA,hostB",
        "--launcher-exec",
        script.to_str().unwrap(),
        "--pmi-address",
        "127.0.0.1",
        "-n",
        "4",
        "sh",
        "-c",
        &format!("echo $$ >> {}; exec sleep 30", pids.display()),
    ]);
    assert_eq!(run.status, 255, "{}", run.stderr);
    assert!(
        run.elapsed < Duration::from_secs(5),
        "took {:?}",
        run.elapsed
    );
    assert!(
        run.stderr.contains("No route to host")
            && run.stderr.contains("cannot start rank 1 on host hostB")
            && run.stderr.contains("before the rank reached mpirun"),
        "{}",
        run.stderr
    );
    assert_eq!(
        run.stderr.matches("ending the job").count(),
        1,
        "{}",
        run.stderr
    );
    // The ranks that did start on hostA are gone with the job.
    let started = std::fs::read_to_string(&pids).unwrap_or_default();
    assert_all_gone(&pids_in(&started), Duration::from_secs(2));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_remote_rank_that_dies_is_named_with_its_host() {
    let dir = scratch("remote-death");
    let script = launch_script(&dir, &[]);
    let run = mpirun_clean(&[
        "--hosts",
        "hostA,hostB",
        "--launcher-exec",
        script.to_str().unwrap(),
        "--pmi-address",
        "127.0.0.1",
        "-n",
        "2",
        "sh",
        "-c",
        "if [ $PMI_RANK = 1 ]; then exit 3; fi; exec sleep 30",
    ]);
    assert_eq!(run.status, 3, "{}", run.stderr);
    assert!(
        run.elapsed < Duration::from_secs(3),
        "took {:?}",
        run.elapsed
    );
    // It never spoke PMI, so it counts as not started; either way the host is named.
    assert!(
        run.stderr.contains("rank 1 on host hostB"),
        "{}",
        run.stderr
    );
    let check = pmi_check();
    let run = mpirun_clean(&[
        "--hosts",
        "hostA,hostB",
        "--launcher-exec",
        script.to_str().unwrap(),
        "--pmi-address",
        "127.0.0.1",
        "-n",
        "2",
        check.to_str().unwrap(),
        "abort",
        "1",
        "9",
    ]);
    assert_eq!(run.status, 9, "{}", run.stderr);
    assert!(
        run.stderr.contains("rank 1 on hostB (pid ")
            && run.stderr.contains("aborted the job with status 9"),
        "{}",
        run.stderr
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_stranger_with_the_wrong_key_is_refused_and_the_job_goes_on() {
    let check = pmi_check();
    let dir = scratch("stranger");
    let script = launch_script(&dir, &[]);
    // Rank 1 first knocks on mpirun's PMI port claiming rank 2 with a wrong key; rank 2 starts
    // half a second later and must still get in.
    let wrapper = dir.join("rank");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/bash\n\
             if [ \"$PMI_ID\" = 1 ]; then\n\
             exec 3<>/dev/tcp/${{PMI_PORT%:*}}/${{PMI_PORT##*:}}\n\
             printf 'cmd=initack pmiid=2 jobkey=%032d\\n' 0 >&3\n\
             read -r reply <&3\n\
             echo \"stranger: $reply\" >&2\n\
             exec 3<&-\n\
             fi\n\
             if [ \"$PMI_ID\" = 2 ]; then sleep 0.5; fi\n\
             exec {} \"$@\"\n",
            check.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let run = mpirun_clean(&[
        "--hosts",
        "hostA,hostB,hostC",
        "--launcher-exec",
        script.to_str().unwrap(),
        "--pmi-address",
        "127.0.0.1",
        "-n",
        "3",
        wrapper.to_str().unwrap(),
    ]);
    assert_eq!(run.status, 0, "{}", run.stderr);
    ok_lines(&run.stdout, 3);
    assert!(
        run.stderr
            .contains("stranger: cmd=initack rc=-1 msg=wrong_or_missing_job_key"),
        "{}",
        run.stderr
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn host_options_are_checked_and_documented() {
    // (--bind-to across hosts is accepted: remote ranks bind themselves; tests/binding.rs.)
    let run = mpirun_clean(&["--hosts", "hostA:0", "true"]);
    assert_eq!(run.status, 2, "{}", run.stderr);
    let run = mpirun_clean(&["--hosts", "a", "--hostfile", "/dev/null", "true"]);
    assert_eq!(run.status, 2, "{}", run.stderr);
    // Hosts that are this machine start ranks directly, on the fabric.
    let run = mpirun_clean(&[
        "-hosts",
        "localhost:2",
        "-n",
        "2",
        "sh",
        "-c",
        "echo ${NIC_FABRIC_FD:+fabric} ${PMI_FD:+fd}",
    ]);
    assert_eq!(run.stdout, "fabric fd\nfabric fd\n", "{}", run.stderr);
    let help = mpirun_clean(&["--help"]);
    for needle in [
        "--hosts",
        "--hostfile",
        "--launcher-exec",
        "--wire",
        "--pmi-address",
        "PMI_PORT",
        "MPI_PMI_KEY",
    ] {
        assert!(
            help.stdout.contains(needle),
            "--help lacks {needle}: {}",
            help.stdout
        );
    }
}

#[test]
fn an_mpich_built_program_runs_on_mpiruns_pmi() {
    // MPICH's own library (not ours) as the PMI client: what mpirun's server must serve.
    let Some(mpicc) = ["/usr/bin/mpicc.mpich"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
    else {
        eprintln!("skipped: mpicc.mpich is not installed (Debian package libmpich-dev)");
        return;
    };
    let dir = scratch("mpich");
    let source = dir.join("allreduce.c");
    std::fs::write(
        &source,
        "#include <mpi.h>\n#include <stdio.h>\n\
         int main(int argc, char **argv) {\n\
           int rank, size, sum = 0;\n\
           MPI_Init(&argc, &argv);\n\
           MPI_Comm_rank(MPI_COMM_WORLD, &rank);\n\
           MPI_Comm_size(MPI_COMM_WORLD, &size);\n\
           MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);\n\
           printf(\"rank %d of %d sum %d\\n\", rank, size, sum);\n\
           if (argc > 1 && rank == 1) MPI_Abort(MPI_COMM_WORLD, 5);\n\
           MPI_Finalize();\n\
           return 0;\n\
         }\n",
    )
    .unwrap();
    let program = dir.join("allreduce");
    let built = Command::new(&mpicc)
        .arg("-o")
        .arg(&program)
        .arg(&source)
        .env_remove("LD_LIBRARY_PATH")
        .status()
        .unwrap();
    assert!(built.success(), "mpicc.mpich failed");
    let run_it = |args: &[&str]| {
        let mut command = launcher(MPIRUN, &["-n", "3", program.to_str().unwrap()]);
        command.args(args).env_remove("LD_LIBRARY_PATH");
        for var in ["PMI_FD", "PMI_PORT", "PMI_JOBID", "MPI_PMI_VERSION"] {
            command.env_remove(var);
        }
        finish(command, None)
    };
    let run = run_it(&[]);
    assert_eq!(run.status, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(
        sorted_lines(&run.stdout),
        [
            "rank 0 of 3 sum 3",
            "rank 1 of 3 sum 3",
            "rank 2 of 3 sum 3"
        ]
    );
    let run = run_it(&["abort"]);
    assert_eq!(run.status, 5, "{}", run.stderr);
    assert!(run.stderr.contains("rank 1 (pid "), "{}", run.stderr);
    let _ = std::fs::remove_dir_all(dir);
}
