//! A send and a receive of one call on two lanes: on a communicator whose point-to-point
//! context routes by tag (`mpi_assert_no_any_tag`, `comm::context::lane_of`), the send tag and
//! the receive tag of `MPI_Sendrecv` may belong to different lanes, and each half must run on
//! its own (the answers to the send come back to the send tag's lane; the message to receive
//! arrives on the receive tag's). The blocking calls start both and wait for both
//! ([`sendrecv_apart`]); the nonblocking ones, whose single request lives on one lane, refuse
//! ([`isendrecv_apart`]).

use crate::abi::MPI_ERR_TAG;
use crate::error::{MpiError, MpiResult};
use crate::p2p::args::{RecvOp, SendKind, SendOp};
use crate::p2p::completion::{poll, Finished, How};
use crate::p2p::nonblocking::{record, start_recv, start_send};
use crate::runtime::thread::Calling;
use std::ffi::c_int;

/// `MPI_Sendrecv` with its send (`s`, which sends from a buffer the receive does not write)
/// and its receive `r` on different lanes: each started on its lane, then both waited for
/// together (a wait that lets the lock go when the call does). The receive's completion, or
/// the send's error.
pub(super) fn sendrecv_apart(call: &mut Calling, s: &SendOp, r: &RecvOp) -> MpiResult<Finished> {
    let rt = call.state().runtime()?;
    let mut send = {
        let cx = &mut rt.p2p_on(s.ctx, s.tag);
        let id = start_send(cx, s, SendKind::Standard)?;
        record(cx, id)
    };
    let mut recv = {
        let cx = &mut rt.p2p_on(r.ctx, r.tag);
        match start_recv(cx, r) {
            Ok(id) => record(cx, id),
            Err(e) => {
                // The send is left to finish on its own: the call fails, its buffer is the
                // program's again once the send is over, which the wait below makes sure of.
                let _ = call.wait_request(send);
                return Err(e);
            }
        }
    };
    let (mut sent, mut got) = (None, None);
    call.wait_until(|st| {
        let rt = st.runtime()?;
        if sent.is_none() {
            sent = poll(&mut rt.p2p_for_request(send), &mut send, How::Test)?;
        }
        if got.is_none() {
            got = poll(&mut rt.p2p_for_request(recv), &mut recv, How::Test)?;
        }
        Ok((sent.is_some() && got.is_some()).then_some(()))
    })?;
    let (sent, got) = (
        sent.expect("the send is over"),
        got.expect("the receive is over"),
    );
    sent.check()?;
    Ok(got)
}

/// `MPI_Isendrecv` whose send and receive tags go to different lanes of a communicator routed
/// by tag: refused, with what to do instead.
#[cold]
pub(super) fn isendrecv_apart(sendtag: c_int, recvtag: c_int) -> MpiError {
    MpiError::new(
        MPI_ERR_TAG,
        format!(
            "MPI_Isendrecv with send tag {sendtag} and receive tag {recvtag} on a communicator \
             with mpi_assert_no_any_tag, whose tags run on different lanes here: one request \
             cannot span two lanes; use MPI_Isend and MPI_Irecv (or MPI_Sendrecv, or tags of \
             one lane, or MPI_LANES=1)"
        ),
    )
}
