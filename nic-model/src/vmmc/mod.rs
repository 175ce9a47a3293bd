//! # VMMC: virtual memory-mapped communication over any [`Device`]
//!
//! The model of Dubnicki, Bilas, Li and Philbin (seed 003, VMMC on Myrinet, 1997), with a
//! Rust interface and no C.
//!
//! ```text
//!   exporter (rank e)                                  importer (rank i)
//!   export(name, buffer, READ_WRITE) ──▶ name table ◀── import(e, name) ─▶ Import (the proxy:
//!                                        (fabric, or a      │                 key, bounds,
//!                                         Lookup frame)     │                 permissions)
//!   buffer ◀────────── deliberate update: update(&imp, offset, bytes, notify) ─┘
//!   notifications() ◀─ (from i, name, offset, len), raised after the data is in place
//! ```
//!
//! **Export.** A process exports a region of its memory to the job under a [`Name`] it
//! chooses (a `u64`, or a string of up to 8 bytes packed into one), with permissions: read,
//! write or both ([`Access`]). Its bytes may change under it from then on (the importers
//! write them), until it withdraws the export; a withdrawn name and its region are refused
//! to everyone from that moment.
//!
//! **Import.** A peer imports `(rank, name)` and gets an [`Import`]: the region's key, its
//! length and permissions: the paper's proxy of the receive buffer in the sender's
//! destination proxy space. The import is checked when it is made (the name must be
//! exported now), and every access through it is checked again against the live region.
//!
//! **Deliberate update.** The importer copies bytes from its own memory into the imported
//! region ([`Vmmc::update`]), or out of it ([`Vmmc::fetch`], when exported readable), with
//! no action by the exporter. There is no receive operation: the data simply appears in the
//! exporter's buffer. An update may raise a notification: the exporter polls them
//! ([`Vmmc::notifications`], [`Vmmc::poll_notification`]) and learns which region, which
//! bytes and from whom. A notification is delivered only after its update's data is in
//! place, so an exporter that sees it may read the bytes at once.
//!
//! **Protection, as in the paper.** Importing a name that is not exported (never, or
//! withdrawn), an access outside the region's bounds, and a write into a region exported
//! read-only are refused with [`NicError::RegionRefused`] and touch nothing: no byte of the
//! region changes and no notification is raised. Bounds and permission are checked twice:
//! by the importer against its [`Import`] before anything moves (the paper's outgoing page
//! table, local to the sender), and by the device against the region itself (the paper's
//! incoming page table), which also catches a region withdrawn after the import.
//!
//! ## How names are found, and how the data and the notifications travel
//!
//! *On one host* ([`crate::Nic`]) everything goes through the job's shared fabric, with no
//! action by the exporter. Each rank has a VMMC block there (`fabric::layout::VmmcBlock`): a
//! table of 64 names, each naming one of its region descriptors, which hold bounds, access
//! and the region's random key (what every single-copy access checks); and a ring of 128
//! notification cells. An import scans the exporter's name table (a sequence lock per entry,
//! written only by the exporter) and checks the descriptor. An update is one
//! `process_vm_writev` from the importer's memory into the exporter's (single copy), and a
//! notification is a cell of the exporter's ring, claimed by compare-and-swap and marked
//! full (release) only after the copy returned: an exporter that reads the cell (acquire)
//! sees the data. A full ring holds the importer back until the exporter polls, the way a
//! full inbox holds a sender back. The packet path (`Nic::poll`) is untouched: the exporter
//! looks at its ring only when it asks for notifications (one load when there is none).
//!
//! *Across hosts* ([`crate::net::HostNet`]) the exporter's device is the VMMC daemon of the
//! paper: an import is a `Lookup` frame that the exporter's device answers from its names
//! whenever it polls or progresses; an update is posted as `Write` frames (64 KiB chunks,
//! sent from the importer's memory), applied by the exporter's device when it reads them,
//! and the last chunk of an update that notifies carries a flag that the device turns into
//! a notification after applying it (TCP keeps the chunks in order, so the whole update is
//! in place by then). A refusal there comes back as a frame and is reported by the next
//! update to that peer, or by [`Vmmc::complete`], which waits until every update posted to
//! the peer is applied or refused (a `Fence` frame). On one host `complete` has nothing to
//! wait for: an update is applied when it returns.
//!
//! **Why names in the fabric** rather than a lookup message on one host too: an import then
//! needs nothing from the exporter, as an update does not, and a rank's table is 2 KiB. The
//! cost is a fixed number of names per rank (64; regions exported by key, as BIP and MPI do,
//! are not limited by it).

use crate::error::{NicError, Rank, Result};
use crate::phy::{Device, PeerStatus};
use crate::region::{Access, RegionKey, Transfer};
use crate::wait::Backoff;
use std::fmt;

/// The name a region is exported under: a `u64` the exporter chooses (0 is reserved), or a
/// string of 1 to 8 bytes packed into one ([`Name::from_str`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Name(u64);

impl Name {
    pub const fn new(id: u64) -> Name {
        Name(id)
    }

