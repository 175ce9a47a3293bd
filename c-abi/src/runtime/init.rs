//! The life cycle: `MPI_Init`, `MPI_Init_thread`, `MPI_Query_thread`, `MPI_Is_thread_main`,
//! `MPI_Finalize`, `MPI_Initialized`, `MPI_Finalized`, `MPI_Abort`.
//!
//! **Two models.** The world model (`MPI_Init` .. `MPI_Finalize`, tracked by `runtime::World`)
//! and the sessions (`MPI_Session_init` .. `MPI_Session_finalize`, in `session`) share one
//! library: [`bring_up`] starts it at the first of `MPI_Init` / `MPI_Session_init`, and
//! [`shut_down`] ends it after `MPI_Finalize` (no session open) or at exit (see below).
//! `MPI_Initialized` and `MPI_Finalized` report the world model only.
//!
//! **Sessions may come back** (MPI 4.0 §11.3.1: a program that uses sessions only may open a
//! new session after finalizing all of them). Going down tells the launcher this process is
//! done (PMI `finalize`), after which PMI cannot take the process back into the job, so the
//! library does not go down when the last session closes outside the world model: it idles
//! ([`idle_until_exit`]: nothing runs, no thread, the tables empty but for what the program
//! kept) and goes down at process exit (an `atexit` hook), unless a new session or `MPI_Init`
//! has picked it up again and not finished with it by then. `MPI_Finalize` still takes the
//! library down at once when no session is open: `MPI_Init` after it stays erroneous.
//!
//! **Thread level.** `MPI_Init_thread` grants the level asked for, `MPI_THREAD_MULTIPLE`
//! included ([`crate::runtime::thread`]: granting it turns the process's lock on before the
//! call returns). The asynchronous progress thread (`MPI_ASYNC_PROGRESS=1`,
//! [`crate::runtime::progress`]) is started after `MPI_Init`'s call ends and stopped at the
//! start of `MPI_Finalize`, and the same lock keeps it out of the program's calls.
//! `MPI_Finalize` waits (for buffered sends, for the engine's last messages) holding the lock:
//! MPI requires every other thread to have finished its MPI calls by then.

use crate::abi::*;
use crate::attr::KeyvalTable;
use crate::comm::{CommTable, WORLD};
use crate::cptr::Out;
use crate::datatype::TypeTable;
use crate::env::mem::Allocations;
use crate::errhandler::end_process;
use crate::errhandler::ErrhandlerTable;
use crate::error::{MpiError, MpiResult};
use crate::group::GroupTable;
use crate::info::InfoTable;
use crate::op::OpTable;
use crate::p2p::bsend::BsendBuffer;
use crate::runtime::export::mpi_fn;
use crate::runtime::lanes;
use crate::runtime::progress;
use crate::runtime::thread;
use crate::runtime::{Mpi, Phase, Runtime, World};
use mpich_channel::{Adi, Engine};
use std::ffi::{c_char, c_int};
use std::io::Write;

/// Starts the world model with thread level `level` (and the library, unless a session has
/// started it already).
fn start(st: &mut Mpi, level: c_int) -> MpiResult<()> {
    match st.world {
        World::NotStarted => {}
        World::Running => {
            return Err(MpiError::new(
                MPI_ERR_OTHER,
                "MPI is initialized already (MPI_Init was called before)",
            ))
        }
        World::Finalized => {
            return Err(MpiError::new(
                MPI_ERR_OTHER,
                "MPI cannot be initialized again after MPI_Finalize",
            ))
        }
    }
    if !matches!(st.phase, Phase::Running(_)) {
        bring_up(st, level)?;
    }
    let rt = st.runtime()?;
    rt.dynamic.parent = crate::dynamic::join_parent(&mut rt.comm())?;
    st.world = World::Running;
    st.thread_level = level;
    st.main_thread = Some(std::thread::current().id());
    Ok(())
}

