//! What the library knows about the process: whether MPI is running, and while it is, the
//! engine and every table of handles ([`Runtime`]).
//!
//! ```text
//!   Mpi.phase: NotStarted ──MPI_Init──▶ Running(Runtime) ──MPI_Finalize──▶ Finalized
//!              (or the first MPI_Session_init / the last MPI_Session_finalize: `World`)
//!                                           │
//!          Runtime: engine (lane 0: progress, requests, point-to-point) · lanes 1.. ·
//!                   comms · types · bsend buffer
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
//! that then serializes calls with it, `lanes` the engines of point-to-point traffic on
//! separate communicators under `MPI_THREAD_MULTIPLE` (every engine is found through
//! [`Runtime::engine_for`], [`Runtime::engine_for_request`] or [`Runtime::p2p_on`]).

pub(crate) mod export;
pub(crate) mod global;
pub(crate) mod init;
pub(crate) mod lanes;
pub(crate) mod progress;
pub(crate) mod raise;
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
use crate::p2p::bsend::{BsendBuffer, LaneEngines};
use lanes::Lanes;
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
    /// The progress engine of lane 0: every request but the point-to-point ones of lanes
    /// 1.., the operations in flight, the hooks. Reach it through [`Runtime::engine_for`]
    /// (or [`Runtime::engine_for_request`]) for anything tied to a context or a request.
    pub engine: Engine,
    /// Lanes 1.. (`MPI_THREAD_MULTIPLE` only; none otherwise).
    pub lanes: Lanes,
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

/// Every lane's engine, for a call that holds the whole state (the buffered sends').
pub(crate) struct AllLanes<'a> {
    pub zero: &'a mut Engine,
    pub lanes: &'a mut Lanes,
}

impl LaneEngines for AllLanes<'_> {
    fn lane(&mut self, k: usize) -> &mut Engine {
        if k == 0 {
            self.zero
        } else {
            self.lanes.get_mut(k)
        }
    }
}

impl Runtime {
    /// The point-to-point context on lane 0 (for the calls that name no communicator or
    /// request: the checks of arguments, generalized requests, `MPI_Grequest_start`).
    #[inline(always)]
    pub fn p2p(&mut self) -> crate::p2p::Cx<'_> {
        self.p2p_lane(0)
    }

    /// The point-to-point context on the lane of messages on context `ctx` with tag `tag`
    /// (while lanes are off, one field load more than lane 0's: the lanes' own path is out of
    /// line).
    #[inline(always)]
    pub fn p2p_on(&mut self, ctx: u16, tag: i32) -> crate::p2p::Cx<'_> {
        let lane = self.lane_of(ctx, tag);
        self.p2p_lane(lane)
    }

    /// The point-to-point context on the lane request handle `h` names (lane 0 for a handle
    /// that names none: its lookup there refuses it).
    #[inline(always)]
    pub fn p2p_for_request(&mut self, h: crate::abi::MPI_Request) -> crate::p2p::Cx<'_> {
        let lane = self.lane_of_request(h);
        self.p2p_lane(lane)
    }

    /// The point-to-point context on lane `lane` (< the lane count). One context is built
    /// whatever the lane (only the engine's address differs), so that on the fast path it
    /// stays in registers.
    #[inline(always)]
    pub fn p2p_lane(&mut self, lane: usize) -> crate::p2p::Cx<'_> {
        let engine = if lane == 0 {
            &mut self.engine
        } else {
            self.lanes.get_mut_out_of_line(lane)
        };
        crate::p2p::Cx {
            engine,
            lane,
            comms: &self.comms,
            types: &self.types,
            bsend: Some(&mut self.bsend),
        }
    }

    /// The lane of messages on context `ctx` with tag `tag` (0 while lanes are off: one
    /// field load).
    #[inline(always)]
    pub fn lane_of(&self, ctx: u16, tag: i32) -> usize {
        if self.lanes.off() {
            0
        } else {
            lanes::route(ctx, tag)
        }
    }

    /// The lane request handle `h` names (0 if it names none).
    #[inline(always)]
    pub fn lane_of_request(&self, h: crate::abi::MPI_Request) -> usize {
        if self.lanes.off() {
            return 0;
        }
        let lane = crate::p2p::request::lane_of(h);
        if lane < self.lanes.count() {
            lane
        } else {
            0
        }
    }

    /// The engine that carries the messages on context `ctx` with tag `tag`: whatever is sent
    /// or received with them is posted on this engine.
    #[inline(always)]
    pub fn engine_for(&mut self, ctx: u16, tag: i32) -> &mut Engine {
        let lane = self.lane_of(ctx, tag);
        self.engine_lane(lane)
    }

    /// The engine request handle `h` lives on.
    #[inline(always)]
    pub fn engine_for_request(&mut self, h: crate::abi::MPI_Request) -> &mut Engine {
        let lane = self.lane_of_request(h);
        self.engine_lane(lane)
    }

    /// Lane `lane`'s engine.
    #[inline(always)]
    fn engine_lane(&mut self, lane: usize) -> &mut Engine {
        if lane == 0 {
            &mut self.engine
        } else {
            self.lanes.get_mut(lane)
        }
    }

    /// Turns every lane but 0 once (the waits of calls that hold the whole state turn lane 0
    /// themselves: MPI's progress rule wants every pending operation to move on).
    pub fn turn_other_lanes(&mut self) -> MpiResult<()> {
        for e in self.lanes.iter_mut() {
            e.poke()?;
        }
        Ok(())
    }

    /// Before a buffered send: frees the attached buffer's space of the buffered sends that
    /// completed on lanes other than 0 (lane 0's are reclaimed by the send itself). Nothing
    /// without lanes.
    pub fn reclaim_bsend_on_lanes(&mut self) -> MpiResult<()> {
        if self.lanes.off() {
            return Ok(());
        }
        let (bsend, mut engines) = self.bsend_and_lanes();
        bsend.reclaim(&mut engines)
    }

    /// Every lane's engine, and the buffered sends' buffer.
    pub fn bsend_and_lanes(&mut self) -> (&mut BsendBuffer, AllLanes<'_>) {
        (
            &mut self.bsend,
            AllLanes {
                zero: &mut self.engine,
                lanes: &mut self.lanes,
            },
        )
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
