//! Alltoall, alltoallv, alltoallw.
//!
//! Alltoall, as MPICH chooses by the size of one block:
//! * Bruck for short blocks (up to 256 bytes) on 8 ranks or more: `ceil(log2(size))` steps;
//!   in step `k` every block whose (rotated) index has bit `k` set moves to `rank + 2^k`,
//!   packed into one message. Fewer, larger messages at the price of moving data several times.
//! * medium blocks (below 32 KiB): all sends and receives posted at once, in windows of
//!   [`WINDOW`] peers, ordered so that ranks do not all hit the same peer first;
//! * long blocks: pairwise exchange, `size - 1` steps each swapping with one peer (`rank ^ k`
//!   on a power-of-two size, else sending to `rank + k` and receiving from `rank - k`).
//!
//! The `v` and `w` variants post all their transfers in windows (arbitrary sizes per peer).
//! `MPI_IN_PLACE` (the data to send is in the receive buffer) copies that buffer to a
//! temporary first and proceeds from there.

use super::buf::Layout;
use super::sched::Builder;

const BRUCK_SHORT: usize = 256;
const BRUCK_MIN_PROCS: usize = 8;
const MEDIUM: usize = 32768;
/// Peers whose transfers are in flight at once.
const WINDOW: usize = 32;

/// One rank's block in a buffer: address, count and layout.
pub(crate) type Block = (*mut u8, usize, Layout);

/// `send[j]`: the block for rank `j`; `recv[j]`: where rank `j`'s block goes. `block_bytes`
/// is the size of one block (alltoall: all blocks have it).
pub(crate) fn alltoall(b: &mut Builder, send: &[Block], recv: &[Block], block_bytes: usize) {
    let n = b.size;
    if block_bytes <= BRUCK_SHORT && n >= BRUCK_MIN_PROCS {
        bruck(b, send, recv, block_bytes);
    } else if block_bytes < MEDIUM {
        windowed(b, send, recv);
    } else {
        pairwise(b, send, recv);
    }
}

fn own(b: &mut Builder, send: &[Block], recv: &[Block]) {
    let r = b.rank;
    let (s, d) = (&send[r], &recv[r]);
    b.copy(s.0, s.1, &s.2, d.0, d.1, &d.2);
}

/// All transfers posted, `WINDOW` peers at a time.
pub(crate) fn windowed(b: &mut Builder, send: &[Block], recv: &[Block]) {
    let (n, r) = (b.size, b.rank);
    own(b, send, recv);
    let mut i = 1;
    while i < n {
        let end = (i + WINDOW).min(n);
        for k in i..end {
            let src = (r + k) % n;
            b.recv(src, 0, recv[src].0, recv[src].1, &recv[src].2);
        }
        for k in i..end {
            let dst = (r + n - k) % n;
            b.send(dst, 0, send[dst].0, send[dst].1, &send[dst].2);
        }
        b.fence();
        i = end;
    }
}

fn pairwise(b: &mut Builder, send: &[Block], recv: &[Block]) {
    let (n, r) = (b.size, b.rank);
    own(b, send, recv);
    for k in 1..n {
        let (src, dst) = if n.is_power_of_two() {
            (r ^ k, r ^ k)
        } else {
            ((r + n - k) % n, (r + k) % n)
        };
        let step = (k & 1) as u32;
        b.send(dst, step, send[dst].0, send[dst].1, &send[dst].2);
        b.recv(src, step, recv[src].0, recv[src].1, &recv[src].2);
        b.fence();
    }
}

fn bruck(b: &mut Builder, send: &[Block], recv: &[Block], block: usize) {
    let (n, r) = (b.size, b.rank);
    let tmp = b.temp_bytes(n * block);
    let slot = |i: usize| tmp.wrapping_add(i * block);
    // Rotate: slot i holds the block for rank (r + i) % n.
    for i in 0..n {
        let s = &send[(r + i) % n];
        b.copy(s.0, s.1, &s.2, slot(i), block, &Layout::BYTES);
    }
    let out = b.temp_bytes(n.div_ceil(2) * block);
    let inc = b.temp_bytes(n.div_ceil(2) * block);
    let mut bit = 1;
    let mut step = 0;
    while bit < n {
        let moving: Vec<usize> = (0..n).filter(|i| i & bit != 0).collect();
        for (k, &i) in moving.iter().enumerate() {
            b.copy(
                slot(i),
                block,
                &Layout::BYTES,
                out.wrapping_add(k * block),
                block,
                &Layout::BYTES,
            );
        }
        b.send(
            (r + bit) % n,
            step,
            out,
            moving.len() * block,
            &Layout::BYTES,
        );
        b.recv(
            (r + n - bit) % n,
            step,
            inc,
            moving.len() * block,
            &Layout::BYTES,
        );
        b.fence();
        for (k, &i) in moving.iter().enumerate() {
            b.copy(
                inc.wrapping_add(k * block),
                block,
                &Layout::BYTES,
                slot(i),
                block,
                &Layout::BYTES,
            );
        }
        bit <<= 1;
        step += 1;
    }
    // Slot i now holds the block from rank (r - i) % n.
    for i in 0..n {
        let d = &recv[(r + n - i) % n];
        b.copy(slot(i), block, &Layout::BYTES, d.0, d.1, &d.2);
    }
}
