//! Gather and scatter, with their `v` variants.
//!
//! `Gather` and `Scatter` use MPICH's binomial trees over ranks relative to the root: a rank
//! with relative rank `r` whose lowest set bit is `m` owns the blocks of relative ranks
//! `[r, r + m)`, gathered from (or scattered to) its subtree in `log2(size)` rounds. Inner
//! nodes of the tree hold their subtree's blocks packed in a temporary buffer; the root packs
//! or unpacks between that order and the user's buffer. From [`LINEAR_FROM`] bytes per
//! block, they are linear instead: the root's link carries every block whichever way they
//! travel, and a tree would need a temporary as large as the root's whole buffer (8 GiB for
//! a gather of 1 GiB from each of 8 ranks). The `v` variants have arbitrary counts per rank,
//! for which no tree helps: the root posts all its transfers at once, as MPICH does.

use super::buf::Layout;
use super::sched::Builder;

/// One side of a block transfer: `count` elements of `lay` at `base`.
#[derive(Clone)]
pub(crate) struct Part {
    pub base: *mut u8,
    pub count: usize,
    pub lay: Layout,
}

impl Part {
    pub fn bytes(&self) -> usize {
        self.count * self.lay.size
    }
}

/// The subtree of relative rank `rel`: its lowest set bit (or the tree's top for the root).
fn subtree(rel: usize, n: usize) -> usize {
    if rel == 0 {
        n.next_power_of_two()
    } else {
        rel & rel.wrapping_neg()
    }
}

/// Bytes per block from which gather and scatter go straight between the root and each
/// rank (no tree, no temporary).
pub(crate) const LINEAR_FROM: usize = 64 * 1024;

/// Where each rank's block lies in the root's buffer `p` (`count` elements per rank).
fn blocks_of(p: &Part, n: usize) -> Vec<(*mut u8, usize)> {
    (0..n)
        .map(|i| (p.lay.at_mut(p.base, i * p.count), p.count))
        .collect()
}

/// Gather: binomial, or linear for large blocks. `mine`: this rank's contribution (at the
/// root with `MPI_IN_PLACE`, its block of the receive buffer). `recv`: at the root, `count`
/// elements per rank and the base.
pub(crate) fn gather(b: &mut Builder, mine: &Part, recv: Option<&Part>, root: usize) {
    let n = b.size;
    let rel = (b.rank + n - root) % n;
    let block = match recv {
        Some(r) => r.bytes(),
        None => mine.bytes(),
    };
    let top = subtree(rel, n);
    let blocks = top.min(n - rel);
    if n == 1 {
        if let Some(r) = recv {
            b.copy(mine.base, mine.count, &mine.lay, r.base, r.count, &r.lay);
        }
        return;
    }
    if block >= LINEAR_FROM {
        let places = recv.map(|r| blocks_of(r, n));
        let recv = places.as_deref().zip(recv.map(|r| &r.lay));
        return gatherv(b, Some(mine), recv, root);
    }
    if blocks == 1 {
        // A leaf sends its own data as it is.
        let parent = (rel - top + root) % n;
        b.send(parent, 0, mine.base, mine.count, &mine.lay);
        return;
    }
    let tmp = b.temp_bytes(blocks * block);
    b.copy(mine.base, mine.count, &mine.lay, tmp, block, &Layout::BYTES);
    let mut mask = 1;
    while mask < top && rel + mask < n {
        let child = rel + mask;
        let got = mask.min(n - child);
        b.recv(
            (child + root) % n,
            0,
            tmp.wrapping_add(mask * block),
            got * block,
            &Layout::BYTES,
        );
        mask <<= 1;
    }
    b.fence();
    if rel != 0 {
        b.send(
            (rel - top + root) % n,
            0,
            tmp,
            blocks * block,
            &Layout::BYTES,
        );
        return;
    }
    let r = recv.expect("the root has a receive buffer");
    for i in 0..n {
        let dst = r.lay.at_mut(r.base, ((i + root) % n) * r.count);
        b.copy(
            tmp.wrapping_add(i * block),
            block,
            &Layout::BYTES,
            dst,
            r.count,
            &r.lay,
        );
    }
}

