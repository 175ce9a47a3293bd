//! # mpich-channel: the channel device and the ADI point-to-point engine
//!
//! ```text
//!   c-abi (MPI_Send, MPI_Irecv, ...)          bytes, ranks, tags, context ids
//!        │
//!   engine::Engine  the one progress engine: every blocking call and every test turns it;
//!        │          operations (nonblocking collectives) and hooks plug in; waiting policy
//!   adi::Adi      the one request table; matching on (context, source, tag) with wildcards;
//!        │        posted and unexpected queues; eager and rendezvous (over regions); send
//!        │        modes; probe; cancel; truncation
//!        │  Channel trait: control messages + large-message transfer (export, pull)
//!   ┌────┴───────────┬────────────────────┐
//!  "bip"           "fm"                 "fm1"
//!   BIP queues     FM 2.x streams       FM 1.x whole messages
//! ```
//!
//! **What it does.** This is the layer MPICH called the ADI (abstract device interface) with a
//! *channel device* under it: the ADI implements MPI point-to-point semantics once, and a
//! channel is the small interface a transport must offer: send a control message, hand over
//! arrived ones, and move large messages through exported regions ([`channel`] explains the
//! contract). BIP-MPI was
//! MPICH ported to BIP this way; here the same ADI runs over BIP directly, over FM 2.x streams
//! (where a message's header is read first, so its payload is received straight into the
//! posted user buffer) and over the FM 1.x interface (the baseline that stages every message).
//!
//! **What it promises the layer above.** [`Engine`]: one request object per operation, from
//! the C handle down ([`Adi`]'s table; what the layer above keeps with a request rides along
//! as an [`Attachment`]); MPI's matching and ordering rules, the four send modes (buffered
//! ones are the layer above's copy plus a standard send), nonblocking operations that never
//! block, truncation reported in the status, cancel of unmatched receives and sends; and one
//! progress engine through which every wait and test goes, so every operation moves on while
//! a process waits for any (MPI's progress rule), backing off when ranks outnumber cores and
//! failing (instead of hanging) when a peer dies. Data is bytes: datatypes are the layer
//! above's.
//!
//! **What it needs from below.** A job's NIC (nic-model, set up by `mpirun`, or a one-rank job
//! of its own when a program is started alone), and BIP and FM's public interfaces.
//!
//! **Lanes** ([`lanes`], MPICH's VCIs). Under `MPI_THREAD_MULTIPLE` the layer above may split
//! the engine into lanes ([`Engine::into_lanes`]): several engines, each with its own
//! requests, queues and matching, used by one thread at a time each, so that threads working
//! on different communicators progress in parallel. They share the one channel behind a
//! mutex; a message belongs to the lane of its context id (a function the layer above gives,
//! the same in every process: nothing about lanes travels on the wire), a lane that finds a
//! message of another lane on the channel leaves it in that lane's inbox, and a finished
//! transfer goes back to the lane that started it. Lane 0 is the engine as it was (its
//! operations, hooks, the device's memory, the counters); one lane is exactly the engine
//! without lanes.
//!
//! **Choosing a channel.** `MPI_CHANNEL=bip|fm|fm1` (`mpirun --channel`); `bip`, the fastest,
//! by default. `MPI_EAGER_MAX` overrides the eager limit of the channel.
//!
//! **Modules.** [`envelope`]: the control message header; [`channel`]: the trait and its three
//! implementations; [`adi`]: point-to-point (`request` table, `state`: matching and arrivals);
//! [`engine`]: the progress engine; [`remote`]: the device's memory operations (deliberate
//! update and read) that one-sided communication uses beside the messages, where the channel
//! offers them; [`lanes`]: several engines over one channel.

pub mod adi;
pub mod channel;
pub mod engine;
pub mod envelope;
pub mod lanes;
pub mod remote;

/// The geometry of an MPI job's fabric, for launchers (`mpirun`, `layers`): queue packet
/// buffers of 8 KiB plus headers, so that an 8 KiB message with its BIP header and MPI envelope
/// travels as one packet (the eager limit of the `bip` channel). Each rank's inbox is one
/// receive queue of 64 such buffers, shared by all its senders, plus up to 64 fast boxes of 64
/// buffers of 512 bytes for small packets (one per sender, claimed on first use): about
/// 2.6 MiB per rank, whatever the job's size (`nic_model::fabric::layout`). Under a timing
/// profile (`modeled`) the queue buffers keep the NIC's own size, which is what the profiles
/// were calibrated with (the modeled NIC pipelines a 4 KiB message in two packets, not one).
/// `MPI_NIC_SLOT_BYTES`, `MPI_NIC_SLOTS`, `MPI_NIC_BOXES`, `MPI_NIC_BOX_SLOTS` and
/// `MPI_NIC_BOX_BYTES` still override.
pub fn job_config(nranks: usize, modeled: bool) -> nic_model::JobConfig {
    let mut cfg = nic_model::JobConfig::new(nranks);
    if std::env::var_os("MPI_NIC_SLOT_BYTES").is_none() && !modeled {
        cfg.slot_bytes = JOB_SLOT_BYTES;
    }
    cfg
}

/// Whether `MPI_NIC_PROFILE` names a timing profile other than `native` (a bad name is the
/// NIC's error to report when it attaches).
pub(crate) fn profile_is_modeled() -> bool {
    let profile = std::env::var(nic_model::nic::PROFILE_ENV).unwrap_or_default();
    nic_model::Profile::load(&profile).is_ok_and(|p| p.is_some())
}

/// Bytes per packet buffer in MPI jobs: 8 KiB of data, BIP's header, the MPI envelope, the
/// slot header, rounded up to a cache line.
pub const JOB_SLOT_BYTES: usize = 8192 + 128;

pub use adi::{
    Adi, AdiError, Attachment, ReqId, Result, Retired, SendMode, Standing, Status, ANY_SOURCE,
    ANY_TAG, DEFAULT_CHANNEL, ERR_REFUSED, TAG_UB,
};
pub use channel::{Channel, ChannelError};
pub use engine::{Engine, Hook, HookId, Operation, SharedOperation};
pub use lanes::{pair_route, LaneChannel, MAX_LANES};
pub use remote::{Reach, RemoteMemory};