/// Brings the library up (the engine and every table) for the first of `MPI_Init` and
/// `MPI_Session_init`, with thread level `level`. Once it has gone down it does not come up
/// again (the launcher has been told this process finished).
pub(crate) fn bring_up(st: &mut Mpi, level: c_int) -> MpiResult<()> {
    if matches!(st.phase, Phase::Finalized) {
        return Err(MpiError::new(
            MPI_ERR_OTHER,
            "MPI cannot be started again once it has been finalized (by MPI_Finalize or the last MPI_Session_finalize); keep a session open for as long as the program uses MPI",
        ));
    }
    nic_model::placement::bind_from_env(); // ranks mpirun started on other hosts bind here
    let engine = Engine::init().map_err(|e| {
        // The hint to use a launcher helps only a program that was started without one.
        let launched = std::env::var_os(nic_model::fabric::env::FABRIC_FD).is_some()
            || nic_model::net::launcher::present();
        let hint = if launched {
            ""
        } else {
            " (start MPI programs with mpirun, e.g. `mpirun -n 2 ./prog`)"
        };
        MpiError::new(
            MPI_ERR_OTHER,
            format!("the communication engine did not start: {e}{hint}"),
        )
    })?;
    let (rank, size) = (engine.p2p_ref().rank(), engine.p2p_ref().size());
    tracing::debug!(
        rank,
        size,
        channel = engine.p2p_ref().channel_name(),
        level,
        "MPI initialized"
    );
    // Under MPI_THREAD_MULTIPLE point-to-point runs on lanes (`runtime::lanes`).
    let (engine, lanes) = if level == MPI_THREAD_MULTIPLE {
        lanes::make(engine, lanes::asked()).map_err(|e| {
            MpiError::new(
                MPI_ERR_OTHER,
                format!("the communication engine could not be split into lanes: {e} (set MPI_LANES=1 to run without them)"),
            )
        })?
    } else {
        (engine, lanes::Lanes::none())
    };
    let infos_made_before = st.idle_infos.take();
    st.phase = Phase::Running(Box::new(Runtime {
        engine,
        lanes,
        comms: CommTable::new(rank, size),
        groups: GroupTable::new(),
        infos: infos_made_before.map_or_else(|| InfoTable::new(size), |t| t.for_job(size)),
        keyvals: KeyvalTable::new(),
        errhandlers: ErrhandlerTable::new(),
        allocs: Allocations::new(),
        bsend: BsendBuffer::new(),
        types: TypeTable::new(),
        ops: OpTable::new(),
        coll_spare: None,
        universe_size: size as c_int,
        wins: crate::win::WinTable::new(),
        sessions: crate::session::SessionTable::new(),
        dynamic: Default::default(),
    }));
    st.thread_level = level;
    Ok(())
}

mpi_fn! {
    /// `MPI_Init`: starts MPI (thread level `MPI_THREAD_SINGLE`). The arguments are not used.
    /// Then starts the asynchronous progress thread if `MPI_ASYNC_PROGRESS` asks for it.
    fn MPI_Init / PMPI_Init(_argc: *mut c_int, _argv: *mut *mut *mut c_char) |st| {
        start(st, MPI_THREAD_SINGLE)?;
        thread::grant(MPI_THREAD_SINGLE);
        Ok(())
    } then started
}

mpi_fn! {
    /// `MPI_Init_thread`: starts MPI with the thread level asked for (any of the four, up
    /// to `MPI_THREAD_MULTIPLE`); `*provided` says which. Then starts the asynchronous progress
    /// thread if `MPI_ASYNC_PROGRESS` asks for it (the level granted is the same either way).
    fn MPI_Init_thread / PMPI_Init_thread(
        _argc: *mut c_int,
        _argv: *mut *mut *mut c_char,
        required: c_int,
        provided: *mut c_int,
    ) |st| {
        let provided = Out::new(provided, "provided")?;
        start(st, required.clamp(MPI_THREAD_SINGLE, thread::MAX_LEVEL))?;
        let level = thread::grant(required);
        provided.set(level);
        Ok(())
    } then started
}

