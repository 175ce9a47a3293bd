//! Request handles: the table behind `MPI_Request`.
//!
//! An `MPI_Request` is an int in MPICH's encoding: `MPI_REQUEST_NULL` is `0x2c000000`, and an
//! active request here is `0xac000000 | generation << 20 | index`: the kind bits of an MPICH
//! request handle, then a 6-bit generation and a 20-bit index into this table. The generation
//! grows each time a slot is reused, so a stale copy of a completed request's handle is
//! refused (`MPI_ERR_REQUEST`) instead of reaching the request that reuses its slot (unless
//! exactly a multiple of 64 requests reused it since).
//!
//! Slots are recycled through a free list and the table only grows when more requests are
//! outstanding than ever before, so starting and completing a request allocates nothing in a
//! program's steady state.
//!
//! What a request is ([`Op`]): an operation in the engine; one that completed already and keeps
//! its status (a send to `MPI_PROC_NULL`, a buffered send, whose data is safe in the attached
//! buffer once the call returns, or a request whose completion `MPI_Request_get_status` saw);
//! or a persistent request, which is this layer's own: its arguments, and while active the
//! engine operation that `MPI_Start` made from them. An operation on scattered data (a derived
//! datatype that is not one block of memory) also owns its [`Staging`] buffer: the packed copy a
//! send is sent from, or the buffer a receive lands in and is unpacked from when it completes.

use crate::abi::*;
use crate::args::{Outgoing, RecvOp, SendKind, SendOp, Staged};
use crate::comm::CommIdx;
use crate::error::{MpiError, MpiResult};
use crate::status::Completion;
use mpich_channel::ReqId;

const HANDLE_TAG: u32 = 0xac00_0000;
const HANDLE_TAG_MASK: u32 = 0xfc00_0000;
const INDEX_BITS: u32 = 20;
const INDEX_MASK: u32 = (1 << INDEX_BITS) - 1;
const GENERATION_MASK: u32 = (1 << (26 - INDEX_BITS)) - 1;
/// The most requests that can be outstanding at once.
pub(crate) const MAX_REQUESTS: usize = 1 << INDEX_BITS;
const NO_SLOT: u32 = u32::MAX;

/// What a request stands for.
#[derive(Debug)]
pub(crate) enum Op {
    /// An operation in the engine.
    Engine(ReqId),
    /// An operation in the engine on a staging buffer the request owns.
    Staged(ReqId, Box<Staging>),
    /// Complete; its status waits for `MPI_Wait`/`MPI_Test`.
    Done(Completion),
    /// A persistent request.
    Persistent(Persistent),
    /// A nonblocking collective, advanced by [`crate::coll::test`] / [`crate::coll::wait`].
    Coll(crate::coll::CollId),
}

/// A request: its operation and the communicator it belongs to (for its statuses' ranks and
/// for the error handler).
#[derive(Debug)]
pub(crate) struct Request {
    pub comm: CommIdx,
    pub op: Op,
}

/// The buffer of an operation on scattered data, kept until it completes.
#[derive(Debug)]
pub(crate) enum Staging {
    /// The packed data a send is sent from (only kept alive, never read here).
    Send(#[allow(dead_code)] Outgoing),
    /// Where a receive lands, and where to unpack it.
    Recv(Staged),
}

/// A persistent request (`MPI_Send_init`, ...): its arguments and its state.
#[derive(Debug)]
pub(crate) struct Persistent {
    pub kind: PersistentKind,
    pub state: PersistentState,
    /// The staging buffer of the active operation, for scattered data.
    pub staging: Option<Box<Staging>>,
}

#[derive(Debug, Clone)]
pub(crate) enum PersistentKind {
    Send(SendOp, SendKind),
    Recv(RecvOp),
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum PersistentState {
    /// Not started, or completed since: completing it gives the empty status.
    Inactive,
    /// Started: the engine operation.
    Active(ReqId),
    /// Started and complete (to `MPI_PROC_NULL`, or buffered), not yet waited for.
    Complete(Completion),
}

struct Slot {
    generation: u32,
    entry: Entry,
}

enum Entry {
    Free { next: u32 },
    Used(Request),
}

/// Every outstanding request of the process.
pub(crate) struct RequestTable {
    slots: Vec<Slot>,
    free: u32,
    live: usize,
}

impl RequestTable {
    /// A table with room for `capacity` requests before it first grows.
    pub fn with_capacity(capacity: usize) -> RequestTable {
        RequestTable {
            slots: Vec::with_capacity(capacity),
            free: NO_SLOT,
            live: 0,
        }
    }

    /// Requests not yet completed or freed.
    pub fn live(&self) -> usize {
        self.live
    }

    /// Whether [`RequestTable::insert`] has room for one more request.
    #[inline]
    pub fn has_room(&self) -> bool {
        self.free != NO_SLOT || self.slots.len() < MAX_REQUESTS
    }

