//! Communicators made from groups alone: what `MPI_Comm_create_from_group` and
//! `MPI_Intercomm_create_from_groups` do (the design is in the module documentation of
//! `session`: a bootstrap exchange among the members, on [`BOOTSTRAP_CTX`], tagged by a hash of
//! the string tag and the members).

use crate::abi::*;
use crate::comm::make::{agree_among, Steps};
use crate::comm::{Comm, Members};
use crate::error::{MpiError, MpiResult};
use crate::group::Group;
use std::ffi::c_int;

/// The name of a bootstrap exchange: an FNV-1a hash of the string tag and the members'
/// engine ranks (its schedules' tags carry 14 bits of it: `coll::Team::named`).
pub(crate) fn bootstrap_name(stringtag: &str, members: &[u32]) -> u32 {
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
    h ^ (h >> 18)
}

/// `MPI_Comm_create_from_group` at a member of `group`: the new communicator over `group`
/// (ranks in group order), with error handler `errhandler`. Returns its handle.
pub(crate) fn comm_from_group(
    a: &mut impl Steps,
    group: Group,
    stringtag: &str,
    errhandler: MPI_Errhandler,
) -> MpiResult<MPI_Comm> {
    let (me, job) = a.cx(|cx| Ok((cx.engine.p2p_ref().rank(), cx.engine.p2p_ref().size())))?;
    let rank = group.local(me).ok_or_else(not_a_member)?;
    let ctxs = agree_among(
        a,
        group.ranks(),
        rank,
        bootstrap_name(stringtag, group.ranks()),
    )?;
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
    a.cx(|cx| {
        let idle = cx.idle();
        Ok(cx.comms.insert(c, idle).1)
    })
}

/// `MPI_Intercomm_create_from_groups` at a member of `local`: the intercommunicator between
/// `local` and `remote` (disjoint), with error handler `errhandler`. Returns its handle.
pub(crate) fn intercomm_from_groups(
    a: &mut impl Steps,
    local: Group,
    remote: Group,
    stringtag: &str,
    errhandler: MPI_Errhandler,
) -> MpiResult<MPI_Comm> {
    let me = a.cx(|cx| Ok(cx.engine.p2p_ref().rank()))?;
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
    let ctxs = agree_among(a, &union, at, bootstrap_name(stringtag, &union))?;
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
    a.cx(|cx| {
        let idle = cx.idle();
        Ok(cx.comms.insert(c, idle).1)
    })
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
    fn names_differ_by_string_tag_and_members() {
        let a = bootstrap_name("left", &[0, 1]);
        assert_ne!(a, bootstrap_name("right", &[0, 1]));
        assert_ne!(a, bootstrap_name("left", &[0, 2]));
        assert_eq!(a, bootstrap_name("left", &[0, 1]));
        // The 14 bits the exchange's tags carry differ too.
        assert_ne!(a & 0x3fff, bootstrap_name("right", &[0, 1]) & 0x3fff);
    }
}
