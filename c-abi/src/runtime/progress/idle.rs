//! How the progress thread waits while nothing happens: spin a little, then yield, then
//! sleep in naps that grow to [`LONGEST_NAP`]; any progress starts over.
//!
//! The thread shares the processors with the program's own thread (and, 4 or 8 ranks on 2
//! cores being normal here, with other ranks): once a job is idle its progress threads must
//! sleep nearly all the time. A nap of 160 us costs a wakeup every 160 us, well under 1 % of
//! a core, and bounds how long an origin waits for a target that computes (plus the
//! scheduler's delay in waking the thread).

use std::time::Duration;

/// Idle rounds that only spin (each round is one try at the lock and, when it is free, one
/// turn of the engine).
const SPIN_ROUNDS: u32 = 32;
/// Idle rounds after those that yield the processor.
const YIELD_ROUNDS: u32 = 16;
/// The first nap, doubled at each idle round up to [`LONGEST_NAP`].
const FIRST_NAP: Duration = Duration::from_micros(10);
/// The longest nap: the latency of a passive-target operation on a target that computes.
pub(super) const LONGEST_NAP: Duration = Duration::from_micros(160);

/// Where the thread is in its backing off.
#[derive(Debug, Default)]
pub(super) struct Idle {
    rounds: u32,
    nap: Duration,
}

impl Idle {
    /// Waits after an idle round: longer the longer the thread has been idle.
    pub fn wait(&mut self) {
        if self.rounds < SPIN_ROUNDS {
            std::hint::spin_loop();
        } else if self.rounds < SPIN_ROUNDS + YIELD_ROUNDS {
            std::thread::yield_now();
        } else {
            self.nap = (self.nap * 2).clamp(FIRST_NAP, LONGEST_NAP);
            std::thread::sleep(self.nap);
        }
        self.rounds = self.rounds.saturating_add(1);
    }

    /// Something happened: poll eagerly again.
    pub fn reset(&mut self) {
        self.rounds = 0;
        self.nap = Duration::ZERO;
    }

    /// The nap the next idle round takes (zero while spinning or yielding).
    #[cfg(test)]
    fn next_nap(&self) -> Duration {
        if self.rounds < SPIN_ROUNDS + YIELD_ROUNDS {
            Duration::ZERO
        } else {
            (self.nap * 2).clamp(FIRST_NAP, LONGEST_NAP)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn naps_grow_to_the_longest_and_progress_starts_over() {
        let mut idle = Idle::default();
        for _ in 0..SPIN_ROUNDS + YIELD_ROUNDS {
            assert_eq!(idle.next_nap(), Duration::ZERO);
            idle.wait();
        }
        let mut naps = Vec::new();
        for _ in 0..6 {
            naps.push(idle.next_nap());
            idle.wait();
        }
        assert_eq!(naps.first(), Some(&FIRST_NAP));
        assert!(naps.windows(2).all(|w| w[0] <= w[1]), "{naps:?}");
        assert_eq!(naps.last(), Some(&LONGEST_NAP));
        idle.reset();
        assert_eq!(idle.next_nap(), Duration::ZERO);
    }
}
