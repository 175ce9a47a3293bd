//! Starting the ranks and watching them until the job is over.
//!
//! The job runs until every rank has ended. These end it early, and the first one decides
//! `mpirun`'s status:
//!
//! - a rank that fails (non-zero status or a signal): `mpirun` says which, marks it dead in the
//!   fabric (as it does for every rank that ends, so peers blocked on it fail instead of
//!   hanging), sends SIGTERM to the other ranks and SIGKILL [`FAILURE_GRACE`] later; the status
//!   is the failed rank's (128+N for signal N);
//! - SIGINT, SIGTERM or SIGHUP sent to `mpirun`: passed on to every rank, SIGKILL
//!   [`SIGNAL_GRACE`] later (at once on a second signal); the status is 128+N;
//! - the time limit: SIGTERM, SIGKILL [`FAILURE_GRACE`] later, status 255;
//! - a rank that aborts through PMI: `mpirun` says so (with the rank's message) and ends the
//!   job as for a failed rank; the status is the abort code (its low byte, never 0 for a
//!   non-zero code). A rank that fails right after sending its abort gets [`PMI_SETTLE`] for
//!   the abort to arrive, so that the abort, with its message, is what is reported;
//! - a rank whose PMI connection is lost while it keeps running ([`LOST_GRACE`] later;
//!   status 1).
//!
//! A rank that exits with status 0 does not end the job. Each rank leads a process group of its
//! own, and signals go to the whole group, so whatever a rank started goes with it; when all
//! ranks have ended, the groups get a last SIGKILL in case something they started lingers. If
//! `mpirun` itself is killed, the kernel kills the ranks (parent-death signal, set by
//! [`Job::prepare`], or by `os::die_with_parent` without a fabric) and the [`Guard`] kills
//! their process groups; the fabric's memory file goes with the last process holding it.
//!
//! **Ranks on other hosts** are the processes of the launch command (`ssh HOST env ...
//! PROGRAM`): the launch command's status is the rank's, and its process group is what gets
//! signalled. If it fails before the rank connected to `mpirun`'s PMI server, the message
//! says the rank could not be started on that host. What ssh leaves running on the other
//! host when it is killed is ssh's business (its session ends; a rank whose PMI connection
//! closes should end itself).
//!
//! **The environment of a rank**, on top of `mpirun`'s own (minus any PMI variables in it)
//! and the `-x`/`--genv`/`--channel`/`--profile`/`--wire` settings:
//!
//! | where | fabric | PMI |
//! |---|---|---|
//! | one host | `NIC_FABRIC_FD`, `NIC_RANK`, `NIC_JOB_KEY` | `PMI_FD`, `PMI_RANK`, `PMI_SIZE` |
//! | several hosts, rank on this machine | none | `PMI_FD`, `PMI_RANK`, `PMI_SIZE` |
//! | several hosts, rank elsewhere | none | `PMI_PORT`, `PMI_ID`, `PMI_RANK`, `PMI_SIZE`, `MPI_PMI_KEY` |
//!
//! **Placement** ([`nic_model::placement`]): `mpirun` binds each rank it starts on this machine
//! itself, between fork and exec, as `--bind-to` and the CPUs it may use decide, and prints
//! the `--report-bindings` line as soon as the rank's pid is known (before any of the rank's
//! output). A rank elsewhere gets `MPI_BIND_TO` (the policy), `MPI_LOCAL_RANK` and
//! `MPI_LOCAL_SIZE` (its place among the job's ranks on its host) and `MPI_REPORT_BINDINGS`
//! (`1` or `0`), and binds and reports itself in `MPI_Init`; a rank here gets none of them
//! (they are removed from the environment it inherits, unless `-x` sets them).
//!
//! `--wire tcp` on one host runs the job as across hosts (no fabric), so the network path can
//! be tried on one machine.

