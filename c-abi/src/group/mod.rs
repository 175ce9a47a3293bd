//! Process groups: the handle table and the group algebra (`MPI_Comm_group`, `MPI_Group_size`,
//! `MPI_Group_rank`, `MPI_Group_incl`/`excl`/`range_incl`/`range_excl`, `MPI_Group_union`,
//! `MPI_Group_intersection`, `MPI_Group_difference`, `MPI_Group_translate_ranks`,
//! `MPI_Group_compare`, `MPI_Group_free`).
//!
//! A group is an ordered list of engine (job) ranks: group rank `i` is engine rank `ranks[i]`.
//! It is immutable and shared (`Rc`): a communicator's members and the groups made from it
//! point to the same list, and the reverse map (engine rank -> group rank, which statuses
//! need) is built once with it. Handles are MPICH's: `0x88000000 | slot`, and the predefined
//! `MPI_GROUP_EMPTY`; a freed slot is reused.

use crate::abi::*;
use crate::handle::{Kind, Table};
use crate::cptr::{Array, Out};
use crate::error::{MpiError, MpiResult};
use crate::runtime::export::mpi_fn;
use std::collections::HashMap;
use std::ffi::c_int;
use std::rc::Rc;

/// An ordered set of engine ranks with its reverse map.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct GroupData {
    ranks: Vec<u32>,
    index: HashMap<u32, u32>,
}

/// A shared, immutable group.
pub(crate) type Group = Rc<GroupData>;

impl GroupData {
    /// The group of these engine ranks, in this order (they must be distinct).
    pub fn new(ranks: Vec<u32>) -> Group {
        let index = ranks
            .iter()
            .enumerate()
            .map(|(i, &g)| (g, i as u32))
            .collect();
        Rc::new(GroupData { ranks, index })
    }

    pub fn size(&self) -> usize {
        self.ranks.len()
    }

    /// The engine rank of group rank `i` (< size).
    #[inline(always)]
    pub fn global(&self, i: usize) -> usize {
        self.ranks[i] as usize
    }

    /// The group rank of engine rank `g`, if it is a member.
    #[inline(always)]
    pub fn local(&self, g: usize) -> Option<usize> {
        self.index.get(&(g as u32)).map(|&i| i as usize)
    }

    pub fn ranks(&self) -> &[u32] {
        &self.ranks
    }

    /// `MPI_IDENT`, `MPI_SIMILAR` or `MPI_UNEQUAL`.
    pub fn compare(&self, other: &GroupData) -> c_int {
        if self.ranks == other.ranks {
            MPI_IDENT
        } else if self.size() == other.size()
            && self.ranks.iter().all(|&g| other.index.contains_key(&g))
        {
            MPI_SIMILAR
        } else {
            MPI_UNEQUAL
        }
    }

    /// Members of `self` in its order, then those of `other` not in `self`.
    pub fn union(&self, other: &GroupData) -> Group {
        let mut ranks = self.ranks.clone();
        ranks.extend(other.ranks.iter().filter(|g| !self.index.contains_key(g)));
        GroupData::new(ranks)
    }

    /// Members of `self` (in its order) that are (`keep_common`) or are not in `other`.
    pub fn filter(&self, other: &GroupData, keep_common: bool) -> Group {
        let ranks = self
            .ranks
            .iter()
            .copied()
            .filter(|g| other.index.contains_key(g) == keep_common)
            .collect();
        GroupData::new(ranks)
    }

    /// The members at group ranks `picked` (checked: valid and distinct), in that order.
    pub fn pick(&self, picked: &[usize]) -> Group {
        GroupData::new(picked.iter().map(|&i| self.ranks[i]).collect())
    }

    /// The members not at group ranks `excluded` (checked), in group order.
    pub fn without(&self, excluded: &[usize]) -> Group {
        let mut drop = vec![false; self.size()];
        for &i in excluded {
            drop[i] = true;
        }
        let ranks = self
            .ranks
            .iter()
            .zip(&drop)
            .filter(|(_, &d)| !d)
            .map(|(&g, _)| g)
            .collect();
        GroupData::new(ranks)
    }
}

/// Every group handle of the process.
pub(crate) struct GroupTable {
    table: Table<Group>,
    empty: Group,
}

impl GroupTable {
    pub fn new() -> GroupTable {
        GroupTable { table: Table::new(Kind::Group), empty: GroupData::new(Vec::new()) }
    }

    /// The group a handle names: `MPI_ERR_GROUP` unless it is a live group.
    pub fn get(&self, handle: MPI_Group) -> MpiResult<&Group> {
        if handle == MPI_GROUP_EMPTY {
            return Ok(&self.empty);
        }
        self.table.get(handle).ok_or_else(|| invalid_group(handle))
    }

    /// A new handle for `g` (`MPI_GROUP_EMPTY` for an empty group, as MPICH does).
    pub fn insert(&mut self, g: Group) -> MpiResult<MPI_Group> {
        if g.size() == 0 {
            return Ok(MPI_GROUP_EMPTY);
        }
        self.table.insert(g).map(|(_, h)| h).ok_or_else(|| MpiError::new(MPI_ERR_INTERN, "too many groups exist at once; free some with MPI_Group_free"))
    }

