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
use crate::topo::neighbours::{few_neighbours, FEW};
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
    super::checks::w_blocks(cx, buf, &c, &d, tys, side.buf)
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

/// Blocking `MPI_Neighbor_allgather` of contiguous blocks among few neighbours without a
/// schedule (as [`neighbor_alltoall_direct`]).
#[allow(clippy::too_many_arguments)]
fn neighbor_allgather_direct(
    cx: &mut Cx<'_>,
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> MpiResult<bool> {
    direct_exchange(
        cx, comm, sendbuf, sendcount, sendtype, true, recvbuf, recvcount, recvtype,
    )
}

collective! {
    /// `MPI_Neighbor_allgather`: this process's block to every destination; one block from
    /// each source, in neighbour order.
    MPI_Neighbor_allgather / PMPI_Neighbor_allgather, MPI_Neighbor_allgather_c / PMPI_Neighbor_allgather_c,
    /// `MPI_Ineighbor_allgather`: nonblocking `MPI_Neighbor_allgather`.
    MPI_Ineighbor_allgather / PMPI_Ineighbor_allgather, MPI_Ineighbor_allgather_c / PMPI_Ineighbor_allgather_c,
    neighbor_allgather_s(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, comm: MPI_Comm) on comm,
    fast neighbor_allgather_direct
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

/// Blocking `MPI_Neighbor_alltoall` of contiguous blocks among at most
/// [`crate::topo::neighbours::FEW`] neighbours without a schedule
/// ([`neighbor::exchange_direct`]); `false` (nothing done) for the others.
#[allow(clippy::too_many_arguments)]
fn neighbor_alltoall_direct(
    cx: &mut Cx<'_>,
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> MpiResult<bool> {
    direct_exchange(
        cx, comm, sendbuf, sendcount, sendtype, false, recvbuf, recvcount, recvtype,
    )
}

/// The direct path of `MPI_Neighbor_alltoall` (`same_send` false: block `k` of the send
/// buffer to destination `k`) and `MPI_Neighbor_allgather` (`same_send`: the one send block
/// to every destination), with the schedule builders' checks in the same order.
#[allow(clippy::too_many_arguments)]
fn direct_exchange(
    cx: &mut Cx<'_>,
    comm: MPI_Comm,
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    same_send: bool,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
) -> MpiResult<bool> {
    let (idx, c) = cx.comms.lookup(comm)?;
    let Some(nb) = on(idx, few_neighbours(c))? else {
        return Ok(false);
    };
    let (indegree, outdegree) = (nb.indegree, nb.outdegree);
    let send_blocks = if same_send { 1 } else { outdegree };
    let s = on(
        idx,
        part(cx, sendbuf, sendcount, sendtype, send_blocks, &SEND),
    )?;
    let r = on(idx, part(cx, recvbuf, recvcount, recvtype, indegree, &RECV))?;
    if !s.lay.contiguous() || !r.lay.contiguous() {
        return Ok(false);
    }
    let block = |p: &crate::coll::gather::Part, i: usize| {
        p.lay.data_start(p.lay.at(p.base, i * p.count)).cast_mut()
    };
    let mut send = [(std::ptr::null::<u8>(), 0usize); FEW];
    for (k, b) in send[..outdegree].iter_mut().enumerate() {
        let i = if same_send { 0 } else { k };
        *b = (block(&s, i).cast_const(), s.count * s.lay.size);
    }
    let mut recv = [(std::ptr::null_mut::<u8>(), 0usize); FEW];
    for (j, b) in recv[..indegree].iter_mut().enumerate() {
        *b = (block(&r, j), r.count * r.lay.size);
    }
    // SAFETY: the checked buffers of the call: `outdegree` (or one) send blocks and
    // `indegree` receive blocks of `count` contiguous elements each (MPI's contract).
    let done = unsafe {
        neighbor::exchange_direct(
            cx.engine,
            cx.comms,
            idx,
            &nb,
            &send[..outdegree],
            &recv[..indegree],
        )
    };
    done.map(|()| true)
}

collective! {
    /// `MPI_Neighbor_alltoall`: block `k` of the send buffer to destination `k`, block `j`
    /// of the receive buffer from source `j`.
    MPI_Neighbor_alltoall / PMPI_Neighbor_alltoall, MPI_Neighbor_alltoall_c / PMPI_Neighbor_alltoall_c,
    /// `MPI_Ineighbor_alltoall`: nonblocking `MPI_Neighbor_alltoall`.
    MPI_Ineighbor_alltoall / PMPI_Ineighbor_alltoall, MPI_Ineighbor_alltoall_c / PMPI_Ineighbor_alltoall_c,
    neighbor_alltoall_s(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, comm: MPI_Comm) on comm,
    fast neighbor_alltoall_direct
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
