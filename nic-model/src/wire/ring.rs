//! The single-producer, single-consumer packet ring between one sender and one receiver.
//!
//! This module owns the hazard of writing and reading packet buffers that another process
//! touches concurrently. The protocol that makes it sound:
//!
//! * Only the sender writes a slot, and only while the slot is free: the sender's sequence
//!   number minus the receiver's published `consumed` count is below the ring size.
//! * The sender writes the payload and the header fields, then stores the slot's `seq` flag with
//!   release ordering. The receiver loads the flag with acquire ordering and reads the slot only
//!   after it sees exactly the sequence number it expects, so it never reads a half-written slot.
//! * The receiver releases slots by storing its new `consumed` count with release ordering
//!   after it has finished reading them, a quarter of the ring at a time or when it finds the
//!   ring empty; the sender reloads that count (acquire) only when its cached copy says the ring
//!   is full, so the consumer's line stays in the receiver's cache and in steady state only the
//!   slot lines move, once per packet. A sender's view of `consumed` is never ahead of the
//!   receiver's, so it never writes a slot still being read.
//!
//! No system call, no lock: the fast path is a handful of loads and stores.

use crate::error::Rank;
use crate::fabric::layout::{RingConsumer, SlotHeader, SLOT_HEADER};
use crate::fabric::Fabric;
use std::sync::atomic::Ordering;

/// The sender's end of the ring `src -> dst`.
pub(crate) struct TxRing {
    slots: *mut u8,
    consumer: *const RingConsumer,
    mask: u64,
    slot_bytes: usize,
    next_seq: u64,
    cached_consumed: u64,
}

/// The receiver's end of the ring `src -> dst`.
pub(crate) struct RxRing {
    slots: *const u8,
    consumer: *const RingConsumer,
    mask: u64,
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
    /// The fabric must outlive the ring, and this must be the only `TxRing` for `src -> dst`.
    pub(crate) unsafe fn new(f: &Fabric, src: Rank, dst: Rank) -> Self {
        let g = f.geometry();
        TxRing {
            slots: f.ptr(f.slot_offset(src, dst, 0)),
            consumer: f.ring_consumer(src, dst),
            mask: g.slots_per_ring as u64 - 1,
            slot_bytes: g.slot_bytes,
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
        // SAFETY: `consumer` points into the live fabric (constructor contract).
        self.cached_consumed = unsafe { (*self.consumer).consumed.load(Ordering::Acquire) };
        self.next_seq - self.cached_consumed <= self.mask
    }

    #[inline]
    fn slot(&self) -> *mut u8 {
        // SAFETY: the index is masked to the ring size, so the slot lies inside the ring.
        unsafe {
            self.slots
                .add((self.next_seq & self.mask) as usize * self.slot_bytes)
        }
    }

    /// The payload area of the next slot, `mtu` bytes long.
    ///
    /// # Safety
    /// Call only after `has_room()` returned true, and publish (or abandon) before calling again.
    #[inline]
    pub(crate) unsafe fn payload(&mut self) -> &mut [u8] {
        // SAFETY: the slot is free (caller contract), so the receiver does not read it; the
        // payload lies inside the slot.
        unsafe {
            std::slice::from_raw_parts_mut(
                self.slot().add(SLOT_HEADER),
                self.slot_bytes - SLOT_HEADER,
            )
        }
    }

    /// Hands the slot to the receiver.
    ///
    /// # Safety
    /// As for `payload`; `len` must not exceed the mtu.
    #[inline]
    pub(crate) unsafe fn publish(&mut self, len: usize, src: Rank, deliver_at: u64) {
        // SAFETY: the header lies at the start of the slot and is made of atomics.
        let h = unsafe { &*(self.slot() as *const SlotHeader) };
        h.len.store(len as u32, Ordering::Relaxed);
        h.src.store(src as u32, Ordering::Relaxed);
        h.deliver_at.store(deliver_at, Ordering::Relaxed);
        h.seq.store(self.next_seq + 1, Ordering::Release);
        self.next_seq += 1;
    }

    /// Packets sent so far on this ring.
    pub(crate) fn sent(&self) -> u64 {
        self.next_seq
    }
}

/// What the receiver sees at the head of its ring.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Arrival {
    pub len: usize,
    pub deliver_at: u64,
}

impl RxRing {
    /// # Safety
    /// The fabric must outlive the ring, and this must be the only `RxRing` for `src -> dst`.
    pub(crate) unsafe fn new(f: &Fabric, src: Rank, dst: Rank) -> Self {
        let g = f.geometry();
        RxRing {
            slots: f.ptr(f.slot_offset(src, dst, 0)),
            consumer: f.ring_consumer(src, dst),
            mask: g.slots_per_ring as u64 - 1,
            slot_bytes: g.slot_bytes,
            expected: 0,
            published: 0,
            publish_every: (g.slots_per_ring as u64 / 4).max(1),
        }
    }

    #[inline]
    fn slot(&self) -> *const u8 {
        // SAFETY: masked index, inside the ring.
        unsafe {
            self.slots
                .add((self.expected & self.mask) as usize * self.slot_bytes)
        }
    }

    /// Polls the head slot's flag: the packet there, if the sender has published it.
    #[inline]
    pub(crate) fn peek(&mut self) -> Option<Arrival> {
        // SAFETY: the header lies at the start of the slot and is made of atomics.
        let h = unsafe { &*(self.slot() as *const SlotHeader) };
        if h.seq.load(Ordering::Acquire) != self.expected + 1 {
            // Nothing more to take: tell the sender about every slot released so far.
            self.publish();
            return None;
        }
        Some(Arrival {
            len: h.len.load(Ordering::Relaxed) as usize,
            deliver_at: h.deliver_at.load(Ordering::Relaxed),
        })
    }

    /// The head packet's payload.
    ///
    /// # Safety
    /// Only after `peek()` returned `Some(a)` with `a.len == len`, and before `release()`.
    #[inline]
    pub(crate) unsafe fn payload(&self, len: usize) -> &[u8] {
        let len = len.min(self.slot_bytes - SLOT_HEADER);
        // SAFETY: the sender published this slot (acquire in `peek`) and does not write it
        // again until we release it.
        unsafe { std::slice::from_raw_parts(self.slot().add(SLOT_HEADER), len) }
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
            unsafe {
                (*self.consumer)
                    .consumed
                    .store(self.expected, Ordering::Release)
            };
        }
    }
}
