//! The channel the lanes share, and each lane's view of it ([`LaneChannel`]): one mutex over
//! the process's channel, one inbox per lane, and the router that sorts what a poll brings
//! (see the module above for the design).

use crate::channel::{Channel, ChannelCounters, ChannelError, CopyCount, DataDone, Landing, Sink};
use crate::envelope::Envelope;
use crate::remote::{Reach, RemoteMemory};
use crate::AdiError;
use nic_model::{RegionKey, TransferId};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, TryLockError};

type Result<T, E = ChannelError> = std::result::Result<T, E>;

/// Where a transfer's token (a receive's request id, a send's wire name) carries the lane
/// that started it: bits 20..24.
const LANE_SHIFT: u32 = 20;
pub(super) const MAX_LANES: usize = 16;
const LANE_MASK: u32 = (MAX_LANES as u32 - 1) << LANE_SHIFT;
// Request ids stay below bit 20, and a wire name keeps its generation from bit 24 on, so
// those four bits are free in both.
const _: () = assert!(crate::adi::MAX_REQUESTS <= 1 << LANE_SHIFT);
const _: () = assert!(LANE_SHIFT + MAX_LANES.trailing_zeros() <= 24);

/// The router's landing tokens (the engine's never have bit 60: `adi::state`).
const ROUTED: u64 = 1 << 60;

fn tag(token: u32, lane: usize) -> u32 {
    debug_assert_eq!(
        token & LANE_MASK,
        0,
        "transfer token {token:#x} uses the lane bits"
    );
    token | (lane as u32) << LANE_SHIFT
}

/// The lane a finished transfer belongs to, and the transfer as its lane named it.
fn untag(done: DataDone) -> (usize, DataDone) {
    let lane = |t: u32| ((t & LANE_MASK) >> LANE_SHIFT) as usize;
    match done {
        DataDone::Recv(t, why) => (lane(t), DataDone::Recv(t & !LANE_MASK, why)),
        DataDone::Send(t) => (lane(t), DataDone::Send(t & !LANE_MASK)),
    }
}

/// What one lane leaves in another's inbox.
enum Parcel {
    /// A whole message (envelope and payload) for this lane.
    Message {
        src: usize,
        env: Envelope,
        payload: Vec<u8>,
    },
    /// The payload of a message this lane's matching gave a landing for has been written
    /// (by a poll of another lane that went on with the message).
    Landed { src: usize, token: u64 },
    /// A transfer this lane started is over.
    Done(DataDone),
}

/// A landing handed out by the router whose payload is still being written.
enum InFlight {
    /// Into lane `lane`'s own landing, under its matching's token.
    Own { lane: usize, token: u64 },
    /// Into a buffer of the router's, for lane `lane`.
    Staged {
        lane: usize,
        env: Envelope,
        buf: Vec<u8>,
    },
}

/// A lane's inbox, on a cache line of its own.
#[repr(align(64))]
struct Inbox {
    /// Parcels waiting (written under `parcels`' lock; read without it, to skip the lock).
    waiting: AtomicUsize,
    parcels: Mutex<InboxQueue>,
}

#[derive(Default)]
struct InboxQueue {
    parcels: VecDeque<Parcel>,
    /// The lane is finalized: what comes for it now is dropped.
    closed: bool,
}

/// The channel and what the router keeps with it, used under one lock.
struct Wire {
    ch: Box<dyn Channel>,
    /// Wrapped with peers of other jobs.
    joined: bool,
    inflight: Vec<Option<InFlight>>,
    free: Vec<usize>,
    /// The one-rank job this process made for itself, if it did: it outlives the channel.
    own_job: Option<nic_model::Job>,
}

// SAFETY: the wire is only reached under the `Shared::wire` mutex, so one thread at a time
// uses it, and the mutex orders memory between them. What is not `Send` inside: raw pointers
// to the buffers of requests in flight (valid for any thread until they complete: the
// `Channel::export`/`pull` contracts), and a channel's internal `Rc`s (FM's handler state),
// whose every clone lives inside the channel itself and so moves with it.
unsafe impl Send for Wire {}

