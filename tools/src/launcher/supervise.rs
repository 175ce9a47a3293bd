//! Starting the ranks and watching them until the job is over.
//!
//! The job runs until every rank has ended. Three things end it early, and the first one
//! decides `mpirun`'s status:
//!
//! - a rank that fails (non-zero status or a signal): `mpirun` says which, marks it dead in the
//!   fabric (as it does for every rank that ends, so peers blocked on it fail instead of
//!   hanging), sends SIGTERM to the other ranks and SIGKILL [`FAILURE_GRACE`] later; the status
//!   is the failed rank's (128+N for signal N);
//! - SIGINT, SIGTERM or SIGHUP sent to `mpirun`: passed on to every rank, SIGKILL
//!   [`SIGNAL_GRACE`] later (at once on a second signal); the status is 128+N;
//! - the time limit: SIGTERM, SIGKILL [`FAILURE_GRACE`] later, status 255.
//!
//! A rank that exits with status 0 does not end the job. Each rank leads a process group of its
//! own, and signals go to the whole group, so whatever a rank started goes with it; when all
//! ranks have ended, the groups get a last SIGKILL in case something they started lingers. If
//! `mpirun` itself is killed, the kernel kills the ranks (parent-death signal, set by
//! [`Job::prepare`]) and the [`Guard`] kills their process groups; the fabric's memory file
//! goes with the last process holding it.

use super::cli::Options;
use super::guard::Guard;
use super::os::signal_group;
use super::output::{self, Sink, Writer};
use super::status::{signal_name, RankEnd, TIMED_OUT};
use nic_model::Job;
use std::io;
use std::os::unix::process::CommandExt;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;
use tokio::signal::unix::{signal, Signal, SignalKind};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::{sleep_until, Instant};

/// Time the other ranks get to end after SIGTERM, when a rank failed or time ran out.
pub const FAILURE_GRACE: Duration = Duration::from_millis(300);
/// Time the ranks get to end after a signal `mpirun` passed on.
pub const SIGNAL_GRACE: Duration = Duration::from_secs(2);
/// How long to wait, once every rank has ended, for the last of their output.
const OUTPUT_DRAIN: Duration = Duration::from_secs(1);

/// Runs the job described by `options`; returns `mpirun`'s exit status.
pub async fn run(tool: &'static str, options: Options) -> i32 {
    let (stdout, stderr) = match (
        Writer::start(false, options.tag_output),
        Writer::start(true, options.tag_output),
    ) {
        (Ok(out), Ok(err)) => (out, err),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("{tool}: cannot start the output threads: {e}");
            return 1;
        }
    };
    let status = match Supervisor::new(tool, options, stdout.sink(), stderr.sink()) {
        Ok(mut supervisor) => supervisor.run().await,
        Err(message) => {
            stderr.sink().say(format!("{tool}: {message}"));
            1
        }
    };
    stdout.finish().await;
    stderr.finish().await;
    status
}

/// Why the job is ending before all ranks finished on their own.
#[derive(Debug)]
enum Cause {
    RankFailed(RankEnd),
    TimedOut,
    Signal(i32),
    StartFailed,
}

impl Cause {
    fn status(&self) -> i32 {
        match self {
            Cause::RankFailed(end) => end.shell_status(),
            Cause::TimedOut => TIMED_OUT,
            Cause::Signal(signal) => 128 + signal,
            Cause::StartFailed => 1,
        }
    }
}

struct Ending {
    cause: Cause,
    /// When the ranks still running get SIGKILL; `None` once they have.
    kill_at: Option<Instant>,
}

/// One started rank.
struct RankProcess {
    pid: u32,
    ended: Option<RankEnd>,
    /// `mpirun` sent it a signal (so its death is the launcher's doing, not a failure).
    signalled: bool,
}

/// What woke the supervisor.
enum Event {
    Exited(usize, io::Result<ExitStatus>),
    Signal(i32),
    KillTime,
    TimeLimit,
}

/// The signals `mpirun` passes on to the ranks.
struct Signals {
    interrupt: Signal,
    terminate: Signal,
    hangup: Signal,
}

impl Signals {
    fn install() -> io::Result<Signals> {
        Ok(Signals {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
            hangup: signal(SignalKind::hangup())?,
        })
    }
}

struct Supervisor {
    tool: &'static str,
    options: Options,
    job: Job,
    ranks: Vec<RankProcess>,
    exits: mpsc::UnboundedReceiver<(usize, io::Result<ExitStatus>)>,
    exits_sender: mpsc::UnboundedSender<(usize, io::Result<ExitStatus>)>,
    output_tasks: Vec<JoinHandle<()>>,
    stdout: Sink,
    stderr: Sink,
    signals: Signals,
    guard: Option<Guard>,
    ending: Option<Ending>,
}

