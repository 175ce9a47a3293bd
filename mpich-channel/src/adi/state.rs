//! The ADI's state and what happens when a message arrives: matching against the posted
//! receives, the unexpected queue, and the protocol replies (sync and cancel answers).
//!
//! Matching follows MPI: a message matches the *first* posted receive with the same context
//! whose source and tag equal the message's or are wildcards; a receive matches the *first*
//! unexpected message it can. Channels deliver each peer's messages in order, and both queues
//! keep arrival/posting order, which gives MPI's non-overtaking rule. This is the one matcher
//! of an MPI message: a long message's data is read from the sender's region once its RTS
//! matched here, with no second matching below.

use super::request::{wait, Op, Table};
use super::{Status, ANY_SOURCE, ANY_TAG, ERR_REFUSED};
use crate::channel::{DataDone, Landing, Sink};
use crate::envelope::{Envelope, Kind, FLAG_CANCELLED, FLAG_SYNC};
use nic_model::RegionKey;
use std::collections::VecDeque;

/// Landing tokens name a request (no flag), an unexpected message (`TOKEN_UNEXPECTED`), the
/// direct receive (`TOKEN_DIRECT`), or an RTS whose region key is landing (`TOKEN_RTS`). Bit 60
/// is never set: it is the lanes' router's (`crate::lanes`).
const TOKEN_UNEXPECTED: u64 = 1 << 63;
const TOKEN_DIRECT: u64 = 1 << 62;
const TOKEN_RTS: u64 = 1 << 61;

/// A blocking receive posted without a request: the fast path of a blocking receive while
/// nothing else is posted. It is matched before (and so in place of) the posted queue, which
/// is empty while it exists.
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
    /// A rendezvous announcement: the data stays in the sender's region until a receive
    /// matches; `None` while the region's key is still landing.
    Rts(Option<RegionKey>),
}

/// A message that arrived before its receive was posted.
pub struct Unexpected {
    pub seq: u64,
    pub src: usize,
    pub env: Envelope,
    pub body: Body,
    /// A receive that matched it while its payload was still landing.
    pub claimed: Option<u32>,
}

impl Unexpected {
    /// Whether all of it has landed (its data, or its region's key) and no receive claimed it.
    pub fn is_whole(&self) -> bool {
        self.claimed.is_none()
            && match &self.body {
                Body::Eager { complete, .. } => *complete,
                Body::Rts(key) => key.is_some(),
            }
    }
}

/// A matched rendezvous receive whose read of the sender's region is to start.
#[derive(Clone, Copy)]
pub struct Pull {
    pub src: usize,
    pub rreq: u32,
    pub key: RegionKey,
    /// Bytes to read: the message's length, or the receive's capacity if that is smaller.
    pub len: usize,
}

/// Where an RTS whose key is landing was matched.
#[derive(Clone, Copy)]
enum RtsTarget {
    /// A posted receive (or the direct receive, which became this request).
    Recv(u32),
    /// An unexpected message, by sequence number.
    Unexpected(u64),
}

/// An RTS whose payload (the region's key) is landing, in a buffer that does not move.
struct RtsLanding {
    key: Box<[u8; RegionKey::LEN]>,
    src: usize,
    target: Option<RtsTarget>,
}

#[inline]
fn matches(ctx: u16, src: i32, tag: i32, msg_src: usize, env: &Envelope) -> bool {
    ctx == env.ctx
        && (src == ANY_SOURCE || src as usize == msg_src)
        && (tag == ANY_TAG || tag == env.tag)
}

