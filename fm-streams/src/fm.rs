//! The FM endpoint: handler registry, the send side (streams, FM 1.x sends), and `extract`.

use crate::error::{FmError, Result};
use crate::stream::{Inbox, Need, Stream};
use crate::wire::{Bulk, Header, BULK, CONT, FIRST, MAX_HEADER};
use bip_core::{Bip, BipConfig, BipError, Event, Request};
use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult};
use nic_model::wait::Backoff;
use nic_model::{Device, Rank, RegionKey};
use std::collections::VecDeque;
use std::rc::Rc;

/// BIP tag of FM packets.
const FM_TAG: u32 = 0;
/// Rendezvous tokens of FM's own bulk segments carry this bit (the tokens of a layer above
/// that runs rendezvous through FM, [`Fm::export`] and [`Fm::pull`], must not).
pub const FM_TOKEN: u64 = 1 << 63;
/// With `FM_TOKEN`: the token of a bulk segment being read, `| source rank`.
const FM_READ: u64 = 1 << 62;
/// Pieces at least this long go in a region of the sender, read by BIP's rendezvous
/// (`FM_BULK_MIN` overrides; never below BIP's short-message limit).
pub const DEFAULT_BULK_MIN: usize = 32 * 1024;
/// Stack of each handler coroutine (`FM_STACK_BYTES` overrides).
const DEFAULT_STACK: usize = 256 * 1024;

/// An FM 2.x handler: reads its message from the stream.
pub type Handler = Rc<dyn Fn(&mut Stream<'_>)>;
/// An FM 1.x handler: gets the sender and the whole message, staged in one buffer.
pub type Handler1 = Rc<dyn Fn(Rank, &[u8])>;

type HandlerCoroutine = Coroutine<(), Need, (), DefaultStack>;

/// Counts kept by FM.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FmCounters {
    pub messages_sent: u64,
    pub messages_received: u64,
    pub packets_sent: u64,
    pub packets_received: u64,
    /// Bulk segments moved by single copy straight into a handler's buffer.
    pub bulk_direct: u64,
    /// Bulk segments staged first (the handler asked for less than the segment).
    pub bulk_staged: u64,
    /// Times a handler was descheduled waiting for data.
    pub suspensions: u64,
    /// Bytes handlers copied out of packets (FM 2.x) or out of staging (FM 1.x staging copy).
    pub bytes_copied: u64,
    /// Memory copies FM made: handlers' copies out of packets, FM 1.x staging, and short
    /// pieces copied into the packet being built on the send side.
    pub copies: u64,
    /// Bytes of short pieces copied into the packet being built (send side).
    pub send_bytes_copied: u64,
}

/// A message being sent (FM 2.x's `FM_stream` on the send side).
pub struct SendStream {
    dest: Rank,
    handler: u32,
    size: u64,
    sent: u64,
    fm1: bool,
    first_sent: bool,
    /// The packet being filled: header, then data.
    packet: Vec<u8>,
    /// Where the packet's data starts.
    data_at: usize,
}

/// What a bulk transfer in flight is for.
enum BulkPurpose {
    /// Straight into the suspended handler's buffer.
    Direct,
    /// Into `Active::staged`, then offered to the handler as data.
    Staged,
    /// Into the FM 1.x message's staging buffer, after what is staged already.
    Fm1,
    /// The handler is gone: receive and drop.
    Drain,
}

/// A message being received from one source. The coroutine is declared before the inbox it
/// points into, so it is dropped first.
struct Active {
    /// FM 2.x: the handler's coroutine, `None` once it returned (the rest is drained).
    co: Option<HandlerCoroutine>,
    /// FM 1.x: handler and the staging buffer of the whole message.
    fm1: Option<(Handler1, Vec<u8>)>,
    /// The bulk segment being read: what for, its length, whether it has landed.
    bulk: Option<(BulkPurpose, usize, bool)>,
    /// The region of the bulk segment announced and not read yet.
    bulk_key: Option<RegionKey>,
    staged: Vec<u8>,
    inbox: Box<Inbox>,
}

/// What extract must do after a packet's lending closure returns.
enum Action {
    None,
    /// Post a BIP receive for a bulk segment from `src`.
    Bulk {
        src: Rank,
        dst: *mut u8,
        len: usize,
        purpose: BulkPurpose,
    },
}

