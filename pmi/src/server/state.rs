//! The job's shared state behind every connection: who is connected, the key-value space,
//! and the barrier.
//!
//! **KVS.** A `put` goes to a pending list; the barrier that every rank enters commits all
//! pending puts at once, and only committed keys are found by `get` (as Hydra, whose proxies
//! flush puts at the barrier). A later put of a key replaces it at the next commit.
//!
//! **Barrier.** Completes when all `size` ranks are in it. Once any rank has left the job
//! (finalized, aborted, or lost its connection) a barrier can never complete: the ranks
//! waiting in it, and any that enter one later, get a failure naming that rank.

use std::collections::HashMap;
use tokio::sync::oneshot;

/// Where one rank stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Presence {
    /// No connection yet.
    Absent,
    /// A connection exists (inherited socket served, or a TCP client passed `initack`).
    Connected,
    /// It sent `init` (or passed `initack`).
    Initialized,
    Finalized,
    Aborted,
    Lost,
}

impl Presence {
    /// It has left the job: it will never enter another barrier.
    pub fn gone(self) -> bool {
        matches!(
            self,
            Presence::Finalized | Presence::Aborted | Presence::Lost
        )
    }
}

/// How a barrier ended for one waiting rank.
pub type BarrierOutcome = Result<(), String>;

pub struct JobState {
    presence: Vec<Presence>,
    committed: HashMap<String, String>,
    pending: Vec<(String, String)>,
    waiting: Vec<(usize, oneshot::Sender<BarrierOutcome>)>,
    /// Why barriers can no longer complete.
    broken: Option<String>,
}

impl JobState {
    /// A job of `size` ranks whose key space starts with `preput` (reserved keys such as
    /// `PMI_process_mapping`).
    pub fn new(size: usize, preput: impl IntoIterator<Item = (String, String)>) -> JobState {
        JobState {
            presence: vec![Presence::Absent; size],
            committed: preput.into_iter().collect(),
            pending: Vec::new(),
            waiting: Vec::new(),
            broken: None,
        }
    }

    pub fn size(&self) -> usize {
        self.presence.len()
    }

    pub fn presence(&self, rank: usize) -> Presence {
        self.presence[rank]
    }

    /// Claims `rank` for a new connection; why not, if it cannot be.
    pub fn claim(&mut self, rank: usize) -> Result<(), String> {
        match self.presence.get(rank) {
            None => Err(format!(
                "rank {rank} is not in this job of {} ranks",
                self.size()
            )),
            Some(Presence::Absent) => {
                self.presence[rank] = Presence::Connected;
                Ok(())
            }
            Some(_) => Err(format!("rank {rank} is connected already")),
        }
    }

    /// Marks `rank` initialized; true the first time.
    pub fn initialize(&mut self, rank: usize) -> bool {
        if self.presence[rank] == Presence::Connected {
            self.presence[rank] = Presence::Initialized;
            true
        } else {
            false
        }
    }

    /// Records that `rank` left the job as `how` (a [`Presence::gone`] state), failing every
    /// barrier from now on. Returns false if it had left already.
    pub fn leave(&mut self, rank: usize, how: Presence) -> bool {
        debug_assert!(how.gone());
        if self.presence[rank].gone() {
            return false;
        }
        self.presence[rank] = how;
        let verb = match how {
            Presence::Finalized => "finalized",
            Presence::Aborted => "aborted",
            _ => "lost its connection to the process manager",
        };
        let reason = format!("rank {rank} {verb}; the barrier cannot complete");
        for (_, waiter) in self.waiting.drain(..) {
            let _ = waiter.send(Err(reason.clone()));
        }
        self.broken.get_or_insert(reason);
        true
    }

    pub fn put(&mut self, key: String, value: String) {
        self.pending.push((key, value));
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.committed.get(key).map(String::as_str)
    }

    /// `rank` enters the barrier; the receiver gets the outcome (at once if the barrier is
    /// broken, or if `rank` was the last to come).
    pub fn enter_barrier(&mut self, rank: usize) -> oneshot::Receiver<BarrierOutcome> {
        let (sender, receiver) = oneshot::channel();
        if let Some(reason) = &self.broken {
            let _ = sender.send(Err(reason.clone()));
            return receiver;
        }
        if self.waiting.iter().any(|(r, _)| *r == rank) {
            let _ = sender.send(Err(format!("rank {rank} is in the barrier already")));
            return receiver;
        }
        self.waiting.push((rank, sender));
        if self.waiting.len() == self.size() {
            for (key, value) in self.pending.drain(..) {
                self.committed.insert(key, value);
            }
            for (_, waiter) in self.waiting.drain(..) {
                let _ = waiter.send(Ok(()));
            }
        }
        receiver
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(mut rx: oneshot::Receiver<BarrierOutcome>) -> Option<BarrierOutcome> {
        rx.try_recv().ok()
    }

    #[test]
    fn puts_are_seen_after_the_barrier_only() {
        let mut job = JobState::new(
            2,
            [("PMI_process_mapping".into(), "(vector,(0,1,2))".into())],
        );
        assert!(job.get("PMI_process_mapping").is_some());
        job.put("k".into(), "v".into());
        assert_eq!(job.get("k"), None);
        let first = job.enter_barrier(0);
        let second = job.enter_barrier(1);
        assert_eq!(outcome(first), Some(Ok(())));
        assert_eq!(outcome(second), Some(Ok(())));
        assert_eq!(job.get("k"), Some("v"));
    }

    #[test]
    fn a_rank_that_leaves_breaks_the_barrier() {
        let mut job = JobState::new(3, []);
        let waiting = job.enter_barrier(0);
        assert!(job.leave(2, Presence::Lost));
        assert!(!job.leave(2, Presence::Finalized));
        assert!(matches!(outcome(waiting), Some(Err(m)) if m.contains("rank 2")));
        assert!(matches!(outcome(job.enter_barrier(1)), Some(Err(_))));
    }

    #[test]
    fn ranks_are_claimed_once() {
        let mut job = JobState::new(2, []);
        assert!(job.claim(1).is_ok());
        assert!(job.claim(1).is_err());
        assert!(job.claim(2).is_err());
        assert!(job.initialize(1));
        assert!(!job.initialize(1));
    }
}
