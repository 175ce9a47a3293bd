//! The request table: every operation the MPI library has under way, in one place.
//!
//! A request is the one object of an operation from the C handle down to the channel: the
//! C layer's `MPI_Request` is this table's index and generation (see [`Table::handle_bits`]),
//! and the channel names it by its wire id. Besides point-to-point sends and receives it holds
//! requests born complete (a send to `MPI_PROC_NULL`), requests completed by an operation of
//! the engine (a nonblocking collective, [`crate::engine::Operation`]), and persistent requests,
//! which stay between their runs. What the layer above needs to finish an operation (a staging
//! buffer to unpack, a persistent request's arguments) rides along as an [`Attachment`], and is
//! dropped with the request, never before: a request freed by the program
//! (`MPI_Request_free`) while its operation runs is released, attachment and all, when the
//! operation ends.
//!
//! A slab of entries reused through a free list, so that posting and completing operations
//! allocates nothing once warm. On the wire a request is named by its index and an 8-bit
//! generation (`wire_id`), so that an answer meant for an earlier use of the same slot is
//! recognized and ignored.

use super::Status;
use crate::envelope::Envelope;
use std::any::Any;

/// The largest number of requests outstanding at once (an index fits the 20 bits MPICH's
/// request handles leave for it).
pub const MAX_REQUESTS: usize = 1 << 20;

/// What a send still waits for before it completes (bit set).
pub mod wait {
    /// Its data has not been handed over yet (queued, or rendezvous in progress).
    pub const DATA: u8 = 1;
    /// A synchronous send's acknowledgement of the match.
    pub const ACK: u8 = 2;
    /// The answer to a cancel request.
    pub const CANCEL: u8 = 4;
    /// Its envelope has not gone out yet.
    pub const ENVELOPE: u8 = 8;
}

/// What a request is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Free,
    Send,
    Recv,
    /// Complete from the start (its status is set), or a persistent request between runs.
    Idle,
    /// Completed by someone else: an operation of the engine ([`crate::engine`]).
    External,
}

/// What the layer above keeps with a request until it is released.
pub trait Attachment: Any {
    /// The request's operation is complete (a receive's data is in the request's buffer):
    /// finish what the layer above has to (unpack staged data). Called once per run, inside
    /// the progress engine.
    fn complete(&mut self, status: &mut Status) {
        let _ = status;
    }
    /// For the layer above to look inside.
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

/// One operation.
pub struct Req {
    pub op: Op,
    pub gen: u8,
    /// Finished: `status` is final.
    pub done: bool,
    /// The layer above gave up its handle (`MPI_Request_free`): release when done.
    pub detached: bool,
    /// A persistent request: completing it makes it inactive (`Op::Idle`), it stays.
    pub persistent: bool,
    /// Sends: what the send still waits for (`wait` bits).
    pub waiting: u8,
    /// Receive buffer or send data, and its length (receive capacity, or send length).
    pub buf: *mut u8,
    pub len: usize,
    /// Sends: the destination and the envelope (for a send still queued, and for cancel).
    pub dest: usize,
    pub env: Envelope,
    /// Sends: the region exported for a rendezvous, while it is.
    pub region: Option<nic_model::RegionKey>,
    /// Receives: what to match (context, source or ANY_SOURCE, tag or ANY_TAG).
    pub ctx: u16,
    pub src: i32,
    pub tag: i32,
    pub status: Status,
    /// The layer above's word on the request (the MPI library keeps its communicator here).
    pub owner: u32,
    pub attachment: Option<Box<dyn Attachment>>,
}

impl Req {
    fn fresh(op: Op, gen: u8) -> Req {
        Req {
            op,
            gen,
            done: false,
            detached: false,
            persistent: false,
            waiting: 0,
            buf: std::ptr::null_mut(),
            len: 0,
            dest: 0,
            env: Envelope::new(crate::envelope::Kind::Eager),
            region: None,
            ctx: 0,
            src: 0,
            tag: 0,
            status: Status::default(),
            owner: 0,
            attachment: None,
        }
    }
}

/// How request `id` of generation `gen` is named on the wire.
#[inline(always)]
pub fn wire_name(id: u32, gen: u8) -> u32 {
    id | u32::from(gen) << 24
}

#[derive(Default)]
pub struct Table {
    slots: Vec<Req>,
    free: Vec<u32>,
    live: usize,
}

impl Table {
    /// Takes a free entry, initialized as `op`; `None` when `MAX_REQUESTS` are in use.
    #[inline]
    pub fn alloc(&mut self, op: Op) -> Option<u32> {
        self.alloc_mut(op).map(|(id, _)| id)
    }

