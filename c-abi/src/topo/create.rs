//! Communicators with a topology: the first `n` processes of the parent, the topology
//! attached.

use super::Topology;
use crate::abi::*;
use crate::comm::make::Cx;
use crate::comm::CommIdx;
use crate::error::MpiResult;
use crate::group::GroupData;
use std::rc::Rc;

/// Creates the communicator of the first `n` processes of `parent` (the others get
/// `MPI_COMM_NULL`) with topology `topo`.
pub(crate) fn create_with(
    cx: &mut Cx<'_>,
    parent: CommIdx,
    n: usize,
    topo: Topology,
) -> MpiResult<MPI_Comm> {
    let c = cx.comms.get(parent);
    let group =
        (c.rank < n).then(|| GroupData::new((0..n).map(|i| c.local_global(i) as u32).collect()));
    let made = crate::comm::create::create_from(cx, parent, group)?;
    Ok(match made {
        Some((idx, handle)) => {
            cx.comms.get_mut(idx).topo = Some(Rc::new(topo));
            handle
        }
        None => MPI_COMM_NULL,
    })
}
