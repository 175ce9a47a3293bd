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
        $(#[$doc:meta])* $mpi:ident / $pmpi:ident,
        $build:ident ( $($arg:ident : $ty:ty),* ) on $comm:ident
    ) => {
        mpi_fn! {
            $(#[$doc])*
            fn $mpi / $pmpi($($arg: $ty,)* _info: MPI_Info, request: *mut MPI_Request) |st| {
                let cx = &mut st.runtime()?.coll();
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
    MPI_Allgather_init / PMPI_Allgather_init,
    allgather_s(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, comm: MPI_Comm) on comm
}

persistent! {
    /// `MPI_Allgatherv_init`: a persistent `MPI_Allgatherv`.
    MPI_Allgatherv_init / PMPI_Allgatherv_init,
    allgatherv_s(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: MPI_Datatype, comm: MPI_Comm) on comm
}

persistent! {
    /// `MPI_Allreduce_init`: a persistent `MPI_Allreduce`.
    MPI_Allreduce_init / PMPI_Allreduce_init,
    allreduce_s(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) on comm
}

persistent! {
    /// `MPI_Alltoall_init`: a persistent `MPI_Alltoall`.
    MPI_Alltoall_init / PMPI_Alltoall_init,
    alltoall_s(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, comm: MPI_Comm) on comm
}

persistent! {
    /// `MPI_Alltoallv_init`: a persistent `MPI_Alltoallv`.
    MPI_Alltoallv_init / PMPI_Alltoallv_init,
    alltoallv_s(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtype: MPI_Datatype, comm: MPI_Comm) on comm
}

persistent! {
    /// `MPI_Alltoallw_init`: a persistent `MPI_Alltoallw`.
    MPI_Alltoallw_init / PMPI_Alltoallw_init,
    alltoallw_s(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtypes: *const MPI_Datatype, comm: MPI_Comm) on comm
}

persistent! {
    /// `MPI_Barrier_init`: a persistent `MPI_Barrier`.
    MPI_Barrier_init / PMPI_Barrier_init,
    barrier_s(comm: MPI_Comm) on comm
}

persistent! {
    /// `MPI_Bcast_init`: a persistent `MPI_Bcast`.
    MPI_Bcast_init / PMPI_Bcast_init,
    bcast_s(buffer: *mut c_void, count: c_int, datatype: MPI_Datatype, root: c_int, comm: MPI_Comm) on comm
}

persistent! {
    /// `MPI_Exscan_init`: a persistent `MPI_Exscan`.
    MPI_Exscan_init / PMPI_Exscan_init,
    exscan_s(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) on comm
}

persistent! {
    /// `MPI_Gather_init`: a persistent `MPI_Gather`.
    MPI_Gather_init / PMPI_Gather_init,
    gather_s(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm) on comm
}

persistent! {
    /// `MPI_Gatherv_init`: a persistent `MPI_Gatherv`.
    MPI_Gatherv_init / PMPI_Gatherv_init,
    gatherv_s(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm) on comm
}

persistent! {
    /// `MPI_Reduce_init`: a persistent `MPI_Reduce`.
    MPI_Reduce_init / PMPI_Reduce_init,
    reduce_s(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: MPI_Datatype, op: MPI_Op, root: c_int, comm: MPI_Comm) on comm
}

persistent! {
    /// `MPI_Reduce_scatter_block_init`: a persistent `MPI_Reduce_scatter_block`.
    MPI_Reduce_scatter_block_init / PMPI_Reduce_scatter_block_init,
    reduce_scatter_block_s(sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: c_int, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) on comm
}

persistent! {
    /// `MPI_Reduce_scatter_init`: a persistent `MPI_Reduce_scatter`.
    MPI_Reduce_scatter_init / PMPI_Reduce_scatter_init,
    reduce_scatter_s(sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const c_int, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) on comm
}

persistent! {
    /// `MPI_Scan_init`: a persistent `MPI_Scan`.
    MPI_Scan_init / PMPI_Scan_init,
    scan_s(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) on comm
}

persistent! {
    /// `MPI_Scatter_init`: a persistent `MPI_Scatter`.
    MPI_Scatter_init / PMPI_Scatter_init,
    scatter_s(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm) on comm
}

persistent! {
    /// `MPI_Scatterv_init`: a persistent `MPI_Scatterv`.
    MPI_Scatterv_init / PMPI_Scatterv_init,
    scatterv_s(sendbuf: *const c_void, sendcounts: *const c_int, displs: *const c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm) on comm
}

persistent! {
    /// `MPI_Neighbor_allgather_init`: a persistent `MPI_Neighbor_allgather`.
    MPI_Neighbor_allgather_init / PMPI_Neighbor_allgather_init,
    neighbor_allgather_s(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, comm: MPI_Comm) on comm
}

persistent! {
    /// `MPI_Neighbor_allgatherv_init`: a persistent `MPI_Neighbor_allgatherv`.
    MPI_Neighbor_allgatherv_init / PMPI_Neighbor_allgatherv_init,
    neighbor_allgatherv_s(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: MPI_Datatype, comm: MPI_Comm) on comm
}

persistent! {
    /// `MPI_Neighbor_alltoall_init`: a persistent `MPI_Neighbor_alltoall`.
    MPI_Neighbor_alltoall_init / PMPI_Neighbor_alltoall_init,
    neighbor_alltoall_s(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, comm: MPI_Comm) on comm
}

persistent! {
    /// `MPI_Neighbor_alltoallv_init`: a persistent `MPI_Neighbor_alltoallv`.
    MPI_Neighbor_alltoallv_init / PMPI_Neighbor_alltoallv_init,
    neighbor_alltoallv_s(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtype: MPI_Datatype, comm: MPI_Comm) on comm
}

persistent! {
    /// `MPI_Neighbor_alltoallw_init`: a persistent `MPI_Neighbor_alltoallw`.
    MPI_Neighbor_alltoallw_init / PMPI_Neighbor_alltoallw_init,
    neighbor_alltoallw_s(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const MPI_Aint, sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const MPI_Aint, recvtypes: *const MPI_Datatype, comm: MPI_Comm) on comm
}
