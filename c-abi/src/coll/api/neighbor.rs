//! `MPI_Neighbor_allgather`, `_allgatherv`, `_alltoall`, `_alltoallv`, `_alltoallw` and their
//! nonblocking forms (the persistent ones are in `persistent.rs`, from the same builders).
//!
//! Each builder checks its arguments as the corresponding full collective does (counts,
//! datatypes, buffers; one count, displacement and type per neighbour instead of per
//! process), finds the neighbours (`MPI_ERR_TOPOLOGY` on a communicator without a topology),
//! lays out one block per neighbour and hands both lists to [`neighbor::exchange`].
//! `MPI_IN_PLACE` is not allowed for neighbourhood collectives (`MPI_ERR_BUFFER`).

use super::checks::{counts, data, elem, ints, on, part, RECV, SEND};
use super::{begin, builder};
use crate::abi::*;
use crate::coll::alltoall::Block;
use crate::coll::neighbor::{self, Neighbours};
use crate::coll::sched::Schedule;
use crate::coll::Cx;
use crate::comm::CommIdx;
use crate::count::CountArray;
use crate::cptr::Out;
use crate::error::MpiResult;
use crate::runtime::export::mpi_fn;
use crate::topo::Topology;
use std::ffi::c_void;

/// The neighbours of this process on `idx` (`MPI_ERR_TOPOLOGY` without a topology).
fn neighbours(cx: &Cx<'_>, idx: CommIdx) -> MpiResult<Neighbours> {
    let c = cx.comms.get(idx);
    let (sources, dests) = crate::topo::neighbours::neighbours(c)?;
    let cartesian = matches!(c.topo.as_deref(), Some(Topology::Cart { .. }));
    Ok(Neighbours {
        sources,
        dests,
        cartesian,
    })
}

/// `n` blocks of `count` elements of `dt` end to end from `buf` (block `i` at element
/// `i * count`), or the same block `n` times when `same`.
fn even_blocks(
    cx: &Cx<'_>,
    buf: *const c_void,
    count: MPI_Count,
    dt: MPI_Datatype,
    n: usize,
    same: bool,
    side: &super::checks::Side,
) -> MpiResult<Vec<Block>> {
    let p = part(cx, buf, count, dt, if same { 1 } else { n }, side)?;
    Ok((0..n)
        .map(|i| {
            let at = if same { 0 } else { i * p.count };
            (p.lay.at_mut(p.base, at), p.count, p.lay.clone())
        })
        .collect())
}

/// One block per neighbour from counts and displacements in extents of `dt`.
#[allow(clippy::too_many_arguments)]
fn v_blocks(
    cx: &Cx<'_>,
    buf: *const c_void,
    counts_: CountArray,
    displs: CountArray,
    displs_name: &str,
    dt: MPI_Datatype,
    n: usize,
    side: &super::checks::Side,
) -> MpiResult<Vec<Block>> {
    let c = counts(counts_, n, side.counts)?;
    let d = ints(displs, n, displs_name)?;
    let lay = data(cx, buf, c.iter().sum(), dt, side.buf)?;
    Ok((0..n)
        .map(|i| (elem(buf, &lay, d[i]), c[i], lay.clone()))
        .collect())
}

/// One block per neighbour from counts, byte displacements and a datatype each.
#[allow(clippy::too_many_arguments)]
fn w_blocks(
    cx: &Cx<'_>,
    buf: *const c_void,
    counts_: CountArray,
    displs: CountArray,
    displs_name: &str,
    types: *const MPI_Datatype,
    types_name: &str,
    n: usize,
    side: &super::checks::Side,
) -> MpiResult<Vec<Block>> {
    let c = counts(counts_, n, side.counts)?;
    if n == 0 {
        return Ok(Vec::new());
    }
    let d = ints(displs, n, displs_name)?;
    let tys = super::checks::types(types, n, types_name)?;
    (0..n)
        .map(|i| {
            let lay = data(cx, buf, c[i], tys[i], side.buf)?;
            let at = buf.cast::<u8>().cast_mut().wrapping_offset(d[i] as isize);
            Ok((at, c[i], lay))
        })
        .collect()
}

