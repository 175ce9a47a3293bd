//! A rank's inbox: one shared receive queue and a pool of fast boxes, and how the receiver
//! merges them back into the order each sender sent.
//!
//! **Paths.** A sender numbers the packets it sends to each receiver (`pair_seq`, per ordered
//! pair, wrapping at 2^32, in every slot's header). A packet of at most the box mtu goes into
//! the sender's fast box at that receiver, a single-producer ring ([`super::ring`]); the first
//! such packet claims the box from the receiver's pool (a compare-and-swap on the pool's
//! counter, then the box's owner stored with release ordering before its first packet). Any
//! other packet, and a small one when the pool is exhausted, goes through the receiver's queue
//! ([`super::queue`]), which every sender shares. A small packet whose box is full waits for
//! room there, as on a ring of its own: spilling it into the queue instead was measured to
//! cost a fifth of the small-message rate of two ranks streaming both ways at once (both
//! sides then pay for the queue's larger slots and the merge, and nothing pushes back). The
//! merge rule below would allow it all the same.
//!
//! **Learning of a box.** The packet with which a sender claims a box goes through the queue
//! (it announces the box), and so does every packet before it. A receiver that takes a queue
//! packet from a source whose box it does not know yet reads the pool: the owner's store
//! (release) came before that packet's flag (release), which the receiver loaded (acquire),
//! so the box is known before its first packet can be due. An empty poll thus reads no
//! shared line besides the known boxes' and the queue's head.
//!
//! **The merge rule.** The receiver keeps `expected[src]`, the number of the next packet from
//! `src` to deliver. It delivers
//!
//! 1. the head of a fast box only when its number is `expected[owner]`;
//! 2. the head of the queue, from `src` with number `s`, when `s == expected[src]`; when
//!    `s > expected[src]`, it first delivers the head of `src`'s fast box (which holds
//!    `expected[src]`), one packet per call, until `expected[src] == s`.
//!
//! **Why this is in order and loses nothing.** Take a sender `S` and number its packets to
//! `R` 0, 1, 2, ... in the order `S` sent them; each went either into `S`'s box or into `R`'s
//! queue. The box is FIFO, so its packets leave it in increasing numbers. `S` claims queue
//! positions in the order it sends (one thread, increasing tail), and the queue is FIFO in
//! position order, so `S`'s queue packets also leave the queue in increasing numbers. Both
//! rules deliver only packet `expected[S]`, then increment it, so whatever is delivered is
//! delivered in order and once. Nothing is held forever: say the packet numbered
//! `e = expected[S]` was published. If it is in the box it is the box's head (all lower
//! numbers were delivered, and the box is FIFO), and rule 1 takes it. If it is in the queue,
//! every queue packet ahead of it is deliverable in turn: a queue head from `T` with number
//! `t > expected[T]` means packets `expected[T] .. t` of `T` are not in the queue ahead of it
//! (those were consumed already), so they are in `T`'s box; `T` published them before it
//! published `t` into the queue (program order, then release on `t`'s flag), and the
//! receiver's acquire load of that flag makes them visible (and the box was learned with an
//! earlier queue packet of `T`, its announcement), so rule 2 drains them and then takes the
//! head. A head with `t < expected[T]` would be a
//! duplicate and cannot happen; the receiver stops the process if a corrupted fabric shows
//! one.
//!
//! **Polling cost.** A poll looks at the boxes that have been claimed (at most the pool's
//! size, whatever the job's size), round-robin from where the last delivery left off, then at
//! the queue head (first, after a run of box deliveries): O(active peers), not O(ranks). An empty poll reads lines that stay in
//! the receiver's cache until a sender writes them.
//!
//! **Timing profiles.** A packet whose modeled arrival (`deliver_at`) is in the future is not
//! delivered yet. At the head of the queue it also holds back the packets behind it, from
//! other senders, even if theirs are due earlier: the model of one receive path per rank is
//! slightly pessimistic there (a real NIC delivered each source's packets independently);
//! small packets in fast boxes are not held back by one another.

