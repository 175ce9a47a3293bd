//! Communicators whose context pair arrives later: those of `MPI_Comm_idup`.
//!
//! The agreement on an idup's contexts ends inside the progress engine (`comm::agree`), where
//! the communicator table cannot be reached (the call that turns the engine holds it), so the
//! new communicator does not live in the table's slot: it lives in its own heap block, which
//! the engine's operation writes the contexts into when the agreement ends ([`Arrival`]); the
//! table's slot holds a stand-in that says so (`Comm::late`), and the table's lookups go to the
//! heap block once the contexts are there ([`LateComms::get`]). Freeing the communicator moves
//! it back into its slot ([`LateComms::take`]).
//!
//! The program may use the communicator only once the idup's request has completed (MPI 3.1
//! §6.4.2), and the table hands out references to it only from then on; the engine writes it
//! only before then. So the write never meets a reference.

use super::{Comm, CommIdx};
use std::cell::Cell;
use std::rc::Rc;

/// One communicator whose contexts are arriving.
struct Late {
    idx: CommIdx,
    /// The heap block (from `Box::into_raw`); ours until `ready` (then nobody writes it).
    comm: *mut Comm,
    ready: Rc<Cell<bool>>,
    /// The operation that writes it has started.
    started: bool,
}

/// Where the engine's operation writes the agreed contexts.
pub(crate) struct Arrival {
    comm: *mut Comm,
    ready: Rc<Cell<bool>>,
}

impl Arrival {
    /// The agreement ended with contexts `ctxs`: they go into the communicator, which the
    /// table then hands out.
    pub fn deliver(self, (ctx, coll_ctx): (u16, u16)) {
        // SAFETY: `comm` is the live heap block of a late communicator (freed only once
        // `ready` is set or its operation has gone, see `LateComms::take`); until `ready` is
        // set the table hands out no reference to it, so this write is the only access.
        unsafe {
            (*self.comm).ctx = ctx;
            (*self.comm).coll_ctx = coll_ctx;
        }
        self.ready.set(true);
    }
}

/// The late communicators of the table.
#[derive(Default)]
pub(crate) struct LateComms {
    list: Vec<Late>,
}

impl LateComms {
    /// Keeps `comm` (the communicator of slot `idx`) in a heap block of its own.
    pub fn add(&mut self, idx: CommIdx, comm: Comm) {
        self.list.push(Late {
            idx,
            comm: Box::into_raw(Box::new(comm)),
            ready: Rc::new(Cell::new(false)),
            started: false,
        });
    }

    fn find(&self, idx: CommIdx) -> Option<&Late> {
        self.list.iter().find(|l| l.idx == idx)
    }

    /// The operation that will deliver `idx`'s contexts is starting: where it writes them.
    pub fn arrival(&mut self, idx: CommIdx) -> Arrival {
        let l = self
            .list
            .iter_mut()
            .find(|l| l.idx == idx)
            .expect("a late communicator");
        l.started = true;
        Arrival {
            comm: l.comm,
            ready: l.ready.clone(),
        }
    }

    /// The communicator of slot `idx` if it is there for use: set up (before its operation
    /// starts) or with its contexts delivered.
    pub fn get(&self, idx: CommIdx) -> Option<&Comm> {
        let l = self.find(idx)?;
        // SAFETY: a live heap block, which nothing writes now (not started yet, or delivered);
        // the reference lives no longer than `&self`, and blocks are freed only through
        // `&mut self`.
        (!l.started || l.ready.get()).then(|| unsafe { &*l.comm })
    }

    /// As [`LateComms::get`], to change.
    pub fn get_mut(&mut self, idx: CommIdx) -> Option<&mut Comm> {
        let l = self.list.iter().find(|l| l.idx == idx)?;
        // SAFETY: as for `get`; `&mut self` makes this the only reference.
        (!l.started || l.ready.get()).then(|| unsafe { &mut *l.comm })
    }

    /// Takes `idx`'s communicator out (it is being freed, or its idup failed): `None` while
    /// its operation may still write it (the program freed it before the idup completed;
    /// the block is then left to the operation, and leaks).
    pub fn take(&mut self, idx: CommIdx) -> Option<Comm> {
        let i = self.list.iter().position(|l| l.idx == idx)?;
        let l = self.list.swap_remove(i);
        if l.started && !l.ready.get() {
            return None;
        }
        // SAFETY: the block came from `Box::into_raw` and nothing else refers to it now.
        Some(*unsafe { Box::from_raw(l.comm) })
    }
}

impl Drop for LateComms {
    fn drop(&mut self) {
        for l in self.list.drain(..) {
            if !l.started || l.ready.get() {
                // SAFETY: as in `take`.
                drop(unsafe { Box::from_raw(l.comm) });
            }
        }
    }
}
