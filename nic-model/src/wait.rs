//! Waiting without burning a shared core: poll briefly, then yield, then sleep in short naps.
//!
//! Ranks often outnumber cores here (4 or 8 ranks on 2 cores), so a blocked process must give
//! its core away quickly, yet a ping-pong between two idle cores must never leave the spin
//! phase. `Backoff::snooze` also says when a blocked caller should check that its peers are
//! still alive (every 100 ms once it has waited that long), so that a dead peer surfaces as an
//! error well within a second.
//!
//! **Oversubscribed jobs** ([`note_ranks_on_host`]: more ranks on this host than the job's
//! processors) spin briefly, yield for only 100 us, then nap 50 us at a time. Yielding longer
//! fails under Linux's EEVDF scheduler whenever anything else wants the processors (a
//! compiler, another job): each `sched_yield` pushes the caller's deadline back, so a rank
//! that yields while its peer waits to run can stay off the processor for milliseconds, and a
//! rank that naps leaves the run queue to its peer. Measured with 4 ranks on 2 cores beside
//! builds (load 9), 8-byte `MPI_Barrier`/`MPI_Allreduce`/`MPI_Bcast` per call: yielding for
//! 2 ms before napping, 2970/1690/410 us; yielding 20 us, 260/260/80 us; napping at once,
//! 160/160/23 us; naps of 4 us (timer slack lowered) were worse than yielding (6 ms), the
//! wakeups preempting the peers. At load 4.5 (mostly the job itself) a collective still cost
//! the whole yielding spell plus a nap (2.8 ms with a 2 ms spell, 240-260 us with 100 us):
//! here a yield seldom hands the processor to the peer at all. Open MPI does the same
//! collectives in 4-6 us on this machine; so do we on a quiet machine since the spin phase of
//! an oversubscribed job was cut from 64 polls to 16 (`SPIN_POLLS_SHARED`). `MPI_WAIT_SPIN` and
//! `MPI_WAIT_YIELD_US` override the two figures of an oversubscribed job (for experiments).

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Polls with only a pause hint between them, about 10-20 us: a message from a peer on
/// another core arrives within a poll or two of being sent, so the spin phase must not space
/// polls out (an exponential spin adds its gaps straight to the latency: measured here, 1 pause
/// between polls gave 0.10 us NIC latency, 4 pauses 0.15 us, 16 pauses 0.26 us).
const SPIN_POLLS: u32 = 4096;
/// The spin phase when the job has more ranks on this host than the host has processors
/// ([`note_ranks_on_host`]). The peer a rank waits for is then often waiting for the same
/// core, and every poll spent spinning delays it: measured with 4 ranks on 2 cores, an 8-byte
/// `MPI_Allreduce` took 260 us with 4096 polls and 7.4 us with 64. On a quiet machine
/// (`mpibench --np 4 --benchmarks allreduce,bcast,barrier --sizes 8`, `MPI_WAIT_SPIN` 0, 4,
/// 16, 64 alternating, two rounds of three) 64 polls gave 8.9-10.9 / 0.56-0.87 / 8.8-13.6 us
/// and 16 polls 3.5-6.7 / 0.63-0.71 / 4.3-4.6 us (0 and 4 about as 16; 512 ten times worse).
const SPIN_POLLS_SHARED: u32 = 16;
/// The spin phase when a poll is a system call ([`note_polls_are_system_calls`]).
const SPIN_POLLS_SYSCALL: u32 = 64;

/// The spin phase of this process (one of the two above).
static SPIN: AtomicU32 = AtomicU32::new(SPIN_POLLS);

/// How long an oversubscribed rank yields before it naps (see the module's documentation).
const YIELD_FOR_SHARED: Duration = Duration::from_micros(100);

/// The yielding spell of this process, in microseconds.
static YIELD_US: AtomicU32 = AtomicU32::new(YIELD_FOR.as_micros() as u32);

/// Tells the waiting loops how many ranks of the job run on this host: with more ranks than
/// the job's processors, they spin briefly, yield briefly, then nap (see the module's
/// documentation).
///
/// The job's processors are those this process or its parent may run on
/// ([`job_cpus`]): `taskset -c 0 mpirun -n 2` or a cgroup cpuset gives the job fewer
/// processors than the machine has online, while a rank that the launcher pinned to one core
/// of two (its parent, the launcher, keeps both) is not oversubscribed.
pub fn note_ranks_on_host(ranks: usize) {
    let shared = job_cpus().is_some_and(|cpus| ranks > cpus);
    if !shared {
        SPIN.store(SPIN_POLLS, Ordering::Relaxed);
        YIELD_US.store(YIELD_FOR.as_micros() as u32, Ordering::Relaxed);
        return;
    }
    let knob = |name: &str, default: u32| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    SPIN.store(knob("MPI_WAIT_SPIN", SPIN_POLLS_SHARED), Ordering::Relaxed);
    YIELD_US.store(
        knob("MPI_WAIT_YIELD_US", YIELD_FOR_SHARED.as_micros() as u32),
        Ordering::Relaxed,
    );
}

