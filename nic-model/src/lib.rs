//! # nic-model: the modeled network interface, the bottom of the stack
//!
//! ```text
//!   bip-core (BIP)  ──uses──▶  Device trait (phy): send, poll, progress,
//!                                │                  register / import / read / write regions
//!                    DeviceStack: Nic or HostNet, or either boxed under FaultInjector / PcapWriter
//!                                │
//!            HostNet (net) ──────┤  a job across hosts: this host's ranks through the Nic,
//!                                │  the others through TCP (wire-up through PMI)
//!                               Nic  (one per process: inbox, regions, single-copy engine, timing)
//!                                │
//!      wire: per rank one shared receive queue + fast boxes, region descriptors, in the
//!            host's shared-memory fabric
//! ```
//!
//! **What it does.** Moves packets between the processes of a job on one host with no system
//! call and no lock on the fast path, the way a user-level NIC (Myrinet under BIP or FM) did:
//! a sender writes a packet straight into a packet buffer of its destination's inbox (a fast
//! box of its own there for small packets, the inbox's shared receive queue otherwise) and
//! publishes it by storing a sequence flag; the receiver polls that flag, which stays in its
//! cache until the sender writes it. Memory per rank does not grow with the job. Long data
//! does not travel in packets: a process exports a buffer as a region ([`Device::register`], VMMC's export), a peer that was given its key
//! reads or writes it in one copy ([`Device::read_region`], `process_vm_readv`, the modern form
//! of DMA from pinned pages), within its bounds and permissions and only until the exporter
//! withdraws it ([`region`]). Long reads are split between both ends' cores.
//!
//! **What it promises the layer above.** Routes fixed at start-up; delivery in order per
//! (source, destination) pair, packets lent from any source by one poll, fairly;
//! back-pressure when a destination's buffers are full (the sender waits, nothing is
//! dropped); dead peers reported within a second through [`Device::peer_status`]
//! and [`wait::Backoff`]; per-NIC [`Counters`]. Under a timing profile other than `native`
//! ([`timing`]) each packet is delivered no earlier than its modeled arrival. Wrappers in
//! [`phy`] inject faults or trace packets to pcap; an unreliable device says so in its
//! [`Capabilities`].
//!
//! **What it needs from below.** Linux: `memfd_create`, shared `mmap`, and, for single copy,
//! `process_vm_readv`/`writev` (refused under some ptrace policies, in which case the layer
//! above falls back to packets).
//!
//! Between hosts ([`net`]) the same interface runs over TCP: packets as frames, region reads
//! as requests answered with the region's bytes, sent from the exporter's memory and received
//! into the reader's; ranks find each other through their launcher's PMI key-value space,
//! and the ranks of one host share one fabric through a node leader ([`fabric::HostLeader`]).
//!
//! **Modules.** [`fabric`]: the job's shared memory, its layout, the launcher ([`Job`]) and the
//! node leader that shares a host's fabric without one; [`net`]: the network between hosts;
//! `wire`: the inboxes (queue, fast boxes, their merge); [`phy`]: the device trait and wrappers; [`placement`]: which CPUs
//! each rank runs on (the policy of `mpirun --bind-to`); [`region`]: exported regions and
//! their keys; [`nic`]: the NIC; `stack`: the wrappers chosen at run time; [`timing`]:
//! profiles; [`vmmc`]: VMMC's export and import by name, deliberate update and
//! notifications (seed 003), over any device; [`wait`]: back-off; [`testing`]:
//! multi-process test harness.

pub mod copy_jobs;
mod counters;
mod dma;
pub mod error;
pub mod fabric;
pub mod net;
pub mod nic;
pub mod phy;
pub mod placement;
pub mod region;
mod stack;
pub mod testing;
pub mod timing;
mod trace;
pub mod vmmc;
pub mod wait;
mod wire;

pub use counters::Counters;
pub use error::{NicError, Rank, Result};
pub use fabric::{Job, JobConfig, JobOutcome, RankExit};
pub use nic::Nic;
pub use phy::{poll_bytes, send_bytes, Capabilities, Device, PeerStatus};
pub use region::{Access, RegionInfo, RegionKey, Transfer, TransferId};
pub use stack::DeviceStack;
pub use timing::Profile;
pub use trace::init_from_env as init_tracing;
