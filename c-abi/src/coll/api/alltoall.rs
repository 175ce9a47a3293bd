//! `MPI_Alltoall`, `MPI_Alltoallv`, `MPI_Alltoallw` and their nonblocking forms.

use super::checks::{
    aliased, checked, counts, in_place, ints, on, part, typed, types, unless_in_place, v_blocks,
    w_blocks, RECV, SEND,
};
use super::{begin, builder, inter};
use crate::abi::*;
use crate::coll::alltoall::{self, Block};
use crate::coll::buf::Layout;
use crate::coll::sched::Builder;
use crate::coll::sched::Schedule;
use crate::coll::Cx;
use crate::count::CountArray;
use crate::cptr::Out;
use crate::error::MpiResult;
use crate::runtime::export::mpi_fn;
use std::ffi::c_void;

#[allow(clippy::too_many_arguments)]
pub(super) fn alltoall_s(
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
        return inter::alltoall(
            cx, idx, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
        );
    }
    let (idx, (send, recv)) = checked(cx, comm, |cx, idx| {
        let size = cx.comms.get(idx).size;
        let recv = part(cx, recvbuf, recvcount, recvtype, size, &RECV)?;
        let send = unless_in_place(cx, true, sendbuf, sendcount, sendtype, size, &SEND)?;
        if let Some(s) = &send {
            aliased(sendbuf, recvbuf, s.count.min(recv.count))?;
        }
        Ok((send, recv))
    })?;
    let size = cx.comms.get(idx).size;
    let (rc, rlay) = (recv.count, recv.lay);
    let mut b = builder(cx, idx);
    let (sbase, sc, slay) = match send {
        Some(s) => (s.base, s.count, s.lay),
        None => {
            // In place: send from a copy of the receive buffer.
            let t = b.temp(rc * size, &rlay);
            b.copy(recvbuf.cast(), rc * size, &rlay, t, rc * size, &rlay);
            (t, rc, rlay.clone())
        }
    };
    let sblocks: Vec<Block> = (0..size)
        .map(|i| (slay.at_mut(sbase, i * sc), sc, slay.clone()))
        .collect();
    let rblocks: Vec<Block> = (0..size)
        .map(|i| (rlay.at_mut(recvbuf.cast(), i * rc), rc, rlay.clone()))
        .collect();
    alltoall::alltoall(&mut b, &sblocks, &rblocks, sc * slay.size);
    b.finish()
}

collective! {
    /// `MPI_Alltoall`: block `j` of process `i`'s send buffer to block `i` of process `j`'s
    /// receive buffer.
    MPI_Alltoall / PMPI_Alltoall, MPI_Alltoall_c / PMPI_Alltoall_c,
    /// `MPI_Ialltoall`: nonblocking `MPI_Alltoall`.
    MPI_Ialltoall / PMPI_Ialltoall, MPI_Ialltoall_c / PMPI_Ialltoall_c,
    alltoall_s(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, comm: MPI_Comm) on comm
}

/// For an in-place alltoallv/w: the receive buffer's blocks copied to a temporary, as send
/// blocks. `blocks[i]`: where block `i` is in the receive buffer.
fn in_place_copy(b: &mut Builder, blocks: &[Block]) -> Vec<Block> {
    let used = blocks.iter().filter(|x| x.1 > 0 && x.2.size > 0);
    let lo = used.clone().map(|x| x.0 as isize + x.2.true_lb).min();
    let hi = used
        .map(|x| x.0 as isize + x.2.true_lb + x.2.span(x.1) as isize)
        .max();
    let (Some(lo), Some(hi)) = (lo, hi) else {
        return blocks.to_vec();
    };
    let bytes = (hi - lo) as usize;
    let t = b.temp_bytes(bytes);
    b.copy(
        lo as *const u8,
        bytes,
        &Layout::BYTES,
        t,
        bytes,
        &Layout::BYTES,
    );
    blocks
        .iter()
        .map(|(p, n, lay)| (t.wrapping_offset(*p as isize - lo), *n, lay.clone()))
        .collect()
}