/// Receive-side state, apart from BIP so that BIP can lend a packet while it is updated.
struct Rx {
    /// Packets that arrived while a bulk transfer from their source was still in flight (seen
    /// incomplete); replayed in order once it is complete.
    stash: std::collections::VecDeque<(Rank, Vec<u8>)>,
    /// Bulk transfers in flight.
    bulk_pending: usize,
    handlers: Vec<Option<Handler>>,
    handlers1: Vec<Option<Handler1>>,
    active: Vec<Option<Active>>,
    stacks: Vec<DefaultStack>,
    stack_bytes: usize,
    counters: FmCounters,
    /// A bulk read that failed (its region was refused), reported by the next `extract`.
    failed: Option<BipError>,
}

/// An FM endpoint over BIP.
pub struct Fm<D: Device> {
    bip: Bip<D>,
    rx: Rx,
    /// Rendezvous events that are not FM's own, for the layer above ([`Fm::next_event`]).
    foreign: VecDeque<Event>,
    /// FM's bulk sends the receiver has read (their tokens), not yet seen by their sender.
    exported: Vec<u64>,
    next_token: u64,
    /// Packet buffers of ended streams, reused by the next ones.
    spare: Vec<Vec<u8>>,
    /// When an idle `extract` next checks that the peers are alive.
    next_liveness_check: std::time::Instant,
    idle_calls: u32,
    open: Vec<bool>,
    bulk_min: usize,
    packet_max: usize,
}

impl<D: Device> Fm<D> {
    /// Starts FM over a BIP endpoint on `dev`. BIP's credits are FM's: a sender never has
    /// more unconsumed packets at a receiver than the receiver granted it.
    pub fn new(dev: D) -> Result<Self> {
        let bip = Bip::new(dev, BipConfig::from_env())?;
        let n = bip.numnodes();
        let env = |k: &str, d: usize| {
            std::env::var(k)
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(d)
        };
        Ok(Fm {
            packet_max: bip.max_packet_message(),
            rx: Rx {
                stash: Default::default(),
                bulk_pending: 0,
                handlers: Vec::new(),
                handlers1: Vec::new(),
                active: (0..n).map(|_| None).collect(),
                stacks: Vec::new(),
                stack_bytes: env("FM_STACK_BYTES", DEFAULT_STACK),
                counters: FmCounters::default(),
                failed: None,
            },
            open: vec![false; n],
            foreign: VecDeque::new(),
            exported: Vec::new(),
            next_token: 0,
            spare: Vec::new(),
            next_liveness_check: std::time::Instant::now(),
            idle_calls: 0,
            bulk_min: env("FM_BULK_MIN", DEFAULT_BULK_MIN).max(bip.config().eager_max + 1),
            bip,
        })
    }

    pub fn rank(&self) -> Rank {
        self.bip.mynode()
    }

    pub fn nranks(&self) -> usize {
        self.bip.numnodes()
    }

    pub fn counters(&self) -> FmCounters {
        self.rx.counters
    }

    /// The smallest piece FM sends by its bulk path (a region the receiver reads) rather than
    /// in packets: `FM_BULK_MIN`, at least one byte above BIP's eager limit.
    pub fn bulk_min(&self) -> usize {
        self.bulk_min
    }

    /// The BIP endpoint underneath (for its counters).
    pub fn bip(&self) -> &Bip<D> {
        &self.bip
    }

    /// Exports a buffer for a layer above that runs BIP's rendezvous through FM (MPI's `fm`
    /// channel): [`Bip::export`]. `token` must not have FM's own bit (`FM_TOKEN`, bit 63); its
    /// [`Event::Exported`] comes out of [`Fm::next_event`].
    ///
    /// # Safety
    /// As for [`Bip::export`].
    pub unsafe fn export(
        &mut self,
        dest: Rank,
        buf: *const u8,
        len: usize,
        token: u64,
    ) -> Result<RegionKey> {
        debug_assert_eq!(token & FM_TOKEN, 0, "FM_TOKEN is FM's own");
        // SAFETY: the caller's contract is passed on.
        Ok(unsafe { self.bip.export(dest, buf, len, token)? })
    }

    /// Reads a peer's region for a layer above: [`Bip::pull`], its [`Event::Pulled`] out of
    /// [`Fm::next_event`].
    ///
    /// # Safety
    /// As for [`Bip::pull`].
    pub unsafe fn pull(
        &mut self,
        src: Rank,
        key: RegionKey,
        dst: *mut u8,
        len: usize,
        token: u64,
    ) -> Result<()> {
        debug_assert_eq!(token & FM_TOKEN, 0, "FM_TOKEN is FM's own");
        // SAFETY: the caller's contract is passed on.
        unsafe { self.bip.pull(src, key, dst, len, token)? };
        Ok(())
    }

    /// Withdraws a region exported with [`Fm::export`] that will not be read.
    pub fn revoke(&mut self, key: RegionKey) -> Result<()> {
        Ok(self.bip.revoke(key)?)
    }

