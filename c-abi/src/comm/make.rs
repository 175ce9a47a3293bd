//! What every communicator-creating call shares: its context ([`Cx`]), the agreement on a
//! context pair, and storing the new communicator.
//!
//! ```text
//!   agree (rounds of allreduce of free-pair masks over the parent, both groups of an
//!   intercommunicator included, `agree`'s protocol; `agree_among` runs it over processes no
//!   communicator spans: `MPI_Intercomm_create`'s union of both groups, the sessions' groups)
//!   ──▶ take (the lowest pair) ──▶ install / CommTable::insert
//! ```

use super::agree::Agreement;
use super::net::{as_bytes, as_bytes_mut, Net, Progress, TAG_ALLREDUCE, TAG_BCAST, TAG_LEADERS};
use super::{Comm, CommIdx, CommTable, Members};
use crate::abi::*;
use crate::attr::KeyvalTable;
use crate::coll::Schedule;
use crate::error::{MpiError, MpiResult};
use crate::group::Group;
use crate::runtime::thread::Calling;
use mpich_channel::Engine;
use mpich_channel::{Adi, AdiError, Operation, Status};
use std::ffi::c_int;

/// What creating and freeing communicators works on: the progress engine (the agreement's
/// messages), the communicators, the keyvals (a duplicate's attributes are copied, a freed
/// communicator's deleted, through their callbacks), and the collectives' spare schedule (the
/// agreement over an intracommunicator is a collective). A bundle of borrows of the running
/// state's fields, made per call (`Runtime::comm`).
pub(crate) struct Cx<'a> {
    pub engine: &'a mut Engine,
    pub comms: &'a mut CommTable,
    pub keyvals: &'a KeyvalTable,
    pub spare: &'a mut Option<Schedule>,
}

impl Cx<'_> {
    /// Whether no request is outstanding (then the slots of freed communicators can be
    /// reused).
    pub fn idle(&self) -> bool {
        self.engine.p2p_ref().requests_live() == 0
    }
}

