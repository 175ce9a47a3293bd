//! The categories, enumerations and time source of the interface: fixed tables, so that every
//! index is stable (see the module documentation of [`crate::tool`]).

use std::ffi::c_int;
use std::sync::OnceLock;
use std::time::Instant;

/// A category: a layer of the stack (or the stack as a whole) and the variables about it.
pub(crate) struct Category {
    pub name: &'static str,
    pub desc: &'static str,
    /// Indexes of the categories it contains.
    pub subcategories: &'static [usize],
}

pub(crate) const NIC: usize = 0;
pub(crate) const BIP: usize = 1;
pub(crate) const FM: usize = 2;
pub(crate) const CHANNEL: usize = 3;
pub(crate) const MPI: usize = 4;

/// Every category, by index.
pub(crate) const CATEGORIES: &[Category] = &[
    Category {
        name: "nic",
        desc: "nic-model, the network interface: packets handed to and taken off the wire \
               (shared-memory queues within a host, TCP between hosts), single-copy (DMA) \
               transfers between processes' memory, route stalls; settings of the fabric the \
               launcher builds (timing profile, packet buffers)",
        subcategories: &[],
    },
    Category {
        name: "bip",
        desc: "bip-core, Basic Interface for Parallelism: short messages buffered through \
               packets under credit-based flow control, long ones by rendezvous and a single \
               copy; reliability over unreliable devices (retransmissions)",
        subcategories: &[],
    },
    Category {
        name: "fm",
        desc: "fm-streams, Fast Messages 2.x (streams read by handlers) and 1.x (whole staged \
               messages) over BIP; its counters move only under the fm and fm1 channels",
        subcategories: &[],
    },
    Category {
        name: "channel",
        desc: "mpich-channel, the MPICH channel under the ADI: which lower layer carries MPI's \
               messages (bip, fm or fm1), its eager limit, and the copies the channel makes \
               itself",
        subcategories: &[],
    },
    Category {
        name: "mpi",
        desc: "the MPI layer (the ADI's engine and libmpi.so): copies of unexpected eager \
               messages into the receive that matched them, and the library's own settings",
        subcategories: &[],
    },
    Category {
        name: "stack",
        desc: "the whole stack, from the wire up: nic, bip, fm, channel, mpi",
        subcategories: &[NIC, BIP, FM, CHANNEL, MPI],
    },
];

/// The index of the category called `name`.
pub(crate) fn category_index(name: &str) -> Option<usize> {
    CATEGORIES.iter().position(|c| c.name == name)
}

/// An enumeration: the values an integer control variable may take, with their names.
pub(crate) struct Enumeration {
    pub name: &'static str,
    pub items: &'static [(c_int, &'static str)],
}

impl Enumeration {
    /// The value of the item called `name`.
    pub fn value_of(&self, name: &str) -> Option<c_int> {
        self.items.iter().find(|(_, n)| *n == name).map(|(v, _)| *v)
    }

    /// The name of the item of value `value`.
    pub fn name_of(&self, value: c_int) -> Option<&'static str> {
        self.items
            .iter()
            .find(|(v, _)| *v == value)
            .map(|(_, n)| *n)
    }
}

pub(crate) const CHANNELS: usize = 0;
pub(crate) const PROFILES: usize = 1;
pub(crate) const DMA_MODES: usize = 2;

/// A timing profile that is a file or a directory entry of `MPI_NIC_PROFILE_PATH`, not a
/// built-in one (its name is the `MPI_NIC_PROFILE` environment variable).
pub(crate) const PROFILE_OTHER: c_int = 3;

/// Every enumeration, by index (the handle of one is its index, see [`crate::tool::handles`]).
pub(crate) const ENUMS: &[Enumeration] = &[
    Enumeration {
        name: "mpi_channel",
        items: &[(0, "bip"), (1, "fm"), (2, "fm1")],
    },
    Enumeration {
        name: "nic_profile",
        items: &[
            (0, "native"),
            (1, "myrinet-lanai4"),
            (2, "rdma-100g"),
            (PROFILE_OTHER, "other"),
        ],
    },
    Enumeration {
        name: "nic_dma",
        items: &[(0, "on"), (1, "read"), (2, "off")],
    },
];

/// The interface's one time source.
pub(crate) const SOURCE_NAME: &str = "monotonic_clock";
pub(crate) const SOURCE_DESC: &str =
    "the process's monotonic clock, in nanoseconds since the first MPI_T call that read it";
pub(crate) const SOURCE_TICKS_PER_SECOND: i64 = 1_000_000_000;

/// The time source's current tick.
pub(crate) fn source_timestamp() -> i64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    let epoch = *EPOCH.get_or_init(Instant::now);
    i64::try_from(epoch.elapsed().as_nanos()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    const STACK: usize = 5;

    #[test]
    fn every_layer_has_its_variables_and_the_stack_holds_the_layers() {
        use crate::tool::{cvars, pvars};
        for cat in [NIC, BIP, FM, CHANNEL, MPI] {
            assert!(
                !pvars::in_category(cat).is_empty(),
                "{}",
                CATEGORIES[cat].name
            );
            assert!(
                !cvars::in_category(cat).is_empty(),
                "{}",
                CATEGORIES[cat].name
            );
        }
        assert!(pvars::in_category(STACK).is_empty() && cvars::in_category(STACK).is_empty());
        assert_eq!(category_index("stack"), Some(STACK));
        let names: std::collections::BTreeSet<_> = CATEGORIES.iter().map(|c| c.name).collect();
        assert_eq!(names.len(), CATEGORIES.len());
    }

    #[test]
    fn enumerations_name_each_value_once() {
        for e in ENUMS {
            for (v, n) in e.items {
                assert_eq!(e.value_of(n), Some(*v));
                assert_eq!(e.name_of(*v), Some(*n));
            }
        }
        assert_eq!(ENUMS[CHANNELS].value_of("fm1"), Some(2));
        assert!(source_timestamp() <= source_timestamp());
    }
}
