//! The ADI's state and what happens when a message arrives: matching against the posted
//! receives, the unexpected queue, and the protocol replies (CTS, sync and cancel answers).
//!
//! Matching follows MPI: a message matches the *first* posted receive with the same context
//! whose source and tag equal the message's or are wildcards; a receive matches the *first*
//! unexpected message it can. Channels deliver each peer's messages in order, and both queues
//! keep arrival/posting order, which gives MPI's non-overtaking rule.

use super::request::{wait, Op, Table};
use super::{Status, ANY_SOURCE, ANY_TAG};
use crate::channel::{DataDone, Landing, Sink};
use crate::envelope::{Envelope, Kind, FLAG_CANCELLED, FLAG_SYNC};
use std::collections::VecDeque;

/// Landing tokens name a request (`TOKEN_UNEXPECTED` clear) or an unexpected message.
const TOKEN_UNEXPECTED: u64 = 1 << 63;
/// The landing token of the direct receive.
const TOKEN_DIRECT: u64 = 1 << 62;

/// A blocking receive posted without a request: the fast path of `Adi::recv` while nothing
/// else is posted. It is matched before (and so in place of) the posted queue, which is empty
/// while it exists.
#[derive(Clone, Copy)]
pub struct Direct {
    pub ctx: u16,
    pub src: i32,
    pub tag: i32,
    pub buf: *mut u8,
    pub cap: usize,
    /// Matched; the data is landing.
    pub status: Option<Status>,
    /// All data landed.
    pub done: bool,
    /// Matched a rendezvous message: it became this request, to be waited for normally.
    pub became: Option<u32>,
}

/// A posted receive, as the matching sees it.
#[derive(Clone, Copy)]
pub struct Posted {
    pub id: u32,
    pub ctx: u16,
    pub src: i32,
    pub tag: i32,
}

/// What an unexpected message holds.
pub enum Body {
    /// Eager data; `complete` once all of it has landed (FM streams it in).
    Eager { data: Vec<u8>, complete: bool },
    /// A rendezvous announcement: the data stays with the sender until a receive matches.
    Rts,
}

/// A message that arrived before its receive was posted.
pub struct Unexpected {
    pub seq: u64,
    pub src: usize,
    pub env: Envelope,
    pub body: Body,
    /// A receive that matched it while its data was still landing.
    pub claimed: Option<u32>,
}

/// A matched rendezvous receive waiting for the channel to accept its buffer.
#[derive(Clone, Copy)]
pub struct PendingCts {
    pub src: usize,
    pub rreq: u32,
    pub sreq: u32,
    pub len: usize,
    /// The ticket of an early send (no CTS then), or 0.
    pub early: u32,
}

/// A CTS received: data to start sending.
#[derive(Clone, Copy)]
pub struct PendingData {
    pub dest: usize,
    pub ticket: u32,
    pub rreq: u32,
    pub sreq: u32,
    /// Bytes the receiver takes.
    pub len: usize,
}

#[inline]
fn matches(ctx: u16, src: i32, tag: i32, msg_src: usize, env: &Envelope) -> bool {
    ctx == env.ctx && (src == ANY_SOURCE || src as usize == msg_src) && (tag == ANY_TAG || tag == env.tag)
}

/// Everything but the channel (so that the channel can deliver into it).
#[derive(Default)]
pub struct State {
    pub reqs: Table,
    pub posted: VecDeque<Posted>,
    pub unexpected: VecDeque<Unexpected>,
    next_seq: u64,
    /// Control messages without payload to send (CTS, acknowledgements, cancel requests).
    pub outbox: VecDeque<(usize, Envelope)>,
    pub pending_cts: VecDeque<PendingCts>,
    pub pending_data: VecDeque<PendingData>,
    /// Per destination, sends whose envelope could not be handed to the channel yet, in order.
    pub queued: Vec<VecDeque<u32>>,
    /// Destinations with a non-empty `queued`.
    pub queued_dests: usize,
    /// Early sends of messages cancelled here, to take and drop: (source, ticket).
    pub drops: Vec<(usize, u32)>,
    /// Reusable buffers for unexpected eager data.
    spare: Vec<Vec<u8>>,
    /// The direct receive, while `Adi::recv` runs its fast path.
    pub direct: Option<Direct>,
    /// The engine's own copies: unexpected eager data into the receive that matched it.
    pub copied: crate::channel::CopyCount,
}

