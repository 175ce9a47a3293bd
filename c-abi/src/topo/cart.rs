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

/// `MPI_Dims_create`: the free (zero) entries of `dims` get factors of
/// `nnodes / (product of the others)`, as close to each other as possible (MPI 3.1 §7.5.2),
/// in non-increasing order. `MPI_ERR_DIMS` if the given entries do not divide `nnodes` or one
/// is negative.
///
/// "As close as possible" is [`balanced`]'s order, which gives what MPICH gives for every
/// `nnodes` up to 3000 in 1 to 6 dimensions (72 in two dimensions is 9 x 8, not 12 x 6).
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
    let sizes = balanced(nnodes as u64 / fixed as u64, free.len());
    for (slot, size) in free.into_iter().zip(sizes) {
        dims[slot] = size as c_int;
    }
    Ok(())
}

/// The most balanced way to write `n` as a product of `k` factors, largest first: the
/// smallest difference between the largest and the smallest factor, then the smallest sum
/// of factors, then the lexicographically largest list (360 in three dimensions: 10 x 6 x 6
/// before 9 x 8 x 5, whose spread and sum are the same).
///
/// A depth-first search over the divisors of `n`, the first factor taken from `n`'s k-th
/// root upwards (balanced lists are found first), abandoning a partial list whose spread
/// already exceeds the best's: fast for any `int` `n` and any `k`.
fn balanced(n: u64, k: usize) -> Vec<u64> {
    let mut divisors: Vec<u64> = (1..)
        .take_while(|d| d * d <= n)
        .filter(|&d| n.is_multiple_of(d))
        .flat_map(|d| [d, n / d])
        .collect();
    divisors.sort_unstable();
    divisors.dedup();
    let mut search = Search {
        divisors,
        best: None,
        list: Vec::with_capacity(k),
    };
    search.extend(n, k);
    search
        .best
        .expect("n = n x 1 x ... x 1 is always a candidate")
        .2
}

/// The state of [`balanced`]'s search: the best list so far with its spread and sum, and
/// the partial list being extended.
struct Search {
    divisors: Vec<u64>,
    best: Option<(u64, u64, Vec<u64>)>,
    list: Vec<u64>,
}

impl Search {
    /// Extends the partial list with `k` more factors whose product is `rest`, each at most
    /// the list's last.
    fn extend(&mut self, rest: u64, k: usize) {
        if k == 0 {
            if rest == 1 {
                self.offer();
            }
            return;
        }
        let cap = self.list.last().copied().unwrap_or(rest).min(rest);
        // The factors left are at most `cap`, so the next one is at least rest's k-th root.
        let floor = root_ceil(rest, k);
        let first = self.divisors.partition_point(|&d| d < floor);
        for i in first..self.divisors.len() {
            let d = self.divisors[i];
            if d > cap {
                break;
            }
            if !rest.is_multiple_of(d) {
                continue;
            }
            // The list's largest factor is its first; its smallest is at most d, and at most
            // the (k-1)-th root of what is left after d.
            let largest = self.list.first().copied().unwrap_or(d);
            let smallest_bound = if k > 1 {
                d.min(root_floor(rest / d, k - 1))
            } else {
                d
            };
            if let Some((spread, _, _)) = &self.best {
                if largest - smallest_bound > *spread {
                    if self.list.is_empty() {
                        // A larger first factor only widens the spread further.
                        break;
                    }
                    continue;
                }
            }
            self.list.push(d);
            self.extend(rest / d, k - 1);
            self.list.pop();
        }
    }

    /// Keeps the complete list if it is better than the best so far.
    fn offer(&mut self) {
        let spread = self.list[0] - self.list[self.list.len() - 1];
        let sum: u64 = self.list.iter().sum();
        let better = match &self.best {
            None => true,
            Some((s, t, l)) => {
                (spread, sum) < (*s, *t) || ((spread, sum) == (*s, *t) && self.list > *l)
            }
        };
        if better {
            self.best = Some((spread, sum, self.list.clone()));
        }
    }
}

