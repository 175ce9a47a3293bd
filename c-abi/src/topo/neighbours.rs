//! The neighbours of a process in its communicator's topology, in MPI's order, for the
//! neighbourhood collectives.

use super::cart::{coords_of, rank_of};
use super::graph::graph_neighbours;
use super::Topology;
use crate::abi::*;
use crate::comm::Comm;
use crate::error::{MpiError, MpiResult};
use std::ffi::c_int;

/// The neighbours of this process for the neighbourhood collectives, in MPI's order:
/// `(sources, destinations)` as ranks of `c` (`MPI_PROC_NULL` past a non-periodic edge).
/// Cartesian: for each dimension, the ranks one step back and one step forward (both lists
/// alike); graph: the neighbours of this node (both lists alike); distributed graph: its in-
/// and out-neighbours. `MPI_ERR_TOPOLOGY` if `c` has no topology.
#[allow(dead_code)] // for the neighbourhood collectives of crate::coll
pub(crate) fn neighbours(c: &Comm) -> MpiResult<(Vec<c_int>, Vec<c_int>)> {
    match c.topo.as_deref() {
        Some(Topology::Cart { dims, periods }) => {
            let me = coords_of(dims, c.rank as c_int);
            let mut list = Vec::with_capacity(2 * dims.len());
            for d in 0..dims.len() {
                for step in [-1, 1] {
                    let mut at = me.clone();
                    at[d] += step;
                    list.push(if !periods[d] && !(0..dims[d]).contains(&at[d]) {
                        MPI_PROC_NULL
                    } else {
                        rank_of(dims, periods, &at)?
                    });
                }
            }
            Ok((list.clone(), list))
        }
        Some(Topology::Graph { index, edges }) => {
            let n = graph_neighbours(c, index, edges, c.rank as c_int)?.to_vec();
            Ok((n.clone(), n))
        }
        Some(Topology::DistGraph { sources, dests, .. }) => Ok((sources.clone(), dests.clone())),
        None => Err(MpiError::new(
            MPI_ERR_TOPOLOGY,
            format!("{} has no topology; neighbourhood collectives need one (MPI_Cart_create, MPI_Graph_create, MPI_Dist_graph_create)", c.label()),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;

    #[test]
    fn cartesian_neighbours_are_in_mpi_order() {
        use crate::comm::Members;
        let mut c = Comm::new(String::new(), (4, 5), 4, Members::All, 6, None);
        c.topo = Some(Rc::new(Topology::Cart {
            dims: vec![2, 3],
            periods: vec![false, true],
        }));
        let (s, d) = neighbours(&c).unwrap();
        assert_eq!(s, vec![1, MPI_PROC_NULL, 3, 5]);
        assert_eq!(s, d);
    }
}
