//! Memory regions: what a process exports to the job, and the keys peers present to use them.
//!
//! This is VMMC's export/import (seed 003) and the registered memory every rendezvous of the
//! stack moves long data through. A process exports a buffer with permissions
//! ([`Device::register`](crate::Device::register)) and gets a [`RegionKey`]: an id and a
//! random 64-bit key. The key travels to a peer in a packet (a BIP request-to-send, an MPI
//! envelope); the peer reads the region (or writes it) in one copy, and only within its
//! bounds, only with the permission it was exported with, and only until the exporter
//! withdraws it ([`Device::deregister`](crate::Device::deregister)). An access that breaks any
//! of these is refused and touches nothing.
//!
//! [`RegionTable`] is the exporter's book of its regions, usable by any device. On one host
//! ([`crate::Nic`]) the first [`REGION_SLOTS`](crate::fabric::layout::REGION_SLOTS) regions of
//! each rank are also published as descriptors in the fabric, where importers check a key and
//! its bounds before they read with `process_vm_readv`; a region beyond those is served by its
//! exporter over packets (the layer above asks for it), as every region is across hosts.
//!
//! **Split copies.** The kernel copies between processes at about one core's memory speed.
//! A long read on one host is therefore split: the importer asks the exporter, through the
//! region's descriptor and the exporter's doorbell, to write the second part while it reads
//! the first ([`assist`]). An exporter that is polling its device takes the part and both
//! cores copy; one that is busy elsewhere leaves it, and the importer takes it back and copies
//! it too, so a read never waits for the exporter to call in.

use std::fmt;

/// What peers may do with a region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access(u32);

impl Access {
    pub const READ: Access = Access(1);
    pub const WRITE: Access = Access(2);
    pub const READ_WRITE: Access = Access(3);

    pub fn bits(self) -> u32 {
        self.0
    }

    pub fn from_bits(bits: u32) -> Access {
        Access(bits & 3)
    }

    /// Whether every permission of `need` is granted.
    pub fn allows(self, need: Access) -> bool {
        self.0 & need.0 == need.0
    }
}

/// The name of an exported region, as peers present it: the exporter's id for the region and
/// its key (never 0). 16 bytes on the wire ([`RegionKey::emit`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RegionKey {
    pub id: u32,
    pub key: u64,
}

impl RegionKey {
    /// Bytes of the wire form.
    pub const LEN: usize = 16;

    /// The wire form: id (u32), 4 reserved bytes, key (u64), little endian.
    pub fn emit(&self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        b[0..4].copy_from_slice(&self.id.to_le_bytes());
        b[8..16].copy_from_slice(&self.key.to_le_bytes());
        b
    }

    /// Reads the wire form; `None` if `b` is too short or the key is 0.
    pub fn parse(b: &[u8]) -> Option<RegionKey> {
        let b = b.get(..Self::LEN)?;
        let key = u64::from_le_bytes(b[8..16].try_into().ok()?);
        (key != 0).then(|| RegionKey {
            id: u32::from_le_bytes(b[0..4].try_into().unwrap()),
            key,
        })
    }
}

impl fmt::Display for RegionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "region {} (key {:016x})", self.id, self.key)
    }
}

/// What an importer learns of a region, or an exporter of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegionInfo {
    /// Where the region starts in the exporter's memory.
    pub addr: usize,
    pub len: usize,
    pub access: Access,
}

impl RegionInfo {
    /// Checks that `len` bytes from `offset` lie inside the region and that it grants `need`.
    pub fn check(&self, offset: usize, len: usize, need: Access) -> Result<(), String> {
        if !self.access.allows(need) {
            let what = if need.allows(Access::WRITE) {
                "written"
            } else {
                "read"
            };
            return Err(format!(
                "it may not be {what} (exported {})",
                self.access_name()
            ));
        }
        match offset.checked_add(len) {
            Some(end) if end <= self.len => Ok(()),
            _ => Err(format!(
                "bytes {offset}..{} lie outside its {} bytes",
                offset.saturating_add(len),
                self.len
            )),
        }
    }

    fn access_name(&self) -> &'static str {
        match self.access.0 {
            1 => "read-only",
            2 => "write-only",
            3 => "read-write",
            _ => "with no access",
        }
    }
}

/// A transfer that a device started and finishes later.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TransferId(pub u32);

/// How a region transfer stands once started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transfer {
    /// Every byte is in place.
    Done,
    /// Some bytes are still being copied; ask `Device::poll_transfer`.
    Pending(TransferId),
}

/// States of a region descriptor's split-copy handshake (`RegionDesc::assist`).
///
/// ```text
///   IDLE ─importer─▶ PREPARING ─importer─▶ ASKED ─exporter─▶ TAKEN ─exporter─▶ DONE | REFUSED
///                                            └──importer─▶ WITHDRAWN (it copies the part itself)
///   DONE | REFUSED | WITHDRAWN ─importer─▶ IDLE
/// ```
/// Both ends move from `ASKED` by compare-and-swap, so exactly one of them copies the part.
pub mod assist {
    pub const IDLE: u32 = 0;
    /// An importer owns the handshake and is filling in what it asks for.
    pub const PREPARING: u32 = 1;
    /// The exporter may take its part.
    pub const ASKED: u32 = 2;
    /// The exporter is copying its part.
    pub const TAKEN: u32 = 3;
    /// The exporter's part is in place.
    pub const DONE: u32 = 4;
    /// The exporter could not write: the importer copies the part.
    pub const REFUSED: u32 = 5;
    /// The importer took the part back before the exporter took it.
    pub const WITHDRAWN: u32 = 6;
}

