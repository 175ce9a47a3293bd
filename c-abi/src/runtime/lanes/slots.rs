//! The lanes' engines in slots, each behind its own mutex: the one place where a lane's
//! engine is reached through a shared reference.
//!
//! Two ways in. A call that holds the process lock exclusively has `&mut Runtime`, so
//! `&mut Lanes`, and reaches any lane with [`Lanes::get_mut`] (no lane mutex is held by
//! anyone then: lane mutexes are taken only under the shared process lock). A call on the
//! lane path holds the process lock shared and has only `&Runtime`: it takes its lane's
//! mutex ([`Lanes::lock`], or [`Lanes::try_lock`] to turn another lane if no thread is in
//! it), whose guard hands out the engine mutably for as long as it lives.

use mpich_channel::Engine;
use std::cell::UnsafeCell;
use std::sync::{Mutex, MutexGuard, TryLockError};

/// One lane other than 0, on cache lines of its own (so that threads on two lanes do not
/// pass a line between their cores through the mutexes).
#[repr(align(128))]
struct Slot {
    lock: Mutex<()>,
    engine: UnsafeCell<Engine>,
}

/// Lanes 1..n (lane 0 is `Runtime::engine`).
pub(crate) struct Lanes {
    slots: Box<[Slot]>,
}

/// A lane's engine, for as long as its mutex is held.
pub(crate) struct LaneGuard<'a> {
    _held: MutexGuard<'a, ()>,
    engine: &'a mut Engine,
}

impl LaneGuard<'_> {
    pub fn engine(&mut self) -> &mut Engine {
        self.engine
    }
}

impl Lanes {
    /// No lane beside lane 0.
    pub fn none() -> Lanes {
        Lanes {
            slots: Box::new([]),
        }
    }

    /// Lanes 1.. from their engines, in order.
    pub fn new(engines: Vec<Engine>) -> Lanes {
        Lanes {
            slots: engines
                .into_iter()
                .map(|engine| Slot {
                    lock: Mutex::new(()),
                    engine: UnsafeCell::new(engine),
                })
                .collect(),
        }
    }

    /// How many lanes there are, lane 0 included.
    #[inline(always)]
    pub fn count(&self) -> usize {
        self.slots.len() + 1
    }

    /// Whether lane 0 is the only one (the fast path's test).
    #[inline(always)]
    pub fn off(&self) -> bool {
        self.slots.is_empty()
    }

    /// Lane `k`'s engine (1 <= k < count), for a call that holds the whole state.
    pub fn get_mut(&mut self, k: usize) -> &mut Engine {
        self.slots[k - 1].engine.get_mut()
    }

    /// [`Lanes::get_mut`] kept out of the point-to-point fast path (lane 0 needs no slot).
    #[cold]
    #[inline(never)]
    pub fn get_mut_out_of_line(&mut self, k: usize) -> &mut Engine {
        self.get_mut(k)
    }

    /// Lane `k`'s engine under its mutex, waiting for it (1 <= k < count).
    pub fn lock(&self, k: usize) -> LaneGuard<'_> {
        let slot = &self.slots[k - 1];
        // A panic is caught inside the call that holds the guard; the mutex guards nothing
        // but the right to the engine, which is whole after any call.
        let held = slot.lock.lock().unwrap_or_else(|p| p.into_inner());
        // SAFETY: the slot's mutex is held until the guard (which the reference borrows) is
        // dropped, and every `&mut` to this engine made through a shared `Lanes` is made under
        // it; the other way in, `get_mut`, needs `&mut Lanes`, which cannot exist while this
        // `&Lanes` does (in this thread by the borrow rules; in others because `&mut Runtime`
        // is had only under the exclusive process lock, and `&Runtime` under the shared one).
        let engine = unsafe { &mut *slot.engine.get() };
        LaneGuard {
            _held: held,
            engine,
        }
    }

    /// As [`Lanes::lock`], if no other thread holds lane `k` now.
    pub fn try_lock(&self, k: usize) -> Option<LaneGuard<'_>> {
        let slot = &self.slots[k - 1];
        let held = match slot.lock.try_lock() {
            Ok(held) => held,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => return None,
        };
        // SAFETY: as in `lock`: the mutex is held for as long as the reference lives.
        let engine = unsafe { &mut *slot.engine.get() };
        Some(LaneGuard {
            _held: held,
            engine,
        })
    }

    /// The engines of lanes 1.., in order (to finalize them).
    pub fn into_engines(self) -> Vec<Engine> {
        self.slots
            .into_vec()
            .into_iter()
            .map(|s| s.engine.into_inner())
            .collect()
    }

    /// Every lane's engine 1.., for a call that holds the whole state.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut Engine> {
        self.slots.iter_mut().map(|s| s.engine.get_mut())
    }
}
