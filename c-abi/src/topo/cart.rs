//! Cartesian grids: coordinates and ranks in a row-major grid, MPICH's balanced
//! `MPI_Dims_create`, and the sub-grids of `MPI_Cart_sub`.

use super::create::create_with;
use super::{count, read_ints, Topology};
use crate::abi::*;
use crate::comm::make::Cx;
use crate::comm::{Comm, CommIdx};
use crate::error::{MpiError, MpiResult};
use std::ffi::c_int;
use std::rc::Rc;

pub(crate) fn not_cart(c: &Comm) -> MpiError {
    MpiError::new(
        MPI_ERR_TOPOLOGY,
        format!(
            "{} has no cartesian topology; make one with MPI_Cart_create",
            c.label()
        ),
    )
}

/// The grid of a cartesian communicator.
pub(crate) fn cart(c: &Comm) -> MpiResult<(&[c_int], &[bool])> {
    match c.topo.as_deref() {
        Some(Topology::Cart { dims, periods }) => Ok((dims, periods)),
        _ => Err(not_cart(c)),
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

/// Checks cartesian dimensions: `ndims >= 0`, every size positive.
pub(crate) fn read_grid(
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

/// The rank a mapping of `n` processes gives this process: its own, or `MPI_UNDEFINED`.
/// `MPI_Cart_sub`'s collective part: the sub-grid this process is in (`color`: its
/// coordinates in the dropped dimensions, `key`: in the kept ones), with topology `topo`.
pub(crate) fn sub_grid(
    cx: &mut Cx<'_>,
    parent: CommIdx,
    color: c_int,
    key: c_int,
    topo: Topology,
) -> MpiResult<MPI_Comm> {
    let Topology::Cart { dims, .. } = &topo else {
        unreachable!("a sub-grid is a grid")
    };
    if dims.is_empty() {
        // MPI 2.1: a 0-dimensional grid, which only rank 0 is in.
        return create_with(cx, parent, 1, topo);
    }
    crate::comm::create::split(cx, parent, color, key).inspect(|&h| {
        if let Ok(new) = cx.comms.lookup_mut(h) {
            new.topo = Some(Rc::new(topo));
        }
    })
}

pub(crate) fn map_rank(c: &Comm, n: i64) -> MpiResult<c_int> {
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
