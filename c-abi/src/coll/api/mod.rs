//! The collective MPI functions: argument checks, then the algorithm's schedule, run at once
//! (`MPI_Bcast`) or started and handed out as a request (`MPI_Ibcast`).
//!
//! Each collective has one function that checks its arguments and builds its schedule; the
//! `collective!` macro makes the blocking and the nonblocking entry point from it, so the
//! two cannot drift apart. Under `MPI_THREAD_MULTIPLE` the blocking entry point starts the
//! schedule as the nonblocking one does and waits for its request with the process's lock let
//! go between looks ([`crate::runtime::thread`]); the short-message paths without a schedule
//! ([`crate::coll::direct`], which wait inside) are then not taken. An intercommunicator goes to [`inter`] (its own checks and
//! schedules) before anything else. Checks follow MPICH's classes: an invalid communicator
//! (or an intercommunicator for `MPI_Scan`/`MPI_Exscan`) is `MPI_ERR_COMM`, a negative count
//! `MPI_ERR_COUNT`, an invalid or uncommitted datatype `MPI_ERR_TYPE`, a root out of range
//! `MPI_ERR_ROOT`, an operation not defined on the type `MPI_ERR_OP`, a NULL buffer with
//! data, `MPI_IN_PLACE` where the standard does not allow it, or a send buffer that is the
//! receive buffer `MPI_ERR_BUFFER`. Every check happens before anything is sent, and a failed
//! call consumes no collective sequence number, so the library stays usable after an error
//! returned by `MPI_ERRORS_RETURN`.

//!
//! The functions are grouped by family: [`bcast`] (barrier, broadcast), [`gather`] (gather,
//! scatter and their `v` forms), [`allgather`], [`alltoall`], [`reduce`] (the reductions),
//! [`inter`] (all of them on intercommunicators);
//! [`checks`] has the argument checks they share; `neighbor` has the neighbourhood
//! collectives (same macro), and `persistent` makes every `MPI_*_init` from the same builders.

use crate::abi::*;
use crate::coll::sched::{Builder, Reducer, Schedule};
use crate::coll::Cx;
use crate::comm::CommIdx;
use crate::cptr::Out;
use crate::error::MpiResult;
use checks::on;

pub(super) fn builder(cx: &mut Cx<'_>, idx: CommIdx) -> Builder {
    cx.builder(idx)
}

/// The reduction `op` on `dt`, its error raised on communicator `idx`.
pub(super) fn reduction(
    cx: &Cx<'_>,
    idx: CommIdx,
    op: MPI_Op,
    dt: MPI_Datatype,
) -> MpiResult<crate::op::Reduction> {
    on(idx, crate::op::Reduction::new(cx.ops, cx.types, op, dt))
}

/// The schedule builder of a reduction with `op` on `dt`.
pub(super) fn reducer(
    cx: &mut Cx<'_>,
    idx: CommIdx,
    op: MPI_Op,
    dt: MPI_Datatype,
) -> MpiResult<Builder> {
    let r = reduction(cx, idx, op, dt)?;
    let mut b = builder(cx, idx);
    b.set_reducer(Reducer::Op(r));
    Ok(b)
}

/// Starts a nonblocking collective and stores its request in `request`.
pub(super) fn begin(cx: &mut Cx<'_>, s: Schedule, request: Out<MPI_Request>) -> MpiResult<()> {
    let comm = s.comm;
    let id = on(comm, super::start(cx.engine, s))?;
    request.set(crate::p2p::request::handle(cx.engine, id));
    Ok(())
}

/// Starts a blocking collective as its nonblocking twin would (under `MPI_THREAD_MULTIPLE`,
/// where the call then waits for the request letting the lock go: `runtime::thread`);
/// returns the request. The schedule is the one the blocking call runs (same sequence
/// number, tags and algorithm), so the ranks that run it in the engine's loop and those that
/// run it this way interoperate.
pub(super) fn begin_waited(cx: &mut Cx<'_>, s: Schedule) -> MpiResult<MPI_Request> {
    let comm = s.comm;
    let id = on(comm, super::start(cx.engine, s))?;
    Ok(crate::p2p::request::handle(cx.engine, id))
}

