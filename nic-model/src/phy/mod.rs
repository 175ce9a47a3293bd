//! The device interface between the NIC and the protocol above it, and the wrappers that slot
//! around a device (in the manner of smoltcp's `phy` middleware).
//!
//! A protocol layer never copies into a staging buffer of its own to hand a packet to the NIC:
//! [`Device::send`] lends the closure it is given the packet buffer itself to write header and
//! payload into, and [`Device::poll`] lends the next arrived packet, from whichever source, in place. Long data does not
//! travel in packets at all: a process exports a buffer as a region ([`Device::register`]) and
//! a peer reads it (or writes it) in one copy ([`Device::read_region`]), within the bounds and
//! the permissions the exporter gave, until the exporter withdraws it.
//!
//! The trait is object safe, so that wrappers compose at run time: [`FaultInjector`] and
//! [`PcapWriter`] wrap any `D: Device`, a `Box<dyn Device>` included, and
//! [`crate::DeviceStack`] stacks whatever the environment asks for without naming every
//! combination:
//!
//! * [`FaultInjector`]: drops, corrupts, duplicates and delays packets at seeded rates;
//! * [`PcapWriter`]: writes every packet sent and received to a pcap file.
//!
//! Callers that know their device's type (the plain [`crate::Nic`] behind a `DeviceStack`)
//! get the closures inlined: the `&mut dyn FnMut` a call passes is devirtualized once the
//! device's method is inlined into the caller.

mod fault;
mod pcap;
#[cfg(test)]
pub(crate) mod test_device;

pub use fault::{FaultConfig, FaultInjector, FAULTS_ENV};
pub use pcap::{
    pcap_path_from_env, PcapWriter, PCAP_ENV, PSEUDO_HEADER_LEN, PSEUDO_HEADER_MAGIC,
    PSEUDO_HEADER_VERSION,
};

use crate::counters::Counters;
use crate::error::{NicError, Rank, Result};
use crate::region::{Access, RegionInfo, RegionKey, Transfer, TransferId};
use crate::vmmc::{Name, Notification};

/// What a device can do, for the protocol above to adapt to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// Largest payload of one packet.
    pub mtu: usize,
    /// True when the device never loses, corrupts, duplicates or reorders packets. A protocol
    /// may then skip checksums and retransmission; over an unreliable device it must not.
    pub reliable: bool,
}

/// Whether a peer can still take part in communication.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PeerStatus {
    /// Running (or not started yet).
    Alive,
    /// Finished cleanly: it will send nothing more, but what it sent can still be received.
    Finalized,
    /// Died (crashed, killed, or exited without finalizing).
    Dead,
}

/// A per-process network interface: packets on fixed, in-order routes to every peer, and
/// regions of memory exported to the job.
pub trait Device {
    /// This process's rank.
    fn rank(&self) -> Rank;
    /// Processes in the job.
    fn nranks(&self) -> usize;
    fn capabilities(&self) -> Capabilities;

    /// Sends one packet of `len` bytes (at most the mtu) to `dest`: `fill` writes it straight
    /// into the device's packet buffer. `false` while the route's buffers are all in use
    /// (back-pressure: `fill` was not called and nothing was sent; try again after polling).
    fn send(&mut self, dest: Rank, len: usize, fill: &mut dyn FnMut(&mut [u8])) -> bool;

    /// Lends the next arrived packet, from any source, to `take` with its source, in place,
    /// then gives its buffer back to the sender; `false` when none has arrived (under a timing
    /// profile: none whose modeled arrival time has passed). Packets from one source arrive in
    /// the order sent; between sources the device is fair (no source waits behind another's
    /// flood for long).
    fn poll(&mut self, take: &mut dyn FnMut(Rank, &[u8])) -> bool;

    /// Work the device does without a packet to hand over: on a shared-memory host, copying a
    /// part of an exported region that an importer asked this process to write. Every waiting
    /// loop of the layers above calls it; `true` if anything was done.
    fn progress(&mut self) -> bool {
        false
    }

