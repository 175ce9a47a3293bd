//! The senders' end of a receive queue: a bounded ring that any number of processes write and
//! one process, its owner, reads (multi-producer, single-consumer), lock-free.
//!
//! A sender claims the next position of the queue, `tail`, with a compare-and-swap on the
//! queue's producers' line, but only while that position's slot is free (the position minus
//! the receiver's published `consumed` count is below the queue size, the same test as a
//! single-producer ring's). The compare-and-swap gives each position to exactly one sender,
//! which then owns that slot alone: it writes the payload and the header, and publishes with
//! the slot's flag (release), exactly as a fast box's single sender does
//! ([`super::ring::publish_slot`]). The receiving end is the ordinary [`super::ring::RxRing`]:
//! it waits at its head for the flag of exactly that position, so a slot claimed later but
//! published earlier is taken only in its turn (the queue is FIFO in claim order), and it
//! releases slots in batches through its consumer line.
//!
//! What a sender may see: a stale `consumed` (it reloads it only when its cached copy says
//! full; a stale value only makes the queue look fuller), and a tail other senders moved (the
//! compare-and-swap fails and it retries with the value it got). Between claiming and
//! publishing a sender runs no other code than the caller's `fill`: a sender descheduled
//! there holds the receiver back at that position until it runs again, as in every bounded
//! queue of this kind (Vyukov's, Nemesis's); a sender that dies there is a dead peer, which
//! the layers above detect through the liveness checks.
//!
//! A sender's own packets are claimed in the order it sends them (it is one thread), so they
//! leave the queue in that order: what [`super::inbox`] relies on to merge the queue with the
//! fast boxes.

use super::ring::{publish_slot, RingParts, Stamp};
use crate::fabric::layout::SLOT_HEADER;
use std::sync::atomic::{AtomicU64, Ordering};

/// One sender's handle on one receiver's queue.
pub(crate) struct TxQueue {
    slots: *mut u8,
    consumer: *const AtomicU64,
    tail: *const AtomicU64,
    mask: u64,
    slot_bytes: usize,
    cached_consumed: u64,
}

/// A position this sender claimed; it must be published.
#[must_use]
pub(crate) struct Claim {
    pos: u64,
    slot: *mut u8,
}

impl TxQueue {
    /// # Safety
    /// `parts` and `tail` point into memory that outlives the handle: the queue's slots, its
    /// consumer count and its producers' tail.
    pub(crate) unsafe fn new(parts: RingParts, tail: *const AtomicU64) -> TxQueue {
        TxQueue {
            slots: parts.slots,
            consumer: parts.consumed,
            tail,
            mask: parts.nslots as u64 - 1,
            slot_bytes: parts.slot_bytes,
            cached_consumed: 0,
        }
    }

    /// Claims the next free position, or `None` when the queue is full.
    #[inline]
    pub(crate) fn claim(&mut self) -> Option<Claim> {
        // SAFETY: `tail` and `consumer` point into live memory (constructor contract).
        let (tail, consumer) = unsafe { (&*self.tail, &*self.consumer) };
        let mut pos = tail.load(Ordering::Relaxed);
        loop {
            if pos.wrapping_sub(self.cached_consumed) > self.mask {
                // Acquire: the receiver's reads of the slots it released happen before our
                // writes into them.
                self.cached_consumed = consumer.load(Ordering::Acquire);
                if pos.wrapping_sub(self.cached_consumed) > self.mask {
                    return None;
                }
            }
            // Relaxed suffices: the position's uniqueness is all the CAS decides; the slot's
            // contents are ordered by its flag (release/acquire).
            match tail.compare_exchange_weak(pos, pos + 1, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => {
                    // SAFETY: masked index, inside the queue.
                    let slot =
                        unsafe { self.slots.add((pos & self.mask) as usize * self.slot_bytes) };
                    return Some(Claim { pos, slot });
                }
                Err(now) => pos = now,
            }
        }
    }

    /// The first `len` bytes of the payload area of a claimed slot.
    ///
    /// # Safety
    /// `claim` comes from this queue and is not published yet; `len` is within the mtu
    /// (`slot_bytes - SLOT_HEADER`).
    #[inline]
    pub(crate) unsafe fn payload(&mut self, claim: &Claim, len: usize) -> &mut [u8] {
        debug_assert!(len <= self.slot_bytes - SLOT_HEADER);
        // SAFETY: the slot is ours until published (the claim); `len` bytes of payload lie
        // inside it (caller contract).
        unsafe { std::slice::from_raw_parts_mut(claim.slot.add(SLOT_HEADER), len) }
    }

    /// Hands a claimed slot to the receiver.
    ///
    /// # Safety
    /// As for `payload`; `stamp.len` within the mtu.
    #[inline]
    pub(crate) unsafe fn publish(&self, claim: Claim, stamp: Stamp) {
        // SAFETY: the slot is ours (the claim), the length within it (caller contract).
        unsafe { publish_slot(claim.slot, claim.pos, stamp) }
    }
}

#[cfg(test)]
mod tests {
    use super::super::ring::RxRing;
    use super::*;

    /// A queue in heap memory: slots, consumer count, tail.
    struct HeapQueue {
        slots: Vec<u64>,
        consumed: AtomicU64,
        tail: AtomicU64,
        nslots: usize,
        slot_bytes: usize,
    }

