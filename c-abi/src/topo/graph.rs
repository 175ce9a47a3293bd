//! Graph topologies: their `index`/`edges` arrays, checked, and the neighbours of a node.

use super::{read_ints, Topology};
use crate::abi::*;
use crate::comm::Comm;
use crate::error::{MpiError, MpiResult};
use std::ffi::c_int;

pub(crate) fn graph(c: &Comm) -> MpiResult<(&[c_int], &[c_int])> {
    match c.topo.as_deref() {
        Some(Topology::Graph { index, edges }) => Ok((index, edges)),
        _ => Err(MpiError::new(
            MPI_ERR_TOPOLOGY,
            format!(
                "{} has no graph topology; make one with MPI_Graph_create",
                c.label()
            ),
        )),
    }
}

/// Checks a graph (`index`, `edges` of `nnodes` nodes).
pub(crate) fn read_graph(
    nnodes: usize,
    index: *const c_int,
    edges: *const c_int,
) -> MpiResult<(Vec<c_int>, Vec<c_int>)> {
    let index = read_ints(index, nnodes, "index")?;
    let mut last = 0;
    for (i, &x) in index.iter().enumerate() {
        if x < last {
            return Err(MpiError::arg(format!("index[{i}] = {x} is smaller than the entry before it; index holds cumulative degrees")));
        }
        last = x;
    }
    let edges = read_ints(edges, last as usize, "edges")?;
    if let Some((i, &e)) = edges
        .iter()
        .enumerate()
        .find(|(_, &e)| e < 0 || e as usize >= nnodes)
    {
        return Err(MpiError::arg(format!(
            "edges[{i}] = {e} is not a node of the graph (0..{nnodes})"
        )));
    }
    Ok((index, edges))
}

/// The neighbours of `rank` in a graph.
pub(crate) fn graph_neighbours<'a>(
    c: &Comm,
    index: &[c_int],
    edges: &'a [c_int],
    rank: c_int,
) -> MpiResult<&'a [c_int]> {
    if rank < 0 || rank as usize >= index.len() {
        return Err(MpiError::new(
            MPI_ERR_RANK,
            format!(
                "rank {rank} is not a node of the graph of {} (0..{})",
                c.label(),
                index.len()
            ),
        ));
    }
    let r = rank as usize;
    let start = if r == 0 { 0 } else { index[r - 1] as usize };
    Ok(&edges[start..index[r] as usize])
}
