//! Collectives on intercommunicators, as schedules (so the blocking call, the nonblocking
//! call and a persistent request all run the same rounds).
//!
//! ```text
//!   group A (local, ranks 0..n)                 group B (remote, ranks 0..m)
//!   local step among A ──▶ leader A0 ◀──────────▶ leader B0 ◀── local step among B
//!                          (one exchange between the two leaders, or root ↔ B0)
//!   local step among A ◀── leader A0               leader B0 ──▶ local step among B
//! ```
//!
//! An intercommunicator joins two disjoint groups; a collective on it moves data from each
//! group to the other (MPI 4.0 §6.2.2): what group A receives comes from group B. The
//! algorithms are MPICH's, built from the intracommunicator algorithms run inside one group
//! (the [`Builder`]'s local ranks are the local group's) plus transfers to the remote group
//! ([`Builder::send_remote`], [`Builder::recv_remote`]):
//!
//! * **barrier**: local barrier, the two leaders (local rank 0) swap an empty message, local
//!   broadcast from the leader: nobody leaves before everyone of both groups has entered.
//! * **rooted** (bcast, gather, scatter, reduce): the root (`MPI_ROOT`) talks to rank 0 of the
//!   other group, which does the local part: bcast = root → B0, then a local bcast; gather =
//!   local gather to B0 (packed), then B0 → root; scatter = root → B0, then a local scatter;
//!   reduce = local reduce to B0, then B0 → root. The `v` forms go straight between the root
//!   and every member of the other group (their counts are known only at the root). The other
//!   members of the root's group (`MPI_PROC_NULL`) do nothing.
//! * **allgather**: local gather to the leader, the leaders swap their groups' data, local
//!   bcast. **allgatherv**: everyone sends its block to the remote leader, which receives
//!   them packed end to end and broadcasts them to its group; each member unpacks the blocks.
//! * **allreduce**: local reduce to the leader, the leaders swap their groups' results, local
//!   bcast (each group gets the reduction of the other's data). **reduce-scatter**: the same,
//!   with a local scatterv of the result instead of the bcast.
//! * **alltoall** (all three forms): every member sends its block to every member of the
//!   other group and receives one from each, in one round.
//!
//! The library's own agreement on context ids uses [`allreduce_both`] (both groups' data
//! combined, everyone gets the same result: what `MPI_Comm_idup` of an intercommunicator
//! needs).
//!
//! **Tags.** The messages between the groups use steps from `0xA00` (the intra algorithms use
//! lower ones, `0x800..0x803`, and below); messages of two local algorithms in one schedule
//! may share a step, since they go one after the other between the same two processes (MPI's
//! non-overtaking order keeps them apart), and messages from the other group are told apart
//! by their sources (the groups are disjoint).

use super::alltoall::Block;
use super::bcast;
use super::buf::Layout;
use super::gather::{self, Part};
use super::reduce;
use super::sched::Builder;

/// Step of a message between the two groups.
const STEP_ACROSS: u32 = 0xA00;
/// Step of the message that releases the local group after an exchange of the leaders.
const STEP_ACROSS_SECOND: u32 = 0xA01;

/// Where this process stands in a rooted collective on an intercommunicator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// The root (it passed `MPI_ROOT`).
    Root,
    /// Another member of the root's group (it passed `MPI_PROC_NULL`): takes no part.
    Idle,
    /// A member of the other group; the root is this rank of the remote group.
    Leaf(usize),
}

/// Whether this rank is its group's leader (local rank 0).
fn leader(b: &Builder) -> bool {
    b.rank == 0
}

/// Barrier on an intercommunicator.
pub(crate) fn barrier(b: &mut Builder) {
    bcast::barrier(b);
    b.fence();
    if leader(b) {
        b.send_remote(0, STEP_ACROSS, std::ptr::null(), 0, &Layout::BYTES);
        b.recv_remote(0, STEP_ACROSS, std::ptr::null_mut(), 0, &Layout::BYTES);
    }
    b.fence();
    // The release: a one-byte broadcast from the leader (an empty one sends nothing).
    let token = b.temp_bytes(1);
    bcast::bcast(b, token, 1, &Layout::BYTES, 0);
}

/// Broadcast of `count` elements of `lay` at `buf` from the root to the other group.
pub(crate) fn bcast(b: &mut Builder, role: Role, buf: *mut u8, count: usize, lay: &Layout) {
    match role {
        Role::Root => b.send_remote(0, STEP_ACROSS, buf, count, lay),
        Role::Idle => {}
        Role::Leaf(root) => {
            if leader(b) {
                b.recv_remote(root, STEP_ACROSS, buf, count, lay);
            }
            b.fence();
            bcast::bcast(b, buf, count, lay, 0);
        }
    }
}

