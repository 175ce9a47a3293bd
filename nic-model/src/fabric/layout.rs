//! The shared-memory layout of a fabric, as `#[repr(C)]` types with asserted sizes.
//!
//! ```text
//! offset 0          FabricHeader                (one page)
//! page 1            RankBlock[nranks]           (256 bytes each: 4 cache lines)
//! region_offset     RegionDesc[nranks][REGION_SLOTS]  (64 bytes each: one cache line)
//! ring_offset       Ring[src][dst]              (ring_stride bytes each)
//!                     line 0: RingConsumer      (written only by the receiver)
//!                     slots[slots_per_ring]     (written only by the sender)
//!                       SlotHeader (24 bytes) + payload
//! ```
//!
//! One writer per cache line: a slot is written by the sender and only read by the receiver;
//! the ring's consumer line is written by the receiver and read by the sender only when the
//! sender's cached view of it says the ring is full. A region descriptor is written by the
//! rank that exported the region, except for the split-copy handshake (`assist_*`, see
//! [`crate::region`]), which the one importer that claimed it writes.

use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64};

/// Cache-line size assumed by the layout (x86-64 and most AArch64).
pub const CACHE_LINE: usize = 64;
/// Page size used for alignment of the big regions.
pub const PAGE: usize = 4096;
/// "NICFABR1" in little-endian.
pub const FABRIC_MAGIC: u64 = u64::from_le_bytes(*b"NICFABR1");
/// Layout version: bump on any change to the types in this module.
pub const LAYOUT_VERSION: u32 = 3;
/// Region descriptors each rank publishes in the fabric (see [`crate::region`]); regions
/// exported beyond these are served by the exporter itself over packets.
pub const REGION_SLOTS: usize = 512;

/// The first page of a fabric.
#[repr(C)]
pub struct FabricHeader {
    pub magic: u64,
    pub version: u32,
    pub nranks: u32,
    /// Random per-job key; a process must present it (from its environment) to attach.
    pub job_key: [u8; 16],
    pub slots_per_ring: u32,
    pub slot_bytes: u32,
    pub region_offset: u64,
    pub ring_offset: u64,
    pub ring_stride: u64,
    pub total_bytes: u64,
    /// Seed for the fault injector, so every rank of a job draws from related streams.
    pub fault_seed: u64,
}
const _: () = assert!(std::mem::size_of::<FabricHeader>() <= PAGE);

/// States of a rank, in `RankBlock::state`.
pub mod rank_state {
    /// Not attached yet.
    pub const EMPTY: u32 = 0;
    /// Attached and running.
    pub const ATTACHED: u32 = 1;
    /// Finished cleanly (called `finalize`).
    pub const FINALIZED: u32 = 2;
    /// Died: set by the launcher when it reaps a process that did not finalize, or by the rank
    /// itself when it drops its NIC without finalizing. A rank killed where no launcher watches
    /// (Hydra, Slurm) stays `ATTACHED`; its peers find it gone through its pid
    /// (`fabric/liveness.rs`).
    pub const DEAD: u32 = 3;
}

/// Per-rank control block: liveness, and the modeled timing resources.
#[repr(C, align(64))]
pub struct RankBlock {
    // line 0: written by the rank itself and (state = DEAD) by the launcher.
    pub pid: AtomicI32,
    pub state: AtomicU32,
    pub exit_status: AtomicI32,
    /// When the process attached as this rank started (clock ticks after boot, field 22 of
    /// `/proc/PID/stat`; 0 if unknown), written before `pid`: with the pid it names one
    /// process, even after the pid is reused.
    pub start_time: AtomicU64,
    _pad0: [u8; CACHE_LINE - 24],
    // lines 1-3: modeled-time resources (ns on CLOCK_MONOTONIC), touched only under a timing
    // profile other than `native`. Each is "free at": the resource is busy until then.
    pub host_tx_free: AtomicU64,
    pub pci_free: AtomicU64,
    pub nic_tx_free: AtomicU64,
    pub link_tx_free: AtomicU64,
    _pad1: [u8; CACHE_LINE - 32],
    pub nic_rx_free: AtomicU64,
    pub host_rx_free: AtomicU64,
    _pad2: [u8; CACHE_LINE - 16],
    // line 3: rung by importers that ask this rank to copy part of a region for them; the
    // rank compares it with the count it last saw on every device poll.
    pub doorbell: AtomicU64,
    _pad3: [u8; CACHE_LINE - 8],
}
const _: () = assert!(std::mem::size_of::<RankBlock>() == 4 * CACHE_LINE);

/// A region a rank exported, as its importers see it: one cache line per region slot.
///
/// The exporter fills `addr`, `len` and `access`, then stores `key` (release); an importer
/// reads `key` (acquire) and checks it against its cookie before it trusts the rest. Clearing
/// `key` withdraws the region. The `assist_*` fields carry the split-copy handshake of
/// [`crate::region`].
#[repr(C, align(64))]
pub struct RegionDesc {
    /// 0 while the slot is free; otherwise the region's key.
    pub key: AtomicU64,
    pub addr: AtomicU64,
    pub len: AtomicU64,
    /// `region::Access` bits.
    pub access: AtomicU32,
    /// State of the split-copy handshake (`region::assist`).
    pub assist: AtomicU32,
    /// Where in the importer's memory the exporter's part goes.
    pub assist_dst: AtomicU64,
    /// The exporter's part: bytes `assist_from .. assist_from + assist_len` of the region.
    pub assist_from: AtomicU64,
    pub assist_len: AtomicU64,
    /// The importer's rank.
    pub assist_peer: AtomicU32,
    _pad: [u8; 4],
}
const _: () = assert!(std::mem::size_of::<RegionDesc>() == CACHE_LINE);

