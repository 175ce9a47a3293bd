//! The shared-memory layout of a fabric, as `#[repr(C)]` types with asserted sizes.
//!
//! ```text
//! offset 0          FabricHeader                (one page)
//! page 1            RankBlock[nranks]           (256 bytes each: 4 cache lines)
//! region_offset     RegionDesc[nranks][REGION_SLOTS]  (64 bytes each: one cache line)
//! vmmc_offset       VmmcBlock[nranks]           (VMMC's names and notification ring, see
//!                                                `crate::vmmc`; 10368 bytes each)
//! inbox_offset      Inbox[nranks]               (inbox_stride bytes each, page-rounded):
//!                     pair 0: QueueConsumer     (written only by the receiver)
//!                     pair 1: QueueProducers    (claimed by the senders with a CAS)
//!                     pair 2: BoxPool           (boxes claimed so far, by the senders)
//!                     BoxHeader[box_count]      (one line each; owner: its sender, once;
//!                                                consumed: the receiver), pair-rounded
//!                     queue slots[queue_slots]  (slot_bytes each; any packet)
//!                       SlotHeader (24 bytes) + payload
//!                     fast boxes[box_count]     (box_stride bytes each: its slots)
//!                       slots[box_slots]        (box_slot_bytes each; small packets only)
//! ```
//!
//! A "pair" is two cache lines, 128 bytes aligned on 128 ([`LINE_PAIR`]): the unit in which
//! the adjacent-line prefetchers of x86-64 (Intel's spatial prefetcher, AMD's L2 up/down
//! prefetcher) pull lines in. Lines that different processes write are kept in different
//! pairs, so that a prefetch on one side does not take the other side's line away (layout
//! version 4 had the receiver's consumer line and the senders' tail line in one pair, and
//! every other fast box's header in the pair of its first slot). The box headers, all
//! written by the receiver, sit together in a table of their own.
//!
//! Every rank receives through its own inbox: one shared receive queue, written by any sender
//! (`wire::queue`), and a pool of fast boxes, each taken by one sender the first time it sends
//! this rank a small packet and from then on a single-producer ring of its own (`wire::ring`).
//! The inbox does not grow with the job: memory per rank is constant, and the job's total is
//! linear in its ranks (layout version 3 had one ring per ordered pair of ranks: per rank
//! linear, in total quadratic).
//!
//! One writer per cache line where it matters: a slot is written by the sender that claimed
//! it and only read by the receiver; a consumer line is written by the receiver and read by
//! senders only when their cached view of it says the queue or box is full. The producers'
//! line of the queue is written by every sender of that rank (a compare-and-swap per packet
//! that goes through the queue), never by the receiver. A region descriptor is written by the
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
pub const LAYOUT_VERSION: u32 = 6;
/// Two cache lines: what an adjacent-line prefetcher fetches together (see the module doc).
pub const LINE_PAIR: usize = 2 * CACHE_LINE;
/// Region descriptors each rank publishes in the fabric (see [`crate::region`]); regions
/// exported beyond these are served by the exporter itself over packets.
pub const REGION_SLOTS: usize = 512;
/// Names a rank can export regions under at once, on one host (VMMC's export by name).
pub const NAME_SLOTS: usize = 64;
/// Notifications a rank's ring holds before importers that raise more wait for it to poll.
pub const NOTIFY_SLOTS: usize = 128;

