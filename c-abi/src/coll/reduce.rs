//! Reductions: reduce, allreduce, reduce-scatter, scan, exscan.
//!
//! Data stays in the datatype's own layout throughout (user operations receive the type
//! itself); temporaries are `count` elements of it ([`Builder::temp`]). The operation's order
//! is respected for non-commutative operations: `in (op) inout` always has the lower ranks'
//! data on the left.
//!
//! * Reduce: MPICH's binomial tree for short data or non-commutative operations (then rooted
//!   at rank 0, where the ranks' blocks combine in order, the result going on to the root);
//!   for long data and commutative operations Rabenseifner's reduce: the ranks beyond a power
//!   of two folded in, a recursive-halving reduce-scatter, then a binomial gather of the
//!   blocks to the root.
//! * Allreduce: the non-power-of-two ranks are first folded in (the first `2 * rem` ranks pair
//!   up, the even one hands its data to the odd one and sits out), then, among a power of two,
//!   recursive doubling for short data or non-commutative operations, and Rabenseifner's
//!   algorithm for long data (recursive-halving reduce-scatter, then recursive-doubling
//!   allgather: about `2 * bytes` moved per rank instead of `log2(size) * bytes`); finally
//!   the folded ranks get the result.
//! * Reduce-scatter(-block): for commutative operations MPICH's recursive halving (ranks
//!   beyond a power of two folded in; each step hands the partner the half of the remaining
//!   blocks on its side); for the others a reduce to rank 0, then a binomial scatter of the
//!   blocks (`2 * log2(size)` rounds).
//! * Scan and exscan: recursive doubling, keeping the partial result of the ranks below.

use super::buf::Layout;
use super::sched::Builder;

/// Up to this many bytes, allreduce uses recursive doubling and reduce a binomial tree (as
/// MPICH).
pub(super) const ALLREDUCE_SHORT: usize = 2048;
const REDUCE_SHORT: usize = 2048;

pub(super) const STEP_FOLD_IN: u32 = 0x800;
pub(super) const STEP_FOLD_OUT: u32 = 0x801;
const STEP_RESULT: u32 = 0x802;

/// The largest power of two not above `n` (`n > 0`).
fn pof2(n: usize) -> usize {
    1 << n.ilog2()
}

/// Binomial reduce of `count` elements from `send` (every rank; at the root with
/// `MPI_IN_PLACE` the receive buffer) into `recv` at the root.
pub(crate) fn reduce(
    b: &mut Builder,
    send: *const u8,
    recv: *mut u8,
    count: usize,
    lay: &Layout,
    root: usize,
    commutative: bool,
) {
    let (n, r) = (b.size, b.rank);
    let pof2 = pof2(n);
    if commutative && n > 1 && count * lay.size > REDUCE_SHORT && count >= pof2 {
        reduce_long(b, send, recv, count, lay, root);
        return;
    }
    let lroot = if commutative { root } else { 0 };
    let rel = (r + n - lroot) % n;
    // `acc` holds the data of relative ranks [rel, rel + mask); it is the user's send buffer
    // until something is combined into it.
    let mut acc: *mut u8 = send.cast_mut();
    let mut acc_is_user = true;
    if r == root && r == lroot {
        b.copy(send, count, lay, recv, count, lay);
        acc = recv;
        acc_is_user = false;
    }
    let mut tmp: *mut u8 = std::ptr::null_mut();
    let mut mask = 1;
    while mask < n {
        if rel & mask != 0 {
            b.send(((rel & !mask) + lroot) % n, 0, acc, count, lay);
            break;
        }
        let src = rel | mask;
        if src < n {
            if tmp.is_null() {
                tmp = b.temp(count, lay);
            }
            b.recv((src + lroot) % n, 0, tmp, count, lay);
            if commutative {
                if acc_is_user {
                    let t = b.temp(count, lay);
                    b.copy(acc, count, lay, t, count, lay);
                    acc = t;
                    acc_is_user = false;
                }
                b.reduce(tmp, acc, count);
            } else {
                // acc (lower ranks) op tmp (higher ranks), into tmp, which becomes acc.
                b.reduce(acc, tmp, count);
                let old = acc;
                acc = tmp;
                tmp = if acc_is_user { b.temp(count, lay) } else { old };
                acc_is_user = false;
            }
        }
        mask <<= 1;
    }
    if r == lroot {
        if r == root {
            b.copy(acc, count, lay, recv, count, lay);
        } else {
            b.send(root, STEP_RESULT, acc, count, lay);
        }
    } else if r == root {
        b.recv(lroot, STEP_RESULT, recv, count, lay);
    }
}