use super::cli::Options;
use super::guard::Guard;
use super::hosts;
use super::os::{self, signal_group};
use super::output::{self, Sink, Writer};
use super::spawn::{self, SpawnedJob};
use super::status::{abort_status, signal_name, RankEnd, TIMED_OUT};
use nic_model::placement::{self, Plan};
use nic_model::Job;
use pmi::server::{JobKey, Server, ServerConfig, ServerEvent};
use std::collections::HashMap;
use std::ffi::OsString;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
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
/// How long a rank may keep running after its PMI connection was lost before that ends the
/// job (its exit, which usually follows at once, says more).
pub const LOST_GRACE: Duration = Duration::from_secs(2);
/// How long a failed rank's last PMI messages may take to arrive (see `settle_pmi`).
pub const PMI_SETTLE: Duration = Duration::from_millis(200);

/// PMI variables `mpirun` sets itself, and those of other process managers (Slurm's, when
/// `mpirun` runs inside a job step) that must not reach the ranks.
const PMI_VARIABLES: &[&str] = &[
    pmi::env::FD,
    pmi::env::PORT,
    pmi::env::ID,
    pmi::env::RANK,
    pmi::env::SIZE,
    pmi::env::JOBID,
    pmi::env::PMI2_SUN_PATH,
    pmi::env::KEY,
    "PMI_SPAWNED",
];
/// How a rank on another host binds itself; `mpirun` binds the ranks on this machine itself,
/// so they must not bind again in `MPI_Init` from a stray setting.
const PLACEMENT_VARIABLES: &[&str] = &[
    placement::env::BIND_TO,
    placement::env::LOCAL_RANK,
    placement::env::LOCAL_SIZE,
    placement::env::REPORT,
];
/// Set in `mpirun`'s own environment only.
const MPIRUN_ONLY: &[&str] = &[
    super::guard::GUARD_ENV,
    nic_model::fabric::env::FABRIC_FD,
    nic_model::fabric::env::RANK,
    nic_model::fabric::env::JOB_KEY,
];

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
    let status = match Supervisor::new(tool, options, stdout.sink(), stderr.sink()).await {
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
    Aborted(i32),
    ConnectionLost,
    TimedOut,
    Signal(i32),
    StartFailed,
}

