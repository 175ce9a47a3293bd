//! `MPI_Gather`, `MPI_Gatherv`, `MPI_Scatter`, `MPI_Scatterv` and their nonblocking forms.

use super::checks::{
    aliased, checked, in_place, on, part, rooted, unless_in_place, v_blocks, RECV, SEND,
};
use super::{begin, builder, inter};
use crate::abi::*;
use crate::coll::gather::{self, Part};
use crate::coll::sched::Schedule;
use crate::coll::Cx;
use crate::count::CountArray;
use crate::cptr::Out;
use crate::error::MpiResult;
use crate::runtime::export::mpi_fn;
use std::ffi::{c_int, c_void};

#[allow(clippy::too_many_arguments)]
pub(super) fn gather_s(
    cx: &mut Cx<'_>,
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    r: c_int,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    if let Some(idx) = inter::inter(cx, comm)? {
        return inter::gather(
            cx, idx, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, r,
        );
    }
    let (idx, (mine, recv, r)) = checked(cx, comm, |cx, idx| {
        let (r, me, size) = rooted(cx, idx, r)?;
        let recv = (me == r)
            .then(|| part(cx, recvbuf, recvcount, recvtype, size, &RECV))
            .transpose()?;
        let mine = match &recv {
            // In place: the root's own block is already in its receive buffer.
            Some(rp) if in_place(sendbuf) => Part {
                base: rp.lay.at_mut(rp.base, me * rp.count),
                count: rp.count,
                lay: rp.lay.clone(),
            },
            _ => {
                let m = part(cx, sendbuf, sendcount, sendtype, 1, &SEND)?;
                if let Some(rp) = &recv {
                    aliased(sendbuf, recvbuf, m.count.min(rp.count))?;
                }
                m
            }
        };
        Ok((mine, recv, r))
    })?;
    let mut b = builder(cx, idx);
    gather::gather(&mut b, &mine, recv.as_ref(), r);
    b.finish()
}

collective! {
    /// `MPI_Gather`: every process's block to `root`, in rank order.
    MPI_Gather / PMPI_Gather, MPI_Gather_c / PMPI_Gather_c,
    /// `MPI_Igather`: nonblocking `MPI_Gather`.
    MPI_Igather / PMPI_Igather, MPI_Igather_c / PMPI_Igather_c,
    gather_s(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm) on comm
}

#[allow(clippy::too_many_arguments)]
pub(super) fn gatherv_s(
    cx: &mut Cx<'_>,
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: CountArray,
    displs: CountArray,
    recvtype: MPI_Datatype,
    r: c_int,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    if let Some(idx) = inter::inter(cx, comm)? {
        return inter::gatherv(
            cx, idx, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, r,
        );
    }
    let (idx, (mine, recv, r)) = checked(cx, comm, |cx, idx| {
        let (r, me, size) = rooted(cx, idx, r)?;
        let recv = (me == r)
            .then(|| {
                v_blocks(
                    cx, recvbuf, recvcounts, displs, "displs", recvtype, size, &RECV,
                )
            })
            .transpose()?;
        let mine = unless_in_place(cx, me == r, sendbuf, sendcount, sendtype, 1, &SEND)?;
        Ok((mine, recv, r))
    })?;
    let mut b = builder(cx, idx);
    let recv = recv.as_ref().map(|(blocks, lay)| (&blocks[..], lay));
    gather::gatherv(&mut b, mine.as_ref(), recv, r);
    b.finish()
}

collective! {
    /// `MPI_Gatherv`: every process's block to `root`, each of its own size and place.
    MPI_Gatherv / PMPI_Gatherv, MPI_Gatherv_c / PMPI_Gatherv_c,
    /// `MPI_Igatherv`: nonblocking `MPI_Gatherv`.
    MPI_Igatherv / PMPI_Igatherv, MPI_Igatherv_c / PMPI_Igatherv_c,
    gatherv_s(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count, displs: *const Disp, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm) on comm
}

#[allow(clippy::too_many_arguments)]
pub(super) fn scatter_s(
    cx: &mut Cx<'_>,
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    r: c_int,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    if let Some(idx) = inter::inter(cx, comm)? {
        return inter::scatter(
            cx, idx, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, r,
        );
    }
    let (idx, (send, mine, r)) = checked(cx, comm, |cx, idx| {
        let (r, me, size) = rooted(cx, idx, r)?;
        let send = (me == r)
            .then(|| part(cx, sendbuf, sendcount, sendtype, size, &SEND))
            .transpose()?;
        let mine = unless_in_place(cx, me == r, recvbuf, recvcount, recvtype, 1, &RECV)?;
        if let (Some(sp), Some(m)) = (&send, &mine) {
            aliased(sendbuf, recvbuf, m.count.min(sp.count))?;
        }
        Ok((send, mine, r))
    })?;
    let mut b = builder(cx, idx);
    gather::scatter(&mut b, send.as_ref(), mine.as_ref(), r);
    b.finish()
}

collective! {
    /// `MPI_Scatter`: block `i` of `root`'s buffer to process `i`.
    MPI_Scatter / PMPI_Scatter, MPI_Scatter_c / PMPI_Scatter_c,
    /// `MPI_Iscatter`: nonblocking `MPI_Scatter`.
    MPI_Iscatter / PMPI_Iscatter, MPI_Iscatter_c / PMPI_Iscatter_c,
    scatter_s(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm) on comm
}

#[allow(clippy::too_many_arguments)]
pub(super) fn scatterv_s(
    cx: &mut Cx<'_>,
    sendbuf: *const c_void,
    sendcounts: CountArray,
    displs: CountArray,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    r: c_int,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    if let Some(idx) = inter::inter(cx, comm)? {
        return inter::scatterv(
            cx, idx, sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, r,
        );
    }
    let (idx, (send, mine, r)) = checked(cx, comm, |cx, idx| {
        let (r, me, size) = rooted(cx, idx, r)?;
        let send = (me == r)
            .then(|| {
                v_blocks(
                    cx, sendbuf, sendcounts, displs, "displs", sendtype, size, &SEND,
                )
            })
            .transpose()?;
        let mine = unless_in_place(cx, me == r, recvbuf, recvcount, recvtype, 1, &RECV)?;
        Ok((send, mine, r))
    })?;
    let mut b = builder(cx, idx);
    let send = send.as_ref().map(|(blocks, lay)| (&blocks[..], lay));
    gather::scatterv(&mut b, send, mine.as_ref(), r);
    b.finish()
}

collective! {
    /// `MPI_Scatterv`: blocks of `root`'s buffer, each of its own size and place, to each process.
    MPI_Scatterv / PMPI_Scatterv, MPI_Scatterv_c / PMPI_Scatterv_c,
    /// `MPI_Iscatterv`: nonblocking `MPI_Scatterv`.
    MPI_Iscatterv / PMPI_Iscatterv, MPI_Iscatterv_c / PMPI_Iscatterv_c,
    scatterv_s(sendbuf: *const c_void, sendcounts: *const Count, displs: *const Disp, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm) on comm
}
