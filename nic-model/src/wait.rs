//! Waiting without burning a shared core: poll briefly, then yield, then sleep in short naps.
//!
//! Ranks often outnumber cores here (4 or 8 ranks on 2 cores), so a blocked process must give
//! its core away quickly, yet a ping-pong between two idle cores must never leave the spin
//! phase. `Backoff::snooze` also says when a blocked caller should check that its peers are
//! still alive (every 100 ms once it has waited that long), so that a dead peer surfaces as an
//! error well within a second.

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
/// `MPI_Allreduce` took 260 us with 4096 polls and 7.4 us with 64.
const SPIN_POLLS_SHARED: u32 = 64;

/// The spin phase of this process (one of the two above).
static SPIN: AtomicU32 = AtomicU32::new(SPIN_POLLS);

/// Tells the waiting loops how many ranks of the job run on this host: with more ranks than
/// online processors (not the processors this process is bound to: a rank pinned to one core
/// of two is not oversubscribed), they spin briefly before yielding the core.
pub fn note_ranks_on_host(ranks: usize) {
    // SAFETY: sysconf has no preconditions.
    let cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    let shared = cpus > 0 && ranks > cpus as usize;
    SPIN.store(
        if shared {
            SPIN_POLLS_SHARED
        } else {
            SPIN_POLLS
        },
        Ordering::Relaxed,
    );
}

/// Tells the waiting loops that a poll of this process's device makes system calls (a network
/// device reads its sockets): a poll then costs about a microsecond instead of a few
/// nanoseconds, so the spin phase is kept as short as when ranks share cores, or 4096 polls
/// would hold the core for milliseconds before yielding it.
pub fn note_polls_are_system_calls() {
    SPIN.store(SPIN_POLLS_SHARED, Ordering::Relaxed);
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
        if now - since < YIELD_FOR {
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
