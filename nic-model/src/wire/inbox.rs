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
//! the queue head (first, after a run of box deliveries): O(active peers), not O(ranks). An
//! empty poll reads lines that stay in the receiver's cache until a sender writes them. With
//! one known box (a pair of ranks, or one active peer) the poll is written out inline: an
//! empty one is the box's head flag and the queue's head flag, each one load and one compare
//! against a value kept ready (`RxRing` keeps its head slot's address and the flag it
//! expects), and calls nothing; a delivery calls out once, to the code that takes the
//! packet. Each box keeps its owner's merge number (`expected`) with it, so a box delivery
//! reads no other table.
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
    fast: FastBox,
    /// Number of the next packet to this receiver.
    next_seq: u64,
    /// The last send to this receiver found every buffer that could take it in use.
    stalled: bool,
    queue: TxQueue,
}

/// What [`Outbox::send`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sent {
    Yes,
    /// Every buffer that could take the packet is in use (nothing was written); `first`: the
    /// previous send to this receiver went through (a new stall begins).
    Full {
        first: bool,
    },
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
                    fast: FastBox::Unclaimed,
                    next_seq: 0,
                    stalled: false,
                    // SAFETY: the fabric outlives the route (caller contract).
                    queue: unsafe { TxQueue::new(queue_parts(f, &geo, dst), &producers.tail) },
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
    /// modeled arrival time once it is written. [`Sent::Full`] when every buffer that could
    /// take it is in use (nothing was written).
    #[inline]
    pub(crate) fn send(
        &mut self,
        dest: Rank,
        len: usize,
        fill: &mut dyn FnMut(&mut [u8]),
        when: impl FnOnce() -> u64,
    ) -> Sent {
        assert!(
            len <= self.mtu,
            "packet of {len} bytes exceeds the mtu of {}",
            self.mtu
        );
        let rank = self.rank;
        let route = &mut self.to[dest];
        let pair_seq = route.next_seq as u32;
        if len <= self.box_mtu {
            match &mut route.fast {
                FastBox::Mine(ring) => {
                    if !ring.has_room() {
                        return route.stall();
                    }
                    // SAFETY: `has_room` said the slot is free; `len` is within the box mtu
                    // (tested above); we publish at once.
                    fill(unsafe { ring.payload(len) });
                    let stamp = Stamp {
                        len,
                        src: rank,
                        pair_seq,
                        deliver_at: when(),
                    };
                    // SAFETY: as above.
                    unsafe { ring.publish(stamp) };
                    route.next_seq += 1;
                    route.stalled = false;
                    return Sent::Yes;
                }
                FastBox::Unclaimed => {
                    // SAFETY: `base` maps the fabric of geometry `geo`, which outlives us.
                    route.fast = unsafe { claim_box(self.base, &self.geo, rank, dest) };
                    // This packet announces the box: it goes through the queue, where the
                    // receiver learns of the box when it takes it (module doc).
                }
                FastBox::Refused => {}
            }
        }
        let Some(claim) = route.queue.claim() else {
            return route.stall();
        };
        // SAFETY: claimed just now, published at once; `len` within the mtu (asserted).
        fill(unsafe { route.queue.payload(&claim, len) });
        let stamp = Stamp {
            len,
            src: rank,
            pair_seq,
            deliver_at: when(),
        };
        // SAFETY: as above.
        unsafe { route.queue.publish(claim, stamp) };
        route.next_seq += 1;
        route.stalled = false;
        Sent::Yes
    }

    /// Packets sent to `dest` so far.
    pub(crate) fn sent_to(&self, dest: Rank) -> u64 {
        self.to[dest].next_seq
    }
}

impl Route {
    #[inline]
    fn stall(&mut self) -> Sent {
        let first = !self.stalled;
        self.stalled = true;
        Sent::Full { first }
    }
}

