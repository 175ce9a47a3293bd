//! Neighbourhood collectives (MPI 4.0 §8.6): one round in which every process receives one
//! block from each of its sources and sends one block to each of its destinations.
//!
//! ```text
//!   sources  s0 s1 s2 ...   recv block j  <──  from sources[j]      (all posted at once,
//!   dests    d0 d1 d2 ...   send block k  ──▶  to dests[k]           then waited for)
//! ```
//!
//! The five functions (`allgather`, `allgatherv`, `alltoall`, `alltoallv`, `alltoallw`) differ
//! only in where their blocks are, so the API (`api/neighbor.rs`) turns each call into the two
//! lists of blocks and [`exchange`] posts them; blocking, nonblocking and persistent forms run
//! this one schedule.
//!
//! **Blocking calls on contiguous blocks skip the schedule** ([`exchange_direct`]): blocking
//! `MPI_Neighbor_alltoall` and `MPI_Neighbor_allgather` with contiguous datatypes and at most
//! 16 neighbours a side (`crate::topo::neighbours::few_neighbours`, computed in place on every
//! call: a few steps of arithmetic, no allocation) post the receives, send (a short message
//! goes out at once, with no request, as a blocking send's does) and wait for all, which is
//! what a program's `MPI_Irecv`/`MPI_Isend`/`MPI_Waitall` halo exchange does, with the
//! schedule's peers, tags and order, so the two paths meet rank by rank.
//!
//! **Neighbour order** is the topology's ([`crate::topo::neighbours`]): Cartesian, for each
//! dimension the process one step back then one step forward; graph, `MPI_Graph_neighbors`;
//! distributed graph, the sources and destinations as created (weights play no part).
//! An `MPI_PROC_NULL` neighbour (past the edge of a non-periodic dimension) moves nothing: its
//! block of the receive buffer is left as it was.
//!
//! **Matching when a neighbour appears twice.** A periodic Cartesian dimension of size 1 or 2
//! has the same process one step back and one step forward. MPI 4.0 (Annex B.1.1's erratum
//! to 3.1, and the Cartesian example of §8.6) says the block a process sends backwards is the
//! one its neighbour receives as coming from *its* forward side: block `k` of the sender lands
//! in block `k ^ 1` of the receiver, as if each dimension were two `MPI_Sendrecv` shifts. So a
//! Cartesian transfer's tag step is its direction: the send of block `k` has step `k`, and the
//! receive of block `j` waits for step `j ^ 1`; the pairing is then right whatever the size.
//! (MPICH 4.0.2 pairs repeated edges by another rule, so its blocks come out crossed over in
//! exactly these cases; later MPICH and Open MPI releases follow the standard.)
//! On graph topologies the standard's equivalent code matches the k-th edge to a process with
//! the k-th edge from it: all transfers share one step and the engine's non-overtaking order
//! (receives posted in sources order, sends in destinations order) pairs them.

use super::alltoall::Block;
use super::sched::{tag, Builder};
use crate::abi::*;
use crate::comm::{CommIdx, CommTable};
use crate::error::{MpiError, MpiResult};
use crate::topo::neighbours::{FewNeighbours, FEW};
use mpich_channel::{Engine, ReqId, SendMode};
use std::ffi::c_int;

/// The first tag step of a neighbourhood collective (its steps are `0..2 * ndims`).
const FIRST_STEP: u32 = 0;

/// The neighbours of this process as the neighbourhood collectives see them.
#[derive(Debug, Clone)]
pub(crate) struct Neighbours {
    /// Ranks this process receives from, in the order of the receive buffer's blocks.
    pub sources: Vec<c_int>,
    /// Ranks this process sends to, in the order of the send buffer's blocks.
    pub dests: Vec<c_int>,
    /// A Cartesian topology (blocks paired by direction, see the module doc).
    pub cartesian: bool,
}

/// The tag step of the transfer of block `k` (sent) or `j` (received).
fn step(nb: &Neighbours, block: usize, send: bool) -> u32 {
    step_of(nb.cartesian, block, send)
}

fn step_of(cartesian: bool, block: usize, send: bool) -> u32 {
    match (cartesian, send) {
        (false, _) => FIRST_STEP,
        (true, true) => FIRST_STEP + block as u32,
        (true, false) => FIRST_STEP + (block ^ 1) as u32,
    }
}

/// The one round of a neighbourhood collective: `recv[j]` from `nb.sources[j]`, `send[k]` to
/// `nb.dests[k]`. Zero-sized blocks are sent too (so that every receive is matched by its
/// edge's message); blocks of `MPI_PROC_NULL` neighbours are skipped.
pub(crate) fn exchange(b: &mut Builder, nb: &Neighbours, send: &[Block], recv: &[Block]) {
    debug_assert_eq!(send.len(), nb.dests.len());
    debug_assert_eq!(recv.len(), nb.sources.len());
    for (j, (&src, (base, count, lay))) in nb.sources.iter().zip(recv).enumerate() {
        if src != MPI_PROC_NULL {
            b.recv(src as usize, step(nb, j, false), *base, *count, lay);
        }
    }
    for (k, (&dst, (base, count, lay))) in nb.dests.iter().zip(send).enumerate() {
        if dst != MPI_PROC_NULL {
            b.send(dst as usize, step(nb, k, true), *base, *count, lay);
        }
    }
}