    /// Exports `len` bytes at `addr` of this process's memory to the job, with `access`. The
    /// region stays readable (or writable) by peers that present its key, within its bounds,
    /// until [`Device::deregister`].
    ///
    /// # Safety
    /// The `len` bytes at `addr` stay valid until the region is withdrawn; a writable region's
    /// bytes may change under the program at any time until then.
    unsafe fn register(&mut self, addr: usize, len: usize, access: Access) -> Result<RegionKey> {
        let _ = (addr, len, access);
        Err(NicError::Unsupported("exporting memory regions"))
    }

    /// Withdraws an exported region: from now on every access with its key is refused.
    fn deregister(&mut self, region: RegionKey) -> Result<()> {
        Err(NicError::RegionRefused {
            rank: self.rank(),
            why: format!("{region} was never exported here"),
        })
    }

    /// The bounds and permissions of `peer`'s region, if `key` names a region it exports now
    /// (VMMC's import: a check that touches no data).
    fn import(&mut self, peer: Rank, key: RegionKey) -> Result<RegionInfo> {
        let _ = key;
        Err(NicError::NoSingleCopy { rank: peer })
    }

    /// Looks up one of this process's own regions (for a protocol that serves reads of it
    /// with packets): its address and length, or why `key` is refused.
    fn local_region(&self, key: RegionKey) -> Result<RegionInfo> {
        Err(NicError::RegionRefused {
            rank: self.rank(),
            why: format!("{key} was never exported here"),
        })
    }

    /// Starts copying `len` bytes from byte `offset` of `peer`'s region `key` into `local`,
    /// in one copy. `Transfer::Done` when the bytes are in place; `Transfer::Pending(id)`
    /// when part of them is still being copied (ask [`Device::poll_transfer`]). Refused,
    /// with nothing read, when the key names no live region of `peer`, the range is outside
    /// it, or it is not readable. `NoSingleCopy` when this device cannot reach the peer's
    /// memory (the caller then asks the exporter for the data with packets).
    ///
    /// # Safety
    /// `local` is valid for `len` bytes of writing, not otherwise accessed, until the
    /// transfer is done.
    unsafe fn read_region(
        &mut self,
        peer: Rank,
        key: RegionKey,
        offset: usize,
        local: *mut u8,
        len: usize,
    ) -> Result<Transfer> {
        let _ = (key, offset, local, len);
        Err(NicError::NoSingleCopy { rank: peer })
    }

    /// Copies `local` into byte `offset` of `peer`'s writable region `key` in one copy
    /// (VMMC's deliberate update). Refused, with nothing written, as `read_region` is.
    fn write_region(
        &mut self,
        peer: Rank,
        key: RegionKey,
        offset: usize,
        local: &[u8],
    ) -> Result<()> {
        let _ = (key, offset, local);
        Err(NicError::NoSingleCopy { rank: peer })
    }

    /// Whether pending transfer `id` is done; once it says `true` (or fails), `id` is spent.
    fn poll_transfer(&mut self, id: TransferId) -> Result<bool> {
        let _ = id;
        Err(NicError::Unsupported("transfers that complete later"))
    }

    /// Exports a region as [`Device::register`] does, under `name` as well (VMMC's export by
    /// name, [`crate::vmmc`]): peers find it with [`Device::import_named`]. Withdrawn with its
    /// name by [`Device::deregister`]. Refused when this process exports `name` already.
    ///
    /// # Safety
    /// As [`Device::register`].
    unsafe fn export_named(
        &mut self,
        name: Name,
        addr: usize,
        len: usize,
        access: Access,
    ) -> Result<RegionKey> {
        let _ = (name, addr, len, access);
        Err(NicError::Unsupported("exporting regions by name (VMMC)"))
    }

    /// VMMC's import by name: the key, bounds and permissions of the region `peer` exports
    /// under `name` now. Refused when it exports none under that name (never, or withdrawn).
    fn import_named(&mut self, peer: Rank, name: Name) -> Result<(RegionKey, RegionInfo)> {
        let _ = (peer, name);
        Err(NicError::Unsupported("importing regions by name (VMMC)"))
    }