    /// The next rendezvous event of the layer above (FM's own are handled inside).
    pub fn next_event(&mut self) -> Option<Event> {
        self.drain_events();
        self.foreign.pop_front()
    }

    /// Sorts BIP's rendezvous events: FM's bulk segments here, the rest for the layer above.
    #[inline]
    fn drain_events(&mut self) {
        while let Some(e) = self.bip.next_event() {
            match e {
                Event::Exported { token } if token & FM_TOKEN != 0 => self.exported.push(token),
                Event::Pulled { token, result } if token & FM_TOKEN != 0 => {
                    let src = (token & !(FM_TOKEN | FM_READ)) as usize;
                    if let Some((_, _, landed)) = self
                        .rx
                        .active
                        .get_mut(src)
                        .and_then(Option::as_mut)
                        .and_then(|a| a.bulk.as_mut())
                    {
                        *landed = true;
                    }
                    if let Err(e) = result {
                        self.rx.failed.get_or_insert(e);
                    }
                }
                other => self.foreign.push_back(other),
            }
        }
    }

    /// Finishes: waits until every packet sent has been delivered (BIP's finalize), then marks
    /// this process finished. Messages still arriving are not handled any more.
    pub fn finalize(self) -> Result<()> {
        let Fm { bip, rx, .. } = self;
        drop(rx);
        bip.finalize()?;
        Ok(())
    }

    /// Registers an FM 2.x handler under `id` (the same id in every process).
    pub fn set_handler(&mut self, id: u32, h: impl Fn(&mut Stream<'_>) + 'static) -> Result<()> {
        slot(&mut self.rx.handlers, id)?.replace(Rc::new(h));
        Ok(())
    }

    /// Registers an FM 1.x handler under `id`.
    pub fn set_handler1(&mut self, id: u32, h: impl Fn(Rank, &[u8]) + 'static) -> Result<()> {
        slot(&mut self.rx.handlers1, id)?.replace(Rc::new(h));
        Ok(())
    }

    // ---- FM 2.x send side ------------------------------------------------------------

    /// Opens a message of `size` bytes to `dest`, for handler `handler` there.
    pub fn begin_message(&mut self, dest: Rank, size: u64, handler: u32) -> Result<SendStream> {
        self.begin(dest, size, handler, false)
    }

    fn begin(&mut self, dest: Rank, size: u64, handler: u32, fm1: bool) -> Result<SendStream> {
        if dest >= self.nranks() {
            return Err(bip_core::BipError::BadRank {
                rank: dest,
                nranks: self.nranks(),
            }
            .into());
        }
        if handler >= 1 << 24 {
            return Err(FmError::BadHandlerId(handler));
        }
        if self.open[dest] {
            return Err(FmError::StreamOpen { dest });
        }
        self.open[dest] = true;
        let mut packet = self
            .spare
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(self.packet_max));
        packet.clear();
        packet.resize(MAX_HEADER, 0);
        let n = Header {
            kind: FIRST,
            fm1,
            with_bulk: false,
            handler,
            size,
        }
        .emit(&mut packet);
        packet.truncate(n);
        Ok(SendStream {
            dest,
            handler,
            size,
            sent: 0,
            fm1,
            first_sent: false,
            data_at: n,
            packet,
        })
    }

    /// Appends `piece` to the message (any size, any number of times).
    pub fn send_piece(&mut self, s: &mut SendStream, piece: &[u8]) -> Result<()> {
        if s.sent + piece.len() as u64 > s.size {
            return Err(FmError::SizeMismatch {
                dest: s.dest,
                declared: s.size,
                sent: s.sent + piece.len() as u64,
            });
        }
        s.sent += piece.len() as u64;
        if piece.len() >= self.bulk_min {
            // Long piece: export it and announce it in the packet stream (in the message's
            // first packet if nothing precedes it); the receiver reads it in one copy.
            let token = FM_TOKEN | self.next_token;
            self.next_token = (self.next_token + 1) & !(FM_TOKEN | FM_READ);
            // SAFETY: `piece` outlives the region: we wait below until the receiver has read
            // it (its FIN withdraws the region) before returning.
            let key = unsafe {
                self.bip
                    .export(s.dest, piece.as_ptr(), piece.len(), token)?
            };
            self.send_bulk_descriptor(
                s,
                Bulk {
                    len: piece.len() as u64,
                    key,
                },
            )?;
            return self.wait_exported(token);
        }
        let mut rest = piece;
        while !rest.is_empty() {
            let room = self.packet_max - s.packet.len();
            if room == 0 {
                self.flush(s)?;
                continue;
            }
            let n = room.min(rest.len());
            s.packet.extend_from_slice(&rest[..n]);
            self.rx.counters.copies += 1;
            self.rx.counters.send_bytes_copied += n as u64;
            rest = &rest[n..];
        }
        Ok(())
    }