impl State {
    pub fn new(size: usize) -> Self {
        State { queued: vec![VecDeque::new(); size], ..State::default() }
    }

    /// Whether anything waits to be handed to the channel.
    #[inline]
    pub fn has_work(&self) -> bool {
        self.queued_dests > 0 || !self.outbox.is_empty() || !self.pending_cts.is_empty() || !self.pending_data.is_empty() || !self.drops.is_empty()
    }

    /// Marks a send's `bits` as satisfied; completes it when nothing is left.
    #[inline]
    pub fn send_progress(&mut self, id: u32, bits: u8) {
        if let Some(r) = self.reqs.get_mut(id).filter(|r| !r.done) {
            r.waiting &= !bits;
            if r.waiting == 0 {
                self.finish(id);
            }
        }
    }

    /// Completes request `id` (its status is set); a detached one is released.
    #[inline]
    pub fn finish(&mut self, id: u32) {
        let r = self.reqs.get_mut(id).expect("finishing a live request");
        r.done = true;
        if r.detached {
            self.reqs.release(id);
        }
    }

    /// A receive matched a message from `src` with envelope `env`: sets its status.
    fn matched(&mut self, id: u32, src: usize, env: &Envelope) -> (*mut u8, usize) {
        let r = self.reqs.get_mut(id).expect("matched receive is live");
        let len = env.len as usize;
        r.status = Status { source: src as i32, tag: env.tag, len: len.min(r.len), truncated: len > r.len, cancelled: false };
        (r.buf, r.len)
    }

    fn ack_sync(&mut self, src: usize, env: &Envelope) {
        if env.flags & FLAG_SYNC != 0 {
            let mut ack = Envelope::new(Kind::SyncAck);
            ack.sreq = env.sreq;
            self.outbox.push_back((src, ack));
        }
    }

    /// A receive matched a rendezvous announcement: the CTS goes once the channel took the buffer.
    fn matched_rts(&mut self, id: u32, src: usize, env: &Envelope) {
        self.matched(id, src, env);
        let len = self.reqs.get(id).unwrap().status.len;
        self.pending_cts.push_back(PendingCts { src, rreq: id, sreq: env.sreq, len, early: env.rreq });
    }

    /// Looks for an unexpected message for receive `id` (context, source, tag as given); if
    /// one is there, takes it. Returns whether the receive matched.
    pub fn match_unexpected(&mut self, id: u32, ctx: u16, src: i32, tag: i32) -> bool {
        let Some(i) = self.unexpected.iter().position(|u| u.claimed.is_none() && matches(ctx, src, tag, u.src, &u.env)) else {
            return false;
        };
        let (msrc, env) = (self.unexpected[i].src, self.unexpected[i].env);
        match &self.unexpected[i].body {
            Body::Rts => {
                self.unexpected.remove(i);
                self.matched_rts(id, msrc, &env);
            }
            Body::Eager { complete: false, .. } => {
                self.matched(id, msrc, &env);
                self.ack_sync(msrc, &env);
                self.unexpected[i].claimed = Some(id);
            }
            Body::Eager { complete: true, .. } => {
                let u = self.unexpected.remove(i).expect("index found above");
                self.deliver_unexpected(id, u);
            }
        }
        true
    }