impl Supervisor {
    fn new(
        tool: &'static str,
        options: Options,
        stdout: Sink,
        stderr: Sink,
    ) -> Result<Self, String> {
        let mut config = mpich_channel::job_config(options.nranks, options.modeled);
        config.bind_cores = options.bind_cores;
        let job = Job::new(&config).map_err(|e| {
            format!(
                "cannot create the job's shared-memory fabric for {} ranks: {e}",
                options.nranks
            )
        })?;
        let signals =
            Signals::install().map_err(|e| format!("cannot install signal handlers: {e}"))?;
        let guard = Guard::start().map_err(|e| format!("cannot start the guard process: {e}"))?;
        let (exits_sender, exits) = mpsc::unbounded_channel();
        Ok(Supervisor {
            tool,
            ranks: Vec::with_capacity(options.nranks),
            options,
            job,
            exits,
            exits_sender,
            output_tasks: Vec::new(),
            stdout,
            stderr,
            signals,
            guard: Some(guard),
            ending: None,
        })
    }

    async fn run(&mut self) -> i32 {
        self.start_ranks();
        let time_limit = self.options.timeout.map(|t| Instant::now() + t);
        while self.running() > 0 {
            let event = self.next_event(time_limit).await;
            match event {
                Event::Exited(rank, status) => self.on_exit(rank, status),
                Event::Signal(signal) => self.on_signal(signal),
                Event::KillTime => self.kill_remaining(),
                Event::TimeLimit => self.on_time_limit(),
            }
        }
        self.clean_up().await;
        self.ending.as_ref().map_or(0, |e| e.cause.status())
    }

    fn running(&self) -> usize {
        self.ranks.iter().filter(|r| r.ended.is_none()).count()
    }

    async fn next_event(&mut self, time_limit: Option<Instant>) -> Event {
        let kill_at = self.ending.as_ref().and_then(|e| e.kill_at);
        let time_limit = time_limit.filter(|_| self.ending.is_none());
        let never = Instant::now() + Duration::from_secs(86400 * 365);
        tokio::select! {
            biased;
            Some((rank, status)) = self.exits.recv() => Event::Exited(rank, status),
            Some(()) = self.signals.interrupt.recv() => Event::Signal(libc::SIGINT),
            Some(()) = self.signals.terminate.recv() => Event::Signal(libc::SIGTERM),
            Some(()) = self.signals.hangup.recv() => Event::Signal(libc::SIGHUP),
            () = sleep_until(kill_at.unwrap_or(never)), if kill_at.is_some() => Event::KillTime,
            () = sleep_until(time_limit.unwrap_or(never)), if time_limit.is_some() => Event::TimeLimit,
        }
    }

    /// Starts every rank; stops at the first that cannot be started and ends the job.
    fn start_ranks(&mut self) {
        for rank in 0..self.options.nranks {
            if let Err(e) = self.start_rank(rank) {
                let path = &self.options.program.path;
                // The program was found before, so "not found" now is about what it needs.
                let hint = if e.kind() == io::ErrorKind::NotFound && path.exists() {
                    " (the interpreter on its #! line, or its dynamic loader, is missing)"
                } else {
                    ""
                };
                let program = path.display();
                self.stderr.say(format!(
                    "{}: cannot start rank {rank} ('{program}'): {e}{hint}; ending the job",
                    self.tool
                ));
                self.begin_ending(Cause::StartFailed, libc::SIGTERM, FAILURE_GRACE);
                return;
            }
        }
    }

