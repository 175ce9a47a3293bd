//! The C entry points of topologies: `MPI_Cart_create`, `MPI_Cart_coords`, `MPI_Cart_rank`,
//! `MPI_Cart_shift`, `MPI_Cart_sub`, `MPI_Cart_get`, `MPI_Cartdim_get`, `MPI_Cart_map`,
//! `MPI_Dims_create`, `MPI_Graph_create` and its queries, `MPI_Graph_map`,
//! `MPI_Dist_graph_create_adjacent`, `MPI_Dist_graph_create`,
//! `MPI_Dist_graph_neighbors(_count)`, `MPI_Topo_test`.

use super::cart::{cart, coords_of, dims_create, map_rank, rank_of, read_grid, sub_grid_call};
use super::create::create_with_call;
use super::dist_graph::{dist, dist_topology, from_edges, read_neighbours};
use super::graph::{graph, graph_neighbours, read_graph};
use super::{count, is_unweighted, read_ints, write_ints, Topology, MPI_UNWEIGHTED};
use crate::abi::*;
use crate::comm::{require_intra, CommIdx};
use crate::cptr::Out;
use crate::error::{MpiError, MpiResult};
use crate::runtime::export::mpi_fn;
use crate::runtime::Runtime;
use std::ffi::c_int;

/// Looks up an intracommunicator for a topology call, and the output handle.
fn intra(rt: &Runtime, comm: MPI_Comm, what: &str) -> MpiResult<CommIdx> {
    let (idx, c) = rt.comms.lookup(comm)?;
    require_intra(c, what).map_err(|e| e.on(idx))?;
    Ok(idx)
}