    /// Copies a complete unexpected message into receive `id` and completes it.
    fn deliver_unexpected(&mut self, id: u32, u: Unexpected) {
        let (buf, _) = self.matched(id, u.src, &u.env);
        if u.claimed.is_none() {
            self.ack_sync(u.src, &u.env);
        }
        let n = self.reqs.get(id).unwrap().status.len;
        if let Body::Eager { data, .. } = u.body {
            if n > 0 {
                // SAFETY: the receive's buffer is valid for its capacity until it completes,
                // `n` is at most that capacity and at most `data.len()`.
                unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), buf, n) };
                self.copied.add(n);
            }
            self.spare.push(data);
        }
        self.finish(id);
    }

    /// The first unexpected message a probe with these arguments would match.
    pub fn probe(&self, ctx: u16, src: i32, tag: i32) -> Option<Status> {
        self.unexpected.iter().find(|u| u.claimed.is_none() && matches(ctx, src, tag, u.src, &u.env)).map(|u| Status {
            source: u.src as i32,
            tag: u.env.tag,
            len: u.env.len as usize,
            truncated: false,
            cancelled: false,
        })
    }

    /// Removes posted receive `id` if it has not matched yet.
    pub fn unpost(&mut self, id: u32) -> bool {
        match self.posted.iter().position(|p| p.id == id) {
            Some(i) => {
                self.posted.remove(i);
                true
            }
            None => false,
        }
    }

    /// Removes send `id` from its destination's queue if its envelope has not gone yet.
    pub fn unqueue(&mut self, dest: usize, id: u32) -> bool {
        let q = &mut self.queued[dest];
        match q.iter().position(|&x| x == id) {
            Some(i) => {
                q.remove(i);
                if q.is_empty() {
                    self.queued_dests -= 1;
                }
                true
            }
            None => false,
        }
    }

    fn buffer(&mut self, len: usize) -> Vec<u8> {
        let mut v = self.spare.pop().unwrap_or_default();
        v.clear();
        v.resize(len, 0);
        v
    }

    /// The direct receive matched a rendezvous announcement: it becomes a posted request.
    #[cold]
    fn match_direct_rts(&mut self, src: usize, env: &Envelope) -> Option<Landing> {
        let d = self.direct.as_mut().expect("direct receive present");
        let (buf, cap, ctx, tag, want) = (d.buf, d.cap, d.ctx, d.tag, d.src);
        // Without a free request the message stays unexpected; the receive then posts itself
        // normally (`Adi::recv`).
        let id = self.reqs.alloc(Op::Recv)?;
        let r = self.reqs.get_mut(id).expect("just allocated");
        (r.buf, r.len, r.ctx, r.src, r.tag) = (buf, cap, ctx, want, tag);
        self.direct.as_mut().unwrap().became = Some(id);
        self.matched_rts(id, src, env);
        Some(Landing::NOWHERE)
    }

    /// The direct receive matched a message from `src`; `None` if it cannot take it (the
    /// message then goes the usual way).
    #[inline]
    fn match_direct(&mut self, src: usize, env: &Envelope) -> Option<Landing> {
        if env.kind == Kind::Rts {
            return self.match_direct_rts(src, env);
        }
        let d = self.direct.as_mut().expect("direct receive present");
        let len = env.len as usize;
        d.status = Some(Status { source: src as i32, tag: env.tag, len: len.min(d.cap), truncated: len > d.cap, cancelled: false });
        let landing = Landing { ptr: d.buf, cap: d.cap, token: TOKEN_DIRECT };
        self.ack_sync(src, env);
        Some(landing)
    }

    fn on_cancel_request(&mut self, src: usize, env: &Envelope) {
        let found = self.unexpected.iter().position(|u| {
            u.src == src && u.claimed.is_none() && u.env.sreq == env.sreq && u.env.ctx == env.ctx && u.env.tag == env.tag
        });
        let mut ack = Envelope::new(Kind::CancelAck);
        ack.sreq = env.sreq;
        if let Some(i) = found {
            match self.unexpected.remove(i) {
                Some(Unexpected { body: Body::Eager { data, .. }, .. }) => self.spare.push(data),
                Some(Unexpected { body: Body::Rts, env, .. }) if env.rreq != 0 => self.drops.push((src, env.rreq)),
                _ => {}
            }
            ack.flags = FLAG_CANCELLED;
        }
        self.outbox.push_back((src, ack));
    }
}