    fn start_rank(&mut self, rank: usize) -> io::Result<()> {
        let options = &self.options;
        let mut command = std::process::Command::new(&options.program.path);
        command
            .arg0(&options.program.argv0)
            .args(&options.args)
            .envs(options.env.iter().map(|(name, value)| (name, value)))
            .stdin(if rank == 0 {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // Its own session, so its own process group too (signals reach it through that group).
        super::os::in_new_session(&mut command);
        self.job.prepare(&mut command, rank);
        // Spawned from this thread, the one the runtime runs on: the parent-death signal is
        // tied to it and fires only when mpirun ends.
        let mut child = tokio::process::Command::from(command).spawn()?;
        let pid = child.id().expect("a child just spawned has a pid");
        if let Some(guard) = &mut self.guard {
            guard.watch(pid);
        }
        tracing::debug!(target: "mpirun", rank, pid, "rank started");
        if let Some(stdin) = child.stdin.take() {
            tokio::spawn(forward_stdin(stdin));
        }
        if let Some(out) = child.stdout.take() {
            self.output_tasks
                .push(output::forward(out, rank, self.stdout.clone()));
        }
        if let Some(err) = child.stderr.take() {
            self.output_tasks
                .push(output::forward(err, rank, self.stderr.clone()));
        }
        let exits = self.exits_sender.clone();
        tokio::spawn(async move {
            let status = child.wait().await;
            let _ = exits.send((rank, status));
        });
        self.ranks.push(RankProcess {
            pid,
            ended: None,
            signalled: false,
        });
        Ok(())
    }

    fn on_exit(&mut self, rank: usize, status: io::Result<ExitStatus>) {
        let end = match status {
            Ok(status) => RankEnd::from_status(status),
            Err(e) => {
                tracing::warn!(target: "mpirun", rank, error = %e, "cannot collect a rank's status");
                RankEnd::Exited(255)
            }
        };
        let process = &mut self.ranks[rank];
        process.ended = Some(end);
        let pid = process.pid;
        self.job.mark_exit(rank, &end.for_fabric(process.signalled));
        tracing::debug!(target: "mpirun", rank, pid, ?end, "rank ended");
        if !end.success() && self.ending.is_none() {
            self.stderr.say(format!(
                "{}: rank {rank} (pid {pid}) {}; ending the job",
                self.tool,
                end.describe()
            ));
            self.begin_ending(Cause::RankFailed(end), libc::SIGTERM, FAILURE_GRACE);
        }
    }

    fn on_signal(&mut self, signal: i32) {
        let name = signal_name(signal);
        if self.ending.is_none() {
            self.stderr.say(format!(
                "{}: got {name}; passing it to the ranks",
                self.tool
            ));
            self.begin_ending(Cause::Signal(signal), signal, SIGNAL_GRACE);
        } else if self.ending.as_ref().is_some_and(|e| e.kill_at.is_some()) {
            self.stderr.say(format!(
                "{}: got {name} while ending the job; killing the ranks",
                self.tool
            ));
            self.kill_remaining();
        }
    }

    fn on_time_limit(&mut self) {
        let limit = self.options.timeout.unwrap_or_default().as_secs_f64();
        self.stderr.say(format!(
            "{}: the job reached its time limit of {limit} s (--timeout / MPIEXEC_TIMEOUT); ending it",
            self.tool
        ));
        self.begin_ending(Cause::TimedOut, libc::SIGTERM, FAILURE_GRACE);
    }

    fn begin_ending(&mut self, cause: Cause, signal: i32, grace: Duration) {
        tracing::debug!(target: "mpirun", ?cause, signal, "ending the job");
        self.ending = Some(Ending {
            cause,
            kill_at: Some(Instant::now() + grace),
        });
        self.signal_running(signal);
    }

    fn kill_remaining(&mut self) {
        tracing::debug!(target: "mpirun", running = self.running(), "grace period over: SIGKILL");
        self.signal_running(libc::SIGKILL);
        if let Some(ending) = &mut self.ending {
            ending.kill_at = None;
        }
    }

    fn signal_running(&mut self, signal: i32) {
        for process in self.ranks.iter_mut().filter(|r| r.ended.is_none()) {
            process.signalled = true;
            signal_group(process.pid, signal);
        }
    }

    /// After the last rank: kill what the ranks may have left behind, then collect the rest
    /// of their output (for at most [`OUTPUT_DRAIN`], in case something outside their process
    /// groups still holds a pipe).
    async fn clean_up(&mut self) {
        for process in &self.ranks {
            if signal_group(process.pid, libc::SIGKILL) {
                tracing::debug!(target: "mpirun", pid = process.pid, "killed processes a rank left behind");
            }
        }
        let deadline = Instant::now() + OUTPUT_DRAIN;
        for task in &mut self.output_tasks {
            if tokio::time::timeout_at(deadline, &mut *task).await.is_err() {
                task.abort();
            }
        }
        if let Some(guard) = self.guard.take() {
            guard.finish().await;
        }
    }
}

/// Copies `mpirun`'s stdin to rank 0 until either side closes.
async fn forward_stdin(mut rank0: tokio::process::ChildStdin) {
    let mut stdin = tokio::io::stdin();
    match tokio::io::copy(&mut stdin, &mut rank0).await {
        Ok(bytes) => tracing::debug!(target: "mpirun", bytes, "stdin forwarded to rank 0"),
        Err(e) => {
            tracing::debug!(target: "mpirun", error = %e, "stopped forwarding stdin to rank 0")
        }
    }
}
