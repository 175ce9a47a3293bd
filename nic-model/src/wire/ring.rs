//! The single-producer ring, and the receiving end every packet buffer of the fabric shares.
//!
//! A fast box is a ring with one sender ([`TxRing`]) and one receiver ([`RxRing`]); a receive
//! queue is a ring with many senders (`super::queue::TxQueue`) and the same [`RxRing`] at the
//! receiver. This module owns the hazard of writing and reading packet buffers that another
//! process touches concurrently. The protocol that makes it sound:
//!
//! * A slot at position `p` (slot `p mod size`) is written only by the sender that owns
//!   position `p` (the box's one sender; in a queue, the sender whose compare-and-swap moved
//!   the tail from `p`), and only once the slot is free: `p` minus the receiver's published
//!   `consumed` count is below the ring size.
//! * The sender writes the payload and the header fields, then stores the slot's flag, the low
//!   32 bits of `p + 1`, with release ordering. The receiver loads the flag with acquire
//!   ordering and reads the slot only after it sees exactly the flag of the position it
//!   expects, so it never reads a half-written slot, nor one of an earlier lap.
//! * The receiver releases slots by storing its new `consumed` count with release ordering
//!   after it has finished reading them, a quarter of the ring at a time or when it finds the
//!   ring empty; a sender reloads that count (acquire) only when its cached copy says the ring
//!   is full, so the consumer's line stays in the receiver's cache and in steady state only the
//!   slot lines move, once per packet. A sender's view of `consumed` is never ahead of the
//!   receiver's, so it never writes a slot still being read.
//!
//! No system call, no lock: the fast path is a handful of loads and stores.

use crate::error::Rank;
use crate::fabric::layout::{SlotHeader, SLOT_HEADER};
use std::sync::atomic::{AtomicU64, Ordering};

/// Where a ring lies in the fabric: its slots and its consumer count.
#[derive(Clone, Copy)]
pub(crate) struct RingParts {
    pub slots: *mut u8,
    pub consumed: *const AtomicU64,
    /// A power of two.
    pub nslots: usize,
    pub slot_bytes: usize,
}

/// What a sender writes in a slot's header besides the flag.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stamp {
    pub len: usize,
    pub src: Rank,
    pub pair_seq: u32,
    pub deliver_at: u64,
}

/// Writes the header of the slot at `slot` for position `pos` and publishes it.
///
/// # Safety
/// `slot` is the start of a slot the caller owns (see the module doc), `stamp.len` within
/// its payload area.
#[inline]
pub(crate) unsafe fn publish_slot(slot: *mut u8, pos: u64, stamp: Stamp) {
    // SAFETY: the header lies at the start of the slot and is made of atomics.
    let h = unsafe { &*(slot as *const SlotHeader) };
    h.len.store(stamp.len as u32, Ordering::Relaxed);
    h.src.store(stamp.src as u32, Ordering::Relaxed);
    h.pair_seq.store(stamp.pair_seq, Ordering::Relaxed);
    h.deliver_at.store(stamp.deliver_at, Ordering::Relaxed);
    h.seq.store(flag(pos), Ordering::Release);
}

/// The flag of position `pos`.
#[inline]
pub(crate) fn flag(pos: u64) -> u32 {
    (pos as u32).wrapping_add(1)
}

/// The sender's end of a fast box.
///
/// It keeps a pointer to the slot of its next position, advanced (and wrapped) by one slot per
/// packet, so that a send computes no address.
pub(crate) struct TxRing {
    /// The slot of position `next_seq`.
    next_slot: *mut u8,
    first: *mut u8,
    end: *mut u8,
    consumer: *const AtomicU64,
    mask: u64,
    slot_bytes: usize,
    next_seq: u64,
    cached_consumed: u64,
}

/// The receiver's end of a fast box or of a receive queue.
///
/// Like [`TxRing`], it keeps a pointer to its head slot (the slot of position `expected`) and
/// the flag that slot must show, so that an empty poll is one load and one compare.
pub(crate) struct RxRing {
    /// The slot of position `expected`.
    head: *const u8,
    /// `flag(expected)`.
    head_flag: u32,
    first: *const u8,
    end: *const u8,
    consumer: *const AtomicU64,
    slot_bytes: usize,
    expected: u64,
    /// The consumed count last stored in the ring's consumer line (see [`RxRing::release`]).
    published: u64,
    /// Releases are published every `publish_every` packets, and whenever the ring is found
    /// empty.
    publish_every: u64,
}

impl TxRing {
    /// # Safety
    /// `parts` stay valid as long as the ring, and this is the only sender of that ring.
    pub(crate) unsafe fn new(parts: RingParts) -> Self {
        TxRing {
            next_slot: parts.slots,
            first: parts.slots,
            // SAFETY: the ring's slots are one block of `nslots * slot_bytes` bytes.
            end: unsafe { parts.slots.add(parts.nslots * parts.slot_bytes) },
            consumer: parts.consumed,
            mask: parts.nslots as u64 - 1,
            slot_bytes: parts.slot_bytes,
            next_seq: 0,
            cached_consumed: 0,
        }
    }

    /// True when a slot is free; refreshes the cached consumer count only when needed.
    #[inline]
    pub(crate) fn has_room(&mut self) -> bool {
        if self.next_seq - self.cached_consumed <= self.mask {
            return true;
        }
        self.refresh()
    }

    #[cold]
    #[inline(never)]
    fn refresh(&mut self) -> bool {
        // SAFETY: `consumer` points into the live fabric (constructor contract).
        self.cached_consumed = unsafe { (*self.consumer).load(Ordering::Acquire) };
        self.next_seq - self.cached_consumed <= self.mask
    }

