//! The per-process NIC: the rings to and from every peer, the single-copy engine, the timing
//! model, the counters.

use crate::counters::Counters;
use crate::dma;
use crate::error::{NicError, Rank, Result};
use crate::fabric::layout::rank_state;
use crate::fabric::Fabric;
use crate::phy::{Capabilities, Device, PeerStatus, RxToken, TxToken};
use crate::timing::{now_ns, Profile};
use crate::wire::ring::{RxRing, TxRing};
use std::sync::atomic::Ordering;

/// Environment variable naming the timing profile (`native` when unset).
pub const PROFILE_ENV: &str = "MPI_NIC_PROFILE";
/// Environment variable that turns the single-copy engine off (`MPI_NIC_DMA=off`), forcing
/// the packet path; for tests and for comparing the two paths.
pub const DMA_ENV: &str = "MPI_NIC_DMA";

/// One process's network interface.
pub struct Nic {
    // Rings hold raw pointers into the fabric's mapping, so they are declared (and dropped)
    // before it.
    tx: Vec<TxRing>,
    rx: Vec<RxRing>,
    stalled: Vec<bool>,
    fabric: Fabric,
    rank: Rank,
    nranks: usize,
    profile: Option<Box<Profile>>,
    dma_enabled: bool,
    /// `dma_write` allowed (`MPI_NIC_DMA=read` refuses it, for tests).
    dma_write_enabled: bool,
    counters: Counters,
    finalized: bool,
    /// Leading bytes of each packet the timing model counts as the modeled wire header.
    protocol_header: usize,
}

impl Nic {
    /// Attaches to the job's fabric as set up by the launcher, with the timing profile named
    /// by `MPI_NIC_PROFILE`. Also turns on tracing if `MPI_TRACE` asks for it.
    pub fn from_env() -> Result<Nic> {
        crate::trace::init_from_env();
        let (fabric, rank) = Fabric::from_env()?;
        let profile = Profile::load(&std::env::var(PROFILE_ENV).unwrap_or_default())?;
        let dma = std::env::var(DMA_ENV).unwrap_or_default();
        let dma_enabled = !matches!(dma.as_str(), "off" | "0" | "no");
        let mut nic = Nic::attach(fabric, rank, profile, dma_enabled)?;
        // `read`: single-copy reads only (tests the path where a sender cannot write).
        nic.dma_write_enabled = dma_enabled && dma != "read";
        Ok(nic)
    }

    fn attach(fabric: Fabric, rank: Rank, profile: Option<Profile>, dma_enabled: bool) -> Result<Nic> {
        let n = fabric.geometry().nranks;
        // Every rank of a job attaches to this host's shared-memory fabric.
        crate::wait::note_ranks_on_host(n);
        let block = fabric.rank_block(rank);
        if block
            .state
            .compare_exchange(rank_state::EMPTY, rank_state::ATTACHED, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return Err(NicError::BadFabric(format!("rank {rank} is already attached by another process")));
        }
        // SAFETY: getpid has no preconditions.
        block.pid.store(unsafe { libc::getpid() }, Ordering::Release);
        dma::allow_peers();
        // SAFETY: this process is the only one attached as `rank` (checked above), so it owns
        // the send end of every ring `rank -> *` and the receive end of every ring `* -> rank`;
        // the rings live in `fabric`, which the Nic owns and drops after them.
        let tx = (0..n).map(|d| unsafe { TxRing::new(&fabric, rank, d) }).collect();
        let rx = (0..n).map(|s| unsafe { RxRing::new(&fabric, s, rank) }).collect();
        tracing::debug!(target: "nic", rank, nranks = n, profile = profile.as_ref().map(|p| p.name.as_str()).unwrap_or("native"), "NIC attached");
        Ok(Nic {
            tx,
            rx,
            stalled: vec![false; n],
            fabric,
            rank,
            nranks: n,
            profile: profile.map(Box::new),
            dma_enabled,
            dma_write_enabled: dma_enabled,
            counters: Counters::default(),
            finalized: false,
            protocol_header: 0,
        })
    }