/// Rabenseifner's reduce (commutative operations, long data): fold in the ranks beyond a
/// power of two, reduce-scatter by recursive halving, gather the blocks to the root.
fn reduce_long(
    b: &mut Builder,
    send: *const u8,
    recv: *mut u8,
    count: usize,
    lay: &Layout,
    root: usize,
) {
    let (n, r) = (b.size, b.rank);
    let pof2 = pof2(n);
    let rem = n - pof2;
    let acc = if r == root { recv } else { b.temp(count, lay) };
    b.copy(send, count, lay, acc, count, lay);
    let tmp = b.temp(count, lay);
    let newrank = fold_in(b, acc, tmp, count, lay, rem);
    // An even root below 2 * rem sat out: its partner gathers and hands it the result.
    let root_newrank = if root < 2 * rem { root / 2 } else { root - rem };
    if let Some(nr) = newrank {
        let real = |newdst: usize| unfolded(newdst, rem);
        rabenseifner(b, acc, tmp, count, lay, nr, pof2, &real, Some(root_newrank));
    }
    if root < 2 * rem && root & 1 == 0 {
        b.fence();
        if r == root + 1 {
            b.send(root, STEP_RESULT, acc, count, lay);
        } else if r == root {
            b.recv(root + 1, STEP_RESULT, recv, count, lay);
        }
    }
}

/// The first `2 * rem` ranks pair up: the even one sends its data to the odd one, which
/// combines it (the even one's on the left) and takes part further as `rank / 2`; the others
/// take part as `rank - rem`. Returns this rank's number among the `size - rem` that go on.
fn fold_in(
    b: &mut Builder,
    acc: *mut u8,
    tmp: *mut u8,
    count: usize,
    lay: &Layout,
    rem: usize,
) -> Option<usize> {
    let r = b.rank;
    if r < 2 * rem {
        if r & 1 == 0 {
            b.send(r + 1, STEP_FOLD_IN, acc, count, lay);
            None
        } else {
            b.recv(r - 1, STEP_FOLD_IN, tmp, count, lay);
            b.reduce(tmp, acc, count);
            Some(r / 2)
        }
    } else {
        Some(r - rem)
    }
}

/// Allreduce of `count` elements: `send` (`None` with `MPI_IN_PLACE`) into `recv`.
pub(crate) fn allreduce(
    b: &mut Builder,
    send: Option<*const u8>,
    recv: *mut u8,
    count: usize,
    lay: &Layout,
    commutative: bool,
) {
    let (n, r) = (b.size, b.rank);
    if let Some(s) = send {
        b.copy(s, count, lay, recv, count, lay);
    }
    if n == 1 || count == 0 {
        return;
    }
    let pof2 = pof2(n);
    let rem = n - pof2;
    let tmp = b.temp(count, lay);
    let newrank = fold_in(b, recv, tmp, count, lay, rem);
    if let Some(nr) = newrank {
        let real = |newdst: usize| unfolded(newdst, rem);
        if count * lay.size <= ALLREDUCE_SHORT || !commutative || count < pof2 {
            let mut mask = 1;
            let mut step = 0;
            while mask < pof2 {
                let dst = real(nr ^ mask);
                b.send(dst, step, recv, count, lay);
                b.recv(dst, step, tmp, count, lay);
                if commutative || dst < r {
                    b.reduce(tmp, recv, count);
                } else {
                    b.reduce(recv, tmp, count);
                    b.copy(tmp, count, lay, recv, count, lay);
                }
                mask <<= 1;
                step += 1;
            }
        } else {
            rabenseifner(b, recv, tmp, count, lay, nr, pof2, &real, None);
        }
    }
    b.fence();
    if r < 2 * rem {
        if r % 2 == 1 {
            b.send(r - 1, STEP_FOLD_OUT, recv, count, lay);
        } else {
            b.recv(r + 1, STEP_FOLD_OUT, recv, count, lay);
        }
    }
}