    /// Ends the message: sends what is buffered.
    ///
    /// Ending a message before all its declared bytes were sent is an error
    /// (`SizeMismatch`), but the message is still completed with zero bytes, so that the
    /// receiver's handler finishes and the route stays usable.
    pub fn end_message(&mut self, mut s: SendStream) -> Result<()> {
        if s.sent != s.size {
            let (dest, declared, sent) = (s.dest, s.size, s.sent);
            let zeros = vec![0u8; (s.size - s.sent).min(1 << 20) as usize];
            while s.sent < s.size {
                let n = (s.size - s.sent).min(zeros.len() as u64) as usize;
                self.send_piece(&mut s, &zeros[..n])?;
            }
            self.open[dest] = false;
            self.end_message_inner(s)?;
            return Err(FmError::SizeMismatch {
                dest,
                declared,
                sent,
            });
        }
        self.open[s.dest] = false;
        self.end_message_inner(s)
    }

    fn end_message_inner(&mut self, mut s: SendStream) -> Result<()> {
        if !s.first_sent || s.packet.len() > s.data_at {
            self.send_packet(s.dest, &s.packet)?;
        }
        self.rx.counters.messages_sent += 1;
        self.spare.push(std::mem::take(&mut s.packet));
        Ok(())
    }

    /// Sends the packet being filled (the message's first packet even if it holds no data).
    fn flush(&mut self, s: &mut SendStream) -> Result<()> {
        if s.first_sent && s.packet.len() == s.data_at {
            return Ok(());
        }
        self.send_packet(s.dest, &s.packet)?;
        s.first_sent = true;
        s.packet.clear();
        s.packet.resize(MAX_HEADER, 0);
        let n = Header {
            kind: CONT,
            fm1: s.fm1,
            with_bulk: false,
            handler: s.handler,
            size: 0,
        }
        .emit(&mut s.packet);
        s.packet.truncate(n);
        s.data_at = n;
        Ok(())
    }

    /// Announces a bulk segment: in the message's first packet if that has no data yet
    /// (`WITH_BULK`), else in a BULK packet after flushing what is buffered.
    fn send_bulk_descriptor(&mut self, s: &mut SendStream, bulk: Bulk) -> Result<()> {
        if !s.first_sent && s.packet.len() == s.data_at {
            let mut first = [0u8; MAX_HEADER + Bulk::LEN];
            let n = Header {
                kind: FIRST,
                fm1: s.fm1,
                with_bulk: true,
                handler: s.handler,
                size: s.size,
            }
            .emit(&mut first);
            first[n..n + Bulk::LEN].copy_from_slice(&bulk.emit());
            self.send_packet(s.dest, &first[..n + Bulk::LEN])?;
            s.first_sent = true;
            s.packet.clear();
            s.packet.resize(MAX_HEADER, 0);
            let n = Header {
                kind: CONT,
                fm1: s.fm1,
                with_bulk: false,
                handler: s.handler,
                size: 0,
            }
            .emit(&mut s.packet);
            s.packet.truncate(n);
            s.data_at = n;
            return Ok(());
        }
        self.flush(s)?;
        let mut p = [0u8; MAX_HEADER + Bulk::LEN];
        let n = Header {
            kind: BULK,
            fm1: s.fm1,
            with_bulk: false,
            handler: s.handler,
            size: 0,
        }
        .emit(&mut p);
        p[n..n + Bulk::LEN].copy_from_slice(&bulk.emit());
        self.send_packet(s.dest, &p[..n + Bulk::LEN])
    }

    /// Waits until the receiver has read bulk segment `token`, running handlers meanwhile.
    fn wait_exported(&mut self, token: u64) -> Result<()> {
        self.extract_until(|fm| {
            fm.drain_events();
            let at = fm.exported.iter().position(|&t| t == token);
            Ok(at.map(|i| fm.exported.swap_remove(i)).is_some())
        })
    }

    /// FM's one waiting loop: extracts (running handlers, so that two processes waiting on
    /// each other cannot deadlock) until `done` says yes, backing off while nothing arrives
    /// and checking now and then that the peers are alive.
    fn extract_until(&mut self, mut done: impl FnMut(&mut Self) -> Result<bool>) -> Result<()> {
        let mut backoff = Backoff::new();
        while !done(self)? {
            if self.extract(usize::MAX)? > 0 {
                backoff.reset();
            } else if backoff.snooze() {
                self.bip.check_peers()?;
            }
        }
        Ok(())
    }

