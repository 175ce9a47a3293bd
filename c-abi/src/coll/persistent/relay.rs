//! The short path of a relay schedule (see the parent module's documentation): a broadcast's
//! tree or a neighbourhood exchange on contiguous data, run without rounds.

use crate::abi::*;
use crate::coll::sched::{Relay, Transfer};
use crate::coll::Schedule;
use crate::error::MpiResult;
use crate::p2p::request::SharedStart;
use mpich_channel::{Adi, AdiError, Engine, ReqId, SendMode, SharedOperation, Status};
use std::cell::RefCell;
use std::rc::Rc;

/// The short path of a relay schedule (see the module's documentation): its transfers, the
/// schedule itself (kept whole: it owns whatever the transfers point into), and the run in
/// flight.
pub(super) struct RelayRun {
    relay: Relay,
    /// The one receive of a relay that only receives (a broadcast's leaf).
    leaf: Option<Transfer>,
    _plan: Schedule,
    state: RefCell<RelayState>,
}

/// Where a relay's run is: nothing in flight between runs.
#[derive(Default)]
struct RelayState {
    /// The receives that have not completed yet.
    recvs: Vec<ReqId>,
    /// The sends the route could not take at once, until they complete.
    sends: Vec<ReqId>,
    /// The sends have gone out (or been started) in this run.
    sent: bool,
    /// A received message was longer than its buffer (the run ends with
    /// `MPI_ERR_TRUNCATE`, once the data went on as it is, as a schedule's does).
    truncated: bool,
}

impl RelayRun {
    /// The short path of `plan`, which `relay` describes (`plan` is kept whole: it owns
    /// whatever the transfers point into).
    pub fn new(relay: Relay, plan: Schedule) -> RelayRun {
        RelayRun {
            leaf: match (&relay.recvs[..], &relay.sends[..]) {
                ([r], []) => Some(*r),
                _ => None,
            },
            relay,
            _plan: plan,
            state: RefCell::default(),
        }
    }

    /// Runs as far as it goes now: the receives (with one look at the channel if their
    /// messages are not among the unexpected ones yet) and the sends (at once in an exchange,
    /// once the receive is over in a forward relay). The run's status if it is over.
    fn begin(&self, adi: &mut Adi) -> Result<Option<Status>, AdiError> {
        let mut st = self.state.borrow_mut();
        // Nothing is in flight between runs (unless a run ended with the engine's failure).
        st.sends.clear();
        st.truncated = false;
        if self.relay.recvs.is_empty() {
            // A broadcast's root (or an exchange that only sends): done once its sends are.
            self.send_all(adi, &mut st)?;
            return Ok(st.sends.is_empty().then(|| outcome(&st)));
        }
        st.sent = false;
        st.recvs.clear();
        for r in &self.relay.recvs {
            let buf = crate::cptr::nonnull_or_dangling(r.data).cast_mut();
            // SAFETY: a receive buffer of the persistent collective (the caller's, valid
            // and untouched by the program from MPI_Start until the request completes,
            // MPI's rule), `bytes` long.
            let req = unsafe {
                adi.irecv(
                    buf,
                    r.bytes,
                    r.peer as i32,
                    r.tag,
                    self.relay.ctx,
                    self.relay.comm,
                )
            }?;
            st.recvs.push(req);
        }
        if !self.relay.forward {
            self.send_all(adi, &mut st)?;
        }
        if st.recvs.iter().any(|&r| !adi.is_complete(r)) {
            adi.progress()?;
        }
        self.advance(adi, &mut st)
    }

    /// Retires the receives that completed and, once they all have, sends (a forward relay's
    /// sends wait for its receive) and retires the sends. The run's status once it is over.
    fn advance(&self, adi: &mut Adi, st: &mut RelayState) -> Result<Option<Status>, AdiError> {
        let mut i = 0;
        while i < st.recvs.len() {
            let req = st.recvs[i];
            if adi.is_complete(req) {
                st.recvs.swap_remove(i);
                let status = adi.take(req)?.expect("a complete request");
                st.truncated |= status.truncated;
            } else {
                i += 1;
            }
        }
        if !st.recvs.is_empty() {
            return Ok(None);
        }
        if !st.sent {
            self.send_all(adi, st)?;
        }
        if st.sends.iter().any(|&s| !adi.is_complete(s)) {
            return Ok(None);
        }
        for s in st.sends.drain(..) {
            adi.take(s)?;
        }
        Ok(Some(outcome(st)))
    }

    /// Sends the data to every peer, at once where the route takes it.
    fn send_all(&self, adi: &mut Adi, st: &mut RelayState) -> Result<(), AdiError> {
        st.sent = true;
        let ctx = self.relay.ctx;
        for &Transfer {
            peer,
            tag,
            data,
            bytes,
        } in &self.relay.sends
        {
            let ptr = crate::cptr::nonnull_or_dangling(data);
            // SAFETY: the persistent collective's buffer (valid and unmodified until the
            // request completes, MPI's rule), `bytes` long; `send_now` copies it out before
            // it returns.
            if adi.send_now(
                unsafe { std::slice::from_raw_parts(ptr, bytes) },
                peer,
                tag,
                ctx,
                SendMode::Standard,
            )? {
                continue;
            }
            // SAFETY: as above; the request completes before the run does.
            let req = unsafe {
                adi.isend(
                    ptr,
                    bytes,
                    peer,
                    tag,
                    ctx,
                    SendMode::Standard,
                    self.relay.comm,
                )
            }?;
            st.sends.push(req);
        }
        Ok(())
    }
}

/// The status a relay's run completes its request with.
fn outcome(st: &RelayState) -> Status {
    Status {
        error: if st.truncated { MPI_ERR_TRUNCATE } else { 0 },
        ..Status::default()
    }
}

/// A relay's run that did not end at its start, as an operation of the progress engine.
impl SharedOperation for RelayRun {
    /// A relay moves when one of its receives or sends completes.
    fn moves_on_events(&self) -> bool {
        true
    }

    fn poll_shared(&self, adi: &mut Adi) -> Result<Option<Status>, AdiError> {
        let mut st = self.state.borrow_mut();
        // The common case while the run waits: nothing new has completed.
        if st.recvs.first().is_some_and(|&r| !adi.is_complete(r)) {
            return Ok(None);
        }
        self.advance(adi, &mut st)
    }
}

/// `MPI_Start` of a relay: what can be done at once is done; a run that is over then
/// completes its request without the engine, any other is handed to it.
impl SharedStart for RelayRun {
    fn start(self: Rc<Self>, engine: &mut Engine, id: ReqId) -> MpiResult<()> {
        let adi = engine.p2p();
        if let Some(r) = &self.leaf {
            // A leaf: the run is its receive, made in the request itself (as a persistent
            // receive's start), with one look at the channel if its message has not arrived.
            let buf = crate::cptr::nonnull_or_dangling(r.data).cast_mut();
            // SAFETY: as in `begin`: the persistent collective's receive buffer.
            unsafe {
                adi.start_persistent_recv(id, buf, r.bytes, r.peer as i32, r.tag, self.relay.ctx)
            }?;
            if !adi.is_complete(id) {
                adi.progress()?;
            }
            return Ok(());
        }
        match self.begin(adi)? {
            Some(status) => adi.start_persistent_done(id, status)?,
            None => engine.start_persistent_shared(id, self)?,
        }
        Ok(())
    }
}
