//! `MPI_Allgather`, `MPI_Allgatherv` and their nonblocking forms.

use super::checks::{aliased, checked, on, part, unless_in_place, v_blocks, RECV, SEND};
use super::{begin, builder, inter};
use crate::abi::*;
use crate::coll::allgather;
use crate::coll::sched::Schedule;
use crate::coll::Cx;
use crate::count::CountArray;
use crate::cptr::Out;
use crate::error::MpiResult;
use crate::runtime::export::mpi_fn;
use std::ffi::c_void;

#[allow(clippy::too_many_arguments)]
pub(super) fn allgather_s(
    cx: &mut Cx<'_>,
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    if let Some(idx) = inter::inter(cx, comm)? {
        return inter::allgather(
            cx, idx, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
        );
    }
    let (idx, (mine, recv)) = checked(cx, comm, |cx, idx| {
        let size = cx.comms.get(idx).size;
        let mine = unless_in_place(cx, true, sendbuf, sendcount, sendtype, 1, &SEND)?;
        let recv = part(cx, recvbuf, recvcount, recvtype, size, &RECV)?;
        if let Some(m) = &mine {
            aliased(sendbuf, recvbuf, m.count.min(recv.count))?;
        }
        Ok((mine, recv))
    })?;
    let mut b = builder(cx, idx);
    allgather::allgather(&mut b, mine.as_ref(), &recv);
    b.finish()
}

collective! {
    /// `MPI_Allgather`: every process's block to every process.
    MPI_Allgather / PMPI_Allgather, MPI_Allgather_c / PMPI_Allgather_c,
    /// `MPI_Iallgather`: nonblocking `MPI_Allgather`.
    MPI_Iallgather / PMPI_Iallgather, MPI_Iallgather_c / PMPI_Iallgather_c,
    allgather_s(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, comm: MPI_Comm) on comm
}

#[allow(clippy::too_many_arguments)]
pub(super) fn allgatherv_s(
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
    if let Some(idx) = inter::inter(cx, comm)? {
        return inter::allgatherv(
            cx, idx, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
        );
    }
    let (idx, (mine, (blocks, lay))) = checked(cx, comm, |cx, idx| {
        let size = cx.comms.get(idx).size;
        let mine = unless_in_place(cx, true, sendbuf, sendcount, sendtype, 1, &SEND)?;
        let recv = v_blocks(
            cx, recvbuf, recvcounts, displs, "displs", recvtype, size, &RECV,
        )?;
        if let Some(m) = &mine {
            aliased(sendbuf, recvbuf, m.count)?;
        }
        Ok((mine, recv))
    })?;
    let mut b = builder(cx, idx);
    allgather::allgatherv(&mut b, mine.as_ref(), &blocks, &lay);
    b.finish()
}

collective! {
    /// `MPI_Allgatherv`: every process's block, each of its own size and place, to every process.
    MPI_Allgatherv / PMPI_Allgatherv, MPI_Allgatherv_c / PMPI_Allgatherv_c,
    /// `MPI_Iallgatherv`: nonblocking `MPI_Allgatherv`.
    MPI_Iallgatherv / PMPI_Iallgatherv, MPI_Iallgatherv_c / PMPI_Iallgatherv_c,
    allgatherv_s(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count, displs: *const Disp, recvtype: MPI_Datatype, comm: MPI_Comm) on comm
}