    pub const fn get(self) -> u64 {
        self.0
    }

    /// A name from a short string (1 to 8 bytes, not all zero), packed little endian.
    #[allow(clippy::should_implement_trait)]
    pub fn from_str(s: &str) -> Result<Name> {
        let b = s.as_bytes();
        if b.is_empty() || b.len() > 8 || b.iter().all(|&c| c == 0) {
            return Err(NicError::Config(format!(
                "a VMMC name is 1 to 8 bytes, not {s:?} ({} bytes)",
                b.len()
            )));
        }
        let mut w = [0u8; 8];
        w[..b.len()].copy_from_slice(b);
        Ok(Name(u64::from_le_bytes(w)))
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0.to_le_bytes();
        let len = b.iter().rposition(|&c| c != 0).map_or(0, |i| i + 1);
        match std::str::from_utf8(&b[..len]) {
            Ok(s) if len > 0 && s.chars().all(|c| c.is_ascii_graphic()) => write!(f, "name {s:?}"),
            _ => write!(f, "name {:#x}", self.0),
        }
    }
}

/// What an importer's update told the exporter: `len` bytes from byte `offset` of the region
/// exported under `name` were written by rank `from`, and are in place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Notification {
    pub from: Rank,
    pub name: Name,
    pub offset: usize,
    pub len: usize,
}

/// A region this process exports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Export {
    pub name: Name,
    pub key: RegionKey,
    /// Where the region lies in this process's memory.
    pub addr: usize,
    pub len: usize,
    pub access: Access,
}

/// A peer's region, imported: the paper's proxy for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Import {
    pub peer: Rank,
    pub name: Name,
    pub key: RegionKey,
    pub len: usize,
    pub access: Access,
}

impl Import {
    /// Checks an access to `len` bytes from `offset` against the import (bounds, permission).
    fn check(&self, offset: usize, len: usize, need: Access) -> Result<()> {
        let info = crate::region::RegionInfo {
            addr: 0,
            len: self.len,
            access: self.access,
        };
        info.check(offset, len, need)
            .map_err(|why| NicError::RegionRefused {
                rank: self.peer,
                why: format!("{} imported from rank {}: {why}", self.name, self.peer),
            })
    }
}

/// VMMC over a device: exports, imports, deliberate updates and notifications.
pub struct Vmmc<D: Device> {
    dev: D,
    exports: Vec<Export>,
}

impl<D: Device> Vmmc<D> {
    pub fn new(dev: D) -> Vmmc<D> {
        Vmmc {
            dev,
            exports: Vec::new(),
        }
    }

    pub fn rank(&self) -> Rank {
        self.dev.rank()
    }

    pub fn nranks(&self) -> usize {
        self.dev.nranks()
    }

    /// The device, for packets beside VMMC.
    pub fn device(&mut self) -> &mut D {
        &mut self.dev
    }

    /// The device back; exports still live stay exported until the device withdraws them.
    pub fn into_device(self) -> D {
        self.dev
    }

    /// Exports `len` bytes at `addr` of this process's memory under `name`, with `access`.
    /// Refused if this process exports `name` already.
    ///
    /// # Safety
    /// The `len` bytes at `addr` stay valid until [`Vmmc::withdraw`] (or until the device is
    /// dropped); while exported writable they may change under the program at any time.
    pub unsafe fn export(
        &mut self,
        name: Name,
        addr: *mut u8,
        len: usize,
        access: Access,
    ) -> Result<Export> {
        // SAFETY: the caller's contract is the device's.
        let key = unsafe { self.dev.export_named(name, addr as usize, len, access)? };
        let e = Export {
            name,
            key,
            addr: addr as usize,
            len,
            access,
        };
        self.exports.push(e);
        Ok(e)
    }

    /// The export of this process under `name`, if live.
    pub fn exported(&self, name: Name) -> Option<Export> {
        self.exports.iter().find(|e| e.name == name).copied()
    }

    /// Withdraws the export under `name`: from now on imports of it, and updates and fetches
    /// through imports made before, are refused. Its memory is the program's again once this
    /// returns.
    pub fn withdraw(&mut self, name: Name) -> Result<()> {
        let Some(i) = self.exports.iter().position(|e| e.name == name) else {
            return Err(NicError::RegionRefused {
                rank: self.rank(),
                why: format!("{name} is not exported here (never, or withdrawn already)"),
            });
        };
        let e = self.exports.swap_remove(i);
        self.dev.deregister(e.key)
    }

    /// Imports the region `peer` exports under `name`. Across hosts this waits for the
    /// exporter's device to answer (it does whenever that process polls or progresses).
    pub fn import(&mut self, peer: Rank, name: Name) -> Result<Import> {
        let (key, info) = self.dev.import_named(peer, name)?;
        Ok(Import {
            peer,
            name,
            key,
            len: info.len,
            access: info.access,
        })
    }