    /// Sends one FM packet; while BIP cannot take it (no credit, full route), keeps
    /// extracting, so that two processes flooding each other cannot deadlock.
    fn send_packet(&mut self, dest: Rank, p: &[u8]) -> Result<()> {
        self.rx.counters.packets_sent += 1;
        if self.bip.send_now(dest, FM_TAG, p)? {
            return Ok(());
        }
        // SAFETY: `p` outlives the request, which completes before we return.
        let r = unsafe { self.bip.isend(dest, FM_TAG, p.as_ptr(), p.len())? };
        self.complete(r)
    }

    /// Waits for a BIP send, running handlers meanwhile.
    fn complete(&mut self, r: Request) -> Result<()> {
        if self.bip.test_done(r)?.is_some() {
            return Ok(());
        }
        self.extract_until(|fm| Ok(fm.bip.test(r)?.is_some()))
    }

    // ---- FM 1.x send side ------------------------------------------------------------

    /// FM 1.x: sends `buf` as one message for FM 1.x handler `handler` at `dest`.
    pub fn send1(&mut self, dest: Rank, handler: u32, buf: &[u8]) -> Result<()> {
        let mut s = self.begin(dest, buf.len() as u64, handler, true)?;
        self.send_piece(&mut s, buf)?;
        self.end_message(s)
    }

    /// FM 1.x: sends four words.
    pub fn send4(&mut self, dest: Rank, handler: u32, words: [u32; 4]) -> Result<()> {
        let mut b = [0u8; 16];
        for (i, w) in words.iter().enumerate() {
            b[i * 4..i * 4 + 4].copy_from_slice(&w.to_le_bytes());
        }
        self.send1(dest, handler, &b)
    }

    // ---- Receive side ----------------------------------------------------------------

    /// Processes arrived packets, running their handlers, until about `max_bytes` of packets
    /// have been processed (rounded up to a whole packet) or none is left: the receiver's
    /// flow control. Returns the bytes processed. Never blocks.
    pub fn extract(&mut self, max_bytes: usize) -> Result<usize> {
        let mut done = if self.rx.bulk_pending > 0 {
            self.poll_bulk()?
        } else {
            0
        };
        while done < max_bytes {
            if self.rx.bulk_pending > 0 {
                done += self.poll_bulk()?;
            }
            if let Some(e) = self.rx.failed.take() {
                return Err(e.into());
            }
            if !self.rx.stash.is_empty() {
                done += self.replay_stash()?;
            }
            let rx = &mut self.rx;
            let Some(res) = self.bip.lend(FM_TAG, |src, pkt| rx.on_packet(src, pkt))? else {
                break;
            };
            let (bytes, action) = res?;
            done += bytes;
            done += self.act(action)?;
        }
        if done == 0 {
            // Nothing to do: a caller looping on extract must still learn of a dead peer.
            // Look at most every 100 ms, and read the clock only every 256 idle calls.
            self.idle_calls = self.idle_calls.wrapping_add(1);
            if !self.idle_calls.is_multiple_of(256) {
                return Ok(0);
            }
            let now = std::time::Instant::now();
            if now >= self.next_liveness_check {
                self.next_liveness_check = now + std::time::Duration::from_millis(100);
                self.bip.check_peers()?;
            }
        }
        Ok(done)
    }

    /// Processes stashed packets whose source is free again, in order.
    fn replay_stash(&mut self) -> Result<usize> {
        let mut done = 0;
        while let Some((src, _)) = self.rx.stash.front() {
            if self.rx.busy(*src) {
                break;
            }
            let (src, pkt) = self.rx.stash.pop_front().unwrap();
            let (bytes, action) = self.rx.on_packet_in_order(src, &pkt)?;
            done += bytes;
            done += self.act(action)?;
        }
        Ok(done)
    }

    /// Posts what a handler's suspension asked for; returns the bulk bytes that landed
    /// meanwhile.
    #[inline]
    fn act(&mut self, action: Action) -> Result<usize> {
        match action {
            Action::None => Ok(0),
            bulk => self.post_bulk(bulk),
        }
    }