/// Claims a fast box at `dest` for `rank`, if its pool has one left.
///
/// # Safety
/// `base` maps a fabric of geometry `geo` that outlives the box.
#[cold]
#[inline(never)]
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
    // SAFETY: as above; box `c` is ours alone (the CAS).
    let header = unsafe { &*(base.add(geo.box_header(dest, c as usize)) as *const BoxHeader) };
    // Release: a receiver that sees the owner sees a box nobody else writes; it learns the
    // owner before it can need the box (the box's packets come after this store).
    header.owner.store(rank as u32 + 1, Ordering::Release);
    // SAFETY: the box is ours alone and lives as long as the fabric (caller contract).
    FastBox::Mine(unsafe { TxRing::new(box_parts(base, geo, dest, c as usize, header)) })
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

/// Where fast box `index` of rank `rank` lies in the mapping `base` (`header` is its line in
/// the table of box headers).
///
/// # Safety
/// `base` maps a fabric of geometry `geo`, and `index` is one of `rank`'s fast boxes.
unsafe fn box_parts(
    base: *mut u8,
    geo: &Geometry,
    rank: Rank,
    index: usize,
    header: &BoxHeader,
) -> RingParts {
    RingParts {
        // SAFETY: an offset of the geometry, inside the mapping (caller contract).
        slots: unsafe { base.add(geo.box_slots(rank, index)) },
        consumed: &header.consumed,
        nslots: geo.shape.box_slots,
        slot_bytes: geo.shape.box_slot_bytes,
    }
}

/// A claimed fast box, as its receiver sees it.
struct RxBox {
    ring: RxRing,
    owner: Rank,
    /// Number of the next packet to deliver from `owner`: its entry of the merge, kept with
    /// the box (not in [`Inbox::expected`]) so that a box's poll reads one line of the
    /// receiver's own memory besides the box's head slot.
    expected: u32,
}

/// A process's receiving side: its queue, the fast boxes senders claimed, the merge.
pub(crate) struct Inbox {
    queue: RxRing,
    boxes: Vec<RxBox>,
    /// Index in `boxes` of each source's box, or `NO_BOX`.
    box_of: Vec<u32>,
    /// Number of the next packet to deliver from each source without a known box (when its
    /// box is learned, the number moves into the box: [`RxBox::expected`]).
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
            boxes: Vec::with_capacity(geo.shape.box_count),
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
    ///
    /// An empty poll loads each known box's head flag and the queue's head flag, lines that
    /// stay in this process's cache until a sender writes them, and stores nothing shared
    /// unless it has releases to publish.
    ///
    /// The common case, at most one box known and no queue turn due, is written out inline so
    /// that an empty poll is two flag loads and compares without a call: the work of a
    /// delivery (and the caller's `take`) is in functions of their own.
    #[inline]
    pub(crate) fn poll(&mut self, take: &mut dyn FnMut(Rank, &[u8])) -> Option<usize> {
        if self.box_streak >= QUEUE_EVERY || self.boxes.len() > 1 {
            return self.poll_in_turn(take);
        }
        if let Some(bx) = self.boxes.first_mut() {
            if bx.ring.ready() {
                return self.poll_ready_box(take);
            }
            // Nothing more to take: tell the sender about every slot released so far.
            bx.ring.publish();
        }
        self.box_streak = 0;
        self.poll_queue(take)
    }

    /// [`Inbox::poll`] when its one box's head is published.
    #[inline(never)]
    fn poll_ready_box(&mut self, take: &mut dyn FnMut(Rank, &[u8])) -> Option<usize> {
        if let Some(len) = self.deliver_box(0, take) {
            self.box_streak += 1;
            return Some(len);
        }
        self.box_streak = 0;
        self.poll_queue(take)
    }

    /// [`Inbox::poll`] with several boxes, or when the queue's turn has come.
    #[inline(never)]
    fn poll_in_turn(&mut self, take: &mut dyn FnMut(Rank, &[u8])) -> Option<usize> {
        if self.box_streak < QUEUE_EVERY {
            if let Some(len) = self.poll_boxes_in_turn(take) {
                self.box_streak += 1;
                return Some(len);
            }
            self.box_streak = 0;
            return self.poll_queue(take);
        }
        self.box_streak = 0;
        if let Some(len) = self.poll_queue(take) {
            return Some(len);
        }
        let len = self.poll_boxes_in_turn(take)?;
        self.box_streak = 1;
        Some(len)
    }

