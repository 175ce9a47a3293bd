//! The BIP engine: sending, receiving, the protocols, and progress.
//!
//! Short messages (up to `eager_max` bytes) go out at once in packets of an adaptive size,
//! each written straight into a NIC packet buffer; the receiver copies them into the posted
//! receive buffer, or into a buffer of its own if no receive is posted yet, and senders respect
//! the credit the receiver granted for such buffering. Long messages are the stack's one
//! rendezvous ([`rendezvous`]): the sender exports its buffer as a region of its NIC and
//! announces it (RTS); once a receive is posted the receiver reads the region in one copy and
//! answers FIN, which withdraws it. Layers above run the same rendezvous with their own
//! matching ([`Bip::export`], [`Bip::pull`]).
//!
//! This file holds the types, the public calls and progress; `tx` the send side (fast path,
//! send queues, packet emission, link timers), `rx` the handling of arrived packets,
//! `rendezvous` the long messages.

use crate::config::{BipConfig, PacketSizer};
use crate::error::{BipError, Result};
use crate::link::Link;
use crate::queues::{Body, TagQueue};
use crate::request::{Completion, Op, Request, State, Table};
use crate::wire::{Header, Kind, HEADER, LINK_HEADER};
use nic_model::wait::Backoff;
use nic_model::{Device, PeerStatus, Rank, RegionKey};
use std::collections::VecDeque;

mod rendezvous;
mod rx;
mod tx;

pub use rendezvous::Event;
use rendezvous::{Owner, Read, Rendezvous};

/// Packets one turn of a polling loop takes from the device before it also moves sends and
/// the device's own work on (the device lends them from any source, fairly).
const POLL_BUDGET: usize = 32;

/// Messages `lend` (or a blocking `recv`) may deliver in a row without the rest of a poll's
/// work (the device's own work, queued sends, reads in flight, link timers): a stream of
/// arrivals that keeps every `lend` busy still lets that work run at least this often. (A
/// control packet queued meanwhile, such as returned credit, goes out at the next delivery.)
const BACKGROUND_EVERY: u32 = 16;

/// Counts kept by BIP, beside the NIC's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BipCounters {
    pub messages_sent: u64,
    pub messages_received: u64,
    /// Memory copies made by BIP (into packet buffers, out of them, into and out of its own
    /// buffers for unexpected messages).
    pub copies: u64,
    pub bytes_copied: u64,
    /// Long messages read in one copy from the sender's region.
    pub rendezvous_single_copy: u64,
    /// Long messages asked for with GET and sent in packets, because single copy was not
    /// available.
    pub rendezvous_packets: u64,
    /// Attempts to start a short message that found too little buffer credit (a sender that
    /// waits counts once per attempt).
    pub credit_waits: u64,
    /// Packets resent (unreliable devices only).
    pub retransmits: u64,
    /// Packets dropped for a bad checksum, as duplicates or after a gap (unreliable only).
    pub rejected: u64,
    /// Bytes of short messages buffered now because no receive was posted for them.
    pub buffered_bytes: u64,
    /// The most that were ever buffered at once (bounded by the credit granted).
    pub buffered_peak: u64,
}

impl BipCounters {
    pub(super) fn buffer(&mut self, delta: i64) {
        self.buffered_bytes = (self.buffered_bytes as i64 + delta) as u64;
        self.buffered_peak = self.buffered_peak.max(self.buffered_bytes);
    }
}

/// Work waiting to go out to one peer, in order.
enum SendWork {
    /// A short message, `offset` bytes of it already sent.
    Eager { req: u32, offset: usize },
    /// A long message to announce: its tag, length and region.
    Rts {
        tag: u32,
        len: usize,
        key: RegionKey,
    },
    /// Bytes of region `key` that a peer asked for with GET `read`: `len` bytes from `addr`
    /// of this process, `offset` of them sent.
    Data {
        read: u32,
        key: RegionKey,
        addr: usize,
        len: usize,
        offset: usize,
    },
}