    /// The timing profile in force (`None` for `native`).
    pub fn profile(&self) -> Option<&Profile> {
        self.profile.as_deref()
    }

    /// The seed this job's fault injectors derive their streams from.
    pub fn fault_seed(&self) -> u64 {
        self.fabric.header().fault_seed
    }

    /// Packets sent to `dest` so far.
    pub fn packets_sent_to(&self, dest: Rank) -> u64 {
        self.tx[dest].sent()
    }
}

impl Drop for Nic {
    fn drop(&mut self) {
        // Leaving without finalizing is a death as far as peers are concerned.
        if !self.finalized {
            self.fabric.rank_block(self.rank).state.store(rank_state::DEAD, Ordering::Release);
        }
    }
}

/// A transmit buffer of a [`Nic`].
pub struct NicTxToken<'a> {
    nic: &'a mut Nic,
    dest: Rank,
}

/// A received packet of a [`Nic`], still in its slot.
pub struct NicRxToken<'a> {
    nic: &'a mut Nic,
    src: Rank,
    len: usize,
}

impl TxToken for NicTxToken<'_> {
    #[inline]
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let nic = self.nic;
        let ring = &mut nic.tx[self.dest];
        // SAFETY: `transmit` checked `has_room()`, and this token holds the NIC exclusively
        // until the slot is published below.
        let buf = unsafe { ring.payload() };
        assert!(len <= buf.len(), "packet of {len} bytes exceeds the mtu of {}", buf.len());
        let r = f(&mut buf[..len]);
        let deliver_at = match &nic.profile {
            None => 0,
            Some(p) => p.schedule(
                nic.fabric.rank_block(nic.rank),
                nic.fabric.rank_block(self.dest),
                len.saturating_sub(nic.protocol_header),
                now_ns(),
            ),
        };
        // SAFETY: as above; `len` is within the mtu (asserted).
        unsafe { ring.publish(len, nic.rank, deliver_at) };
        nic.counters.packets_tx += 1;
        nic.counters.bytes_tx += len as u64;
        r
    }
}

impl RxToken for NicRxToken<'_> {
    #[inline]
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        let ring = &mut self.nic.rx[self.src];
        // SAFETY: `receive` saw this packet published with this length; it stays ours until
        // `release`.
        let r = f(unsafe { ring.payload(self.len) });
        ring.release();
        self.nic.counters.packets_rx += 1;
        self.nic.counters.bytes_rx += self.len as u64;
        r
    }
}

impl Device for Nic {
    type TxToken<'a> = NicTxToken<'a>;
    type RxToken<'a> = NicRxToken<'a>;

    fn rank(&self) -> Rank {
        self.rank
    }

    fn nranks(&self) -> usize {
        self.nranks
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities { mtu: self.fabric.geometry().mtu(), reliable: true }
    }