    /// The first `len` bytes of the payload area of the next slot.
    ///
    /// # Safety
    /// Call only after `has_room()` returned true, with `len` within the slot's payload area
    /// (`slot_bytes - SLOT_HEADER`), and publish (or abandon) before calling again.
    #[inline]
    pub(crate) unsafe fn payload(&mut self, len: usize) -> &mut [u8] {
        debug_assert!(len <= self.slot_bytes - SLOT_HEADER);
        // SAFETY: the slot is free (caller contract), so the receiver does not read it; the
        // payload's `len` bytes lie inside the slot (caller contract).
        unsafe { std::slice::from_raw_parts_mut(self.next_slot.add(SLOT_HEADER), len) }
    }

    /// Hands the slot to the receiver.
    ///
    /// # Safety
    /// As for `payload`; `stamp.len` must not exceed the slot's payload area.
    #[inline]
    pub(crate) unsafe fn publish(&mut self, stamp: Stamp) {
        // SAFETY: the slot is ours (caller contract), the length within it.
        unsafe { publish_slot(self.next_slot, self.next_seq, stamp) };
        self.next_seq += 1;
        // SAFETY: at most one slot past the last one, which is `end` (then wrapped).
        self.next_slot = unsafe { self.next_slot.add(self.slot_bytes) };
        if self.next_slot == self.end {
            self.next_slot = self.first;
        }
    }
}

/// What the receiver sees at the head of its ring.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Arrival {
    pub len: usize,
    pub src: Rank,
    pub pair_seq: u32,
    pub deliver_at: u64,
}

impl RxRing {
    /// # Safety
    /// `parts` stay valid as long as the ring, and this is the only receiver of that ring.
    pub(crate) unsafe fn new(parts: RingParts) -> Self {
        RxRing {
            head: parts.slots,
            head_flag: flag(0),
            first: parts.slots,
            // SAFETY: the ring's slots are one block of `nslots * slot_bytes` bytes.
            end: unsafe { parts.slots.add(parts.nslots * parts.slot_bytes) },
            consumer: parts.consumed,
            slot_bytes: parts.slot_bytes,
            expected: 0,
            published: 0,
            publish_every: (parts.nslots as u64 / 4).max(1),
        }
    }

    #[inline]
    fn header(&self) -> &SlotHeader {
        // SAFETY: `head` is the start of a slot of the live ring, whose header is made of
        // atomics.
        unsafe { &*(self.head as *const SlotHeader) }
    }

    /// Whether the sender has published the head slot (acquire: its contents are visible).
    #[inline]
    pub(crate) fn ready(&self) -> bool {
        self.header().seq.load(Ordering::Acquire) == self.head_flag
    }

    /// The head packet's header fields, once [`RxRing::ready`] said true.
    #[inline]
    pub(crate) fn arrival(&self) -> Arrival {
        let h = self.header();
        Arrival {
            len: h.len.load(Ordering::Relaxed) as usize,
            src: h.src.load(Ordering::Relaxed) as Rank,
            pair_seq: h.pair_seq.load(Ordering::Relaxed),
            deliver_at: h.deliver_at.load(Ordering::Relaxed),
        }
    }

    /// The head packet's number in its pair and modeled arrival, once [`RxRing::ready`] said
    /// true (what a fast box's poll needs: its source is the box's owner).
    #[inline]
    pub(crate) fn seq_and_time(&self) -> (u32, u64, usize) {
        let h = self.header();
        (
            h.pair_seq.load(Ordering::Relaxed),
            h.deliver_at.load(Ordering::Relaxed),
            h.len.load(Ordering::Relaxed) as usize,
        )
    }

    /// Polls the head slot's flag: the packet there, if the sender has published it.
    #[cfg(test)]
    pub(crate) fn peek(&mut self) -> Option<Arrival> {
        if !self.ready() {
            // Nothing more to take: tell the sender about every slot released so far.
            self.publish();
            return None;
        }
        Some(self.arrival())
    }

    /// The head packet's payload.
    ///
    /// # Safety
    /// Only after `ready()` returned true, with `len` the head's length, and before
    /// `release()`.
    #[inline]
    pub(crate) unsafe fn payload(&self, len: usize) -> &[u8] {
        let len = len.min(self.slot_bytes - SLOT_HEADER);
        // SAFETY: the sender published this slot (acquire in `ready`) and does not write it
        // again until we release it; `len` is clamped to the slot's payload area.
        unsafe { std::slice::from_raw_parts(self.head.add(SLOT_HEADER), len) }
    }

    /// Gives the head slot back to the sender.
    ///
    /// The release reaches the sender in batches: the consumer line is stored every
    /// `publish_every` packets (a quarter of the ring) and whenever the receiver finds the ring
    /// empty or waits for a packet's delivery time ([`RxRing::publish`]). A store on every
    /// packet would pull the line away from a sender that polls it for room, a cache-line
    /// transfer per message on a streaming route. A batch never holds slots the sender waits
    /// for against a waiting receiver: before a receiver waits, it has found the ring empty
    /// and published.
    #[inline]
    pub(crate) fn release(&mut self) {
        self.expected += 1;
        self.head_flag = flag(self.expected);
        // SAFETY: at most one slot past the last one, which is `end` (then wrapped).
        self.head = unsafe { self.head.add(self.slot_bytes) };
        if self.head == self.end {
            self.head = self.first;
        }
        if self.expected - self.published >= self.publish_every {
            self.publish();
        }
    }

    /// Stores the consumed count for the sender, if it changed.
    #[inline]
    pub(crate) fn publish(&mut self) {
        if self.published != self.expected {
            self.published = self.expected;
            // SAFETY: `consumer` points into the live fabric.
            unsafe { (*self.consumer).store(self.expected, Ordering::Release) };
        }
    }
}
