//! Sessions (MPI 4.0 §11.3) and the communicators made from groups alone:
//! `MPI_Session_init` / `_finalize`, the process sets (`MPI_Session_get_num_psets`,
//! `_get_nth_pset`, `_get_pset_info`, `MPI_Group_from_session_pset`), `MPI_Session_get_info`,
//! the session error handlers, `MPI_Comm_create_from_group` and
//! `MPI_Intercomm_create_from_groups` (entry points in `api`; the session error-handler calls
//! are with the other handlers, in `errhandler::api`).
//!
//! ```text
//!   MPI_Session_init ─┐ (first of them: runtime::init::bring_up)        ┌─ MPI_Session_finalize
//!   MPI_Init ─────────┴──▶ Phase::Running(Runtime { sessions, ... }) ───┴─ MPI_Finalize
//!                          (MPI_Finalize, or exit after the last session: init::shut_down)
//!   session ──Group_from_session_pset("mpi://WORLD")──▶ group ──Comm_create_from_group──▶ comm
//! ```
//!
//! **Two models, one library.** The world model (`MPI_Init` .. `MPI_Finalize`) and any number
//! of sessions share the one engine and the one set of tables: the library comes up at the
//! first `MPI_Init` or `MPI_Session_init`, and goes down after the last of `MPI_Finalize` and
//! the `MPI_Session_finalize`s (`runtime::World` says where the world model is; the sessions
//! are [`SessionTable`]). A program may use sessions only (no `MPI_Init`), both, or neither.
//! After the last `MPI_Session_finalize` outside the world model the library idles rather
//! than going down (PMI cannot take a finished process back), so a program may open a new
//! session later (MPI 4.0 §11.3.1); it goes down at process exit (`runtime::init`). After
//! `MPI_Finalize` with no session open it is down for good: a session opened then fails with
//! `MPI_ERR_OTHER`.
//!
//! **A session** is a handle (`0xb8000000 | index`, MPICH's encoding), an error handler, and the
//! thread level it was granted (the `thread_level` info key asks; up to
//! `MPI_THREAD_MULTIPLE`, as for `MPI_Init_thread`; `MPI_Session_get_info` reports it).
//! Its process sets are the two the standard requires: `mpi://WORLD` (every process of the job,
//! in rank order) and `mpi://SELF` (this process); each has the info key `mpi_size`. Names are
//! compared without regard to case (URIs' scheme part is case-insensitive). An unknown name is
//! `MPI_ERR_ARG`.
//!
//! **Errors of session calls** go to the session's handler ([`raise_on_session`], called by
//! the raise path of `runtime::export` for an error routed with `MpiError::on_session`):
//! `MPI_ERRORS_RETURN` returns the code, a handler of `MPI_Session_create_errhandler` is called
//! with the session handle, and the fatal ones end the job.
//!
//! **Communicators without a parent** (`from_group`). `MPI_Comm_create_from_group` and
//! `MPI_Intercomm_create_from_groups` are collective over the group's processes only, and no
//! communicator spans them to agree a context id on. They agree it the way
//! `MPI_Comm_create_group` does: `comm::agree`'s protocol (rounds of allreduce of free-pair
//! masks, each process's mask lock held for one round at most, so that creations at once
//! from several threads or beside `MPI_Comm_idup` cannot deadlock) among the members' engine
//! ranks, on a context reserved for this ([`BOOTSTRAP_CTX`], above every context a
//! communicator can take), its tags carrying 14 bits of a hash of the string tag and of the
//! members (`coll::Team::named`: concurrent creations with different tags, or over different
//! groups, do not match each other's messages unless those bits collide; consecutive ones with
//! the same tag are kept apart by the engine's in-order matching, as every member runs the
//! same deterministic exchange). An intercommunicator agrees over the union of both groups
//! (ordered by engine rank, which every member computes alike), so the pair is free on every
//! process of both sides. Under `MPI_THREAD_MULTIPLE` the agreement waits with the process's
//! lock let go (`comm::make::Steps`). The new communicator gets the error handler passed to
//! the call. Groups from a session's process sets
//! and groups of the world model are the same kind of object, so both models use these calls.

pub(crate) mod api;
pub(crate) mod from_group;

use crate::abi::*;
use crate::errhandler::{handle_object, ErrhandlerTable};
use crate::error::{MpiError, MpiResult};
use crate::handle::{Kind, Table};
use std::ffi::c_int;

/// The engine context of the bootstrap exchanges of `from_group` (communicators take pairs
/// below `comm::context::MASK_WORDS * 128`, `MPI_Comm_idup`'s stand-ins the two highest).
pub(crate) const BOOTSTRAP_CTX: u16 = 0x7ff0;

/// One open session.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    pub errhandler: MPI_Errhandler,
    /// The thread level granted to it.
    pub thread_level: c_int,
}

/// The sessions the program has open.
pub(crate) struct SessionTable {
    table: Table<Session>,
    open: usize,
}

impl SessionTable {
    pub fn new() -> SessionTable {
        SessionTable {
            table: Table::new(Kind::Session),
            open: 0,
        }
    }

    /// Whether no session is open.
    pub fn is_empty(&self) -> bool {
        self.open == 0
    }

    pub fn insert(&mut self, s: Session) -> MpiResult<MPI_Session> {
        let (_, h) = self.table.insert(s).ok_or_else(|| {
            MpiError::new(
                MPI_ERR_OTHER,
                "the process has opened 2^26 sessions, the most MPICH's handles can name",
            )
        })?;
        self.open += 1;
        Ok(h)
    }