/// At the leader (rank 0 of its group), a temporary for one `block`-byte block per member of
/// its group, as bytes (`None` elsewhere); and those bytes' count.
fn leader_blocks(b: &mut Builder, block: usize) -> (Option<Part>, usize) {
    let all = block * b.size;
    let part = leader(b).then(|| Part {
        base: b.temp_bytes(all),
        count: block,
        lay: Layout::BYTES,
    });
    (part, all)
}

/// Gather to the root of one block per member of the other group. `mine`: a leaf's block;
/// `recv`: at the root, `count` elements per remote rank.
pub(crate) fn gather(b: &mut Builder, role: Role, mine: Option<&Part>, recv: Option<&Part>) {
    match role {
        Role::Root => {
            let r = recv.expect("the root receives");
            let m = b.remote_size();
            b.recv_remote(0, STEP_ACROSS, r.base, r.count * m, &r.lay);
        }
        Role::Idle => {}
        Role::Leaf(root) => {
            let mine = mine.expect("a leaf sends");
            let (packed, all) = leader_blocks(b, mine.bytes());
            gather::gather(b, mine, packed.as_ref(), 0);
            b.fence();
            if let Some(p) = packed {
                b.send_remote(root, STEP_ACROSS, p.base, all, &Layout::BYTES);
            }
        }
    }
}

/// Gatherv: every member of the other group sends its block straight to the root, which
/// receives block `i` at `recv.0[i]` (`count` elements of `recv.1`).
pub(crate) fn gatherv(
    b: &mut Builder,
    role: Role,
    mine: Option<&Part>,
    recv: Option<(&[(*mut u8, usize)], &Layout)>,
) {
    match role {
        Role::Root => {
            let (blocks, lay) = recv.expect("the root receives");
            for (i, &(base, count)) in blocks.iter().enumerate() {
                b.recv_remote(i, STEP_ACROSS, base, count, lay);
            }
        }
        Role::Idle => {}
        Role::Leaf(root) => {
            let m = mine.expect("a leaf sends");
            b.send_remote(root, STEP_ACROSS, m.base, m.count, &m.lay);
        }
    }
}

/// Scatter from the root of one block per member of the other group. `send`: at the root,
/// `count` elements per remote rank; `mine`: where a leaf's block goes.
pub(crate) fn scatter(b: &mut Builder, role: Role, send: Option<&Part>, mine: Option<&Part>) {
    match role {
        Role::Root => {
            let s = send.expect("the root sends");
            let m = b.remote_size();
            b.send_remote(0, STEP_ACROSS, s.base, s.count * m, &s.lay);
        }
        Role::Idle => {}
        Role::Leaf(root) => {
            let mine = mine.expect("a leaf receives");
            let (packed, all) = leader_blocks(b, mine.bytes());
            if let Some(p) = &packed {
                b.recv_remote(root, STEP_ACROSS, p.base, all, &Layout::BYTES);
            }
            b.fence();
            gather::scatter(b, packed.as_ref(), Some(mine), 0);
        }
    }
}

/// Scatterv: the root sends block `i` (`send.0[i]`) straight to remote rank `i`.
pub(crate) fn scatterv(
    b: &mut Builder,
    role: Role,
    send: Option<(&[(*mut u8, usize)], &Layout)>,
    mine: Option<&Part>,
) {
    match role {
        Role::Root => {
            let (blocks, lay) = send.expect("the root sends");
            for (i, &(base, count)) in blocks.iter().enumerate() {
                b.send_remote(i, STEP_ACROSS, base, count, lay);
            }
        }
        Role::Idle => {}
        Role::Leaf(root) => {
            let m = mine.expect("a leaf receives");
            b.recv_remote(root, STEP_ACROSS, m.base, m.count, &m.lay);
        }
    }
}

/// Allgather: every member's block to every member of the other group. `recv`: `count`
/// elements per remote rank.
pub(crate) fn allgather(b: &mut Builder, mine: &Part, recv: &Part) {
    let block = mine.bytes();
    let all = block * b.size;
    let packed = leader(b).then(|| Part {
        base: b.temp_bytes(all),
        count: block,
        lay: Layout::BYTES,
    });
    gather::gather(b, mine, packed.as_ref(), 0);
    b.fence();
    let theirs = recv.count * b.remote_size();
    if let Some(p) = &packed {
        b.send_remote(0, STEP_ACROSS, p.base, all, &Layout::BYTES);
        b.recv_remote(0, STEP_ACROSS, recv.base, theirs, &recv.lay);
    }
    b.fence();
    bcast::bcast(b, recv.base, theirs, &recv.lay, 0);
}

