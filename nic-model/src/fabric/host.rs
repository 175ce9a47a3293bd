//! [`HostFabric`]: what one process needs to attach its NIC to the fabric of its host (the
//! memory file's descriptor, the job key, its local rank), however it got them: inherited from
//! a launcher through the environment ([`HostFabric::from_env`]) or handed over by the node
//! leader ([`super::leader::join`], [`super::HostLeader::attach_self`]).

use super::layout::{FabricHeader, Geometry, InboxShape, FABRIC_MAGIC, LAYOUT_VERSION};
use super::{env, shm, Fabric};
use crate::error::{NicError, Rank, Result};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// The fabric descriptor, the job key and the local rank of one process: what
/// [`crate::Nic::open`] needs. The descriptor is close-on-exec (except one inherited from a
/// launcher) and is closed once the NIC has mapped the fabric.
pub struct HostFabric {
    fd: OwnedFd,
    key: [u8; 16],
    rank: Rank,
}

impl HostFabric {
    pub(crate) fn new(fd: OwnedFd, key: [u8; 16], rank: Rank) -> HostFabric {
        HostFabric { fd, key, rank }
    }

    /// Reads the fabric a launcher handed down (`NIC_FABRIC_FD`, `NIC_RANK`, `NIC_JOB_KEY`,
    /// see [`super::env`]) and takes the inherited descriptor over: call it once per process.
    pub fn from_env() -> Result<HostFabric> {
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
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let key = parse_key(&key).ok_or_else(|| {
            NicError::BadFabric(format!(
                "{} is not a job key (32 hex digits): this fabric belongs to another job",
                env::JOB_KEY
            ))
        })?;
        Ok(HostFabric { fd, key, rank })
    }

    /// This process's rank among the processes that share the fabric (on a host whose ranks
    /// a node leader gathered: its local rank; under `mpirun`: its rank in the job).
    pub fn rank(&self) -> Rank {
        self.rank
    }

    /// Maps the fabric and checks that it is one, that it is this job's (the key), that its
    /// header is consistent and that the rank is in range. The descriptor stays open.
    pub(crate) fn map(&self) -> Result<Fabric> {
        let region = shm::SharedRegion::attach(self.fd.as_raw_fd())?;
        let h: &FabricHeader = region.at(0);
        if h.magic != FABRIC_MAGIC || h.version != LAYOUT_VERSION {
            return Err(NicError::BadFabric(
                "wrong magic or layout version (are all processes of the job running the same library?)".into(),
            ));
        }
        if h.job_key != self.key {
            return Err(NicError::BadFabric(
                "job key does not match: this fabric belongs to another job".into(),
            ));
        }
        let shape = InboxShape {
            queue_slots: h.queue_slots as usize,
            slot_bytes: h.slot_bytes as usize,
            box_count: h.box_count as usize,
            box_slots: h.box_slots as usize,
            box_slot_bytes: h.box_slot_bytes as usize,
        };
        let geo = Geometry::new(h.nranks as usize, shape).map_err(NicError::BadFabric)?;
        if geo.total_bytes as u64 != h.total_bytes
            || geo.region_offset as u64 != h.region_offset
            || geo.inbox_offset as u64 != h.inbox_offset
            || geo.inbox_stride as u64 != h.inbox_stride
            || geo.total_bytes > region.len()
        {
            return Err(NicError::BadFabric(
                "fabric size does not match its header".into(),
            ));
        }
        if self.rank >= geo.nranks {
            return Err(NicError::BadRank {
                rank: self.rank,
                nranks: geo.nranks,
            });
        }
        Ok(Fabric { region, geo })
    }
}

/// Shows the rank and the descriptor number, never the key.
impl std::fmt::Debug for HostFabric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostFabric")
            .field("rank", &self.rank)
            .field("fd", &self.fd.as_raw_fd())
            .finish_non_exhaustive()
    }
}

fn read_env(name: &'static str) -> Result<String> {
    std::env::var(name).map_err(|_| NicError::NotInJob(name))
}

/// The 16 bytes written as 32 hex digits by [`super::hex`].
pub(crate) fn parse_key(s: &str) -> Option<[u8; 16]> {
    // `from_str_radix` alone would also take a sign.
    if s.len() != 32 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let mut key = [0u8; 16];
    for (i, b) in key.iter_mut().enumerate() {
        *b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_through_hex_and_garbage_is_refused() {
        let key: [u8; 16] = std::array::from_fn(|i| (i as u8).wrapping_mul(37) ^ 0xa5);
        assert_eq!(parse_key(&super::super::hex(&key)), Some(key));
        assert_eq!(parse_key(""), None);
        assert_eq!(parse_key(&"0".repeat(31)), None);
        assert_eq!(parse_key(&"g".repeat(32)), None);
        assert_eq!(parse_key(&"+1".repeat(16)), None);
        assert_eq!(parse_key(&"é".repeat(16)), None);
    }
}