    /// Stores `r` and returns its handle.
    #[inline]
    pub fn insert(&mut self, r: Request) -> MpiResult<MPI_Request> {
        let index = if self.free != NO_SLOT {
            let index = self.free;
            let slot = &mut self.slots[index as usize];
            let Entry::Free { next } = slot.entry else {
                unreachable!("the free list holds free slots")
            };
            self.free = next;
            slot.entry = Entry::Used(r);
            index
        } else {
            if self.slots.len() >= MAX_REQUESTS {
                return Err(too_many_requests());
            }
            self.slots.push(Slot {
                generation: 0,
                entry: Entry::Used(r),
            });
            (self.slots.len() - 1) as u32
        };
        self.live += 1;
        Ok(encode(index, self.slots[index as usize].generation))
    }

    /// The request behind a handle: `MPI_ERR_REQUEST` unless it is outstanding.
    #[inline]
    pub fn get_mut(&mut self, handle: MPI_Request) -> MpiResult<&mut Request> {
        let index = self.index_of(handle)?;
        match &mut self.slots[index].entry {
            Entry::Used(r) => Ok(r),
            Entry::Free { .. } => unreachable!("index_of checks the slot is used"),
        }
    }

    /// Checks a handle without using it.
    #[inline]
    pub fn check(&self, handle: MPI_Request) -> MpiResult<()> {
        self.index_of(handle).map(|_| ())
    }

    /// Removes a request (its handle becomes invalid) and returns it.
    #[inline]
    pub fn remove(&mut self, handle: MPI_Request) -> MpiResult<Request> {
        let index = self.index_of(handle)?;
        let slot = &mut self.slots[index];
        let entry = std::mem::replace(&mut slot.entry, Entry::Free { next: self.free });
        slot.generation = slot.generation.wrapping_add(1);
        self.free = index as u32;
        self.live -= 1;
        match entry {
            Entry::Used(r) => Ok(r),
            Entry::Free { .. } => unreachable!("index_of checks the slot is used"),
        }
    }

    #[inline]
    fn index_of(&self, handle: MPI_Request) -> MpiResult<usize> {
        if let Some((index, generation)) = decode(handle) {
            if let Some(slot) = self.slots.get(index as usize) {
                if matches!(slot.entry, Entry::Used(_))
                    && slot.generation & GENERATION_MASK == generation
                {
                    return Ok(index as usize);
                }
            }
        }
        Err(invalid_request(handle))
    }
}

#[inline(always)]
fn encode(index: u32, generation: u32) -> MPI_Request {
    (HANDLE_TAG | (generation & GENERATION_MASK) << INDEX_BITS | index) as MPI_Request
}

/// `(index, generation)` of a handle of this table's form.
#[inline(always)]
fn decode(handle: MPI_Request) -> Option<(u32, u32)> {
    let h = handle as u32;
    (h & HANDLE_TAG_MASK == HANDLE_TAG)
        .then_some((h & INDEX_MASK, (h >> INDEX_BITS) & GENERATION_MASK))
}

#[cold]
fn invalid_request(handle: MPI_Request) -> MpiError {
    let detail = if handle == MPI_REQUEST_NULL {
        "the request is MPI_REQUEST_NULL".to_string()
    } else {
        format!("0x{handle:08x} is not an outstanding request (completed or freed already, or not a request handle)")
    };
    MpiError::new(MPI_ERR_REQUEST, detail)
}

#[cold]
pub(crate) fn too_many_requests() -> MpiError {
    MpiError::new(
        MPI_ERR_OTHER,
        format!("more than {MAX_REQUESTS} requests are outstanding; complete some (MPI_Wait, MPI_Test) before starting more"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn done() -> Request {
        Request {
            comm: 0,
            op: Op::Done(Completion::EMPTY),
        }
    }

    #[test]
    fn handles_have_mpich_request_kind_bits() {
        let mut t = RequestTable::with_capacity(4);
        let h = t.insert(done()).unwrap();
        assert_eq!(h as u32 & 0xfc00_0000, 0xac00_0000);
        assert_ne!(h, MPI_REQUEST_NULL);
        assert!(t.check(h).is_ok());
        assert_eq!(t.live(), 1);
    }

    #[test]
    fn stale_and_foreign_handles_are_refused() {
        let mut t = RequestTable::with_capacity(4);
        let h = t.insert(done()).unwrap();
        t.remove(h).unwrap();
        assert_eq!(t.check(h).unwrap_err().class, MPI_ERR_REQUEST);
        let h2 = t.insert(done()).unwrap();
        assert_ne!(h, h2, "a reused slot gets a new generation");
        assert_eq!(t.check(h).unwrap_err().class, MPI_ERR_REQUEST);
        assert!(t.check(h2).is_ok());
        for bad in [
            MPI_REQUEST_NULL,
            0,
            -1,
            0xac0f_ffff_u32 as i32,
            MPI_COMM_WORLD,
        ] {
            assert_eq!(t.check(bad).unwrap_err().class, MPI_ERR_REQUEST);
        }
    }

    #[test]
    fn slots_are_recycled() {
        let mut t = RequestTable::with_capacity(2);
        let handles: Vec<_> = (0..100).map(|_| t.insert(done()).unwrap()).collect();
        for h in &handles {
            t.remove(*h).unwrap();
        }
        assert_eq!(t.live(), 0);
        for _ in 0..100 {
            t.insert(done()).unwrap();
        }
        assert_eq!(t.slots.len(), 100);
    }
}
