//! The `bip` channel: the ADI straight over BIP, as BIP-MPI was built.
//!
//! - Control messages travel on BIP queue 0. One that fits a packet is gathered (envelope, then
//!   the user's data) straight into the NIC's packet buffer ([`Bip::send_now_gather`]) and read
//!   where it lies on arrival ([`Bip::lend`]), so short data is copied exactly twice: into the
//!   packet buffer and out of it into the landing. A longer one (only when `MPI_EAGER_MAX`
//!   raises the eager limit past a packet), and every one over an unreliable device (where
//!   BIP's link protocol must see each packet), is staged into one buffer and sent with `isend`.
//! - Rendezvous data uses a BIP queue of its own per transfer, and BIP's long-message protocol
//!   moves it single copy from user buffer to user buffer. Normally the *sender* picks the
//!   queue (early send): each sender owns a range of every receiver's queues, starts its `isend`
//!   on a free one together with the RTS, and BIP parks the transfer (its own RTS) until the
//!   receiver, once a receive matches, posts the user's buffer on that queue; no CTS round trip.
//!   When a sender's range is used up (or the job is too large to give every sender one) the
//!   receiver picks a queue from a small shared pool and sends its number in the CTS.
//!
//! Queues: 0 control; `1..=CTS_TAGS` receiver-picked; then `per_sender` queues for each rank.

use super::{deliver_whole, Channel, ChannelCounters, ChannelError, CopyCount, Cts, DataDone, Result, Sink};
use crate::envelope::{Envelope, ENVELOPE_LEN};
use bip_core::{Bip, BipConfig, BipError, Request};
use nic_model::{AnyNic, Device};

/// BIP queue of control messages.
const CTRL_TAG: u32 = 0;
/// Queues the receiver hands out in CTSs (`1..=CTS_TAGS`).
const CTS_TAGS: u32 = 64;

/// A rendezvous receive in flight.
struct DataRecv {
    bip: Request,
    /// The ADI's receive.
    rreq: u32,
    /// The receiver-picked queue to free when done (none for an early send's queue).
    queue: Option<u32>,
}

/// A rendezvous send in flight.
struct DataSend {
    bip: Request,
    /// The ADI's send (wire id).
    sreq: u32,
    /// The early-send slot (destination, slot) to free when done.
    slot: Option<(usize, u32)>,
}

/// A BIP endpoint used as an MPI channel.
pub struct BipChannel {
    bip: Bip<AnyNic>,
    eager_max: usize,
    /// The largest control message gathered straight into one packet (envelope included):
    /// what fits a packet natively; under a timing profile, what BIP itself would still send
    /// as one packet (longer messages it pipelines in several, as the modeled NIC wants).
    gather_max: usize,
    /// The device is reliable (BIP runs no link protocol): only then does BIP send a packet
    /// at once (`send_now_gather`); over a faulty device every control message is staged.
    reliable: bool,
    /// BIP queues free for rendezvous data.
    free_tags: Vec<u32>,
    /// Rendezvous receives in flight.
    recvs: Vec<DataRecv>,
    /// Rendezvous sends in flight.
    sends: Vec<DataSend>,
    /// Early sends of cancelled messages being taken and dropped.
    drops: Vec<Request>,
    /// Early-send queues of each rank at each receiver.
    per_sender: u32,
    /// Free early-send slots toward each destination.
    early_free: Vec<Vec<u32>>,
    /// Multi-packet control messages in flight, with their staging buffers.
    staged: Vec<(Request, Vec<u8>)>,
    spare: Vec<Vec<u8>>,
    /// The channel's own copies (payloads out of packets into landings, staged messages).
    copied: CopyCount,
}

impl BipChannel {
    /// Opens BIP over `nic`. Unless `BIP_EAGER_MAX` says otherwise, BIP's short-message limit is
    /// raised to what one packet carries, so that control messages never take BIP's own
    /// rendezvous.
    pub fn new(nic: AnyNic, cfg: Option<BipConfig>) -> Result<Self> {
        let caps = nic.capabilities();
        let mtu = caps.mtu;
        let mut cfg = cfg.unwrap_or_else(BipConfig::from_env);
        if std::env::var_os("BIP_EAGER_MAX").is_none() {
            cfg.eager_max = cfg.eager_max.max(mtu);
        }
        let tags = cfg.tags;
        let reliable = caps.reliable && !cfg.force_link;
        let n = nic.nranks();
        let sizer = bip_core::PacketSizer::for_profile(nic.profile());
        let bip = Bip::new(nic, cfg)?;
        let one_packet = bip.max_packet_message();
        let mut gather_max = one_packet;
        while gather_max > 0 && sizer.packet_size(gather_max, one_packet) < gather_max {
            gather_max = gather_max.saturating_sub(64);
        }
        let cts_tags = CTS_TAGS.min(tags.saturating_sub(1));
        let per_sender = (tags - 1 - cts_tags) / n as u32;
        Ok(BipChannel {
            eager_max: one_packet.saturating_sub(ENVELOPE_LEN),
            gather_max,
            reliable,
            free_tags: (1..=cts_tags).rev().collect(),
            recvs: Vec::new(),
            sends: Vec::new(),
            drops: Vec::new(),
            per_sender,
            early_free: (0..n).map(|_| (0..per_sender).rev().collect()).collect(),
            staged: Vec::new(),
            spare: Vec::new(),
            copied: CopyCount::default(),
            bip,
        })
    }