/// After `MPI_Init`'s call has ended (its borrow of the state is over, so the progress thread
/// may take the state): the progress thread, if asked for and MPI started.
fn started(code: c_int) -> c_int {
    if code == MPI_SUCCESS {
        progress::start_if_asked();
    }
    code
}

mpi_fn! {
    /// `MPI_Query_thread`: the thread level MPI was started with.
    fn MPI_Query_thread / PMPI_Query_thread(provided: *mut c_int) |st| {
        st.runtime()?;
        Out::new(provided, "provided")?.set(st.thread_level);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Is_thread_main`: whether the calling thread is the one that started MPI.
    fn MPI_Is_thread_main / PMPI_Is_thread_main(flag: *mut c_int) |st| {
        st.runtime()?;
        let main = st.main_thread == Some(std::thread::current().id());
        Out::new(flag, "flag")?.set(main as c_int);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Finalize`: ends the world model; unless a session is still open, waits for the
    /// buffered sends, then leaves the job.
    fn MPI_Finalize / PMPI_Finalize() |st| {
        let world = st.world;
        let rt = st.runtime()?;
        match world {
            World::Running => {}
            World::Finalized => {
                return Err(MpiError::new(MPI_ERR_OTHER, "MPI_Finalize was called already"));
            }
            World::NotStarted => {
                return Err(MpiError::new(MPI_ERR_OTHER, "MPI_Init was not called: this program uses sessions only, which MPI_Session_finalize ends"));
            }
        }
        crate::attr::comm_attrs::finalize(&mut rt.comms, &rt.keyvals)?;
        let sessions_open = !rt.sessions.is_empty();
        st.world = World::Finalized;
        if sessions_open {
            return Ok(());
        }
        shut_down(st)
    }
}

/// Takes the library down: after `MPI_Finalize` with no session open, or after the last
/// `MPI_Session_finalize` outside the world model. Waits for the buffered sends, then leaves
/// the job.
pub(crate) fn shut_down(st: &mut Mpi) -> MpiResult<()> {
    let rt = st.runtime()?;
    // Before anything is torn down; the rest runs as it does without the thread.
    progress::stop();
    let (bsend, mut engines) = rt.bsend_and_lanes();
    bsend.drain(&mut engines)?;
    let live = rt.engine.p2p_ref().requests_live()
        + rt.lanes
            .iter_mut()
            .map(|e| e.p2p_ref().requests_live())
            .sum::<usize>();
    if live > 0 {
        tracing::warn!(
            requests = live,
            "MPI_Finalize with requests never completed or freed"
        );
    }
    let Phase::Running(mut rt) = std::mem::replace(&mut st.phase, Phase::Finalized) else {
        unreachable!("checked running above")
    };
    // Info objects outlive MPI (MPI 4.0 §10.1).
    st.idle_infos = Some(std::mem::replace(&mut rt.infos, InfoTable::new(1)));
    write_counters(rt.engine.p2p_ref());
    let mut readings = crate::tool::readings::Readings::of(rt.engine.p2p_ref(), rt.lanes.count());
    for e in rt.lanes.iter_mut() {
        readings.add_lane(e.p2p_ref());
    }
    st.last_readings = Some(readings);
    // The lanes first, in order; lane 0's engine (and the shared channel) last.
    let lanes = std::mem::replace(&mut rt.lanes, lanes::Lanes::none());
    for engine in lanes.into_engines() {
        engine.finalize()?;
    }
    rt.engine.finalize()?;
    // A PMI launcher (mpirun, Hydra, Slurm) is told this rank finished cleanly.
    if let Err(e) = nic_model::net::launcher::finalize() {
        tracing::warn!(error = %e, "the launcher did not take MPI_Finalize's goodbye");
    }
    Ok(())
}

/// After the last `MPI_Session_finalize` outside the world model: leaves the library up for
/// a later `MPI_Session_init` (or `MPI_Init`), and makes sure it goes down when the process
/// exits ([`down_at_exit`], registered once).
pub(crate) fn idle_until_exit() {
    static REGISTERED: std::sync::Once = std::sync::Once::new();
    REGISTERED.call_once(|| {
        // SAFETY: registers a plain `extern "C" fn()` with the C library; it runs at exit().
        if unsafe { libc::atexit(down_at_exit) } != 0 {
            tracing::warn!("atexit refused the hook that ends MPI at exit");
        }
    });
}

/// The `atexit` hook of [`idle_until_exit`]: takes the library down if it is idle (no
/// session open, the world model not running), as the last `MPI_Session_finalize` would
/// have. A program that exits in the middle of MPI (a session or the world model open) is
/// left as it would be without the hook.
extern "C" fn down_at_exit() {
    crate::runtime::export::call("MPI_Session_finalize (at exit)", |st| {
        let idle =
            st.world != World::Running && st.runtime_ref().is_some_and(|rt| rt.sessions.is_empty());
        if idle {
            shut_down(st)?;
        }
        Ok(())
    });
}

/// With `MPI_COUNTERS=<path>` set, writes this rank's counters (the engine's, its channel's
/// and the layers' under it, see `mpich_channel::adi::AdiCounters`) to `<path>.<rank>.json`.
/// A failure to write is reported on stderr and does not fail `MPI_Finalize`.
fn write_counters(adi: &Adi) {
    let Some(base) = std::env::var_os("MPI_COUNTERS").filter(|p| !p.is_empty()) else {
        return;
    };
    let mut path = base;
    path.push(format!(".{}.json", adi.rank()));
    if let Err(e) = std::fs::write(&path, adi.counters().to_json() + "\n") {
        let _ = writeln!(
            std::io::stderr(),
            "MPI_COUNTERS: cannot write {}: {e}",
            std::path::Path::new(&path).display()
        );
    }
}

mpi_fn! {
    /// `MPI_Initialized`: whether `MPI_Init` has been called (may be called at any time).
    fn MPI_Initialized / PMPI_Initialized(flag: *mut c_int) |st| {
        Out::new(flag, "flag")?.set((st.world != World::NotStarted) as c_int);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Finalized`: whether `MPI_Finalize` has completed (may be called at any time).
    fn MPI_Finalized / PMPI_Finalized(flag: *mut c_int) |st| {
        Out::new(flag, "flag")?.set((st.world == World::Finalized) as c_int);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Abort`: ends the process at once with `errorcode` as its exit status, after saying
    /// so on stderr; `mpirun` then ends the rest of the job with that status.
    fn MPI_Abort / PMPI_Abort(comm: MPI_Comm, errorcode: c_int) |st| {
        let who = match st.runtime_ref() {
            Some(rt) => format!("rank {}", rt.comms.get(WORLD).rank),
            None => format!("process {}", std::process::id()),
        };
        let comm_name = match comm {
            MPI_COMM_WORLD => "MPI_COMM_WORLD".to_string(),
            MPI_COMM_SELF => "MPI_COMM_SELF".to_string(),
            other => format!("0x{other:08x}"),
        };
        let _ = std::io::stdout().flush();
        let message = format!("MPI_Abort({comm_name}, {errorcode}) called by {who}: ending the job with exit status {errorcode}");
        let _ = writeln!(std::io::stderr(), "{message}");
        // A PMI launcher ends the other ranks (on every host) with this status; it says that
        // it ends the job, so it is told only who aborted.
        nic_model::net::launcher::abort(errorcode, &format!("MPI_Abort({comm_name}, {errorcode}) called by {who}"));
        end_process(errorcode)
    }
}
