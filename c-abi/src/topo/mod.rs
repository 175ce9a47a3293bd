//! Virtual topologies: cartesian grids, graphs and distributed graphs attached to
//! communicators (their calls, in `api`: `MPI_Cart_create`, `MPI_Cart_coords`, `MPI_Cart_rank`, `MPI_Cart_shift`,
//! `MPI_Cart_sub`, `MPI_Cart_get`, `MPI_Cartdim_get`, `MPI_Cart_map`, `MPI_Dims_create`,
//! `MPI_Graph_create` and its queries, `MPI_Graph_map`, `MPI_Dist_graph_create_adjacent`,
//! `MPI_Dist_graph_create`, `MPI_Dist_graph_neighbors(_count)`, `MPI_Topo_test`).
//!
//! A topology is a description stored with the communicator ([`Topology`], shared by its
//! duplicates); it does not change how messages travel. Ranks are never reordered (`reorder`
//! is accepted and ignored, as MPICH does on one host): a grid of `n` processes is ranks
//! `0..n` of the old communicator, in row-major order, and the ranks beyond it get
//! `MPI_COMM_NULL`. Error classes follow MPICH: a communicator without the right topology is
//! `MPI_ERR_TOPOLOGY`; a bad dimension size `MPI_ERR_DIMS`; most other bad values
//! `MPI_ERR_ARG`.
//!
//! **Owns** the [`Topology`] a communicator carries. **Entry:** the queries of [`cart`],
//! [`graph`] and `dist_graph`, [`neighbours`] for the neighbourhood collectives, and `create`,
//! which makes a communicator with a topology through the communicator code's context; the C
//! functions are in `api`.

mod api;
pub(crate) mod cart;
mod create;
mod dist_graph;
pub(crate) mod graph;
pub(crate) mod neighbours;

use crate::cptr::Array;
use crate::error::{MpiError, MpiResult};
use std::ffi::c_int;

/// The topology of a communicator.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Topology {
    Cart {
        dims: Vec<c_int>,
        periods: Vec<bool>,
    },
    Graph {
        index: Vec<c_int>,
        edges: Vec<c_int>,
    },
    DistGraph {
        sources: Vec<c_int>,
        source_weights: Vec<c_int>,
        dests: Vec<c_int>,
        dest_weights: Vec<c_int>,
        weighted: bool,
    },
}

// ---- MPI_UNWEIGHTED and MPI_WEIGHTS_EMPTY: `extern int * const` in mpi.h ----

/// A pointer-valued exported constant.
#[repr(transparent)]
pub struct Sentinel(*const c_int);
// SAFETY: the pointer is never written through; it is only compared.
unsafe impl Sync for Sentinel {}

static UNWEIGHTED_TARGET: c_int = 0;
static WEIGHTS_EMPTY_TARGET: c_int = 0;

/// `MPI_UNWEIGHTED`: the address passed as weights to say "no weights".
#[no_mangle]
pub static MPI_UNWEIGHTED: Sentinel = Sentinel(&UNWEIGHTED_TARGET);
/// `MPI_WEIGHTS_EMPTY`: weights of a process with no edges in a weighted graph.
#[no_mangle]
pub static MPI_WEIGHTS_EMPTY: Sentinel = Sentinel(&WEIGHTS_EMPTY_TARGET);

pub(crate) fn is_unweighted(p: *const c_int) -> bool {
    std::ptr::eq(p, MPI_UNWEIGHTED.0)
}

pub(crate) fn is_weights_empty(p: *const c_int) -> bool {
    std::ptr::eq(p, MPI_WEIGHTS_EMPTY.0)
}

// ---- Small helpers ----

pub(crate) fn count(n: c_int, what: &str) -> MpiResult<usize> {
    usize::try_from(n).map_err(|_| MpiError::arg(format!("{what} is {n}; it must be >= 0")))
}

/// Reads `n` ints of an input array.
pub(crate) fn read_ints(p: *const c_int, n: usize, what: &'static str) -> MpiResult<Vec<c_int>> {
    let a = Array::new(p.cast_mut(), n, what)?;
    Ok((0..n).map(|i| a.get(i)).collect())
}

/// Writes `values` into an output array of at least their length.
pub(crate) fn write_ints(p: *mut c_int, values: &[c_int], what: &'static str) -> MpiResult<()> {
    let a = Array::new(p, values.len(), what)?;
    for (i, &v) in values.iter().enumerate() {
        a.set(i, v);
    }
    Ok(())
}
