//! The job's shared-memory fabric: creation by the launcher, attachment by each process, and
//! typed access to the control blocks and rings inside it.

pub mod job;
pub mod layout;
mod shm;

use crate::error::{NicError, Rank, Result};
use layout::{FabricHeader, Geometry, RankBlock, RingConsumer, FABRIC_MAGIC, LAYOUT_VERSION};
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::Ordering;

pub use job::{Job, JobConfig, JobOutcome, RankExit};
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
    /// Creates a zeroed fabric for a new job; returns it and the descriptor to hand down.
    pub(crate) fn create(geo: Geometry, key: [u8; 16], fault_seed: u64) -> Result<(Self, OwnedFd)> {
        let name = format!("nic-fabric-{}", hex(&key[..4]));
        let (region, fd) = shm::SharedRegion::create(geo.total_bytes, &name)?;
        let header = FabricHeader {
            magic: FABRIC_MAGIC,
            version: LAYOUT_VERSION,
            nranks: geo.nranks as u32,
            job_key: key,
            slots_per_ring: geo.slots_per_ring as u32,
            slot_bytes: geo.slot_bytes as u32,
            region_offset: geo.region_offset as u64,
            ring_offset: geo.ring_offset as u64,
            ring_stride: geo.ring_stride as u64,
            total_bytes: geo.total_bytes as u64,
            fault_seed,
        };
        // SAFETY: the region is fresh, page-aligned and larger than a page; no other process
        // has the descriptor yet, so nothing else reads or writes the header.
        unsafe { std::ptr::write(region.ptr(0) as *mut FabricHeader, header) };
        std::sync::atomic::fence(Ordering::Release);
        Ok((Fabric { region, geo }, fd))
    }

    /// Attaches to the fabric described by this process's environment, checking the job key.
    pub fn from_env() -> Result<(Self, Rank)> {
        let fd: RawFd = read_env(env::FABRIC_FD)?.parse().map_err(|_| {
            NicError::BadFabric(format!("{} is not a descriptor number", env::FABRIC_FD))
        })?;
        let rank: Rank = read_env(env::RANK)?
            .parse()
            .map_err(|_| NicError::BadFabric(format!("{} is not a number", env::RANK)))?;
        let key = read_env(env::JOB_KEY)?;
        if fd < 3 {
            return Err(NicError::BadFabric(format!(
                "descriptor {fd} cannot be a fabric"
            )));
        }
        // SAFETY: the launcher passed this descriptor down to us for exactly this purpose; we
        // take ownership so that it is closed once mapped (the mapping keeps the memory).
        let owned = unsafe { OwnedFd::from_raw_fd(fd) };
        let region = shm::SharedRegion::attach(fd)?;
        drop(owned);
        let h: &FabricHeader = region.at(0);
        if h.magic != FABRIC_MAGIC || h.version != LAYOUT_VERSION {
            return Err(NicError::BadFabric("wrong magic or layout version".into()));
        }
        if hex(&h.job_key) != key {
            return Err(NicError::BadFabric(
                "job key does not match: this fabric belongs to another job".into(),
            ));
        }
        let geo = Geometry::new(
            h.nranks as usize,
            h.slots_per_ring as usize,
            h.slot_bytes as usize,
        )
        .map_err(NicError::BadFabric)?;
        if geo.total_bytes as u64 != h.total_bytes
            || geo.region_offset as u64 != h.region_offset
            || geo.total_bytes > region.len()
        {
            return Err(NicError::BadFabric(
                "fabric size does not match its header".into(),
            ));
        }
        if rank >= geo.nranks {
            return Err(NicError::BadRank {
                rank,
                nranks: geo.nranks,
            });
        }
        Ok((Fabric { region, geo }, rank))
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

    pub(crate) fn ring_consumer(&self, src: Rank, dst: Rank) -> &RingConsumer {
        self.region.at(self.geo.ring(src, dst))
    }

    pub(crate) fn slot_offset(&self, src: Rank, dst: Rank, slot: usize) -> usize {
        self.geo.ring(src, dst) + layout::CACHE_LINE + slot * self.geo.slot_bytes
    }

    pub(crate) fn ptr(&self, offset: usize) -> *mut u8 {
        self.region.ptr(offset)
    }
}

fn read_env(name: &'static str) -> Result<String> {
    std::env::var(name).map_err(|_| NicError::NotInJob(name))
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