/// The receiver-owned line at the start of each ring.
#[repr(C, align(64))]
pub struct RingConsumer {
    /// Number of packets the receiver has consumed (and so slots it has released).
    pub consumed: AtomicU64,
    _pad: [u8; CACHE_LINE - 8],
}
const _: () = assert!(std::mem::size_of::<RingConsumer>() == CACHE_LINE);

/// The header at the start of each slot. The payload follows directly, so a small packet
/// travels in the same cache line as its header.
#[repr(C)]
pub struct SlotHeader {
    /// The flag the receiver polls: `seq + 1` of the packet in the slot (0 = never written).
    /// Written last, with release ordering.
    pub seq: AtomicU64,
    /// Payload length in bytes.
    pub len: AtomicU32,
    /// Source rank, for tracing and sanity checks.
    pub src: AtomicU32,
    /// Modeled arrival time (ns, CLOCK_MONOTONIC); 0 = deliverable at once.
    pub deliver_at: AtomicU64,
}
pub const SLOT_HEADER: usize = std::mem::size_of::<SlotHeader>();
const _: () = assert!(SLOT_HEADER == 24);

/// Geometry of a fabric, computed from the job's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    pub nranks: usize,
    pub slots_per_ring: usize,
    pub slot_bytes: usize,
    pub region_offset: usize,
    pub ring_offset: usize,
    pub ring_stride: usize,
    pub total_bytes: usize,
}

impl Geometry {
    /// Computes the layout. `slots_per_ring` must be a power of two, `slot_bytes` a multiple of
    /// the cache line and at least two lines.
    pub fn new(nranks: usize, slots_per_ring: usize, slot_bytes: usize) -> Result<Self, String> {
        if nranks == 0 || nranks > 4096 {
            return Err(format!("a job needs 1 to 4096 processes, not {nranks}"));
        }
        if !slots_per_ring.is_power_of_two() || !(2..=65536).contains(&slots_per_ring) {
            return Err(format!(
                "slots per ring must be a power of two in 2..=65536, not {slots_per_ring}"
            ));
        }
        if !slot_bytes.is_multiple_of(CACHE_LINE)
            || !(2 * CACHE_LINE..=1 << 20).contains(&slot_bytes)
        {
            return Err(format!(
                "slot size must be a multiple of {CACHE_LINE} between {} and 1 MiB, not {slot_bytes}",
                2 * CACHE_LINE
            ));
        }
        let ranks_bytes = nranks * std::mem::size_of::<RankBlock>();
        let region_offset = round_up(PAGE + ranks_bytes, PAGE);
        let regions_bytes = nranks * REGION_SLOTS * std::mem::size_of::<RegionDesc>();
        let ring_offset = round_up(region_offset + regions_bytes, PAGE);
        let ring_stride = round_up(CACHE_LINE + slots_per_ring * slot_bytes, PAGE);
        let total_bytes = ring_offset + nranks * nranks * ring_stride;
        Ok(Geometry {
            nranks,
            slots_per_ring,
            slot_bytes,
            region_offset,
            ring_offset,
            ring_stride,
            total_bytes,
        })
    }

    /// Offset of slot `slot` of `rank`'s region descriptors.
    pub fn region(&self, rank: usize, slot: usize) -> usize {
        self.region_offset + (rank * REGION_SLOTS + slot) * std::mem::size_of::<RegionDesc>()
    }

    /// Offset of the ring carrying packets from `src` to `dst`.
    pub fn ring(&self, src: usize, dst: usize) -> usize {
        self.ring_offset + (src * self.nranks + dst) * self.ring_stride
    }

    /// Largest payload one packet can carry.
    pub fn mtu(&self) -> usize {
        self.slot_bytes - SLOT_HEADER
    }
}

pub(crate) fn round_up(x: usize, to: usize) -> usize {
    x.div_ceil(to) * to
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometry_is_page_aligned_and_rejects_bad_shapes() {
        let g = Geometry::new(4, 64, 4096).unwrap();
        assert_eq!(g.ring_offset % PAGE, 0);
        assert_eq!(g.region_offset % PAGE, 0);
        assert!(g.region(3, REGION_SLOTS - 1) + CACHE_LINE <= g.ring_offset);
        assert_eq!(g.ring_stride % PAGE, 0);
        assert_eq!(g.ring(1, 2), g.ring_offset + 6 * g.ring_stride);
        assert_eq!(g.mtu(), 4096 - 24);
        assert!(Geometry::new(4, 63, 4096).is_err());
        assert!(Geometry::new(4, 64, 100).is_err());
        assert!(Geometry::new(0, 64, 4096).is_err());
    }
}