use super::queue::TxQueue;
use super::ring::{RingParts, RxRing, Stamp, TxRing};
use crate::error::Rank;
use crate::fabric::layout::{BoxHeader, BoxPool, Geometry, QueueConsumer, QueueProducers};
use crate::fabric::Fabric;
use crate::timing::now_ns;
use std::sync::atomic::Ordering;

/// `box_of` of a source without a known box.
const NO_BOX: u32 = u32::MAX;

/// The fast box of a sender at one receiver, as the sender sees it.
enum FastBox {
    /// Not asked for yet.
    Unclaimed,
    Mine(TxRing),
    /// The receiver's pool was exhausted: small packets go through the queue.
    Refused,
}

/// One sender's routes to one receiver.
struct Route {
    queue: TxQueue,
    fast: FastBox,
    /// Number of the next packet to this receiver.
    next_seq: u64,
}

/// A process's sending side: a route to every rank's inbox. Routes hold raw pointers into the
/// fabric: the owner drops this before the fabric.
pub(crate) struct Outbox {
    to: Vec<Route>,
    rank: Rank,
    base: *mut u8,
    geo: Geometry,
    mtu: usize,
    box_mtu: usize,
}

impl Outbox {
    /// # Safety
    /// The fabric outlives the outbox, and this process is the only one attached as `rank`.
    pub(crate) unsafe fn new(f: &Fabric, rank: Rank) -> Outbox {
        let geo = *f.geometry();
        let to = (0..geo.nranks)
            .map(|dst| {
                let producers: &QueueProducers = f.at(geo.queue_producers(dst));
                Route {
                    // SAFETY: the fabric outlives the route (caller contract).
                    queue: unsafe { TxQueue::new(queue_parts(f, &geo, dst), &producers.tail) },
                    fast: FastBox::Unclaimed,
                    next_seq: 0,
                }
            })
            .collect();
        Outbox {
            to,
            rank,
            base: f.ptr(0),
            geo,
            mtu: geo.mtu(),
            box_mtu: if geo.shape.box_count > 0 {
                geo.box_mtu()
            } else {
                0
            },
        }
    }

    /// Sends a packet of `len` bytes to `dest`: `fill` writes it in place, `when` gives its
    /// modeled arrival time once it is written. `false` when every buffer that could take it
    /// is in use (nothing was written).
    #[inline]
    pub(crate) fn send(
        &mut self,
        dest: Rank,
        len: usize,
        fill: &mut dyn FnMut(&mut [u8]),
        when: impl FnOnce() -> u64,
    ) -> bool {
        assert!(
            len <= self.mtu,
            "packet of {len} bytes exceeds the mtu of {}",
            self.mtu
        );
        let rank = self.rank;
        let route = &mut self.to[dest];
        let pair_seq = route.next_seq as u32;
        if len <= self.box_mtu {
            if let FastBox::Unclaimed = route.fast {
                // SAFETY: `base` maps the fabric of geometry `geo`, which outlives us.
                route.fast = unsafe { claim_box(self.base, &self.geo, rank, dest) };
                // This packet announces the box: it goes through the queue, where the
                // receiver learns of the box when it takes it (module doc).
            } else if let FastBox::Mine(ring) = &mut route.fast {
                if !ring.has_room() {
                    return false;
                }
                // SAFETY: `has_room` said the slot is free; we publish it at once.
                let buf = unsafe { ring.payload() };
                fill(&mut buf[..len]);
                let deliver_at = when();
                let stamp = Stamp {
                    len,
                    src: rank,
                    pair_seq,
                    deliver_at,
                };
                // SAFETY: as above; `len` within the box mtu.
                unsafe { ring.publish(stamp) };
                route.next_seq += 1;
                return true;
            }
        }
        let Some(claim) = route.queue.claim() else {
            return false;
        };
        // SAFETY: claimed just now, published at once.
        let buf = unsafe { route.queue.payload(&claim) };
        fill(&mut buf[..len]);
        let stamp = Stamp {
            len,
            src: rank,
            pair_seq,
            deliver_at: when(),
        };
        // SAFETY: as above; `len` within the mtu (asserted).
        unsafe { route.queue.publish(claim, stamp) };
        route.next_seq += 1;
        true
    }

