//! What the library knows about the process: whether MPI is running, and while it is, the
//! engine and every table of handles ([`Runtime`]).
//!
//! ```text
//!   Mpi.phase: NotStarted ──MPI_Init──▶ Running(Runtime) ──MPI_Finalize──▶ Finalized
//!              (or the first MPI_Session_init / the last MPI_Session_finalize: `World`)
//!                                           │
//!          Runtime: engine (progress, requests, point-to-point) · comms · types · bsend buffer
//! ```
//!
//! The runtime is boxed so that the static [`Mpi`] is small and `const`-constructible, and so
//! that the addresses of its fields (handed out by `MPI_Comm_get_attr`) stay put.
//!
//! **The layer.** Above every subsystem and below the entry points: [`Runtime`] owns every
//! table, and hands each subsystem the borrows it works on (`p2p`, `coll`, `comm`), so no
//! subsystem reaches into the aggregate. `export` is the entry-point macro and the raise path,
//! `global` the process-wide cell, `init` `MPI_Init` and `MPI_Finalize` (entry points),
//! `progress` the optional asynchronous progress thread (`MPI_ASYNC_PROGRESS=1`) and the lock
//! that then serializes calls with it.

pub(crate) mod export;
pub(crate) mod global;
pub(crate) mod init;
pub(crate) mod progress;
pub(crate) mod thread;

use crate::abi::*;
use crate::attr::KeyvalTable;
use crate::coll::Schedule;
use crate::comm::CommTable;
use crate::datatype::TypeTable;
use crate::env::mem::Allocations;
use crate::errhandler::ErrhandlerTable;
use crate::error::{MpiError, MpiResult};
use crate::group::GroupTable;
use crate::info::InfoTable;
use crate::op::OpTable;
use crate::p2p::bsend::BsendBuffer;
use mpich_channel::Engine;
use std::ffi::c_int;
use std::thread::ThreadId;

/// Where the process is in MPI's life cycle.
pub(crate) enum Phase {
    NotStarted,
    Running(Box<Runtime>),
    Finalized,
}

/// Where the world model (`MPI_Init` .. `MPI_Finalize`) is. The library itself runs while
/// the world model or a session (`MPI_Session_init` .. `MPI_Session_finalize`) needs it:
/// it comes up at the first of them and goes down after the last ([`Phase`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum World {
    NotStarted,
    Running,
    Finalized,
}

/// The process-wide MPI state (one, in [`crate::runtime::global`]).
pub(crate) struct Mpi {
    pub phase: Phase,
    /// The world model's own life cycle (`MPI_Initialized`, `MPI_Finalized`).
    pub world: World,
    /// The thread level granted by `MPI_Init` / `MPI_Init_thread`.
    pub thread_level: c_int,
    /// The thread that called `MPI_Init` (`MPI_Is_thread_main`).
    pub main_thread: Option<ThreadId>,
    /// The info objects while MPI is not running (MPI 4.0 lets the info calls run before
    /// `MPI_Init` and after `MPI_Finalize`): `MPI_Init` moves them into the running state,
    /// `MPI_Finalize` back here, so a handle made before stays valid in and after.
    pub idle_infos: Option<InfoTable>,
    /// The engine's last counters, kept by `MPI_Finalize` for the tool interface (`MPI_T`
    /// performance variables stay readable after it).
    pub last_readings: Option<crate::tool::readings::Readings>,
}

/// Everything that exists between `MPI_Init` and `MPI_Finalize`.
pub(crate) struct Runtime {
    /// The progress engine: point-to-point, every request, the operations in flight.
    pub engine: Engine,
    pub comms: CommTable,
    /// Groups (`MPI_Comm_group`, ...), info objects, attribute keys, error handlers the
    /// program created, and the blocks of `MPI_Alloc_mem`.
    pub groups: GroupTable,
    pub infos: InfoTable,
    pub keyvals: KeyvalTable,
    pub errhandlers: ErrhandlerTable,
    pub allocs: Allocations,
    pub bsend: BsendBuffer,
    /// Every datatype, predefined and derived.
    pub types: TypeTable,
    /// User-defined reduction operations (`MPI_Op_create`).
    pub ops: OpTable,
    /// A finished blocking collective's schedule, whose allocations the next one reuses.
    pub coll_spare: Option<Schedule>,
    /// Storage for the `MPI_UNIVERSE_SIZE` attribute, whose address `MPI_Comm_get_attr` gives out.
    pub universe_size: c_int,
    /// One-sided windows.
    pub wins: crate::win::WinTable,
    /// The sessions the program has open (`MPI_Session_init`).
    pub sessions: crate::session::SessionTable,
    /// Ports, and the parents of a spawned process (`dynamic`).
    pub dynamic: crate::dynamic::Dynamic,
}

impl Mpi {
    pub const fn new() -> Mpi {
        Mpi {
            phase: Phase::NotStarted,
            world: World::NotStarted,
            thread_level: MPI_THREAD_SINGLE,
            main_thread: None,
            idle_infos: None,
            last_readings: None,
        }
    }

    /// The info objects, wherever they are now (running or not).
    pub fn infos(&mut self) -> &mut InfoTable {
        match &mut self.phase {
            Phase::Running(rt) => &mut rt.infos,
            _ => self.idle_infos.get_or_insert_with(|| InfoTable::new(1)),
        }
    }

    /// The running state, or `MPI_ERR_OTHER` before `MPI_Init` / after `MPI_Finalize`.
    #[inline(always)]
    pub fn runtime(&mut self) -> MpiResult<&mut Runtime> {
        match &mut self.phase {
            Phase::Running(rt) => Ok(rt),
            Phase::NotStarted => Err(MpiError::not_running(false)),
            Phase::Finalized => Err(MpiError::not_running(true)),
        }
    }

    /// The running state for reading (error handling looks at it).
    pub fn runtime_ref(&self) -> Option<&Runtime> {
        match &self.phase {
            Phase::Running(rt) => Some(rt),
            _ => None,
        }
    }
}

impl Runtime {
    /// The point-to-point context: borrows of the fields point-to-point works on.
    #[inline(always)]
    pub fn p2p(&mut self) -> crate::p2p::Cx<'_> {
        crate::p2p::Cx {
            engine: &mut self.engine,
            comms: &self.comms,
            types: &self.types,
            bsend: &mut self.bsend,
        }
    }

    /// The collectives' context: borrows of the fields the collectives work on.
    #[inline(always)]
    pub fn coll(&mut self) -> crate::coll::Cx<'_> {
        crate::coll::Cx {
            engine: &mut self.engine,
            comms: &mut self.comms,
            types: &self.types,
            ops: &self.ops,
            spare: &mut self.coll_spare,
            nonblocking: false,
        }
    }

    /// The context of the calls that create and free communicators.
    #[inline(always)]
    pub fn comm(&mut self) -> crate::comm::make::Cx<'_> {
        crate::comm::make::Cx {
            engine: &mut self.engine,
            comms: &mut self.comms,
            keyvals: &self.keyvals,
            spare: &mut self.coll_spare,
        }
    }
}