/// What the lanes share.
pub(crate) struct Shared {
    wire: Mutex<Wire>,
    inboxes: Box<[Inbox]>,
    route: super::Route,
    /// Every engine rank the channel reaches (grows with peers of other jobs).
    size: AtomicUsize,
    rank: usize,
    eager_max: usize,
    name: &'static str,
    /// Whether the channel offers its device's memory operations.
    remote: bool,
}

impl Shared {
    /// The shared channel over `ch` and the `n` lanes' channels, lane 0 first.
    pub(super) fn lanes_over(
        mut ch: Box<dyn Channel>,
        own_job: Option<nic_model::Job>,
        joined: bool,
        n: usize,
        route: super::Route,
    ) -> Vec<LaneChannel> {
        let shared = Arc::new(Shared {
            size: AtomicUsize::new(ch.size()),
            rank: ch.rank(),
            eager_max: ch.eager_max(),
            name: ch.name(),
            remote: ch.remote_memory().is_some(),
            inboxes: (0..n)
                .map(|_| Inbox {
                    waiting: AtomicUsize::new(0),
                    parcels: Mutex::default(),
                })
                .collect(),
            route,
            wire: Mutex::new(Wire {
                ch,
                joined,
                inflight: Vec::new(),
                free: Vec::new(),
                own_job,
            }),
        });
        (0..n)
            .map(|lane| LaneChannel {
                shared: shared.clone(),
                me: Lane {
                    lane,
                    spare: VecDeque::new(),
                    copied: CopyCount::default(),
                },
            })
            .collect()
    }

    /// The lane of a message (or an answer to one) with envelope `env`.
    #[inline]
    fn lane_of(&self, env: &Envelope) -> usize {
        (self.route)(env.ctx, env.tag) % self.inboxes.len()
    }

    fn wire(&self) -> Result<MutexGuard<'_, Wire>> {
        self.wire.lock().map_err(|_| poisoned())
    }

    /// Leaves `p` in lane `lane`'s inbox (called under the wire's lock).
    fn post(&self, lane: usize, p: Parcel) {
        let inbox = &self.inboxes[lane];
        let mut q = inbox.parcels.lock().unwrap_or_else(PoisonError::into_inner);
        if q.closed {
            tracing::debug!(target: "mpi", lane, "a parcel for a finalized lane dropped");
            return;
        }
        q.parcels.push_back(p);
        inbox.waiting.store(q.parcels.len(), Ordering::Relaxed);
    }
}

fn poisoned() -> ChannelError {
    ChannelError::Transport(
        "another thread panicked while it used the channel: this process cannot go on".into(),
    )
}

/// One lane's view of the shared channel.
pub struct LaneChannel {
    shared: Arc<Shared>,
    me: Lane,
}

/// A lane's own part of its channel.
struct Lane {
    lane: usize,
    /// The inbox's parcels being delivered (its storage reused).
    spare: VecDeque<Parcel>,
    /// This lane's copies of messages other lanes received for it.
    copied: CopyCount,
}

/// The sink a lane polls the shared channel with: sorts what arrives between this lane's
/// matching and the other lanes' inboxes.
struct Router<'a> {
    lane: usize,
    sink: &'a mut dyn Sink,
    shared: &'a Shared,
    inflight: &'a mut Vec<Option<InFlight>>,
    free: &'a mut Vec<usize>,
    copied: &'a mut CopyCount,
}

impl Router<'_> {
    fn keep(&mut self, f: InFlight) -> u64 {
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => {
                self.inflight.push(None);
                self.inflight.len() - 1
            }
        };
        self.inflight[slot] = Some(f);
        ROUTED | slot as u64
    }
}

