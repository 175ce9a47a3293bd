//! A readers-writer lock whose shared holds do not touch a common cache line: the process
//! lock under lanes (`super::lock`).
//!
//! ```text
//!   shared hold (lane path)         exclusive hold (every other call)
//!   slot[me] += 1 ── writing? ─no─▶ held        writer mutex ─▶ writing = true
//!        └─yes─▶ slot[me] -= 1, wait on the         ─▶ wait until every used slot is 0 ─▶ held
//!                writer mutex, try again       release: writing = false ─▶ writer mutex
//! ```
//!
//! **Why.** `std::sync::RwLock` counts its readers in one word: two threads on different
//! lanes that take it shared for every call write that word in turn, and the cache line
//! bounces between their cores on every MPI call (measured: the read lock's compare-and-swap
//! and its release were a third of a 1-rank, 2-thread message loop). Here each thread counts
//! its shared holds in a slot of its own ([`SLOTS`] slots of two cache lines each, handed out
//! to threads in turn as they first hold the lock shared; threads beyond that share slots,
//! which stays correct), and the flag an exclusive holder raises is read, not written, by
//! shared holders: with no exclusive holder around, threads on different lanes share nothing
//! here.
//!
//! **Correctness** is the store-load pattern of Dekker's algorithm, under sequentially
//! consistent atomics: a shared holder raises its slot, then reads `writing`; an exclusive
//! holder raises `writing`, then reads every slot. In the single total order of these
//! operations one of the two sees the other's raise, so they never both go on. The writer
//! mutex orders exclusive holders among themselves and is what a shared holder that met one
//! sleeps on (no spinning behind a long exclusive call); an exclusive holder waits for shared
//! holds by backing off (they are short: one look at a lane).

use std::cell::Cell;
use std::sync::atomic::{
    AtomicBool, AtomicUsize, Ordering::Relaxed, Ordering::Release, Ordering::SeqCst,
};
use std::sync::{Mutex, MutexGuard, TryLockError};

/// Slots of shared holds.
pub(crate) const SLOTS: usize = 16;

/// Two cache lines, what x86's adjacent-line prefetcher pulls in together.
#[repr(align(128))]
struct Padded<T>(T);

pub(crate) struct StripedLock {
    /// Held by the exclusive holder for as long as it holds the lock.
    writer: Mutex<()>,
    /// Raised while a thread holds the lock exclusively (or is waiting for shared holds to end).
    writing: Padded<AtomicBool>,
    /// Shared holds per slot.
    slots: [Padded<AtomicUsize>; SLOTS],
    /// Slots handed out so far (the first `min(used, SLOTS)` may be non-zero).
    used: AtomicUsize,
    /// Whether shared holds may happen ([`StripedLock::allow_shared`]); until then an
    /// exclusive hold is the writer mutex alone.
    shared_on: AtomicBool,
}