    /// One packet from the boxes, round-robin from the one after the last delivery.
    #[inline]
    fn poll_boxes_in_turn(&mut self, take: &mut dyn FnMut(Rank, &[u8])) -> Option<usize> {
        let nb = self.boxes.len();
        let mut b = self.next_box;
        for _ in 0..nb {
            let after = if b + 1 >= nb { 0 } else { b + 1 };
            if let Some(len) = self.poll_box(b, take) {
                self.next_box = after;
                return Some(len);
            }
            b = after;
        }
        None
    }

    /// The queue's head, if it is deliverable (or the box packet it waits for).
    #[inline]
    fn poll_queue(&mut self, take: &mut dyn FnMut(Rank, &[u8])) -> Option<usize> {
        if !self.queue.ready() {
            // Nothing more to take: tell the senders about every slot released so far.
            self.queue.publish();
            return None;
        }
        self.take_from_queue(take)
    }

    #[inline(never)]
    fn take_from_queue(&mut self, take: &mut dyn FnMut(Rank, &[u8])) -> Option<usize> {
        let a = self.queue.arrival();
        let src = a.src;
        if src >= self.geo.nranks {
            self.violation(format_args!("a queue packet names source {src}"));
        }
        if self.box_of[src] == NO_BOX && self.first_unlearned < self.learned.len() {
            // Perhaps the packet that announces `src`'s new box.
            self.learn_from(self.claimed());
        }
        let b = self.box_of[src];
        let expected = self.expected_of(src);
        let ahead = a.pair_seq.wrapping_sub(expected);
        if ahead == 0 {
            if !due(a.deliver_at) {
                self.queue.publish();
                return None;
            }
            // SAFETY: the head is ready, with this length; ours until released.
            take(src, unsafe { self.queue.payload(a.len) });
            self.queue.release();
            let next = a.pair_seq.wrapping_add(1);
            match b {
                NO_BOX => self.expected[src] = next,
                b => self.boxes[b as usize].expected = next,
            }
            Some(a.len)
        } else if ahead < 1 << 31 {
            // Earlier packets of `src` are in its fast box (module doc).
            if b == NO_BOX {
                self.violation(format_args!(
                    "rank {src} skipped packet {expected} but has no fast box here"
                ));
            }
            let len = self.poll_box(b as usize, take);
            if len.is_none() && !self.box_head_is_expected(b as usize) {
                self.violation(format_args!(
                    "packet {} of rank {src} is at the head of the queue, packet {expected} is in neither path",
                    a.pair_seq
                ));
            }
            len
        } else {
            self.violation(format_args!(
                "packet {} of rank {src} arrived after packet {}",
                a.pair_seq,
                expected.wrapping_sub(1)
            ))
        }
    }

    /// Number of the next packet to deliver from `src`.
    fn expected_of(&self, src: Rank) -> u32 {
        match self.box_of[src] {
            NO_BOX => self.expected[src],
            b => self.boxes[b as usize].expected,
        }
    }

    /// Delivers the head of box `b` if it is the next packet of its owner and due.
    #[inline]
    fn poll_box(&mut self, b: usize, take: &mut dyn FnMut(Rank, &[u8])) -> Option<usize> {
        let ring = &mut self.boxes[b].ring;
        if !ring.ready() {
            // Nothing more to take: tell the sender about every slot released so far.
            ring.publish();
            return None;
        }
        self.deliver_box(b, take)
    }

    /// Delivers the head of box `b`, which [`RxRing::ready`] found published, if it is the
    /// next packet of its owner and due.
    #[inline(always)]
    fn deliver_box(&mut self, b: usize, take: &mut dyn FnMut(Rank, &[u8])) -> Option<usize> {
        let bx = &mut self.boxes[b];
        let (pair_seq, deliver_at, len) = bx.ring.seq_and_time();
        if pair_seq != bx.expected {
            // An earlier packet of its owner is still in the queue.
            return None;
        }
        if !due(deliver_at) {
            bx.ring.publish();
            return None;
        }
        // SAFETY: the head is ready (caller), with this length; ours until released.
        take(bx.owner, unsafe { bx.ring.payload(len) });
        bx.ring.release();
        bx.expected = pair_seq.wrapping_add(1);
        Some(len)
    }

