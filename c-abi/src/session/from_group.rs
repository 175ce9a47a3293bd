//! Communicators made from groups alone: what `MPI_Comm_create_from_group` and
//! `MPI_Intercomm_create_from_groups` do (the design is in the module documentation of
//! `session`: a bootstrap exchange among the members, on [`BOOTSTRAP_CTX`], tagged by a hash of
//! the string tag and the members).

use super::BOOTSTRAP_CTX;
use crate::abi::*;
use crate::comm::agree::Exclusive;
use crate::comm::make::{self, Cx};
use crate::comm::net::Net;
use crate::comm::{Comm, Members};
use crate::error::{MpiError, MpiResult};
use crate::group::Group;
use std::ffi::c_int;

/// The tag of a bootstrap exchange: `0x3600_0000` plus 18 bits of an FNV-1a hash of the string
/// tag and the members' engine ranks, in steps of 64 (an exchange uses the tags from its base
/// up to base + 2 + log2(members) < base + 64). Above the collectives' and the other set-up
/// exchanges' tags (`comm::net`), below `MPI_TAG_UB`.
pub(crate) fn bootstrap_tag(stringtag: &str, members: &[u32]) -> c_int {
    let mut h: u32 = 0x811c_9dc5;
    let mut eat = |b: u8| h = (h ^ b as u32).wrapping_mul(0x0100_0193);
    for &b in stringtag.as_bytes() {
        eat(b);
    }
    eat(0);
    for r in members {
        for b in r.to_le_bytes() {
            eat(b);
        }
    }
    0x3600_0000 + (((h ^ (h >> 18)) & 0x3_ffff) << 6) as c_int
}

/// Agrees, among the processes of `members` (engine ranks; this process is member `me`), on a
/// context pair free at all of them, and takes it.
fn agree_among(
    cx: &mut Cx<'_>,
    members: &[u32],
    me: usize,
    stringtag: &str,
) -> MpiResult<(u16, u16)> {
    let net = Net {
        ranks: members.iter().map(|&r| r as usize).collect(),
        me,
        ctx: BOOTSTRAP_CTX,
    };
    let _lock = Exclusive::acquire(cx.engine, &cx.comms.contexts)?;
    let mut words = cx.comms.free_words();
    net.allreduce_band(cx.engine, &mut words, bootstrap_tag(stringtag, members))?;
    make::take(cx, &words, true)
}

/// `MPI_Comm_create_from_group` at a member of `group`: the new communicator over `group`
/// (ranks in group order), with error handler `errhandler`. Returns its handle.
pub(crate) fn comm_from_group(
    cx: &mut Cx<'_>,
    group: Group,
    stringtag: &str,
    errhandler: MPI_Errhandler,
) -> MpiResult<MPI_Comm> {
    let me = cx.engine.p2p_ref().rank();
    let job = cx.engine.p2p_ref().size();
    let rank = group.local(me).ok_or_else(not_a_member)?;
    let ctxs = agree_among(cx, group.ranks(), rank, stringtag)?;
    let size = group.size();
    let mut c = Comm::new(
        String::new(),
        ctxs,
        rank,
        Members::of(group, job),
        size,
        None,
    );
    c.errhandler = errhandler;
    let idle = cx.idle();
    Ok(cx.comms.insert(c, idle).1)
}

/// `MPI_Intercomm_create_from_groups` at a member of `local`: the intercommunicator between
/// `local` and `remote` (disjoint), with error handler `errhandler`. Returns its handle.
pub(crate) fn intercomm_from_groups(
    cx: &mut Cx<'_>,
    local: Group,
    remote: Group,
    stringtag: &str,
    errhandler: MPI_Errhandler,
) -> MpiResult<MPI_Comm> {
    let me = cx.engine.p2p_ref().rank();
    let rank = local.local(me).ok_or_else(not_a_member)?;
    if let Some(&both) = remote
        .ranks()
        .iter()
        .find(|&&r| local.local(r as usize).is_some())
    {
        return Err(MpiError::new(
            MPI_ERR_GROUP,
            format!("the local and remote groups share the process of engine rank {both}; an intercommunicator joins two disjoint groups"),
        ));
    }
    // Every process of both groups computes the same union, in engine-rank order.
    let mut union: Vec<u32> = local
        .ranks()
        .iter()
        .chain(remote.ranks())
        .copied()
        .collect();
    union.sort_unstable();
    let at = union
        .binary_search(&(me as u32))
        .expect("this process is in its local group");
    let ctxs = agree_among(cx, &union, at, stringtag)?;
    let n = remote.size();
    let mut c = Comm::new(
        String::new(),
        ctxs,
        rank,
        Members::List(remote),
        n,
        Some(local),
    );
    c.errhandler = errhandler;
    let idle = cx.idle();
    Ok(cx.comms.insert(c, idle).1)
}

/// A leader argument: a rank of a group of `size`.
pub(crate) fn check_leader(leader: c_int, size: usize, which: &str) -> MpiResult<()> {
    if leader < 0 || leader as usize >= size {
        return Err(MpiError::new(
            MPI_ERR_RANK,
            format!(
                "the {which} leader is {leader}, not a rank of the {which} group (0..={})",
                size as i64 - 1
            ),
        ));
    }
    Ok(())
}

#[cold]
fn not_a_member() -> MpiError {
    MpiError::new(
        MPI_ERR_GROUP,
        "this process is not in the group; only the group's processes call this function",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_differ_by_string_tag_and_members_and_stay_in_range() {
        let a = bootstrap_tag("left", &[0, 1]);
        assert_ne!(a, bootstrap_tag("right", &[0, 1]));
        assert_ne!(a, bootstrap_tag("left", &[0, 2]));
        assert_eq!(a, bootstrap_tag("left", &[0, 1]));
        for t in ["", "x", "a much longer tag than usual"] {
            let tag = bootstrap_tag(t, &[3]);
            assert!((0x3600_0000..0x3600_0000 + (1 << 24)).contains(&tag));
            assert_eq!(tag % 64, 0);
            assert!(tag + 63 <= mpich_channel::TAG_UB);
        }
    }
}