/// Where the packets of a short message being received go.
#[derive(Clone, Copy)]
enum Target {
    Req(u32),
    Unexpected(u64),
}

/// A short message whose packets are arriving.
#[derive(Clone, Copy)]
struct Assembly {
    target: Target,
    tag: u32,
    total: usize,
    got: usize,
}

/// A control packet waiting to go: its header, and for a GET the region's key as payload.
#[derive(Clone, Copy)]
struct Ctrl {
    h: Header,
    key: Option<RegionKey>,
}

/// Per-peer state.
struct Peer {
    /// Bytes of short messages we may still send to this peer.
    credit: usize,
    /// Credit we owe back to this peer (its messages have been consumed).
    owed: usize,
    sendq: VecDeque<SendWork>,
    ctrl: VecDeque<Ctrl>,
    /// The short message from this peer whose packets are arriving.
    assembling: Option<Assembly>,
    link: Option<Link>,
    /// A negative acknowledgement to send (unreliable devices only).
    nack_due: Option<u32>,
}

/// What a blocking `recv`'s own poll found.
enum Polled {
    /// The message, `len` bytes, is in the caller's buffer.
    Got(usize),
    /// The message needs the general path; this receive is now posted as `Request`.
    Posted(Request),
    /// A packet for something else, handled.
    Other,
}

/// Something a packet handler asks for after the packet's buffer is released (the handler
/// runs while the device lends the packet, so it cannot use the device itself).
enum Deferred {
    /// Read a long message's region.
    Read(Read),
    /// Answer a GET.
    Serve {
        src: Rank,
        read: u32,
        key: RegionKey,
        offset: usize,
        len: usize,
    },
    /// Withdraw a region whose FIN came in.
    Withdraw(RegionKey),
}

/// Everything but the device, so that packet handlers can borrow it while a received packet
/// borrows the device.
struct Engine {
    rank: Rank,
    n: usize,
    max_payload: usize,
    /// The longest message the send fast path takes: one packet, and short
    /// (`max_payload.min(cfg.eager_max)`).
    fast_max: usize,
    reliable: bool,
    /// Long messages may be read straight from the sender's memory (a reliable device: over
    /// an unreliable one the data must cross the link protocol, in packets).
    single_copy: bool,
    cfg: BipConfig,
    grant: usize,
    sizer: PacketSizer,
    reqs: Table,
    tags: Vec<TagQueue>,
    peers: Vec<Peer>,
    rv: Rendezvous,
    next_uid: u64,
    counters: BipCounters,
    deferred: Vec<Deferred>,
    /// Some peer may have queued control packets or send work: set by every push onto
    /// `Peer::ctrl`/`Peer::sendq`, cleared by `pump_pending` once all are empty, so that a poll
    /// with nothing queued skips the sweep over the peers.
    tx_backlog: bool,
    /// A control packet was queued since the last `background` (set with `tx_backlog` by
    /// `queue_ctrl`): `lend`, which skips `background` after most deliveries, does not skip
    /// it after this one.
    ctrl_due: bool,
    /// Messages `lend` and `recv` delivered since `background` last ran.
    lent_since_background: u32,
    /// When `test` next checks its peers' liveness.
    next_liveness_check: std::time::Instant,
    idle_tests: u32,
}

/// A BIP endpoint over a device `D` (the plain [`nic_model::Nic`], or a wrapper around it).
pub struct Bip<D: Device> {
    dev: D,
    e: Engine,
}

