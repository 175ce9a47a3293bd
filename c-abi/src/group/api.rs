//! The C entry points of groups: `MPI_Comm_group`, `MPI_Group_size`, `MPI_Group_rank`,
//! `MPI_Group_incl`/`excl`/`range_incl`/`range_excl`, `MPI_Group_union`,
//! `MPI_Group_intersection`, `MPI_Group_difference`, `MPI_Group_translate_ranks`,
//! `MPI_Group_compare`, `MPI_Group_free`.

use super::{count, distinct_ranks, expand_ranges, rank_in, read_ranges, Group, GroupTable};
use crate::abi::*;
use crate::cptr::{Array, Out};
use crate::error::MpiResult;
use crate::runtime::export::mpi_fn;
use crate::runtime::Runtime;
use std::ffi::c_int;

/// Stores a new group and writes its handle.
fn give(groups: &mut GroupTable, g: Group, out: Out<MPI_Group>) -> MpiResult<()> {
    out.set(groups.insert(g)?);
    Ok(())
}

mpi_fn! {
    /// `MPI_Comm_group`: the (local) group of `comm`.
    fn MPI_Comm_group / PMPI_Comm_group(comm: MPI_Comm, group: *mut MPI_Group) |st| {
        let rt = st.runtime()?;
        let (idx, c) = rt.comms.lookup(comm)?;
        let out = Out::new(group, "group").map_err(|e| e.on(idx))?;
        let g = c.group();
        give(&mut rt.groups, g, out)?;
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Group_size`.
    fn MPI_Group_size / PMPI_Group_size(group: MPI_Group, size: *mut c_int) |st| {
        let rt = st.runtime()?;
        let g = rt.groups.get(group)?;
        Out::new(size, "size")?.set(g.size() as c_int);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Group_rank`: this process's rank in `group`, or `MPI_UNDEFINED`.
    fn MPI_Group_rank / PMPI_Group_rank(group: MPI_Group, rank: *mut c_int) |st| {
        let rt = st.runtime()?;
        let me = rt.engine.p2p_ref().rank();
        let g = rt.groups.get(group)?;
        Out::new(rank, "rank")?.set(g.local(me).map_or(MPI_UNDEFINED, |r| r as c_int));
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Group_incl`: the members at `ranks`, in that order.
    fn MPI_Group_incl / PMPI_Group_incl(group: MPI_Group, n: c_int, ranks: *const c_int, newgroup: *mut MPI_Group) |st| {
        let rt = st.runtime()?;
        let g = rt.groups.get(group)?.clone();
        let out = Out::new(newgroup, "newgroup")?;
        let picked = distinct_ranks(&Array::new(ranks.cast_mut(), count(n)?, "ranks")?, g.size())?;
        give(&mut rt.groups, g.pick(&picked), out)?;
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Group_excl`: the members not at `ranks`, in group order.
    fn MPI_Group_excl / PMPI_Group_excl(group: MPI_Group, n: c_int, ranks: *const c_int, newgroup: *mut MPI_Group) |st| {
        let rt = st.runtime()?;
        let g = rt.groups.get(group)?.clone();
        let out = Out::new(newgroup, "newgroup")?;
        let excluded = distinct_ranks(&Array::new(ranks.cast_mut(), count(n)?, "ranks")?, g.size())?;
        give(&mut rt.groups, g.without(&excluded), out)?;
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Group_range_incl`: the members of the `(first, last, stride)` ranges, in order.
    fn MPI_Group_range_incl / PMPI_Group_range_incl(group: MPI_Group, n: c_int, ranges: *mut [c_int; 3], newgroup: *mut MPI_Group) |st| {
        let rt = st.runtime()?;
        let g = rt.groups.get(group)?.clone();
        let out = Out::new(newgroup, "newgroup")?;
        let picked = expand_ranges(&read_ranges(ranges, n)?, g.size())?;
        give(&mut rt.groups, g.pick(&picked), out)?;
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Group_range_excl`: the members outside the ranges, in group order.
    fn MPI_Group_range_excl / PMPI_Group_range_excl(group: MPI_Group, n: c_int, ranges: *mut [c_int; 3], newgroup: *mut MPI_Group) |st| {
        let rt = st.runtime()?;
        let g = rt.groups.get(group)?.clone();
        let out = Out::new(newgroup, "newgroup")?;
        let excluded = expand_ranges(&read_ranges(ranges, n)?, g.size())?;
        give(&mut rt.groups, g.without(&excluded), out)?;
        Ok(())
    }
}

/// The two groups of a binary group operation.
fn pair(rt: &Runtime, a: MPI_Group, b: MPI_Group) -> MpiResult<(Group, Group)> {
    Ok((rt.groups.get(a)?.clone(), rt.groups.get(b)?.clone()))
}

mpi_fn! {
    /// `MPI_Group_union`: `group1`'s members, then `group2`'s others.
    fn MPI_Group_union / PMPI_Group_union(group1: MPI_Group, group2: MPI_Group, newgroup: *mut MPI_Group) |st| {
        let rt = st.runtime()?;
        let (a, b) = pair(rt, group1, group2)?;
        let out = Out::new(newgroup, "newgroup")?;
        give(&mut rt.groups, a.union(&b), out)?;
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Group_intersection`: `group1`'s members that are in `group2`, in `group1`'s order.
    fn MPI_Group_intersection / PMPI_Group_intersection(group1: MPI_Group, group2: MPI_Group, newgroup: *mut MPI_Group) |st| {
        let rt = st.runtime()?;
        let (a, b) = pair(rt, group1, group2)?;
        let out = Out::new(newgroup, "newgroup")?;
        give(&mut rt.groups, a.filter(&b, true), out)?;
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Group_difference`: `group1`'s members that are not in `group2`.
    fn MPI_Group_difference / PMPI_Group_difference(group1: MPI_Group, group2: MPI_Group, newgroup: *mut MPI_Group) |st| {
        let rt = st.runtime()?;
        let (a, b) = pair(rt, group1, group2)?;
        let out = Out::new(newgroup, "newgroup")?;
        give(&mut rt.groups, a.filter(&b, false), out)?;
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Group_translate_ranks`: the rank in `group2` of each of `ranks1` in `group1`
    /// (`MPI_UNDEFINED` if absent; `MPI_PROC_NULL` stays `MPI_PROC_NULL`).
    fn MPI_Group_translate_ranks / PMPI_Group_translate_ranks(
        group1: MPI_Group,
        n: c_int,
        ranks1: *const c_int,
        group2: MPI_Group,
        ranks2: *mut c_int,
    ) |st| {
        let rt = st.runtime()?;
        let (a, b) = pair(rt, group1, group2)?;
        let n = count(n)?;
        let input = Array::new(ranks1.cast_mut(), n, "ranks1")?;
        let output = Array::new(ranks2, n, "ranks2")?;
        let mut result = Vec::with_capacity(n);
        for i in 0..n {
            let r = input.get(i);
            result.push(if r == MPI_PROC_NULL {
                MPI_PROC_NULL
            } else {
                let g = a.global(rank_in(r, a.size())?);
                b.local(g).map_or(MPI_UNDEFINED, |x| x as c_int)
            });
        }
        for (i, r) in result.into_iter().enumerate() {
            output.set(i, r);
        }
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Group_compare`: `MPI_IDENT`, `MPI_SIMILAR` or `MPI_UNEQUAL`.
    fn MPI_Group_compare / PMPI_Group_compare(group1: MPI_Group, group2: MPI_Group, result: *mut c_int) |st| {
        let rt = st.runtime()?;
        let (a, b) = pair(rt, group1, group2)?;
        Out::new(result, "result")?.set(a.compare(&b));
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Group_free`: releases the handle and sets it to `MPI_GROUP_NULL`.
    fn MPI_Group_free / PMPI_Group_free(group: *mut MPI_Group) |st| {
        let rt = st.runtime()?;
        let h = Out::new(group, "group")?;
        rt.groups.free(h.get())?;
        h.set(MPI_GROUP_NULL);
        Ok(())
    }
}