    /// VMMC's deliberate update: copies `local` into byte `offset` of `peer`'s writable region
    /// `key` as [`Device::write_region`] does, then, with `notify`, raises a notification at
    /// the exporter (`notify` is the region's name there), delivered only once the data is in
    /// place. Under a timing profile, returns no earlier than the modeled transfer would end.
    /// Refused, with nothing written and no notification, as `write_region` is.
    fn update(
        &mut self,
        peer: Rank,
        key: RegionKey,
        offset: usize,
        local: &[u8],
        notify: Option<Name>,
    ) -> Result<()> {
        match notify {
            None => self.write_region(peer, key, offset, local),
            Some(_) => Err(NicError::Unsupported("notifications (VMMC)")),
        }
    }

    /// The next notification that an importer's deliberate update raised at this process
    /// (its data is in place), if any.
    fn poll_notification(&mut self) -> Option<Notification> {
        None
    }

    /// Waits until every update this process made into `peer`'s regions is applied, or says
    /// why one was refused. Updates on one host are applied when `update` returns; across hosts
    /// they are posted, and this is the point where the importer learns their fate.
    fn complete_updates(&mut self, peer: Rank) -> Result<()> {
        let _ = peer;
        Ok(())
    }

    /// Whether `peer` is still there. Cheap enough for a blocked caller to ask every few
    /// milliseconds; not meant for the fast path.
    fn peer_status(&self, peer: Rank) -> PeerStatus;

    /// Packet, byte, copy and stall counts of this NIC.
    fn counters(&self) -> &Counters;

    /// The timing profile in force (`None` for `native`), so the layer above can size packets
    /// for the modeled pipeline.
    fn profile(&self) -> Option<&crate::timing::Profile> {
        None
    }

    /// Declares that the first `bytes` of every packet are the protocol's header. A timing
    /// profile's `wire_header_bytes` already stands for the header a 1997 protocol put on the
    /// wire, so the model charges those bytes as that header rather than as payload.
    fn set_protocol_header(&mut self, bytes: usize) {
        let _ = bytes;
    }

    /// Marks this process as finished cleanly, so that peers do not treat its exit as a death.
    fn finalize(&mut self);
}

/// Sends a packet that is a copy of `bytes` (for tests and tools: protocols write their
/// packets in place through [`Device::send`]).
pub fn send_bytes(dev: &mut (impl Device + ?Sized), dest: Rank, bytes: &[u8]) -> bool {
    dev.send(dest, bytes.len(), &mut |buf| buf.copy_from_slice(bytes))
}

/// Takes the next packet, from any source, as an owned copy with its source, if one has
/// arrived (for tests and tools).
pub fn poll_bytes(dev: &mut (impl Device + ?Sized)) -> Option<(Rank, Vec<u8>)> {
    let mut got = None;
    dev.poll(&mut |src, p| got = Some((src, p.to_vec())));
    got
}

/// A boxed device is a device: this is how wrappers stack at run time.
impl<D: Device + ?Sized> Wraps for Box<D> {
    type Inner = D;
    fn inner(&self) -> &D {
        self
    }
    fn inner_mut(&mut self) -> &mut D {
        self
    }
}

impl<D: Device + ?Sized> Device for Box<D> {
    #[inline]
    fn rank(&self) -> Rank {
        (**self).rank()
    }
    #[inline]
    fn nranks(&self) -> usize {
        (**self).nranks()
    }
    fn capabilities(&self) -> Capabilities {
        (**self).capabilities()
    }
    #[inline]
    fn send(&mut self, dest: Rank, len: usize, fill: &mut dyn FnMut(&mut [u8])) -> bool {
        (**self).send(dest, len, fill)
    }
    #[inline]
    fn poll(&mut self, take: &mut dyn FnMut(Rank, &[u8])) -> bool {
        (**self).poll(take)
    }
    #[inline]
    fn progress(&mut self) -> bool {
        (**self).progress()
    }
    forward_regions!();
    fn peer_status(&self, peer: Rank) -> PeerStatus {
        (**self).peer_status(peer)
    }
    fn counters(&self) -> &Counters {
        (**self).counters()
    }
    fn profile(&self) -> Option<&crate::timing::Profile> {
        (**self).profile()
    }
    fn set_protocol_header(&mut self, bytes: usize) {
        (**self).set_protocol_header(bytes)
    }
    fn finalize(&mut self) {
        (**self).finalize()
    }
}

