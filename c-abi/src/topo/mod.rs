//! Virtual topologies: cartesian grids, graphs and distributed graphs attached to
//! communicators (`MPI_Cart_create`, `MPI_Cart_coords`, `MPI_Cart_rank`, `MPI_Cart_shift`,
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

use crate::abi::*;
use crate::comm::context::{Net, TAG_ALLGATHER};
use crate::comm::{require_intra, Comm, CommIdx};
use crate::cptr::{Array, Out};
use crate::error::{MpiError, MpiResult};
use crate::runtime::export::mpi_fn;
use crate::group::GroupData;
use crate::runtime::Runtime;
use std::ffi::c_int;
use std::rc::Rc;

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

fn is_unweighted(p: *const c_int) -> bool {
    std::ptr::eq(p, MPI_UNWEIGHTED.0)
}

fn is_weights_empty(p: *const c_int) -> bool {
    std::ptr::eq(p, MPI_WEIGHTS_EMPTY.0)
}

// ---- Small helpers ----

fn count(n: c_int, what: &str) -> MpiResult<usize> {
    usize::try_from(n).map_err(|_| MpiError::arg(format!("{what} is {n}; it must be >= 0")))
}

/// Reads `n` ints of an input array.
fn read_ints(p: *const c_int, n: usize, what: &'static str) -> MpiResult<Vec<c_int>> {
    let a = Array::new(p.cast_mut(), n, what)?;
    Ok((0..n).map(|i| a.get(i)).collect())
}

/// Writes `values` into an output array of at least their length.
fn write_ints(p: *mut c_int, values: &[c_int], what: &'static str) -> MpiResult<()> {
    let a = Array::new(p, values.len(), what)?;
    for (i, &v) in values.iter().enumerate() {
        a.set(i, v);
    }
    Ok(())
}

fn not_cart(c: &Comm) -> MpiError {
    MpiError::new(
        MPI_ERR_TOPOLOGY,
        format!(
            "{} has no cartesian topology; make one with MPI_Cart_create",
            c.label()
        ),
    )
}

/// The grid of a cartesian communicator.
fn cart(c: &Comm) -> MpiResult<(&[c_int], &[bool])> {
    match c.topo.as_deref() {
        Some(Topology::Cart { dims, periods }) => Ok((dims, periods)),
        _ => Err(not_cart(c)),
    }
}