    /// Packets sent to `dest` so far.
    pub(crate) fn sent_to(&self, dest: Rank) -> u64 {
        self.to[dest].next_seq
    }
}

/// Claims a fast box at `dest` for `rank`, if its pool has one left.
///
/// # Safety
/// `base` maps a fabric of geometry `geo` that outlives the box.
unsafe fn claim_box(base: *mut u8, geo: &Geometry, rank: Rank, dest: Rank) -> FastBox {
    let count = geo.shape.box_count as u32;
    // SAFETY: offsets of the geometry lie inside the mapping and are aligned for the types.
    let pool = unsafe { &*(base.add(geo.box_pool(dest)) as *const BoxPool) };
    let mut c = pool.claimed.load(Ordering::Relaxed);
    loop {
        if c >= count {
            return FastBox::Refused;
        }
        match pool
            .claimed
            .compare_exchange_weak(c, c + 1, Ordering::Relaxed, Ordering::Relaxed)
        {
            Ok(_) => break,
            Err(now) => c = now,
        }
    }
    let at = geo.fast_box(dest, c as usize);
    // SAFETY: as above; box `c` is ours alone (the CAS).
    let header = unsafe { &*(base.add(at) as *const BoxHeader) };
    // Release: a receiver that sees the owner sees a box nobody else writes; it learns the
    // owner before it can need the box (the box's packets come after this store).
    header.owner.store(rank as u32 + 1, Ordering::Release);
    // SAFETY: the box is ours alone and lives as long as the fabric (caller contract).
    FastBox::Mine(unsafe { TxRing::new(box_parts(base, geo, at, header)) })
}

/// Where rank `rank`'s shared receive queue lies.
fn queue_parts(f: &Fabric, geo: &Geometry, rank: Rank) -> RingParts {
    let consumer: &QueueConsumer = f.at(geo.queue_consumer(rank));
    RingParts {
        slots: f.ptr(geo.queue_slots(rank)),
        consumed: &consumer.consumed,
        nslots: geo.shape.queue_slots,
        slot_bytes: geo.shape.slot_bytes,
    }
}

/// Where the fast box at offset `at` of the mapping `base` lies (its `header` is the box's
/// first line).
///
/// # Safety
/// `base` maps a fabric of geometry `geo`, and `at` is one of its fast boxes.
unsafe fn box_parts(base: *mut u8, geo: &Geometry, at: usize, header: &BoxHeader) -> RingParts {
    RingParts {
        // SAFETY: the slots follow the header line inside the box (caller contract).
        slots: unsafe { base.add(at + std::mem::size_of::<BoxHeader>()) },
        consumed: &header.consumed,
        nslots: geo.shape.box_slots,
        slot_bytes: geo.shape.box_slot_bytes,
    }
}

/// A claimed fast box, as its receiver sees it.
struct RxBox {
    ring: RxRing,
    owner: Rank,
}

/// A process's receiving side: its queue, the fast boxes senders claimed, the merge.
pub(crate) struct Inbox {
    queue: RxRing,
    boxes: Vec<RxBox>,
    /// Index in `boxes` of each source's box, or `NO_BOX`.
    box_of: Vec<u32>,
    /// Number of the next packet to deliver from each source.
    expected: Vec<u32>,
    /// Boxes of the pool whose owner is known (in pool order).
    learned: Vec<bool>,
    /// Every box of the pool below this one is known.
    first_unlearned: usize,
    /// The box the next poll looks at first.
    next_box: usize,
    /// Deliveries in a row from boxes.
    box_streak: u32,
    pool: *const BoxPool,
    base: *mut u8,
    geo: Geometry,
    rank: Rank,
}

/// Deliveries in a row from fast boxes after which a poll looks at the queue first.
const QUEUE_EVERY: u32 = 16;

