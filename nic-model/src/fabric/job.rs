//! The launcher side: create a job's fabric, start its processes, watch them, clean up.
//!
//! `mpirun` and the test harnesses both use this API. The fabric is handed to each process by
//! descriptor inheritance plus three environment variables (see [`super::env`]); the launcher
//! keeps its own mapping only to mark ranks dead, so that their peers fail fast instead of
//! hanging.

use super::layout::{rank_state, InboxShape};
use super::{env, hex, Fabric};
use crate::error::{NicError, Rank, Result};
use crate::placement::{Binding, CpuMask, Plan, Policy};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Parameters of a job's fabric (see [`super::layout`]). Defaults can be overridden in the
/// launcher's environment: `MPI_NIC_SLOTS` (slots of each rank's receive queue),
/// `MPI_NIC_SLOT_BYTES` (bytes per queue slot, which sets the mtu), `MPI_NIC_BOXES` (fast boxes
/// per rank at most; 0 sends every packet through the queues), `MPI_NIC_BOX_SLOTS` and
/// `MPI_NIC_BOX_BYTES` (slots per fast box and bytes per fast-box slot).
#[derive(Clone, Debug)]
pub struct JobConfig {
    pub nranks: usize,
    /// Packet buffers of each rank's shared receive queue; a power of two.
    pub queue_slots: usize,
    /// Bytes per queue packet buffer, header included; a multiple of 64.
    pub slot_bytes: usize,
    /// Fast boxes per rank: how many senders get one at each receiver.
    pub box_count: usize,
    /// Packet buffers per fast box; a power of two.
    pub box_slots: usize,
    /// Bytes per fast-box packet buffer, header included; a multiple of 64, at most
    /// `slot_bytes`. Packets up to this less the 24-byte header go through fast boxes.
    pub box_slot_bytes: usize,
    /// Seed for the fault injector (when one is enabled); random when `None`.
    pub fault_seed: Option<u64>,
    /// Bind each rank to a CPU of its own as `mpirun --bind-to core` does
    /// ([`crate::placement`], round robin when ranks outnumber CPUs): steadier measurements,
    /// since two ranks that the scheduler first puts on one core otherwise spin against each
    /// other until the load balancer separates them.
    pub bind_cores: bool,
}

/// Default geometry: a receive queue of 64 slots of 4 KiB per rank, and up to 64 fast boxes
/// of 64 slots of 512 bytes (32 KiB each: as deep as the rings of layout version 3, so that a
/// stream of small packets runs as far ahead of its receiver): about 2.4 MiB per rank,
/// whatever the job's size.
pub const DEFAULT_SLOTS: usize = 64;
pub const DEFAULT_SLOT_BYTES: usize = 4096;
pub const DEFAULT_BOXES: usize = 64;
pub const DEFAULT_BOX_SLOTS: usize = 64;
pub const DEFAULT_BOX_SLOT_BYTES: usize = 512;

impl JobConfig {
    pub fn new(nranks: usize) -> Self {
        let from_env = |k: &str, d: usize| {
            std::env::var(k)
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(d)
        };
        JobConfig {
            nranks,
            queue_slots: from_env("MPI_NIC_SLOTS", DEFAULT_SLOTS),
            slot_bytes: from_env("MPI_NIC_SLOT_BYTES", DEFAULT_SLOT_BYTES),
            box_count: from_env("MPI_NIC_BOXES", DEFAULT_BOXES).min(nranks),
            box_slots: from_env("MPI_NIC_BOX_SLOTS", DEFAULT_BOX_SLOTS),
            box_slot_bytes: from_env("MPI_NIC_BOX_BYTES", DEFAULT_BOX_SLOT_BYTES),
            fault_seed: None,
            bind_cores: false,
        }
    }

    /// The shape of every rank's inbox.
    pub fn shape(&self) -> InboxShape {
        InboxShape {
            queue_slots: self.queue_slots,
            slot_bytes: self.slot_bytes,
            box_count: self.box_count,
            box_slots: self.box_slots,
            box_slot_bytes: self.box_slot_bytes.min(self.slot_bytes),
        }
    }
}