/// A device that passes another device's regions through: the wrappers, `Box<D>` and
/// `DeviceStack`. [`forward_regions!`] implements a `Device`'s region methods with it.
pub(crate) trait Wraps {
    type Inner: Device + ?Sized;
    fn inner(&self) -> &Self::Inner;
    fn inner_mut(&mut self) -> &mut Self::Inner;
}

/// Implements the region methods of a [`Wraps`] device by passing them to the device it
/// wraps: wrappers act on packets, regions go through them untouched.
macro_rules! forward_regions {
    () => {
        unsafe fn register(
            &mut self,
            addr: usize,
            len: usize,
            access: $crate::region::Access,
        ) -> $crate::error::Result<$crate::region::RegionKey> {
            // SAFETY: the caller's contract is passed on.
            unsafe { $crate::phy::Wraps::inner_mut(self).register(addr, len, access) }
        }
        fn deregister(&mut self, region: $crate::region::RegionKey) -> $crate::error::Result<()> {
            $crate::phy::Wraps::inner_mut(self).deregister(region)
        }
        fn import(
            &mut self,
            peer: $crate::error::Rank,
            key: $crate::region::RegionKey,
        ) -> $crate::error::Result<$crate::region::RegionInfo> {
            $crate::phy::Wraps::inner_mut(self).import(peer, key)
        }
        fn local_region(
            &self,
            key: $crate::region::RegionKey,
        ) -> $crate::error::Result<$crate::region::RegionInfo> {
            $crate::phy::Wraps::inner(self).local_region(key)
        }
        unsafe fn read_region(
            &mut self,
            peer: $crate::error::Rank,
            key: $crate::region::RegionKey,
            offset: usize,
            local: *mut u8,
            len: usize,
        ) -> $crate::error::Result<$crate::region::Transfer> {
            // SAFETY: the caller's contract is passed on.
            unsafe {
                $crate::phy::Wraps::inner_mut(self).read_region(peer, key, offset, local, len)
            }
        }
        fn write_region(
            &mut self,
            peer: $crate::error::Rank,
            key: $crate::region::RegionKey,
            offset: usize,
            local: &[u8],
        ) -> $crate::error::Result<()> {
            $crate::phy::Wraps::inner_mut(self).write_region(peer, key, offset, local)
        }
        fn poll_transfer(&mut self, id: $crate::region::TransferId) -> $crate::error::Result<bool> {
            $crate::phy::Wraps::inner_mut(self).poll_transfer(id)
        }
        unsafe fn export_named(
            &mut self,
            name: $crate::vmmc::Name,
            addr: usize,
            len: usize,
            access: $crate::region::Access,
        ) -> $crate::error::Result<$crate::region::RegionKey> {
            // SAFETY: the caller's contract is passed on.
            unsafe { $crate::phy::Wraps::inner_mut(self).export_named(name, addr, len, access) }
        }
        fn import_named(
            &mut self,
            peer: $crate::error::Rank,
            name: $crate::vmmc::Name,
        ) -> $crate::error::Result<($crate::region::RegionKey, $crate::region::RegionInfo)> {
            $crate::phy::Wraps::inner_mut(self).import_named(peer, name)
        }
        fn update(
            &mut self,
            peer: $crate::error::Rank,
            key: $crate::region::RegionKey,
            offset: usize,
            local: &[u8],
            notify: Option<$crate::vmmc::Name>,
        ) -> $crate::error::Result<()> {
            $crate::phy::Wraps::inner_mut(self).update(peer, key, offset, local, notify)
        }
        fn poll_notification(&mut self) -> Option<$crate::vmmc::Notification> {
            $crate::phy::Wraps::inner_mut(self).poll_notification()
        }
        fn complete_updates(&mut self, peer: $crate::error::Rank) -> $crate::error::Result<()> {
            $crate::phy::Wraps::inner_mut(self).complete_updates(peer)
        }
    };
}
pub(crate) use forward_regions;
