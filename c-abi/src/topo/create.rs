//! Communicators with a topology: the first `n` processes of the parent, the topology
//! attached. [`create_with_call`] is the blocking calls' entry: under
//! `MPI_THREAD_MULTIPLE` its agreement waits with the process's lock let go
//! (`comm::waiting`), otherwise it is [`create_with`].

use super::Topology;
use crate::abi::*;
use crate::comm::make::Cx;
use crate::comm::CommIdx;
use crate::error::MpiResult;
use crate::group::{Group, GroupData};
use crate::runtime::thread::Calling;
use std::rc::Rc;

/// The group of the first `n` processes of `c`, if this process is one of them.
fn first_n(c: &crate::comm::Comm, n: usize) -> Option<Group> {
    (c.rank < n).then(|| GroupData::new((0..n).map(|i| c.local_global(i) as u32).collect()))
}

/// [`create_with`] written once for a call's two ways of waiting (`comm::make::Steps`: a
/// held [`Cx`], or a blocking call's [`Calling`]).
pub(crate) fn create_with_steps(
    a: &mut impl crate::comm::make::Steps,
    parent: CommIdx,
    n: usize,
    topo: Topology,
) -> MpiResult<MPI_Comm> {
    let group = a.cx(|cx| Ok(first_n(cx.comms.get(parent), n)))?;
    let ctxs = a.agree(parent, group.is_some())?;
    a.cx(|cx| {
        Ok(match group {
            Some(g) => {
                let (idx, handle) = crate::comm::make::install(cx, parent, ctxs, g);
                cx.comms.get_mut(idx).topo = Some(Rc::new(topo));
                handle
            }
            None => MPI_COMM_NULL,
        })
    })
}

/// [`create_with`] for the blocking call `call`: its agreement in a wait that lets the lock
/// go when the call's waits do.
pub(crate) fn create_with_call(
    call: &mut Calling,
    parent: CommIdx,
    n: usize,
    topo: Topology,
) -> MpiResult<MPI_Comm> {
    if !call.releases() {
        return create_with(&mut call.state().runtime()?.comm(), parent, n, topo);
    }
    let group = first_n(call.state().runtime()?.comms.get(parent), n);
    let made = crate::comm::waiting::create_from_waiting(call, parent, group)?;
    Ok(match made {
        Some((idx, handle)) => {
            call.state().runtime()?.comms.get_mut(idx).topo = Some(Rc::new(topo));
            handle
        }
        None => MPI_COMM_NULL,
    })
}

/// Creates the communicator of the first `n` processes of `parent` (the others get
/// `MPI_COMM_NULL`) with topology `topo`.
pub(crate) fn create_with(
    cx: &mut Cx<'_>,
    parent: CommIdx,
    n: usize,
    topo: Topology,
) -> MpiResult<MPI_Comm> {
    let group = first_n(cx.comms.get(parent), n);
    let made = crate::comm::create::create_from(cx, parent, group)?;
    Ok(match made {
        Some((idx, handle)) => {
            cx.comms.get_mut(idx).topo = Some(Rc::new(topo));
            handle
        }
        None => MPI_COMM_NULL,
    })
}
