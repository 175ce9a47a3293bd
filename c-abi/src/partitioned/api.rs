//! The C entry points of partitioned communication: `MPI_Psend_init`, `MPI_Precv_init`,
//! `MPI_Pready`, `MPI_Pready_range`, `MPI_Pready_list`, `MPI_Parrived` (see
//! [`crate::partitioned`]). Starting, completing and freeing the requests are the
//! point-to-point calls'.

use crate::abi::*;
use crate::cptr::{input_array, Out};
use crate::error::{MpiError, MpiResult};
use crate::p2p::args;
use crate::partitioned::{self, Init, MAX_SEND_PARTITIONS};
use crate::runtime::export::mpi_fn;
use crate::runtime::Runtime;
use mpich_channel::ANY_SOURCE;
use std::ffi::{c_int, c_void};

/// The partition count and the total element count (an `MPI_Count`, like every
/// point-to-point count here), checked.
fn counts(
    partitions: c_int,
    count: MPI_Count,
    max_partitions: usize,
) -> MpiResult<(usize, usize, MPI_Count)> {
    let parts = usize::try_from(partitions)
        .ok()
        .filter(|&p| (1..=max_partitions).contains(&p))
        .ok_or_else(|| {
            MpiError::new(
                MPI_ERR_ARG,
                format!("partitions is {partitions}; it must be 1..={max_partitions}"),
            )
        })?;
    let each = usize::try_from(count).map_err(|_| {
        MpiError::new(
            MPI_ERR_COUNT,
            format!("the count is {count}; it must be 0 or more"),
        )
    })?;
    let total = each
        .checked_mul(parts)
        .and_then(|t| MPI_Count::try_from(t).ok())
        .ok_or_else(|| {
            MpiError::new(
                MPI_ERR_COUNT,
                format!("{partitions} partitions of {count} elements are more than {} elements, the most MPI_Count holds", MPI_Count::MAX),
            )
        })?;
    Ok((parts, each, total))
}

/// What both `_init` calls check about the communicator and datatype.
fn init_of(
    rt: &Runtime,
    comm: MPI_Comm,
    datatype: MPI_Datatype,
    parts: usize,
    each: usize,
    tag: c_int,
) -> MpiResult<Init> {
    let (idx, c) = rt.comms.lookup(comm)?;
    let extent = rt.types.get(datatype).map_err(|e| e.on(idx))?.extent();
    Ok(Init {
        comm: idx,
        peer: None,
        tag,
        ctx: c.coll_ctx,
        partitions: parts,
        count: each,
        extent,
    })
}

mpi_fn! {
    /// `MPI_Psend_init`: a partitioned send request of `partitions` partitions of `count`
    /// elements each, inactive until `MPI_Start`.
    fn MPI_Psend_init / PMPI_Psend_init(
        buf: *const c_void,
        partitions: c_int,
        count: MPI_Count,
        datatype: MPI_Datatype,
        dest: c_int,
        tag: c_int,
        comm: MPI_Comm,
        info: MPI_Info,
        request: *mut MPI_Request,
    ) |st| {
        let rt = st.runtime()?;
        let _ = info;
        let (parts, each, total) = counts(partitions, count, MAX_SEND_PARTITIONS)?;
        let op = args::send_op_in(&rt.comms, &rt.types, buf, total, datatype, dest, tag, comm)?;
        let out = Out::new(request, "request").map_err(|e| e.on(op.comm))?;
        let init = Init { peer: op.dest, ..init_of(rt, comm, datatype, parts, each, tag)? };
        // On its communicator's collective context: lane 0's (`runtime::lanes`).
        let id = partitioned::psend_init(rt.engine_for(init.ctx, init.tag), init, op)?;
        out.set(crate::p2p::request::handle(&rt.engine, id));
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Precv_init`: a partitioned receive request of `partitions` partitions of `count`
    /// elements each from `source` (not `MPI_ANY_SOURCE`) with `tag` (not `MPI_ANY_TAG`).
    fn MPI_Precv_init / PMPI_Precv_init(
        buf: *mut c_void,
        partitions: c_int,
        count: MPI_Count,
        datatype: MPI_Datatype,
        source: c_int,
        tag: c_int,
        comm: MPI_Comm,
        info: MPI_Info,
        request: *mut MPI_Request,
    ) |st| {
        let rt = st.runtime()?;
        let _ = info;
        let (parts, each, total) = counts(partitions, count, usize::MAX)?;
        let op = args::recv_op_in(&rt.comms, &rt.types, buf, total, datatype, source, tag, comm)?;
        if op.source == Some(ANY_SOURCE) {
            return Err(MpiError::new(MPI_ERR_RANK, "a partitioned receive needs a specific source; MPI_ANY_SOURCE is not allowed").on(op.comm));
        }
        if tag == MPI_ANY_TAG {
            return Err(MpiError::new(MPI_ERR_TAG, "a partitioned receive needs a specific tag; MPI_ANY_TAG is not allowed").on(op.comm));
        }
        let out = Out::new(request, "request").map_err(|e| e.on(op.comm))?;
        let peer = op.source.map(|s| s as usize);
        let init = Init { peer, ..init_of(rt, comm, datatype, parts, each, tag)? };
        // On its communicator's collective context: lane 0's (`runtime::lanes`).
        let id = partitioned::precv_init(rt.engine_for(init.ctx, init.tag), init, op)?;
        out.set(crate::p2p::request::handle(&rt.engine, id));
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Pready`: partition `partition` of an active partitioned send may be sent.
    fn MPI_Pready / PMPI_Pready(partition: c_int, request: MPI_Request) |st| {
        let rt = st.runtime()?;
        partitioned::pready(rt.engine_for_request(request), request, &mut std::iter::once(partition))
    }
}

mpi_fn! {
    /// `MPI_Pready_range`: partitions `partition_low..=partition_high` may be sent.
    fn MPI_Pready_range / PMPI_Pready_range(partition_low: c_int, partition_high: c_int, request: MPI_Request) |st| {
        let rt = st.runtime()?;
        if partition_low > partition_high {
            return Err(MpiError::new(MPI_ERR_ARG, format!("partition_low ({partition_low}) is above partition_high ({partition_high})")));
        }
        partitioned::pready(rt.engine_for_request(request), request, &mut (partition_low..=partition_high))
    }
}

mpi_fn! {
    /// `MPI_Pready_list`: the `length` partitions listed may be sent.
    fn MPI_Pready_list / PMPI_Pready_list(length: c_int, array_of_partitions: *mut c_int, request: MPI_Request) |st| {
        let rt = st.runtime()?;
        let n = usize::try_from(length)
            .map_err(|_| MpiError::new(MPI_ERR_COUNT, format!("the length is {length}; it must be 0 or more")))?;
        let list = input_array(array_of_partitions.cast_const(), n, "array_of_partitions")?;
        partitioned::pready(rt.engine_for_request(request), request, &mut list.iter().copied())
    }
}

mpi_fn! {
    /// `MPI_Parrived`: whether partition `partition` of a partitioned receive has arrived
    /// (`*flag`); true for a request between rounds.
    fn MPI_Parrived / PMPI_Parrived(request: MPI_Request, partition: c_int, flag: *mut c_int) |st| {
        let rt = st.runtime()?;
        let flag = Out::new(flag, "flag")?;
        let arrived = partitioned::parrived(&mut rt.engine, request, partition)?;
        flag.set(arrived as c_int);
        Ok(())
    }
}