impl<D: Device> Bip<D> {
    /// Starts BIP over `dev`: grants every peer its share of our short-message buffer.
    pub fn new(mut dev: D, cfg: BipConfig) -> Result<Self> {
        let caps = dev.capabilities();
        let n = dev.nranks();
        let reliable = caps.reliable && !cfg.force_link;
        // Over an unreliable device every packet also carries a sequence number and checksum.
        let header = if reliable { HEADER } else { LINK_HEADER };
        dev.set_protocol_header(header);
        let grant = cfg.grant_per_sender(n);
        let sizer = PacketSizer::for_profile(dev.profile());
        let peers = (0..n)
            .map(|_| Peer {
                credit: 0,
                owed: 0,
                sendq: VecDeque::new(),
                ctrl: VecDeque::new(),
                assembling: None,
                link: (!reliable).then(Link::new),
                nack_due: None,
            })
            .collect();
        let mut e = Engine {
            rank: dev.rank(),
            n,
            max_payload: caps.mtu - header,
            fast_max: (caps.mtu - header).min(cfg.eager_max),
            reliable,
            single_copy: reliable,
            grant,
            sizer,
            reqs: Table::default(),
            tags: (0..cfg.tags).map(|_| TagQueue::default()).collect(),
            peers,
            rv: Rendezvous::default(),
            next_uid: 0,
            counters: BipCounters::default(),
            deferred: Vec::new(),
            tx_backlog: false,
            ctrl_due: false,
            lent_since_background: 0,
            next_liveness_check: std::time::Instant::now(),
            idle_tests: 0,
            cfg,
        };
        for p in 0..n {
            let mut h = Header::new(Kind::Credit);
            h.len = grant as u64;
            e.queue_ctrl(p, h);
        }
        let mut bip = Bip { dev, e };
        for p in 0..n {
            bip.pump(p)?;
        }
        tracing::debug!(target: "bip", rank = bip.e.rank, n, reliable, grant, "BIP up");
        Ok(bip)
    }

    /// This process's number, `0..numnodes`.
    pub fn mynode(&self) -> Rank {
        self.e.rank
    }

    /// Processes in the job.
    pub fn numnodes(&self) -> usize {
        self.e.n
    }

    pub fn config(&self) -> &BipConfig {
        &self.e.cfg
    }

    pub fn counters(&self) -> BipCounters {
        self.e.counters
    }

    pub fn device(&self) -> &D {
        &self.dev
    }

    /// The device, mutably, for memory operations beside BIP's own: the deliberate updates
    /// and reads of one-sided communication (regions the caller registers itself). Packets
    /// and BIP's own regions are BIP's: sending or polling through this would break its
    /// protocol.
    pub fn device_mut(&mut self) -> &mut D {
        &mut self.dev
    }

    /// Sends `buf` to queue `tag` of `dest`, returning when `buf` may be reused.
    pub fn send(&mut self, dest: Rank, tag: u32, buf: &[u8]) -> Result<()> {
        self.e.check(dest, tag)?;
        if self.try_send_now(dest, tag, buf) {
            return Ok(());
        }
        // SAFETY: `buf` outlives the request because we wait for it before returning.
        let r = unsafe { self.isend(dest, tag, buf.as_ptr(), buf.len())? };
        self.wait(r).map(|_| ())
    }

    /// Sends `buf` to queue `tag` of `dest` if it can go at once as one packet (short, with
    /// credit, nothing queued before it, room on the route): `Ok(true)` when sent, `Ok(false)`
    /// when nothing was done and the caller should use `send` or `isend`. Never blocks; for
    /// layers above with their own waiting loop.
    #[inline]
    pub fn send_now(&mut self, dest: Rank, tag: u32, buf: &[u8]) -> Result<bool> {
        self.e.check(dest, tag)?;
        Ok(self.try_send_now(dest, tag, buf))
    }

    /// As [`send_now`](Self::send_now) for a message in two parts, `head` then `body`, which
    /// are gathered straight into the packet buffer (a layer above puts its own header in front
    /// of a user's data without first copying both into one buffer).
    #[inline]
    pub fn send_now_gather(
        &mut self,
        dest: Rank,
        tag: u32,
        head: &[u8],
        body: &[u8],
    ) -> Result<bool> {
        self.e.check(dest, tag)?;
        Ok(self.try_send_now_gather(dest, tag, head, body))
    }