/// Scatter: binomial, or linear for large blocks. `send`: at the root, `count` elements per
/// rank. `mine`: where this rank's block goes (`None` at a root with `MPI_IN_PLACE`).
pub(crate) fn scatter(b: &mut Builder, send: Option<&Part>, mine: Option<&Part>, root: usize) {
    let n = b.size;
    let rel = (b.rank + n - root) % n;
    let block = match (send, mine) {
        (Some(s), _) => s.bytes(),
        (None, Some(m)) => m.bytes(),
        (None, None) => 0,
    };
    let top = subtree(rel, n);
    let blocks = top.min(n - rel);
    if n == 1 {
        if let (Some(s), Some(m)) = (send, mine) {
            b.copy(s.base, s.count, &s.lay, m.base, m.count, &m.lay);
        }
        return;
    }
    if block >= LINEAR_FROM {
        let places = send.map(|s| blocks_of(s, n));
        let send = places.as_deref().zip(send.map(|s| &s.lay));
        return scatterv(b, send, mine, root);
    }
    if blocks == 1 {
        let m = mine.expect("a non-root has a receive buffer");
        b.recv((rel - top + root) % n, 0, m.base, m.count, &m.lay);
        return;
    }
    let tmp = b.temp_bytes(blocks * block);
    if rel == 0 {
        let s = send.expect("the root has a send buffer");
        for i in 0..n {
            let src = s.lay.at(s.base, ((i + root) % n) * s.count);
            b.copy(
                src,
                s.count,
                &s.lay,
                tmp.wrapping_add(i * block),
                block,
                &Layout::BYTES,
            );
        }
    } else {
        b.recv(
            (rel - top + root) % n,
            0,
            tmp,
            blocks * block,
            &Layout::BYTES,
        );
        b.fence();
    }
    let mut mask = top >> 1;
    while mask > 0 {
        let child = rel + mask;
        if child < n {
            let got = mask.min(n - child);
            b.send(
                (child + root) % n,
                0,
                tmp.wrapping_add(mask * block),
                got * block,
                &Layout::BYTES,
            );
        }
        mask >>= 1;
    }
    if let Some(m) = mine {
        b.copy(tmp, block, &Layout::BYTES, m.base, m.count, &m.lay);
    }
}

/// Linear gatherv: every rank sends to the root, which receives each block where `displs`
/// says. `recv`: at the root, per rank `(base of its block, count)` and the layout.
pub(crate) fn gatherv(
    b: &mut Builder,
    mine: Option<&Part>,
    recv: Option<(&[(*mut u8, usize)], &Layout)>,
    root: usize,
) {
    if b.rank != root {
        let m = mine.expect("a non-root sends");
        b.send(root, 0, m.base, m.count, &m.lay);
        return;
    }
    let (blocks, lay) = recv.expect("the root receives");
    for (i, &(base, count)) in blocks.iter().enumerate() {
        if i == root {
            if let Some(m) = mine {
                b.copy(m.base, m.count, &m.lay, base, count, lay);
            }
        } else {
            b.recv(i, 0, base, count, lay);
        }
    }
}

/// Linear scatterv, the reverse of [`gatherv`].
pub(crate) fn scatterv(
    b: &mut Builder,
    send: Option<(&[(*mut u8, usize)], &Layout)>,
    mine: Option<&Part>,
    root: usize,
) {
    if b.rank != root {
        let m = mine.expect("a non-root receives");
        b.recv(root, 0, m.base, m.count, &m.lay);
        return;
    }
    let (blocks, lay) = send.expect("the root sends");
    for (i, &(base, count)) in blocks.iter().enumerate() {
        if i == root {
            if let Some(m) = mine {
                b.copy(base, count, lay, m.base, m.count, &m.lay);
            }
        } else {
            b.send(i, 0, base, count, lay);
        }
    }
}