    #[cold]
    fn post_bulk(&mut self, action: Action) -> Result<usize> {
        let Action::Bulk {
            src,
            dst,
            len,
            purpose,
        } = action
        else {
            return Ok(0);
        };
        tracing::debug!(target: "fm", src, len, "bulk segment: reading the sender's region");
        let a = self.rx.active[src]
            .as_mut()
            .expect("bulk for an active message");
        let key = a.bulk_key.take().ok_or(FmError::Protocol {
            src,
            why: "bulk read without an announced region",
        })?;
        a.bulk = Some((purpose, len, false));
        self.rx.bulk_pending += 1;
        // SAFETY: `dst` is valid for `len` bytes until the read ends: a suspended handler's
        // buffer (it stays suspended until then), or a staging buffer owned by the active
        // message, which is not touched or dropped before then.
        unsafe {
            self.bip
                .pull(src, key, dst, len, FM_TOKEN | FM_READ | src as u64)?
        };
        self.poll_bulk()
    }

    /// Completes bulk reads that have landed and resumes their handlers.
    fn poll_bulk(&mut self) -> Result<usize> {
        self.drain_events();
        let mut done = 0;
        for src in 0..self.rx.active.len() {
            let Some(a) = self.rx.active[src].as_mut() else {
                continue;
            };
            let Some((_, len, true)) = a.bulk.as_ref().map(|(p, l, d)| (p, *l, *d)) else {
                continue;
            };
            done += len;
            self.rx.bulk_pending -= 1;
            let (purpose, _, _) = self.rx.active[src].as_mut().unwrap().bulk.take().unwrap();
            let action = self.rx.bulk_landed(src, purpose, len)?;
            done += self.act(action)?;
        }
        Ok(done)
    }
}

fn slot<T>(v: &mut Vec<Option<T>>, id: u32) -> Result<&mut Option<T>> {
    if id >= 1 << 24 {
        return Err(FmError::BadHandlerId(id));
    }
    if v.len() <= id as usize {
        v.resize_with(id as usize + 1, || None);
    }
    Ok(&mut v[id as usize])
}

impl Rx {
    /// One FM packet, lent in place by BIP: returns its size and what to do next.
    fn on_packet(&mut self, src: Rank, pkt: &[u8]) -> Result<(usize, Action)> {
        if self.busy(src) || (!self.stash.is_empty() && self.stash.iter().any(|(s, _)| *s == src)) {
            // A bulk transfer from this source is in flight: what the sender sent after it
            // (it moves on once the data has left, before we have seen it land) must wait,
            // in order, until it has.
            self.stash.push_back((src, pkt.to_vec()));
            return Ok((0, Action::None));
        }
        self.on_packet_in_order(src, pkt)
    }

    /// A packet whose turn it is (fresh, or replayed from the stash in order).
    fn on_packet_in_order(&mut self, src: Rank, pkt: &[u8]) -> Result<(usize, Action)> {
        let (h, off) = Header::parse(pkt).ok_or(FmError::Protocol {
            src,
            why: "bad header",
        })?;
        let data = &pkt[off..];
        self.counters.packets_received += 1;
        match h.kind {
            FIRST => {
                if self.active[src].is_some() {
                    return Err(FmError::Protocol {
                        src,
                        why: "a message began before the previous one ended",
                    });
                }
                if h.with_bulk {
                    // A message that begins with a bulk piece: its first packet announces it.
                    self.start(src, h)?;
                    let bulk = Bulk::parse(data).ok_or(FmError::Protocol {
                        src,
                        why: "bad bulk descriptor",
                    })?;
                    return Ok((pkt.len(), self.announce_bulk(src, bulk)));
                }
                if data.len() as u64 == h.size {
                    // The whole message is in this packet: no need for a coroutine, or (FM 1.x)
                    // for staging; the handler reads the packet where it lies.
                    self.run_whole(src, h, data)?;
                    return Ok((pkt.len(), Action::None));
                }
                self.start(src, h)?;
            }
            CONT => {
                if self.active[src].is_none() {
                    return Err(FmError::Protocol {
                        src,
                        why: "continuation without a message",
                    });
                }
            }
            BULK => {
                if self.active[src].is_none() {
                    return Err(FmError::Protocol {
                        src,
                        why: "bulk without a message",
                    });
                }
                let bulk = Bulk::parse(data).ok_or(FmError::Protocol {
                    src,
                    why: "bad bulk descriptor",
                })?;
                return Ok((pkt.len(), self.announce_bulk(src, bulk)));
            }
            _ => unreachable!("parse accepts only known kinds"),
        }
        let action = self.feed(src, data);
        Ok((pkt.len(), action))
    }

