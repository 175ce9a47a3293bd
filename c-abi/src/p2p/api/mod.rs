//! The C entry points of point-to-point communication, in groups: [`blocking`] (sends,
//! receives and probes that wait), [`nonblocking`] (nonblocking and persistent starts),
//! [`completion`] (wait, test, free, cancel), [`mprobe`] (matched probes), [`status`]
//! (reading and setting statuses), [`bsend`] (the attached buffer), [`grequest`]
//! (generalized requests), [`tag_lanes`] (a send and a receive on two lanes of one
//! communicator routed by tag). Each builds the point-to-point context
//! ([`super::Cx`]) from the running state, checks its arguments and calls the Rust API.

mod blocking;
mod bsend;
mod completion;
mod grequest;
mod mprobe;
mod nonblocking;
mod status;
mod tag_lanes;

use crate::abi::{MPI_Comm, MPI_Request};
use crate::runtime::thread::LaneProbe;

/// The lane of communicator `comm`'s point-to-point traffic with tag `tag`, for a call that
/// may take the lane path (`runtime::thread::lane`); `None` for a handle that names no
/// communicator (the exclusive path reports it).
fn comm_lane(probe: &mut LaneProbe, comm: MPI_Comm, tag: std::ffi::c_int) -> Option<usize> {
    let rt = probe.rt()?;
    rt.comms
        .lookup(comm)
        .ok()
        .map(|(_, c)| rt.lane_of(c.ctx, tag))
}

/// The lane of a send with `sendtag` and a receive with `recvtag` on `comm` if they share one
/// (else `None`: the exclusive path runs them on their two lanes).
fn sendrecv_lane(
    probe: &mut LaneProbe,
    comm: MPI_Comm,
    sendtag: std::ffi::c_int,
    recvtag: std::ffi::c_int,
) -> Option<usize> {
    let lane = comm_lane(probe, comm, sendtag)?;
    (comm_lane(probe, comm, recvtag)? == lane).then_some(lane)
}

/// The lane of the request `*request` names, from its handle alone; `None` for a NULL
/// pointer (the exclusive path reports it).
fn request_lane(probe: &mut LaneProbe, request: *const MPI_Request) -> Option<usize> {
    // SAFETY: `request` is the program's pointer to one request handle (MPI's contract),
    // or NULL, which `as_ref` turns into `None`.
    let h = unsafe { request.as_ref() }?;
    Some(probe.lane_of_request(*h))
}

/// [`handles_lane`] for a call that may take the lane path: from the handles alone.
fn requests_lane(
    probe: &mut LaneProbe,
    count: std::ffi::c_int,
    requests: *const MPI_Request,
) -> Option<usize> {
    handles_lane(|h| probe.lane_of_request(h), count, requests)
}

/// The lane of every non-null handle of `requests[..count]` (`lane_of` says each one's) if
/// they share one (`None` for handles on several lanes, or arguments the exclusive path must
/// report).
fn handles_lane(
    lane_of: impl Fn(MPI_Request) -> usize,
    count: std::ffi::c_int,
    requests: *const MPI_Request,
) -> Option<usize> {
    let n = usize::try_from(count).ok()?;
    if n == 0 || requests.is_null() {
        return None;
    }
    // SAFETY: `requests` points to `count` request handles (MPI's contract), checked non-NULL.
    let handles = unsafe { std::slice::from_raw_parts(requests, n) };
    let mut lane = None;
    for &h in handles {
        if h == crate::abi::MPI_REQUEST_NULL {
            continue;
        }
        let k = lane_of(h);
        match lane {
            None => lane = Some(k),
            Some(l) if l != k => return None,
            _ => {}
        }
    }
    lane
}