    /// The open session `h` names: `MPI_ERR_SESSION` otherwise.
    pub fn get(&self, h: MPI_Session) -> MpiResult<&Session> {
        self.table.get(h).ok_or_else(|| invalid_session(h))
    }

    pub fn get_mut(&mut self, h: MPI_Session) -> MpiResult<&mut Session> {
        self.table.get_mut(h).ok_or_else(|| invalid_session(h))
    }

    /// Closes session `h`.
    pub fn remove(&mut self, h: MPI_Session) -> MpiResult<Session> {
        let s = self.table.remove(h).ok_or_else(|| invalid_session(h))?;
        self.open -= 1;
        Ok(s)
    }
}

#[cold]
fn invalid_session(h: MPI_Session) -> MpiError {
    let detail = if h == MPI_SESSION_NULL {
        "the session is MPI_SESSION_NULL; open one with MPI_Session_init".to_string()
    } else {
        format!("0x{h:08x} is not an open session (MPI_Session_init makes one; MPI_Session_finalize ends it)")
    };
    MpiError::new(MPI_ERR_SESSION, detail)
}

/// The process sets every session knows, in the order `MPI_Session_get_nth_pset` gives them.
pub(crate) const PSETS: [&str; 2] = ["mpi://WORLD", "mpi://SELF"];

/// The engine ranks of process set `name` in a job of `size` processes where this one is
/// `me`: `MPI_ERR_ARG` for a name that is not one.
pub(crate) fn pset_members(name: &str, me: usize, size: usize) -> MpiResult<Vec<u32>> {
    if name.eq_ignore_ascii_case(PSETS[0]) {
        Ok((0..size as u32).collect())
    } else if name.eq_ignore_ascii_case(PSETS[1]) {
        Ok(vec![me as u32])
    } else {
        Err(MpiError::arg(format!(
            "\"{name}\" is not a process set; the sets are {} (MPI_Session_get_nth_pset lists them)",
            PSETS.join(" and ")
        )))
    }
}

/// The name `thread_level` values use for a thread level.
pub(crate) fn thread_level_name(level: c_int) -> &'static str {
    match level {
        MPI_THREAD_SINGLE => "MPI_THREAD_SINGLE",
        MPI_THREAD_FUNNELED => "MPI_THREAD_FUNNELED",
        MPI_THREAD_SERIALIZED => "MPI_THREAD_SERIALIZED",
        _ => "MPI_THREAD_MULTIPLE",
    }
}

/// The thread level a `thread_level` info value asks for (a name or its number), if any.
pub(crate) fn thread_level_asked(value: &str) -> Option<c_int> {
    let v = value.trim();
    [
        MPI_THREAD_SINGLE,
        MPI_THREAD_FUNNELED,
        MPI_THREAD_SERIALIZED,
        MPI_THREAD_MULTIPLE,
    ]
    .into_iter()
    .find(|&l| v.eq_ignore_ascii_case(thread_level_name(l)) || v == l.to_string())
}

/// What session `e.session`'s error handler makes of `e`, raised by `func`: the code to
/// return, or the end of the process. `Err(e)` back when the handle names no open session
/// (an invalid session argument): its error goes where errors without an object go.
#[cold]
pub(crate) fn raise_on_session(
    func: &'static str,
    e: MpiError,
    sessions: &SessionTable,
    errhandlers: &ErrhandlerTable,
    world_rank: usize,
) -> Result<c_int, MpiError> {
    let h = e.session.unwrap_or(MPI_SESSION_NULL);
    let Ok(s) = sessions.get(h) else {
        return Err(MpiError { session: None, ..e });
    };
    let label = format!("session 0x{h:08x}");
    Ok(handle_object(
        func,
        e,
        h,
        s.errhandler,
        &label,
        world_rank,
        errhandlers,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn psets_and_thread_levels() {
        assert_eq!(pset_members("mpi://WORLD", 1, 3).unwrap(), vec![0, 1, 2]);
        assert_eq!(pset_members("MPI://world", 1, 3).unwrap(), vec![0, 1, 2]);
        assert_eq!(pset_members("mpi://SELF", 1, 3).unwrap(), vec![1]);
        assert_eq!(
            pset_members("mpi://nonesuch", 0, 1).unwrap_err().class,
            MPI_ERR_ARG
        );
        assert_eq!(
            thread_level_asked("MPI_THREAD_FUNNELED"),
            Some(MPI_THREAD_FUNNELED)
        );
        assert_eq!(thread_level_asked("3"), Some(MPI_THREAD_MULTIPLE));
        assert_eq!(thread_level_asked("lots"), None);
    }

    #[test]
    fn sessions_are_counted_and_refused_once_closed() {
        let mut t = SessionTable::new();
        let s = Session {
            errhandler: MPI_ERRORS_RETURN,
            thread_level: MPI_THREAD_SINGLE,
        };
        let a = t.insert(s.clone()).unwrap();
        let b = t.insert(s).unwrap();
        assert_eq!(a as u32, 0xb800_0000);
        assert!(!t.is_empty());
        t.remove(a).unwrap();
        assert_eq!(t.get(a).unwrap_err().class, MPI_ERR_SESSION);
        t.remove(b).unwrap();
        assert!(t.is_empty());
    }
}
