//! `MPI_Barrier`, `MPI_Ibarrier`, `MPI_Bcast`, `MPI_Ibcast`.

use super::checks::{checked, count, data, intra, on, root};
use super::{begin, builder, inter};
use crate::abi::*;
use crate::coll::buf::Layout;
use crate::coll::sched::Schedule;
use crate::coll::Cx;
use crate::coll::{bcast, direct};
use crate::comm::CommIdx;
use crate::cptr::Out;
use crate::error::MpiResult;
use crate::runtime::export::mpi_fn;
use std::ffi::{c_int, c_void};

pub(super) fn barrier_s(cx: &mut Cx<'_>, comm: MPI_Comm) -> MpiResult<Schedule> {
    if let Some(idx) = inter::inter(cx, comm)? {
        return inter::barrier(cx, idx);
    }
    let idx = intra(cx, comm)?;
    let mut b = builder(cx, idx);
    bcast::barrier(&mut b);
    b.finish()
}

/// Blocking `MPI_Barrier` without a schedule ([`direct::barrier`]).
fn barrier_direct(cx: &mut Cx<'_>, comm: MPI_Comm) -> MpiResult<bool> {
    if inter::inter(cx, comm)?.is_some() {
        return Ok(false);
    }
    let idx = intra(cx, comm)?;
    on(idx, direct::barrier(cx.engine, cx.comms, idx)).map(|()| true)
}

collective! {
    /// `MPI_Barrier`: returns once every process of `comm` has called it.
    MPI_Barrier / PMPI_Barrier,
    /// `MPI_Ibarrier`: a barrier that completes when every process has started it.
    MPI_Ibarrier / PMPI_Ibarrier,
    barrier_s(comm: MPI_Comm) on comm,
    fast barrier_direct
}

pub(super) fn bcast_s(
    cx: &mut Cx<'_>,
    buffer: *mut c_void,
    n: MPI_Count,
    datatype: MPI_Datatype,
    r: c_int,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    if let Some(idx) = inter::inter(cx, comm)? {
        return inter::bcast(cx, idx, buffer, n, datatype, r);
    }
    let (idx, (n, lay, r)) = bcast_checked(cx, buffer, n, datatype, r, comm)?;
    let mut b = builder(cx, idx);
    bcast::bcast(&mut b, buffer.cast(), n, &lay, r);
    b.finish()
}

/// The checks of a broadcast: the communicator, then the count, buffer and root.
fn bcast_checked(
    cx: &Cx<'_>,
    buffer: *mut c_void,
    n: MPI_Count,
    datatype: MPI_Datatype,
    r: c_int,
    comm: MPI_Comm,
) -> MpiResult<(CommIdx, (usize, Layout, usize))> {
    checked(cx, comm, |cx, idx| {
        let n = count(n, "count")?;
        let lay = data(cx, buffer, n, datatype, "buffer")?;
        Ok((n, lay, root(cx, idx, r)?))
    })
}

/// Blocking `MPI_Bcast` of contiguous data on a binomial tree without a schedule
/// ([`direct::bcast`]); `false` (nothing done) for the others.
fn bcast_direct(
    cx: &mut Cx<'_>,
    buffer: *mut c_void,
    n: MPI_Count,
    datatype: MPI_Datatype,
    r: c_int,
    comm: MPI_Comm,
) -> MpiResult<bool> {
    if inter::inter(cx, comm)?.is_some() {
        return Ok(false);
    }
    let (idx, (n, lay, r)) = bcast_checked(cx, buffer, n, datatype, r, comm)?;
    if !direct::bcast_fits(n, &lay, cx.comms.get(idx).size) {
        return Ok(false);
    }
    // SAFETY: the checked buffer of an MPI_Bcast of `n` elements of `lay` (MPI's contract).
    let done = unsafe { direct::bcast(cx.engine, cx.comms, idx, buffer.cast(), n, &lay, r) };
    on(idx, done).map(|()| true)
}

collective! {
    /// `MPI_Bcast`: `root`'s buffer to every process.
    MPI_Bcast / PMPI_Bcast, MPI_Bcast_c / PMPI_Bcast_c,
    /// `MPI_Ibcast`: nonblocking `MPI_Bcast`.
    MPI_Ibcast / PMPI_Ibcast, MPI_Ibcast_c / PMPI_Ibcast_c,
    bcast_s(buffer: *mut c_void, count: Count, datatype: MPI_Datatype, root: c_int, comm: MPI_Comm) on comm,
    fast bcast_direct
}
