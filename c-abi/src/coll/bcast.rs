//! Barrier and broadcast.
//!
//! * Barrier: dissemination. In round `k` each rank sends an empty message to `rank + 2^k`
//!   and receives one from `rank - 2^k` (mod size): after `ceil(log2(size))` rounds every rank
//!   has heard, directly or not, from all.
//! * Broadcast (as MPICH): a binomial tree for short messages or fewer than 8 ranks; for long
//!   messages a binomial scatter of the data followed by a ring allgather (van de Geijn), which
//!   moves about `2 * bytes` per rank instead of `log2(size) * bytes` at the root.

use super::buf::Layout;
use super::sched::Builder;

/// Below this many bytes (or under [`BCAST_MIN_PROCS`] ranks) the broadcast is a binomial tree.
const BCAST_SHORT: usize = 12288;
const BCAST_MIN_PROCS: usize = 8;

pub(crate) fn barrier(b: &mut Builder) {
    let (n, r) = (b.size, b.rank);
    let mut dist = 1;
    let mut step = 0;
    while dist < n {
        b.send((r + dist) % n, step, std::ptr::null(), 0, &Layout::BYTES);
        b.recv(
            (r + n - dist) % n,
            step,
            std::ptr::null_mut(),
            0,
            &Layout::BYTES,
        );
        b.fence();
        dist *= 2;
        step += 1;
    }
}

pub(crate) fn bcast(b: &mut Builder, buf: *mut u8, count: usize, lay: &Layout, root: usize) {
    let bytes = count * lay.size;
    if b.size == 1 || bytes == 0 {
        return;
    }
    if binomial_fits(bytes, b.size) {
        binomial(b, buf, count, lay, root);
        return;
    }
    // Long: work on packed bytes (in place when the layout is contiguous).
    let (data, staged) = if lay.contiguous() {
        (lay.data_start(buf).cast_mut(), false)
    } else {
        (b.temp_bytes(bytes), true)
    };
    if staged && b.rank == root {
        b.copy(buf, count, lay, data, bytes, &Layout::BYTES);
    }
    scatter_ring_allgather(b, data, bytes, root);
    if staged && b.rank != root {
        b.copy(data, bytes, &Layout::BYTES, buf, count, lay);
    }
}

/// Whether a broadcast of `bytes` on `size` ranks takes the binomial tree.
pub(super) fn binomial_fits(bytes: usize, size: usize) -> bool {
    bytes < BCAST_SHORT || size < BCAST_MIN_PROCS
}

/// Binomial tree rooted at `root`: receive from the parent, then send to each child.
fn binomial(b: &mut Builder, buf: *mut u8, count: usize, lay: &Layout, root: usize) {
    let n = b.size;
    let rel = (b.rank + n - root) % n;
    let (parent, children) = tree(rel, n);
    if let Some(m) = parent {
        b.recv((rel - m + root) % n, 0, buf, count, lay);
        b.fence();
    }
    for m in children {
        b.send((rel + m + root) % n, 0, buf, count, lay);
    }
}

/// `rel`'s place in a binomial tree over the relative ranks `0..n` rooted at 0: the mask `m`
/// of its parent `rel - m` (`None` at the root), and the masks `m` of its children `rel + m`,
/// largest first. The subtree at `rel` is the relative ranks `rel..rel + m` (within `0..n`)
/// for the mask `m` of its parent.
fn tree(rel: usize, n: usize) -> (Option<usize>, Vec<usize>) {
    let mut mask = 1;
    while mask < n && rel & mask == 0 {
        mask <<= 1;
    }
    let parent = (mask < n).then_some(mask);
    let children = std::iter::successors(Some(mask >> 1), |m| Some(m >> 1))
        .take_while(|&m| m > 0)
        .filter(|&m| rel + m < n)
        .collect();
    (parent, children)
}

/// Scatters `bytes` from `root` in `size` chunks over a binomial tree, then circulates the
/// chunks around a ring until every rank has all.
fn scatter_ring_allgather(b: &mut Builder, data: *mut u8, bytes: usize, root: usize) {
    let n = b.size;
    let rel = (b.rank + n - root) % n;
    let chunk = bytes.div_ceil(n);
    // Chunk i (of relative rank i) covers [i * chunk, min((i + 1) * chunk, bytes)).
    let range = |from: usize, to: usize| -> (usize, usize) {
        let lo = (from * chunk).min(bytes);
        let hi = (to * chunk).min(bytes);
        (lo, hi - lo)
    };
    let at = |off: usize| data.wrapping_add(off);
    // Binomial scatter: a subtree of relative ranks [rel, rel + m) gets its chunks.
    let (parent, children) = tree(rel, n);
    if let Some(m) = parent {
        let (off, len) = range(rel, (rel + m).min(n));
        b.recv((rel - m + root) % n, 1, at(off), len, &Layout::BYTES);
        b.fence();
    }
    for m in children {
        let (off, len) = range(rel + m, (rel + 2 * m).min(n));
        b.send((rel + m + root) % n, 1, at(off), len, &Layout::BYTES);
    }
    b.fence();
    // Ring allgather of the chunks (by relative rank).
    let left = (b.rank + n - 1) % n;
    let right = (b.rank + 1) % n;
    let mut j = rel;
    let mut jnext = (rel + n - 1) % n;
    for i in 0..n - 1 {
        let (soff, slen) = range(j, j + 1);
        let (roff, rlen) = range(jnext, jnext + 1);
        b.send(right, 2 + (i as u32 & 1), at(soff), slen, &Layout::BYTES);
        b.recv(left, 2 + (i as u32 & 1), at(roff), rlen, &Layout::BYTES);
        b.fence();
        j = jnext;
        jnext = (jnext + n - 1) % n;
    }
}
