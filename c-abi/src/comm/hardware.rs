//! Where a process runs, at the hardware levels `MPI_Comm_split_type` can split by (MPI 4.0
//! §7.4.2): `MPI_COMM_TYPE_SHARED` and `MPI_COMM_TYPE_HW_GUIDED` with a resource named in
//! the `mpi_hw_resource_type` info key, or `MPI_COMM_TYPE_HW_UNGUIDED`, where the library
//! picks the coarsest level that splits the communicator into strict subsets.
//!
//! ```text
//!   Machine (the host: its processes share memory; "mpi_shared_memory" names it too)
//!    └ Package (a socket)  └ NUMANode  └ Core  └ PU (one hardware thread)
//! ```
//!
//! A process is in one resource of a level when every CPU it may run on
//! (`sched_getaffinity`, as the launcher bound it) is in that resource; a process that may
//! run on CPUs of several (an unbound rank on a two-socket machine, at the Package level) is
//! in none, and gets `MPI_COMM_NULL` for a split at that level. Resources are numbered by
//! the kernel (sysfs), within the host: a location is the pair (host, resource).
//!
//! Level names are hwloc's (`Package`, `NUMANode`, `Core`, `PU`, `Machine`), which Open MPI
//! and MPICH (with hwloc) accept too, case-insensitive, with an optional `hwloc://` prefix;
//! a name the library does not know splits nobody off (`MPI_COMM_NULL` everywhere), as MPICH
//! does for every value but `mpi_shared_memory`.

use nic_model::placement::{allowed_cpus, Cpu, Topology};

/// A hardware level, coarsest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Level {
    Machine,
    Package,
    NumaNode,
    Core,
    HwThread,
}

impl Level {
    /// Every level, coarsest first (the order `MPI_COMM_TYPE_HW_UNGUIDED` tries them in).
    pub const ALL: [Level; 5] = [
        Level::Machine,
        Level::Package,
        Level::NumaNode,
        Level::Core,
        Level::HwThread,
    ];

    /// The level's name in `mpi_hw_resource_type`.
    pub fn name(self) -> &'static str {
        match self {
            Level::Machine => "Machine",
            Level::Package => "Package",
            Level::NumaNode => "NUMANode",
            Level::Core => "Core",
            Level::HwThread => "PU",
        }
    }

    /// The level a `mpi_hw_resource_type` value names, if the library knows it.
    pub fn parse(value: &str) -> Option<Level> {
        let v = value.trim();
        if v == "mpi_shared_memory" {
            return Some(Level::Machine);
        }
        let v = v.strip_prefix("hwloc://").unwrap_or(v).to_ascii_lowercase();
        Some(match v.as_str() {
            "machine" => Level::Machine,
            "package" | "socket" => Level::Package,
            "numanode" | "numa" | "node" => Level::NumaNode,
            "core" => Level::Core,
            "pu" | "hwthread" => Level::HwThread,
            _ => return None,
        })
    }

    /// The resource of this level that `cpu` is in (within its host).
    fn resource(self, cpu: &Cpu) -> u32 {
        match self {
            Level::Machine => 0,
            Level::Package => cpu.package as u32,
            Level::NumaNode => cpu.node as u32,
            // Core numbers repeat in every package.
            Level::Core => ((cpu.package as u32) << 16) | cpu.core as u32,
            Level::HwThread => cpu.id as u32,
        }
    }
}

/// This process's resource at every level (in [`Level::ALL`]'s order), `-1` where its CPUs
/// are in several: what the processes of a communicator exchange to split it.
pub(crate) fn this_process() -> [i32; 5] {
    let topology = Topology::read();
    let cpus: Vec<Cpu> = allowed_cpus()
        .unwrap_or_default()
        .into_iter()
        .map(|id| topology.cpu(id))
        .collect();
    Level::ALL.map(|level| contained_in(level, &cpus))
}

/// The one resource of `level` holding every CPU of `cpus`, or -1.
fn contained_in(level: Level, cpus: &[Cpu]) -> i32 {
    let mut ids = cpus.iter().map(|c| level.resource(c));
    match ids.next() {
        Some(first) if ids.all(|id| id == first) => first as i32,
        // No CPU at all (the kernel would not say): on the machine, nothing finer.
        None if level == Level::Machine => 0,
        _ => -1,
    }
}

/// A process's location as the others see it: its host's color and its resource per level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Location {
    pub host: i32,
    pub resources: [i32; 5],
}

impl Location {
    pub const BYTES: usize = 24;

    pub fn to_bytes(self) -> [u8; Self::BYTES] {
        let mut b = [0u8; Self::BYTES];
        b[..4].copy_from_slice(&self.host.to_ne_bytes());
        for (i, r) in self.resources.iter().enumerate() {
            b[4 + 4 * i..8 + 4 * i].copy_from_slice(&r.to_ne_bytes());
        }
        b
    }