/// Everything but the channel (so that the channel can deliver into it).
#[derive(Default)]
pub struct State {
    pub reqs: Table,
    pub posted: VecDeque<Posted>,
    pub unexpected: VecDeque<Unexpected>,
    next_seq: u64,
    /// Control messages without payload to send (acknowledgements, cancel requests).
    pub outbox: VecDeque<(usize, Envelope)>,
    /// Rendezvous reads to start.
    pub pulls: VecDeque<Pull>,
    /// Per destination, sends whose envelope could not be handed to the channel yet, in order.
    pub queued: Vec<VecDeque<u32>>,
    /// Destinations with a non-empty `queued`.
    pub queued_dests: usize,
    /// Regions of sends cancelled at the receiver, to withdraw.
    pub revoked: Vec<RegionKey>,
    /// RTSs whose key is landing.
    rts: Vec<Option<RtsLanding>>,
    /// Reusable buffers for unexpected eager data.
    spare: Vec<Vec<u8>>,
    /// The direct receive, while a blocking receive runs its fast path.
    pub direct: Option<Direct>,
    /// The engine's own copies: unexpected eager data into the receive that matched it.
    pub copied: crate::channel::CopyCount,
    /// Counts what may have completed a request behind its owner's back: every arrival and
    /// finished transfer the channel delivered, and every flush that handed it something
    /// ([`crate::Adi::events`]).
    pub events: u64,
}

impl State {
    pub fn new(size: usize) -> Self {
        State {
            queued: (0..size).map(|_| VecDeque::new()).collect(),
            ..State::default()
        }
    }

