//! `MPI_Barrier`: the dissemination algorithm over the engine.
//!
//! In round `k` (`k = 0, 1, ...` while `2^k < size`) each rank sends an empty message to rank
//! `rank + 2^k` and waits for one from `rank - 2^k` (mod size). After `ceil(log2(size))` rounds
//! every rank has heard, directly or through others, from every rank that entered the barrier,
//! so none leaves before all have arrived. The messages travel on the communicator's collective
//! context with the round as tag, so they never meet the program's own messages, and the
//! engine's in-order matching per (source, tag) keeps consecutive barriers apart.

use crate::abi::*;
use crate::comm::CommIdx;
use crate::cptr;
use crate::error::{MpiError, MpiResult};
use crate::export::mpi_fn;
use crate::state::Runtime;
use mpich_channel::SendMode;
use std::ffi::c_int;

fn dissemination(rt: &mut Runtime, comm: CommIdx) -> MpiResult<()> {
    let (size, rank, ctx) = {
        let c = rt.comms.get(comm);
        (c.size, c.rank, c.coll_ctx)
    };
    let mut distance = 1;
    let mut round: c_int = 0;
    while distance < size {
        let c = rt.comms.get(comm);
        let to = c.to_global((rank + distance) % size);
        let from = c.to_global((rank + size - distance) % size) as c_int;
        let empty = cptr::nonnull_or_dangling(std::ptr::null());
        // SAFETY: a zero-byte send: the engine gets a non-NULL pointer it never reads.
        let sent = unsafe { rt.adi.isend(empty, 0, to, round, ctx, SendMode::Standard) }?;
        rt.adi.recv(&mut [], from, round, ctx)?;
        rt.adi.wait(sent)?;
        distance *= 2;
        round += 1;
    }
    Ok(())
}

mpi_fn! {
    /// `MPI_Barrier`: returns once every process of `comm` has called it.
    fn MPI_Barrier / PMPI_Barrier(comm: MPI_Comm) |st| {
        let rt = st.runtime()?;
        let (idx, _) = rt.comms.lookup(comm)?;
        dissemination(rt, idx).map_err(|e: MpiError| e.on(idx))
    }
}