/// How many processors the ranks of this job on this host may share: those in the affinity
/// of this process or of its parent (the launcher, which binds its ranks between fork and
/// exec and keeps the whole set for itself), at most the online ones; `None` if the kernel
/// says nothing. A rank started without a launcher has an unrelated parent (a shell), whose
/// set is at most the machine's: then the figure is the online processors, as it was before
/// affinity was looked at.
pub fn job_cpus() -> Option<usize> {
    // SAFETY: sysconf has no preconditions.
    let online = usize::try_from(unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }).ok();
    // SAFETY: getppid has no preconditions and cannot fail.
    let parent = unsafe { libc::getppid() };
    let union = match (affinity(0), affinity(parent)) {
        (Some(own), Some(theirs)) => Some(union_count(&own, &theirs)),
        (Some(own), None) => Some(union_count(&own, &own)),
        (None, _) => None,
    };
    match (union, online) {
        (Some(u), Some(o)) if u > 0 => Some(u.min(o)),
        (Some(u), None) if u > 0 => Some(u),
        (_, o) => o.filter(|&o| o > 0),
    }
}

/// The affinity of process `pid` (0: this one).
fn affinity(pid: libc::pid_t) -> Option<libc::cpu_set_t> {
    // SAFETY: all zeroes is the empty cpu_set_t (a plain bit array).
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: the pointer and size describe `set`, which outlives the call; the kernel writes
    // at most `size` bytes.
    let r =
        unsafe { libc::sched_getaffinity(pid, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    (r == 0).then_some(set)
}

/// Processors in either set.
fn union_count(a: &libc::cpu_set_t, b: &libc::cpu_set_t) -> usize {
    let bits = 8 * std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: every `c` is below the sets' capacity.
    (0..bits)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, a) || libc::CPU_ISSET(c, b) })
        .count()
}

/// Tells the waiting loops that a poll of this process's device makes system calls (a network
/// device reads its sockets): a poll then costs about a microsecond instead of a few
/// nanoseconds, so the spin phase is kept short, or 4096 polls would hold the core for
/// milliseconds before yielding it.
pub fn note_polls_are_system_calls() {
    SPIN.store(SPIN_POLLS_SYSCALL, Ordering::Relaxed);
}

const YIELD_FOR: Duration = Duration::from_millis(2);
const NAP: Duration = Duration::from_micros(50);
const CHECK_EVERY: Duration = Duration::from_millis(100);

/// State of one wait.
#[derive(Debug, Default)]
pub struct Backoff {
    round: u32,
    since: Option<Instant>,
    next_check: Option<Instant>,
}

impl Backoff {
    pub fn new() -> Self {
        Self::default()
    }

    /// Waits a little; returns true when the caller should check its peers' liveness.
    #[inline]
    pub fn snooze(&mut self) -> bool {
        if self.round < SPIN.load(Ordering::Relaxed) {
            std::hint::spin_loop();
            self.round += 1;
            return false;
        }
        self.slow()
    }

    #[cold]
    fn slow(&mut self) -> bool {
        let now = Instant::now();
        let since = *self.since.get_or_insert(now);
        if now - since < Duration::from_micros(YIELD_US.load(Ordering::Relaxed).into()) {
            std::thread::yield_now();
        } else {
            std::thread::sleep(NAP);
        }
        let next = self.next_check.get_or_insert(since + CHECK_EVERY);
        if now >= *next {
            *next = now + CHECK_EVERY;
            return true;
        }
        false
    }

    /// Starts over after progress was made.
    #[inline]
    pub fn reset(&mut self) {
        self.round = 0;
        self.since = None;
        self.next_check = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_job_has_its_own_processors_and_no_more_than_are_online() {
        let cpus = job_cpus().expect("Linux tells the affinity");
        let own = affinity(0)
            .map(|s| union_count(&s, &s))
            .expect("own affinity");
        // SAFETY: sysconf has no preconditions.
        let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) } as usize;
        assert!(
            own >= 1 && own <= cpus && cpus <= online,
            "{own} <= {cpus} <= {online}"
        );
    }

    #[test]
    fn a_wait_ends_its_spin_then_yields_or_naps_and_starts_over_on_reset() {
        let mut b = Backoff::new();
        let spin = SPIN.load(Ordering::Relaxed);
        for _ in 0..spin {
            assert!(!b.snooze(), "no liveness check while spinning");
        }
        assert_eq!(b.round, spin);
        assert!(b.since.is_none());
        b.snooze();
        assert!(b.since.is_some(), "past the spin the wait is timed");
        b.reset();
        assert_eq!((b.round, b.since), (0, None));
    }
}