    /// Receives the next message of queue `tag` into `buf`; returns its length and sender.
    ///
    /// While nothing is queued on `tag`, this polls the routes itself and copies a one-packet
    /// short message straight from the packet buffer into `buf`, without a request; anything
    /// else (a long or multi-packet message for `tag`) first posts a real receive, so the
    /// general path takes over with the order of the queue intact.
    pub fn recv(&mut self, tag: u32, buf: &mut [u8]) -> Result<(usize, Rank)> {
        self.e.check(0, tag)?;
        let q = &self.e.tags[tag as usize];
        if !self.e.reliable || !q.unexpected.is_empty() || !q.posted.is_empty() {
            // SAFETY: `buf` outlives the request because we wait for it before returning.
            let r = unsafe { self.irecv(tag, buf.as_mut_ptr(), buf.len())? };
            return self.wait(r).map(|c| (c.len, c.peer));
        }
        let (ptr, cap) = (buf.as_mut_ptr(), buf.len());
        let mut backoff = Backoff::new();
        loop {
            let mut progressed = false;
            // The device lends packets from any source, in order per source; a bounded
            // number per turn, so that sends and the device's own work keep moving.
            for _ in 0..POLL_BUDGET {
                let e = &mut self.e;
                let mut polled = (0, Ok(Polled::Other));
                if !self.dev.poll(&mut |src, pkt| {
                    polled = (src, e.on_packet_for_recv(src, pkt, tag, ptr, cap))
                }) {
                    break;
                }
                self.run_deferred()?;
                let (src, polled) = polled;
                match polled? {
                    Polled::Got(len) => {
                        self.after_delivery()?;
                        return Ok((len, src));
                    }
                    Polled::Posted(r) => return self.wait(r).map(|c| (c.len, c.peer)),
                    Polled::Other => progressed = true,
                }
            }
            progressed |= self.dev.progress();
            progressed |= self.pump_pending()?;
            if progressed {
                backoff.reset();
            } else if backoff.snooze() {
                self.check_any_sender()?;
            }
        }
    }

    /// Takes the next short message of queue `tag`, if a whole one has arrived, and lends it
    /// to `f` where it lies: in the NIC's packet buffer when it fits one packet and nothing was
    /// buffered before it, else in BIP's own buffer. `Ok(None)` when none is there yet. This is
    /// for layers above that consume a message as they read it (FM's handlers, MPI's channel):
    /// it saves the copy `recv` makes into a buffer of the caller's. Never blocks; a call that
    /// finds nothing also moves the rest of BIP on (queued sends, reads in flight, the device's
    /// own work), and so does every `BACKGROUND_EVERY`-th delivery in a row, or one after
    /// which a control packet (such as returned credit) waits to go.
    ///
    /// Long messages are not lent (`BipError::NotLendable`), and a queue should not be used
    /// with `lend` and `irecv` at once (posted receives take messages first).
    pub fn lend<R>(&mut self, tag: u32, f: impl FnOnce(Rank, &[u8]) -> R) -> Result<Option<R>> {
        self.e.check(0, tag)?;
        let mut f = Some(f);
        // What arrived earlier and was buffered comes first.
        if let Some(r) = self.lend_buffered(tag, &mut f)? {
            return Ok(Some(r));
        }
        let mut arrived = false;
        if self.e.reliable && self.e.tags[tag as usize].posted.is_empty() {
            for _ in 0..POLL_BUDGET {
                let e = &mut self.e;
                let mut lent = Ok(None);
                if !self
                    .dev
                    .poll(&mut |src, pkt| lent = e.on_packet_for_lend(src, pkt, tag, &mut f))
                {
                    break;
                }
                self.run_deferred()?;
                if let Some(r) = lent? {
                    self.after_delivery()?;
                    return Ok(Some(r));
                }
                arrived = true;
                // A rendezvous that ended is the caller's to see before more packets are
                // lent (a sender waiting for its FIN returns before it handles the
                // reply that came right behind it).
                if !self.e.tags[tag as usize].unexpected.is_empty() || !self.e.rv.events.is_empty()
                {
                    break;
                }
            }
            self.background()?;
        } else {
            arrived = self.progress()?;
        }
        // Only something that arrived just now can have been buffered since the first look.
        if arrived {
            self.lend_buffered(tag, &mut f)
        } else {
            Ok(None)
        }
    }

