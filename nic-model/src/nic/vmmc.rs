//! The NIC's part of VMMC on one host (see [`crate::vmmc`] for the model): the names this
//! rank exports regions under, published in its [`VmmcBlock`] of the fabric, and the ring of
//! notifications importers raise there.
//!
//! * **Names.** An entry of the block's name table holds a name and the [`RegionKey`] of the
//!   region it names; the region's bounds and access stay in its descriptor, where every
//!   importer checks them anyway. The exporter writes an entry under a sequence lock (it is
//!   the only writer); an importer scans the exporter's table and takes an entry only from two
//!   equal, even reads of its sequence. A name is withdrawn before its region.
//! * **Notifications.** Many producers (the importers of this host), one consumer (the
//!   exporter). A producer claims the position `tail` names by compare-and-swap once the
//!   cell there is free for that lap, writes the cell and marks it full (release) last; the
//!   exporter reads the cell at its own position (kept in its memory, not in the fabric) and
//!   frees it for the next lap. The update's data is written (`process_vm_writev` has
//!   returned) before the claim, so the exporter that sees the notification sees the data.
//!   A full ring holds the importer back (it waits, as a full inbox holds a sender back)
//!   while it keeps its own ring moving into memory, so that two ranks notifying each other
//!   cannot wait on each other.

use crate::error::{NicError, Rank, Result};
use crate::fabric::layout::{NameEntry, VmmcBlock, NAME_SLOTS, NOTIFY_SLOTS};
use crate::fabric::Fabric;
use crate::region::RegionKey;
use crate::vmmc::{Name, Notification};
use std::collections::VecDeque;
use std::sync::atomic::fence;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};

/// This NIC's names and the consumer's end of its notification ring.
pub(super) struct Names {
    /// What each entry of this rank's name table holds (`None`: free); on the heap, so that
    /// the NIC's hot fields stay close together.
    own: Box<[Option<(Name, RegionKey)>; NAME_SLOTS]>,
    /// The ring position of the next notification to take.
    head: u64,
    /// Notifications taken off the ring while this NIC waited for room in a peer's ring.
    taken: VecDeque<Notification>,
}

impl Names {
    pub fn new() -> Names {
        Names {
            own: Box::new([None; NAME_SLOTS]),
            head: 0,
            taken: VecDeque::new(),
        }
    }

    /// Publishes `name` for region `key`. Refused when the name is 0, already exported here,
    /// or the table is full.
    pub fn export(&mut self, fabric: &Fabric, me: Rank, name: Name, key: RegionKey) -> Result<()> {
        if name.get() == 0 {
            return Err(refused(
                me,
                "name 0 is reserved (it marks a free name entry)",
            ));
        }
        if self.find(name).is_some() {
            return Err(refused(me, &format!("{name} is exported already")));
        }
        let Some(slot) = self.own.iter().position(Option::is_none) else {
            return Err(refused(
                me,
                &format!("{NAME_SLOTS} names are exported already (withdraw one first)"),
            ));
        };
        self.own[slot] = Some((name, key));
        write_entry(&fabric.vmmc_block(me).names[slot], name.get(), key);
        Ok(())
    }

    /// Withdraws the name of region `key`, if it has one; `true` if it had.
    pub fn withdraw(&mut self, fabric: &Fabric, me: Rank, key: RegionKey) -> bool {
        let Some(slot) = self
            .own
            .iter()
            .position(|e| e.is_some_and(|(_, k)| k == key))
        else {
            return false;
        };
        self.own[slot] = None;
        write_entry(
            &fabric.vmmc_block(me).names[slot],
            0,
            RegionKey { id: 0, key: 0 },
        );
        true
    }

    /// Withdraws every name (the NIC is going away).
    pub fn withdraw_all(&mut self, fabric: &Fabric, me: Rank) {
        for slot in 0..NAME_SLOTS {
            if self.own[slot].take().is_some() {
                write_entry(
                    &fabric.vmmc_block(me).names[slot],
                    0,
                    RegionKey { id: 0, key: 0 },
                );
            }
        }
    }