impl Sink for Router<'_> {
    /// The fast path (a whole message in a packet): this lane's goes straight to its
    /// matching, another's is copied into its inbox.
    #[inline]
    fn arrived_whole(&mut self, src: usize, env: &Envelope, payload: &[u8]) -> usize {
        let lane = self.shared.lane_of(env);
        if lane == self.lane {
            return self.sink.arrived_whole(src, env, payload);
        }
        self.shared.post(
            lane,
            Parcel::Message {
                src,
                env: *env,
                payload: payload.to_vec(),
            },
        );
        payload.len()
    }

    fn arrived(&mut self, src: usize, env: &Envelope) -> Landing {
        let lane = self.shared.lane_of(env);
        if lane == self.lane {
            let landing = self.sink.arrived(src, env);
            if landing.token == Landing::NOWHERE.token {
                return landing;
            }
            // Another lane's poll may go on with this message and end it: the token says
            // whose it is.
            let token = self.keep(InFlight::Own {
                lane,
                token: landing.token,
            });
            return Landing { token, ..landing };
        }
        let mut buf = vec![0u8; env.payload_len()];
        let (ptr, cap) = (buf.as_mut_ptr(), buf.len());
        // The buffer's heap block stays where it is while the Vec moves into the table.
        let token = self.keep(InFlight::Staged {
            lane,
            env: *env,
            buf,
        });
        Landing { ptr, cap, token }
    }

    fn landed(&mut self, src: usize, token: u64) {
        if token & ROUTED == 0 {
            // A landing that lane 0's engine gave before the lanes were made.
            return self.deliver_landed(0, src, token);
        }
        let slot = (token & !ROUTED) as usize;
        let Some(f) = self.inflight.get_mut(slot).and_then(Option::take) else {
            return;
        };
        self.free.push(slot);
        match f {
            InFlight::Own { lane, token } => self.deliver_landed(lane, src, token),
            InFlight::Staged { lane, env, buf } if lane == self.lane => {
                let n = self.sink.arrived_whole(src, &env, &buf);
                self.copied.add(n);
            }
            InFlight::Staged { lane, env, buf } => self.shared.post(
                lane,
                Parcel::Message {
                    src,
                    env,
                    payload: buf,
                },
            ),
        }
    }

    fn data_done(&mut self, done: DataDone) {
        let (lane, done) = untag(done);
        if lane == self.lane {
            self.sink.data_done(done);
        } else {
            self.shared.post(lane, Parcel::Done(done));
        }
    }

    #[inline]
    fn hungry(&self) -> bool {
        self.sink.hungry()
    }
}

impl Router<'_> {
    fn deliver_landed(&mut self, lane: usize, src: usize, token: u64) {
        if lane == self.lane {
            self.sink.landed(src, token);
        } else {
            self.shared.post(lane, Parcel::Landed { src, token });
        }
    }
}

impl Lane {
    /// Delivers what other lanes left in this lane's inbox; whether there was anything.
    #[inline]
    fn deliver_inbox(&mut self, shared: &Shared, sink: &mut dyn Sink) -> bool {
        let inbox = &shared.inboxes[self.lane];
        if inbox.waiting.load(Ordering::Relaxed) == 0 {
            return false;
        }
        let mut batch = std::mem::take(&mut self.spare);
        {
            let mut q = inbox.parcels.lock().unwrap_or_else(PoisonError::into_inner);
            std::mem::swap(&mut q.parcels, &mut batch);
            inbox.waiting.store(0, Ordering::Relaxed);
        }
        let any = !batch.is_empty();
        for p in batch.drain(..) {
            match p {
                Parcel::Message { src, env, payload } => {
                    let n = sink.arrived_whole(src, &env, &payload);
                    self.copied.add(n);
                }
                Parcel::Landed { src, token } => sink.landed(src, token),
                Parcel::Done(done) => sink.data_done(done),
            }
        }
        self.spare = batch;
        any
    }