    /// After `lend` (or `recv`) delivered a message from the device: the rest of a poll's
    /// work runs only if a control packet waits (returned credit must not wait for a pause in
    /// the stream) or every `BACKGROUND_EVERY` deliveries; a `lend` that finds nothing always
    /// runs it. So a stream of arrivals costs one poll each, and starves nothing.
    #[inline(always)]
    fn after_delivery(&mut self) -> Result<()> {
        let e = &mut self.e;
        e.lent_since_background += 1;
        if e.ctrl_due || e.lent_since_background >= BACKGROUND_EVERY {
            self.background_after_delivery()?;
        }
        Ok(())
    }

    #[inline(never)]
    fn background_after_delivery(&mut self) -> Result<()> {
        self.background().map(|_| ())
    }

    /// Lends the oldest buffered message of `tag`, if it is complete. (Every poll of `lend`
    /// asks: the empty case is inline, the rest out of line.)
    #[inline(always)]
    fn lend_buffered<R, F: FnOnce(Rank, &[u8]) -> R>(
        &mut self,
        tag: u32,
        f: &mut Option<F>,
    ) -> Result<Option<R>> {
        if self.e.tags[tag as usize].unexpected.is_empty() {
            return Ok(None);
        }
        self.lend_buffered_front(tag, f)
    }

    #[inline(never)]
    fn lend_buffered_front<R, F: FnOnce(Rank, &[u8]) -> R>(
        &mut self,
        tag: u32,
        f: &mut Option<F>,
    ) -> Result<Option<R>> {
        let q = &mut self.e.tags[tag as usize].unexpected;
        match q.front().map(|u| &u.body) {
            Some(Body::Short { data, total }) if data.len() == *total => {}
            Some(Body::Rts { len, .. }) => return Err(BipError::NotLendable { len: *len }),
            _ => return Ok(None),
        }
        let u = q.pop_front().expect("checked above");
        let Body::Short { data, total } = u.body else {
            unreachable!("checked above")
        };
        self.e.counters.buffer(-(total as i64));
        self.e.counters.messages_received += 1;
        self.e.return_credit(u.src, total);
        Ok(f.take().map(|f| f(u.src, &data)))
    }

    /// Starts sending `len` bytes at `buf` to queue `tag` of `dest`.
    ///
    /// # Safety
    /// `buf` must be non-null and aligned for `u8` (as `slice::as_ptr` gives, dangling when
    /// `len` is 0), and the `len` bytes at `buf` must stay valid and unmodified until the
    /// request completes (`test` or `wait` reports it), which must happen before `self` is
    /// dropped.
    pub unsafe fn isend(
        &mut self,
        dest: Rank,
        tag: u32,
        buf: *const u8,
        len: usize,
    ) -> Result<Request> {
        self.e.check(dest, tag)?;
        let r = self.e.reqs.alloc(Op::Send {
            dest,
            tag,
            buf,
            len,
        })?;
        // SAFETY: `buf` is non-null with `len` readable bytes (this function's contract).
        if len <= self.e.fast_max
            && self.try_send_now(dest, tag, unsafe { std::slice::from_raw_parts(buf, len) })
        {
            self.e.reqs.complete(
                r.idx,
                Completion {
                    len,
                    peer: dest,
                    tag,
                },
            );
            return Ok(r);
        }
        tracing::trace!(target: "bip", dest, tag, len, "isend queued");
        let work = if len <= self.e.cfg.eager_max {
            SendWork::Eager {
                req: r.idx,
                offset: 0,
            }
        } else {
            // SAFETY: the buffer stays valid until the request completes, which needs the
            // receiver's FIN (this function's contract).
            let key = match unsafe { self.export_region(dest, buf, len, Owner::Own(r.idx)) } {
                Ok(key) => key,
                Err(e) => {
                    self.e.reqs.free(r.idx);
                    return Err(e);
                }
            };
            SendWork::Rts { tag, len, key }
        };
        self.e.queue_send(dest, work);
        self.pump(dest)?;
        Ok(r)
    }

