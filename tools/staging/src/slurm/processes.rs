//! The processes of a test cluster: its daemons (children of the test), commands run with a
//! time limit, and the sweep that finds and ends every process that belongs to the cluster,
//! including the ones Slurm starts away from the test's process tree (slurmstepd, tasks).

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// How long a polling loop sleeps at first and at most between two looks.
pub const FIRST_PAUSE: Duration = Duration::from_millis(10);
pub const LONGEST_PAUSE: Duration = Duration::from_millis(200);

/// A daemon of the cluster, started in the foreground as a child of the test.
#[derive(Debug)]
pub struct Daemon {
    /// What it is (`munged`, `slurmctld`, `slurmd n0`).
    pub name: String,
    pub child: Child,
    /// Its standard output and error.
    pub output: PathBuf,
    /// Its own log file, if it writes one.
    pub log: Option<PathBuf>,
}

impl Daemon {
    /// Starts `command` with its output to `output`, stdin from /dev/null.
    pub fn spawn(
        name: &str,
        mut command: Command,
        output: PathBuf,
        log: Option<PathBuf>,
    ) -> io::Result<Daemon> {
        let file = File::create(&output)?;
        command
            .stdin(Stdio::null())
            .stdout(file.try_clone()?)
            .stderr(file);
        let child = command.spawn()?;
        tracing::debug!("started {name} (pid {}): {command:?}", child.id());
        Ok(Daemon {
            name: name.to_string(),
            child,
            output,
            log,
        })
    }

    /// Its exit status if it has ended.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// The last lines of its output and log, for an error message.
    pub fn tail(&self) -> String {
        let mut text = tail_of(&self.output, 12);
        if let Some(log) = &self.log {
            text.push_str(&tail_of(log, 12));
        }
        text
    }
}

/// The last `lines` lines of `path`, each indented and prefixed by the file name; empty if
/// the file is missing or empty.
pub fn tail_of(path: &Path, lines: usize) -> String {
    let Ok(text) = std::fs::read_to_string(path) else {
        return String::new();
    };
    let all: Vec<&str> = text.lines().collect();
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    all[all.len().saturating_sub(lines)..]
        .iter()
        .map(|line| format!("\n    {name}: {line}"))
        .collect()
}

/// Runs `command` with stdin from /dev/null, collecting its output, for at most `limit`. Past
/// it the command gets SIGTERM (srun then cancels its step), 3 s later SIGKILL, and the result
/// is an error of kind [`io::ErrorKind::TimedOut`] with what it had printed.
pub fn output_within(mut command: Command, limit: Duration) -> io::Result<Output> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn()?;
    let stdout = collect(child.stdout.take());
    let stderr = collect(child.stderr.take());
    let deadline = Instant::now() + limit;
    let status = wait_until(&mut child, deadline)?;
    let status = match status {
        Some(status) => status,
        None => {
            signal(child.id() as i32, libc::SIGTERM);
            match wait_until(&mut child, Instant::now() + Duration::from_secs(3))? {
                Some(status) => status,
                None => {
                    child.kill()?;
                    child.wait()?
                }
            }
        }
    };
    let output = Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    };
    if Instant::now() > deadline {
        return Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "{command:?} did not finish within {limit:?} and was killed; it printed\n\
                 stdout: {}\nstderr: {}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ),
        ));
    }
    Ok(output)
}

/// Reads `pipe` to its end on a thread of its own.
fn collect<R: Read + Send + 'static>(pipe: Option<R>) -> thread::JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        bytes
    })
}

/// Waits for `child` until `deadline`: its status, or `None` if it still runs then.
fn wait_until(child: &mut Child, deadline: Instant) -> io::Result<Option<ExitStatus>> {
    let mut pause = FIRST_PAUSE;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        let now = Instant::now();
        if now >= deadline {
            return Ok(None);
        }
        thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(LONGEST_PAUSE);
    }
}

/// Sends `signal` to process `pid` (an error, e.g. the process is gone, is ignored).
pub fn signal(pid: i32, signal: i32) {
    if pid <= 0 {
        return;
    }
    // SAFETY: kill(2) takes plain integers and touches no memory of ours; a positive pid
    // names one process, never a group.
    unsafe {
        libc::kill(pid, signal);
    }
}

/// Whether process `pid` exists and has not ended (a zombie has ended).
pub fn is_running(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // The state follows the command name in parentheses, which may itself hold ") ".
    stat.rsplit_once(')')
        .is_some_and(|(_, rest)| !matches!(rest.trim_start().chars().next(), Some('Z' | 'X')))
}