    /// Frees a handle (`MPI_GROUP_EMPTY` is predefined: freeing it only clears the variable).
    pub fn free(&mut self, handle: MPI_Group) -> MpiResult<()> {
        self.get(handle)?;
        if handle != MPI_GROUP_EMPTY {
            self.table.remove(handle);
        }
        Ok(())
    }
}

#[cold]
fn invalid_group(handle: MPI_Group) -> MpiError {
    let detail = if handle == MPI_GROUP_NULL {
        "the group is MPI_GROUP_NULL".to_string()
    } else {
        format!("0x{handle:08x} is not a group (or it was freed); get one from MPI_Comm_group")
    };
    MpiError::new(MPI_ERR_GROUP, detail)
}

/// A group rank argument: `MPI_ERR_RANK` unless `0 <= r < size`.
fn rank_in(r: c_int, size: usize) -> MpiResult<usize> {
    if r >= 0 && (r as usize) < size {
        Ok(r as usize)
    } else {
        Err(MpiError::new(
            MPI_ERR_RANK,
            format!("rank {r} is not in the group (valid: 0..{size})"),
        ))
    }
}

/// Checks `n` distinct valid ranks of a group of `size`.
fn distinct_ranks(ranks: &Array<c_int>, size: usize) -> MpiResult<Vec<usize>> {
    let mut seen = vec![false; size];
    let mut out = Vec::with_capacity(ranks.len());
    for i in 0..ranks.len() {
        let r = rank_in(ranks.get(i), size)?;
        if std::mem::replace(&mut seen[r], true) {
            return Err(MpiError::new(
                MPI_ERR_RANK,
                format!("rank {r} appears twice in the ranks array; each rank may be listed once"),
            ));
        }
        out.push(r);
    }
    Ok(out)
}

/// Expands `(first, last, stride)` triplets into distinct valid ranks. Every fault of a range
/// is `MPI_ERR_ARG`, as MPICH reports it.
fn expand_ranges(ranges: &[[c_int; 3]], size: usize) -> MpiResult<Vec<usize>> {
    let mut seen = vec![false; size];
    let mut out = Vec::new();
    for &[first, last, stride] in ranges {
        let bad =
            |why: String| MpiError::arg(format!("the range ({first}, {last}, {stride}) {why}"));
        if first < 0 || first as usize >= size {
            return Err(bad(format!("starts outside the group of {size}")));
        }
        if stride == 0 {
            return Err(bad("has stride 0".into()));
        }
        let (first, last, stride) = (first as i64, last as i64, stride as i64);
        let actual_last = first + stride * ((last - first) / stride);
        if last < 0 || actual_last >= size as i64 {
            return Err(bad(format!("ends outside the group of {size}")));
        }
        if (stride > 0 && first > last) || (stride < 0 && first < last) {
            return Err(bad("never reaches its last rank".into()));
        }
        let mut r = first;
        while (stride > 0 && r <= last) || (stride < 0 && r >= last) {
            let i = r as usize;
            if std::mem::replace(&mut seen[i], true) {
                return Err(MpiError::arg(format!(
                    "rank {i} is in more than one range; each rank may be named once"
                )));
            }
            out.push(i);
            r += stride;
        }
    }
    Ok(out)
}

/// Reads the caller's `ranges[n][3]`.
fn read_ranges(ranges: *mut [c_int; 3], n: c_int) -> MpiResult<Vec<[c_int; 3]>> {
    let n = count(n)?;
    let a = Array::new(ranges, n, "ranges")?;
    Ok((0..n).map(|i| a.get(i)).collect())
}

fn count(n: c_int) -> MpiResult<usize> {
    usize::try_from(n).map_err(|_| MpiError::arg(format!("n is {n}; it must be >= 0")))
}

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
fn pair(rt: &crate::runtime::Runtime, a: MPI_Group, b: MPI_Group) -> MpiResult<(Group, Group)> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn algebra() {
        let a = GroupData::new(vec![0, 1, 2, 3]);
        let b = GroupData::new(vec![3, 1, 5]);
        assert_eq!(a.union(&b).ranks(), &[0, 1, 2, 3, 5]);
        assert_eq!(a.filter(&b, true).ranks(), &[1, 3]);
        assert_eq!(a.filter(&b, false).ranks(), &[0, 2]);
        assert_eq!(a.pick(&[2, 0]).ranks(), &[2, 0]);
        assert_eq!(a.without(&[2, 0]).ranks(), &[1, 3]);
        assert_eq!(a.compare(&GroupData::new(vec![3, 2, 1, 0])), MPI_SIMILAR);
        assert_eq!(a.compare(&a.pick(&[0, 1, 2, 3])), MPI_IDENT);
        assert_eq!(a.compare(&b), MPI_UNEQUAL);
        assert_eq!(b.local(5), Some(2));
        assert_eq!(
            expand_ranges(&[[0, 6, 3], [7, 4, -3]], 8).unwrap(),
            vec![0, 3, 6, 7, 4]
        );
        assert_eq!(
            expand_ranges(&[[0, 6, 3], [6, 5, -1]], 8)
                .unwrap_err()
                .class,
            MPI_ERR_ARG
        );
    }
}
