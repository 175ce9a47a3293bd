//! Distributed graphs: each process's neighbour lists (and weights), and the exchange that
//! tells every process its own edges in `MPI_Dist_graph_create`.

use super::create::create_with_steps;
use super::{count, is_unweighted, is_weights_empty, read_ints, Topology};
use crate::abi::*;
use crate::comm::make::Steps;
use crate::comm::net::{Net, TAG_ALLGATHER};
use crate::comm::{Comm, CommIdx};
use crate::error::{MpiError, MpiResult};
use std::ffi::c_int;

/// Reads a list of `n` ranks of `c` and its weights (`MPI_UNWEIGHTED`: none).
pub(crate) fn read_neighbours(
    c: &Comm,
    n: c_int,
    ranks: *const c_int,
    weights: *const c_int,
    what: &'static str,
) -> MpiResult<(Vec<c_int>, Option<Vec<c_int>>)> {
    let n = count(n, what)?;
    let list = read_ints(ranks, n, what)?;
    if let Some(&bad) = list.iter().find(|&&r| r < 0 || r as usize >= c.size) {
        return Err(MpiError::new(
            MPI_ERR_RANK,
            format!("{bad} (in {what}) is not a rank of {}", c.label()),
        ));
    }
    if is_weights_empty(weights) && n > 0 {
        return Err(MpiError::arg(
            "MPI_WEIGHTS_EMPTY was passed for a non-empty list of neighbours",
        ));
    }
    let weights = if is_unweighted(weights) {
        None
    } else if is_weights_empty(weights) || n == 0 {
        Some(Vec::new())
    } else {
        Some(read_ints(weights, n, "weights")?)
    };
    Ok((list, weights))
}

/// The topology of a distributed graph whose neighbours (and weights) this process knows.
pub(crate) fn dist_topology(
    sources: Vec<c_int>,
    sw: Option<Vec<c_int>>,
    dests: Vec<c_int>,
    dw: Option<Vec<c_int>>,
) -> Topology {
    let weighted = sw.is_some() || dw.is_some();
    Topology::DistGraph {
        source_weights: sw.unwrap_or_else(|| vec![1; sources.len()]),
        dest_weights: dw.unwrap_or_else(|| vec![1; dests.len()]),
        sources,
        dests,
        weighted,
    }
}

/// Everyone's edge triples, in rank order (two allgathers: the counts, then padded blocks).
pub(crate) fn exchange_edges(
    a: &mut impl Steps,
    idx: CommIdx,
    mine: &[c_int],
) -> MpiResult<Vec<c_int>> {
    let net = a.cx(|cx| Ok(Net::local(cx.comms.get(idx))))?;
    let n = net.size();
    let mut counts = vec![0u8; 4 * n];
    net.allgather(
        a,
        &(mine.len() as u32).to_ne_bytes(),
        &mut counts,
        TAG_ALLGATHER,
    )?;
    let counts: Vec<usize> = counts
        .chunks_exact(4)
        .map(|b| u32::from_ne_bytes(b.try_into().expect("4 bytes")) as usize)
        .collect();
    let max = counts.iter().copied().max().unwrap_or(0);
    let mut block = vec![0u8; 4 * max];
    for (i, v) in mine.iter().enumerate() {
        block[4 * i..4 * i + 4].copy_from_slice(&v.to_ne_bytes());
    }
    let mut all = vec![0u8; 4 * max * n];
    net.allgather(a, &block, &mut all, TAG_ALLGATHER + 1)?;
    let mut out = Vec::new();
    for (r, &cnt) in counts.iter().enumerate() {
        let b = &all[4 * max * r..4 * max * r + 4 * cnt];
        out.extend(
            b.chunks_exact(4)
                .map(|x| c_int::from_ne_bytes(x.try_into().expect("4 bytes"))),
        );
    }
    Ok(out)
}

pub(crate) fn dist(c: &Comm) -> MpiResult<&Topology> {
    match c.topo.as_deref() {
        Some(t @ Topology::DistGraph { .. }) => Ok(t),
        _ => Err(MpiError::new(
            MPI_ERR_TOPOLOGY,
            format!("{} has no distributed graph topology", c.label()),
        )),
    }
}

/// `MPI_Dist_graph_create`'s collective part: every process's `(source, destination, weight)`
/// edge triples are exchanged, each keeps those that end or start at it, and the communicator
/// is made with those as its neighbours.
pub(crate) fn from_edges(
    a: &mut impl Steps,
    idx: CommIdx,
    edges: &[c_int],
    weighted: bool,
) -> MpiResult<MPI_Comm> {
    let all = exchange_edges(a, idx, edges)?;
    let (me, n) = a.cx(|cx| {
        let c = cx.comms.get(idx);
        Ok((c.rank as c_int, c.size))
    })?;
    let (mut s, mut sw, mut d, mut dw) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for e in all.chunks_exact(3) {
        if e[1] == me {
            s.push(e[0]);
            sw.push(e[2]);
        }
        if e[0] == me {
            d.push(e[1]);
            dw.push(e[2]);
        }
    }
    let (sw, dw) = if weighted {
        (Some(sw), Some(dw))
    } else {
        (None, None)
    };
    create_with_steps(a, idx, n, dist_topology(s, sw, d, dw))
}
