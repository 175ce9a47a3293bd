//! Remote memory: the narrow door from the layer above to the device's VMMC operations, for
//! one-sided communication that moves its data without the point-to-point engine.
//!
//! ```text
//!   c-abi windows ──▶ Adi::remote_memory() ──▶ Channel::remote_memory() ──▶ &mut dyn RemoteMemory
//!                                                 (bip: the device under BIP; fm, fm1: none)
//!   expose(addr, len)            register the window memory, readable and writable
//!   reach(peer, key)             how that peer's region is reached: in one copy (a write is
//!                                in place when it returns), posted (another host), or not
//!   write(peer, key, off, data)  a deliberate update (no notification): one process_vm_writev
//!                                on one host; Write frames across hosts, applied by the
//!                                target's device when it polls, in order with the packets
//!                                sent after them on the same connection
//!   read(peer, key, off, buf)    a fetch: done at once, or a transfer polled with read_done
//!   complete_writes(peer)        waits until every write to the peer is applied (a Fence
//!                                frame across hosts; nothing on one host)
//! ```
//!
//! Only memory moves through here: packets stay the channel's. A channel whose transport has
//! no regions the caller may use (FM's streams own their device) offers none, and the layer
//! above keeps its message path.

use crate::adi::AdiError;
use nic_model::{Access, Device, NicError, RegionKey, Transfer, TransferId};

/// How a peer's region is reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// Same host, single copy: a write is in place, and a read done, when the call returns.
    SingleCopy,
    /// Another host: writes are posted (applied by the peer's device when it polls, before
    /// the packets sent after them), reads answered by the peer's device.
    Posted,
    /// Not at all (single copy refused on this host, or the key names no region).
    Unreachable,
}

/// The device's memory operations, as one-sided communication uses them.
pub trait RemoteMemory {
    /// Registers `len` bytes at `addr` of this process, readable and writable by peers that
    /// know the key.
    ///
    /// # Safety
    /// The bytes stay valid until [`RemoteMemory::withdraw`]; peers may change them at any
    /// time meanwhile.
    unsafe fn expose(&mut self, addr: usize, len: usize) -> Result<RegionKey, AdiError>;
    /// Withdraws a region this process exposed; from now on accesses to it are refused.
    fn withdraw(&mut self, key: RegionKey) -> Result<(), AdiError>;
    /// How `peer`'s region `key` is reached from here (checked with a one-byte read on this
    /// host, where the kernel may refuse single-copy access to other processes).
    fn reach(&mut self, peer: usize, key: RegionKey) -> Reach;
    /// Writes `data` at `offset` of `peer`'s region `key` (a deliberate update). On one host
    /// the bytes are there when this returns; across hosts they are posted, and applied by
    /// the peer's device before any packet sent to the peer after this call.
    fn write(
        &mut self,
        peer: usize,
        key: RegionKey,
        offset: usize,
        data: &[u8],
    ) -> Result<(), AdiError>;
    /// Reads `len` bytes at `offset` of `peer`'s region `key` into `buf`: `None` when they
    /// are there already, else the transfer to poll with [`RemoteMemory::read_done`].
    ///
    /// # Safety
    /// `buf` is valid for `len` bytes of writing, and not otherwise accessed, until the read
    /// is done.
    unsafe fn read(
        &mut self,
        peer: usize,
        key: RegionKey,
        offset: usize,
        buf: *mut u8,
        len: usize,
    ) -> Result<Option<TransferId>, AdiError>;
    /// Whether read `id` is done (its bytes in place).
    fn read_done(&mut self, id: TransferId) -> Result<bool, AdiError>;
    /// Waits until every write to `peer` is applied, or returns the refusal of one.
    fn complete_writes(&mut self, peer: usize) -> Result<(), AdiError>;
}

fn adi_error(e: NicError) -> AdiError {
    match e {
        NicError::PeerDead { rank, why } => AdiError::PeerGone {
            rank,
            why: why.to_string(),
        },
        e => AdiError::Channel(e.to_string()),
    }
}

impl<D: Device + ?Sized> RemoteMemory for D {
    unsafe fn expose(&mut self, addr: usize, len: usize) -> Result<RegionKey, AdiError> {
        // SAFETY: the caller's contract is the device's.
        unsafe { self.register(addr, len, Access::READ_WRITE) }.map_err(adi_error)
    }

    fn withdraw(&mut self, key: RegionKey) -> Result<(), AdiError> {
        self.deregister(key).map_err(adi_error)
    }

    fn reach(&mut self, peer: usize, key: RegionKey) -> Reach {
        match self.import(peer, key) {
            Ok(info) if info.len > 0 => {
                let mut byte = Box::new(0u8);
                // SAFETY: one byte of our own, kept until the read is over (below).
                match unsafe { self.read_region(peer, key, 0, &mut *byte, 1) } {
                    Ok(Transfer::Done) => Reach::SingleCopy,
                    Ok(Transfer::Pending(id)) => {
                        // A one-byte read is not split; should a device make it wait, it is
                        // waited for a while, and its byte left to it if it is still going.
                        for _ in 0..10_000 {
                            match self.poll_transfer(id) {
                                Ok(true) => return Reach::SingleCopy,
                                Ok(false) => std::thread::yield_now(),
                                Err(_) => return Reach::Unreachable,
                            }
                        }
                        std::mem::forget(byte);
                        Reach::Unreachable
                    }
                    Err(_) => Reach::Unreachable,
                }
            }
            Ok(_) => Reach::Unreachable,
            // Regions of another host are not imported by key: reached by posted frames.
            Err(NicError::NoSingleCopy { .. }) => Reach::Posted,
            Err(_) => Reach::Unreachable,
        }
    }

    fn write(
        &mut self,
        peer: usize,
        key: RegionKey,
        offset: usize,
        data: &[u8],
    ) -> Result<(), AdiError> {
        self.update(peer, key, offset, data, None)
            .map_err(adi_error)
    }

    unsafe fn read(
        &mut self,
        peer: usize,
        key: RegionKey,
        offset: usize,
        buf: *mut u8,
        len: usize,
    ) -> Result<Option<TransferId>, AdiError> {
        // SAFETY: the caller's contract is the device's.
        match unsafe { self.read_region(peer, key, offset, buf, len) }.map_err(adi_error)? {
            Transfer::Done => Ok(None),
            Transfer::Pending(id) => Ok(Some(id)),
        }
    }

    fn read_done(&mut self, id: TransferId) -> Result<bool, AdiError> {
        self.poll_transfer(id).map_err(adi_error)
    }

    fn complete_writes(&mut self, peer: usize) -> Result<(), AdiError> {
        self.complete_updates(peer).map_err(adi_error)
    }
}