    /// The region this NIC exports under `name`.
    pub fn find(&self, name: Name) -> Option<RegionKey> {
        self.own
            .iter()
            .flatten()
            .find(|(n, _)| *n == name)
            .map(|&(_, k)| k)
    }

    /// The name region `key` is exported under, if any.
    pub fn name_of(&self, key: RegionKey) -> Option<Name> {
        self.own
            .iter()
            .flatten()
            .find(|(_, k)| *k == key)
            .map(|&(n, _)| n)
    }

    /// The next notification raised at this rank, if any.
    #[inline]
    pub fn poll(&mut self, fabric: &Fabric, me: Rank) -> Option<Notification> {
        if let Some(n) = self.taken.pop_front() {
            return Some(n);
        }
        self.take(fabric.vmmc_block(me))
    }

    fn take(&mut self, block: &VmmcBlock) -> Option<Notification> {
        let lap = self.head / NOTIFY_SLOTS as u64;
        let cell = &block.cells[(self.head % NOTIFY_SLOTS as u64) as usize];
        if cell.state.load(Acquire) != 2 * lap + 1 {
            return None;
        }
        let n = Notification {
            from: cell.from.load(Relaxed) as Rank,
            name: Name::new(cell.name.load(Relaxed)),
            offset: cell.offset.load(Relaxed) as usize,
            len: cell.len.load(Relaxed) as usize,
        };
        // Free for the next lap: the fields were read before this (release).
        cell.state.store(2 * (lap + 1), Release);
        self.head += 1;
        Some(n)
    }

    /// Raises notification `n` (from this rank) at `peer`: waits while `peer`'s ring is full,
    /// taking this rank's own notifications into memory meanwhile, until `alive` says the peer
    /// is gone.
    pub fn notify(
        &mut self,
        fabric: &Fabric,
        me: Rank,
        peer: Rank,
        n: &Notification,
        alive: &dyn Fn() -> bool,
    ) -> Result<()> {
        let block = fabric.vmmc_block(peer);
        let mut backoff = crate::wait::Backoff::new();
        loop {
            if try_push(block, n) {
                return Ok(());
            }
            // Full: keep this rank's own ring moving while the peer drains its own.
            while let Some(mine) = self.take(fabric.vmmc_block(me)) {
                self.taken.push_back(mine);
            }
            if backoff.snooze() && !alive() {
                return Err(NicError::PeerDead {
                    rank: peer,
                    why: "it died with its notification ring full",
                });
            }
        }
    }
}

/// Claims the ring position `tail` names and writes `n` there; `false` when the ring is full.
fn try_push(block: &VmmcBlock, n: &Notification) -> bool {
    let tail = &block.tail.tail;
    let mut pos = tail.load(Relaxed);
    loop {
        let lap = pos / NOTIFY_SLOTS as u64;
        let cell = &block.cells[(pos % NOTIFY_SLOTS as u64) as usize];
        let state = cell.state.load(Acquire);
        if state < 2 * lap {
            // Last lap's notification is still there: the ring is full.
            return false;
        }
        if state > 2 * lap {
            // Another importer claimed this position (and perhaps wrote it): look again.
            pos = tail.load(Relaxed);
            continue;
        }
        match tail.compare_exchange_weak(pos, pos + 1, Relaxed, Relaxed) {
            Ok(_) => {
                cell.name.store(n.name.get(), Relaxed);
                cell.offset.store(n.offset as u64, Relaxed);
                cell.len.store(n.len as u64, Relaxed);
                cell.from.store(n.from as u32, Relaxed);
                cell.state.store(2 * lap + 1, Release);
                return true;
            }
            Err(now) => pos = now,
        }
    }
}