    /// Runs `f` on the channel, holding it, with the router over `sink`; the inbox is
    /// delivered first, so that nothing this lane takes from the channel overtakes it.
    fn with_router<R>(
        &mut self,
        shared: &Shared,
        mut wire: MutexGuard<'_, Wire>,
        sink: &mut dyn Sink,
        f: impl FnOnce(&mut dyn Channel, &mut Router<'_>) -> Result<R>,
    ) -> Result<(bool, R)> {
        let delivered = self.deliver_inbox(shared, sink);
        let w = &mut *wire;
        let mut router = Router {
            lane: self.lane,
            sink,
            shared,
            inflight: &mut w.inflight,
            free: &mut w.free,
            copied: &mut self.copied,
        };
        let r = f(&mut *w.ch, &mut router)?;
        Ok((delivered, r))
    }
}

impl LaneChannel {
    /// Runs `f` on the channel, holding it.
    fn with_channel<R>(&self, f: impl FnOnce(&mut dyn Channel) -> Result<R>) -> Result<R> {
        let mut wire = self.shared.wire()?;
        f(&mut *wire.ch)
    }

    /// This lane's number.
    pub fn lane(&self) -> usize {
        self.me.lane
    }
}

impl Channel for LaneChannel {
    fn name(&self) -> &'static str {
        self.shared.name
    }

    fn rank(&self) -> usize {
        self.shared.rank
    }

    fn size(&self) -> usize {
        self.shared.size.load(Ordering::Relaxed)
    }

    fn eager_max(&self) -> usize {
        self.shared.eager_max
    }

    #[inline]
    fn send_control(
        &mut self,
        dest: usize,
        env: &Envelope,
        payload: &[u8],
        sink: &mut dyn Sink,
    ) -> Result<bool> {
        let LaneChannel { shared, me } = self;
        if dest == shared.rank && shared.lane_of(env) == me.lane {
            // A message to this process routed to this lane (and every answer to it, which
            // carries its context and tag) lands in this lane's matching at once, without
            // the shared channel: nothing of this lane's to itself travels through the
            // wire, so nothing there can be overtaken.
            sink.arrived_whole(dest, env, payload);
            return Ok(true);
        }
        let wire = shared.wire()?;
        let (_, sent) = me.with_router(shared, wire, sink, |ch, router| {
            ch.send_control(dest, env, payload, router)
        })?;
        Ok(sent)
    }

    fn poll(&mut self, sink: &mut dyn Sink) -> Result<bool> {
        // What is in the inbox now came before anything still in the channel.
        let LaneChannel { shared, me } = self;
        let early = me.deliver_inbox(shared, sink);
        let wire = match shared.wire.try_lock() {
            Ok(wire) => wire,
            // Another lane is polling: it leaves what is ours in the inbox.
            Err(TryLockError::WouldBlock) => return Ok(early),
            Err(TryLockError::Poisoned(_)) => return Err(poisoned()),
        };
        let (late, any) = me.with_router(shared, wire, sink, |ch, router| ch.poll(router))?;
        Ok(early | late | any)
    }

    unsafe fn export(
        &mut self,
        dest: usize,
        buf: *const u8,
        len: usize,
        sreq: u32,
    ) -> Result<RegionKey> {
        let token = tag(sreq, self.me.lane);
        // SAFETY: the caller's contract is passed on.
        self.with_channel(|ch| unsafe { ch.export(dest, buf, len, token) })
    }

    fn revoke(&mut self, key: RegionKey) -> Result<()> {
        self.with_channel(|ch| ch.revoke(key))
    }

    unsafe fn pull(
        &mut self,
        src: usize,
        key: RegionKey,
        buf: *mut u8,
        len: usize,
        rreq: u32,
    ) -> Result<()> {
        let token = tag(rreq, self.me.lane);
        // SAFETY: the caller's contract is passed on.
        self.with_channel(|ch| unsafe { ch.pull(src, key, buf, len, token) })
    }

    fn check_peers(&mut self) -> Result<()> {
        self.with_channel(|ch| ch.check_peers())
    }

    /// Closes this lane's inbox; the last lane finalized finalizes the channel.
    fn finalize(self: Box<Self>) -> Result<()> {
        let LaneChannel { shared, me } = *self;
        let lane = me.lane;
        {
            let inbox = &shared.inboxes[lane];
            let mut q = inbox.parcels.lock().unwrap_or_else(PoisonError::into_inner);
            q.closed = true;
            q.parcels.clear();
            inbox.waiting.store(0, Ordering::Relaxed);
        }
        // Exactly one of the lanes finalizing at the same time gets the shared state.
        let Some(shared) = Arc::into_inner(shared) else {
            return Ok(());
        };
        let wire = shared.wire.into_inner().map_err(|_| poisoned())?;
        let r = wire.ch.finalize();
        drop(wire.own_job);
        r
    }

