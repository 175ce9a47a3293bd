//! Allgather and allgatherv.
//!
//! Allgather, as MPICH chooses (by the total bytes every rank ends with):
//! * recursive doubling on a power-of-two size below 512 KiB: in step `k` each rank swaps all
//!   it has (`2^k` blocks) with `rank ^ 2^k`, straight in the receive buffer;
//! * Bruck below 80 KiB otherwise: `ceil(log2(size))` steps of sending everything gathered so
//!   far to `rank - 2^k`, in a packed buffer that starts with this rank's block, rotated into
//!   place at the end;
//! * a ring for long messages: `size - 1` steps, each passing one block to the right
//!   neighbour, which uses every link at full bandwidth.
//!
//! Allgatherv (blocks of arbitrary sizes): Bruck below 80 KiB in all, else the ring.

use super::buf::Layout;
use super::gather::Part;
use super::sched::Builder;

const RD_LONG: usize = 512 * 1024;
const BRUCK_SHORT: usize = 80 * 1024;

/// `mine`: this rank's block (`None` with `MPI_IN_PLACE`: it is in `recv` already). `recv`:
/// `count` elements per rank.
pub(crate) fn allgather(b: &mut Builder, mine: Option<&Part>, recv: &Part) {
    let (n, r) = (b.size, b.rank);
    let total = n * recv.bytes();
    let block_at = |i: usize| recv.lay.at_mut(recv.base, i * recv.count);
    if let Some(m) = mine {
        b.copy(m.base, m.count, &m.lay, block_at(r), recv.count, &recv.lay);
    }
    if n == 1 || recv.bytes() == 0 {
        return;
    }
    if n.is_power_of_two() && total < RD_LONG {
        let mut mask = 1;
        let mut step = 0;
        while mask < n {
            let peer = r ^ mask;
            let mine_from = r & !(mask - 1);
            let peer_from = peer & !(mask - 1);
            b.send(
                peer,
                step,
                block_at(mine_from),
                mask * recv.count,
                &recv.lay,
            );
            b.recv(
                peer,
                step,
                block_at(peer_from),
                mask * recv.count,
                &recv.lay,
            );
            b.fence();
            mask <<= 1;
            step += 1;
        }
    } else if total < BRUCK_SHORT {
        let blocks: Vec<(*mut u8, usize)> = (0..n).map(|i| (block_at(i), recv.count)).collect();
        bruck(b, &blocks, &recv.lay);
    } else {
        let blocks: Vec<(*mut u8, usize)> = (0..n).map(|i| (block_at(i), recv.count)).collect();
        ring(b, &blocks, &recv.lay);
    }
}

/// Bruck: the blocks gathered so far sit packed in rank order starting with this rank's own
/// (`rank, rank + 1, ...`), so each step sends a prefix of them and appends what arrives.
/// `blocks[j]`: where rank `j`'s block goes and its element count.
fn bruck(b: &mut Builder, blocks: &[(*mut u8, usize)], lay: &Layout) {
    let (n, r) = (b.size, b.rank);
    // off[i]: where the block of rank (r + i) % n starts in the packed buffer.
    let mut off = vec![0; n + 1];
    for i in 0..n {
        off[i + 1] = off[i] + blocks[(r + i) % n].1 * lay.size;
    }
    let tmp = b.temp_bytes(off[n]);
    let (mine, count) = blocks[r];
    b.copy(mine, count, lay, tmp, off[1], &Layout::BYTES);
    let mut have = 1;
    let mut step = 0;
    while have < n {
        let take = have.min(n - have);
        b.send((r + n - have) % n, step, tmp, off[take], &Layout::BYTES);
        let at = tmp.wrapping_add(off[have]);
        let len = off[have + take] - off[have];
        b.recv((r + have) % n, step, at, len, &Layout::BYTES);
        b.fence();
        have += take;
        step += 1;
    }
    for i in 1..n {
        let (dst, count) = blocks[(r + i) % n];
        let len = off[i + 1] - off[i];
        b.copy(
            tmp.wrapping_add(off[i]),
            len,
            &Layout::BYTES,
            dst,
            count,
            lay,
        );
    }
}

/// Ring: in step `i`, pass block `rank - i` right and receive block `rank - i - 1` from the
/// left. `blocks[j]`: where rank `j`'s block is, and its element count.
pub(crate) fn ring(b: &mut Builder, blocks: &[(*mut u8, usize)], lay: &Layout) {
    let (n, r) = (b.size, b.rank);
    let (left, right) = ((r + n - 1) % n, (r + 1) % n);
    for i in 0..n - 1 {
        let (s, rcv) = ((r + n - i) % n, (r + 2 * n - i - 1) % n);
        let step = (i & 1) as u32;
        b.send(right, step, blocks[s].0, blocks[s].1, lay);
        b.recv(left, step, blocks[rcv].0, blocks[rcv].1, lay);
        b.fence();
    }
}

/// `blocks[j]`: where rank `j`'s block goes in the receive buffer and its count.
pub(crate) fn allgatherv(
    b: &mut Builder,
    mine: Option<&Part>,
    blocks: &[(*mut u8, usize)],
    lay: &Layout,
) {
    let r = b.rank;
    if let Some(m) = mine {
        b.copy(m.base, m.count, &m.lay, blocks[r].0, blocks[r].1, lay);
    }
    let total: usize = blocks.iter().map(|x| x.1 * lay.size).sum();
    if b.size == 1 {
        return;
    }
    if total < BRUCK_SHORT {
        bruck(b, blocks, lay);
    } else {
        ring(b, blocks, lay);
    }
}
