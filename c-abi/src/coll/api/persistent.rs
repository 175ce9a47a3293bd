//! The persistent collectives: `MPI_Allgather_init`, ..., `MPI_Scatterv_init` and the
//! neighbourhood ones (`MPI_Neighbor_*_init`).
//!
//! Each is its blocking form's builder (the same checks, algorithm and schedule; see
//! [`crate::coll::persistent`]) followed by the persistent request that replays the schedule.
//! The info argument is accepted and not consulted (no hints are defined for these).

use super::allgather::{allgather_s, allgatherv_s};
use super::alltoall::{alltoall_s, alltoallv_s, alltoallw_s};
use super::bcast::{barrier_s, bcast_s};
use super::checks::on;
use super::gather::{gather_s, gatherv_s, scatter_s, scatterv_s};
use super::neighbor::{
    neighbor_allgather_s, neighbor_allgatherv_s, neighbor_alltoall_s, neighbor_alltoallv_s,
    neighbor_alltoallw_s,
};
use super::reduce::{
    allreduce_s, exscan_s, reduce_s, reduce_scatter_block_s, reduce_scatter_s, scan_s,
};
use crate::abi::*;
use crate::coll::persistent;
use crate::cptr::Out;
use crate::runtime::export::mpi_fn;
use std::ffi::{c_int, c_void};