/// The first page of a fabric.
#[repr(C)]
pub struct FabricHeader {
    pub magic: u64,
    pub version: u32,
    pub nranks: u32,
    /// Random per-job key; a process must present it (from its environment) to attach.
    pub job_key: [u8; 16],
    /// Slots of each rank's shared receive queue.
    pub queue_slots: u32,
    /// Bytes of a queue slot, header included (the mtu is this less the slot header).
    pub slot_bytes: u32,
    /// Fast boxes per receiving rank.
    pub box_count: u32,
    /// Slots per fast box.
    pub box_slots: u32,
    /// Bytes of a fast-box slot, header included.
    pub box_slot_bytes: u32,
    pub region_offset: u64,
    pub inbox_offset: u64,
    pub inbox_stride: u64,
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

/// One name a rank exports a region under (VMMC's export by name), as importers on its host
/// look it up. A sequence lock: the exporter, its only writer, makes `seq` odd, writes the
/// fields, then makes it even again (release); an importer reads `seq`, the fields, then
/// `seq` again, and trusts the fields only if both reads gave the same even value. `name` 0
/// is a free entry.
#[repr(C)]
pub struct NameEntry {
    pub seq: AtomicU32,
    /// The region's id (`RegionKey::id`): its descriptor holds bounds and access.
    pub id: AtomicU32,
    pub name: AtomicU64,
    /// The region's key (`RegionKey::key`).
    pub key: AtomicU64,
    _pad: u64,
}
const _: () = assert!(std::mem::size_of::<NameEntry>() == 32);

/// The producers' line of a rank's notification ring: the next position to claim.
#[repr(C, align(128))]
pub struct NotifyTail {
    pub tail: AtomicU64,
    _pad: [u8; LINE_PAIR - 8],
}
const _: () = assert!(std::mem::size_of::<NotifyTail>() == LINE_PAIR);

/// One notification of a rank's ring (see [`VmmcBlock`]): written by the importer that
/// claimed it, read by the exporter.
#[repr(C, align(64))]
pub struct NotifyCell {
    /// For the notification at ring position `p` (lap `p / NOTIFY_SLOTS`): `2 * lap` while the
    /// cell is free for it, `2 * lap + 1` once its fields are written (release, last).
    pub state: AtomicU64,
    /// The name of the region updated.
    pub name: AtomicU64,
    pub offset: AtomicU64,
    pub len: AtomicU64,
    /// The importer's rank.
    pub from: AtomicU32,
    _pad: [u8; CACHE_LINE - 36],
}
const _: () = assert!(std::mem::size_of::<NotifyCell>() == CACHE_LINE);

/// A rank's VMMC block: the names it exports regions under, and the ring of notifications
/// that importers on its host raise with their deliberate updates (many producers, a claim by
/// compare-and-swap on `tail`; one consumer, the rank itself, whose position stays in its own
/// memory). A cell is written after the update's data is in place, so the exporter that sees
/// a notification sees the data.
#[repr(C, align(128))]
pub struct VmmcBlock {
    pub names: [NameEntry; NAME_SLOTS],
    pub tail: NotifyTail,
    pub cells: [NotifyCell; NOTIFY_SLOTS],
}
const _: () = assert!(
    std::mem::size_of::<VmmcBlock>() == NAME_SLOTS * 32 + LINE_PAIR + NOTIFY_SLOTS * CACHE_LINE
);

/// A line written only by the receiver: how many packets it has taken from a queue or a box
/// (and so how many slots it has given back).
#[repr(C, align(64))]
pub struct QueueConsumer {
    pub consumed: AtomicU64,
    _pad: [u8; CACHE_LINE - 8],
}
const _: () = assert!(std::mem::size_of::<QueueConsumer>() == CACHE_LINE);

/// The senders' line of a receive queue: the next position to claim.
#[repr(C, align(64))]
pub struct QueueProducers {
    pub tail: AtomicU64,
    _pad: [u8; CACHE_LINE - 8],
}
const _: () = assert!(std::mem::size_of::<QueueProducers>() == CACHE_LINE);

/// How many of a rank's fast boxes senders have claimed (they are claimed in order, never
/// given back while the job runs).
#[repr(C, align(64))]
pub struct BoxPool {
    pub claimed: AtomicU32,
    _pad: [u8; CACHE_LINE - 4],
}
const _: () = assert!(std::mem::size_of::<BoxPool>() == CACHE_LINE);

/// A fast box's line in the inbox's table of box headers.
#[repr(C, align(64))]
pub struct BoxHeader {
    /// Packets the receiver has taken from this box (written by the receiver only).
    pub consumed: AtomicU64,
    /// `rank + 1` of the sender that claimed the box (0 until it is claimed and its owner
    /// stored). Written once, with release ordering, before the box's first packet.
    pub owner: AtomicU32,
    _pad: [u8; CACHE_LINE - 12],
}
const _: () = assert!(std::mem::size_of::<BoxHeader>() == CACHE_LINE);

/// The header at the start of each slot, of the queue or of a box. The payload follows
/// directly, so a small packet travels in the same cache line as its header.
#[repr(C)]
pub struct SlotHeader {
    /// The flag the receiver polls: the low 32 bits of `position + 1` of the packet in the
    /// slot (0 = never written; a slot's flag differs from one lap to the next). Written last,
    /// with release ordering.
    pub seq: AtomicU32,
    /// Payload length in bytes.
    pub len: AtomicU32,
    /// Source rank.
    pub src: AtomicU32,
    /// The packet's number among those its source sent to this receiver (wrapping): what
    /// merges the queue and the fast box back into the order sent (`wire::queue`).
    pub pair_seq: AtomicU32,
    /// Modeled arrival time (ns, CLOCK_MONOTONIC); 0 = deliverable at once.
    pub deliver_at: AtomicU64,
}
pub const SLOT_HEADER: usize = std::mem::size_of::<SlotHeader>();
const _: () = assert!(SLOT_HEADER == 24);

/// The shape of a fabric's inboxes, as a job asks for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InboxShape {
    /// Slots of the shared receive queue: a power of two.
    pub queue_slots: usize,
    /// Bytes of a queue slot, header included: a multiple of the cache line.
    pub slot_bytes: usize,
    /// Fast boxes per rank (0: every packet goes through the queue).
    pub box_count: usize,
    /// Slots per fast box: a power of two.
    pub box_slots: usize,
    /// Bytes of a fast-box slot, header included: a multiple of the cache line, at most
    /// `slot_bytes`.
    pub box_slot_bytes: usize,
}