/// Reduce-scatter by recursive halving, then allgather by recursive doubling, among `pof2`
/// ranks (`newrank` this one's number among them, `real` their ranks in the communicator).
/// With `gather_to` (a newrank), the second phase is a gather to that rank instead: in each
/// step the partner on the root's side receives and the other sends and is done.
#[allow(clippy::too_many_arguments)]
fn rabenseifner(
    b: &mut Builder,
    recv: *mut u8,
    tmp: *mut u8,
    count: usize,
    lay: &Layout,
    newrank: usize,
    pof2: usize,
    real: &dyn Fn(usize) -> usize,
    gather_to: Option<usize>,
) {
    let cnts: Vec<usize> = (0..pof2)
        .map(|i| count / pof2 + usize::from(i < count % pof2))
        .collect();
    let mut disps = vec![0; pof2 + 1];
    for i in 0..pof2 {
        disps[i + 1] = disps[i] + cnts[i];
    }
    let sum = |from: usize, to: usize| disps[to] - disps[from];
    let (mut send_idx, mut recv_idx, mut last_idx) = (0, 0, pof2);
    let mut mask = 1;
    let mut step = 0x100;
    while mask < pof2 {
        let newdst = newrank ^ mask;
        let dst = real(newdst);
        let (send_cnt, recv_cnt);
        if newrank < newdst {
            send_idx = recv_idx + pof2 / (mask * 2);
            send_cnt = sum(send_idx, last_idx);
            recv_cnt = sum(recv_idx, send_idx);
        } else {
            recv_idx = send_idx + pof2 / (mask * 2);
            send_cnt = sum(send_idx, recv_idx);
            recv_cnt = sum(recv_idx, last_idx);
        }
        b.send(dst, step, lay.at(recv, disps[send_idx]), send_cnt, lay);
        b.recv(dst, step, lay.at_mut(tmp, disps[recv_idx]), recv_cnt, lay);
        b.reduce(
            lay.at(tmp, disps[recv_idx]),
            lay.at_mut(recv, disps[recv_idx]),
            recv_cnt,
        );
        send_idx = recv_idx;
        mask <<= 1;
        if mask < pof2 {
            last_idx = recv_idx + pof2 / mask;
        }
        step += 1;
    }
    b.fence();
    mask >>= 1;
    let mut step = 0x200;
    while mask > 0 {
        let newdst = newrank ^ mask;
        let dst = real(newdst);
        let (send_cnt, recv_cnt);
        if newrank < newdst {
            if mask != pof2 / 2 {
                last_idx += pof2 / (mask * 2);
            }
            recv_idx = send_idx + pof2 / (mask * 2);
            send_cnt = sum(send_idx, recv_idx);
            recv_cnt = sum(recv_idx, last_idx);
        } else {
            recv_idx = send_idx - pof2 / (mask * 2);
            send_cnt = sum(send_idx, last_idx);
            recv_cnt = sum(recv_idx, send_idx);
        }
        // Toward the root's side in a gather; both ways in an allgather.
        let (sends, receives) = match gather_to {
            None => (true, true),
            Some(root) => {
                let root_side = newrank & mask == root & mask;
                (!root_side, root_side)
            }
        };
        if sends {
            b.send(dst, step, lay.at(recv, disps[send_idx]), send_cnt, lay);
        }
        if receives {
            b.recv(dst, step, lay.at_mut(recv, disps[recv_idx]), recv_cnt, lay);
        }
        b.fence();
        if !receives {
            break;
        }
        if newrank > newdst {
            send_idx = recv_idx;
        }
        mask >>= 1;
        step += 1;
    }
}