/// Makes a persistent collective's `_init` entry point from its blocking form's builder.
macro_rules! persistent {
    (
        $(#[$doc:meta])* $mpi:ident / $pmpi:ident, $mpi_c:ident / $pmpi_c:ident,
        $build:ident ( $($arg:ident : $ty:ty),* ) on $comm:ident
    ) => {
        mpi_fn! {
            $(#[$doc])*
            fn $mpi / $pmpi, large $mpi_c / $pmpi_c
            where [Count = c_int | MPI_Count, Disp = c_int | MPI_Aint]
            ($($arg: $ty,)* _info: MPI_Info, request: *mut MPI_Request) |st| {
                let cx = &mut st.runtime()?.coll();
                cx.nonblocking = true;
                let (idx, _) = cx.comms.lookup($comm)?;
                let out = on(idx, Out::new(request, "request"))?;
                let s = $build(cx, $($arg.into()),*)?;
                out.set(persistent::init(cx.engine, s)?);
                Ok(())
            }
        }
    };
    (
        $(#[$doc:meta])* $mpi:ident / $pmpi:ident,
        $build:ident ( $($arg:ident : $ty:ty),* ) on $comm:ident
    ) => {
        mpi_fn! {
            $(#[$doc])*
            fn $mpi / $pmpi($($arg: $ty,)* _info: MPI_Info, request: *mut MPI_Request) |st| {
                let cx = &mut st.runtime()?.coll();
                cx.nonblocking = true;
                let (idx, _) = cx.comms.lookup($comm)?;
                let out = on(idx, Out::new(request, "request"))?;
                let s = $build(cx, $($arg),*)?;
                out.set(persistent::init(cx.engine, s)?);
                Ok(())
            }
        }
    };
}

persistent! {
    /// `MPI_Allgather_init`: a persistent `MPI_Allgather`.
    MPI_Allgather_init / PMPI_Allgather_init, MPI_Allgather_init_c / PMPI_Allgather_init_c,
    allgather_s(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, comm: MPI_Comm) on comm
}

persistent! {
    /// `MPI_Allgatherv_init`: a persistent `MPI_Allgatherv`.
    MPI_Allgatherv_init / PMPI_Allgatherv_init, MPI_Allgatherv_init_c / PMPI_Allgatherv_init_c,
    allgatherv_s(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count, displs: *const Disp, recvtype: MPI_Datatype, comm: MPI_Comm) on comm
}

persistent! {
    /// `MPI_Allreduce_init`: a persistent `MPI_Allreduce`.
    MPI_Allreduce_init / PMPI_Allreduce_init, MPI_Allreduce_init_c / PMPI_Allreduce_init_c,
    allreduce_s(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) on comm
}

persistent! {
    /// `MPI_Alltoall_init`: a persistent `MPI_Alltoall`.
    MPI_Alltoall_init / PMPI_Alltoall_init, MPI_Alltoall_init_c / PMPI_Alltoall_init_c,
    alltoall_s(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, comm: MPI_Comm) on comm
}

persistent! {
    /// `MPI_Alltoallv_init`: a persistent `MPI_Alltoallv`.
    MPI_Alltoallv_init / PMPI_Alltoallv_init, MPI_Alltoallv_init_c / PMPI_Alltoallv_init_c,
    alltoallv_s(sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Disp, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count, rdispls: *const Disp, recvtype: MPI_Datatype, comm: MPI_Comm) on comm
}

persistent! {
    /// `MPI_Alltoallw_init`: a persistent `MPI_Alltoallw`.
    MPI_Alltoallw_init / PMPI_Alltoallw_init, MPI_Alltoallw_init_c / PMPI_Alltoallw_init_c,
    alltoallw_s(sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Disp, sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count, rdispls: *const Disp, recvtypes: *const MPI_Datatype, comm: MPI_Comm) on comm
}

persistent! {
    /// `MPI_Barrier_init`: a persistent `MPI_Barrier`.
    MPI_Barrier_init / PMPI_Barrier_init,
    barrier_s(comm: MPI_Comm) on comm
}

persistent! {
    /// `MPI_Bcast_init`: a persistent `MPI_Bcast`.
    MPI_Bcast_init / PMPI_Bcast_init, MPI_Bcast_init_c / PMPI_Bcast_init_c,
    bcast_s(buffer: *mut c_void, count: Count, datatype: MPI_Datatype, root: c_int, comm: MPI_Comm) on comm
}

persistent! {
    /// `MPI_Exscan_init`: a persistent `MPI_Exscan`.
    MPI_Exscan_init / PMPI_Exscan_init, MPI_Exscan_init_c / PMPI_Exscan_init_c,
    exscan_s(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) on comm
}

persistent! {
    /// `MPI_Gather_init`: a persistent `MPI_Gather`.
    MPI_Gather_init / PMPI_Gather_init, MPI_Gather_init_c / PMPI_Gather_init_c,
    gather_s(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm) on comm
}

persistent! {
    /// `MPI_Gatherv_init`: a persistent `MPI_Gatherv`.
    MPI_Gatherv_init / PMPI_Gatherv_init, MPI_Gatherv_init_c / PMPI_Gatherv_init_c,
    gatherv_s(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count, displs: *const Disp, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm) on comm
}

persistent! {
    /// `MPI_Reduce_init`: a persistent `MPI_Reduce`.
    MPI_Reduce_init / PMPI_Reduce_init, MPI_Reduce_init_c / PMPI_Reduce_init_c,
    reduce_s(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: MPI_Datatype, op: MPI_Op, root: c_int, comm: MPI_Comm) on comm
}

persistent! {
    /// `MPI_Reduce_scatter_block_init`: a persistent `MPI_Reduce_scatter_block`.
    MPI_Reduce_scatter_block_init / PMPI_Reduce_scatter_block_init, MPI_Reduce_scatter_block_init_c / PMPI_Reduce_scatter_block_init_c,
    reduce_scatter_block_s(sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: Count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) on comm
}

persistent! {
    /// `MPI_Reduce_scatter_init`: a persistent `MPI_Reduce_scatter`.
    MPI_Reduce_scatter_init / PMPI_Reduce_scatter_init, MPI_Reduce_scatter_init_c / PMPI_Reduce_scatter_init_c,
    reduce_scatter_s(sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const Count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) on comm
}

persistent! {
    /// `MPI_Scan_init`: a persistent `MPI_Scan`.
    MPI_Scan_init / PMPI_Scan_init, MPI_Scan_init_c / PMPI_Scan_init_c,
    scan_s(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) on comm
}

persistent! {
    /// `MPI_Scatter_init`: a persistent `MPI_Scatter`.
    MPI_Scatter_init / PMPI_Scatter_init, MPI_Scatter_init_c / PMPI_Scatter_init_c,
    scatter_s(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm) on comm
}

persistent! {
    /// `MPI_Scatterv_init`: a persistent `MPI_Scatterv`.
    MPI_Scatterv_init / PMPI_Scatterv_init, MPI_Scatterv_init_c / PMPI_Scatterv_init_c,
    scatterv_s(sendbuf: *const c_void, sendcounts: *const Count, displs: *const Disp, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm) on comm
}

persistent! {
    /// `MPI_Neighbor_allgather_init`: a persistent `MPI_Neighbor_allgather`.
    MPI_Neighbor_allgather_init / PMPI_Neighbor_allgather_init, MPI_Neighbor_allgather_init_c / PMPI_Neighbor_allgather_init_c,
    neighbor_allgather_s(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, comm: MPI_Comm) on comm
}

persistent! {
    /// `MPI_Neighbor_allgatherv_init`: a persistent `MPI_Neighbor_allgatherv`.
    MPI_Neighbor_allgatherv_init / PMPI_Neighbor_allgatherv_init, MPI_Neighbor_allgatherv_init_c / PMPI_Neighbor_allgatherv_init_c,
    neighbor_allgatherv_s(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count, displs: *const Disp, recvtype: MPI_Datatype, comm: MPI_Comm) on comm
}

persistent! {
    /// `MPI_Neighbor_alltoall_init`: a persistent `MPI_Neighbor_alltoall`.
    MPI_Neighbor_alltoall_init / PMPI_Neighbor_alltoall_init, MPI_Neighbor_alltoall_init_c / PMPI_Neighbor_alltoall_init_c,
    neighbor_alltoall_s(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, comm: MPI_Comm) on comm
}

persistent! {
    /// `MPI_Neighbor_alltoallv_init`: a persistent `MPI_Neighbor_alltoallv`.
    MPI_Neighbor_alltoallv_init / PMPI_Neighbor_alltoallv_init, MPI_Neighbor_alltoallv_init_c / PMPI_Neighbor_alltoallv_init_c,
    neighbor_alltoallv_s(sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Disp, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count, rdispls: *const Disp, recvtype: MPI_Datatype, comm: MPI_Comm) on comm
}

persistent! {
    /// `MPI_Neighbor_alltoallw_init`: a persistent `MPI_Neighbor_alltoallw`.
    MPI_Neighbor_alltoallw_init / PMPI_Neighbor_alltoallw_init, MPI_Neighbor_alltoallw_init_c / PMPI_Neighbor_alltoallw_init_c,
    neighbor_alltoallw_s(sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const MPI_Aint, sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count, rdispls: *const MPI_Aint, recvtypes: *const MPI_Datatype, comm: MPI_Comm) on comm
}