/// The neighbours of this process on `idx` and the blocks `blocks` lays out for them from
/// the neighbour counts `(indegree, outdegree)`: `(send blocks, receive blocks)`.
fn laid_out(
    cx: &Cx<'_>,
    idx: CommIdx,
    blocks: impl FnOnce(&Cx<'_>, usize, usize) -> MpiResult<(Vec<Block>, Vec<Block>)>,
) -> MpiResult<(Neighbours, Vec<Block>, Vec<Block>)> {
    let nb = neighbours(cx, idx)?;
    let (send, recv) = blocks(cx, nb.sources.len(), nb.dests.len())?;
    Ok((nb, send, recv))
}

/// The schedule of a neighbourhood collective on `comm` whose blocks `blocks` lays out.
/// No intracommunicator check of its own: an intercommunicator has no topology, so
/// `neighbours` refuses it (`MPI_ERR_TOPOLOGY`), as any communicator without one.
fn exchange_s(
    cx: &mut Cx<'_>,
    comm: MPI_Comm,
    blocks: impl FnOnce(&Cx<'_>, usize, usize) -> MpiResult<(Vec<Block>, Vec<Block>)>,
) -> MpiResult<Schedule> {
    let (idx, _) = cx.comms.lookup(comm)?;
    let (nb, send, recv) = on(idx, laid_out(cx, idx, blocks))?;
    let mut b = builder(cx, idx);
    neighbor::exchange(&mut b, &nb, &send, &recv);
    b.finish()
}

#[allow(clippy::too_many_arguments)]
pub(super) fn neighbor_allgather_s(
    cx: &mut Cx<'_>,
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    exchange_s(cx, comm, |cx, indegree, outdegree| {
        let send = even_blocks(cx, sendbuf, sendcount, sendtype, outdegree, true, &SEND)?;
        let recv = even_blocks(cx, recvbuf, recvcount, recvtype, indegree, false, &RECV)?;
        Ok((send, recv))
    })
}

collective! {
    /// `MPI_Neighbor_allgather`: this process's block to every destination; one block from
    /// each source, in neighbour order.
    MPI_Neighbor_allgather / PMPI_Neighbor_allgather, MPI_Neighbor_allgather_c / PMPI_Neighbor_allgather_c,
    /// `MPI_Ineighbor_allgather`: nonblocking `MPI_Neighbor_allgather`.
    MPI_Ineighbor_allgather / PMPI_Ineighbor_allgather, MPI_Ineighbor_allgather_c / PMPI_Ineighbor_allgather_c,
    neighbor_allgather_s(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, comm: MPI_Comm) on comm
}

#[allow(clippy::too_many_arguments)]
pub(super) fn neighbor_allgatherv_s(
    cx: &mut Cx<'_>,
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: CountArray,
    displs: CountArray,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    exchange_s(cx, comm, |cx, indegree, outdegree| {
        let send = even_blocks(cx, sendbuf, sendcount, sendtype, outdegree, true, &SEND)?;
        let recv = v_blocks(
            cx, recvbuf, recvcounts, displs, "displs", recvtype, indegree, &RECV,
        )?;
        Ok((send, recv))
    })
}

collective! {
    /// `MPI_Neighbor_allgatherv`: `MPI_Neighbor_allgather` with a count and displacement per
    /// source.
    MPI_Neighbor_allgatherv / PMPI_Neighbor_allgatherv, MPI_Neighbor_allgatherv_c / PMPI_Neighbor_allgatherv_c,
    /// `MPI_Ineighbor_allgatherv`: nonblocking `MPI_Neighbor_allgatherv`.
    MPI_Ineighbor_allgatherv / PMPI_Ineighbor_allgatherv, MPI_Ineighbor_allgatherv_c / PMPI_Ineighbor_allgatherv_c,
    neighbor_allgatherv_s(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count, displs: *const Disp, recvtype: MPI_Datatype, comm: MPI_Comm) on comm
}

#[allow(clippy::too_many_arguments)]
pub(super) fn neighbor_alltoall_s(
    cx: &mut Cx<'_>,
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    exchange_s(cx, comm, |cx, indegree, outdegree| {
        let send = even_blocks(cx, sendbuf, sendcount, sendtype, outdegree, false, &SEND)?;
        let recv = even_blocks(cx, recvbuf, recvcount, recvtype, indegree, false, &RECV)?;
        Ok((send, recv))
    })
}

collective! {
    /// `MPI_Neighbor_alltoall`: block `k` of the send buffer to destination `k`, block `j`
    /// of the receive buffer from source `j`.
    MPI_Neighbor_alltoall / PMPI_Neighbor_alltoall, MPI_Neighbor_alltoall_c / PMPI_Neighbor_alltoall_c,
    /// `MPI_Ineighbor_alltoall`: nonblocking `MPI_Neighbor_alltoall`.
    MPI_Ineighbor_alltoall / PMPI_Ineighbor_alltoall, MPI_Ineighbor_alltoall_c / PMPI_Ineighbor_alltoall_c,
    neighbor_alltoall_s(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, comm: MPI_Comm) on comm
}

#[allow(clippy::too_many_arguments)]
pub(super) fn neighbor_alltoallv_s(
    cx: &mut Cx<'_>,
    sendbuf: *const c_void,
    sendcounts: CountArray,
    sdispls: CountArray,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: CountArray,
    rdispls: CountArray,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    exchange_s(cx, comm, |cx, indegree, outdegree| {
        let send = v_blocks(
            cx, sendbuf, sendcounts, sdispls, "sdispls", sendtype, outdegree, &SEND,
        )?;
        let recv = v_blocks(
            cx, recvbuf, recvcounts, rdispls, "rdispls", recvtype, indegree, &RECV,
        )?;
        Ok((send, recv))
    })
}

collective! {
    /// `MPI_Neighbor_alltoallv`: `MPI_Neighbor_alltoall` with a count and displacement per
    /// neighbour.
    MPI_Neighbor_alltoallv / PMPI_Neighbor_alltoallv, MPI_Neighbor_alltoallv_c / PMPI_Neighbor_alltoallv_c,
    /// `MPI_Ineighbor_alltoallv`: nonblocking `MPI_Neighbor_alltoallv`.
    MPI_Ineighbor_alltoallv / PMPI_Ineighbor_alltoallv, MPI_Ineighbor_alltoallv_c / PMPI_Ineighbor_alltoallv_c,
    neighbor_alltoallv_s(sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Disp, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count, rdispls: *const Disp, recvtype: MPI_Datatype, comm: MPI_Comm) on comm
}

#[allow(clippy::too_many_arguments)]
pub(super) fn neighbor_alltoallw_s(
    cx: &mut Cx<'_>,
    sendbuf: *const c_void,
    sendcounts: CountArray,
    sdispls: CountArray,
    sendtypes: *const MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: CountArray,
    rdispls: CountArray,
    recvtypes: *const MPI_Datatype,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    exchange_s(cx, comm, |cx, indegree, outdegree| {
        let send = w_blocks(
            cx,
            sendbuf,
            sendcounts,
            sdispls,
            "sdispls",
            sendtypes,
            "sendtypes",
            outdegree,
            &SEND,
        )?;
        let recv = w_blocks(
            cx,
            recvbuf,
            recvcounts,
            rdispls,
            "rdispls",
            recvtypes,
            "recvtypes",
            indegree,
            &RECV,
        )?;
        Ok((send, recv))
    })
}

collective! {
    /// `MPI_Neighbor_alltoallw`: `MPI_Neighbor_alltoallv` with a datatype per neighbour and
    /// byte displacements.
    MPI_Neighbor_alltoallw / PMPI_Neighbor_alltoallw, MPI_Neighbor_alltoallw_c / PMPI_Neighbor_alltoallw_c,
    /// `MPI_Ineighbor_alltoallw`: nonblocking `MPI_Neighbor_alltoallw`.
    MPI_Ineighbor_alltoallw / PMPI_Ineighbor_alltoallw, MPI_Ineighbor_alltoallw_c / PMPI_Ineighbor_alltoallw_c,
    neighbor_alltoallw_s(sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const MPI_Aint, sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count, rdispls: *const MPI_Aint, recvtypes: *const MPI_Datatype, comm: MPI_Comm) on comm
}
