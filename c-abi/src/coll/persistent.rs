//! Persistent collectives (MPI 4.0 §6.13, and the neighbourhood ones of §8.6): the `_init`
//! call builds the schedule once; every `MPI_Start` replays it.
//!
//! ```text
//!   MPI_Allreduce_init ─▶ checks + the blocking form's builder ─▶ Schedule (replayable)
//!                         ─▶ inactive persistent engine request, the schedule its attachment
//!   MPI_Start ─▶ rewind the schedule ─▶ Engine::start_persistent_shared(request, schedule)
//!                ─▶ the progress engine polls it like any nonblocking collective
//!   MPI_Wait/Test ─▶ the request completes, becomes inactive again (schedule kept)
//!   MPI_Request_free (inactive) ─▶ request and schedule released
//! ```
//!
//! **Same builder, built once.** An init call runs exactly the argument checks and the
//! schedule builder of its blocking form (`api/persistent.rs` calls the same `*_s` function the
//! `collective!` macro uses), so the algorithm, peers, tags, temporaries and buffer layouts
//! are chosen once and the error classes are the blocking form's; whatever communicators the
//! blocking form accepts (intercommunicators once their builders handle them), the persistent
//! form accepts too. The schedule is marked replayable ([`super::Schedule`]'s rounds stay in
//! place as they run) and `MPI_Start` only rewinds it and hands it to the engine: a started
//! persistent collective posts the same transfers a blocking one does, without checks,
//! allocation of rounds, or algorithm choice (packing of scattered data is redone per run, as
//! it must be: the buffer's contents change).
//!
//! **Tags.** The schedule's collective sequence number is taken at init (a collective call,
//! made in the same order everywhere), and every run uses it again. Runs of one request never
//! overlap on one process (an active request cannot be started), and the engine matches
//! messages between two processes with one tag in the order they were posted, so run `n`'s
//! messages meet run `n`'s receives even when a fast process starts run `n + 1` early.
//!
//! **The request** is an ordinary persistent engine request ([`mpich_channel::Adi::persistent`])
//! whose attachment is the schedule, as one of point-to-point's foreign persistent requests
//! ([`crate::p2p::request::ForeignRun`], as partitioned communication's are): `MPI_Start` and
//! `MPI_Startall` check and start it as any persistent request and ask it for its run
//! (a shared reference to the schedule: no allocation per start), and the engine holds
//! another reference while the run is in flight ([`mpich_channel::SharedOperation`]). Its
//! communicator is the owner word, so completion, statuses and error handlers work as for
//! point-to-point persistent requests. The schedule is shared (`Rc<RefCell<_>>`) between that
//! attachment and the run the engine polls; only the one thread inside the library touches
//! either. A run that ends with an error (a truncated message) completes its request with
//! that error's class.

use super::Schedule;
use crate::abi::*;
use crate::error::{MpiError, MpiResult};
use crate::p2p::request::{self, Foreign, ForeignRun, SharedStart, Starter};
use mpich_channel::{Adi, AdiError, Engine, ReqId, SharedOperation, Status};
use std::any::Any;
use std::cell::RefCell;
use std::rc::Rc;

/// A persistent collective's schedule, shared between its request's attachment and the run
/// in the engine.
struct Replay {
    plan: RefCell<Schedule>,
}

/// A run of a persistent collective, as an operation of the progress engine: the engine
/// holds another reference to the schedule while the run is in flight.
impl SharedOperation for Replay {
    fn poll_shared(&self, p2p: &mut Adi) -> Result<Option<Status>, AdiError> {
        let mut plan = self.plan.borrow_mut();
        if !plan.poll(p2p)? {
            return Ok(None);
        }
        let mut status = Status::default();
        if let Some(e) = plan.take_error() {
            status.error = e.class;
        }
        Ok(Some(status))
    }
}

/// A persistent collective request's attachment (inside point-to-point's [`Foreign`]): its
/// schedule.
struct PersistentCollective {
    replay: Rc<Replay>,
}

/// Makes the inactive persistent request that replays `s` at each start; returns its handle.
pub(crate) fn init(engine: &mut Engine, mut s: Schedule) -> MpiResult<MPI_Request> {
    s.make_replayable();
    let comm = s.comm;
    let attachment = Foreign(Box::new(PersistentCollective {
        replay: Rc::new(Replay {
            plan: RefCell::new(s),
        }),
    }));
    let id = engine
        .p2p()
        .persistent(comm, Box::new(attachment))
        .map_err(|e| MpiError::from(e).on(comm))?;
    Ok(request::handle(engine, id))
}

/// `MPI_Start` (through point-to-point's foreign requests): the next run rewinds the
/// schedule and is handed to the engine under the request, which runs it as far as it goes
/// at once (a run that completes there, a broadcast's root whose short sends went out,
/// completes its request at once) and polls it on every turn until it is over.
impl SharedStart for Replay {
    fn start(self: Rc<Self>, engine: &mut Engine, id: ReqId) -> MpiResult<()> {
        self.plan.borrow_mut().rewind();
        engine
            .start_persistent_shared(id, self)
            .map_err(MpiError::from)
    }
}

impl ForeignRun for PersistentCollective {
    fn starter(&mut self) -> Starter {
        let replay = Rc::clone(&self.replay);
        Box::new(move |engine: &mut Engine, id| replay.start(engine, id))
    }
    fn shared_start(&self) -> Option<Rc<dyn SharedStart>> {
        Some(Rc::clone(&self.replay) as Rc<dyn SharedStart>)
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}