    /// The channel's counters on lane 0 (once for the process), and each lane's own copies.
    fn counters(&self) -> ChannelCounters {
        let mut c = if self.me.lane == 0 {
            match self.shared.wire() {
                Ok(wire) => wire.ch.counters(),
                Err(_) => ChannelCounters::default(),
            }
        } else {
            ChannelCounters::default()
        };
        c.channel.copies += self.me.copied.copies;
        c.channel.bytes += self.me.copied.bytes;
        c
    }

    fn remote_memory(&mut self) -> Option<&mut dyn RemoteMemory> {
        if self.me.lane == 0 && self.shared.remote {
            Some(self)
        } else {
            None
        }
    }

    fn add_peers(&mut self, socks: Vec<std::net::TcpStream>) -> Result<Vec<usize>> {
        let mut wire = self.shared.wire()?;
        if !wire.joined {
            crate::channel::foreign::Joined::wrap(&mut wire.ch);
            wire.joined = true;
        }
        let ranks = wire.ch.add_peers(socks)?;
        self.shared.size.store(wire.ch.size(), Ordering::Relaxed);
        Ok(ranks)
    }

    fn remove_peers(&mut self, ranks: &[usize]) {
        if let Ok(mut wire) = self.shared.wire() {
            wire.ch.remove_peers(ranks);
        }
    }
}

/// Lane 0's door to the device's memory operations: each one holds the shared channel.
impl RemoteMemory for LaneChannel {
    unsafe fn expose(&mut self, addr: usize, len: usize) -> Result<RegionKey, AdiError> {
        // SAFETY: the caller's contract is passed on.
        self.with_remote(|m| unsafe { m.expose(addr, len) })
    }

    fn withdraw(&mut self, key: RegionKey) -> Result<(), AdiError> {
        self.with_remote(|m| m.withdraw(key))
    }

    fn reach(&mut self, peer: usize, key: RegionKey) -> Reach {
        self.with_remote(|m| Ok(m.reach(peer, key)))
            .unwrap_or(Reach::Unreachable)
    }

    fn write(
        &mut self,
        peer: usize,
        key: RegionKey,
        offset: usize,
        data: &[u8],
    ) -> Result<(), AdiError> {
        self.with_remote(|m| m.write(peer, key, offset, data))
    }

    unsafe fn read(
        &mut self,
        peer: usize,
        key: RegionKey,
        offset: usize,
        buf: *mut u8,
        len: usize,
    ) -> Result<Option<TransferId>, AdiError> {
        // SAFETY: the caller's contract is passed on.
        self.with_remote(|m| unsafe { m.read(peer, key, offset, buf, len) })
    }

    fn read_done(&mut self, id: TransferId) -> Result<bool, AdiError> {
        self.with_remote(|m| m.read_done(id))
    }

    fn complete_writes(&mut self, peer: usize) -> Result<(), AdiError> {
        self.with_remote(|m| m.complete_writes(peer))
    }
}

impl LaneChannel {
    fn with_remote<R>(
        &self,
        f: impl FnOnce(&mut dyn RemoteMemory) -> Result<R, AdiError>,
    ) -> Result<R, AdiError> {
        let mut wire = self.shared.wire()?;
        let m = wire.ch.remote_memory().ok_or_else(|| {
            AdiError::Channel("the channel no longer offers its device's memory".into())
        })?;
        f(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transfer_tokens_carry_their_lane() {
        let wire = (crate::adi::MAX_REQUESTS as u32 - 1) | (0xab << 24);
        for lane in 0..MAX_LANES {
            assert_eq!(
                untag(DataDone::Send(tag(wire, lane))),
                (lane, DataDone::Send(wire))
            );
            assert_eq!(
                untag(DataDone::Recv(tag(7, lane), None)),
                (lane, DataDone::Recv(7, None))
            );
        }
    }
}