    pub fn from_bytes(b: &[u8]) -> Location {
        let int = |i: usize| i32::from_ne_bytes(b[4 * i..4 * i + 4].try_into().expect("4 bytes"));
        Location {
            host: int(0),
            resources: [int(1), int(2), int(3), int(4), int(5)],
        }
    }

    /// Where this process is at `level`: (host, resource), or `None` if it is in none.
    fn at(&self, level: Level) -> Option<(i32, i32)> {
        let i = Level::ALL
            .iter()
            .position(|&l| l == level)
            .expect("a level");
        (self.resources[i] >= 0).then_some((self.host, self.resources[i]))
    }
}

/// The split color of process `me` among `everyone` at `level`: the index of the first
/// process in the same resource, or `None` (`MPI_UNDEFINED`) if `me` is in none.
pub(crate) fn color(everyone: &[Location], me: usize, level: Level) -> Option<i32> {
    let mine = everyone[me].at(level)?;
    everyone
        .iter()
        .position(|l| l.at(level) == Some(mine))
        .map(|i| i as i32)
}

/// The split color of the process at `me` for `level` computed from its own place alone (a
/// hash of the host and the resource, never negative), or `None` if it is in no resource of
/// that level. Every process of one resource computes the same value, so
/// `MPI_COMM_TYPE_HW_GUIDED` is a plain split on it and mixes with `MPI_UNDEFINED` and
/// `MPI_COMM_TYPE_SHARED` callers (who split without exchanging places), as the standard
/// allows.
pub(crate) fn local_color(me: &Location, level: Level) -> Option<i32> {
    let (host, resource) = me.at(level)?;
    let mut h: u32 = 0x811c_9dc5;
    for b in host.to_le_bytes().into_iter().chain(resource.to_le_bytes()) {
        h = (h ^ b as u32).wrapping_mul(0x0100_0193);
    }
    Some((h & 0x3fff_ffff) as i32)
}

/// `MPI_COMM_TYPE_HW_UNGUIDED`'s level: the coarsest at which the processes that are in a
/// resource fall into at least two (every new group a strict subset), if any.
pub(crate) fn unguided_level(everyone: &[Location]) -> Option<Level> {
    Level::ALL.into_iter().find(|&level| {
        let mut places: Vec<(i32, i32)> = everyone.iter().filter_map(|l| l.at(level)).collect();
        places.sort_unstable();
        places.dedup();
        places.len() >= 2 && everyone.iter().all(|l| l.at(level).is_some())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(host: i32, package: i32, node: i32, core: i32, pu: i32) -> Location {
        Location {
            host,
            resources: [0, package, node, core, pu],
        }
    }

    #[test]
    fn names_parse_as_hwloc_and_mpi_spell_them() {
        assert_eq!(Level::parse("mpi_shared_memory"), Some(Level::Machine));
        assert_eq!(Level::parse("hwloc://Package"), Some(Level::Package));
        assert_eq!(Level::parse("numanode"), Some(Level::NumaNode));
        assert_eq!(Level::parse("L3Cache"), None);
        for l in Level::ALL {
            assert_eq!(Level::parse(l.name()), Some(l));
        }
    }

    #[test]
    fn unguided_takes_the_coarsest_level_that_splits() {
        // Two hosts: split by host.
        let two_hosts = [at(1, 0, 0, 0, 0), at(1, 0, 0, 1, 1), at(2, 0, 0, 0, 0)];
        assert_eq!(unguided_level(&two_hosts), Some(Level::Machine));
        assert_eq!(color(&two_hosts, 1, Level::Machine), Some(0));
        assert_eq!(color(&two_hosts, 2, Level::Machine), Some(2));
        // One host, one package and node, two cores: by core.
        let cores = [at(1, 0, 0, 0, 0), at(1, 0, 0, 1, 1)];
        assert_eq!(unguided_level(&cores), Some(Level::Core));
        // An unbound process (in no core) stops the split at that level: none left.
        let unbound = [at(1, 0, 0, -1, -1), at(1, 0, 0, 1, 1)];
        assert_eq!(unguided_level(&unbound), None);
        assert_eq!(color(&unbound, 0, Level::Core), None);
        // One process alone: no strict subset.
        assert_eq!(unguided_level(&[at(1, 0, 0, 0, 0)]), None);
    }

    #[test]
    fn a_process_is_in_a_resource_only_if_all_its_cpus_are() {
        let cpu = |id, core, package, node| Cpu {
            id,
            core,
            package,
            node,
        };
        let two_cores = [cpu(0, 0, 0, 0), cpu(1, 1, 0, 0)];
        assert_eq!(contained_in(Level::Package, &two_cores), 0);
        assert_eq!(contained_in(Level::Core, &two_cores), -1);
        assert_eq!(contained_in(Level::HwThread, &two_cores[..1]), 0);
        let round_trip = at(7, 1, 2, 3, 4);
        assert_eq!(Location::from_bytes(&round_trip.to_bytes()), round_trip);
    }
}