impl Inbox {
    /// # Safety
    /// The fabric outlives the inbox, and this process is the only one attached as `rank`.
    pub(crate) unsafe fn new(f: &Fabric, rank: Rank) -> Inbox {
        let geo = *f.geometry();
        Inbox {
            // SAFETY: the only receiver of this rank's queue (caller contract).
            queue: unsafe { RxRing::new(queue_parts(f, &geo, rank)) },
            boxes: Vec::new(),
            box_of: vec![NO_BOX; geo.nranks],
            expected: vec![0; geo.nranks],
            learned: vec![false; geo.shape.box_count],
            first_unlearned: 0,
            next_box: 0,
            box_streak: 0,
            pool: f.at::<BoxPool>(geo.box_pool(rank)),
            base: f.ptr(0),
            geo,
            rank,
        }
    }

    /// Lends the next deliverable packet, from any source, to `take`; its length, or `None`
    /// when nothing is deliverable now. The boxes come first, round-robin from the one after
    /// the last delivery, then the queue; the queue also goes first after `QUEUE_EVERY`
    /// deliveries in a row from boxes, so that a stream of small packets does not hold it up.
    #[inline]
    pub(crate) fn poll(&mut self, take: &mut dyn FnMut(Rank, &[u8])) -> Option<usize> {
        if self.box_streak >= QUEUE_EVERY {
            self.box_streak = 0;
            if let Some(len) = self.poll_queue(take) {
                return Some(len);
            }
        }
        let nb = self.boxes.len();
        let mut b = self.next_box;
        for _ in 0..nb {
            let after = if b + 1 >= nb { 0 } else { b + 1 };
            if let Some(len) = self.poll_box(b, take) {
                self.next_box = after;
                self.box_streak += 1;
                return Some(len);
            }
            b = after;
        }
        self.box_streak = 0;
        self.poll_queue(take)
    }

    #[inline]
    fn poll_queue(&mut self, take: &mut dyn FnMut(Rank, &[u8])) -> Option<usize> {
        let a = self.queue.peek()?;
        let src = a.src;
        if src >= self.geo.nranks {
            self.violation(format_args!("a queue packet names source {src}"));
        }
        if self.box_of[src] == NO_BOX && self.first_unlearned < self.learned.len() {
            // Perhaps the packet that announces `src`'s new box.
            self.learn_from(self.claimed());
        }
        let ahead = a.pair_seq.wrapping_sub(self.expected[src]);
        if ahead == 0 {
            if !due(a.deliver_at) {
                self.queue.publish();
                return None;
            }
            // SAFETY: peeked with this length; ours until released.
            take(src, unsafe { self.queue.payload(a.len) });
            self.queue.release();
            self.expected[src] = a.pair_seq.wrapping_add(1);
            Some(a.len)
        } else if ahead < 1 << 31 {
            // Earlier packets of `src` are in its fast box (module doc).
            let b = self.box_for(src);
            let len = self.poll_box(b, take);
            if len.is_none() && !self.box_head_is_expected(b) {
                self.violation(format_args!(
                    "packet {} of rank {src} is at the head of the queue, packet {} is in neither path",
                    a.pair_seq, self.expected[src]
                ));
            }
            len
        } else {
            self.violation(format_args!(
                "packet {} of rank {src} arrived after packet {}",
                a.pair_seq,
                self.expected[src].wrapping_sub(1)
            ))
        }
    }

    /// Delivers the head of box `b` if it is the next packet of its owner and due.
    #[inline]
    fn poll_box(&mut self, b: usize, take: &mut dyn FnMut(Rank, &[u8])) -> Option<usize> {
        let RxBox { ring, owner } = &mut self.boxes[b];
        let a = ring.peek()?;
        if a.pair_seq != self.expected[*owner] {
            // An earlier packet of its owner is still in the queue.
            return None;
        }
        if !due(a.deliver_at) {
            ring.publish();
            return None;
        }
        // SAFETY: peeked with this length; ours until released.
        take(*owner, unsafe { ring.payload(a.len) });
        ring.release();
        self.expected[*owner] = a.pair_seq.wrapping_add(1);
        Some(a.len)
    }