mpi_fn! {
    /// `MPI_Cart_create`: a communicator of the first `prod(dims)` processes with a
    /// cartesian topology (`reorder` is ignored).
    fn MPI_Cart_create / PMPI_Cart_create(
        comm_old: MPI_Comm,
        ndims: c_int,
        dims: *const c_int,
        periods: *const c_int,
        _reorder: c_int,
        comm_cart: *mut MPI_Comm,
    ) waits |call| {
        let rt = call.state().runtime()?;
        let idx = intra(rt, comm_old, "MPI_Cart_create")?;
        let checks = || -> MpiResult<_> {
            let out = Out::new(comm_cart, "comm_cart")?;
            let (dims, periods) = read_grid(ndims, dims, periods)?;
            let n: i64 = dims.iter().map(|&d| d as i64).product();
            let size = rt.comms.get(idx).size;
            if n > size as i64 {
                return Err(MpiError::arg(format!("the grid has {n} processes but the communicator only {size}")));
            }
            Ok((out, dims, periods, n as usize))
        };
        let (out, dims, periods, n) = checks().map_err(|e| e.on(idx))?;
        out.set(create_with_call(call, idx, n, Topology::Cart { dims, periods }).map_err(|e| e.on(idx))?);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Cart_coords`: the coordinates of `rank`.
    fn MPI_Cart_coords / PMPI_Cart_coords(comm: MPI_Comm, rank: c_int, maxdims: c_int, coords: *mut c_int) |st| {
        let rt = st.runtime()?;
        let (idx, c) = rt.comms.lookup(comm)?;
        let run = || -> MpiResult<()> {
            let (dims, _) = cart(c)?;
            if rank < 0 || rank as usize >= c.size {
                return Err(MpiError::new(MPI_ERR_RANK, format!("rank {rank} is not in {} (size {})", c.label(), c.size)));
            }
            if count(maxdims, "maxdims")? < dims.len() {
                return Err(MpiError::arg(format!("maxdims is {maxdims} but the grid has {} dimensions", dims.len())));
            }
            write_ints(coords, &coords_of(dims, rank), "coords")
        };
        run().map_err(|e| e.on(idx))
    }
}

mpi_fn! {
    /// `MPI_Cart_rank`: the rank at `coords`.
    fn MPI_Cart_rank / PMPI_Cart_rank(comm: MPI_Comm, coords: *const c_int, rank: *mut c_int) |st| {
        let rt = st.runtime()?;
        let (idx, c) = rt.comms.lookup(comm)?;
        let run = || -> MpiResult<()> {
            let (dims, periods) = cart(c)?;
            let out = Out::new(rank, "rank")?;
            let at = read_ints(coords, dims.len(), "coords")?;
            out.set(rank_of(dims, periods, &at)?);
            Ok(())
        };
        run().map_err(|e| e.on(idx))
    }
}

mpi_fn! {
    /// `MPI_Cart_shift`: the neighbours `disp` steps back and forward along `direction`
    /// (`MPI_PROC_NULL` past a non-periodic edge).
    fn MPI_Cart_shift / PMPI_Cart_shift(comm: MPI_Comm, direction: c_int, disp: c_int, rank_source: *mut c_int, rank_dest: *mut c_int) |st| {
        let rt = st.runtime()?;
        let (idx, c) = rt.comms.lookup(comm)?;
        let run = || -> MpiResult<()> {
            let (dims, periods) = cart(c)?;
            let src = Out::new(rank_source, "rank_source")?;
            let dst = Out::new(rank_dest, "rank_dest")?;
            if dims.is_empty() {
                return Err(MpiError::new(MPI_ERR_TOPOLOGY, "the grid has no dimension to shift along"));
            }
            if direction < 0 || direction as usize >= dims.len() {
                return Err(MpiError::arg(format!("direction {direction} is not a dimension of the grid (0..{})", dims.len())));
            }
            let d = direction as usize;
            let me = coords_of(dims, c.rank as c_int);
            let neighbour = |step: c_int| -> MpiResult<c_int> {
                let mut at = me.clone();
                at[d] += step;
                if !periods[d] && !(0..dims[d]).contains(&at[d]) {
                    return Ok(MPI_PROC_NULL);
                }
                rank_of(dims, periods, &at)
            };
            dst.set(neighbour(disp)?);
            src.set(neighbour(-disp)?);
            Ok(())
        };
        run().map_err(|e| e.on(idx))
    }
}

mpi_fn! {
    /// `MPI_Cart_sub`: the sub-grids keeping the dimensions flagged in `remain_dims`.
    fn MPI_Cart_sub / PMPI_Cart_sub(comm: MPI_Comm, remain_dims: *const c_int, newcomm: *mut MPI_Comm) waits |call| {
        let rt = call.state().runtime()?;
        let (idx, c) = rt.comms.lookup(comm)?;
        let prepare = || -> MpiResult<_> {
            let (dims, periods) = cart(c)?;
            let out = Out::new(newcomm, "newcomm")?;
            let keep: Vec<bool> = read_ints(remain_dims, dims.len(), "remain_dims")?.into_iter().map(|x| x != 0).collect();
            let me = coords_of(dims, c.rank as c_int);
            let (mut color, mut key) = (0, 0);
            let (mut sub_dims, mut sub_periods) = (Vec::new(), Vec::new());
            for i in 0..dims.len() {
                if keep[i] {
                    key = key * dims[i] + me[i];
                    sub_dims.push(dims[i]);
                    sub_periods.push(periods[i]);
                } else {
                    color = color * dims[i] + me[i];
                }
            }
            Ok((out, color, key, sub_dims, sub_periods))
        };
        let (out, color, key, sub_dims, sub_periods) = prepare().map_err(|e| e.on(idx))?;
        let topo = Topology::Cart { dims: sub_dims, periods: sub_periods };
        let handle = sub_grid_call(call, idx, color, key, topo);
        out.set(handle.map_err(|e| e.on(idx))?);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Cart_get`: the grid's dimensions, periodicity, and this process's coordinates.
    fn MPI_Cart_get / PMPI_Cart_get(comm: MPI_Comm, maxdims: c_int, dims: *mut c_int, periods: *mut c_int, coords: *mut c_int) |st| {
        let rt = st.runtime()?;
        let (idx, c) = rt.comms.lookup(comm)?;
        let run = || -> MpiResult<()> {
            let (d, p) = cart(c)?;
            if count(maxdims, "maxdims")? < d.len() {
                return Err(MpiError::arg(format!("maxdims is {maxdims} but the grid has {} dimensions", d.len())));
            }
            write_ints(dims, d, "dims")?;
            write_ints(periods, &p.iter().map(|&x| x as c_int).collect::<Vec<_>>(), "periods")?;
            write_ints(coords, &coords_of(d, c.rank as c_int), "coords")
        };
        run().map_err(|e| e.on(idx))
    }
}

mpi_fn! {
    /// `MPI_Cartdim_get`: the number of dimensions of the grid.
    fn MPI_Cartdim_get / PMPI_Cartdim_get(comm: MPI_Comm, ndims: *mut c_int) |st| {
        let rt = st.runtime()?;
        let (idx, c) = rt.comms.lookup(comm)?;
        let run = || -> MpiResult<()> {
            let (d, _) = cart(c)?;
            Out::new(ndims, "ndims")?.set(d.len() as c_int);
            Ok(())
        };
        run().map_err(|e| e.on(idx))
    }
}

mpi_fn! {
    /// `MPI_Cart_map`: the rank this process would have in such a grid (its own, or
    /// `MPI_UNDEFINED` beyond the grid).
    fn MPI_Cart_map / PMPI_Cart_map(comm: MPI_Comm, ndims: c_int, dims: *const c_int, periods: *const c_int, newrank: *mut c_int) |st| {
        let rt = st.runtime()?;
        let (idx, c) = rt.comms.lookup(comm)?;
        let run = || -> MpiResult<()> {
            let out = Out::new(newrank, "newrank")?;
            let (d, _) = read_grid(ndims, dims, periods)?;
            out.set(map_rank(c, d.iter().map(|&x| x as i64).product())?);
            Ok(())
        };
        run().map_err(|e| e.on(idx))
    }
}

mpi_fn! {
    /// `MPI_Dims_create`: fills the zero entries of `dims` with a balanced factorization of
    /// `nnodes`.
    fn MPI_Dims_create / PMPI_Dims_create(nnodes: c_int, ndims: c_int, dims: *mut c_int) |st| {
        st.runtime()?;
        let n = count(ndims, "ndims")?;
        let mut d = read_ints(dims, n, "dims")?;
        dims_create(nnodes, &mut d)?;
        write_ints(dims, &d, "dims")
    }
}

mpi_fn! {
    /// `MPI_Graph_create`: a communicator of the first `nnodes` processes with a graph topology.
    fn MPI_Graph_create / PMPI_Graph_create(
        comm_old: MPI_Comm,
        nnodes: c_int,
        index: *const c_int,
        edges: *const c_int,
        _reorder: c_int,
        comm_graph: *mut MPI_Comm,
    ) waits |call| {
        let rt = call.state().runtime()?;
        let idx = intra(rt, comm_old, "MPI_Graph_create")?;
        let checks = || -> MpiResult<_> {
            let out = Out::new(comm_graph, "comm_graph")?;
            let n = count(nnodes, "nnodes")?;
            let size = rt.comms.get(idx).size;
            if n > size {
                return Err(MpiError::arg(format!("the graph has {n} nodes but the communicator only {size} processes")));
            }
            let (index, edges) = read_graph(n, index, edges)?;
            Ok((out, n, index, edges))
        };
        let (out, n, index, edges) = checks().map_err(|e| e.on(idx))?;
        out.set(create_with_call(call, idx, n, Topology::Graph { index, edges }).map_err(|e| e.on(idx))?);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Graphdims_get`: the number of nodes and edges.
    fn MPI_Graphdims_get / PMPI_Graphdims_get(comm: MPI_Comm, nnodes: *mut c_int, nedges: *mut c_int) |st| {
        let rt = st.runtime()?;
        let (idx, c) = rt.comms.lookup(comm)?;
        let run = || -> MpiResult<()> {
            let (index, edges) = graph(c)?;
            Out::new(nnodes, "nnodes")?.set(index.len() as c_int);
            Out::new(nedges, "nedges")?.set(edges.len() as c_int);
            Ok(())
        };
        run().map_err(|e| e.on(idx))
    }
}

mpi_fn! {
    /// `MPI_Graph_get`: the graph's `index` and `edges` arrays.
    fn MPI_Graph_get / PMPI_Graph_get(comm: MPI_Comm, maxindex: c_int, maxedges: c_int, index: *mut c_int, edges: *mut c_int) |st| {
        let rt = st.runtime()?;
        let (idx, c) = rt.comms.lookup(comm)?;
        let run = || -> MpiResult<()> {
            let (i, e) = graph(c)?;
            let ni = count(maxindex, "maxindex")?.min(i.len());
            let ne = count(maxedges, "maxedges")?.min(e.len());
            write_ints(index, &i[..ni], "index")?;
            write_ints(edges, &e[..ne], "edges")
        };
        run().map_err(|e| e.on(idx))
    }
}

mpi_fn! {
    /// `MPI_Graph_neighbors_count`: the degree of `rank`.
    fn MPI_Graph_neighbors_count / PMPI_Graph_neighbors_count(comm: MPI_Comm, rank: c_int, nneighbors: *mut c_int) |st| {
        let rt = st.runtime()?;
        let (idx, c) = rt.comms.lookup(comm)?;
        let run = || -> MpiResult<()> {
            let (index, edges) = graph(c)?;
            let out = Out::new(nneighbors, "nneighbors")?;
            out.set(graph_neighbours(c, index, edges, rank)?.len() as c_int);
            Ok(())
        };
        run().map_err(|e| e.on(idx))
    }
}

mpi_fn! {
    /// `MPI_Graph_neighbors`: the neighbours of `rank` (at most `maxneighbors`).
    fn MPI_Graph_neighbors / PMPI_Graph_neighbors(comm: MPI_Comm, rank: c_int, maxneighbors: c_int, neighbors: *mut c_int) |st| {
        let rt = st.runtime()?;
        let (idx, c) = rt.comms.lookup(comm)?;
        let run = || -> MpiResult<()> {
            let (index, edges) = graph(c)?;
            let n = graph_neighbours(c, index, edges, rank)?;
            let max = count(maxneighbors, "maxneighbors")?.min(n.len());
            write_ints(neighbors, &n[..max], "neighbors")
        };
        run().map_err(|e| e.on(idx))
    }
}

mpi_fn! {
    /// `MPI_Graph_map`: the rank this process would have in such a graph.
    fn MPI_Graph_map / PMPI_Graph_map(comm: MPI_Comm, nnodes: c_int, index: *const c_int, edges: *const c_int, newrank: *mut c_int) |st| {
        let rt = st.runtime()?;
        let (idx, c) = rt.comms.lookup(comm)?;
        let run = || -> MpiResult<()> {
            let out = Out::new(newrank, "newrank")?;
            let n = count(nnodes, "nnodes")?;
            read_graph(n, index, edges)?;
            out.set(map_rank(c, n as i64)?);
            Ok(())
        };
        run().map_err(|e| e.on(idx))
    }
}

mpi_fn! {
    /// `MPI_Dist_graph_create_adjacent`: each process names its own in- and out-neighbours.
    fn MPI_Dist_graph_create_adjacent / PMPI_Dist_graph_create_adjacent(
        comm_old: MPI_Comm,
        indegree: c_int,
        sources: *const c_int,
        sourceweights: *const c_int,
        outdegree: c_int,
        destinations: *const c_int,
        destweights: *const c_int,
        info: MPI_Info,
        _reorder: c_int,
        comm_dist_graph: *mut MPI_Comm,
    ) waits |call| {
        let rt = call.state().runtime()?;
        let idx = intra(rt, comm_old, "MPI_Dist_graph_create_adjacent")?;
        let checks = || -> MpiResult<_> {
            let out = Out::new(comm_dist_graph, "comm_dist_graph")?;
            rt.infos.hints(info)?;
            let c = rt.comms.get(idx);
            let (s, sw) = read_neighbours(c, indegree, sources, sourceweights, "sources")?;
            let (d, dw) = read_neighbours(c, outdegree, destinations, destweights, "destinations")?;
            Ok((out, s, sw, d, dw))
        };
        let (out, s, sw, d, dw) = checks().map_err(|e| e.on(idx))?;
        let n = rt.comms.get(idx).size;
        out.set(create_with_call(call, idx, n, dist_topology(s, sw, d, dw)).map_err(|e| e.on(idx))?);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Dist_graph_create`: each process names any edges; everyone learns its own.
    fn MPI_Dist_graph_create / PMPI_Dist_graph_create(
        comm_old: MPI_Comm,
        n: c_int,
        sources: *const c_int,
        degrees: *const c_int,
        destinations: *const c_int,
        weights: *const c_int,
        info: MPI_Info,
        _reorder: c_int,
        comm_dist_graph: *mut MPI_Comm,
    ) waits |call| {
        let releases = call.releases();
        let rt = call.state().runtime()?;
        let idx = intra(rt, comm_old, "MPI_Dist_graph_create")?;
        let checks = || -> MpiResult<_> {
            let out = Out::new(comm_dist_graph, "comm_dist_graph")?;
            rt.infos.hints(info)?;
            let c = rt.comms.get(idx);
            let (src, _) = read_neighbours(c, n, sources, MPI_UNWEIGHTED.0, "sources")?;
            let deg = read_ints(degrees, src.len(), "degrees")?;
            if let Some(&bad) = deg.iter().find(|&&d| d < 0) {
                return Err(MpiError::arg(format!("degrees has the negative entry {bad}")));
            }
            let total: c_int = deg.iter().sum();
            let (dst, w) = read_neighbours(c, total, destinations, weights, "destinations")?;
            // (source, destination, weight) of each edge.
            let mut edges = Vec::with_capacity(dst.len() * 3);
            let mut k = 0;
            for (s, d) in src.iter().zip(&deg) {
                for _ in 0..*d {
                    edges.extend([*s, dst[k], w.as_ref().map_or(1, |w| w[k])]);
                    k += 1;
                }
            }
            Ok((out, edges, w.is_some()))
        };
        let (out, edges, weighted) = checks().map_err(|e| e.on(idx))?;
        let made = if releases {
            from_edges(call, idx, &edges, weighted)
        } else {
            from_edges(&mut rt.comm(), idx, &edges, weighted)
        };
        out.set(made.map_err(|e| e.on(idx))?);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Dist_graph_neighbors_count`: this process's in- and out-degree, and whether the
    /// graph is weighted.
    fn MPI_Dist_graph_neighbors_count / PMPI_Dist_graph_neighbors_count(comm: MPI_Comm, indegree: *mut c_int, outdegree: *mut c_int, weighted: *mut c_int) |st| {
        let rt = st.runtime()?;
        let (idx, c) = rt.comms.lookup(comm)?;
        let run = || -> MpiResult<()> {
            let Topology::DistGraph { sources, dests, weighted: w, .. } = dist(c)? else { unreachable!("dist checked the kind") };
            Out::new(indegree, "indegree")?.set(sources.len() as c_int);
            Out::new(outdegree, "outdegree")?.set(dests.len() as c_int);
            Out::new(weighted, "weighted")?.set(*w as c_int);
            Ok(())
        };
        run().map_err(|e| e.on(idx))
    }
}

mpi_fn! {
    /// `MPI_Dist_graph_neighbors`: this process's in- and out-neighbours (and weights).
    fn MPI_Dist_graph_neighbors / PMPI_Dist_graph_neighbors(
        comm: MPI_Comm,
        maxindegree: c_int,
        sources: *mut c_int,
        sourceweights: *mut c_int,
        maxoutdegree: c_int,
        destinations: *mut c_int,
        destweights: *mut c_int,
    ) |st| {
        let rt = st.runtime()?;
        let (idx, c) = rt.comms.lookup(comm)?;
        let run = || -> MpiResult<()> {
            let Topology::DistGraph { sources: s, source_weights: sw, dests: d, dest_weights: dw, weighted } = dist(c)? else {
                unreachable!("dist checked the kind")
            };
            let ni = count(maxindegree, "maxindegree")?.min(s.len());
            let no = count(maxoutdegree, "maxoutdegree")?.min(d.len());
            write_ints(sources, &s[..ni], "sources")?;
            write_ints(destinations, &d[..no], "destinations")?;
            if *weighted {
                if !is_unweighted(sourceweights) {
                    write_ints(sourceweights, &sw[..ni], "sourceweights")?;
                }
                if !is_unweighted(destweights) {
                    write_ints(destweights, &dw[..no], "destweights")?;
                }
            }
            Ok(())
        };
        run().map_err(|e| e.on(idx))
    }
}

mpi_fn! {
    /// `MPI_Topo_test`: `MPI_CART`, `MPI_GRAPH`, `MPI_DIST_GRAPH` or `MPI_UNDEFINED`.
    fn MPI_Topo_test / PMPI_Topo_test(comm: MPI_Comm, status: *mut c_int) |st| {
        let rt = st.runtime()?;
        let (idx, c) = rt.comms.lookup(comm)?;
        let kind = match c.topo.as_deref() {
            Some(Topology::Cart { .. }) => MPI_CART,
            Some(Topology::Graph { .. }) => MPI_GRAPH,
            Some(Topology::DistGraph { .. }) => MPI_DIST_GRAPH,
            None => MPI_UNDEFINED,
        };
        Out::new(status, "status").map_err(|e| e.on(idx))?.set(kind);
        Ok(())
    }
}
