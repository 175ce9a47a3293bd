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
use super::sched::Builder;
use crate::abi::MPI_PROC_NULL;
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
    match (nb.cartesian, send) {
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
