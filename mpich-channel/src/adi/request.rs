//! The request table: every nonblocking operation the ADI has under way.
//!
//! A slab of entries reused through a free list, so that posting and completing operations
//! allocates nothing once warm. An entry's index is the request id given to the layer above;
//! on the wire a request is named by its index and an 8-bit generation (`wire_id`), so that an
//! answer meant for an earlier use of the same slot is recognized and ignored.

use super::Status;
use crate::envelope::Envelope;

/// The largest number of requests outstanding at once (ids fit in 24 bits).
pub const MAX_REQUESTS: usize = 1 << 24;

/// What a send still waits for before it completes (bit set).
pub mod wait {
    /// Its data has not been handed to the channel yet (queued, or rendezvous in progress).
    pub const DATA: u8 = 1;
    /// A synchronous send's acknowledgement of the match.
    pub const ACK: u8 = 2;
    /// The answer to a cancel request.
    pub const CANCEL: u8 = 4;
    /// Its envelope has not gone out yet (a rendezvous send's data may be handed over early,
    /// before its RTS leaves the queue: the send still waits for the RTS).
    pub const ENVELOPE: u8 = 8;
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Free,
    Send,
    Recv,
}

/// One operation.
#[derive(Clone, Copy, Debug)]
pub struct Req {
    pub op: Op,
    pub gen: u8,
    /// Finished: `status` is final.
    pub done: bool,
    /// The layer above gave up its handle (`MPI_Request_free`): release when done.
    pub detached: bool,
    /// Sends: what the send still waits for (`wait` bits).
    pub waiting: u8,
    /// Receive buffer or send data, and its length (receive capacity, or send length).
    pub buf: *mut u8,
    pub len: usize,
    /// Sends: the destination and the envelope (for a send still queued, and for cancel).
    pub dest: usize,
    pub env: Envelope,
    /// Receives: what to match (context, source or ANY_SOURCE, tag or ANY_TAG).
    pub ctx: u16,
    pub src: i32,
    pub tag: i32,
    pub status: Status,
}

impl Req {
    const FREE: Req = Req {
        op: Op::Free,
        gen: 0,
        done: false,
        detached: false,
        waiting: 0,
        buf: std::ptr::null_mut(),
        len: 0,
        dest: 0,
        env: Envelope { kind: crate::envelope::Kind::Eager, flags: 0, ctx: 0, tag: 0, sreq: 0, rreq: 0, len: 0 },
        ctx: 0,
        src: 0,
        tag: 0,
        status: Status { source: 0, tag: 0, len: 0, truncated: false, cancelled: false },
    };
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
        let id = match self.free.pop() {
            Some(id) => id,
            None if self.slots.len() < MAX_REQUESTS => {
                self.slots.push(Req::FREE);
                (self.slots.len() - 1) as u32
            }
            None => return None,
        };
        let r = &mut self.slots[id as usize];
        let gen = r.gen.wrapping_add(1);
        *r = Req { op, gen, ..Req::FREE };
        self.live += 1;
        Some(id)
    }

    /// Returns an entry to the free list.
    #[inline]
    pub fn release(&mut self, id: u32) {
        let r = &mut self.slots[id as usize];
        debug_assert!(r.op != Op::Free);
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
    #[inline]
    pub fn wire_id(&self, id: u32) -> u32 {
        id | (self.slots[id as usize].gen as u32) << 24
    }

    /// Live entries.
    #[cfg(test)]
    pub fn live(&self) -> usize {
        self.live
    }

    /// Ids of live sends that still wait for something.
    pub fn busy_sends(&self) -> impl Iterator<Item = u32> + '_ {
        self.slots.iter().enumerate().filter(|(_, r)| r.op == Op::Send && r.waiting != 0).map(|(i, _)| i as u32)
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
    }
}
