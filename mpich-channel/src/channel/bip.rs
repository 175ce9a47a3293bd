//! The `bip` channel: the ADI straight over BIP, as BIP-MPI was built.
//!
//! - Control messages travel on BIP queue 0. One that fits a packet is gathered (envelope, then
//!   the user's data) straight into the NIC's packet buffer ([`Bip::send_now_gather`]) and read
//!   where it lies on arrival ([`Bip::lend`]), so short data is copied exactly twice: into the
//!   packet buffer and out of it into the landing. A longer one (only when `MPI_EAGER_MAX`
//!   raises the eager limit past a packet) is staged into one buffer and sent with `isend`.
//! - Large messages are BIP's rendezvous with MPI's matching: the send's buffer is exported
//!   ([`Bip::export`]) and its key travels in the MPI RTS; once a receive matches, the
//!   receiver reads it into the posted buffer ([`Bip::pull`], one copy, split between both
//!   ends' cores) and BIP's FIN ends it. No BIP tag, queue or request is involved: the message
//!   is matched once, by the ADI, and is two packets on the NIC.

use super::{deliver_event, deliver_whole, Channel, ChannelCounters, CopyCount, Result, Sink};
use crate::envelope::{Envelope, ENVELOPE_LEN};
use bip_core::{Bip, BipConfig, Request};
use nic_model::{Device, DeviceStack, RegionKey};

/// BIP queue of control messages.
const CTRL_TAG: u32 = 0;
/// The most control messages one poll delivers while posted receives wait for them.
const POLL_BATCH: usize = 16;

/// A BIP endpoint used as an MPI channel.
pub struct BipChannel {
    bip: Bip<DeviceStack>,
    eager_max: usize,
    /// The largest control message gathered straight into one packet (envelope included):
    /// what fits a packet natively; under a timing profile, what BIP itself would still send
    /// as one packet (longer messages it pipelines in several, as the modeled NIC wants).
    gather_max: usize,
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
    pub fn new(nic: DeviceStack, cfg: Option<BipConfig>) -> Result<Self> {
        let mtu = nic.capabilities().mtu;
        let mut cfg = cfg.unwrap_or_else(BipConfig::from_env);
        if std::env::var_os("BIP_EAGER_MAX").is_none() {
            cfg.eager_max = cfg.eager_max.max(mtu);
        }
        // One queue for control messages is all the channel uses.
        cfg.tags = cfg.tags.max(1);
        let sizer = bip_core::PacketSizer::for_profile(nic.profile());
        let bip = Bip::new(nic, cfg)?;
        let one_packet = bip.max_packet_message();
        let mut gather_max = one_packet;
        while gather_max > 0 && sizer.packet_size(gather_max, one_packet) < gather_max {
            gather_max = gather_max.saturating_sub(64);
        }
        Ok(BipChannel {
            eager_max: one_packet.saturating_sub(ENVELOPE_LEN),
            gather_max,
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
    pub fn bip(&self) -> &Bip<DeviceStack> {
        &self.bip
    }

    /// Hands the next control message that has arrived to `sink`; the bytes it copied, or
    /// `None` when nothing had arrived.
    #[inline]
    fn lend_one(&mut self, sink: &mut dyn Sink) -> Result<Option<usize>> {
        // The closure's error is kept aside, so that the common answer (nothing, or a
        // message delivered) carries nothing to drop.
        let mut malformed = None;
        let lent = self
            .bip
            .lend(CTRL_TAG, |src, msg| match deliver_whole(sink, src, msg) {
                Ok(n) => n,
                Err(e) => {
                    malformed = Some(e);
                    0
                }
            })?;
        match malformed {
            Some(e) => Err(e),
            None => Ok(lent),
        }
    }

    /// Hands the sink every rendezvous event BIP has; whether there was one.
    #[inline]
    fn deliver_events(&mut self, sink: &mut dyn Sink) -> bool {
        let mut any = false;
        while let Some(e) = self.bip.next_event() {
            deliver_event(sink, e);
            any = true;
        }
        any
    }

    /// Releases the staging buffers of multi-packet control messages that went out.
    #[cold]
    fn reap_staged(&mut self) -> Result<bool> {
        let mut any = false;
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
    fn send_control(
        &mut self,
        dest: usize,
        env: &Envelope,
        payload: &[u8],
        _sink: &mut dyn Sink,
    ) -> Result<bool> {
        let head = env.emit();
        if ENVELOPE_LEN + payload.len() <= self.gather_max {
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
        // One message per call unless posted receives wait for more (`Sink::hungry`): then
        // up to a batch, each landing straight in its receive, for one pass of the layers
        // above. A last look that finds nothing costs a sweep of the routes, so a poll that
        // nobody waits on stops after the first message.
        let mut any = false;
        for _ in 0..POLL_BATCH {
            let Some(n) = self.lend_one(sink)? else {
                break;
            };
            self.copied.add(n);
            any = true;
            // A rendezvous that ended is the ADI's to see before the next message.
            self.deliver_events(sink);
            if !sink.hungry() {
                break;
            }
        }
        any |= self.deliver_events(sink);
        if !self.staged.is_empty() {
            any |= self.reap_staged()?;
        }
        Ok(any)
    }

    unsafe fn export(
        &mut self,
        dest: usize,
        buf: *const u8,
        len: usize,
        sreq: u32,
    ) -> Result<RegionKey> {
        // SAFETY: the caller's contract is BIP's.
        Ok(unsafe { self.bip.export(dest, buf, len, u64::from(sreq))? })
    }

    fn revoke(&mut self, key: RegionKey) -> Result<()> {
        Ok(self.bip.revoke(key)?)
    }

    unsafe fn pull(
        &mut self,
        src: usize,
        key: RegionKey,
        buf: *mut u8,
        len: usize,
        rreq: u32,
    ) -> Result<()> {
        // SAFETY: the caller's contract is BIP's.
        unsafe { self.bip.pull(src, key, buf, len, u64::from(rreq))? };
        Ok(())
    }

    fn check_peers(&mut self) -> Result<()> {
        Ok(self.bip.check_peers()?)
    }

    fn finalize(mut self: Box<Self>) -> Result<()> {
        for (r, _) in std::mem::take(&mut self.staged) {
            self.bip.wait(r)?;
        }
        Ok(self.bip.finalize()?)
    }

    fn remote_memory(&mut self) -> Option<&mut dyn crate::remote::RemoteMemory> {
        // The device under BIP: regions registered there beside BIP's own rendezvous
        // regions, writes and reads that never touch BIP's queues.
        Some(self.bip.device_mut())
    }

    fn counters(&self) -> ChannelCounters {
        ChannelCounters {
            nic: *self.bip.device().counters(),
            bip: self.bip.counters(),
            fm: None,
            channel: self.copied,
        }
    }
}
