//! Process groups: the handle table and the group algebra (their calls, in `api`: `MPI_Comm_group`, `MPI_Group_size`,
//! `MPI_Group_rank`, `MPI_Group_incl`/`excl`/`range_incl`/`range_excl`, `MPI_Group_union`,
//! `MPI_Group_intersection`, `MPI_Group_difference`, `MPI_Group_translate_ranks`,
//! `MPI_Group_compare`, `MPI_Group_free`).
//!
//! A group is an ordered list of engine (job) ranks: group rank `i` is engine rank `ranks[i]`.
//! It is immutable and shared (`Rc`): a communicator's members and the groups made from it
//! point to the same list, and the reverse map (engine rank -> group rank, which statuses
//! need) is built once with it. Handles are MPICH's: `0x88000000 | slot`, and the predefined
//! `MPI_GROUP_EMPTY`; a freed slot is reused.
//!
//! **Owns** the group table ([`GroupTable`]) and the group algebra ([`GroupData`]), which
//! communicators and topologies use. **Entry:** the table and the algebra; the C functions are
//! in `api`.

mod api;

use crate::abi::*;
use crate::cptr::Array;
use crate::error::{MpiError, MpiResult};
use crate::handle::{Kind, Table};
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
        GroupTable {
            table: Table::new(Kind::Group),
            empty: GroupData::new(Vec::new()),
        }
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
        self.table.insert(g).map(|(_, h)| h).ok_or_else(|| {
            MpiError::new(
                MPI_ERR_INTERN,
                "too many groups exist at once; free some with MPI_Group_free",
            )
        })
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