    /// Imports `(peer, name)`, trying again while the name is not exported yet, for at most
    /// `limit` (doing the device's work meanwhile): for an importer that starts before its
    /// exporter has exported.
    pub fn import_when_exported(
        &mut self,
        peer: Rank,
        name: Name,
        limit: std::time::Duration,
    ) -> Result<Import> {
        let end = std::time::Instant::now() + limit;
        let mut backoff = Backoff::new();
        loop {
            match self.import(peer, name) {
                Err(NicError::RegionRefused { .. }) if std::time::Instant::now() < end => {
                    self.dev.progress();
                    if backoff.snooze() && self.dev.peer_status(peer) == PeerStatus::Dead {
                        return Err(NicError::PeerDead {
                            rank: peer,
                            why: "it died before exporting the region",
                        });
                    }
                }
                other => return other,
            }
        }
    }

    /// Deliberate update: copies `data` into bytes `offset..offset + data.len()` of the
    /// imported region, and with `notify` raises a notification at the exporter once they
    /// are in place. On one host the bytes are there when this returns; across hosts the
    /// update is posted ([`Vmmc::complete`] waits for it). Refused, touching nothing, outside
    /// the region, into a region not exported writable, or once the exporter withdrew it.
    pub fn update(&mut self, imp: &Import, offset: usize, data: &[u8], notify: bool) -> Result<()> {
        imp.check(offset, data.len(), Access::WRITE)?;
        self.dev
            .update(imp.peer, imp.key, offset, data, notify.then_some(imp.name))
    }

    /// Copies bytes `offset..offset + buf.len()` of the imported region into `buf` (the
    /// region must be exported readable); returns once they are there.
    pub fn fetch(&mut self, imp: &Import, offset: usize, buf: &mut [u8]) -> Result<()> {
        imp.check(offset, buf.len(), Access::READ)?;
        // SAFETY: `buf` is borrowed mutably until the transfer is done (this waits for it).
        let t = unsafe {
            self.dev
                .read_region(imp.peer, imp.key, offset, buf.as_mut_ptr(), buf.len())?
        };
        let Transfer::Pending(id) = t else {
            return Ok(());
        };
        let mut backoff = Backoff::new();
        loop {
            if self.dev.poll_transfer(id)? {
                return Ok(());
            }
            if !self.dev.progress()
                && backoff.snooze()
                && self.dev.peer_status(imp.peer) == PeerStatus::Dead
            {
                return Err(NicError::PeerDead {
                    rank: imp.peer,
                    why: "it died while its region was being read",
                });
            }
        }
    }

    /// Waits until every update this process posted into `peer`'s regions is applied, or
    /// returns the refusal of one of them.
    pub fn complete(&mut self, peer: Rank) -> Result<()> {
        self.dev.complete_updates(peer)
    }

    /// The next notification raised at this process, if any.
    #[inline]
    pub fn poll_notification(&mut self) -> Option<Notification> {
        self.dev.poll_notification()
    }

    /// The notifications raised at this process so far, oldest first.
    pub fn notifications(&mut self) -> impl Iterator<Item = Notification> + '_ {
        std::iter::from_fn(move || self.dev.poll_notification())
    }

    /// Waits for the next notification, doing the device's work meanwhile; `None` after
    /// `limit`, or once every peer is gone.
    pub fn wait_notification(&mut self, limit: std::time::Duration) -> Option<Notification> {
        let end = std::time::Instant::now() + limit;
        let mut backoff = Backoff::new();
        loop {
            if let Some(n) = self.dev.poll_notification() {
                return Some(n);
            }
            self.dev.progress();
            if backoff.snooze() {
                let me = self.rank();
                let anyone = (0..self.nranks())
                    .any(|r| r != me && self.dev.peer_status(r) == PeerStatus::Alive);
                if std::time::Instant::now() > end || !anyone {
                    return None;
                }
            }
        }
    }

    /// Withdraws every export and hands the device back.
    pub fn finish(mut self) -> D {
        for e in std::mem::take(&mut self.exports) {
            let _ = self.dev.deregister(e.key);
        }
        self.dev
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_pack_short_strings_and_show_them() {
        let n = Name::from_str("halo").unwrap();
        assert_eq!(n.get(), u64::from_le_bytes(*b"halo\0\0\0\0"));
        assert_eq!(n.to_string(), "name \"halo\"");
        assert_eq!(Name::new(0x1234).to_string(), "name 0x1234");
        assert!(Name::from_str("").is_err());
        assert!(Name::from_str("ninebytes").is_err());
        assert!(Name::from_str("\0").is_err());
        assert_eq!(
            Name::from_str("12345678").unwrap().to_string(),
            "name \"12345678\""
        );
    }

    #[test]
    fn an_import_checks_bounds_and_permission_before_anything_moves() {
        let imp = Import {
            peer: 1,
            name: Name::new(7),
            key: RegionKey { id: 0, key: 9 },
            len: 100,
            access: Access::READ,
        };
        assert!(imp.check(0, 100, Access::READ).is_ok());
        assert!(imp.check(1, 100, Access::READ).is_err());
        let e = imp.check(0, 1, Access::WRITE).unwrap_err().to_string();
        assert!(
            e.contains("may not be written") && e.contains("rank 1"),
            "{e}"
        );
    }
}