    fn box_head_is_expected(&mut self, b: usize) -> bool {
        let RxBox { ring, owner } = &mut self.boxes[b];
        ring.peek()
            .is_some_and(|a| a.pair_seq == self.expected[*owner])
    }

    /// The index of `src`'s box, learning it if it was claimed since the last look.
    fn box_for(&mut self, src: Rank) -> usize {
        if self.box_of[src] == NO_BOX {
            self.learn_from(self.claimed());
        }
        match self.box_of[src] {
            NO_BOX => self.violation(format_args!(
                "rank {src} skipped packet {} but has no fast box here",
                self.expected[src]
            )),
            b => b as usize,
        }
    }

    fn claimed(&self) -> usize {
        // SAFETY: the pool counter lies in the live fabric.
        let claimed = unsafe { (*self.pool).claimed.load(Ordering::Acquire) } as usize;
        claimed.min(self.learned.len())
    }

    #[cold]
    fn learn_from(&mut self, claimed: usize) {
        for i in self.first_unlearned..claimed {
            if self.learned[i] {
                continue;
            }
            let at = self.geo.fast_box(self.rank, i);
            // SAFETY: a box header of the live fabric (geometry offset, cache-line aligned).
            let header = unsafe { &*(self.base.add(at) as *const BoxHeader) };
            let owner = header.owner.load(Ordering::Acquire) as usize;
            if owner == 0 {
                // Claimed, owner not stored yet: when its announcement arrives.
                continue;
            }
            let src = owner - 1;
            if src >= self.geo.nranks || self.box_of[src] != NO_BOX {
                self.violation(format_args!("fast box {i} has a bad owner ({owner})"));
            }
            // SAFETY: `base` maps the live fabric and `at` is box `i` of this rank's pool.
            let parts = unsafe { box_parts(self.base, &self.geo, at, header) };
            self.box_of[src] = self.boxes.len() as u32;
            self.boxes.push(RxBox {
                // SAFETY: the only receiver of this box (we own the inbox).
                ring: unsafe { RxRing::new(parts) },
                owner: src,
            });
            self.learned[i] = true;
        }
        while self.first_unlearned < self.learned.len() && self.learned[self.first_unlearned] {
            self.first_unlearned += 1;
        }
    }

    #[cold]
    fn violation(&self, what: std::fmt::Arguments<'_>) -> ! {
        panic!(
            "rank {}: the fabric's packet order is broken ({what}): memory corrupted by a process of the job?",
            self.rank
        )
    }

    /// Fast boxes claimed at this rank and known to it.
    #[cfg(test)]
    pub(crate) fn boxes_known(&self) -> usize {
        self.boxes.len()
    }
}