    /// Posts a receive of at most `cap` bytes into `buf` on queue `tag`.
    ///
    /// # Safety
    /// `buf` must be non-null (as `slice::as_mut_ptr` gives, dangling when `cap` is 0), and
    /// the `cap` bytes at `buf` must stay valid and not be accessed otherwise until the request
    /// completes, which must happen before `self` is dropped.
    pub unsafe fn irecv(&mut self, tag: u32, buf: *mut u8, cap: usize) -> Result<Request> {
        self.e.check(0, tag)?;
        let r = self.e.reqs.alloc(Op::Recv {
            tag,
            buf,
            cap,
            src: 0,
            total: 0,
            got: 0,
        })?;
        let q = &mut self.e.tags[tag as usize];
        match q.unexpected.pop_front() {
            None => q.posted.push_back(r.idx),
            Some(u) => self.e.match_unexpected(r.idx, u),
        }
        self.run_deferred()?;
        Ok(r)
    }

    /// Completes `r` if it is done: `Ok(Some(..))` once (the handle is then spent), `Ok(None)`
    /// while it is still in progress.
    pub fn test(&mut self, r: Request) -> Result<Option<Completion>> {
        if let Some(c) = self.e.take(r)? {
            return Ok(Some(c));
        }
        if !self.progress()? {
            // A caller that polls with `test` must learn of a dead peer as one that waits
            // does; look at most every 100 ms, reading the clock every 256 idle polls.
            self.e.idle_tests = self.e.idle_tests.wrapping_add(1);
            if !self.e.idle_tests.is_multiple_of(256) {
                return self.e.take(r);
            }
            let now = std::time::Instant::now();
            if now >= self.e.next_liveness_check {
                self.e.next_liveness_check = now + std::time::Duration::from_millis(100);
                self.check_peers_for(r)?;
            }
        }
        self.e.take(r)
    }

    /// Completes `r` if it is already done, without driving progress: for callers that run
    /// their own progress loop (FM's blocking sends extract while they wait).
    #[inline]
    pub fn test_done(&mut self, r: Request) -> Result<Option<Completion>> {
        self.e.take(r)
    }

    /// The largest message that travels as one packet (and so can be lent in place).
    pub fn max_packet_message(&self) -> usize {
        self.e.max_payload.min(self.e.cfg.eager_max)
    }

    /// Waits for `r` to complete. A peer that dies meanwhile ends the wait with an error within
    /// a second.
    pub fn wait(&mut self, r: Request) -> Result<Completion> {
        let mut backoff = Backoff::new();
        loop {
            match self.e.take(r)? {
                Some(c) => return Ok(c),
                None => {
                    if self.progress()? {
                        backoff.reset();
                    } else if backoff.snooze() {
                        // Only long waits get here (the liveness checks start after 100 ms).
                        tracing::trace!(target: "bip", req = r.idx, "still waiting; checking peers");
                        self.check_peers_for(r)?;
                    }
                }
            }
        }
    }

    /// Waits until every send has completed and every packet is delivered, then marks this
    /// process finished so that its exit is not taken for a death.
    pub fn finalize(mut self) -> Result<()> {
        let _span = tracing::debug_span!(target: "bip", "finalize", rank = self.e.rank).entered();
        let mut backoff = Backoff::new();
        loop {
            // A peer that finalized reads nothing more: what we still hold for its link
            // (unacknowledged copies, an acknowledgement it would only have re-requested) and
            // the regions it would have read are moot, and waiting for them would fail the
            // job's clean exit.
            let me = self.e.rank;
            for p in (0..self.e.n).filter(|&p| p != me) {
                if self.dev.peer_status(p) != PeerStatus::Finalized {
                    continue;
                }
                if self.e.peers[p].link.is_some() {
                    self.e.peers[p].link = Some(Link::new());
                }
                for x in self.e.rv.all_exports().into_iter().filter(|x| x.dest == p) {
                    self.e.rv.remove_export(x.key);
                    self.dev.deregister(x.key)?;
                    match x.owner {
                        Owner::Own(req) => self.e.fail(
                            req,
                            BipError::PeerGone {
                                rank: p,
                                why: "it finalized without reading a long message",
                            },
                        ),
                        Owner::Upper(token) => {
                            self.e.rv.events.push_back(Event::Exported { token })
                        }
                    }
                }
            }
            let busy = self.e.reqs.any_active_send()
                || self.e.rv.live_exports > 0
                || self.e.rv.live_reads > 0
                || self.e.peers.iter().any(|p| {
                    !p.sendq.is_empty()
                        || !p.ctrl.is_empty()
                        || p.link
                            .as_ref()
                            .is_some_and(|l| !l.unacked.is_empty() || l.ack_pending())
                });
            if !busy {
                break;
            }
            if self.progress()? {
                backoff.reset();
            } else if backoff.snooze() {
                // Whoever we still owe packets or wait on must be alive to take them.
                self.check_peers()?;
            }
        }
        self.dev.finalize();
        Ok(())
    }

