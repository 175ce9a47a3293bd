//! The short path of a chain schedule (see the parent module's documentation): every round
//! sends at most one contiguous message and receives at most one, after its local steps
//! (`sched::Plan::chain`): a short `MPI_Allreduce_init`'s recursive doubling, binomial
//! reduce and scan trees, the dissemination barrier.
//!
//! ```text
//!   round i: local steps (copy, reduce) ─▶ send (send_now; an isend only if the route is
//!            full or the message long) ─▶ receive (irecv: matched at once if it is here)
//!            ─▶ both done? round i + 1 at once : wait for the next event
//! ```
//!
//! The same rounds, peers, tags and local steps as the schedule's generic run (so a rank on
//! this path meets a rank on the other, and the results are the same to the bit); what it
//! saves is the generic run's bookkeeping: one request per direction instead of the list of
//! transfers in flight, no staging, no rounds moved about.

use crate::coll::sched::Link;
use crate::coll::Schedule;
use crate::error::MpiResult;
use crate::p2p::request::SharedStart;
use mpich_channel::{Adi, AdiError, Engine, ReqId, SendMode, SharedOperation, Status};
use std::cell::RefCell;
use std::rc::Rc;

/// A persistent collective whose schedule is a chain.
pub(super) struct ChainRun {
    links: Vec<Link>,
    /// The schedule: its local steps, its error, and whatever the links point into.
    plan: RefCell<Schedule>,
    state: RefCell<ChainState>,
}

/// Where a run is: the next round, and the transfers of the round in flight.
#[derive(Default)]
struct ChainState {
    next: usize,
    send: Option<ReqId>,
    recv: Option<(ReqId, usize)>,
}

impl ChainRun {
    pub fn new(links: Vec<Link>, plan: Schedule) -> ChainRun {
        ChainRun {
            links,
            plan: RefCell::new(plan),
            state: RefCell::default(),
        }
    }

    /// Runs rounds until one waits for a message or a send; the run's status once it is
    /// over.
    fn advance(&self, adi: &mut Adi, st: &mut ChainState) -> Result<Option<Status>, AdiError> {
        let mut plan = self.plan.borrow_mut();
        loop {
            if let Some((req, room)) = st.recv {
                if !adi.is_complete(req) {
                    return Ok(None);
                }
                st.recv = None;
                if adi.take(req)?.is_some_and(|s| s.truncated) {
                    plan.note_truncated(room);
                }
            }
            if let Some(req) = st.send {
                if !adi.is_complete(req) {
                    return Ok(None);
                }
                st.send = None;
                adi.take(req)?;
            }
            let i = st.next;
            let Some(link) = self.links.get(i) else {
                let mut status = Status::default();
                if let Some(e) = plan.take_error() {
                    status.error = e.class;
                }
                return Ok(Some(status));
            };
            st.next += 1;
            plan.run_locals(i);
            let (ctx, comm) = (plan.ctx(), plan.comm);
            if let Some(t) = link.send {
                let ptr = crate::cptr::nonnull_or_dangling(t.data);
                // SAFETY: the collective's buffer or the schedule's temporary, `bytes` long,
                // unchanged until this send completes (the next round's steps wait for it);
                // `send_now` copies it out before it returns.
                let bytes = unsafe { std::slice::from_raw_parts(ptr, t.bytes) };
                if !adi.send_now(bytes, t.peer, t.tag, ctx, SendMode::Standard)? {
                    // SAFETY: as above; the request completes before the round is over.
                    let req = unsafe {
                        adi.isend(ptr, t.bytes, t.peer, t.tag, ctx, SendMode::Standard, comm)
                    }?;
                    st.send = Some(req);
                }
            }
            if let Some(t) = link.recv {
                let buf = crate::cptr::nonnull_or_dangling(t.data).cast_mut();
                // SAFETY: the collective's buffer or the schedule's temporary, `bytes` long,
                // untouched by anything else until the receive completes.
                let req = unsafe { adi.irecv(buf, t.bytes, t.peer as i32, t.tag, ctx, comm) }?;
                st.recv = Some((req, t.bytes));
            }
        }
    }
}

/// A run that did not end at its start, as an operation of the progress engine.
impl SharedOperation for ChainRun {
    /// A chain moves when its receive or send completes.
    fn moves_on_events(&self) -> bool {
        true
    }

    fn poll_shared(&self, adi: &mut Adi) -> Result<Option<Status>, AdiError> {
        let mut st = self.state.borrow_mut();
        self.advance(adi, &mut st)
    }
}

/// `MPI_Start` of a chain: the rounds that can run at once do; a run that is over then
/// completes its request without the engine, any other is handed to it.
impl SharedStart for ChainRun {
    fn start(self: Rc<Self>, engine: &mut Engine, id: ReqId) -> MpiResult<()> {
        let adi = engine.p2p();
        let over = {
            let mut st = self.state.borrow_mut();
            // Nothing is in flight between runs (unless a run ended with the engine's
            // failure, which ends the job).
            *st = ChainState::default();
            self.advance(adi, &mut st)?
        };
        match over {
            Some(status) => adi.start_persistent_done(id, status)?,
            None => engine.start_persistent_shared(id, self)?,
        }
        Ok(())
    }
}