/// The smallest `r` with `r^k >= n`.
fn root_ceil(n: u64, k: usize) -> u64 {
    let r = root_floor(n, k);
    if pow_at_least(r, k, n) {
        r
    } else {
        r + 1
    }
}

/// The largest `r` with `r^k <= n` (`n >= 1`).
fn root_floor(n: u64, k: usize) -> u64 {
    let mut r = (n as f64).powf(1.0 / k as f64).round() as u64;
    while r > 1 && !pow_at_most(r, k, n) {
        r -= 1;
    }
    while pow_at_most(r + 1, k, n) {
        r += 1;
    }
    r.max(1)
}

fn pow_at_most(r: u64, k: usize, n: u64) -> bool {
    (0..k)
        .try_fold(1u64, |p, _| p.checked_mul(r).filter(|&p| p <= n))
        .is_some()
}

fn pow_at_least(r: u64, k: usize, n: u64) -> bool {
    !pow_at_most(r, k, n.saturating_sub(1)) || n == 0
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

/// [`sub_grid`] for the blocking call `call` (`MPI_Cart_sub`): its exchanges in waits that let
/// the lock go when the call's waits do.
pub(crate) fn sub_grid_call(
    call: &mut crate::runtime::thread::Calling,
    parent: CommIdx,
    color: c_int,
    key: c_int,
    topo: Topology,
) -> MpiResult<MPI_Comm> {
    let Topology::Cart { dims, .. } = &topo else {
        unreachable!("a sub-grid is a grid")
    };
    if !call.releases() {
        return sub_grid(
            &mut call.state().runtime()?.comm(),
            parent,
            color,
            key,
            topo,
        );
    }
    if dims.is_empty() {
        return super::create::create_with_call(call, parent, 1, topo);
    }
    let h = crate::comm::waiting::split_waiting(call, parent, color, key)?;
    if let Ok(new) = call.state().runtime()?.comms.lookup_mut(h) {
        new.topo = Some(Rc::new(topo));
    }
    Ok(h)
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

    /// Every non-increasing list of `k` factors of `n` (plain enumeration, no pruning).
    fn every_factorization(n: u64, k: usize, cap: u64) -> Vec<Vec<u64>> {
        if k == 0 {
            return if n == 1 { vec![vec![]] } else { vec![] };
        }
        (1..=cap.min(n))
            .filter(|&d| n.is_multiple_of(d))
            .flat_map(|d| {
                every_factorization(n / d, k - 1, d)
                    .into_iter()
                    .map(move |mut rest| {
                        rest.insert(0, d);
                        rest
                    })
            })
            .collect()
    }

    #[test]
    fn dims_are_the_most_balanced_factorization_up_to_3000_in_1_to_6_dimensions() {
        for k in 1..=6 {
            for n in 1..=3000u64 {
                let best = every_factorization(n, k, n)
                    .into_iter()
                    .min_by(|a, b| {
                        let key = |l: &Vec<u64>| (l[0] - l[k - 1], l.iter().sum::<u64>());
                        key(a).cmp(&key(b)).then(b.cmp(a))
                    })
                    .unwrap();
                assert_eq!(balanced(n, k), best, "{n} in {k} dimensions");
            }
        }
    }

    #[test]
    fn dims_match_mpich_where_greedy_splitting_does_not() {
        // MPICH 4.0.2's answers (Open MPI 4.1 gives 12 x 6, 18 x 10, 20 x 12).
        assert_eq!(dims(72, vec![0, 0]), vec![9, 8]);
        assert_eq!(dims(180, vec![0, 0]), vec![15, 12]);
        assert_eq!(dims(240, vec![0, 0]), vec![16, 15]);
        assert_eq!(dims(360, vec![0, 0, 0]), vec![10, 6, 6]);
        assert_eq!(dims(20, vec![0, 0, 0, 0]), vec![5, 2, 2, 1]);
        assert_eq!(dims(2147483647, vec![0, 0]), vec![2147483647, 1]);
        assert_eq!(dims(1 << 30, vec![0; 30]), vec![2; 30]);
        assert_eq!(
            dims(720720, vec![0, 0, 0, 0, 0, 0])
                .iter()
                .product::<c_int>(),
            720720
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