/// Geometry of a fabric, computed from the job's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    pub nranks: usize,
    pub shape: InboxShape,
    pub region_offset: usize,
    /// Where the ranks' VMMC blocks start.
    pub vmmc_offset: usize,
    pub inbox_offset: usize,
    pub inbox_stride: usize,
    /// Bytes of one fast box's slots.
    pub box_stride: usize,
    /// Offset in an inbox of its first queue slot (after the control lines and the box
    /// headers).
    pub queue_at: usize,
    pub total_bytes: usize,
}

/// Offsets inside an inbox, each line in a pair of its own.
const QUEUE_CONSUMER: usize = 0;
const QUEUE_PRODUCERS: usize = LINE_PAIR;
const BOX_POOL: usize = 2 * LINE_PAIR;
const BOX_HEADERS: usize = 3 * LINE_PAIR;

impl Geometry {
    /// Computes the layout. Slot counts must be powers of two, slot sizes multiples of the
    /// cache line and at least two lines.
    pub fn new(nranks: usize, shape: InboxShape) -> Result<Self, String> {
        if nranks == 0 || nranks > 4096 {
            return Err(format!("a job needs 1 to 4096 processes, not {nranks}"));
        }
        let InboxShape {
            queue_slots,
            slot_bytes,
            box_count,
            box_slots,
            box_slot_bytes,
        } = shape;
        for (what, n) in [("queue", queue_slots), ("fast box", box_slots)] {
            if !n.is_power_of_two() || !(2..=65536).contains(&n) {
                return Err(format!(
                    "slots per {what} must be a power of two in 2..=65536, not {n}"
                ));
            }
        }
        for (what, b, max) in [
            ("queue slot", slot_bytes, 1 << 20),
            ("fast-box slot", box_slot_bytes, slot_bytes),
        ] {
            if !b.is_multiple_of(CACHE_LINE) || !(2 * CACHE_LINE..=max).contains(&b) {
                return Err(format!(
                    "{what} size must be a multiple of {CACHE_LINE} between {} and {max}, not {b}",
                    2 * CACHE_LINE
                ));
            }
        }
        if box_count > 4096 {
            return Err(format!("at most 4096 fast boxes per rank, not {box_count}"));
        }
        let ranks_bytes = nranks * std::mem::size_of::<RankBlock>();
        let region_offset = round_up(PAGE + ranks_bytes, PAGE);
        let regions_bytes = nranks * REGION_SLOTS * std::mem::size_of::<RegionDesc>();
        let vmmc_offset = round_up(region_offset + regions_bytes, PAGE);
        let vmmc_bytes = nranks * std::mem::size_of::<VmmcBlock>();
        let inbox_offset = round_up(vmmc_offset + vmmc_bytes, PAGE);
        let box_stride = box_slots * box_slot_bytes;
        let queue_at = round_up(
            BOX_HEADERS + box_count * std::mem::size_of::<BoxHeader>(),
            LINE_PAIR,
        );
        let inbox_stride = round_up(
            queue_at + queue_slots * slot_bytes + box_count * box_stride,
            PAGE,
        );
        let total_bytes = inbox_offset + nranks * inbox_stride;
        Ok(Geometry {
            nranks,
            shape,
            region_offset,
            vmmc_offset,
            inbox_offset,
            inbox_stride,
            box_stride,
            queue_at,
            total_bytes,
        })
    }

    /// Offset of slot `slot` of `rank`'s region descriptors.
    pub fn region(&self, rank: usize, slot: usize) -> usize {
        self.region_offset + (rank * REGION_SLOTS + slot) * std::mem::size_of::<RegionDesc>()
    }

    /// Offset of `rank`'s VMMC block (names and notification ring).
    pub fn vmmc(&self, rank: usize) -> usize {
        self.vmmc_offset + rank * std::mem::size_of::<VmmcBlock>()
    }

    /// Offset of the inbox of `rank`.
    pub fn inbox(&self, rank: usize) -> usize {
        self.inbox_offset + rank * self.inbox_stride
    }

    /// Offset of the consumer line of `rank`'s queue.
    pub fn queue_consumer(&self, rank: usize) -> usize {
        self.inbox(rank) + QUEUE_CONSUMER
    }

    /// Offset of the producers' line of `rank`'s queue.
    pub fn queue_producers(&self, rank: usize) -> usize {
        self.inbox(rank) + QUEUE_PRODUCERS
    }

    /// Offset of `rank`'s fast-box pool counter.
    pub fn box_pool(&self, rank: usize) -> usize {
        self.inbox(rank) + BOX_POOL
    }

