//! Request handles and their table.

use crate::error::BipError;
use nic_model::Rank;

/// A handle to an outstanding `isend` or `irecv`. Copyable; stale handles are detected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Request {
    pub(crate) idx: u32,
    pub(crate) gen: u32,
}

/// How a request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// Bytes received (for a receive) or sent (for a send).
    pub len: usize,
    /// The sender (for a receive) or the destination (for a send).
    pub peer: Rank,
    /// The tag.
    pub tag: u32,
}

/// What a request is doing.
pub(crate) enum Op {
    Send {
        dest: Rank,
        tag: u32,
        buf: *const u8,
        len: usize,
    },
    Recv {
        tag: u32,
        buf: *mut u8,
        cap: usize,
        src: Rank,
        total: usize,
        got: usize,
    },
}

pub(crate) enum State {
    Active,
    Done(Completion),
    Failed(BipError),
}

pub(crate) struct Entry {
    pub gen: u32,
    pub live: bool,
    pub op: Op,
    pub state: State,
}

/// The table of requests; indices are what the wire format's `id` field carries.
#[derive(Default)]
pub(crate) struct Table {
    entries: Vec<Entry>,
    free: Vec<u32>,
}

/// The wire's `id` field is 16 bits.
pub(crate) const MAX_REQUESTS: usize = 1 << 16;

impl Table {
    #[inline]
    pub fn alloc(&mut self, op: Op) -> Result<Request, BipError> {
        let idx = match self.free.pop() {
            Some(i) => i,
            None => {
                if self.entries.len() >= MAX_REQUESTS {
                    return Err(BipError::TooManyRequests(MAX_REQUESTS));
                }
                self.entries.push(Entry {
                    gen: 0,
                    live: false,
                    op: Op::Send {
                        dest: 0,
                        tag: 0,
                        buf: std::ptr::null(),
                        len: 0,
                    },
                    state: State::Active,
                });
                (self.entries.len() - 1) as u32
            }
        };
        let e = &mut self.entries[idx as usize];
        e.gen = e.gen.wrapping_add(1);
        e.live = true;
        e.op = op;
        e.state = State::Active;
        Ok(Request { idx, gen: e.gen })
    }

    /// The entry behind a user's handle, if the handle is current.
    #[inline]
    pub fn get(&mut self, r: Request) -> Option<&mut Entry> {
        self.entries
            .get_mut(r.idx as usize)
            .filter(|e| e.live && e.gen == r.gen)
    }

    /// The entry behind a wire id (no generation check: ids come from our own packets).
    #[inline]
    pub fn by_id(&mut self, idx: u32) -> Option<&mut Entry> {
        self.entries.get_mut(idx as usize).filter(|e| e.live)
    }

    /// Completes request `idx`, just allocated by the caller (no look-up by wire id).
    #[inline]
    pub fn complete(&mut self, idx: u32, c: Completion) {
        self.entries[idx as usize].state = State::Done(c);
    }

    #[inline]
    pub fn free(&mut self, idx: u32) {
        let e = &mut self.entries[idx as usize];
        debug_assert!(e.live);
        e.live = false;
        self.free.push(idx);
    }

    /// True if any send request is still active.
    pub fn any_active_send(&self) -> bool {
        self.entries
            .iter()
            .any(|e| e.live && matches!(e.state, State::Active) && matches!(e.op, Op::Send { .. }))
    }
}