impl Sink for State {
    #[inline]
    fn arrived(&mut self, src: usize, env: &Envelope) -> Landing {
        match env.kind {
            Kind::Eager | Kind::Rts => {
                if let Some(d) = &mut self.direct {
                    if d.status.is_none() && d.became.is_none() && matches(d.ctx, d.src, d.tag, src, env) {
                        if let Some(landing) = self.match_direct(src, env) {
                            return landing;
                        }
                    }
                }
                let hit = self.posted.iter().position(|p| matches(p.ctx, p.src, p.tag, src, env));
                if let Some(i) = hit {
                    let id = if i == 0 { self.posted.pop_front() } else { self.posted.remove(i) }.expect("index found above").id;
                    if env.kind == Kind::Rts {
                        self.matched_rts(id, src, env);
                        return Landing::NOWHERE;
                    }
                    let (buf, cap) = self.matched(id, src, env);
                    self.ack_sync(src, env);
                    return Landing { ptr: buf, cap, token: id as u64 };
                }
                let seq = self.next_seq;
                self.next_seq += 1;
                let body = if env.kind == Kind::Rts {
                    Body::Rts
                } else {
                    Body::Eager { data: self.buffer(env.len as usize), complete: false }
                };
                let mut u = Unexpected { seq, src, env: *env, body, claimed: None };
                let landing = match &mut u.body {
                    Body::Eager { data, .. } => Landing { ptr: data.as_mut_ptr(), cap: data.len(), token: TOKEN_UNEXPECTED | seq },
                    Body::Rts => Landing::NOWHERE,
                };
                self.unexpected.push_back(u);
                landing
            }
            Kind::Cts => {
                if let Some((sreq, _)) = self.reqs.by_wire(env.sreq) {
                    self.pending_data.push_back(PendingData { dest: src, ticket: env.tag as u32, rreq: env.rreq, sreq, len: env.len as usize });
                }
                Landing::NOWHERE
            }
            Kind::Data => match self.reqs.by_wire(env.rreq) {
                Some((id, r)) => Landing { ptr: r.buf, cap: r.status.len, token: id as u64 },
                None => Landing::NOWHERE,
            },
            Kind::SyncAck => {
                if let Some((id, _)) = self.reqs.by_wire(env.sreq) {
                    self.send_progress(id, wait::ACK);
                }
                Landing::NOWHERE
            }
            Kind::CancelReq => {
                self.on_cancel_request(src, env);
                Landing::NOWHERE
            }
            Kind::CancelAck => {
                if let Some((id, r)) = self.reqs.by_wire(env.sreq) {
                    if env.flags & FLAG_CANCELLED != 0 {
                        r.status.cancelled = true;
                        r.waiting = wait::CANCEL;
                    }
                    self.send_progress(id, wait::CANCEL);
                }
                Landing::NOWHERE
            }
        }
    }

    #[inline]
    fn landed(&mut self, _src: usize, token: u64) {
        if token == TOKEN_DIRECT {
            if let Some(d) = &mut self.direct {
                d.done = true;
            }
            return;
        }
        if token & TOKEN_UNEXPECTED == 0 {
            self.finish(token as u32);
            return;
        }
        let seq = token & !TOKEN_UNEXPECTED;
        let Some(i) = self.unexpected.iter().rposition(|u| u.seq == seq) else { return };
        if let Body::Eager { complete, .. } = &mut self.unexpected[i].body {
            *complete = true;
        }
        if let Some(id) = self.unexpected[i].claimed {
            let u = self.unexpected.remove(i).expect("index found above");
            self.deliver_unexpected(id, u);
        }
    }

    fn data_done(&mut self, done: DataDone) {
        match done {
            DataDone::Recv(id) => self.finish(id),
            DataDone::Send(wire) => {
                // Named by wire id: the send of a cancelled early transfer may be long gone.
                if let Some((id, _)) = self.reqs.by_wire(wire) {
                    self.send_progress(id, wait::DATA);
                }
            }
        }
    }
}