thread_local! {
    /// This thread's slot (`usize::MAX` until its first shared hold).
    static SLOT: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// An exclusive hold: released when dropped.
pub(crate) struct Exclusive {
    lock: &'static StripedLock,
    /// Whether this hold raised `writing` (shared holds were allowed when it began).
    raised: bool,
    _writer: MutexGuard<'static, ()>,
}

/// A shared hold: released when dropped.
pub(crate) struct Shared {
    lock: &'static StripedLock,
    slot: usize,
}

impl StripedLock {
    pub const fn new() -> StripedLock {
        StripedLock {
            writer: Mutex::new(()),
            writing: Padded(AtomicBool::new(false)),
            slots: [const { Padded(AtomicUsize::new(0)) }; SLOTS],
            used: AtomicUsize::new(0),
            shared_on: AtomicBool::new(false),
        }
    }

    /// From now on threads may hold the lock shared (lanes were made). Called by a thread
    /// that holds it exclusively, before any shared hold, so the exclusive holds that follow
    /// (ordered after it by the writer mutex) see it; an exclusive hold taken before it
    /// skipped the shared holds' protocol, which was right: there were none.
    pub fn allow_shared(&self) {
        self.shared_on.store(true, SeqCst);
    }

    /// This thread's slot, handed out at its first shared hold.
    #[inline]
    fn my_slot(&self) -> usize {
        SLOT.with(|s| {
            let mut k = s.get();
            if k == usize::MAX {
                k = self.used.fetch_add(1, SeqCst) % SLOTS;
                s.set(k);
            }
            k
        })
    }

    /// The writer mutex (never poisoned for good: a panic is caught inside the call that
    /// holds it, and it guards nothing but the right to the state).
    fn writer(&'static self) -> MutexGuard<'static, ()> {
        self.writer.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes the lock shared, waiting while a thread holds it exclusively.
    #[inline]
    pub fn shared(&'static self) -> Shared {
        let slot = self.my_slot();
        loop {
            self.slots[slot].0.fetch_add(1, SeqCst);
            if !self.writing.0.load(SeqCst) {
                return Shared { lock: self, slot };
            }
            self.slots[slot].0.fetch_sub(1, SeqCst);
            // Sleep until the exclusive holder lets go, then try again.
            drop(self.writer());
        }
    }

    /// Raises `writing` under the writer mutex and waits for the shared holds to end (nothing
    /// to do while shared holds cannot happen: the single-threaded cost of this lock is then
    /// the writer mutex's).
    fn exclude_readers(&'static self, writer: MutexGuard<'static, ()>) -> Exclusive {
        if !self.shared_on.load(Relaxed) {
            return Exclusive {
                lock: self,
                raised: false,
                _writer: writer,
            };
        }
        self.writing.0.store(true, SeqCst);
        let used = self.used.load(SeqCst).min(SLOTS);
        let mut spins = 0u32;
        for slot in &self.slots[..used] {
            while slot.0.load(SeqCst) != 0 {
                spins += 1;
                if spins < 64 {
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
        }
        Exclusive {
            lock: self,
            raised: true,
            _writer: writer,
        }
    }

    /// Takes the lock exclusively, waiting for the holders.
    pub fn exclusive(&'static self) -> Exclusive {
        let writer = self.writer();
        self.exclude_readers(writer)
    }

    /// Takes the lock exclusively if no thread holds it in any way now.
    pub fn try_exclusive(&'static self) -> Option<Exclusive> {
        let writer = match self.writer.try_lock() {
            Ok(w) => w,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => return None,
        };
        let used = self.used.load(SeqCst).min(SLOTS);
        if self.slots[..used].iter().any(|s| s.0.load(SeqCst) != 0) {
            return None;
        }
        // A shared hold that began after the look is waited for (it is one look at a lane).
        Some(self.exclude_readers(writer))
    }
}

impl Drop for Exclusive {
    fn drop(&mut self) {
        if self.raised {
            // Release: a shared holder that reads `false` sees what this holder wrote.
            self.lock.writing.0.store(false, Release);
        }
        // The writer mutex is released after this (field drop), waking shared holders.
    }
}

impl Drop for Shared {
    #[inline]
    fn drop(&mut self) {
        self.lock.slots[self.slot].0.fetch_sub(1, SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    /// Exclusive holders never overlap shared holders or each other, over threads that mix
    /// both kinds of holds.
    #[test]
    fn exclusive_holds_see_no_one_else() {
        static LOCK: StripedLock = StripedLock::new();
        static INSIDE: AtomicU64 = AtomicU64::new(0);
        const WRITER: u64 = 1 << 32;
        LOCK.allow_shared();
        let threads: Vec<_> = (0..6)
            .map(|t| {
                std::thread::spawn(move || {
                    for i in 0..3000 {
                        if (i + t) % 7 == 0 {
                            let _x = LOCK.exclusive();
                            assert_eq!(INSIDE.fetch_add(WRITER, SeqCst), 0);
                            std::hint::spin_loop();
                            INSIDE.fetch_sub(WRITER, SeqCst);
                        } else if (i + t) % 11 == 0 {
                            if let Some(_x) = LOCK.try_exclusive() {
                                assert_eq!(INSIDE.fetch_add(WRITER, SeqCst), 0);
                                INSIDE.fetch_sub(WRITER, SeqCst);
                            }
                        } else {
                            let _s = LOCK.shared();
                            assert!(INSIDE.fetch_add(1, SeqCst) < WRITER);
                            INSIDE.fetch_sub(1, SeqCst);
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("no thread saw an overlap");
        }
        assert_eq!(INSIDE.load(SeqCst), 0);
    }
}