/// Makes the blocking and nonblocking entry points of a collective from its schedule builder
/// (defined before the family modules, which use it).
///
/// With `fast $direct`, the blocking entry point first offers the call to `$direct`, which
/// checks the arguments and either runs the whole collective without a schedule (short data:
/// see [`crate::coll::direct`]) and answers `true`, or answers `false` having done nothing.
///
/// With a second pair of names after each (`MPI_Bcast / PMPI_Bcast, MPI_Bcast_c /
/// PMPI_Bcast_c`), it makes the large-count forms too (`mpi_fn!`'s large form): the argument
/// types name the aliases `Count` (`int` / `MPI_Count`) and `Disp` (`int` / `MPI_Aint`), and
/// every argument reaches the builder through `into()`, so the builders take `MPI_Count`s
/// and [`crate::count::CountArray`]s whatever the form.
macro_rules! collective {
    (
        $(#[$doc:meta])* $mpi:ident / $pmpi:ident, $mpi_c:ident / $pmpi_c:ident,
        $(#[$idoc:meta])* $impi:ident / $ipmpi:ident, $impi_c:ident / $ipmpi_c:ident,
        $build:ident ( $($arg:ident : $ty:ty),* ) on $comm:ident $(, fast $direct:ident)?
    ) => {
        mpi_fn! {
            $(#[$doc])*
            fn $mpi / $pmpi, large $mpi_c / $pmpi_c
            where [Count = ::std::ffi::c_int | MPI_Count, Disp = ::std::ffi::c_int | MPI_Aint]
            ($($arg: $ty),*) waits |call| {
                let releases = call.releases();
                let cx = &mut call.state().runtime()?.coll();
                if !releases {
                    collective!(@direct [$($direct)?] cx ($($arg.into()),*));
                    let s = $build(cx, $($arg.into()),*)?;
                    let idx = s.comm;
                    return on(idx, cx.run(s));
                }
                let s = $build(cx, $($arg.into()),*)?;
                let request = $crate::coll::api::begin_waited(cx, s)?;
                call.wait_request(request)?.check()
            }
        }
        mpi_fn! {
            $(#[$idoc])*
            fn $impi / $ipmpi, large $impi_c / $ipmpi_c
            where [Count = ::std::ffi::c_int | MPI_Count, Disp = ::std::ffi::c_int | MPI_Aint]
            ($($arg: $ty,)* request: *mut MPI_Request) |st| {
                let cx = &mut st.runtime()?.coll();
                cx.nonblocking = true;
                let (idx, _) = cx.comms.lookup($comm)?;
                let out = on(idx, Out::new(request, "request"))?;
                let s = $build(cx, $($arg.into()),*)?;
                begin(cx, s, out)
            }
        }
    };
    (
        $(#[$doc:meta])* $mpi:ident / $pmpi:ident,
        $(#[$idoc:meta])* $impi:ident / $ipmpi:ident,
        $build:ident ( $($arg:ident : $ty:ty),* ) on $comm:ident $(, fast $direct:ident)?
    ) => {
        mpi_fn! {
            $(#[$doc])*
            fn $mpi / $pmpi($($arg: $ty),*) waits |call| {
                let releases = call.releases();
                let cx = &mut call.state().runtime()?.coll();
                if !releases {
                    collective!(@direct [$($direct)?] cx ($($arg),*));
                    let s = $build(cx, $($arg),*)?;
                    let idx = s.comm;
                    return on(idx, cx.run(s));
                }
                let s = $build(cx, $($arg),*)?;
                let request = $crate::coll::api::begin_waited(cx, s)?;
                call.wait_request(request)?.check()
            }
        }
        mpi_fn! {
            $(#[$idoc])*
            fn $impi / $ipmpi($($arg: $ty,)* request: *mut MPI_Request) |st| {
                let cx = &mut st.runtime()?.coll();
                cx.nonblocking = true;
                let (idx, _) = cx.comms.lookup($comm)?;
                let out = on(idx, Out::new(request, "request"))?;
                let s = $build(cx, $($arg),*)?;
                begin(cx, s, out)
            }
        }
    };
    (@direct [] $cx:ident ($($arg:expr),*)) => {};
    (@direct [$direct:ident] $cx:ident ($($arg:expr),*)) => {
        if $direct($cx, $($arg),*)? {
            return Ok(());
        }
    };
}

mod allgather;
mod alltoall;
mod bcast;
mod checks;
mod gather;
mod inter;
mod neighbor;
mod persistent;
mod reduce;