/// How one rank ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RankExit {
    /// Exited with this status code.
    Code(i32),
    /// Killed by this signal.
    Signal(i32),
    /// Killed by the launcher because the job was being torn down.
    KilledByLauncher,
}

impl RankExit {
    fn from_status(s: ExitStatus) -> Self {
        match (s.code(), s.signal()) {
            (Some(c), _) => RankExit::Code(c),
            (None, Some(sig)) => RankExit::Signal(sig),
            _ => RankExit::Code(-1),
        }
    }

    pub fn success(&self) -> bool {
        *self == RankExit::Code(0)
    }
}

/// The result of [`Job::run`].
#[derive(Debug)]
pub struct JobOutcome {
    /// One entry per rank.
    pub exits: Vec<RankExit>,
    /// The first rank that failed (non-zero exit or signal), in order of detection.
    pub first_failure: Option<Rank>,
    /// True if the timeout expired.
    pub timed_out: bool,
}

impl JobOutcome {
    pub fn success(&self) -> bool {
        !self.timed_out && self.exits.iter().all(RankExit::success)
    }
}

/// A job: its fabric, owned by the launcher until the processes have inherited it.
pub struct Job {
    fabric: Fabric,
    fd: OwnedFd,
    key: [u8; 16],
    /// Each rank's CPUs when the job binds its ranks (empty otherwise).
    cpu_masks: Vec<CpuMask>,
}

impl Job {
    /// Creates the job's fabric.
    pub fn new(cfg: &JobConfig) -> Result<Self> {
        let (fabric, fd, key) = Fabric::create_for(cfg)?;
        let cpu_masks = if cfg.bind_cores {
            let plan = Plan::here(Policy::Core, cfg.nranks);
            plan.bindings.iter().filter_map(Binding::mask).collect()
        } else {
            Vec::new()
        };
        Ok(Job {
            fabric,
            fd,
            key,
            cpu_masks,
        })
    }

    pub fn nranks(&self) -> usize {
        self.fabric.geometry().nranks
    }

    /// Bytes of shared memory the fabric spans (virtual; pages are committed on first touch).
    pub fn fabric_bytes(&self) -> usize {
        self.fabric.geometry().total_bytes
    }

    /// Makes `cmd` start rank `rank` of this job: sets the environment, keeps the fabric
    /// descriptor open across `exec`, and asks the kernel to kill the child if the launching
    /// thread dies (so no process outlives its launcher).
    pub fn prepare(&self, cmd: &mut Command, rank: Rank) {
        assert!(rank < self.nranks(), "rank {rank} out of range");
        let fd = self.fd.as_raw_fd();
        let cpu_mask = self.cpu_masks.get(rank).copied();
        cmd.envs(self.env_for(rank));
        // SAFETY: the closure runs in the child between fork and exec and calls only
        // async-signal-safe functions (fcntl, prctl, getppid, and sched_setaffinity on a mask
        // made before the fork).
        unsafe {
            cmd.pre_exec(move || {
                if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                libc::prctl(
                    libc::PR_SET_PDEATHSIG,
                    libc::SIGKILL as libc::c_ulong,
                    0,
                    0,
                    0,
                );
                // The launcher may have died between fork and prctl.
                if libc::getppid() == 1 {
                    libc::_exit(1);
                }
                if let Some(mask) = cpu_mask {
                    // Best effort: an unbound rank still runs.
                    let _ = mask.apply_to_thread(0);
                }
                Ok(())
            });
        }
    }

