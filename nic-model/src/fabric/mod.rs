//! The job's shared-memory fabric: creation by the launcher ([`Job`]) or by a node leader
//! ([`HostLeader`]), attachment by each process ([`HostFabric`]), and typed access to the
//! control blocks and inboxes inside it.

mod host;
pub mod job;
pub mod layout;
pub mod leader;
pub(crate) mod liveness;
mod shm;

use crate::error::{NicError, Rank, Result};
use layout::{FabricHeader, Geometry, RankBlock, FABRIC_MAGIC, LAYOUT_VERSION};
use std::os::fd::OwnedFd;
use std::sync::atomic::Ordering;

pub(crate) use host::parse_key;
pub use host::HostFabric;
pub use job::{Job, JobConfig, JobOutcome, RankExit};
pub use leader::{join, HostLeader};
pub(crate) use shm::random_key;

/// Environment variables through which a launcher hands a fabric to its processes.
pub mod env {
    /// Inherited descriptor number of the fabric's memory file.
    pub const FABRIC_FD: &str = "NIC_FABRIC_FD";
    /// This process's rank.
    pub const RANK: &str = "NIC_RANK";
    /// Hex job key that must match the fabric's.
    pub const JOB_KEY: &str = "NIC_JOB_KEY";
}

/// A mapped fabric with its geometry.
pub struct Fabric {
    region: shm::SharedRegion,
    geo: Geometry,
}

impl Fabric {
    /// Creates the fabric `cfg` describes, with a fresh job key: returns it mapped, the
    /// descriptor to hand out, and the key.
    pub(crate) fn create_for(cfg: &JobConfig) -> Result<(Self, OwnedFd, [u8; 16])> {
        let geo = Geometry::new(cfg.nranks, cfg.shape()).map_err(NicError::BadFabric)?;
        let key = shm::random_key()?;
        let seed = cfg
            .fault_seed
            .unwrap_or_else(|| u64::from_le_bytes(key[..8].try_into().expect("8 of 16 bytes")));
        let (fabric, fd) = Fabric::create(geo, key, seed)?;
        tracing::debug!(target: "nic", nranks = cfg.nranks, bytes = geo.total_bytes, "fabric created");
        Ok((fabric, fd, key))
    }

    /// Creates a zeroed fabric for a new job; returns it and the descriptor to hand down.
    pub(crate) fn create(geo: Geometry, key: [u8; 16], fault_seed: u64) -> Result<(Self, OwnedFd)> {
        let name = format!("nic-fabric-{}", hex(&key[..4]));
        let (region, fd) = shm::SharedRegion::create(geo.total_bytes, &name)?;
        let header = FabricHeader {
            magic: FABRIC_MAGIC,
            version: LAYOUT_VERSION,
            nranks: geo.nranks as u32,
            job_key: key,
            queue_slots: geo.shape.queue_slots as u32,
            slot_bytes: geo.shape.slot_bytes as u32,
            box_count: geo.shape.box_count as u32,
            box_slots: geo.shape.box_slots as u32,
            box_slot_bytes: geo.shape.box_slot_bytes as u32,
            region_offset: geo.region_offset as u64,
            inbox_offset: geo.inbox_offset as u64,
            inbox_stride: geo.inbox_stride as u64,
            total_bytes: geo.total_bytes as u64,
            fault_seed,
        };
        // SAFETY: the region is fresh, page-aligned and larger than a page; no other process
        // has the descriptor yet, so nothing else reads or writes the header.
        unsafe { std::ptr::write(region.ptr(0) as *mut FabricHeader, header) };
        std::sync::atomic::fence(Ordering::Release);
        Ok((Fabric { region, geo }, fd))
    }

    pub fn geometry(&self) -> &Geometry {
        &self.geo
    }

    pub fn header(&self) -> &FabricHeader {
        self.region.at(0)
    }

    pub fn rank_block(&self, rank: Rank) -> &RankBlock {
        assert!(rank < self.geo.nranks);
        self.region
            .at(layout::PAGE + rank * std::mem::size_of::<RankBlock>())
    }

    /// Region descriptor `slot` of `rank` (`slot < REGION_SLOTS`).
    pub(crate) fn region_desc(&self, rank: Rank, slot: usize) -> &layout::RegionDesc {
        assert!(rank < self.geo.nranks && slot < layout::REGION_SLOTS);
        self.region.at(self.geo.region(rank, slot))
    }

    /// `rank`'s VMMC block: its exported names and notification ring.
    pub(crate) fn vmmc_block(&self, rank: Rank) -> &layout::VmmcBlock {
        assert!(rank < self.geo.nranks);
        self.region.at(self.geo.vmmc(rank))
    }

    /// A `T` at `offset` (an offset of the geometry).
    pub(crate) fn at<T>(&self, offset: usize) -> &T {
        self.region.at(offset)
    }

    pub(crate) fn ptr(&self, offset: usize) -> *mut u8 {
        self.region.ptr(offset)
    }
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