impl Cause {
    fn status(&self) -> i32 {
        match self {
            Cause::RankFailed(end) => end.shell_status(),
            Cause::Aborted(code) => abort_status(*code),
            Cause::ConnectionLost => 1,
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
    /// The rank's process, or for a rank on another host the launch command's.
    pid: u32,
    ended: Option<RankEnd>,
    /// `mpirun` sent it a signal (so its death is the launcher's doing, not a failure).
    signalled: bool,
    /// It has reached the PMI server (sent `init`, or passed the TCP handshake).
    connected: bool,
    /// Its PMI connection is over (finalized, aborted or lost).
    pmi_over: bool,
}

/// What woke the supervisor.
enum Event {
    Exited(usize, io::Result<ExitStatus>),
    Pmi(ServerEvent),
    Signal(i32),
    KillTime,
    TimeLimit,
    LostTime,
}

/// What ranks on other hosts need to reach the PMI server.
struct RemoteAccess {
    /// The job's secret, hex.
    key: String,
    /// `PMI_PORT` for each remote host.
    port_for_host: HashMap<String, String>,
    /// `mpirun`'s environment as passed to them.
    forwarded: Vec<(OsString, OsString)>,
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
    /// The shared-memory fabric (one host only).
    job: Option<Job>,
    /// Where the ranks on this machine run.
    plan: Plan,
    pmi: Server,
    remote: Option<RemoteAccess>,
    /// Ranks whose PMI connection was lost while they ran: when that ends the job, and why.
    lost: Vec<(Instant, usize, String)>,
    /// The ranks' ends of PMI socket pairs, held until the rank they belong to is spawned.
    pmi_ends: Vec<UnixStream>,
    ranks: Vec<RankProcess>,
    exits: mpsc::UnboundedReceiver<(usize, io::Result<ExitStatus>)>,
    exits_sender: mpsc::UnboundedSender<(usize, io::Result<ExitStatus>)>,
    output_tasks: Vec<JoinHandle<()>>,
    stdout: Sink,
    stderr: Sink,
    signals: Signals,
    guard: Option<Guard>,
    ending: Option<Ending>,
    /// Child jobs started by `MPI_Comm_spawn` ([`spawn`]); their exits arrive as
    /// `SPAWNED + index`.
    spawned: Vec<SpawnedJob>,
    /// This job's ranks when it is a child job of several programs (`spawn::APPS_ENV`).
    apps: Option<Vec<(std::path::PathBuf, Vec<OsString>, u32)>>,
}

/// Where the exits of child jobs are numbered from (beside the ranks' exits).
const SPAWNED: usize = usize::MAX / 2;

impl Supervisor {
    async fn new(
        tool: &'static str,
        options: Options,
        stdout: Sink,
        stderr: Sink,
    ) -> Result<Self, String> {
        let job = if options.without_fabric() {
            None
        } else {
            let config = mpich_channel::job_config(options.nranks, options.modeled);
            let job = Job::new(&config).map_err(|e| {
                format!(
                    "cannot create the job's shared-memory fabric for {} ranks: {e}",
                    options.nranks
                )
            })?;
            Some(job)
        };
        let here = options.places.iter().filter(|p| p.local).count();
        let plan = Plan::here(options.bind_to, here);
        if let Some(warning) = plan.overload_warning() {
            stderr.say(format!("{tool}: warning: {warning}"));
        }
        let (pmi, remote) = start_pmi(&options).await?;
        let signals =
            Signals::install().map_err(|e| format!("cannot install signal handlers: {e}"))?;
        let guard = Guard::start().map_err(|e| format!("cannot start the guard process: {e}"))?;
        let (exits_sender, exits) = mpsc::unbounded_channel();
        Ok(Supervisor {
            tool,
            ranks: Vec::with_capacity(options.nranks),
            options,
            job,
            plan,
            pmi,
            remote,
            lost: Vec::new(),
            pmi_ends: Vec::new(),
            exits,
            exits_sender,
            output_tasks: Vec::new(),
            stdout,
            stderr,
            signals,
            guard: Some(guard),
            ending: None,
            spawned: Vec::new(),
            apps: spawn::apps_from_env(),
        })
    }

    async fn run(&mut self) -> i32 {
        self.start_ranks();
        let time_limit = self.options.timeout.map(|t| Instant::now() + t);
        while self.running() > 0 {
            let event = self.next_event(time_limit).await;
            match event {
                Event::Exited(index, status) if index >= SPAWNED => {
                    self.on_spawned_exit(index - SPAWNED, status)
                }
                Event::Exited(rank, status) => {
                    let failed = !matches!(&status, Ok(s) if s.success());
                    if failed {
                        self.settle_pmi(rank).await;
                    }
                    self.on_exit(rank, status)
                }
                Event::Pmi(event) => self.on_pmi(event),
                Event::Signal(signal) => self.on_signal(signal),
                Event::KillTime => self.kill_remaining(),
                Event::TimeLimit => self.on_time_limit(),
                Event::LostTime => self.on_lost_time(),
            }
        }
        self.clean_up().await;
        self.ending.as_ref().map_or(0, |e| e.cause.status())
    }

    fn running(&self) -> usize {
        self.ranks.iter().filter(|r| r.ended.is_none()).count()
            + self.spawned.iter().filter(|j| !j.ended).count()
    }

    /// A rank's `MPI_Comm_spawn`: checks the commands, starts the child job and answers the
    /// rank (see [`spawn`]).
    fn start_spawned(
        &mut self,
        rank: usize,
        id: u64,
        commands: Vec<pmi::SpawnCommand>,
        preput: Vec<(String, String)>,
    ) {
        if self.ending.is_some() {
            self.pmi.answer_spawn(id, Err("the job is ending".into()));
            return;
        }
        let (mut command, what) = match spawn::child_command(&commands, &preput) {
            Ok(c) => c,
            Err(why) => {
                tracing::info!(target: "mpirun", rank, %why, "spawn refused");
                self.pmi.answer_spawn(id, Err(why));
                return;
            }
        };
        command.stdin(Stdio::null());
        super::os::in_new_session(&mut command);
        os::die_with_parent(&mut command);
        let index = self.spawned.len();
        match tokio::process::Command::from(command).spawn() {
            Ok(mut child) => {
                let pid = child.id().expect("a child just spawned has a pid");
                if let Some(guard) = &mut self.guard {
                    guard.watch(pid);
                }
                tracing::debug!(target: "mpirun", rank, pid, %what, "child job started");
                let exits = self.exits_sender.clone();
                tokio::spawn(async move {
                    let status = child.wait().await;
                    let _ = exits.send((SPAWNED + index, status));
                });
                self.spawned.push(SpawnedJob {
                    pid,
                    ended: false,
                    signalled: false,
                    what,
                });
                self.pmi.answer_spawn(id, Ok(()));
            }
            Err(e) => self
                .pmi
                .answer_spawn(id, Err(format!("cannot start the child job ({what}): {e}"))),
        }
    }

    fn on_spawned_exit(&mut self, index: usize, status: io::Result<ExitStatus>) {
        let Some(job) = self.spawned.get_mut(index) else {
            return;
        };
        job.ended = true;
        let end = match status {
            Ok(status) => RankEnd::from_status(status),
            Err(_) => RankEnd::Exited(255),
        };
        tracing::debug!(target: "mpirun", index, ?end, "child job ended");
        if !end.success() && !job.signalled && self.ending.is_none() {
            let message = format!(
                "{}: the spawned job {index} ({}) {}; ending the job",
                self.tool,
                job.what,
                end.describe()
            );
            self.stderr.say(message);
            self.begin_ending(Cause::RankFailed(end), libc::SIGTERM, FAILURE_GRACE);
        }
    }

    async fn next_event(&mut self, time_limit: Option<Instant>) -> Event {
        let kill_at = self.ending.as_ref().and_then(|e| e.kill_at);
        let time_limit = time_limit.filter(|_| self.ending.is_none());
        let lost_at = self.lost.iter().map(|(at, _, _)| *at).min();
        let never = Instant::now() + Duration::from_secs(86400 * 365);
        tokio::select! {
            biased;
            Some((rank, status)) = self.exits.recv() => Event::Exited(rank, status),
            Some(event) = self.pmi.next_event() => Event::Pmi(event),
            Some(()) = self.signals.interrupt.recv() => Event::Signal(libc::SIGINT),
            Some(()) = self.signals.terminate.recv() => Event::Signal(libc::SIGTERM),
            Some(()) = self.signals.hangup.recv() => Event::Signal(libc::SIGHUP),
            () = sleep_until(kill_at.unwrap_or(never)), if kill_at.is_some() => Event::KillTime,
            () = sleep_until(time_limit.unwrap_or(never)), if time_limit.is_some() => Event::TimeLimit,
            () = sleep_until(lost_at.unwrap_or(never)), if lost_at.is_some() => Event::LostTime,
        }
    }

    /// Starts every rank; stops at the first that cannot be started and ends the job.
    fn start_ranks(&mut self) {
        for rank in 0..self.options.nranks {
            if let Err(e) = self.start_rank(rank) {
                let place = &self.options.places[rank];
                let message = if place.local {
                    let path = &self.options.program.path;
                    // The program was found before, so "not found" now is about what it needs.
                    let hint = if e.kind() == io::ErrorKind::NotFound && path.exists() {
                        " (the interpreter on its #! line, or its dynamic loader, is missing)"
                    } else {
                        ""
                    };
                    format!("cannot start rank {rank} ('{}'): {e}{hint}", path.display())
                } else {
                    format!(
                        "cannot start rank {rank} on host {} ('{}'): {e}",
                        place.host,
                        self.launcher_name()
                    )
                };
                self.stderr
                    .say(format!("{}: {message}; ending the job", self.tool));
                self.begin_ending(Cause::StartFailed, libc::SIGTERM, FAILURE_GRACE);
                return;
            }
        }
    }

    fn start_rank(&mut self, rank: usize) -> io::Result<()> {
        let mut command = if self.options.places[rank].local {
            self.local_command(rank)?
        } else {
            self.remote_command(rank)
        };
        command
            .stdin(if rank == 0 {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // Its own session, so its own process group too (signals reach it through that group).
        super::os::in_new_session(&mut command);
        // Spawned from this thread, the one the runtime runs on: the parent-death signal is
        // tied to it and fires only when mpirun ends.
        let spawned = tokio::process::Command::from(command).spawn();
        // The child has its copy of its PMI socket now (or never will).
        self.pmi_ends.clear();
        let mut child = spawned?;
        let pid = child.id().expect("a child just spawned has a pid");
        if let Some(guard) = &mut self.guard {
            guard.watch(pid);
        }
        tracing::debug!(target: "mpirun", rank, pid, "rank started");
        if self.options.report_bindings {
            if let Some(binding) = self.local_binding(rank) {
                let host = hosts::this_hostname();
                let line = placement::report_line(&host, pid, rank, binding, &self.plan.topology);
                self.stderr.say(line);
            }
        }
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
            connected: false,
            pmi_over: false,
        });
        Ok(())
    }

    /// The program itself, with a PMI socket (and the fabric, on one host).
    fn local_command(&mut self, rank: usize) -> io::Result<std::process::Command> {
        let options = &self.options;
        let mut command = match self.apps.as_ref().and_then(|a| a.get(rank)) {
            Some((path, args, appnum)) => {
                let mut c = std::process::Command::new(path);
                c.args(args).env("MPIRUN_APPNUM", appnum.to_string());
                c
            }
            None => {
                let mut c = std::process::Command::new(&options.program.path);
                c.arg0(&options.program.argv0).args(&options.args);
                c
            }
        };
        for name in PMI_VARIABLES.iter().chain(PLACEMENT_VARIABLES) {
            command.env_remove(name);
        }
        if std::env::var_os(spawn::PREPUT_ENV).is_some() {
            command.env("PMI_SPAWNED", "1");
        }
        command
            .env_remove(spawn::PREPUT_ENV)
            .env_remove(spawn::APPS_ENV);
        command.envs(options.env.iter().map(|(name, value)| (name, value)));
        let (ours, theirs) = UnixStream::pair()?;
        self.pmi
            .serve_rank(rank, ours)
            .map_err(|e| io::Error::other(e.to_string()))?;
        let fd = theirs.as_raw_fd();
        os::inherit_fd(&mut command, fd);
        command
            .env(pmi::env::FD, fd.to_string())
            .env(pmi::env::RANK, rank.to_string())
            .env(pmi::env::SIZE, options.nranks.to_string());
        // This end stays open until the command is dropped (after the spawn).
        self.pmi_ends.push(theirs);
        match &self.job {
            Some(job) => job.prepare(&mut command, rank),
            None => os::die_with_parent(&mut command),
        }
        if let Some(mask) = self.local_binding(rank).and_then(|b| b.mask()) {
            os::bind_to_cpus(&mut command, mask);
        }
        Ok(command)
    }

    /// Where `rank` runs, if it runs on this machine.
    fn local_binding(&self, rank: usize) -> Option<&placement::Binding> {
        let places = &self.options.places;
        if !places.get(rank)?.local {
            return None;
        }
        let index = places[..rank].iter().filter(|p| p.local).count();
        self.plan.bindings.get(index)
    }

    /// The launch command that starts `rank` on its host, reaching back over TCP.
    fn remote_command(&self, rank: usize) -> std::process::Command {
        let options = &self.options;
        let host = &options.places[rank].host;
        let remote = self
            .remote
            .as_ref()
            .expect("a job with remote ranks has remote access");
        let mut env = remote.forwarded.clone();
        env.extend(options.env.iter().cloned());
        let port = &remote.port_for_host[host];
        let on_host = |p: &&hosts::RankPlace| p.host == *host;
        let local_rank = options.places[..rank].iter().filter(on_host).count();
        let local_size = options.places.iter().filter(on_host).count();
        let report = if options.report_bindings { "1" } else { "0" };
        for (name, value) in [
            (pmi::env::PORT, port.clone()),
            (pmi::env::ID, rank.to_string()),
            (pmi::env::RANK, rank.to_string()),
            (pmi::env::SIZE, options.nranks.to_string()),
            (pmi::env::KEY, remote.key.clone()),
            (placement::env::BIND_TO, options.bind_to.name().to_string()),
            (placement::env::LOCAL_RANK, local_rank.to_string()),
            (placement::env::LOCAL_SIZE, local_size.to_string()),
            (placement::env::REPORT, report.to_string()),
        ] {
            env.push((name.into(), value.into()));
        }
        // The path as this machine sees it: the same on every host of a shared file system.
        let program = std::path::absolute(&options.program.path)
            .unwrap_or_else(|_| options.program.path.clone());
        let words = hosts::remote_command(&options.launcher, host, &env, &program, &options.args);
        let mut command = std::process::Command::new(&words[0]);
        command.args(&words[1..]);
        os::die_with_parent(&mut command);
        command
    }

    fn launcher_name(&self) -> String {
        self.options.launcher[0].to_string_lossy().into_owned()
    }

    /// "rank 3 (pid 77)", or with hosts "rank 3 on node2 (pid 77)".
    fn who(&self, rank: usize) -> String {
        let pid = self.ranks.get(rank).map_or(0, |r| r.pid);
        if self.options.hosts_given {
            format!(
                "rank {rank} on {} (pid {pid})",
                self.options.places[rank].host
            )
        } else {
            format!("rank {rank} (pid {pid})")
        }
    }

    /// Lets the PMI server finish reading what a rank that just failed sent before it died:
    /// an abort (with its message) then decides how the job ends, rather than the exit.
    async fn settle_pmi(&mut self, rank: usize) {
        let settled =
            |ranks: &[RankProcess]| ranks.get(rank).is_none_or(|r| !r.connected || r.pmi_over);
        let deadline = Instant::now() + PMI_SETTLE;
        while !settled(&self.ranks) {
            match tokio::time::timeout_at(deadline, self.pmi.next_event()).await {
                Ok(Some(event)) => self.on_pmi(event),
                _ => return,
            }
        }
    }

    fn on_pmi(&mut self, event: ServerEvent) {
        tracing::debug!(target: "mpirun", ?event, "PMI");
        match &event {
            ServerEvent::Aborted { rank, .. }
            | ServerEvent::Finalized { rank }
            | ServerEvent::ConnectionLost { rank, .. } => {
                if let Some(process) = self.ranks.get_mut(*rank) {
                    process.pmi_over = true;
                }
            }
            _ => {}
        }
        match event {
            ServerEvent::Initialized { rank } => {
                if let Some(process) = self.ranks.get_mut(rank) {
                    process.connected = true;
                }
            }
            ServerEvent::Aborted {
                rank,
                code,
                message,
            } => {
                if self.ending.is_none() {
                    let message = if message.is_empty() {
                        String::new()
                    } else {
                        format!(": {message}")
                    };
                    self.stderr.say(format!(
                        "{}: {} aborted the job with status {code}{message}; ending the job",
                        self.tool,
                        self.who(rank)
                    ));
                    self.begin_ending(Cause::Aborted(code), libc::SIGTERM, FAILURE_GRACE);
                }
            }
            ServerEvent::Finalized { .. } => {}
            ServerEvent::ConnectionLost { rank, detail } => {
                let running = self.ranks.get(rank).is_some_and(|r| r.ended.is_none());
                if running && self.ending.is_none() {
                    self.lost.push((Instant::now() + LOST_GRACE, rank, detail));
                }
            }
            ServerEvent::Rejected { peer, reason } => {
                tracing::info!(target: "mpirun", %peer, %reason, "refused a connection to the PMI port");
            }
            ServerEvent::Spawn {
                rank,
                id,
                commands,
                preput,
            } => self.start_spawned(rank, id, commands, preput),
        }
    }

    /// A rank lost its PMI connection [`LOST_GRACE`] ago; if it still runs, end the job.
    fn on_lost_time(&mut self) {
        let now = Instant::now();
        let (due, later): (Vec<_>, Vec<_>) = self.lost.drain(..).partition(|(at, _, _)| *at <= now);
        self.lost = later;
        for (_, rank, detail) in due {
            let running = self.ranks[rank].ended.is_none();
            if running && self.ending.is_none() {
                self.stderr.say(format!(
                    "{}: {} lost its PMI connection to mpirun ({detail}) and still runs; ending the job",
                    self.tool,
                    self.who(rank)
                ));
                self.begin_ending(Cause::ConnectionLost, libc::SIGTERM, FAILURE_GRACE);
            }
        }
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
        let (pid, connected, signalled) = (process.pid, process.connected, process.signalled);
        if let Some(job) = &self.job {
            job.mark_exit(rank, &end.for_fabric(signalled));
        }
        tracing::debug!(target: "mpirun", rank, pid, ?end, "rank ended");
        if !end.success() && self.ending.is_none() {
            let place = &self.options.places[rank];
            let message = if !place.local && !connected {
                format!(
                    "cannot start rank {rank} on host {}: '{}' (pid {pid}) {} before the rank \
                     reached mpirun (can '{} {}' reach it, and does the program exist there?)",
                    place.host,
                    self.launcher_name(),
                    end.describe(),
                    self.launcher_name(),
                    place.host
                )
            } else {
                format!("{} {}", self.who(rank), end.describe())
            };
            self.stderr
                .say(format!("{}: {message}; ending the job", self.tool));
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
        for job in self.spawned.iter_mut().filter(|j| !j.ended) {
            job.signalled = true;
            signal_group(job.pid, signal);
        }
    }

    /// After the last rank: kill what the ranks may have left behind, then collect the rest
    /// of their output (for at most [`OUTPUT_DRAIN`], in case something outside their process
    /// groups still holds a pipe).
    async fn clean_up(&mut self) {
        for job in &self.spawned {
            signal_group(job.pid, libc::SIGKILL);
        }
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

/// The PMI server, listening on TCP (with the job's key) when some rank runs on another
/// host; what those ranks need to reach it.
async fn start_pmi(options: &Options) -> Result<(Server, Option<RemoteAccess>), String> {
    let mut config = ServerConfig::new(options.nranks);
    let nodes: Vec<usize> = options.places.iter().map(|p| p.node).collect();
    config.process_mapping = Some(pmi::mapping::encode(&nodes));
    config.preput = spawn::preput_from_env();
    let mut remote_hosts: Vec<&str> = Vec::new();
    for place in options.places.iter().filter(|p| !p.local) {
        if !remote_hosts.contains(&place.host.as_str()) {
            remote_hosts.push(&place.host);
        }
    }
    let key = if remote_hosts.is_empty() {
        None
    } else {
        let key = JobKey::random().map_err(|e| format!("cannot make the job's PMI key: {e}"))?;
        Some(key)
    };
    config.job_key = key.clone();
    let mut server =
        Server::new(config).map_err(|e| format!("cannot start the PMI server: {e}"))?;
    let Some(key) = key else {
        return Ok((server, None));
    };
    let bound = listen(&mut server, options.pmi_address).await?;
    let mut port_for_host = HashMap::new();
    for host in remote_hosts {
        let address = match options.pmi_address {
            Some(address) => address,
            None => hosts::address_towards(host).map_err(|e| {
                format!(
                    "cannot find the address host '{host}' reaches this machine at ({e}); \
                     give it with --pmi-address ADDR"
                )
            })?,
        };
        port_for_host.insert(host.to_string(), hosts::pmi_port(address, bound.port()));
    }
    let skip: Vec<&str> = PMI_VARIABLES.iter().chain(MPIRUN_ONLY).copied().collect();
    let forwarded = hosts::forwarded_env(std::env::vars_os(), &skip);
    tracing::debug!(target: "mpirun", %bound, ?port_for_host, "PMI over TCP");
    let remote = RemoteAccess {
        key: key.to_hex(),
        port_for_host,
        forwarded,
    };
    Ok((server, Some(remote)))
}

/// Listens on `address` (port chosen by the kernel), or on every address (IPv6 and IPv4,
/// else IPv4 alone).
async fn listen(server: &mut Server, address: Option<IpAddr>) -> Result<SocketAddr, String> {
    let candidates: Vec<SocketAddr> = match address {
        Some(address) => vec![SocketAddr::new(address, 0)],
        None => ["[::]:0", "0.0.0.0:0"]
            .iter()
            .map(|a| a.parse().expect("a valid address"))
            .collect(),
    };
    let mut failure = String::new();
    for candidate in candidates {
        match server.listen(candidate).await {
            Ok(bound) => return Ok(bound),
            Err(e) => failure = e.to_string(),
        }
    }
    Err(format!(
        "cannot serve PMI to ranks on other hosts: {failure}"
    ))
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