    /// Runs the handler of a message that arrived whole in one packet, directly.
    fn run_whole(&mut self, src: Rank, h: Header, data: &[u8]) -> Result<()> {
        if h.fm1 {
            let Some(Some(handler)) = self.handlers1.get(h.handler as usize) else {
                return Err(FmError::UnknownHandler { src, id: h.handler });
            };
            handler(src, data);
            self.counters.messages_received += 1;
            return Ok(());
        }
        let Some(Some(handler)) = self.handlers.get(h.handler as usize) else {
            return Err(FmError::UnknownHandler { src, id: h.handler });
        };
        let mut inbox = Inbox::new(src, h.size);
        inbox.set_chunk(data);
        let mut s = Stream {
            inbox: &mut inbox,
            yielder: None,
        };
        handler(&mut s);
        self.counters.messages_received += 1;
        self.counters.bytes_copied += inbox.copied;
        self.counters.copies += inbox.copies;
        Ok(())
    }

    /// True while `src`'s current message still has a bulk transfer in flight.
    fn busy(&self, src: Rank) -> bool {
        self.active[src].as_ref().is_some_and(|a| a.bulk.is_some())
    }

    /// The first packet of a message: sets up its handler.
    fn start(&mut self, src: Rank, h: Header) -> Result<()> {
        tracing::trace!(target: "fm", src, handler = h.handler, size = h.size, fm1 = h.fm1, "handler starts on a coroutine");
        let inbox = Box::new(Inbox::new(src, h.size));
        if h.fm1 {
            let handler = self
                .handlers1
                .get(h.handler as usize)
                .cloned()
                .flatten()
                .ok_or(FmError::UnknownHandler { src, id: h.handler })?;
            let buf = Vec::with_capacity(h.size as usize);
            self.active[src] = Some(Active {
                inbox,
                co: None,
                fm1: Some((handler, buf)),
                bulk: None,
                bulk_key: None,
                staged: Vec::new(),
            });
            return Ok(());
        }
        let handler = self
            .handlers
            .get(h.handler as usize)
            .cloned()
            .flatten()
            .ok_or(FmError::UnknownHandler { src, id: h.handler })?;
        let stack = self
            .stacks
            .pop()
            .map_or_else(|| DefaultStack::new(self.stack_bytes), Ok)
            .map_err(|_| FmError::Protocol {
                src,
                why: "cannot allocate a handler stack",
            })?;
        let inbox_ptr: *mut Inbox = Box::as_ref(&inbox) as *const Inbox as *mut Inbox;
        let co = Coroutine::with_stack(stack, move |y, ()| {
            let mut s = Stream {
                inbox: inbox_ptr,
                yielder: Some(y),
            };
            handler(&mut s);
        });
        self.active[src] = Some(Active {
            inbox,
            co: Some(co),
            fm1: None,
            bulk: None,
            bulk_key: None,
            staged: Vec::new(),
        });
        Ok(())
    }

    /// Offers `data` (part of `src`'s current message) to its handler.
    fn feed(&mut self, src: Rank, data: &[u8]) -> Action {
        let a = self.active[src].as_mut().expect("feed an active message");
        if let Some((_, buf)) = a.fm1.as_mut() {
            // FM 1.x: stage the whole message before the handler runs.
            buf.extend_from_slice(data);
            self.counters.bytes_copied += data.len() as u64;
            self.counters.copies += 1;
            a.inbox.remaining -= (data.len() as u64).min(a.inbox.remaining);
            return self.maybe_finish(src);
        }
        a.inbox.set_chunk(data);
        let action = self.resume(src);
        if let Some(a) = self.active[src].as_mut() {
            // Whatever the handler did not take of this chunk is dropped with the packet.
            a.inbox.remaining -= (a.inbox.unread() as u64).min(a.inbox.remaining);
            a.inbox.clear_chunk();
        }
        let finished = self.active[src]
            .as_ref()
            .is_some_and(|a| a.co.is_none() && a.inbox.remaining == 0 && a.bulk.is_none());
        if finished {
            self.finish(src);
        }
        action
    }

    /// Runs `src`'s handler until it suspends or returns.
    fn resume(&mut self, src: Rank) -> Action {
        let a = self.active[src].as_mut().expect("resume an active message");
        let Some(co) = a.co.as_mut() else {
            return Action::None;
        };
        match co.resume(()) {
            CoroutineResult::Yield(Need::Data) => Action::None,
            CoroutineResult::Yield(Need::BulkInto { dst, len }) => Action::Bulk {
                src,
                dst,
                len,
                purpose: BulkPurpose::Direct,
            },
            CoroutineResult::Yield(Need::BulkStaged) => {
                let len = a.inbox.bulk_announced as usize;
                a.staged.clear();
                a.staged.resize(len, 0);
                Action::Bulk {
                    src,
                    dst: a.staged.as_mut_ptr(),
                    len,
                    purpose: BulkPurpose::Staged,
                }
            }
            CoroutineResult::Return(()) => {
                let co = a.co.take().expect("just resumed");
                self.stacks.push(co.into_stack());
                if a.inbox.bulk_announced > 0 && a.bulk.is_none() {
                    // The handler left a bulk segment unread: receive and drop it.
                    return self.drain_bulk(src);
                }
                Action::None
            }
        }
    }