    /// Moves packets in and out: drains arrived packets, starts deferred reads, sends what
    /// waits, lets the device do its own work. Returns true if anything happened.
    pub fn progress(&mut self) -> Result<bool> {
        let mut did = false;
        // The device is fair between sources; a budget bounds one turn.
        for _ in 0..POLL_BUDGET {
            let e = &mut self.e;
            let mut handled = Ok(());
            if !self
                .dev
                .poll(&mut |src, pkt| handled = e.on_packet(src, pkt))
            {
                break;
            }
            handled?;
            did = true;
        }
        if did {
            self.run_deferred()?;
        }
        did |= self.background()?;
        Ok(did)
    }

    /// What every poll does besides taking packets: the device's own work (a split copy a
    /// peer asked for), reads whose transfer ends later, queued sends, the link's timers.
    #[inline]
    fn background(&mut self) -> Result<bool> {
        self.e.ctrl_due = false;
        self.e.lent_since_background = 0;
        let mut did = self.dev.progress();
        if self.e.rv.pending_transfers > 0 {
            did |= self.poll_transfers()?;
        }
        did |= self.pump_pending()?;
        if !self.e.reliable {
            did |= self.link_timers()?;
        }
        Ok(did)
    }

    #[inline]
    fn run_deferred(&mut self) -> Result<()> {
        if self.e.deferred.is_empty() {
            return Ok(());
        }
        self.run_deferred_slow()
    }

    #[cold]
    fn run_deferred_slow(&mut self) -> Result<()> {
        // In arrival order: reads are started in the order their messages matched.
        let work = std::mem::take(&mut self.e.deferred);
        for d in work {
            match d {
                // SAFETY: a read's buffer is a posted receive's (valid until it completes,
                // irecv's contract) or a layer above's (`pull`'s contract).
                Deferred::Read(r) => unsafe { self.start_read(r)? },
                Deferred::Serve {
                    src,
                    read,
                    key,
                    offset,
                    len,
                } => self.serve_get(src, read, key, offset, len),
                Deferred::Withdraw(key) => self.dev.deregister(key)?,
            }
        }
        self.pump_pending()?;
        Ok(())
    }

    fn check_peer(&self, p: Rank) -> Result<()> {
        match self.dev.peer_status(p) {
            PeerStatus::Alive => Ok(()),
            PeerStatus::Dead => Err(BipError::PeerGone {
                rank: p,
                why: "the process died",
            }),
            PeerStatus::Finalized => Err(BipError::PeerGone {
                rank: p,
                why: "it finalized",
            }),
        }
    }

    /// A blocked wait asks whether the peers it depends on are still there.
    fn check_peers_for(&mut self, r: Request) -> Result<()> {
        let me = self.e.rank;
        let Some(entry) = self.e.reqs.get(r) else {
            return Ok(());
        };
        // The request stays allocated (its buffer may still be named by queued work); the
        // job is broken and the caller is told so.
        match entry.op {
            Op::Send { dest, .. } if dest != me => self.check_peer(dest),
            Op::Send { .. } => Ok(()),
            Op::Recv { .. } => self.check_any_sender(),
        }
    }