    /// The environment through which rank `rank` finds this job (`prepare` sets it on a
    /// command; a process that runs as a rank of a job it created itself, such as an MPI
    /// program started without a launcher, sets it on itself).
    pub fn env_for(&self, rank: Rank) -> [(&'static str, String); 3] {
        [
            (env::FABRIC_FD, self.fd.as_raw_fd().to_string()),
            (env::RANK, rank.to_string()),
            (env::JOB_KEY, hex(&self.key)),
        ]
    }

    /// As [`env_for`](Self::env_for), for this very process to attach as `rank` (a program
    /// that runs as a one-rank job of its own): it names a duplicate of the descriptor, since
    /// the attaching NIC takes its descriptor over and closes it.
    pub fn env_for_self(&self, rank: Rank) -> Result<[(&'static str, String); 3]> {
        let dup = self.fd.try_clone().map_err(|e| NicError::Os {
            what: "duplicating the fabric descriptor",
            source: e,
        })?;
        let mut env = self.env_for(rank);
        env[0].1 = std::os::fd::IntoRawFd::into_raw_fd(dup).to_string();
        Ok(env)
    }

    /// Records that `rank` exited; a rank that ends without finalizing is marked dead so that
    /// every peer waiting on it gets an error at its next liveness check.
    pub fn mark_exit(&self, rank: Rank, exit: &RankExit) {
        let block = self.fabric.rank_block(rank);
        let code = match exit {
            RankExit::Code(c) => *c,
            RankExit::Signal(s) => 128 + s,
            RankExit::KilledByLauncher => 137,
        };
        block.exit_status.store(code, Ordering::Relaxed);
        let _ = block
            .state
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |s| {
                (s != rank_state::FINALIZED || !exit.success()).then_some(rank_state::DEAD)
            });
    }

    /// Starts one process per rank (`make(rank)` builds its command), waits for all of them,
    /// and tears the job down when one fails: peers get `grace` to notice the death and
    /// exit with their own error, then the rest are killed. `timeout` bounds the whole job.
    pub fn run(
        &self,
        mut make: impl FnMut(Rank) -> Command,
        grace: Duration,
        timeout: Option<Duration>,
    ) -> Result<JobOutcome> {
        let n = self.nranks();
        let mut children: Vec<Child> = Vec::with_capacity(n);
        for rank in 0..n {
            let mut cmd = make(rank);
            self.prepare(&mut cmd, rank);
            match cmd.spawn() {
                Ok(c) => children.push(c),
                Err(e) => {
                    kill_all(&mut children);
                    return Err(NicError::Os {
                        what: "starting a rank's process",
                        source: e,
                    });
                }
            }
        }
        let start = Instant::now();
        let mut exits: Vec<Option<RankExit>> = vec![None; n];
        let mut first_failure = None;
        let mut kill_at: Option<Instant> = None;
        let mut timed_out = false;
        let mut pause = Duration::from_micros(200);
        while exits.iter().any(Option::is_none) {
            let mut progressed = false;
            for (rank, child) in children.iter_mut().enumerate() {
                if exits[rank].is_some() {
                    continue;
                }
                if let Ok(Some(status)) = child.try_wait() {
                    let exit = RankExit::from_status(status);
                    self.mark_exit(rank, &exit);
                    if !exit.success() && first_failure.is_none() {
                        tracing::debug!(target: "nic", rank, ?exit, "rank failed");
                        first_failure = Some(rank);
                        kill_at = Some(Instant::now() + grace);
                    }
                    exits[rank] = Some(exit);
                    progressed = true;
                }
            }
            let now = Instant::now();
            if let Some(t) = timeout {
                if !timed_out && now.duration_since(start) > t {
                    timed_out = true;
                    kill_at = Some(now);
                }
            }
            if kill_at.is_some_and(|k| now >= k) {
                for (rank, child) in children.iter_mut().enumerate() {
                    if exits[rank].is_none() {
                        let _ = child.kill();
                        let _ = child.wait();
                        self.mark_exit(rank, &RankExit::KilledByLauncher);
                        exits[rank] = Some(RankExit::KilledByLauncher);
                    }
                }
            }
            if !progressed {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(10));
            }
        }
        Ok(JobOutcome {
            exits: exits.into_iter().map(Option::unwrap).collect(),
            first_failure,
            timed_out,
        })
    }
}

fn kill_all(children: &mut [Child]) {
    for c in children {
        let _ = c.kill();
        let _ = c.wait();
    }
}