#[allow(clippy::too_many_arguments)]
pub(super) fn alltoallv_s(
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
    if let Some(idx) = inter::inter(cx, comm)? {
        return inter::alltoallv(
            cx, idx, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype,
        );
    }
    let (idx, (sblocks, rblocks)) = checked(cx, comm, |cx, idx| {
        let size = cx.comms.get(idx).size;
        let rblocks = typed(v_blocks(
            cx, recvbuf, recvcounts, rdispls, "rdispls", recvtype, size, &RECV,
        )?);
        let sblocks = if in_place(sendbuf) {
            None
        } else {
            let sblocks = typed(v_blocks(
                cx, sendbuf, sendcounts, sdispls, "sdispls", sendtype, size, &SEND,
            )?);
            let sent: usize = sblocks.iter().map(|x| x.1).sum();
            aliased(sendbuf, recvbuf, sent.min(1))?;
            Some(sblocks)
        };
        Ok((sblocks, rblocks))
    })?;
    let mut b = builder(cx, idx);
    let sblocks = sblocks.unwrap_or_else(|| in_place_copy(&mut b, &rblocks));
    alltoall::windowed(&mut b, &sblocks, &rblocks);
    b.finish()
}

collective! {
    /// `MPI_Alltoallv`: `MPI_Alltoall` with a count and displacement per process.
    MPI_Alltoallv / PMPI_Alltoallv, MPI_Alltoallv_c / PMPI_Alltoallv_c,
    /// `MPI_Ialltoallv`: nonblocking `MPI_Alltoallv`.
    MPI_Ialltoallv / PMPI_Ialltoallv, MPI_Ialltoallv_c / PMPI_Ialltoallv_c,
    alltoallv_s(sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Disp, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count, rdispls: *const Disp, recvtype: MPI_Datatype, comm: MPI_Comm) on comm
}

#[allow(clippy::too_many_arguments)]
pub(super) fn alltoallw_s(
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
    if let Some(idx) = inter::inter(cx, comm)? {
        return inter::alltoallw(
            cx, idx, sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls,
            recvtypes,
        );
    }
    let (idx, (sblocks, rblocks)) = checked(cx, comm, |cx, idx| {
        let size = cx.comms.get(idx).size;
        let rc = counts(recvcounts, size, RECV.counts)?;
        let rd = ints(rdispls, size, "rdispls")?;
        let rt_ = types(recvtypes, size, "recvtypes")?;
        let rblocks = w_blocks(cx, recvbuf, &rc, &rd, rt_, RECV.buf)?;
        let sblocks = if in_place(sendbuf) {
            None
        } else {
            let sc = counts(sendcounts, size, SEND.counts)?;
            let sd = ints(sdispls, size, "sdispls")?;
            let st_ = types(sendtypes, size, "sendtypes")?;
            aliased(sendbuf, recvbuf, sc.iter().sum::<usize>().min(1))?;
            Some(w_blocks(cx, sendbuf, &sc, &sd, st_, SEND.buf)?)
        };
        Ok((sblocks, rblocks))
    })?;
    let mut b = builder(cx, idx);
    let sblocks = sblocks.unwrap_or_else(|| in_place_copy(&mut b, &rblocks));
    alltoall::windowed(&mut b, &sblocks, &rblocks);
    b.finish()
}

collective! {
    /// `MPI_Alltoallw`: `MPI_Alltoallv` with a datatype per process and byte displacements.
    MPI_Alltoallw / PMPI_Alltoallw, MPI_Alltoallw_c / PMPI_Alltoallw_c,
    /// `MPI_Ialltoallw`: nonblocking `MPI_Alltoallw`.
    MPI_Ialltoallw / PMPI_Ialltoallw, MPI_Ialltoallw_c / PMPI_Ialltoallw_c,
    alltoallw_s(sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Disp, sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count, rdispls: *const Disp, recvtypes: *const MPI_Datatype, comm: MPI_Comm) on comm
}