/// Writes a name entry under its sequence lock (the exporter is its only writer).
fn write_entry(e: &NameEntry, name: u64, key: RegionKey) {
    let seq = e.seq.load(Relaxed);
    e.seq.store(seq.wrapping_add(1), Relaxed);
    fence(Release);
    e.id.store(key.id, Relaxed);
    e.key.store(key.key, Relaxed);
    e.name.store(name, Relaxed);
    e.seq.store(seq.wrapping_add(2), Release);
}

/// Finds the region `peer` exports under `name` in its name table.
pub(super) fn lookup(fabric: &Fabric, peer: Rank, name: Name) -> Result<RegionKey> {
    if name.get() == 0 {
        return Err(refused(peer, "name 0 is reserved and names no region"));
    }
    for e in &fabric.vmmc_block(peer).names {
        if let Some(key) = read_entry(e, name.get()) {
            return Ok(key);
        }
    }
    Err(refused(
        peer,
        &format!("no region is exported under {name} (never, or withdrawn)"),
    ))
}

/// The key an entry holds for `name`, read consistently; `None` if it holds another name.
fn read_entry(e: &NameEntry, name: u64) -> Option<RegionKey> {
    // A few tries: the exporter holds the lock only for four stores.
    for _ in 0..1000 {
        let before = e.seq.load(Acquire);
        if before % 2 == 1 {
            std::hint::spin_loop();
            continue;
        }
        let (n, id, key) = (
            e.name.load(Relaxed),
            e.id.load(Relaxed),
            e.key.load(Relaxed),
        );
        fence(Acquire);
        if e.seq.load(Relaxed) != before {
            continue;
        }
        return (n == name && key != 0).then_some(RegionKey { id, key });
    }
    None
}

fn refused(rank: Rank, why: &str) -> NicError {
    NicError::RegionRefused {
        rank,
        why: why.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A zeroed block, as a fresh fabric holds it.
    fn block() -> Box<VmmcBlock> {
        let layout = std::alloc::Layout::new::<VmmcBlock>();
        // SAFETY: the layout is the block's; all-zero bytes are a valid `VmmcBlock` (atomics
        // and padding), which is how the fabric's shared memory starts.
        unsafe { Box::from_raw(std::alloc::alloc_zeroed(layout) as *mut VmmcBlock) }
    }

    fn note(k: usize) -> Notification {
        Notification {
            from: k % 7,
            name: Name::new(42),
            offset: k,
            len: 2 * k,
        }
    }

    #[test]
    fn the_ring_keeps_order_holds_producers_back_when_full_and_laps() {
        let b = block();
        let mut names = Names::new();
        assert_eq!(names.take(&b), None);
        for k in 0..NOTIFY_SLOTS {
            assert!(try_push(&b, &note(k)), "{k}");
        }
        assert!(!try_push(&b, &note(999)), "a full ring took one more");
        assert_eq!(names.take(&b), Some(note(0)));
        assert!(
            try_push(&b, &note(NOTIFY_SLOTS)),
            "a freed cell was not reused"
        );
        for k in 1..=NOTIFY_SLOTS {
            assert_eq!(names.take(&b), Some(note(k)));
        }
        assert_eq!(names.take(&b), None);
        // Several laps more, one at a time.
        for k in 0..5 * NOTIFY_SLOTS {
            assert!(try_push(&b, &note(k)));
            assert_eq!(names.take(&b), Some(note(k)));
        }
    }

    #[test]
    fn name_entries_are_read_whole_or_not_at_all() {
        let b = block();
        let e = &b.names[3];
        let key = RegionKey { id: 5, key: 0xabc };
        assert_eq!(read_entry(e, 9), None);
        write_entry(e, 9, key);
        assert_eq!(read_entry(e, 9), Some(key));
        assert_eq!(read_entry(e, 10), None);
        write_entry(e, 0, RegionKey { id: 0, key: 0 });
        assert_eq!(read_entry(e, 9), None);
        // A writer in the middle of an update (odd sequence): the entry is not trusted.
        write_entry(e, 9, key);
        e.seq.fetch_add(1, Relaxed);
        assert_eq!(read_entry(e, 9), None);
    }
}