    impl HeapQueue {
        fn new(nslots: usize, slot_bytes: usize) -> HeapQueue {
            HeapQueue {
                slots: vec![0; nslots * slot_bytes / 8],
                consumed: AtomicU64::new(0),
                tail: AtomicU64::new(0),
                nslots,
                slot_bytes,
            }
        }
        fn parts(&self) -> RingParts {
            RingParts {
                slots: self.slots.as_ptr() as *mut u8,
                consumed: &self.consumed,
                nslots: self.nslots,
                slot_bytes: self.slot_bytes,
            }
        }
    }

    fn send(q: &mut TxQueue, src: usize, n: u32, bytes: &[u8]) -> bool {
        let Some(c) = q.claim() else { return false };
        // SAFETY: just claimed.
        unsafe {
            q.payload(&c, bytes.len()).copy_from_slice(bytes);
            q.publish(
                c,
                Stamp {
                    len: bytes.len(),
                    src,
                    pair_seq: n,
                    deliver_at: 0,
                },
            );
        }
        true
    }

    #[test]
    fn claim_publish_and_free_in_one_thread() {
        let heap = HeapQueue::new(4, 128);
        // SAFETY: the heap queue outlives both ends, one receiver.
        let (mut a, mut b, mut rx) = unsafe {
            (
                TxQueue::new(heap.parts(), &heap.tail),
                TxQueue::new(heap.parts(), &heap.tail),
                RxRing::new(heap.parts()),
            )
        };
        // Two senders fill the four slots between them; the fifth claim is refused.
        assert!(send(&mut a, 0, 0, b"a0"));
        assert!(send(&mut b, 1, 0, b"b0"));
        assert!(send(&mut a, 0, 1, b"a1"));
        assert!(send(&mut b, 1, 1, b"b1"));
        assert!(!send(&mut a, 0, 2, b"a2"));
        assert_eq!(heap.tail.load(Ordering::Relaxed), 4);
        // A claimed but unpublished slot holds the receiver at its position.
        let mut taken = Vec::new();
        while let Some(arr) = rx.peek() {
            // SAFETY: peeked with this length.
            taken.push((
                arr.src,
                arr.pair_seq,
                unsafe { rx.payload(arr.len) }.to_vec(),
            ));
            rx.release();
        }
        assert_eq!(
            taken,
            vec![
                (0, 0, b"a0".to_vec()),
                (1, 0, b"b0".to_vec()),
                (0, 1, b"a1".to_vec()),
                (1, 1, b"b1".to_vec())
            ]
        );
        // Found empty: the receiver published its releases, so both senders have room again.
        assert_eq!(heap.consumed.load(Ordering::Relaxed), 4);
        let late = b.claim().expect("room after the release");
        assert!(send(&mut a, 0, 2, b"a2"));
        assert!(rx.peek().is_none(), "b's claim is not published yet");
        // SAFETY: claimed above.
        unsafe {
            b.publish(
                late,
                Stamp {
                    len: 0,
                    src: 1,
                    pair_seq: 2,
                    deliver_at: 0,
                },
            )
        };
        let first = rx.peek().unwrap();
        assert_eq!((first.src, first.pair_seq), (1, 2));
        rx.release();
        let second = rx.peek().unwrap();
        assert_eq!((second.src, second.pair_seq), (0, 2));
    }

    #[test]
    fn many_senders_in_threads_lose_nothing_and_keep_their_order() {
        const SENDERS: usize = 4;
        const EACH: u32 = 20_000;
        let heap = HeapQueue::new(8, 128);
        struct Shared<'a>(&'a HeapQueue);
        // SAFETY: the threads only reach the heap queue through the ring protocol.
        unsafe impl Send for Shared<'_> {}
        unsafe impl Sync for Shared<'_> {}
        let shared = Shared(&heap);
        std::thread::scope(|s| {
            for src in 0..SENDERS {
                let shared = &shared;
                s.spawn(move || {
                    // SAFETY: the heap queue outlives the scope.
                    let mut q = unsafe { TxQueue::new(shared.0.parts(), &shared.0.tail) };
                    let start = std::time::Instant::now();
                    for i in 0..EACH {
                        let body = [src as u8; 40];
                        let mut bytes = i.to_le_bytes().to_vec();
                        bytes.extend_from_slice(&body[..(i % 40) as usize]);
                        while !send(&mut q, src, i, &bytes) {
                            assert!(start.elapsed().as_secs() < 60, "queue stayed full");
                            std::thread::yield_now();
                        }
                    }
                });
            }
            // SAFETY: the only receiver.
            let mut rx = unsafe { RxRing::new(shared.0.parts()) };
            let mut next = [0u32; SENDERS];
            let start = std::time::Instant::now();
            while next.iter().any(|&n| n < EACH) {
                let Some(a) = rx.peek() else {
                    assert!(start.elapsed().as_secs() < 60, "stalled at {next:?}");
                    std::thread::yield_now();
                    continue;
                };
                // SAFETY: peeked with this length.
                let p = unsafe { rx.payload(a.len) };
                let i = next[a.src];
                assert_eq!(a.pair_seq, i, "from {}", a.src);
                assert_eq!(&p[..4], &i.to_le_bytes());
                assert!(p[4..].iter().all(|&b| b == a.src as u8));
                assert_eq!(p.len(), 4 + (i % 40) as usize);
                next[a.src] += 1;
                rx.release();
            }
            assert!(rx.peek().is_none());
        });
    }
}