    /// Whether anything waits to be handed to the channel.
    #[inline]
    pub fn has_work(&self) -> bool {
        self.queued_dests > 0
            || !self.outbox.is_empty()
            || !self.pulls.is_empty()
            || !self.revoked.is_empty()
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

    /// Completes request `id` (its status is set): the layer above's attachment finishes its
    /// part, and a detached request is released.
    #[inline]
    pub fn finish(&mut self, id: u32) {
        let r = self.reqs.get_mut(id).expect("finishing a live request");
        r.done = true;
        r.region = None;
        if let Some(a) = r.attachment.as_mut() {
            a.complete(&mut r.status);
        }
        if r.detached {
            self.reqs.release(id);
        }
    }

    /// A receive matched a message from `src` with envelope `env`: sets its status.
    fn matched(&mut self, id: u32, src: usize, env: &Envelope) -> (*mut u8, usize) {
        let r = self.reqs.get_mut(id).expect("matched receive is live");
        let len = env.len as usize;
        r.status = Status {
            source: src as i32,
            tag: env.tag,
            len: len.min(r.len),
            truncated: len > r.len,
            ..Status::default()
        };
        (r.buf, r.len)
    }

    fn ack_sync(&mut self, src: usize, env: &Envelope) {
        if env.flags & FLAG_SYNC != 0 {
            let mut ack = Envelope::new(Kind::SyncAck);
            ack.sreq = env.sreq;
            // An answer carries the context and tag of the message it answers, so that it
            // reaches the lane of the send at the other end (`crate::lanes` routes by them).
            ack.ctx = env.ctx;
            ack.tag = env.tag;
            self.outbox.push_back((src, ack));
        }
    }

    /// A receive matched a rendezvous announcement whose region is `key`: the read starts
    /// with the next flush.
    fn matched_rts(&mut self, id: u32, src: usize, env: &Envelope, key: RegionKey) {
        self.matched(id, src, env);
        let len = self.reqs.get(id).unwrap().status.len;
        self.pulls.push_back(Pull {
            src,
            rreq: id,
            key,
            len,
        });
    }

    /// Looks for an unexpected message for receive `id` (context, source, tag as given); if
    /// one is there, takes it. Returns whether the receive matched.
    pub fn match_unexpected(&mut self, id: u32, ctx: u16, src: i32, tag: i32) -> bool {
        let Some(i) = self
            .unexpected
            .iter()
            .position(|u| u.claimed.is_none() && matches(ctx, src, tag, u.src, &u.env))
        else {
            return false;
        };
        let (msrc, env) = (self.unexpected[i].src, self.unexpected[i].env);
        match &self.unexpected[i].body {
            Body::Rts(Some(key)) => {
                let key = *key;
                self.unexpected.remove(i);
                self.matched_rts(id, msrc, &env, key);
            }
            Body::Rts(None)
            | Body::Eager {
                complete: false, ..
            } => {
                self.matched(id, msrc, &env);
                if env.kind == Kind::Eager {
                    self.ack_sync(msrc, &env);
                }
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
        self.unexpected
            .iter()
            .find(|u| u.claimed.is_none() && matches(ctx, src, tag, u.src, &u.env))
            .map(|u| Status {
                source: u.src as i32,
                tag: u.env.tag,
                len: u.env.len as usize,
                ..Status::default()
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

    /// Takes in an unexpected message another lane's engine received before the lanes
    /// were made (it is whole: see `Adi::check_split`), behind those already here.
    pub fn adopt_unexpected(&mut self, mut u: Unexpected) {
        u.seq = self.next_seq;
        self.next_seq += 1;
        self.unexpected.push_back(u);
    }

    fn buffer(&mut self, len: usize) -> Vec<u8> {
        let mut v = self.spare.pop().unwrap_or_default();
        v.clear();
        v.resize(len, 0);
        v
    }

    /// A landing for an RTS's region key, for `target` once it has landed.
    fn rts_landing(&mut self, src: usize, target: Option<RtsTarget>) -> Landing {
        let slot = self
            .rts
            .iter()
            .position(Option::is_none)
            .unwrap_or_else(|| {
                self.rts.push(None);
                self.rts.len() - 1
            });
        let mut key = Box::new([0u8; RegionKey::LEN]);
        let landing = Landing {
            ptr: key.as_mut_ptr(),
            cap: RegionKey::LEN,
            token: TOKEN_RTS | slot as u64,
        };
        self.rts[slot] = Some(RtsLanding { key, src, target });
        landing
    }

    /// The direct receive matched a rendezvous announcement: it becomes a posted request.
    #[cold]
    fn match_direct_rts(&mut self, src: usize, env: &Envelope) -> Option<Landing> {
        let d = self.direct.as_mut().expect("direct receive present");
        let (buf, cap, ctx, tag, want) = (d.buf, d.cap, d.ctx, d.tag, d.src);
        // Without a free request the message stays unexpected; the receive then posts itself
        // normally.
        let id = self.reqs.alloc(Op::Recv)?;
        let r = self.reqs.get_mut(id).expect("just allocated");
        (r.buf, r.len, r.ctx, r.src, r.tag) = (buf, cap, ctx, want, tag);
        self.direct.as_mut().unwrap().became = Some(id);
        self.matched(id, src, env);
        Some(self.rts_landing(src, Some(RtsTarget::Recv(id))))
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
        d.status = Some(Status {
            source: src as i32,
            tag: env.tag,
            len: len.min(d.cap),
            truncated: len > d.cap,
            ..Status::default()
        });
        let landing = Landing {
            ptr: d.buf,
            cap: d.cap,
            token: TOKEN_DIRECT,
        };
        self.ack_sync(src, env);
        Some(landing)
    }

    fn on_cancel_request(&mut self, src: usize, env: &Envelope) {
        let found = self.unexpected.iter().position(|u| {
            u.src == src
                && u.claimed.is_none()
                && u.env.sreq == env.sreq
                && u.env.ctx == env.ctx
                && u.env.tag == env.tag
        });
        let mut ack = Envelope::new(Kind::CancelAck);
        ack.sreq = env.sreq;
        // Routed like the message it answers (see `ack_sync`).
        ack.ctx = env.ctx;
        ack.tag = env.tag;
        if let Some(i) = found {
            if let Some(Unexpected {
                body: Body::Eager { data, .. },
                ..
            }) = self.unexpected.remove(i)
            {
                self.spare.push(data);
            }
            ack.flags = FLAG_CANCELLED;
        }
        self.outbox.push_back((src, ack));
    }

    /// An RTS's key landed: start the read it was matched for, or keep it with its message.
    fn rts_landed(&mut self, slot: usize) {
        let Some(RtsLanding { key, src, target }) = self.rts.get_mut(slot).and_then(Option::take)
        else {
            return;
        };
        let key = RegionKey::parse(&key[..]);
        match target {
            Some(RtsTarget::Recv(id)) => match key {
                Some(key) => {
                    let len = self.reqs.get(id).map_or(0, |r| r.status.len);
                    self.pulls.push_back(Pull {
                        src,
                        rreq: id,
                        key,
                        len,
                    });
                }
                None => self.fail_refused(id),
            },
            Some(RtsTarget::Unexpected(seq)) => {
                let Some(i) = self.unexpected.iter().rposition(|u| u.seq == seq) else {
                    return;
                };
                match (key, self.unexpected[i].claimed) {
                    (Some(key), Some(id)) => {
                        self.unexpected.remove(i);
                        let len = self.reqs.get(id).map_or(0, |r| r.status.len);
                        self.pulls.push_back(Pull {
                            src,
                            rreq: id,
                            key,
                            len,
                        });
                    }
                    (Some(key), None) => self.unexpected[i].body = Body::Rts(Some(key)),
                    (None, claimed) => {
                        self.unexpected.remove(i);
                        if let Some(id) = claimed {
                            self.fail_refused(id);
                        }
                    }
                }
            }
            None => {}
        }
    }

    /// A rendezvous receive whose sender's region was refused: it completes with an error.
    pub fn fail_refused(&mut self, id: u32) {
        if let Some(r) = self.reqs.get_mut(id) {
            r.status.error = ERR_REFUSED;
            r.status.len = 0;
            self.finish(id);
        }
    }
}

impl State {
    /// An eager message matched posted receive `id`: its data is copied from where it lies
    /// into the receive's buffer and the receive completes, with no landing in between.
    #[inline(always)]
    fn land_in_posted(&mut self, id: u32, src: usize, env: &Envelope, payload: &[u8]) -> usize {
        let r = self.reqs.slot_mut(id);
        let (n, truncated) = copy_into(r.buf, r.len, payload);
        r.status = Status {
            source: src as i32,
            tag: env.tag,
            len: n,
            truncated,
            ..Status::default()
        };
        if r.attachment.is_none() && !r.detached {
            r.done = true;
        } else {
            // The layer above's part (unpacking), or a release.
            self.finish(id);
        }
        if env.flags & FLAG_SYNC != 0 {
            self.ack_sync(src, env);
        }
        n
    }

    /// An eager message matched the direct receive: copied into its buffer, it is done.
    #[inline(always)]
    fn land_in_direct(&mut self, src: usize, env: &Envelope, payload: &[u8]) -> usize {
        let d = self.direct.as_mut().expect("direct receive present");
        let (n, truncated) = copy_into(d.buf, d.cap, payload);
        d.status = Some(Status {
            source: src as i32,
            tag: env.tag,
            len: n,
            truncated,
            ..Status::default()
        });
        d.done = true;
        if env.flags & FLAG_SYNC != 0 {
            self.ack_sync(src, env);
        }
        n
    }
}

/// Copies `payload` into the `cap` bytes at `buf` (truncating); the bytes written, and whether
/// the payload was cut.
#[inline(always)]
fn copy_into(buf: *mut u8, cap: usize, payload: &[u8]) -> (usize, bool) {
    let n = payload.len().min(cap);
    if n > 0 {
        // SAFETY: a posted or direct receive's buffer is valid for `cap` bytes of writing until
        // it completes (irecv's and direct_begin's contracts), `n <= cap`, and a packet or
        // staging buffer does not overlap a user's buffer.
        unsafe { std::ptr::copy_nonoverlapping(payload.as_ptr(), buf, n) };
    }
    (n, payload.len() > cap)
}

impl Sink for State {
    /// The fast path of an eager message: matched straight from where it lies against the
    /// direct receive or the first posted receive, and copied into its buffer. Anything else
    /// (a later posted receive, an unexpected message, a rendezvous, a protocol message) takes
    /// the two-step way.
    #[inline]
    fn arrived_whole(&mut self, src: usize, env: &Envelope, payload: &[u8]) -> usize {
        self.events = self.events.wrapping_add(1);
        if env.kind == Kind::Eager {
            match &self.direct {
                None => {
                    if let Some(p) = self.posted.front() {
                        if matches(p.ctx, p.src, p.tag, src, env) {
                            let id = p.id;
                            self.posted.pop_front();
                            return self.land_in_posted(id, src, env, payload);
                        }
                    }
                }
                Some(d) => {
                    if d.status.is_none()
                        && d.became.is_none()
                        && matches(d.ctx, d.src, d.tag, src, env)
                    {
                        return self.land_in_direct(src, env, payload);
                    }
                }
            }
        }
        crate::channel::arrive_in_two_steps(self, src, env, payload)
    }

    #[inline]
    fn hungry(&self) -> bool {
        !self.posted.is_empty()
            || self
                .direct
                .as_ref()
                .is_some_and(|d| d.status.is_none() && d.became.is_none())
    }

    #[inline]
    fn arrived(&mut self, src: usize, env: &Envelope) -> Landing {
        self.events = self.events.wrapping_add(1);
        match env.kind {
            Kind::Eager | Kind::Rts => {
                if let Some(d) = &mut self.direct {
                    if d.status.is_none()
                        && d.became.is_none()
                        && matches(d.ctx, d.src, d.tag, src, env)
                    {
                        if let Some(landing) = self.match_direct(src, env) {
                            return landing;
                        }
                    }
                }
                let hit = self
                    .posted
                    .iter()
                    .position(|p| matches(p.ctx, p.src, p.tag, src, env));
                if let Some(i) = hit {
                    let id = if i == 0 {
                        self.posted.pop_front()
                    } else {
                        self.posted.remove(i)
                    }
                    .expect("index found above")
                    .id;
                    if env.kind == Kind::Rts {
                        self.matched(id, src, env);
                        return self.rts_landing(src, Some(RtsTarget::Recv(id)));
                    }
                    let (buf, cap) = self.matched(id, src, env);
                    self.ack_sync(src, env);
                    return Landing {
                        ptr: buf,
                        cap,
                        token: id as u64,
                    };
                }
                let seq = self.next_seq;
                self.next_seq += 1;
                if env.kind == Kind::Rts {
                    self.unexpected.push_back(Unexpected {
                        seq,
                        src,
                        env: *env,
                        body: Body::Rts(None),
                        claimed: None,
                    });
                    return self.rts_landing(src, Some(RtsTarget::Unexpected(seq)));
                }
                let mut u = Unexpected {
                    seq,
                    src,
                    env: *env,
                    body: Body::Eager {
                        data: self.buffer(env.len as usize),
                        complete: false,
                    },
                    claimed: None,
                };
                let landing = match &mut u.body {
                    Body::Eager { data, .. } => Landing {
                        ptr: data.as_mut_ptr(),
                        cap: data.len(),
                        token: TOKEN_UNEXPECTED | seq,
                    },
                    Body::Rts(_) => unreachable!("an eager message"),
                };
                self.unexpected.push_back(u);
                landing
            }
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
                        // The receiver dropped the announcement: nobody will read the region.
                        if let Some(key) = r.region.take() {
                            self.revoked.push(key);
                        }
                    }
                    self.send_progress(id, wait::CANCEL);
                }
                Landing::NOWHERE
            }
        }
    }

    #[inline]
    fn landed(&mut self, _src: usize, token: u64) {
        self.events = self.events.wrapping_add(1);
        if token == TOKEN_DIRECT {
            if let Some(d) = &mut self.direct {
                d.done = true;
            }
            return;
        }
        if token & (TOKEN_UNEXPECTED | TOKEN_RTS) == 0 {
            self.finish(token as u32);
            return;
        }
        if token & TOKEN_RTS != 0 {
            self.rts_landed((token & !TOKEN_RTS) as usize);
            return;
        }
        let seq = token & !TOKEN_UNEXPECTED;
        let Some(i) = self.unexpected.iter().rposition(|u| u.seq == seq) else {
            return;
        };
        if let Body::Eager { complete, .. } = &mut self.unexpected[i].body {
            *complete = true;
        }
        if let Some(id) = self.unexpected[i].claimed {
            let u = self.unexpected.remove(i).expect("index found above");
            self.deliver_unexpected(id, u);
        }
    }

    fn data_done(&mut self, done: DataDone) {
        self.events = self.events.wrapping_add(1);
        match done {
            DataDone::Recv(id, None) => {
                if self.reqs.get(id).is_some() {
                    self.finish(id);
                }
            }
            DataDone::Recv(id, Some(why)) => {
                tracing::warn!(target: "mpi", req = id, why, "a long message's region was refused");
                self.fail_refused(id);
            }
            DataDone::Send(wire) => {
                // Named by wire id: the send of a cancelled transfer may be long gone.
                if let Some((id, _)) = self.reqs.by_wire(wire) {
                    self.send_progress(id, wait::DATA);
                }
            }
        }
    }
}