    /// Sets the eager limit (capped by what BIP sends without its own rendezvous). The default,
    /// one packet, is also the measured best: with `MPI_EAGER_MAX=1024` against the default,
    /// alternating three times, 2-8 KiB messages took 0.73-1.94 us one-way by rendezvous
    /// against 0.41-1.71 us eager.
    pub fn with_eager_max(mut self, max: usize) -> Self {
        self.eager_max = max.min(self.bip.config().eager_max.saturating_sub(ENVELOPE_LEN));
        self
    }

    /// The BIP endpoint (for counters).
    pub fn bip(&self) -> &Bip<AnyNic> {
        &self.bip
    }

    /// The first early-send queue of `sender` (at every receiver).
    fn early_base(&self, sender: usize) -> u32 {
        1 + CTS_TAGS + sender as u32 * self.per_sender
    }

    /// Reaps finished data transfers and staged sends; true if any finished.
    fn reap(&mut self, sink: &mut dyn Sink) -> Result<bool> {
        let bip = &mut self.bip;
        let (free_tags, early_free, spare) = (&mut self.free_tags, &mut self.early_free, &mut self.spare);
        let mut any = reap_list(&mut self.recvs, |d| finished(bip.test_done(d.bip)), |d| {
            free_tags.extend(d.queue);
            sink.data_done(DataDone::Recv(d.rreq));
        })?;
        any |= reap_list(&mut self.sends, |d| Ok(bip.test_done(d.bip)?.is_some()), |d| {
            if let Some((dest, slot)) = d.slot {
                early_free[dest].push(slot);
            }
            sink.data_done(DataDone::Send(d.sreq));
        })?;
        any |= reap_list(&mut self.staged, |(r, _)| Ok(bip.test_done(*r)?.is_some()), |(_, buf)| spare.push(buf))?;
        any |= reap_list(&mut self.drops, |r| finished(bip.test_done(*r)), drop)?;
        Ok(any)
    }

    /// Transfers or staged sends still in flight.
    fn in_flight(&self) -> bool {
        !(self.recvs.is_empty() && self.sends.is_empty() && self.staged.is_empty() && self.drops.is_empty())
    }
}

/// Removes the entries of `list` that `is_done` reports finished, handing each to `done`;
/// true if there were any.
fn reap_list<T>(list: &mut Vec<T>, mut is_done: impl FnMut(&T) -> Result<bool>, mut done: impl FnMut(T)) -> Result<bool> {
    let mut any = false;
    let mut i = 0;
    while i < list.len() {
        if is_done(&list[i])? {
            done(list.swap_remove(i));
            any = true;
        } else {
            i += 1;
        }
    }
    Ok(any)
}

/// Whether a rendezvous receive is finished: a truncated one is (the ADI knows the lengths and
/// reports the truncation itself).
fn finished(r: bip_core::Result<Option<bip_core::Completion>>) -> Result<bool> {
    match r {
        Ok(c) => Ok(c.is_some()),
        Err(BipError::Truncated { .. }) => Ok(true),
        Err(e) => Err(e.into()),
    }
}

