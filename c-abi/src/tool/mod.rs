//! # tool: the MPI tool information interface (`MPI_T`, MPI 4.0 chapter 15)
//!
//! ```text
//!   MPI_T_cvar_read ──▶ tool::api ──▶ cvars::read(index, Readings) ──▶ the engine, or the environment
//!   MPI_T_pvar_read ──▶ tool::api ──▶ pvars::Sessions::read(..)    ──▶ AdiCounters (nic, bip, fm, channel, mpi)
//! ```
//!
//! **What is exposed.** The library's settings as *control variables* (cvars) and the counters
//! of every layer of the stack as *performance variables* (pvars), grouped in one category per
//! layer (`nic`, `bip`, `fm`, `channel`, `mpi`, all under `stack`), with no event types (every
//! event query of an index is `MPI_T_ERR_INVALID_INDEX`) and one time source (the process's
//! monotonic clock in nanoseconds).
//!
//! - A cvar is named after the environment variable that carries the setting (`MPI_CHANNEL`,
//!   `MPI_EAGER_MAX`, `BIP_EAGER_MAX`, `MPI_NIC_PROFILE`, `MPI_NIC_SLOT_BYTES`, ...; the list is
//!   [`cvars::CVARS`]). Reading one gives what the running engine uses where the engine says
//!   (the channel and the eager limit while MPI runs), otherwise the environment's value or the
//!   library's default. The settings `MPI_Init` reads in this process are writable between
//!   `MPI_T_init_thread` and `MPI_Init` (scope `MPI_T_SCOPE_ALL_EQ` when every rank must agree,
//!   `MPI_T_SCOPE_LOCAL` when not): the write sets the environment variable, which `MPI_Init`
//!   then reads, exactly as if the program had been started with it. Once MPI runs (or has
//!   finalized) such a write is `MPI_T_ERR_CVAR_SET_NOT_NOW`. The settings the launcher uses to
//!   build the job's fabric (the NIC profile, the packet buffer geometry, the wire) are
//!   `MPI_T_SCOPE_READONLY`: `MPI_T_ERR_CVAR_SET_NEVER`.
//! - A pvar is one counter of one layer (`nic_packets_tx`, `bip_credit_waits`, `fm_suspensions`,
//!   `channel_copies`, `mpi_bytes_copied`, ...; the list is [`pvars::PVARS`]): the counters the
//!   layering report shows, which the layers keep anyway as plain integers. Nothing is added to
//!   the fast path: a read takes a snapshot of every layer's counters
//!   (`mpich_channel::Adi::counters`) on demand. Counters are of class `MPI_T_PVAR_CLASS_COUNTER`,
//!   startable and stoppable: each handle of each session keeps its own view (the sum of its
//!   started intervals), so two sessions never disturb each other, and reset and write change
//!   only the handle's view. BIP's buffered bytes (`MPI_T_PVAR_CLASS_LEVEL`) and their peak
//!   (`MPI_T_PVAR_CLASS_HIGHWATERMARK`, since `MPI_Init`) are continuous and read-only. Before
//!   `MPI_Init` every counter is 0; after `MPI_Finalize` it keeps the value it had at
//!   `MPI_Finalize` (a snapshot the runtime keeps for this interface).
//!
//! **How indexes are stable.** Every table is a `const` array fixed at build time: an index
//! names the same variable, category or enumeration for the whole life of the process and in
//! every process of a job (MPI lets them differ between processes; here they never do), the
//! counts never change, and `MPI_T_category_changed` always gives the same number. The FM
//! counters exist under every channel and stay 0 under `bip`.
//!
//! **Handles.** The `MPI_T_*` handle types are pointers in MPICH's ABI; this library never
//! hands out a real address: a handle is a kind tag and a serial number ([`handles`]), checked
//! against the live objects on every use, so a freed, stale or foreign handle is
//! `MPI_T_ERR_INVALID_HANDLE` (or `MPI_T_ERR_INVALID_SESSION`), never a crash.
//! `MPI_T_PVAR_ALL_HANDLES` is a constant the library exports.
//!
//! **Life cycle and thread safety.** `MPI_T_init_thread` and `MPI_T_finalize` are reference
//! counted and work before `MPI_Init`, between, and after `MPI_Finalize`; the last
//! `MPI_T_finalize` frees every handle and session. The interface's own state ([`ToolState`])
//! is behind a mutex; reading the counters touches the engine, which, like every MPI call,
//! takes the process's lock like every other entry point whenever calls take it:
//! `MPI_T_init_thread` grants the level asked for, as `MPI_Init_thread` does, and granting
//! `MPI_THREAD_MULTIPLE` turns the lock on (`runtime::thread`).
//!
//! **Errors.** The `MPI_T` functions return their error class (`MPI_T_ERR_*`) and call no
//! error handler, as the standard says; a NULL where an output is required is
//! `MPI_T_ERR_INVALID`; outputs of the `get_info` calls may be NULL (not returned).
//!
//! **Modules.** [`catalog`] (categories, enumerations, the time source), [`cvars`], [`pvars`]
//! (the variables and the sessions), [`handles`] (handle encoding), [`readings`] (what is read
//! from the engine), and `api`, the C entry points.

pub(crate) mod api;
pub(crate) mod catalog;
pub(crate) mod cvars;
pub(crate) mod handles;
pub(crate) mod pvars;
pub(crate) mod readings;

use std::collections::BTreeMap;

/// The interface's state, process-wide (behind the mutex in `api`).
#[derive(Default)]
pub(crate) struct ToolState {
    /// `MPI_T_init_thread` calls not yet matched by `MPI_T_finalize`.
    pub init_count: u32,
    /// Live control-variable handles: serial number to cvar index.
    pub cvar_handles: BTreeMap<u64, usize>,
    /// Performance-variable sessions and their handles.
    pub sessions: pvars::Sessions,
}

impl ToolState {
    /// Everything the last `MPI_T_finalize` frees.
    pub fn free_all(&mut self) {
        self.cvar_handles.clear();
        self.sessions = pvars::Sessions::default();
    }
}