/// Whether a packet of modeled arrival `deliver_at` may be delivered now.
#[inline]
fn due(deliver_at: u64) -> bool {
    deliver_at == 0 || deliver_at <= now_ns()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::layout::InboxShape;

    fn fabric(nranks: usize, box_count: usize) -> Fabric {
        let shape = InboxShape {
            queue_slots: 8,
            slot_bytes: 512,
            box_count,
            box_slots: 4,
            box_slot_bytes: 128,
        };
        let geo = Geometry::new(nranks, shape).unwrap();
        Fabric::create(geo, [7; 16], 1).unwrap().0
    }

    /// Packet `i` of `src`: small (box-sized) or large, alternately in runs of varying length.
    fn packet(src: Rank, i: u32) -> Vec<u8> {
        let len = if (i / 3 + i % 2).is_multiple_of(2) {
            8 + (i as usize % 90)
        } else {
            200 + (i as usize * 13) % 280
        };
        (0..len)
            .map(|k| (k as u32 ^ i.wrapping_mul(31) ^ (src as u32) << 5) as u8)
            .collect()
    }

    /// Drives several senders and one receiver in one thread, in a seeded random interleaving,
    /// and checks every packet arrives once, in order per source, intact.
    fn interleave(nranks: usize, box_count: usize, seed: u64) {
        const EACH: u32 = 3000;
        let f = fabric(nranks, box_count);
        let receiver = nranks - 1;
        // SAFETY: the fabric outlives both; one process plays each rank.
        let mut outs: Vec<Outbox> = (0..nranks - 1)
            .map(|r| unsafe { Outbox::new(&f, r) })
            .collect();
        let mut inbox = unsafe { Inbox::new(&f, receiver) };
        let mut sent = vec![0u32; nranks - 1];
        let mut got = vec![0u32; nranks];
        let mut rng = fastrand::Rng::with_seed(seed);
        let mut steps = 0u64;
        while got[..nranks - 1].iter().any(|&g| g < EACH) {
            steps += 1;
            assert!(
                steps < 10_000_000,
                "no progress: sent {sent:?}, got {got:?}"
            );
            if rng.u8(..3) == 0 {
                let mut take = |src: Rank, p: &[u8]| {
                    assert_eq!(p, packet(src, got[src]), "from {src}");
                    got[src] += 1;
                };
                inbox.poll(&mut take);
            } else {
                let s = rng.usize(..nranks - 1);
                if sent[s] < EACH {
                    let p = packet(s, sent[s]);
                    if outs[s].send(receiver, p.len(), &mut |b| b.copy_from_slice(&p), || 0) {
                        sent[s] += 1;
                    }
                }
            }
        }
        assert!(inbox
            .poll(&mut |s, _| panic!("extra packet from {s}"))
            .is_none());
        assert_eq!(inbox.boxes_known(), box_count.min(nranks - 1));
    }

    #[test]
    fn merge_keeps_each_senders_order_with_boxes_for_all() {
        interleave(4, 8, 1);
        interleave(4, 8, 2);
    }

    #[test]
    fn merge_keeps_order_when_some_senders_have_no_box() {
        interleave(6, 2, 3);
        interleave(6, 0, 4);
    }

    #[test]
    fn a_queue_head_waits_for_the_box_packets_before_it() {
        let f = fabric(2, 2);
        // SAFETY: as above.
        let mut out = unsafe { Outbox::new(&f, 0) };
        let mut inbox = unsafe { Inbox::new(&f, 1) };
        // Small (announces the box: queue), large (queue), small (box) x4, then the box is
        // full: a small packet waits, a large one goes through the queue behind the box's.
        let sizes = [8, 300, 8, 9, 10, 11, 12];
        for (i, &len) in sizes[..6].iter().enumerate() {
            assert!(out.send(1, len, &mut |b| b.fill(i as u8), || 0));
        }
        assert!(!out.send(1, 12, &mut |_| {}, || 0), "the box is full");
        assert!(out.send(1, 301, &mut |b| b.fill(6), || 0));
        let sizes = [8, 300, 8, 9, 10, 11, 301];
        let mut order = Vec::new();
        while inbox
            .poll(&mut |src, p| {
                assert_eq!(src, 0);
                order.push((p[0], p.len()));
            })
            .is_some()
        {}
        let expect: Vec<_> = sizes
            .iter()
            .enumerate()
            .map(|(i, &l)| (i as u8, l))
            .collect();
        assert_eq!(order, expect);
        assert_eq!(out.sent_to(1), 7);
    }

    #[test]
    #[should_panic(expected = "packet order is broken")]
    fn a_duplicate_stops_the_receiver() {
        let f = fabric(2, 0);
        // SAFETY: as above; two outboxes for one rank break the protocol on purpose.
        let (mut a, mut b) = unsafe { (Outbox::new(&f, 0), Outbox::new(&f, 0)) };
        let mut inbox = unsafe { Inbox::new(&f, 1) };
        assert!(a.send(1, 300, &mut |_| {}, || 0));
        assert!(b.send(1, 300, &mut |_| {}, || 0));
        while inbox.poll(&mut |_, _| {}).is_some() {}
    }
}