/// Reduce-scatter: `counts[i]` elements of the result go to rank `i`. `send` holds
/// `sum(counts)` elements (with `MPI_IN_PLACE`, the receive buffer does). Commutative
/// operations use recursive halving ([`reduce_scatter_halving`]); others a reduce to rank 0
/// (which keeps the operands in rank order) and a binomial scatter of the blocks.
pub(crate) fn reduce_scatter(
    b: &mut Builder,
    send: *const u8,
    recv: *mut u8,
    counts: &[usize],
    lay: &Layout,
    commutative: bool,
) {
    let total: usize = counts.iter().sum();
    if commutative && b.size > 1 && total > 0 {
        return reduce_scatter_halving(b, send, recv, counts, lay);
    }
    let r = b.rank;
    let result = if r == 0 {
        b.temp(total, lay)
    } else {
        std::ptr::null_mut()
    };
    if total > 0 {
        reduce(b, send, result, total, lay, 0, commutative);
    }
    b.fence();
    scatter_blocks(b, result, recv, counts, lay);
}

/// Reduce-scatter by recursive halving (MPICH's algorithm for commutative operations): the
/// ranks beyond a power of two first fold their data into a partner ([`fold_in`]); then in
/// each of `log2(pof2)` steps a rank sends the half of its remaining blocks that belongs to
/// its partner's side and reduces the half it keeps with what the partner sends, so every
/// element moves about once in total. A folded-in pair's odd rank ends with both ranks'
/// blocks and hands the even one its own.
fn reduce_scatter_halving(
    b: &mut Builder,
    send: *const u8,
    recv: *mut u8,
    counts: &[usize],
    lay: &Layout,
) {
    let (n, r) = (b.size, b.rank);
    let total: usize = counts.iter().sum();
    let mut disps = vec![0; n + 1];
    for i in 0..n {
        disps[i + 1] = disps[i] + counts[i];
    }
    let acc = b.temp(total, lay);
    let tmp = b.temp(total, lay);
    b.copy(send, total, lay, acc, total, lay);
    let pof2 = pof2(n);
    let rem = n - pof2;
    let newrank = fold_in(b, acc, tmp, total, lay, rem);
    b.fence();
    if let Some(nr) = newrank {
        // The blocks of the pof2 participants, as ranges of the original ranks' blocks:
        // participant i < rem stands for ranks 2i and 2i+1, the others for rank i + rem.
        let first = |i: usize| if i < rem { 2 * i } else { i + rem };
        let end = |i: usize| if i < rem { 2 * i + 2 } else { i + rem + 1 };
        let real = |i: usize| if i < rem { 2 * i + 1 } else { i + rem };
        let span =
            |from: usize, to: usize| (disps[first(from)], disps[end(to - 1)] - disps[first(from)]);
        let (mut send_idx, mut recv_idx, mut last_idx) = (0, 0, pof2);
        let mut mask = pof2 / 2;
        let mut step = 0x300;
        while mask > 0 {
            let partner = nr ^ mask;
            if nr < partner {
                send_idx = recv_idx + mask;
            } else {
                recv_idx = send_idx + mask;
            }
            let (sent, kept) = if nr < partner {
                (span(send_idx, last_idx), span(recv_idx, send_idx))
            } else {
                (span(send_idx, recv_idx), span(recv_idx, last_idx))
            };
            let dst = real(partner);
            b.send(dst, step, lay.at(acc, sent.0), sent.1, lay);
            b.recv(dst, step, lay.at_mut(tmp, kept.0), kept.1, lay);
            b.reduce(lay.at(tmp, kept.0), lay.at_mut(acc, kept.0), kept.1);
            b.fence();
            send_idx = recv_idx;
            last_idx = recv_idx + mask;
            mask /= 2;
            step += 1;
        }
        if r < 2 * rem {
            b.send(
                r - 1,
                STEP_RESULT,
                lay.at(acc, disps[r - 1]),
                counts[r - 1],
                lay,
            );
        }
        b.copy(lay.at(acc, disps[r]), counts[r], lay, recv, counts[r], lay);
    } else {
        b.recv(r + 1, STEP_RESULT, recv, counts[r], lay);
    }
}