/// How a creating call that exchanges through [`Net`] reaches the communicators and waits
/// (`comm::inter`): a [`Cx`] held for the whole call (its waits in the engine's loop), or a
/// blocking call's [`Calling`], which reaches the state afresh at each step and whose waits
/// let the process's lock go (`MPI_THREAD_MULTIPLE`, `runtime::thread`). The same messages
/// either way.
pub(crate) trait Steps: Progress {
    /// Runs `f` on the communicators (and the engine, the keyvals...).
    fn cx<T>(&mut self, f: impl FnOnce(&mut Cx<'_>) -> MpiResult<T>) -> MpiResult<T>;

    /// [`agree`] on `parent`.
    fn agree(&mut self, parent: CommIdx, keep: bool) -> MpiResult<(u16, u16)>;

    /// Runs `agreement` (made by this call, blocking: `Agreement::new(.., false, ..)`) to its
    /// end.
    fn run_agreement(&mut self, agreement: Agreement) -> MpiResult<(u16, u16)>;
}

impl Progress for Cx<'_> {
    #[inline]
    fn on_engine<T>(&mut self, f: impl FnOnce(&mut Engine) -> MpiResult<T>) -> MpiResult<T> {
        f(self.engine)
    }

    fn recv(&mut self, buf: &mut [u8], src: c_int, tag: c_int, ctx: u16) -> MpiResult<Status> {
        Progress::recv(&mut *self.engine, buf, src, tag, ctx)
    }

    fn wait(&mut self, id: mpich_channel::ReqId) -> MpiResult<Status> {
        Progress::wait(&mut *self.engine, id)
    }

    fn wait_for<T>(
        &mut self,
        done: impl FnMut(&mut Engine) -> MpiResult<Option<T>>,
    ) -> MpiResult<T> {
        self.engine.block_on(done)
    }
}

impl Steps for Cx<'_> {
    #[inline]
    fn cx<T>(&mut self, f: impl FnOnce(&mut Cx<'_>) -> MpiResult<T>) -> MpiResult<T> {
        f(self)
    }

    fn agree(&mut self, parent: CommIdx, keep: bool) -> MpiResult<(u16, u16)> {
        agree(self, parent, keep)
    }

    fn run_agreement(&mut self, mut agreement: Agreement) -> MpiResult<(u16, u16)> {
        self.engine
            .block_on(|e| Ok::<_, MpiError>(agreement.step(e.p2p())?))?
    }
}

impl Steps for Calling {
    fn cx<T>(&mut self, f: impl FnOnce(&mut Cx<'_>) -> MpiResult<T>) -> MpiResult<T> {
        f(&mut self.state().runtime()?.comm())
    }

    fn agree(&mut self, parent: CommIdx, keep: bool) -> MpiResult<(u16, u16)> {
        agreed(self, parent, keep)
    }

    fn run_agreement(&mut self, agreement: Agreement) -> MpiResult<(u16, u16)> {
        agreed_on(self, agreement.among_threads())
    }
}

/// Under `MPI_THREAD_MULTIPLE`: the agreement on a context pair of a blocking creating call
/// on `parent` (`keep`: this process will use it), run in a wait that lets the lock go.
pub(crate) fn agreed(call: &mut Calling, parent: CommIdx, keep: bool) -> MpiResult<(u16, u16)> {
    let agreement = begin_agree(&mut call.state().runtime()?.comm(), parent, keep);
    agreed_on(call, agreement)
}

/// Under `MPI_THREAD_MULTIPLE`: runs `agreement` (made by this call) to its end in a wait that
/// lets the lock go.
pub(crate) fn agreed_on(call: &mut Calling, mut agreement: Agreement) -> MpiResult<(u16, u16)> {
    call.wait_until(|st| {
        let rt = st.runtime()?;
        rt.engine.poke()?;
        agreement.step(rt.engine.p2p())?.transpose()
    })
}

/// Agrees, among the processes of `members` (engine ranks, in the same order everywhere;
/// this process is member `me`), on a context pair free at all of them, and takes it:
/// [`agree`]'s protocol over the members, on the sessions' bootstrap context
/// (`session::BOOTSTRAP_CTX`), its tags carrying 14 bits of `name` (`coll::Team::named`:
/// what keeps concurrent such agreements apart; a hash of what the program names the call
/// by and of the members). For the calls no communicator spans the members of
/// (`MPI_Comm_create_from_group`, `MPI_Intercomm_create_from_groups`,
/// `MPI_Intercomm_create`): it never holds this process's mask lock while a member has not
/// joined, so two threads creating communicators at once do not deadlock.
pub(crate) fn agree_among(
    a: &mut impl Steps,
    members: &[u32],
    me: usize,
    name: u32,
) -> MpiResult<(u16, u16)> {
    let agreement = a.cx(|cx| {
        let team = crate::coll::Team::named(
            crate::session::BOOTSTRAP_CTX,
            super::WORLD,
            members.iter().map(|&r| r as usize).collect(),
            me,
            name,
        );
        Ok(Agreement::new(team, false, true, cx.comms.contexts.clone()))
    })?;
    a.run_agreement(agreement)
}

/// Agrees with the other members of `parent` (both groups of an intercommunicator) on a
/// context pair free on all of them (everyone calls it); `keep` says whether this process
/// will use it. This is `agree`'s protocol, run to its end here (the engine moves every other
/// agreement in flight on meanwhile); on an intercommunicator its rounds span both groups
/// (`coll::band_u64_schedule`), so, as on an intracommunicator, it never holds this process's
/// mask lock while waiting for a member that has not joined.
pub(crate) fn agree(cx: &mut Cx<'_>, parent: CommIdx, keep: bool) -> MpiResult<(u16, u16)> {
    let team = crate::coll::Team::of(cx.comms, parent);
    let mut agreement = Agreement::new(team, false, keep, cx.comms.contexts.clone());
    cx.engine
        .block_on(|e| Ok::<_, MpiError>(agreement.step(e.p2p())?))?
}

/// The agreement of a blocking creating call under `MPI_THREAD_MULTIPLE`, for the caller to
/// move on ([`Agreement::step`]) in the looks of a wait that lets the process's lock go
/// (`runtime::thread`): the same protocol and sequence number as [`agree`]'s, its join round
/// offering nothing ([`Agreement::among_threads`]). It owns what it needs (the team, the shared
/// context mask): nothing of it points into the running state.
pub(crate) fn begin_agree(cx: &mut Cx<'_>, parent: CommIdx, keep: bool) -> Agreement {
    let team = crate::coll::Team::of(cx.comms, parent);
    Agreement::new(team, false, keep, cx.comms.contexts.clone()).among_threads()
}

/// Starts the agreement of `MPI_Comm_idup` on `parent`, for the communicator `new` (stored
/// with [`CommTable::insert_late`]): an operation of the progress engine, which delivers the
/// contexts into `new` when it ends. Returns its request.
pub(crate) fn start_idup(
    cx: &mut Cx<'_>,
    parent: CommIdx,
    new: CommIdx,
) -> MpiResult<mpich_channel::ReqId> {
    let team = crate::coll::Team::of(cx.comms, parent);
    let agreement = Agreement::new(team, true, true, cx.comms.contexts.clone());
    let outcome = crate::p2p::request::Outcome::default();
    let op = Box::new(IdupAgreement {
        agreement,
        arrival: Some(cx.comms.arrival(new)),
        outcome: outcome.clone(),
    });
    let id = cx
        .engine
        .start(op, parent)
        .map_err(|e| MpiError::from(e).on(parent))?;
    cx.engine.p2p().attach(id, Box::new(outcome));
    Ok(id)
}

/// `MPI_Comm_idup`'s agreement as an operation of the progress engine.
struct IdupAgreement {
    agreement: Agreement,
    arrival: Option<super::late::Arrival>,
    /// Where a failure's detail goes (the request's attachment).
    outcome: crate::p2p::request::Outcome,
}

impl Operation for IdupAgreement {
    fn poll(&mut self, p2p: &mut Adi) -> Result<Option<Status>, AdiError> {
        let Some(got) = self.agreement.step(p2p)? else {
            return Ok(None);
        };
        let mut status = Status {
            source: MPI_ANY_SOURCE,
            tag: MPI_ANY_TAG,
            ..Default::default()
        };
        match got {
            Ok(ctxs) => {
                if let Some(a) = self.arrival.take() {
                    a.deliver(ctxs);
                }
            }
            Err(e) => {
                status.error = e.class;
                *self.outcome.0.borrow_mut() = Some(e);
            }
        }
        Ok(Some(status))
    }
}

/// For an existing intercommunicator `idx` (whose local group is `net`): ANDs `words` over both
/// groups and swaps `extra` with the other group's (everyone gets the remote leader's). Context
/// masks go through it only under the mask lock; `MPI_Intercomm_merge` uses it, with no
/// words, to swap its ordering data.
pub(crate) fn agree_across(
    a: &mut impl Steps,
    idx: CommIdx,
    net: &Net,
    words: &mut [u64],
    extra: &mut [u64],
) -> MpiResult<()> {
    if !words.is_empty() {
        net.allreduce_band(a, words, TAG_ALLREDUCE)?;
    }
    let leader = a.cx(|cx| {
        let c = cx.comms.get(idx);
        Ok(Net {
            ranks: vec![c.to_global(0)],
            me: 0,
            ctx: c.coll_ctx,
        })
    })?;
    let mut both: Vec<u64> = words.iter().chain(extra.iter()).copied().collect();
    if net.me == 0 {
        let mine = both.clone();
        leader.sendrecv(
            a,
            Some(0),
            as_bytes(&mine),
            Some(0),
            as_bytes_mut(&mut both),
            TAG_LEADERS,
        )?;
        for (w, m) in both.iter_mut().zip(&mine).take(words.len()) {
            *w &= m;
        }
    }
    net.bcast(a, 0, as_bytes_mut(&mut both), TAG_BCAST)?;
    words.copy_from_slice(&both[..words.len()]);
    extra.copy_from_slice(&both[words.len()..]);
    Ok(())
}

/// Builds and stores this process's communicator over `group` (which contains it) with the
/// agreed contexts, inheriting `parent`'s error handler. Returns its index and handle.
pub(crate) fn install(
    cx: &mut Cx<'_>,
    parent: CommIdx,
    ctxs: (u16, u16),
    group: Group,
) -> (CommIdx, MPI_Comm) {
    let me = cx.engine.p2p_ref().rank();
    let rank = group
        .local(me)
        .expect("a process installs only communicators it is in");
    let size = group.size();
    let peers = Members::of(group, cx.engine.p2p_ref().size());
    let mut c = Comm::new(String::new(), ctxs, rank, peers, size, None);
    c.errhandler = cx.comms.get(parent).errhandler;
    let idle = cx.idle();
    cx.comms.insert(c, idle)
}

/// Builds and stores this process's intercommunicator between the local group of `local` (an
/// intracommunicator, whose rank and error handler it takes) and `remote` (engine ranks, in
/// the remote group's rank order) with the agreed contexts. Returns its handle.
pub(crate) fn install_inter(
    cx: &mut Cx<'_>,
    local: CommIdx,
    ctxs: (u16, u16),
    remote: Group,
) -> MPI_Comm {
    let lc = cx.comms.get(local);
    let n = remote.size();
    let mut c = Comm::new(
        String::new(),
        ctxs,
        lc.rank,
        Members::List(remote),
        n,
        Some(lc.group()),
    );
    c.errhandler = lc.errhandler;
    let idle = cx.idle();
    cx.comms.insert(c, idle).1
}

/// The ranks (indices into `everyone`'s `(color, key)`) with color `color`, ordered by
/// (key, rank): the members of a split's new group, in their new rank order.
pub(crate) fn by_key(everyone: &[(c_int, c_int)], color: c_int) -> Vec<usize> {
    let mut picked: Vec<(c_int, usize)> = everyone
        .iter()
        .enumerate()
        .filter(|(_, (col, _))| *col == color)
        .map(|(r, (_, key))| (*key, r))
        .collect();
    picked.sort();
    picked.into_iter().map(|(_, r)| r).collect()
}