    fn box_head_is_expected(&self, b: usize) -> bool {
        let bx = &self.boxes[b];
        bx.ring.ready() && bx.ring.seq_and_time().0 == bx.expected
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
            let at = self.geo.box_header(self.rank, i);
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
            // SAFETY: `base` maps the live fabric and `i` is a box of this rank's pool.
            let parts = unsafe { box_parts(self.base, &self.geo, self.rank, i, header) };
            self.box_of[src] = self.boxes.len() as u32;
            self.boxes.push(RxBox {
                // SAFETY: the only receiver of this box (we own the inbox).
                ring: unsafe { RxRing::new(parts) },
                owner: src,
                // From now on the merge keeps `src`'s number with its box.
                expected: self.expected[src],
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
    deliver_at == 0 || due_by_the_clock(deliver_at)
}

/// [`due`] under a timing profile (kept out of line: without a profile every packet is due
/// at once, and the clock's call would cost the fast path registers).
#[cold]
#[inline(never)]
fn due_by_the_clock(deliver_at: u64) -> bool {
    deliver_at <= now_ns()
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
                    if outs[s].send(receiver, p.len(), &mut |b| b.copy_from_slice(&p), || 0)
                        == Sent::Yes
                    {
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
            assert_eq!(out.send(1, len, &mut |b| b.fill(i as u8), || 0), Sent::Yes);
        }
        assert_eq!(
            out.send(1, 12, &mut |_| {}, || 0),
            Sent::Full { first: true },
            "the box is full"
        );
        assert_eq!(
            out.send(1, 12, &mut |_| {}, || 0),
            Sent::Full { first: false }
        );
        assert_eq!(out.send(1, 301, &mut |b| b.fill(6), || 0), Sent::Yes);
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
        assert_eq!(a.send(1, 300, &mut |_| {}, || 0), Sent::Yes);
        assert_eq!(b.send(1, 300, &mut |_| {}, || 0), Sent::Yes);
        while inbox.poll(&mut |_, _| {}).is_some() {}
    }
}

/// One sender and one receiver in one thread with the default inbox shape, for counting the
/// instructions of the small-packet path: `valgrind --tool=callgrind` on the test binary with
/// `--exact wire::inbox::hot_path::small_packets_one_at_a_time`, then the inclusive counts of
/// `send_one`, `poll_one` and `poll_empty` divided by `ROUNDS`.
#[cfg(test)]
mod hot_path {
    use super::*;
    use crate::fabric::layout::InboxShape;
    use crate::fabric::JobConfig;

    const ROUNDS: u32 = 20_000;

    #[inline(never)]
    fn send_one(out: &mut Outbox, i: u32) -> bool {
        out.send(
            1,
            8,
            &mut |b| b.copy_from_slice(&u64::from(i).to_le_bytes()),
            || 0,
        ) == Sent::Yes
    }

    #[inline(never)]
    fn poll_one(inbox: &mut Inbox, got: &mut u64) -> Option<usize> {
        inbox.poll(&mut |_, p| *got = u64::from_le_bytes(p.try_into().unwrap()))
    }

    #[inline(never)]
    fn poll_empty(inbox: &mut Inbox) -> Option<usize> {
        inbox.poll(&mut |_, _| panic!("nothing was sent"))
    }

    #[test]
    fn small_packets_one_at_a_time() {
        let shape: InboxShape = JobConfig {
            box_count: 64,
            ..JobConfig::new(2)
        }
        .shape();
        let geo = Geometry::new(2, shape).unwrap();
        let f = Fabric::create(geo, [7; 16], 1).unwrap().0;
        // SAFETY: the fabric outlives both; one process plays each rank.
        let (mut out, mut inbox) = unsafe { (Outbox::new(&f, 0), Inbox::new(&f, 1)) };
        for i in 0..ROUNDS {
            assert!(send_one(&mut out, i));
            let mut got = u64::MAX;
            assert_eq!(poll_one(&mut inbox, &mut got), Some(8));
            assert_eq!(got, u64::from(i));
            assert_eq!(poll_empty(&mut inbox), None);
        }
        assert_eq!(inbox.boxes_known(), 1);
    }
}