/// Allgatherv: block `j` of the remote group lands at `blocks[j]` (`count` elements of `lay`).
pub(crate) fn allgatherv(b: &mut Builder, mine: &Part, blocks: &[(*mut u8, usize)], lay: &Layout) {
    b.send_remote(0, STEP_ACROSS, mine.base, mine.count, &mine.lay);
    let total: usize = blocks.iter().map(|x| x.1 * lay.size).sum();
    let packed = b.temp_bytes(total);
    if leader(b) {
        let mut at = 0;
        for (j, &(_, count)) in blocks.iter().enumerate() {
            let bytes = count * lay.size;
            let dst = packed.wrapping_add(at);
            b.recv_remote(j, STEP_ACROSS, dst, bytes, &Layout::BYTES);
            at += bytes;
        }
    }
    b.fence();
    bcast::bcast(b, packed, total, &Layout::BYTES, 0);
    let mut at = 0;
    for &(base, count) in blocks {
        let bytes = count * lay.size;
        let src = packed.wrapping_add(at);
        b.copy(src, bytes, &Layout::BYTES, base, count, lay);
        at += bytes;
    }
}

/// Alltoall in all three forms: `send[j]` to remote rank `j`, `recv[j]` from it.
pub(crate) fn alltoall(b: &mut Builder, send: &[Block], recv: &[Block]) {
    for (j, (s, r)) in send.iter().zip(recv).enumerate() {
        b.send_remote(j, STEP_ACROSS, s.0, s.1, &s.2);
        b.recv_remote(j, STEP_ACROSS, r.0, r.1, &r.2);
    }
}

/// Reduce to the root of the other group's data (`count` elements of `lay`; the builder
/// has the reducer). `send`: a leaf's data; `recv`: the root's result.
#[allow(clippy::too_many_arguments)]
pub(crate) fn reduce(
    b: &mut Builder,
    role: Role,
    send: *const u8,
    recv: *mut u8,
    count: usize,
    lay: &Layout,
    commutative: bool,
) {
    match role {
        Role::Root => b.recv_remote(0, STEP_ACROSS, recv, count, lay),
        Role::Idle => {}
        Role::Leaf(root) => {
            let acc = if leader(b) {
                b.temp(count, lay)
            } else {
                std::ptr::null_mut()
            };
            reduce::reduce(b, send, acc, count, lay, 0, commutative);
            b.fence();
            if leader(b) {
                b.send_remote(root, STEP_ACROSS, acc, count, lay);
            }
        }
    }
}

/// The reduction of this group's `send` at its leader (a temporary), swapped with the other
/// group's: the leader's `theirs` gets the other group's result.
fn reduce_and_swap(
    b: &mut Builder,
    send: *const u8,
    theirs: *mut u8,
    count: usize,
    lay: &Layout,
    commutative: bool,
) {
    let ours = if leader(b) {
        b.temp(count, lay)
    } else {
        std::ptr::null_mut()
    };
    reduce::reduce(b, send, ours, count, lay, 0, commutative);
    b.fence();
    if leader(b) {
        b.send_remote(0, STEP_ACROSS, ours, count, lay);
        b.recv_remote(0, STEP_ACROSS, theirs, count, lay);
    }
    b.fence();
}

/// Allreduce: every member of each group gets, in `recv`, the reduction of the other
/// group's `send`.
pub(crate) fn allreduce(
    b: &mut Builder,
    send: *const u8,
    recv: *mut u8,
    count: usize,
    lay: &Layout,
    commutative: bool,
) {
    reduce_and_swap(b, send, recv, count, lay, commutative);
    bcast::bcast(b, recv, count, lay, 0);
}

/// Reduce-scatter: the reduction of the other group's `send` (`sum(counts)` elements), block
/// `i` (`counts[i]` elements) to local rank `i`'s `recv`.
pub(crate) fn reduce_scatter(
    b: &mut Builder,
    send: *const u8,
    recv: *mut u8,
    counts: &[usize],
    lay: &Layout,
    commutative: bool,
) {
    let total: usize = counts.iter().sum();
    let theirs = if leader(b) {
        b.temp(total, lay)
    } else {
        std::ptr::null_mut()
    };
    reduce_and_swap(b, send, theirs, total, lay, commutative);
    let mut at = 0;
    let blocks: Vec<(*mut u8, usize)> = counts
        .iter()
        .map(|&c| {
            let block = (lay.at_mut(theirs, at), c);
            at += c;
            block
        })
        .collect();
    let mine = Part {
        base: recv,
        count: counts[b.rank],
        lay: lay.clone(),
    };
    let send_blocks = leader(b).then_some((&blocks[..], lay));
    gather::scatterv(b, send_blocks, Some(&mine), 0);
}

/// Allreduce over both groups at once: every member of both gets the reduction of all
/// members' `words` in place (the library's agreement on context ids; commutative reducer).
pub(crate) fn allreduce_both(b: &mut Builder, words: *mut u8, count: usize, lay: &Layout) {
    reduce::allreduce(b, None, words, count, lay, true);
    b.fence();
    if leader(b) {
        let theirs = b.temp(count, lay);
        b.send_remote(0, STEP_ACROSS_SECOND, words, count, lay);
        b.recv_remote(0, STEP_ACROSS_SECOND, theirs, count, lay);
        b.fence();
        b.reduce(theirs, words, count);
    }
    b.fence();
    bcast::bcast(b, words, count, lay, 0);
}