fn graph(c: &Comm) -> MpiResult<(&[c_int], &[c_int])> {
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

/// The coordinates of `rank` in a row-major grid.
pub(crate) fn coords_of(dims: &[c_int], mut rank: c_int) -> Vec<c_int> {
    let mut nnodes: c_int = dims.iter().product();
    dims.iter()
        .map(|&d| {
            nnodes /= d;
            let c = rank / nnodes;
            rank %= nnodes;
            c
        })
        .collect()
}

/// The rank at `coords` (periodic dimensions wrap; others must be in range: `MPI_ERR_ARG`).
pub(crate) fn rank_of(dims: &[c_int], periods: &[bool], coords: &[c_int]) -> MpiResult<c_int> {
    let mut rank = 0;
    for (i, (&d, &c)) in dims.iter().zip(coords).enumerate() {
        let c = if periods[i] {
            c.rem_euclid(d)
        } else if (0..d).contains(&c) {
            c
        } else {
            return Err(MpiError::arg(format!(
                "coordinate {c} of dimension {i} is outside 0..{d} and the dimension is not periodic"
            )));
        };
        rank = rank * d + c;
    }
    Ok(rank)
}

/// MPICH's balanced factorization: the free (zero) entries of `dims` get factors of
/// `nnodes / (product of the others)`, as close to each other as possible, in non-increasing
/// order. `MPI_ERR_DIMS` if the given entries do not divide `nnodes` or one is negative.
pub(crate) fn dims_create(nnodes: c_int, dims: &mut [c_int]) -> MpiResult<()> {
    if nnodes <= 0 {
        return Err(MpiError::arg(format!("nnodes is {nnodes}; it must be > 0")));
    }
    if let Some(&d) = dims.iter().find(|&&d| d < 0) {
        return Err(MpiError::new(
            MPI_ERR_DIMS,
            format!("dims has the negative entry {d}; use 0 for the entries to compute"),
        ));
    }
    let fixed: i64 = dims.iter().filter(|&&d| d > 0).map(|&d| d as i64).product();
    if nnodes as i64 % fixed != 0 {
        return Err(MpiError::new(
            MPI_ERR_DIMS,
            format!("the non-zero entries of dims multiply to {fixed}, which does not divide nnodes = {nnodes}"),
        ));
    }
    let free: Vec<usize> = (0..dims.len()).filter(|&i| dims[i] == 0).collect();
    if free.is_empty() {
        if fixed != nnodes as i64 {
            return Err(MpiError::new(
                MPI_ERR_DIMS,
                format!("dims multiplies to {fixed}, not nnodes = {nnodes}"),
            ));
        }
        return Ok(());
    }
    let mut rest = nnodes as i64 / fixed;
    // Prime factors, largest first, each to the currently smallest free dimension.
    let mut factors = Vec::new();
    let mut p = 2;
    while p * p <= rest {
        while rest % p == 0 {
            factors.push(p);
            rest /= p;
        }
        p += 1;
    }
    if rest > 1 {
        factors.push(rest);
    }
    factors.sort_unstable_by(|a, b| b.cmp(a));
    let mut sizes = vec![1i64; free.len()];
    for f in factors {
        let smallest = (0..sizes.len())
            .min_by_key(|&i| sizes[i])
            .expect("at least one free dimension");
        sizes[smallest] *= f;
    }
    sizes.sort_unstable_by(|a, b| b.cmp(a));
    for (slot, size) in free.into_iter().zip(sizes) {
        dims[slot] = size as c_int;
    }
    Ok(())
}

/// Creates the communicator of the first `n` processes of `parent` (the others get
/// `MPI_COMM_NULL`) with topology `topo`.
fn create_with(rt: &mut Runtime, parent: CommIdx, n: usize, topo: Topology) -> MpiResult<MPI_Comm> {
    let c = rt.comms.get(parent);
    let group =
        (c.rank < n).then(|| GroupData::new((0..n).map(|i| c.local_global(i) as u32).collect()));
    let made = crate::comm::create::create_from(rt, parent, group)?;
    Ok(match made {
        Some((idx, handle)) => {
            rt.comms.get_mut(idx).topo = Some(Rc::new(topo));
            handle
        }
        None => MPI_COMM_NULL,
    })
}

/// Looks up an intracommunicator for a topology call, and the output handle.
fn intra(rt: &Runtime, comm: MPI_Comm, what: &str) -> MpiResult<CommIdx> {
    let (idx, c) = rt.comms.lookup(comm)?;
    require_intra(c, what).map_err(|e| e.on(idx))?;
    Ok(idx)
}

/// Checks cartesian dimensions: `ndims >= 0`, every size positive.
fn read_grid(
    ndims: c_int,
    dims: *const c_int,
    periods: *const c_int,
) -> MpiResult<(Vec<c_int>, Vec<bool>)> {
    let n = count(ndims, "ndims")?;
    let d = read_ints(dims, n, "dims")?;
    if let Some((i, &bad)) = d.iter().enumerate().find(|(_, &x)| x <= 0) {
        return Err(MpiError::new(
            MPI_ERR_DIMS,
            format!("dims[{i}] is {bad}; every dimension must be > 0"),
        ));
    }
    let p = read_ints(periods, n, "periods")?
        .into_iter()
        .map(|x| x != 0)
        .collect();
    Ok((d, p))
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
    ) |st| {
        let rt = st.runtime()?;
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
        out.set(create_with(rt, idx, n, Topology::Cart { dims, periods }).map_err(|e| e.on(idx))?);
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
    fn MPI_Cart_sub / PMPI_Cart_sub(comm: MPI_Comm, remain_dims: *const c_int, newcomm: *mut MPI_Comm) |st| {
        let rt = st.runtime()?;
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
        let topo = Topology::Cart { dims: sub_dims.clone(), periods: sub_periods };
        let handle = if sub_dims.is_empty() {
            // MPI 2.1: a 0-dimensional grid, which only rank 0 is in.
            create_with(rt, idx, 1, topo)
        } else {
            crate::comm::create::split(rt, idx, color, key).inspect(|&h| {
                if let Ok(new) = rt.comms.lookup_mut(h) {
                    new.topo = Some(Rc::new(topo));
                }
            })
        };
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

/// The rank a mapping of `n` processes gives this process: its own, or `MPI_UNDEFINED`.
fn map_rank(c: &Comm, n: i64) -> MpiResult<c_int> {
    if n > c.size as i64 {
        return Err(MpiError::new(
            MPI_ERR_DIMS,
            format!(
                "the topology has {n} processes but {} only {}",
                c.label(),
                c.size
            ),
        ));
    }
    Ok(if (c.rank as i64) < n {
        c.rank as c_int
    } else {
        MPI_UNDEFINED
    })
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

/// Checks a graph (`index`, `edges` of `nnodes` nodes).
fn read_graph(
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

mpi_fn! {
    /// `MPI_Graph_create`: a communicator of the first `nnodes` processes with a graph topology.
    fn MPI_Graph_create / PMPI_Graph_create(
        comm_old: MPI_Comm,
        nnodes: c_int,
        index: *const c_int,
        edges: *const c_int,
        _reorder: c_int,
        comm_graph: *mut MPI_Comm,
    ) |st| {
        let rt = st.runtime()?;
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
        out.set(create_with(rt, idx, n, Topology::Graph { index, edges }).map_err(|e| e.on(idx))?);
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

/// The neighbours of `rank` in a graph.
fn graph_neighbours<'a>(
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

/// Reads a list of `n` ranks of `c` and its weights (`MPI_UNWEIGHTED`: none).
fn read_neighbours(
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

/// Builds the distributed-graph topology of a duplicate of `parent`.
fn dist_graph(
    rt: &mut Runtime,
    parent: CommIdx,
    sources: Vec<c_int>,
    sw: Option<Vec<c_int>>,
    dests: Vec<c_int>,
    dw: Option<Vec<c_int>>,
) -> MpiResult<MPI_Comm> {
    let weighted = sw.is_some() || dw.is_some();
    let topo = Topology::DistGraph {
        source_weights: sw.unwrap_or_else(|| vec![1; sources.len()]),
        dest_weights: dw.unwrap_or_else(|| vec![1; dests.len()]),
        sources,
        dests,
        weighted,
    };
    let n = rt.comms.get(parent).size;
    create_with(rt, parent, n, topo)
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
    ) |st| {
        let rt = st.runtime()?;
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
        out.set(dist_graph(rt, idx, s, sw, d, dw).map_err(|e| e.on(idx))?);
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
    ) |st| {
        let rt = st.runtime()?;
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
        let run = |rt: &mut Runtime| -> MpiResult<MPI_Comm> {
            let all = exchange_edges(rt, idx, &edges)?;
            let me = rt.comms.get(idx).rank as c_int;
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
            let (sw, dw) = if weighted { (Some(sw), Some(dw)) } else { (None, None) };
            dist_graph(rt, idx, s, sw, d, dw)
        };
        out.set(run(rt).map_err(|e| e.on(idx))?);
        Ok(())
    }
}

/// Everyone's edge triples, in rank order (two allgathers: the counts, then padded blocks).
fn exchange_edges(rt: &mut Runtime, idx: CommIdx, mine: &[c_int]) -> MpiResult<Vec<c_int>> {
    let net = Net::local(rt.comms.get(idx));
    let n = net.size();
    let mut counts = vec![0u8; 4 * n];
    net.allgather(
        &mut rt.engine,
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
    net.allgather(&mut rt.engine, &block, &mut all, TAG_ALLGATHER + 1)?;
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

fn dist(c: &Comm) -> MpiResult<&Topology> {
    match c.topo.as_deref() {
        Some(t @ Topology::DistGraph { .. }) => Ok(t),
        _ => Err(MpiError::new(
            MPI_ERR_TOPOLOGY,
            format!("{} has no distributed graph topology", c.label()),
        )),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn dims(n: c_int, mut d: Vec<c_int>) -> Vec<c_int> {
        dims_create(n, &mut d).unwrap();
        d
    }

    #[test]
    fn dims_are_balanced_like_mpich() {
        assert_eq!(dims(12, vec![0, 0]), vec![4, 3]);
        assert_eq!(dims(16, vec![0, 0, 0]), vec![4, 2, 2]);
        assert_eq!(dims(36, vec![0, 0]), vec![6, 6]);
        assert_eq!(dims(7, vec![0, 0]), vec![7, 1]);
        assert_eq!(dims(12, vec![0, 3, 0]), vec![2, 3, 2]);
        assert_eq!(dims(1, vec![0, 0]), vec![1, 1]);
        let mut bad = vec![5, 0];
        assert_eq!(dims_create(12, &mut bad).unwrap_err().class, MPI_ERR_DIMS);
        assert_eq!(
            dims_create(12, &mut [-1, 0]).unwrap_err().class,
            MPI_ERR_DIMS
        );
    }

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

    #[test]
    fn coordinates_round_trip_and_wrap() {
        let d = [2, 3, 4];
        let p = [true, false, true];
        for r in 0..24 {
            assert_eq!(rank_of(&d, &p, &coords_of(&d, r)).unwrap(), r);
        }
        assert_eq!(coords_of(&d, 23), vec![1, 2, 3]);
        assert_eq!(rank_of(&d, &p, &[-1, 0, 4]).unwrap(), 12);
        assert_eq!(rank_of(&d, &p, &[0, 3, 0]).unwrap_err().class, MPI_ERR_ARG);
    }
}