    /// Offset of the first slot of `rank`'s queue.
    pub fn queue_slots(&self, rank: usize) -> usize {
        self.inbox(rank) + self.queue_at
    }

    /// Offset of the header line of fast box `index` of `rank`.
    pub fn box_header(&self, rank: usize, index: usize) -> usize {
        self.inbox(rank) + BOX_HEADERS + index * std::mem::size_of::<BoxHeader>()
    }

    /// Offset of the first slot of fast box `index` of `rank`.
    pub fn box_slots(&self, rank: usize, index: usize) -> usize {
        self.queue_slots(rank)
            + self.shape.queue_slots * self.shape.slot_bytes
            + index * self.box_stride
    }

    /// Largest payload one packet can carry.
    pub fn mtu(&self) -> usize {
        self.shape.slot_bytes - SLOT_HEADER
    }

    /// Largest payload a fast box takes.
    pub fn box_mtu(&self) -> usize {
        self.shape.box_slot_bytes - SLOT_HEADER
    }
}

pub(crate) fn round_up(x: usize, to: usize) -> usize {
    x.div_ceil(to) * to
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(queue_slots: usize, slot_bytes: usize) -> InboxShape {
        InboxShape {
            queue_slots,
            slot_bytes,
            box_count: 4,
            box_slots: 16,
            box_slot_bytes: 256,
        }
    }

    #[test]
    fn geometry_is_page_aligned_and_rejects_bad_shapes() {
        let g = Geometry::new(4, shape(64, 4096)).unwrap();
        assert_eq!(g.inbox_offset % PAGE, 0);
        assert_eq!(g.region_offset % PAGE, 0);
        assert!(g.region(3, REGION_SLOTS - 1) + CACHE_LINE <= g.vmmc_offset);
        assert_eq!(g.vmmc_offset % PAGE, 0);
        assert!(g.vmmc(3) + std::mem::size_of::<VmmcBlock>() <= g.inbox_offset);
        assert_eq!(g.vmmc(1) % LINE_PAIR, 0);
        assert_eq!(g.inbox_stride % PAGE, 0);
        assert_eq!(g.inbox(2), g.inbox_offset + 2 * g.inbox_stride);
        assert_eq!(g.queue_slots(1) % LINE_PAIR, 0);
        assert_eq!(g.box_slots(1, 0), g.queue_slots(1) + 64 * 4096);
        assert_eq!(g.box_stride, 16 * 256);
        assert!(g.box_slots(1, 3) + g.box_stride <= g.inbox(2));
        assert!(g.box_header(1, 3) + CACHE_LINE <= g.queue_slots(1));
        assert_eq!(g.total_bytes, g.inbox(4));
        assert_eq!(g.mtu(), 4096 - 24);
        assert_eq!(g.box_mtu(), 256 - 24);
        assert!(Geometry::new(4, shape(63, 4096)).is_err());
        assert!(Geometry::new(4, shape(64, 100)).is_err());
        assert!(Geometry::new(0, shape(64, 4096)).is_err());
        let big_boxes = InboxShape {
            box_slot_bytes: 8192,
            ..shape(64, 4096)
        };
        assert!(Geometry::new(4, big_boxes).is_err());
    }

    #[test]
    fn lines_of_different_writers_lie_in_different_pairs() {
        let g = Geometry::new(4, shape(64, 4096)).unwrap();
        let pair = |offset: usize| offset / LINE_PAIR;
        let r = 2;
        // Receiver-written: the queue's consumer line and the box headers. Sender-written:
        // the tail, the pool, the slots.
        let receivers = [g.queue_consumer(r), g.box_header(r, 0), g.box_header(r, 3)];
        let senders = [
            g.queue_producers(r),
            g.box_pool(r),
            g.queue_slots(r),
            g.box_slots(r, 0),
            g.box_slots(r, 1),
            g.box_slots(r, 3) + g.box_stride - CACHE_LINE,
        ];
        for a in receivers {
            for b in senders {
                assert_ne!(pair(a), pair(b), "offsets {a} and {b}");
            }
        }
        assert_ne!(pair(g.queue_producers(r)), pair(g.box_pool(r)));
        for i in 0..4 {
            assert_eq!(g.box_slots(r, i) % LINE_PAIR, 0);
        }
    }

    #[test]
    fn memory_per_rank_does_not_grow_with_the_job() {
        let s = shape(64, 8320);
        let per_rank = |n: usize| Geometry::new(n, s).unwrap().inbox_stride;
        assert_eq!(per_rank(2), per_rank(256));
        let g = Geometry::new(256, s).unwrap();
        // Region descriptors (32 KiB per rank) and the inbox: linear in total.
        assert!(g.total_bytes / 256 < 4 << 20);
    }
}
