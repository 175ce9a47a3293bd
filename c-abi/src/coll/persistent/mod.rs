//! Persistent collectives (MPI 4.0 §6.13, and the neighbourhood ones of §8.6): the `_init`
//! call builds the schedule once; every `MPI_Start` replays it.
//!
//! ```text
//!   MPI_Allreduce_init ─▶ checks + the blocking form's builder ─▶ Schedule (replayable)
//!                         ─▶ inactive persistent engine request, the schedule its attachment
//!   MPI_Start ─▶ rewind the schedule ─▶ Engine::start_persistent_shared(request, schedule)
//!                ─▶ the progress engine polls it like any nonblocking collective
//!   MPI_Start of a relay (a broadcast's tree) ─▶ receive matched now? forward (send_now)
//!                ─▶ over: the request completes at once, never entering the engine
//!   MPI_Start of an exchange (a neighbourhood collective) ─▶ post the receives, send_now
//!                ─▶ all received at once? over; otherwise the engine polls the receives
//!   MPI_Start of a chain (one send and one receive per round) ─▶ rounds as far as they go
//!                ─▶ over? done at once; otherwise the engine polls the round in flight
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
//! **The short path: relays.** A schedule that only receives one message and forwards it
//! (a broadcast's binomial tree on contiguous data: [`super::sched::Plan::relay`]) runs
//! without its rounds, as the blocking broadcast runs without a schedule
//! (`super::direct`): at `MPI_Start` the receive is posted (matched at once when its message
//! is among the unexpected ones) and, if it has not matched, the channel is looked at once, so
//! that a message already there lands now; once received, the data goes to the children by
//! `Adi::send_now` (no request). A run that got that far is over at `MPI_Start`: its request
//! completes there without ever entering the engine, and `MPI_Wait` only retires it. A run
//! whose message has not arrived, or whose sends the route could not take at once, is
//! handed to the engine as any run and polled on every turn until its receive and sends
//! complete. A leaf's run (a receive and nothing to forward) is its receive, started in the
//! request itself as a persistent receive's is: it completes in the engine when its message
//! lands, as `MPI_Recv_init`'s would, and its status is made a collective's (empty, the
//! error class of a truncation) as it completes. Same peers, tags and order as the schedule,
//! so a rank on this path meets a rank on the schedule path (a non-contiguous datatype on one
//! rank only).
//!
//! **The short path: exchanges.** A schedule of one round of contiguous receives and sends
//! and nothing else (a neighbourhood collective on contiguous blocks, whatever its topology:
//! [`super::sched::Plan::relay`] again) runs as the hand-written persistent halo exchange
//! would: at `MPI_Start` every receive is posted (in the schedule's order), every send goes
//! out by `Adi::send_now` (an `Adi::isend` only when the route cannot take it), and if a
//! receive has not matched the channel is looked at once. A run whose receives all matched
//! then is over at `MPI_Start`; any other is polled by the engine, which retires the
//! receives as they complete, with no rounds, no schedule walk and no reaping of transfers
//! that have nothing to unpack. Same peers, tags and per-peer order as the schedule's round.
//!
//! **The short path: chains.** A schedule whose every round sends at most one contiguous
//! message and receives at most one ([`super::sched::Plan::chain`]: a short
//! `MPI_Allreduce_init`'s recursive doubling, `MPI_Barrier_init`'s dissemination, binomial
//! reduce and scan trees) runs its rounds with one request per direction (`chain.rs`): the
//! round's local steps, its send by `Adi::send_now`, its receive (matched at once when its
//! message is here), and on to the next round while they complete at once. Same rounds,
//! peers, tags and local steps as the generic run; it spares the generic run's list of
//! transfers in flight and its staging. Measured with callgrind (4 ranks, 8-byte
//! `MPI_Allreduce_init`, rank 0): the run's polls 2.2k -> 1.2k instructions per run, Start
//! and Wait together about what one blocking `MPI_Allreduce` costs.
//!
//! Runs in the engine are polled only on turns after something arrived or left
//! (`SharedOperation::moves_on_events`), not on each of the thousands of idle turns of a
//! wait.
//!
//! **The request** is an ordinary persistent engine request ([`mpich_channel::Adi::persistent`])
//! whose attachment is the schedule (or the relay), as one of point-to-point's foreign persistent requests
//! ([`crate::p2p::request::ForeignRun`], as partitioned communication's are): `MPI_Start` and
//! `MPI_Startall` check and start it as any persistent request and ask it for its run
//! (a shared reference to the schedule: no allocation per start), and the engine holds
//! another reference while the run is in flight ([`mpich_channel::SharedOperation`]). Its
//! communicator is the owner word, so completion, statuses and error handlers work as for
//! point-to-point persistent requests. The schedule is shared (`Rc<RefCell<_>>`) between that
//! attachment and the run the engine polls; only the one thread inside the library touches
//! either. A run that ends with an error (a truncated message) completes its request with
//! that error's class.

mod chain;
mod relay;

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
    /// A schedule moves when one of its transfers completes.
    fn moves_on_events(&self) -> bool {
        true
    }

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

/// A persistent collective request's attachment (inside point-to-point's [`Foreign`]): what
/// each start runs, a schedule or a relay.
struct PersistentCollective {
    run: Rc<dyn SharedStart>,
}

/// Makes the inactive persistent request that replays `s` at each start; returns its handle.
pub(crate) fn init(engine: &mut Engine, mut s: Schedule) -> MpiResult<MPI_Request> {
    s.make_replayable();
    let comm = s.comm;
    let run: Rc<dyn SharedStart> = if let Some(relay) = s.relay() {
        Rc::new(relay::RelayRun::new(relay, s))
    } else if let Some(links) = s.chain() {
        Rc::new(chain::ChainRun::new(links, s))
    } else {
        Rc::new(Replay {
            plan: RefCell::new(s),
        })
    };
    let attachment = Foreign(Box::new(PersistentCollective { run }));
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
    fn cancellable(&self) -> bool {
        false
    }

    /// A run's status as a collective's: empty, with `MPI_ERR_TRUNCATE` for a receive that
    /// was cut (a leaf's run is a receive in the request itself).
    fn complete(&mut self, status: &mut Status) {
        if status.truncated {
            status.error = MPI_ERR_TRUNCATE;
        }
        *status = Status {
            error: status.error,
            ..Status::default()
        };
    }
    fn starter(&mut self) -> Starter {
        let run = Rc::clone(&self.run);
        Box::new(move |engine: &mut Engine, id| run.start(engine, id))
    }
    fn shared_start(&self) -> Option<Rc<dyn SharedStart>> {
        Some(Rc::clone(&self.run))
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}