/// Binomial scatter from rank 0 of consecutive blocks of `counts[i]` elements (rank 0's
/// `all`, in rank order) into each rank's `recv`: a rank's subtree is a range of ranks, so
/// its blocks are one range of elements.
fn scatter_blocks(b: &mut Builder, all: *mut u8, recv: *mut u8, counts: &[usize], lay: &Layout) {
    let (n, r) = (b.size, b.rank);
    let mut off = vec![0; n + 1];
    for i in 0..n {
        off[i + 1] = off[i] + counts[i];
    }
    let top = if r == 0 {
        n.next_power_of_two()
    } else {
        r & r.wrapping_neg()
    };
    let end = (r + top).min(n);
    // `base`: where element `off[r]` of the whole result is held on this rank.
    let base = if r == 0 {
        all
    } else if end == r + 1 {
        recv
    } else {
        b.temp(off[end] - off[r], lay)
    };
    if r != 0 {
        b.recv(r - top, 0x900, base, off[end] - off[r], lay);
        b.fence();
    }
    let mut mask = top >> 1;
    while mask > 0 {
        let child = r + mask;
        if child < n {
            let last = (child + mask).min(n);
            let from = lay.at(base, off[child] - off[r]);
            b.send(child, 0x900, from, off[last] - off[child], lay);
        }
        mask >>= 1;
    }
    b.copy(base, counts[r], lay, recv, counts[r], lay);
}

/// Inclusive (`exclusive == false`) or exclusive prefix reduction by recursive doubling.
/// `send`: this rank's data (with `MPI_IN_PLACE`, the receive buffer).
pub(crate) fn scan(
    b: &mut Builder,
    send: *const u8,
    recv: *mut u8,
    count: usize,
    lay: &Layout,
    commutative: bool,
    exclusive: bool,
) {
    let (n, r) = (b.size, b.rank);
    if count == 0 {
        return;
    }
    let mut partial = b.temp(count, lay);
    let mut tmp = b.temp(count, lay);
    b.copy(send, count, lay, partial, count, lay);
    if !exclusive {
        b.copy(send, count, lay, recv, count, lay);
    }
    let mut have_result = !exclusive;
    let mut mask = 1;
    let mut step = 0;
    while mask < n {
        let dst = r ^ mask;
        if dst < n {
            b.send(dst, step, partial, count, lay);
            b.recv(dst, step, tmp, count, lay);
            if r > dst {
                b.reduce(tmp, partial, count);
                if have_result {
                    b.reduce(tmp, recv, count);
                } else {
                    b.copy(tmp, count, lay, recv, count, lay);
                    have_result = true;
                }
            } else if commutative {
                b.reduce(tmp, partial, count);
            } else {
                b.reduce(partial, tmp, count);
                std::mem::swap(&mut partial, &mut tmp);
            }
        }
        mask <<= 1;
        step += 1;
    }
}

/// The rank of the process that plays new rank `newrank` once the first `2 * rem` ranks have
/// folded in pairs (each odd one of a pair carries on, as new rank `rank / 2`; the others
/// move down by `rem`): the inverse of the fold's renumbering.
pub(crate) fn unfolded(newrank: usize, rem: usize) -> usize {
    if newrank < rem {
        newrank * 2 + 1
    } else {
        newrank + rem
    }
}