/// One region of the exporter's book.
#[derive(Clone, Copy, Debug)]
struct Entry {
    /// 0 while free.
    key: u64,
    info: RegionInfo,
}

/// The regions a process exports, by id: a slab reused through a free list, so that ids stay
/// small (the first ones are also published in the fabric by the shared-memory NIC).
#[derive(Debug)]
pub struct RegionTable {
    entries: Vec<Entry>,
    free: Vec<u32>,
    rng: fastrand::Rng,
    live: usize,
}

impl RegionTable {
    /// An empty table whose keys come from a stream seeded with `seed`.
    pub fn new(seed: u64) -> RegionTable {
        RegionTable {
            entries: Vec::new(),
            free: Vec::new(),
            rng: fastrand::Rng::with_seed(seed),
            live: 0,
        }
    }

    /// Records a region and names it. Ids of withdrawn regions are reused, lowest first as
    /// far as a stack of them allows, with a fresh key each time.
    pub fn insert(&mut self, info: RegionInfo) -> RegionKey {
        let key = loop {
            let k = self.rng.u64(..);
            if k != 0 {
                break k;
            }
        };
        let id = match self.free.pop() {
            Some(id) => {
                self.entries[id as usize] = Entry { key, info };
                id
            }
            None => {
                self.entries.push(Entry { key, info });
                (self.entries.len() - 1) as u32
            }
        };
        self.live += 1;
        RegionKey { id, key }
    }

    /// The region `k` names, if it is exported now.
    pub fn get(&self, k: RegionKey) -> Option<RegionInfo> {
        self.entries
            .get(k.id as usize)
            .filter(|e| e.key != 0 && e.key == k.key)
            .map(|e| e.info)
    }

    /// Withdraws the region `k` names; `false` if it names none.
    pub fn remove(&mut self, k: RegionKey) -> bool {
        match self.entries.get_mut(k.id as usize) {
            Some(e) if e.key != 0 && e.key == k.key => {
                e.key = 0;
                self.free.push(k.id);
                self.live -= 1;
                true
            }
            _ => false,
        }
    }

    /// Regions exported now.
    pub fn live(&self) -> usize {
        self.live
    }

    /// The live regions whose id is below `limit`, with their keys.
    pub fn live_below(&self, limit: usize) -> impl Iterator<Item = (RegionKey, RegionInfo)> + '_ {
        self.entries
            .iter()
            .take(limit)
            .enumerate()
            .filter(|(_, e)| e.key != 0)
            .map(|(i, e)| {
                (
                    RegionKey {
                        id: i as u32,
                        key: e.key,
                    },
                    e.info,
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_zero_is_refused() {
        let k = RegionKey {
            id: 513,
            key: 0xdead_beef_0123_4567,
        };
        assert_eq!(RegionKey::parse(&k.emit()), Some(k));
        assert_eq!(RegionKey::parse(&[0u8; 16]), None);
        assert_eq!(RegionKey::parse(&k.emit()[..15]), None);
    }

    #[test]
    fn bounds_and_permissions_are_checked() {
        let r = RegionInfo {
            addr: 0x1000,
            len: 100,
            access: Access::READ,
        };
        assert!(r.check(0, 100, Access::READ).is_ok());
        assert!(r.check(99, 1, Access::READ).is_ok());
        assert!(r.check(100, 0, Access::READ).is_ok());
        assert!(r
            .check(50, 51, Access::READ)
            .unwrap_err()
            .contains("outside"));
        assert!(r
            .check(usize::MAX, 2, Access::READ)
            .unwrap_err()
            .contains("outside"));
        assert!(r
            .check(0, 1, Access::WRITE)
            .unwrap_err()
            .contains("may not be written"));
        assert!(
            Access::READ_WRITE.allows(Access::WRITE) && !Access::READ.allows(Access::READ_WRITE)
        );
    }

    #[test]
    fn withdrawn_keys_stop_working_and_ids_are_reused() {
        let mut t = RegionTable::new(7);
        let info = RegionInfo {
            addr: 8,
            len: 16,
            access: Access::READ,
        };
        let a = t.insert(info);
        let b = t.insert(info);
        assert_eq!((a.id, b.id), (0, 1));
        assert_eq!(t.get(a), Some(info));
        assert!(t.remove(a));
        assert!(!t.remove(a), "withdrawn twice");
        assert_eq!(t.get(a), None);
        let c = t.insert(info);
        assert_eq!(c.id, a.id, "the id is reused");
        assert_ne!(c.key, a.key, "with a new key");
        assert_eq!(t.get(a), None, "the old key stays refused");
        assert_eq!(t.get(RegionKey { id: 9, key: 1 }), None);
        assert_eq!(t.live(), 2);
        assert_eq!(t.live_below(1).count(), 1);
    }
}
