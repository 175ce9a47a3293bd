//! What the target keeps of the requests that arrived: each request until it is applied
//! ([`Incoming`], queued per origin by the window's state), and the window's lock
//! ([`LockTable`]). `target` applies them.

use super::wire::{Request, FLAG_DATA_INLINE, FLAG_TYPE_INLINE};
use crate::abi::*;
use crate::datatype::Datatype;
use mpich_channel::ReqId;
use std::collections::VecDeque;
use std::sync::Arc;

/// Where an arrived request stands.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub(super) enum Stage {
    /// Its target type follows in a message of its own.
    NeedType,
    /// Its data follows in a message of its own.
    NeedData,
    Ready,
}

/// A request from one origin, waiting for its follow-ups or its turn.
pub(super) struct Incoming {
    pub req: Request,
    pub ty: Option<Arc<Datatype>>,
    /// The data the origin sent (inline or received), unless it landed in the window.
    pub data: Vec<u8>,
    pub landed_in_window: bool,
    pub stage: Stage,
    /// The follow-up receive in flight.
    pub wait: Option<ReqId>,
}

impl Incoming {
    /// The request in `msg` (a request message of `len` bytes), its inline parts taken.
    pub fn parse(msg: &[u8]) -> Option<Incoming> {
        let req = Request::parse(msg)?;
        let mut at = Request::LEN;
        let mut ty = None;
        let mut stage = Stage::Ready;
        if req.action.touches_memory() {
            if req.flags & FLAG_TYPE_INLINE != 0 {
                let b = msg.get(at..at + req.type_len as usize)?;
                ty = Some(Arc::new(Datatype::decode(b)?));
                at += req.type_len as usize;
            } else {
                stage = Stage::NeedType;
            }
        }
        let mut data = Vec::new();
        if req.data_len > 0 {
            if req.flags & FLAG_DATA_INLINE != 0 {
                data = msg.get(at..at + req.data_len as usize)?.to_vec();
            } else if stage == Stage::Ready {
                stage = Stage::NeedData;
            }
        }
        Some(Incoming {
            req,
            ty,
            data,
            landed_in_window: false,
            stage,
            wait: None,
        })
    }
}

/// The lock of one window, as its target keeps it.
#[derive(Debug, Default)]
pub(super) struct LockTable {
    shared: u32,
    exclusive: Option<usize>,
    /// Origins waiting, in the order they asked: (origin, lock type).
    queue: VecDeque<(usize, i32)>,
}

impl LockTable {
    /// Takes the lock for `origin` if it is free for `kind`; otherwise queues the request.
    /// `true` if granted now.
    pub fn request(&mut self, origin: usize, kind: i32) -> bool {
        if self.queue.is_empty() && self.grantable(kind) {
            self.take(origin, kind);
            return true;
        }
        self.queue.push_back((origin, kind));
        false
    }

    fn grantable(&self, kind: i32) -> bool {
        self.exclusive.is_none() && (kind == MPI_LOCK_SHARED || self.shared == 0)
    }

    fn take(&mut self, origin: usize, kind: i32) {
        if kind == MPI_LOCK_SHARED {
            self.shared += 1;
        } else {
            self.exclusive = Some(origin);
        }
    }

    /// Releases `origin`'s lock; returns the origins granted the lock now, in order.
    pub fn release(&mut self, origin: usize) -> Vec<usize> {
        if self.exclusive == Some(origin) {
            self.exclusive = None;
        } else {
            self.shared = self.shared.saturating_sub(1);
        }
        let mut granted = Vec::new();
        while let Some(&(o, kind)) = self.queue.front() {
            if !self.grantable(kind) {
                break;
            }
            self.queue.pop_front();
            self.take(o, kind);
            granted.push(o);
        }
        granted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_holders_share_and_an_exclusive_waits_its_turn_in_order() {
        let mut l = LockTable::default();
        assert!(l.request(1, MPI_LOCK_SHARED));
        assert!(l.request(2, MPI_LOCK_SHARED));
        assert!(!l.request(3, MPI_LOCK_EXCLUSIVE), "readers hold it");
        assert!(
            !l.request(4, MPI_LOCK_SHARED),
            "a reader behind a waiting writer waits too (no writer starvation)"
        );
        assert_eq!(l.release(1), Vec::<usize>::new());
        assert_eq!(l.release(2), vec![3], "the writer is next");
        assert_eq!(l.release(3), vec![4]);
        assert_eq!(l.release(4), Vec::<usize>::new());
        assert!(l.request(5, MPI_LOCK_EXCLUSIVE), "free again");
    }

    #[test]
    fn a_request_with_its_type_and_data_inline_is_ready() {
        use super::super::wire::Action;
        let mut req = Request::new(Action::Put, 7);
        let ty = Datatype::decode(&{
            // An 8-byte contiguous type: one run, one leaf of MPI_LONG.
            let mut b = Vec::new();
            for v in [8i64, 0, 8, 0, 8, 8] {
                b.extend_from_slice(&v.to_le_bytes());
            }
            b.extend_from_slice(&1u32.to_le_bytes());
            b.extend_from_slice(&1u32.to_le_bytes());
            b.extend_from_slice(&0i64.to_le_bytes());
            b.extend_from_slice(&8u64.to_le_bytes());
            b.extend_from_slice(&MPI_LONG.to_le_bytes());
            b.extend_from_slice(&8u64.to_le_bytes());
            b.extend_from_slice(&1u32.to_le_bytes());
            b.extend_from_slice(&1u32.to_le_bytes());
            b.extend_from_slice(&1u64.to_le_bytes());
            b
        })
        .expect("a well-formed type");
        let mut tb = Vec::new();
        ty.encode(&mut tb);
        (req.flags, req.type_len, req.data_len, req.count) =
            (FLAG_TYPE_INLINE | FLAG_DATA_INLINE, tb.len() as u32, 8, 1);
        let mut msg = Vec::new();
        req.emit(&mut msg);
        msg.extend_from_slice(&tb);
        msg.extend_from_slice(&42u64.to_le_bytes());
        let inc = Incoming::parse(&msg).expect("parses");
        assert_eq!(inc.stage, Stage::Ready);
        assert_eq!(inc.data, 42u64.to_le_bytes());
        assert_eq!(inc.ty.as_ref().map(|t| t.size()), Some(8));
        assert_eq!(
            inc.ty.as_ref().and_then(|t| t.single_basic()),
            Some(MPI_LONG)
        );
        // Without the inline flags the same header waits for its follow-ups.
        req.flags = 0;
        let mut msg = Vec::new();
        req.emit(&mut msg);
        assert_eq!(
            Incoming::parse(&msg).map(|i| i.stage),
            Some(Stage::NeedType)
        );
    }
}