    #[inline]
    fn transmit(&mut self, dest: Rank) -> Option<NicTxToken<'_>> {
        if self.tx[dest].has_room() {
            if self.stalled[dest] {
                self.stalled[dest] = false;
            }
            Some(NicTxToken { nic: self, dest })
        } else {
            if !self.stalled[dest] {
                self.stalled[dest] = true;
                self.counters.stalls += 1;
                tracing::trace!(target: "nic", dest, "route full, sender stalls");
            }
            None
        }
    }

    #[inline]
    fn receive(&mut self, src: Rank) -> Option<NicRxToken<'_>> {
        let ring = &mut self.rx[src];
        let a = ring.peek()?;
        if a.deliver_at != 0 && a.deliver_at > now_ns() {
            ring.publish();
            return None;
        }
        Some(NicRxToken { nic: self, src, len: a.len })
    }

    fn dma_read(&mut self, peer: Rank, remote: usize, local: &mut [u8], packet: usize) -> Result<()> {
        if !self.dma_enabled {
            return Err(NicError::DmaNotPermitted { rank: peer });
        }
        let _span = tracing::trace_span!(target: "nic", "dma_read", peer, len = local.len()).entered();
        let start = now_ns();
        let pid = self.fabric.rank_block(peer).pid.load(Ordering::Acquire);
        if let Err(e) = dma::read_from(pid, remote, local) {
            let e = dma_error(peer, "single-copy transfer (process_vm_readv)", e);
            if matches!(e, NicError::DmaNotPermitted { .. }) {
                tracing::debug!(target: "nic", peer, "single-copy refused by the kernel; using packets");
                self.dma_enabled = false;
            }
            return Err(e);
        }
        self.counters.dma_ops += 1;
        self.counters.dma_bytes += local.len() as u64;
        if let Some(p) = &self.profile {
            // The data moved at memory speed; now wait for the modeled pipeline of packets.
            let (src, dst) = (self.fabric.rank_block(peer), self.fabric.rank_block(self.rank));
            let packet = packet.max(1);
            let mut done_at = start;
            let mut left = local.len();
            while left > 0 {
                let l = left.min(packet);
                done_at = p.schedule(src, dst, l, start);
                left -= l;
            }
            while now_ns() < done_at {
                std::hint::spin_loop();
            }
        }
        Ok(())
    }

    fn dma_write(&mut self, peer: Rank, remote: usize, local: &[u8]) -> Result<()> {
        // Under a timing profile transfers are the modeled NIC's, pulled by the receiver.
        if !(self.dma_enabled && self.dma_write_enabled) || self.profile.is_some() {
            return Err(NicError::DmaNotPermitted { rank: peer });
        }
        let _span = tracing::trace_span!(target: "nic", "dma_write", peer, len = local.len()).entered();
        let pid = self.fabric.rank_block(peer).pid.load(Ordering::Acquire);
        if let Err(e) = dma::write_to(pid, remote, local) {
            let e = dma_error(peer, "single-copy transfer (process_vm_writev)", e);
            if matches!(e, NicError::DmaNotPermitted { .. }) {
                self.dma_write_enabled = false;
            }
            return Err(e);
        }
        self.counters.dma_ops += 1;
        self.counters.dma_bytes += local.len() as u64;
        Ok(())
    }

    fn peer_status(&self, peer: Rank) -> PeerStatus {
        let b = self.fabric.rank_block(peer);
        match b.state.load(Ordering::Acquire) {
            rank_state::FINALIZED => PeerStatus::Finalized,
            rank_state::DEAD => PeerStatus::Dead,
            rank_state::ATTACHED => {
                let pid = b.pid.load(Ordering::Acquire);
                // SAFETY: signal 0 only checks for existence.
                if pid > 0 && unsafe { libc::kill(pid, 0) } != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH) {
                    PeerStatus::Dead
                } else {
                    PeerStatus::Alive
                }
            }
            _ => PeerStatus::Alive,
        }
    }

    fn counters(&self) -> &Counters {
        &self.counters
    }

    fn profile(&self) -> Option<&Profile> {
        self.profile.as_deref()
    }

    fn set_protocol_header(&mut self, bytes: usize) {
        self.protocol_header = bytes;
    }

    fn finalize(&mut self) {
        self.finalized = true;
        let _ = self.fabric.rank_block(self.rank).state.compare_exchange(
            rank_state::ATTACHED,
            rank_state::FINALIZED,
            Ordering::AcqRel,
            Ordering::Acquire,
        );
    }
}

/// What a failed single-copy call to `peer` means: refused by the kernel (`EPERM`), the peer
/// gone (`ESRCH`), or another OS error while doing `what`.
fn dma_error(peer: Rank, what: &'static str, e: std::io::Error) -> NicError {
    match e.raw_os_error() {
        Some(libc::EPERM) => NicError::DmaNotPermitted { rank: peer },
        Some(libc::ESRCH) => NicError::PeerDead { rank: peer, why: "process gone during a transfer" },
        _ => NicError::Os { what, source: e },
    }
}