impl Channel for BipChannel {
    fn name(&self) -> &'static str {
        "bip"
    }

    fn rank(&self) -> usize {
        self.bip.mynode()
    }

    fn size(&self) -> usize {
        self.bip.numnodes()
    }

    fn eager_max(&self) -> usize {
        self.eager_max
    }

    #[inline]
    fn send_control(&mut self, dest: usize, env: &Envelope, payload: &[u8], _sink: &mut dyn Sink) -> Result<bool> {
        let head = env.emit();
        if self.reliable && ENVELOPE_LEN + payload.len() <= self.gather_max {
            return Ok(self.bip.send_now_gather(dest, CTRL_TAG, &head, payload)?);
        }
        let mut buf = self.spare.pop().unwrap_or_default();
        buf.clear();
        buf.extend_from_slice(&head);
        buf.extend_from_slice(payload);
        self.copied.add(payload.len());
        // SAFETY: the buffer's heap block is kept in `staged` (moving the Vec does not move
        // it) until BIP reports the request complete.
        let r = unsafe { self.bip.isend(dest, CTRL_TAG, buf.as_ptr(), buf.len())? };
        self.staged.push((r, buf));
        Ok(true)
    }

    fn poll(&mut self, sink: &mut dyn Sink) -> Result<bool> {
        // One message per call: callers loop, and a second look that finds nothing would cost
        // a whole sweep of the routes on every arrival.
        let mut any = match self.bip.lend(CTRL_TAG, |src, msg| deliver_whole(sink, src, msg))? {
            Some(r) => {
                self.copied.add(r?);
                true
            }
            None => false,
        };
        if self.in_flight() {
            any |= self.reap(sink)?;
        }
        Ok(any)
    }

    unsafe fn post_data_recv(&mut self, _src: usize, rreq: u32, buf: *mut u8, len: usize) -> Result<Option<u32>> {
        let Some(tag) = self.free_tags.pop() else { return Ok(None) };
        // SAFETY: the caller keeps `buf` valid for `len` bytes until `DataDone::Recv(rreq)`,
        // which `reap` delivers only after BIP completed the request.
        let r = unsafe { self.bip.irecv(tag, buf, len)? };
        self.recvs.push(DataRecv { bip: r, rreq, queue: Some(tag) });
        Ok(Some(tag))
    }

    unsafe fn start_data_send(&mut self, dest: usize, cts: Cts, buf: *const u8, len: usize, _sink: &mut dyn Sink) -> Result<()> {
        // SAFETY: the caller keeps `buf` valid until `DataDone::Send(cts.sreq)`, delivered by
        // `reap` after BIP completed the request.
        let r = unsafe { self.bip.isend(dest, cts.ticket, buf, len)? };
        self.sends.push(DataSend { bip: r, sreq: cts.sreq, slot: None });
        Ok(())
    }

    unsafe fn start_early_send(&mut self, dest: usize, sreq: u32, buf: *const u8, len: usize) -> Result<Option<u32>> {
        let Some(slot) = self.early_free[dest].pop() else { return Ok(None) };
        let tag = self.early_base(self.rank()) + slot;
        // SAFETY: the caller keeps `buf` valid until `DataDone::Send(sreq)`, delivered by
        // `reap` after BIP completed the request.
        let r = unsafe { self.bip.isend(dest, tag, buf, len)? };
        self.sends.push(DataSend { bip: r, sreq, slot: Some((dest, slot)) });
        Ok(Some(tag))
    }

    unsafe fn post_early_recv(&mut self, src: usize, rreq: u32, ticket: u32, buf: *mut u8, len: usize) -> Result<()> {
        let base = self.early_base(src);
        if !(base..base + self.per_sender).contains(&ticket) {
            return Err(ChannelError::Transport(format!("rank {src} named early-send queue {ticket}, not one of its own")));
        }
        // SAFETY: the caller keeps `buf` valid for `len` bytes until `DataDone::Recv(rreq)`,
        // which `reap` delivers only after BIP completed the request.
        let r = unsafe { self.bip.irecv(ticket, buf, len)? };
        self.recvs.push(DataRecv { bip: r, rreq, queue: None });
        Ok(())
    }

    fn drop_early(&mut self, src: usize, ticket: u32) -> Result<()> {
        let base = self.early_base(src);
        if !(base..base + self.per_sender).contains(&ticket) {
            return Err(ChannelError::Transport(format!("rank {src} named early-send queue {ticket}, not one of its own")));
        }
        // SAFETY: a zero-byte receive never writes; the dangling pointer is non-null as BIP asks.
        let r = unsafe { self.bip.irecv(ticket, std::ptr::NonNull::dangling().as_ptr(), 0)? };
        self.drops.push(r);
        Ok(())
    }

    fn check_peers(&mut self) -> Result<()> {
        Ok(self.bip.check_peers()?)
    }

    fn finalize(mut self: Box<Self>) -> Result<()> {
        let mut backoff = nic_model::wait::Backoff::new();
        while !self.staged.is_empty() {
            for (r, _) in std::mem::take(&mut self.staged) {
                self.bip.wait(r)?;
            }
            backoff.snooze();
        }
        for r in std::mem::take(&mut self.drops) {
            finished(self.bip.wait(r).map(Some))?;
        }
        if !(self.recvs.is_empty() && self.sends.is_empty()) {
            return Err(ChannelError::Transport(format!(
                "finalize with {} rendezvous receives and {} sends still in flight",
                self.recvs.len(),
                self.sends.len()
            )));
        }
        Ok(self.bip.finalize()?)
    }

    fn counters(&self) -> ChannelCounters {
        ChannelCounters { nic: *self.bip.device().counters(), bip: self.bip.counters(), fm: None, channel: self.copied }
    }
}
