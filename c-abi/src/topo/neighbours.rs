//! The neighbours of a process in its communicator's topology, in MPI's order, for the
//! neighbourhood collectives.

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
pub(crate) fn neighbours(c: &Comm) -> MpiResult<(Vec<c_int>, Vec<c_int>)> {
    match c.topo.as_deref() {
        Some(Topology::Cart { dims, periods }) => {
            let mut list = Vec::with_capacity(2 * dims.len());
            cart_neighbours(c.rank as c_int, dims, periods, |r| list.push(r));
            Ok((list.clone(), list))
        }
        Some(Topology::Graph { index, edges }) => {
            let n = graph_neighbours(c, index, edges, c.rank as c_int)?.to_vec();
            Ok((n.clone(), n))
        }
        Some(Topology::DistGraph { sources, dests, .. }) => Ok((sources.clone(), dests.clone())),
        None => Err(no_topology(c)),
    }
}

/// The most neighbours per side [`few_neighbours`] holds.
pub(crate) const FEW: usize = 16;

/// The neighbours of a process with at most [`FEW`] sources and [`FEW`] destinations, held
/// in place: what a blocking neighbourhood collective on short data reads on every call, with
/// no allocation (the lists are a few steps of arithmetic from the topology, cheaper to
/// recompute than to look up anywhere).
pub(crate) struct FewNeighbours {
    pub sources: [c_int; FEW],
    pub dests: [c_int; FEW],
    pub indegree: usize,
    pub outdegree: usize,
    /// A Cartesian topology (its transfers pair by direction: `crate::coll::neighbor`).
    pub cartesian: bool,
}

/// [`neighbours`] in place, or `Ok(None)` if either list is longer than [`FEW`].
pub(crate) fn few_neighbours(c: &Comm) -> MpiResult<Option<FewNeighbours>> {
    let mut few = FewNeighbours {
        sources: [MPI_PROC_NULL; FEW],
        dests: [MPI_PROC_NULL; FEW],
        indegree: 0,
        outdegree: 0,
        cartesian: false,
    };
    let fits = |sources: &[c_int], dests: &[c_int], few: &mut FewNeighbours| {
        if sources.len() > FEW || dests.len() > FEW {
            return false;
        }
        few.sources[..sources.len()].copy_from_slice(sources);
        few.dests[..dests.len()].copy_from_slice(dests);
        (few.indegree, few.outdegree) = (sources.len(), dests.len());
        true
    };
    let ok = match c.topo.as_deref() {
        Some(Topology::Cart { dims, periods }) => {
            if 2 * dims.len() > FEW {
                return Ok(None);
            }
            let mut n = 0;
            cart_neighbours(c.rank as c_int, dims, periods, |r| {
                few.sources[n] = r;
                n += 1;
            });
            few.dests = few.sources;
            (few.indegree, few.outdegree, few.cartesian) = (n, n, true);
            true
        }
        Some(Topology::Graph { index, edges }) => {
            let n = graph_neighbours(c, index, edges, c.rank as c_int)?;
            fits(n, n, &mut few)
        }
        Some(Topology::DistGraph { sources, dests, .. }) => fits(sources, dests, &mut few),
        None => return Err(no_topology(c)),
    };
    Ok(ok.then_some(few))
}

/// The Cartesian neighbours of rank `me`, in MPI's order, handed to `out` one by one.
/// Row-major grid: dimension d's coordinate of a rank is (rank / stride) % size, with stride
/// the product of the later dimensions; a step moves by one stride (computed without building
/// coordinate vectors: this runs on every call).
fn cart_neighbours(me: c_int, dims: &[c_int], periods: &[bool], mut out: impl FnMut(c_int)) {
    let mut stride: c_int = dims.iter().product();
    for (d, &size) in dims.iter().enumerate() {
        stride /= size;
        let at = me / stride % size;
        for step in [-1, 1] {
            let to = at + step;
            out(if (0..size).contains(&to) {
                me + step * stride
            } else if periods[d] {
                me + (to.rem_euclid(size) - at) * stride
            } else {
                MPI_PROC_NULL
            });
        }
    }
}

#[cold]
fn no_topology(c: &Comm) -> MpiError {
    MpiError::new(
        MPI_ERR_TOPOLOGY,
        format!("{} has no topology; neighbourhood collectives need one (MPI_Cart_create, MPI_Graph_create, MPI_Dist_graph_create)", c.label()),
    )
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
        // Periodic dimensions of size 2 and 1: the same rank both ways.
        let mut c = Comm::new(String::new(), (4, 5), 2, Members::All, 6, None);
        c.topo = Some(Rc::new(Topology::Cart {
            dims: vec![2, 1, 3],
            periods: vec![true, true, true],
        }));
        let (s, _) = neighbours(&c).unwrap();
        assert_eq!(s, vec![5, 5, 2, 2, 1, 0]);
        let few = few_neighbours(&c).unwrap().expect("6 neighbours fit");
        assert_eq!((few.indegree, few.outdegree, few.cartesian), (6, 6, true));
        assert_eq!(few.sources[..6], s[..]);
        assert_eq!(few.dests[..6], s[..]);
    }
}