    /// A bulk segment was announced for `src`'s message.
    fn announce_bulk(&mut self, src: Rank, bulk: Bulk) -> Action {
        let len = bulk.len as usize;
        let a = self.active[src].as_mut().expect("checked by the caller");
        a.inbox.bulk_announced = bulk.len;
        a.bulk_key = Some(bulk.key);
        if let Some((_, buf)) = a.fm1.as_mut() {
            let at = buf.len();
            buf.resize(at + len, 0);
            // SAFETY: `at + len <= buf.len()`; the buffer is not touched until the transfer
            // completes (poll_bulk), and not reallocated meanwhile.
            let dst = unsafe { buf.as_mut_ptr().add(at) };
            return Action::Bulk {
                src,
                dst,
                len,
                purpose: BulkPurpose::Fm1,
            };
        }
        if a.co.is_none() {
            return self.drain_bulk(src);
        }
        // The handler, if it is waiting for data, now sees the segment and says where to put it.
        let action = self.resume(src);
        if let Action::None = action {
            if self.active[src]
                .as_ref()
                .is_some_and(|a| a.co.is_none() && a.inbox.remaining == 0)
            {
                self.finish(src);
            }
        }
        action
    }

    fn drain_bulk(&mut self, src: Rank) -> Action {
        let a = self.active[src].as_mut().expect("active");
        let len = a.inbox.bulk_announced as usize;
        a.staged.clear();
        a.staged.resize(len, 0);
        Action::Bulk {
            src,
            dst: a.staged.as_mut_ptr(),
            len,
            purpose: BulkPurpose::Drain,
        }
    }

    /// A bulk transfer for `src` completed.
    fn bulk_landed(&mut self, src: Rank, purpose: BulkPurpose, len: usize) -> Result<Action> {
        let action = match purpose {
            BulkPurpose::Direct => {
                self.counters.bulk_direct += 1;
                self.resume(src)
            }
            BulkPurpose::Staged => {
                self.counters.bulk_staged += 1;
                let a = self.active[src].as_mut().unwrap();
                a.inbox.bulk_announced = 0;
                let staged = std::mem::take(&mut a.staged);
                let action = self.feed(src, &staged);
                if let Some(a) = self.active[src].as_mut() {
                    a.staged = staged;
                }
                return Ok(action);
            }
            BulkPurpose::Fm1 => {
                self.counters.bulk_direct += 1;
                let a = self.active[src].as_mut().unwrap();
                a.inbox.remaining -= (len as u64).min(a.inbox.remaining);
                return Ok(self.maybe_finish(src));
            }
            BulkPurpose::Drain => {
                let a = self.active[src].as_mut().unwrap();
                a.inbox.bulk_announced = 0;
                a.inbox.remaining -= (len as u64).min(a.inbox.remaining);
                Action::None
            }
        };
        if self.active[src]
            .as_ref()
            .is_some_and(|a| a.co.is_none() && a.inbox.remaining == 0 && a.bulk.is_none())
        {
            self.finish(src);
        }
        Ok(action)
    }

    /// FM 1.x: runs the handler once the whole message is staged.
    fn maybe_finish(&mut self, src: Rank) -> Action {
        let a = self.active[src].as_mut().unwrap();
        if a.inbox.remaining > 0 {
            return Action::None;
        }
        let (handler, buf) = a.fm1.take().expect("an FM 1.x message");
        self.active[src] = None;
        self.counters.messages_received += 1;
        handler(src, &buf);
        Action::None
    }

    /// Retires `src`'s finished message.
    fn finish(&mut self, src: Rank) {
        if let Some(a) = self.active[src].take() {
            self.counters.messages_received += 1;
            self.counters.suspensions += a.inbox.suspensions;
            self.counters.bytes_copied += a.inbox.copied;
            self.counters.copies += a.inbox.copies;
        }
    }
}

impl Drop for Rx {
    fn drop(&mut self) {
        // A handler still suspended mid-message (the endpoint is going away) is not unwound:
        // its frames may be C code, which must not be unwound through. Its stack is leaked.
        for a in self.active.iter_mut().filter_map(Option::as_mut) {
            if let Some(co) = a.co.take() {
                if co.started() && !co.done() {
                    std::mem::forget(co);
                }
            }
        }
    }
}