    /// Fails with `PeerGone` if a peer has died (one that finalized cleanly is not an error,
    /// unless we still wait for it to read or hand over a long message): for layers above
    /// whose own waiting loops must not outlive a broken job.
    pub fn check_peers(&self) -> Result<()> {
        for p in (0..self.e.n).filter(|&p| p != self.e.rank) {
            match self.dev.peer_status(p) {
                PeerStatus::Dead => {
                    return Err(BipError::PeerGone {
                        rank: p,
                        why: "the process died",
                    })
                }
                PeerStatus::Finalized if self.e.rv.reads_from(p) > 0 => {
                    return Err(BipError::PeerGone {
                        rank: p,
                        why: "it finalized with a long message still being read",
                    });
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// A receive may be satisfied by any peer: a death anywhere ends the wait (the job is
    /// broken); peers that finalized cleanly matter only if all of them did.
    fn check_any_sender(&self) -> Result<()> {
        let (me, n) = (self.e.rank, self.e.n);
        let mut all_gone = n > 1;
        let mut dead = None;
        for p in (0..n).filter(|&p| p != me) {
            match self.dev.peer_status(p) {
                PeerStatus::Dead => dead = Some(p),
                PeerStatus::Alive => all_gone = false,
                PeerStatus::Finalized => {}
            }
        }
        match dead {
            Some(p) => Err(BipError::PeerGone {
                rank: p,
                why: "the process died",
            }),
            None if all_gone => Err(BipError::PeerGone {
                rank: (me + 1) % n,
                why: "every peer finalized",
            }),
            None => Ok(()),
        }
    }
}

impl Engine {
    fn check(&self, dest: Rank, tag: u32) -> Result<()> {
        if dest >= self.n {
            return Err(BipError::BadRank {
                rank: dest,
                nranks: self.n,
            });
        }
        if tag >= self.cfg.tags {
            return Err(BipError::BadTag {
                tag,
                tags: self.cfg.tags,
            });
        }
        Ok(())
    }

    fn send_args(&mut self, req: u32) -> (u32, *const u8, usize) {
        match self.reqs.by_id(req).expect("queued send is live").op {
            Op::Send { tag, buf, len, .. } => (tag, buf, len),
            Op::Recv { .. } => unreachable!("send queue holds a receive"),
        }
    }

    fn finish_send(&mut self, req: u32, len: usize) {
        let e = self.reqs.by_id(req).expect("finishing a live send");
        if let Op::Send { dest, tag, .. } = e.op {
            e.state = State::Done(Completion {
                len,
                peer: dest,
                tag,
            });
        }
    }

    /// A receive got all it will get of a message of `total` bytes from `src`.
    fn finish_recv(&mut self, req: u32, src: Rank, total: usize) {
        let e = self.reqs.by_id(req).expect("finishing a live receive");
        if let Op::Recv { tag, cap, .. } = e.op {
            e.state = if total > cap {
                State::Failed(BipError::Truncated {
                    len: total,
                    capacity: cap,
                    from: src,
                })
            } else {
                State::Done(Completion {
                    len: total,
                    peer: src,
                    tag,
                })
            };
        }
        self.counters.messages_received += 1;
    }

    /// A request ends with an error.
    fn fail(&mut self, req: u32, err: BipError) {
        if let Some(e) = self.reqs.by_id(req) {
            e.state = State::Failed(err);
        }
    }

    /// Hands a completed request's result to the user and frees it.
    #[inline]
    fn take(&mut self, r: Request) -> Result<Option<Completion>> {
        let entry = self.reqs.get(r).ok_or(BipError::InvalidRequest)?;
        if matches!(entry.state, State::Active) {
            return Ok(None);
        }
        match std::mem::replace(&mut entry.state, State::Active) {
            State::Active => Ok(None),
            State::Done(c) => {
                self.reqs.free(r.idx);
                Ok(Some(c))
            }
            State::Failed(err) => {
                self.reqs.free(r.idx);
                Err(err)
            }
        }
    }
}