/// A blocking neighbourhood collective on contiguous blocks, run straight through the engine
/// without a schedule (as a program would write it: the receives posted, the sends, then a
/// wait for all): the same peers, tags and order as [`exchange`]'s round, so a process on
/// this path meets one on the schedule path. `recv[j]` is `(data, room in bytes)` from
/// `nb.sources[j]`, `send[k]` is `(data, bytes)` to `nb.dests[k]`. A short send goes out at
/// once when the route takes it (no request); the others are requests waited for with the
/// receives. A message longer than its block is `MPI_ERR_TRUNCATE` once every transfer is done.
///
/// # Safety
/// Every block is valid for its bytes (reading for sends, writing for receives) for the call.
pub(crate) unsafe fn exchange_direct(
    engine: &mut Engine,
    comms: &mut CommTable,
    idx: CommIdx,
    nb: &FewNeighbours,
    send: &[(*const u8, usize)],
    recv: &[(*mut u8, usize)],
) -> MpiResult<()> {
    debug_assert_eq!(send.len(), nb.outdegree);
    debug_assert_eq!(recv.len(), nb.indegree);
    let seq = comms.get_mut(idx).next_coll_seq(false);
    let c = comms.get(idx);
    let ctx = c.coll_ctx;
    let mut reqs: [ReqId; 2 * FEW] = [0; 2 * FEW];
    let mut caps: [usize; FEW] = [0; FEW];
    let mut n = 0;
    let adi = engine.p2p();
    for (j, &(buf, cap)) in recv.iter().enumerate() {
        let src = nb.sources[j];
        if src == MPI_PROC_NULL {
            continue;
        }
        let from = c.to_global(src as usize) as i32;
        let buf = crate::cptr::nonnull_or_dangling(buf).cast_mut();
        // SAFETY: the caller's contract: the block is writable until the wait below.
        reqs[n] = unsafe {
            adi.irecv(
                buf,
                cap,
                from,
                tag(seq, step_of(nb.cartesian, j, false)),
                ctx,
                idx,
            )
        }
        .map_err(|e| MpiError::from(e).on(idx))?;
        caps[n] = cap;
        n += 1;
    }
    let receives = n;
    for (k, &(data, len)) in send.iter().enumerate() {
        let dst = nb.dests[k];
        if dst == MPI_PROC_NULL {
            continue;
        }
        let to = c.to_global(dst as usize);
        let t = tag(seq, step_of(nb.cartesian, k, true));
        let data = crate::cptr::nonnull_or_dangling(data);
        // SAFETY: the caller's contract: the block is readable until the wait below.
        let bytes = unsafe { std::slice::from_raw_parts(data, len) };
        let sent = adi
            .send_now(bytes, to, t, ctx, SendMode::Standard)
            .map_err(|e| MpiError::from(e).on(idx))?;
        if !sent {
            // SAFETY: as above; the request is waited for before this call returns.
            reqs[n] = unsafe { adi.isend(data, len, to, t, ctx, SendMode::Standard, idx) }
                .map_err(|e| MpiError::from(e).on(idx))?;
            n += 1;
        }
    }
    let pending = &reqs[..n];
    engine
        .block_on(|e| {
            let adi = e.p2p_ref();
            Ok::<_, MpiError>(pending.iter().all(|&r| adi.is_complete(r)).then_some(()))
        })
        .map_err(|e| e.on(idx))?;
    let mut error = None;
    for (i, &r) in pending.iter().enumerate() {
        let status = engine
            .p2p()
            .take(r)
            .map_err(|e| MpiError::from(e).on(idx))?
            .expect("a complete request");
        if i < receives && status.truncated && error.is_none() {
            error = Some(MpiError::new(
                MPI_ERR_TRUNCATE,
                format!("a neighbourhood collective received more data than its receive block holds ({} bytes); every process must pass matching counts and type signatures", caps[i]),
            ).on(idx));
        }
    }
    error.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cartesian_blocks_pair_by_direction_and_graphs_by_order() {
        let cart = Neighbours {
            sources: vec![1, 1, 2, 3],
            dests: vec![1, 1, 2, 3],
            cartesian: true,
        };
        // Block 0 (sent backwards) is what the neighbour receives into its block 1.
        assert_eq!(step(&cart, 0, true), step(&cart, 1, false));
        assert_eq!(step(&cart, 1, true), step(&cart, 0, false));
        assert_eq!(step(&cart, 3, true), step(&cart, 2, false));
        assert_ne!(step(&cart, 0, true), step(&cart, 1, true));
        let graph = Neighbours {
            cartesian: false,
            ..cart
        };
        assert_eq!(step(&graph, 0, true), step(&graph, 3, false));
    }
}