/// Process `pid`'s parent, if it still runs.
fn parent(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command name in parentheses (which may itself hold ") "): state, parent.
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// What marks a process as the cluster's.
#[derive(Debug)]
pub struct Marks {
    /// `SLURM_CONF=<the cluster's slurm.conf>` as it appears in `/proc/<pid>/environ`: the
    /// daemons and srun get it from the harness, the tasks from srun, and slurmstepd sets
    /// it itself.
    pub environment: Vec<u8>,
    /// The cluster's network namespaces (inode numbers).
    pub namespaces: Vec<u64>,
}

impl Marks {
    /// Every process other than this one that carries one of the marks.
    pub fn processes(&self) -> Vec<i32> {
        let own = std::process::id() as i32;
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
            .filter(|&pid| pid != own && self.marks(pid))
            .collect()
    }

    fn marks(&self, pid: i32) -> bool {
        if !self.namespaces.is_empty() {
            if let Ok(link) = std::fs::read_link(format!("/proc/{pid}/ns/net")) {
                let link = link.to_string_lossy();
                let inode = link
                    .strip_prefix("net:[")
                    .and_then(|rest| rest.strip_suffix(']'))
                    .and_then(|number| number.parse::<u64>().ok());
                if inode.is_some_and(|inode| self.namespaces.contains(&inode)) {
                    return true;
                }
            }
        }
        std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|environ| {
            environ
                .split(|&byte| byte == 0)
                .any(|entry| entry == self.environment.as_slice())
        })
    }
}

/// Ends `daemons` and every other process with `marks`. The others that are not a daemon's
/// child (slurmstepd, tasks, srun) get SIGKILL at once: a daemon waits for the steps it knows
/// to end before it exits. The daemons get SIGTERM and up to `grace` to end (slurmctld stops
/// its slurmscriptd itself), then SIGKILL with whatever is left or has appeared meanwhile,
/// and up to 2 s more. The daemons are reaped. Returns the processes still running
/// after that (none, unless the kernel holds one).
pub fn end_all(daemons: &mut [Daemon], marks: &Marks, grace: Duration) -> Vec<i32> {
    let daemon_pids: Vec<i32> = daemons
        .iter_mut()
        .filter_map(|daemon| daemon.exited().is_none().then(|| daemon.child.id() as i32))
        .collect();
    let others: Vec<i32> = marks
        .processes()
        .into_iter()
        .filter(|pid| !daemon_pids.contains(pid))
        .filter(|&pid| !parent(pid).is_some_and(|parent| daemon_pids.contains(&parent)))
        .collect();
    tracing::debug!("ending the cluster's daemons {daemon_pids:?} and processes {others:?}");
    for &pid in &others {
        signal(pid, libc::SIGKILL);
    }
    for &pid in &daemon_pids {
        signal(pid, libc::SIGTERM);
    }
    let all: Vec<i32> = daemon_pids.iter().chain(&others).copied().collect();
    let mut left = wait_for_end(daemons, &all, Instant::now() + grace);
    let late: Vec<i32> = marks
        .processes()
        .into_iter()
        .filter(|pid| !left.contains(pid))
        .collect();
    left.extend(late);
    if !left.is_empty() {
        tracing::debug!("killing {left:?}");
        for &pid in &left {
            signal(pid, libc::SIGKILL);
        }
        left = wait_for_end(daemons, &left, Instant::now() + Duration::from_secs(2));
    }
    // A daemon that ended after the last reaping look is a zombie until waited for.
    for daemon in daemons.iter_mut() {
        if !is_running(daemon.child.id() as i32) {
            let _ = daemon.child.wait();
        }
    }
    left
}

/// Waits until none of `pids` runs or `deadline` passes, reaping `daemons` that end; returns
/// the ones still running.
fn wait_for_end(daemons: &mut [Daemon], pids: &[i32], deadline: Instant) -> Vec<i32> {
    let mut pause = FIRST_PAUSE;
    loop {
        for daemon in daemons.iter_mut() {
            daemon.exited();
        }
        let left: Vec<i32> = pids
            .iter()
            .copied()
            .filter(|&pid| is_running(pid))
            .collect();
        let now = Instant::now();
        if left.is_empty() || now >= deadline {
            return left;
        }
        thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(LONGEST_PAUSE);
    }
}
