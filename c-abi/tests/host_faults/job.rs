//! One job under a guard: a launcher (or a single rank) whose output is collected line by
//! line with arrival times, whose processes are found by a variable in their environment,
//! and which is killed, with everything it started, when the guard is dropped.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// The variable that marks every process of a job (launchers pass their environment on).
pub const TAG_VAR: &str = "HOST_FAULTS_JOB";

/// A line of output and when it arrived.
#[derive(Clone, Debug)]
pub struct Line {
    pub at: Instant,
    /// `CLOCK_MONOTONIC` seconds at arrival (see [`crate::mono_now`]).
    pub mono: f64,
    pub stderr: bool,
    pub text: String,
}

/// A running (or ended) job; see the module documentation.
pub struct Job {
    child: Child,
    description: String,
    tag: String,
    lines: Arc<Mutex<Vec<Line>>>,
    readers: Vec<JoinHandle<()>>,
    pub started: Instant,
    status: Option<ExitStatus>,
    ended_at: Option<Instant>,
    ended_mono: Option<f64>,
}

impl Job {
    /// Starts `command` as job `tag`, in a process group of its own.
    pub fn start(mut command: Command, tag: &str) -> Job {
        command
            .env(TAG_VAR, tag)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let description = format!("{command:?}");
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {description}: {e}"));
        let lines = Arc::new(Mutex::new(Vec::new()));
        let readers = vec![
            collect(child.stdout.take().expect("piped"), false, lines.clone()),
            collect(child.stderr.take().expect("piped"), true, lines.clone()),
        ];
        Job {
            child,
            description,
            tag: tag.to_owned(),
            lines,
            readers,
            started: Instant::now(),
            status: None,
            ended_at: None,
            ended_mono: None,
        }
    }

    /// The lines so far.
    pub fn lines(&self) -> Vec<Line> {
        self.lines.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Everything printed so far, stdout and stderr interleaved in arrival order.
    pub fn output(&self) -> String {
        self.lines()
            .iter()
            .map(|l| format!("{}\n", l.text))
            .collect()
    }

    /// The command, how it ended, and its output, for assertion messages.
    pub fn describe(&self) -> String {
        let ended = match (self.status, self.ended_at) {
            (Some(s), Some(at)) => format!("{s} after {:.2?}", at - self.started),
            _ => format!("still running after {:.2?}", self.started.elapsed()),
        };
        format!(
            "\n  command: {}\n  ended:   {ended}\n---- output ----\n{}----------------",
            self.description,
            self.output()
        )
    }

    /// The first line that satisfies `pred`, waiting at most `limit` for it.
    pub fn try_wait_for(&self, limit: Duration, pred: impl Fn(&Line) -> bool) -> Option<Line> {
        let end = Instant::now() + limit;
        loop {
            if let Some(l) = self.lines().into_iter().find(|l| pred(l)) {
                return Some(l);
            }
            if Instant::now() >= end {
                return None;
            }
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// As [`Job::try_wait_for`], failing the test (naming `what`) if no such line comes.
    pub fn wait_for(&self, what: &str, limit: Duration, pred: impl Fn(&Line) -> bool) -> Line {
        self.try_wait_for(limit, pred)
            .unwrap_or_else(|| panic!("no {what} within {limit:?}:{}", self.describe()))
    }

    /// Waits at most `limit` for the launcher to end; its status if it did.
    pub fn wait_end(&mut self, limit: Duration) -> Option<ExitStatus> {
        let end = Instant::now() + limit;
        while self.status.is_none() {
            match self.child.try_wait() {
                Ok(Some(status)) => {
                    self.status = Some(status);
                    self.ended_at = Some(Instant::now());
                    self.ended_mono = Some(crate::mono_now());
                    // The pipes close when the last process holding them ends; the launcher
                    // ending first (its ranks orphaned) must not block the test.
                    let deadline = Instant::now() + Duration::from_secs(5);
                    while self.readers.iter().any(|r| !r.is_finished()) && Instant::now() < deadline
                    {
                        thread::sleep(Duration::from_millis(5));
                    }
                }
                Ok(None) if Instant::now() < end => thread::sleep(Duration::from_millis(5)),
                Ok(None) => return None,
                Err(e) => panic!("cannot wait for {}: {e}", self.description),
            }
        }
        self.status
    }

    /// When the launcher ended (`CLOCK_MONOTONIC` seconds), if it has.
    pub fn ended_mono(&self) -> Option<f64> {
        self.ended_mono
    }

    /// The launcher's pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The job's tag (see [`TAG_VAR`]).
    pub fn tag(&self) -> &str {
        &self.tag
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        if self.status.is_none() {
            let group = -(self.child.id() as libc::pid_t);
            // SAFETY: kill(2) on the process group this guard created for its launcher
            // (process_group(0) at spawn); no memory is involved.
            unsafe { libc::kill(group, libc::SIGKILL) };
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        // Ranks and proxies started through other process groups or namespaces.
        for _ in 0..50 {
            let left = super::procs::tagged(&self.tag);
            if left.is_empty() {
                break;
            }
            for p in left {
                // SAFETY: kill(2) on a process that carries this job's tag in its
                // environment, i.e. one this job started.
                unsafe { libc::kill(p.pid, libc::SIGKILL) };
            }
            thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Reads a pipe to its end on a thread, appending lines with their arrival times.
fn collect(
    pipe: impl Read + Send + 'static,
    stderr: bool,
    lines: Arc<Mutex<Vec<Line>>>,
) -> JoinHandle<()> {
    thread::spawn(move || {
        let mut reader = BufReader::new(pipe);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match reader.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let text = String::from_utf8_lossy(&buf).trim_end().to_owned();
                    lines.lock().unwrap_or_else(|p| p.into_inner()).push(Line {
                        at: Instant::now(),
                        mono: crate::mono_now(),
                        stderr,
                        text,
                    });
                }
            }
        }
    })
}
