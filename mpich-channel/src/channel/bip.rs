//! The `bip` channel: the ADI straight over BIP, as BIP-MPI was built.
//!
//! - Control messages travel on BIP queue 0. One that fits a packet is gathered (envelope, then
//!   the user's data) straight into the NIC's packet buffer ([`Bip::send_now_gather`]) and read
//!   where it lies on arrival ([`Bip::lend`]), so short data is copied exactly twice: into the
//!   packet buffer and out of it into the landing. A longer one (only when `MPI_EAGER_MAX`
//!   raises the eager limit past a packet) is staged into one buffer and sent with `isend`.
//! - Rendezvous data uses a BIP queue of its own per transfer: the receiver takes a free queue,
//!   posts the user's buffer on it (`irecv`) and sends its number in the CTS; the sender's
//!   `isend` on that queue then moves the data by BIP's long-message protocol, single copy
//!   from user buffer to user buffer.

use super::{deliver_whole, Channel, ChannelError, DataDone, Result, Sink};
use crate::envelope::{Envelope, ENVELOPE_LEN};
use bip_core::{Bip, BipConfig, Request};
use nic_model::{AnyNic, Device};

/// BIP queue of control messages; queues `1..tags` carry rendezvous data.
const CTRL_TAG: u32 = 0;

/// A BIP endpoint used as an MPI channel.
pub struct BipChannel {
    bip: Bip<AnyNic>,
    eager_max: usize,
    /// The largest control message that fits one packet (envelope included).
    one_packet: usize,
    /// BIP queues free for rendezvous data.
    free_tags: Vec<u32>,
    /// Rendezvous receives in flight: BIP request, ADI request, BIP queue.
    recvs: Vec<(Request, u32, u32)>,
    /// Rendezvous sends in flight: BIP request, ADI request.
    sends: Vec<(Request, u32)>,
    /// Multi-packet control messages in flight, with their staging buffers.
    staged: Vec<(Request, Vec<u8>)>,
    spare: Vec<Vec<u8>>,
}

impl BipChannel {
    /// Opens BIP over `nic`. Unless `BIP_EAGER_MAX` says otherwise, BIP's short-message limit is
    /// raised to what one packet carries, so that control messages never take BIP's own
    /// rendezvous.
    pub fn new(nic: AnyNic, cfg: Option<BipConfig>) -> Result<Self> {
        let mtu = nic.capabilities().mtu;
        let mut cfg = cfg.unwrap_or_else(BipConfig::from_env);
        if std::env::var_os("BIP_EAGER_MAX").is_none() {
            cfg.eager_max = cfg.eager_max.max(mtu);
        }
        let tags = cfg.tags;
        let bip = Bip::new(nic, cfg)?;
        let one_packet = bip.max_packet_message();
        Ok(BipChannel {
            eager_max: one_packet.saturating_sub(ENVELOPE_LEN),
            one_packet,
            free_tags: (1..tags).rev().collect(),
            recvs: Vec::new(),
            sends: Vec::new(),
            staged: Vec::new(),
            spare: Vec::new(),
            bip,
        })
    }

    /// Sets the eager limit (capped by what BIP sends without its own rendezvous).
    pub fn with_eager_max(mut self, max: usize) -> Self {
        self.eager_max = max.min(self.bip.config().eager_max.saturating_sub(ENVELOPE_LEN));
        self
    }

    /// The BIP endpoint (for counters).
    pub fn bip(&self) -> &Bip<AnyNic> {
        &self.bip
    }

    /// Reaps finished data transfers and staged sends; true if any finished.
    fn reap(&mut self, sink: &mut dyn Sink) -> Result<bool> {
        let mut any = false;
        let mut i = 0;
        while i < self.recvs.len() {
            if self.bip.test_done(self.recvs[i].0)?.is_some() {
                let (_, rreq, tag) = self.recvs.swap_remove(i);
                self.free_tags.push(tag);
                sink.data_done(DataDone::Recv(rreq));
                any = true;
            } else {
                i += 1;
            }
        }
        let mut i = 0;
        while i < self.sends.len() {
            if self.bip.test_done(self.sends[i].0)?.is_some() {
                let (_, sreq) = self.sends.swap_remove(i);
                sink.data_done(DataDone::Send(sreq));
                any = true;
            } else {
                i += 1;
            }
        }
        let mut i = 0;
        while i < self.staged.len() {
            if self.bip.test_done(self.staged[i].0)?.is_some() {
                let (_, buf) = self.staged.swap_remove(i);
                self.spare.push(buf);
                any = true;
            } else {
                i += 1;
            }
        }
        Ok(any)
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
        if ENVELOPE_LEN + payload.len() <= self.one_packet {
            return Ok(self.bip.send_now_gather(dest, CTRL_TAG, &head, payload)?);
        }
        let mut buf = self.spare.pop().unwrap_or_default();
        buf.clear();
        buf.extend_from_slice(&head);
        buf.extend_from_slice(payload);
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
                r?;
                true
            }
            None => false,
        };
        if !(self.recvs.is_empty() && self.sends.is_empty() && self.staged.is_empty()) {
            any |= self.reap(sink)?;
        }
        Ok(any)
    }

    unsafe fn post_data_recv(&mut self, _src: usize, rreq: u32, buf: *mut u8, len: usize) -> Result<Option<u32>> {
        let Some(tag) = self.free_tags.pop() else { return Ok(None) };
        // SAFETY: the caller keeps `buf` valid for `len` bytes until `DataDone::Recv(rreq)`,
        // which `reap` delivers only after BIP completed the request.
        let r = unsafe { self.bip.irecv(tag, buf, len)? };
        self.recvs.push((r, rreq, tag));
        Ok(Some(tag))
    }

    unsafe fn start_data_send(&mut self, dest: usize, ticket: u32, _rreq: u32, sreq: u32, buf: *const u8, len: usize, _sink: &mut dyn Sink) -> Result<()> {
        // SAFETY: the caller keeps `buf` valid until `DataDone::Send(sreq)`, delivered by
        // `reap` after BIP completed the request.
        let r = unsafe { self.bip.isend(dest, ticket, buf, len)? };
        self.sends.push((r, sreq));
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
        if !(self.recvs.is_empty() && self.sends.is_empty()) {
            return Err(ChannelError::Transport(format!(
                "finalize with {} rendezvous receives and {} sends still in flight",
                self.recvs.len(),
                self.sends.len()
            )));
        }
        Ok(self.bip.finalize()?)
    }
}