    /// As [`Table::alloc`], handing over the entry too (the fast paths fill it in one go).
    #[inline(always)]
    pub fn alloc_mut(&mut self, op: Op) -> Option<(u32, &mut Req)> {
        let id = match self.free.pop() {
            Some(id) => id,
            None if self.slots.len() < MAX_REQUESTS => {
                self.slots.push(Req::fresh(Op::Free, 0));
                (self.slots.len() - 1) as u32
            }
            None => return None,
        };
        self.live += 1;
        let r = &mut self.slots[id as usize];
        debug_assert!(r.attachment.is_none(), "a free slot holds no attachment");
        // Only what every use reads before it writes: the operation's own fields (buffer,
        // envelope, matching) are set by whoever starts it.
        r.op = op;
        r.gen = r.gen.wrapping_add(1);
        (
            r.done,
            r.detached,
            r.persistent,
            r.waiting,
            r.region,
            r.owner,
        ) = (false, false, false, 0, None, 0);
        r.status = Status::default();
        Some((id, r))
    }

    /// Returns an entry to the free list, dropping its attachment.
    #[inline]
    pub fn release(&mut self, id: u32) {
        let r = &mut self.slots[id as usize];
        debug_assert!(r.op != Op::Free);
        r.op = Op::Free;
        r.attachment = None;
        self.free.push(id);
        self.live -= 1;
    }

    /// Entry `id`, which the caller knows to be live (just allocated, or named by a queue).
    #[inline(always)]
    pub fn slot_mut(&mut self, id: u32) -> &mut Req {
        let r = &mut self.slots[id as usize];
        debug_assert!(r.op != Op::Free, "request {id} is live");
        r
    }

    /// Returns an entry that holds no attachment to the free list (the batch retire of
    /// plain requests: nothing to drop).
    #[inline(always)]
    pub fn release_plain(&mut self, id: u32) {
        let r = &mut self.slots[id as usize];
        debug_assert!(r.op != Op::Free && r.attachment.is_none());
        r.op = Op::Free;
        self.free.push(id);
        self.live -= 1;
    }

    /// The live entry `id`, if it is one.
    #[inline]
    pub fn get(&self, id: u32) -> Option<&Req> {
        self.slots.get(id as usize).filter(|r| r.op != Op::Free)
    }

    #[inline]
    pub fn get_mut(&mut self, id: u32) -> Option<&mut Req> {
        self.slots.get_mut(id as usize).filter(|r| r.op != Op::Free)
    }

    /// The live entry a wire id names (same slot, same generation).
    #[inline]
    pub fn by_wire(&mut self, wire: u32) -> Option<(u32, &mut Req)> {
        let id = wire & 0x00ff_ffff;
        let gen = (wire >> 24) as u8;
        self.get_mut(id).filter(|r| r.gen == gen).map(|r| (id, r))
    }

    /// How `id` is named on the wire.
    #[cfg(test)]
    pub fn wire_id(&self, id: u32) -> u32 {
        wire_name(id, self.slots[id as usize].gen)
    }

    /// The live request whose index is `index` and whose generation agrees with `gen` in its
    /// low `gen_bits` bits: how the layer above turns a handle back into a request.
    #[inline]
    pub fn by_handle(&self, index: u32, gen: u32, gen_bits: u32) -> Option<u32> {
        let mask = (1u32 << gen_bits) - 1;
        self.get(index)
            .filter(|r| u32::from(r.gen) & mask == gen & mask)
            .map(|_| index)
    }

    /// Live entries.
    pub fn live(&self) -> usize {
        self.live
    }

    /// Every live entry, with its id.
    pub fn iter_live(&self) -> impl Iterator<Item = (u32, &Req)> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, r)| r.op != Op::Free)
            .map(|(i, r)| (i as u32, r))
    }

    /// Ids of live sends that still wait for something.
    pub fn busy_sends(&self) -> impl Iterator<Item = u32> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, r)| r.op == Op::Send && r.waiting != 0)
            .map(|(i, _)| i as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuse_changes_generation() {
        let mut t = Table::default();
        let a = t.alloc(Op::Send).unwrap();
        let wa = t.wire_id(a);
        t.release(a);
        let b = t.alloc(Op::Recv).unwrap();
        assert_eq!(a, b);
        assert_ne!(t.wire_id(b), wa);
        assert!(t.by_wire(wa).is_none());
        assert!(t.by_wire(t.wire_id(b)).is_some());
        assert_eq!(t.live(), 1);
        let gen = t.get(b).unwrap().gen as u32;
        assert_eq!(t.by_handle(b, gen, 6), Some(b));
        assert_eq!(t.by_handle(b, gen + 1, 6), None);
        assert_eq!(t.by_handle(b + 1, gen, 6), None);
    }

    struct Flag(std::rc::Rc<std::cell::Cell<bool>>);
    impl Drop for Flag {
        fn drop(&mut self) {
            self.0.set(true);
        }
    }
    impl Attachment for Flag {
        fn as_any_mut(&mut self) -> &mut dyn Any {
            self
        }
    }

    #[test]
    fn an_attachment_goes_with_its_request() {
        let mut t = Table::default();
        let dropped = std::rc::Rc::new(std::cell::Cell::new(false));
        let a = t.alloc(Op::Recv).unwrap();
        t.get_mut(a).unwrap().attachment = Some(Box::new(Flag(dropped.clone())));
        assert!(!dropped.get());
        t.release(a);
        assert!(dropped.get(), "released with the request");
    }
}
