//! Dynamic processes (MPI 4.0 chapter 11): `MPI_Comm_spawn`, `MPI_Comm_spawn_multiple`,
//! `MPI_Comm_get_parent`, ports (`MPI_Open_port`, `MPI_Close_port`, `MPI_Comm_accept`,
//! `MPI_Comm_connect`), `MPI_Comm_join`, `MPI_Comm_disconnect`, and the name service
//! (`MPI_Publish_name`, `MPI_Lookup_name`, `MPI_Unpublish_name`).
//!
//! ```text
//!   spawn ──▶ root: open a port, PMI spawn (PARENT_ROOT_PORT_NAME pre-put) ──▶ mpirun / Hydra
//!         │                                     starts the child job; its MPI_Init connects
//!         └──▶ every parent: accept on the port  ◀───────── to the port (collective over
//!                                                            the children's MPI_COMM_WORLD)
//!   accept / connect ──▶ link: roots meet on the port (secret checked), every member of one
//!                        group gets a TCP stream to every member of the other
//!                    ──▶ engine: Adi::add_peers (new engine ranks, past the job's)
//!                    ──▶ intercommunicator: remote group = those engine ranks, a context pair
//!                        free on every process of both groups (`comm::agree`'s protocol over
//!                        both groups, on the bootstrap context, named by the link's token)
//!   join(fd) ──▶ each side writes a port of its own over the socket; the lower name accepts,
//!                the other connects (one process each side)
//!   disconnect ──▶ a barrier over the communicator, freed; streams no other communicator
//!                  needs say goodbye and close
//! ```
//!
//! **How peers are added.** A job's own ranks keep their fabric and fast paths; peers of other
//! jobs are reached over TCP by a channel that wraps the job's channel only once the first
//! such peer arrives (`mpich_channel::channel::foreign`), so a job that never spawns or
//! connects runs exactly as before. Each process numbers the peers it meets itself (the next
//! engine ranks past its job's), and intercommunicators name them through their remote group
//! as any communicator names engine ranks: point-to-point, the intercommunicator collectives,
//! `MPI_Intercomm_merge`, `MPI_Comm_split` and the rest work unchanged over them. One-sided
//! windows and shared memory stay within a job.
//!
//! **Spawning** goes through the launcher's PMI (PMI-1 `mcmd=spawn`, what MPICH's Hydra
//! serves too): our `mpirun` checks every command first (a command that cannot run fails the
//! call with `MPI_ERR_SPAWN` in every slot of `array_of_errcodes`, and nothing starts), then
//! starts the children as a child `mpirun` (on this machine, or on the host the `host` info
//! key names; `wdir` and `path` are honoured). The children's `MPI_Init` finds the parents'
//! port under `PARENT_ROOT_PORT_NAME` and connects to it; `MPI_Comm_get_parent` gives that
//! intercommunicator. A child that dies ends the whole job (its connection breaks; the parent
//! `mpirun` names the child job that failed).
//!
//! **Threads.** Each call is written once on `comm::make::Steps` (`accept`, `connect`,
//! `join`, `spawn::spawn`, `make_intercomm`): with the communicators held throughout (below
//! `MPI_THREAD_MULTIPLE`: every wait in the engine's loop or on the socket, as before), or
//! through the call's `Calling`, whose looks reach the state afresh and whose socket waits
//! run with the process's lock let go (`comm::net::Progress::outside`), so a thread blocked
//! in `MPI_Comm_accept` leaves the other threads of the process free to communicate. The
//! messages are the same either way. The context pair is agreed by the protocol every other
//! constructor runs (one round of the context-id lock at most), not under a lock held across
//! the exchange with the other job: two threads connecting at once cannot deadlock on it.
//!
//! **Ports** carry a random 128-bit secret (`port`); strangers are refused. **Names**
//! (`names`) are published as files in a directory every job sees (`MPI_NAME_SERVICE_DIR`,
//! default `$TMPDIR/mpi-names-<uid>`), which works within a job and across jobs on one host
//! or on hosts that share that directory.

mod api;
mod link;
mod names;
mod port;
mod spawn;

use crate::abi::*;
use crate::comm::make::{self, Cx, Steps};
use crate::comm::net::Net;
use crate::comm::{Comm, CommIdx, SELF};
use crate::error::{MpiError, MpiResult};
use crate::group::GroupData;
use crate::session::from_group::bootstrap_name;
pub(crate) use port::OpenPort;

/// What this process keeps of its dynamic connections.
#[derive(Default)]
pub(crate) struct Dynamic {
    /// Ports opened by `MPI_Open_port` and not yet closed.
    pub ports: Vec<OpenPort>,
    /// `MPI_Comm_get_parent`'s answer.
    pub parent: Option<MPI_Comm>,
}

/// Makes the intercommunicator between the local group of `local` (an intracommunicator)
/// and the group at the other end of `linked`; everyone of the local group calls it.
///
/// The context pair is agreed by `comm::agree`'s protocol among every process of both groups
/// (`make::agree_among`, on the bootstrap context: the accepting group's members, then the
/// connecting group's, each in rank order, as every member numbers them alike whatever engine
/// ranks it gave the other job's processes), named by the connection's token: no process
/// holds its context-id lock for more than one round, so connections made at once by several
/// threads, or beside other constructors and `MPI_Comm_idup`, cannot deadlock.
pub(crate) fn make_intercomm(
    a: &mut impl Steps,
    local: CommIdx,
    linked: link::Linked,
) -> MpiResult<MPI_Comm> {
    let link::Linked {
        socks,
        token,
        accepting,
    } = linked;
    let (remote, net) = a.cx(|cx| {
        let remote = cx.engine.p2p().add_peers(socks).map_err(MpiError::from)?;
        Ok((remote, Net::local(cx.comms.get(local))))
    })?;
    let (first, second) = if accepting {
        (&net.ranks, &remote)
    } else {
        (&remote, &net.ranks)
    };
    let members: Vec<u32> = first.iter().chain(second).map(|&r| r as u32).collect();
    let me = if accepting {
        net.me
    } else {
        remote.len() + net.me
    };
    let name = bootstrap_name(&format!("MPI_Comm_accept {}", port::hex(&token)), &[]);
    let ctxs = make::agree_among(a, &members, me, name)?;
    let remote_group = GroupData::new(remote.iter().map(|&r| r as u32).collect());
    a.cx(|cx| Ok(make::install_inter(cx, local, ctxs, remote_group)))
}

/// `MPI_Comm_accept` over the intracommunicator `idx`: `port` is the root's copy of its open
/// port (`None` elsewhere, or at a root that names no port it opened: `MPI_ERR_PORT`).
pub(crate) fn accept(
    a: &mut impl Steps,
    idx: CommIdx,
    root: usize,
    port: Option<OpenPort>,
) -> MpiResult<MPI_Comm> {
    let net = a.cx(|cx| Ok(Net::local(cx.comms.get(idx))))?;
    let linked = link::accept(a, &net, root, port.as_ref())?;
    make_intercomm(a, idx, linked)
}

/// `MPI_Comm_connect` over the intracommunicator `idx`: `port_name` is the root's argument.
pub(crate) fn connect(
    a: &mut impl Steps,
    idx: CommIdx,
    root: usize,
    port_name: Option<&str>,
) -> MpiResult<MPI_Comm> {
    let net = a.cx(|cx| Ok(Net::local(cx.comms.get(idx))))?;
    let linked = link::connect(a, &net, root, port_name)?;
    make_intercomm(a, idx, linked)
}

/// `MPI_Comm_join` over the connected socket `fd`: each side writes a port of its own over
/// it and reads the other's (outside the process's lock: a wait on the other process); the
/// lower name accepts, the other connects, each on `MPI_COMM_SELF`.
pub(crate) fn join(a: &mut impl Steps, fd: std::ffi::c_int) -> MpiResult<MPI_Comm> {
    let mine = port::open()?;
    let theirs = a.outside(|| link::swap_lines(fd, &mine.name))?;
    if theirs == mine.name {
        return Err(MpiError::new(
            MPI_ERR_OTHER,
            "MPI_Comm_join: the socket leads back to this process",
        ));
    }
    if mine.name < theirs {
        accept(a, SELF, 0, Some(mine))
    } else {
        drop(mine);
        connect(a, SELF, 0, Some(&theirs))
    }
}

/// In `MPI_Init` of a spawned process: connects to the parents (collective over the new
/// `MPI_COMM_WORLD`) and keeps the intercommunicator for `MPI_Comm_get_parent`. Nothing for
/// a process that was not spawned.
pub(crate) fn join_parent(cx: &mut Cx<'_>) -> MpiResult<Option<MPI_Comm>> {
    if let Ok(n) = std::env::var("MPIRUN_APPNUM") {
        crate::attr::comm_attrs::set_appnum(n.trim().parse().unwrap_or(0));
    }
    if std::env::var("PMI_SPAWNED").ok().as_deref() != Some("1") {
        return Ok(None);
    }
    let port = nic_model::net::launcher::with_client(|c| {
        if std::env::var_os("MPIRUN_APPNUM").is_none() {
            if let Ok(n) = c.appnum() {
                crate::attr::comm_attrs::set_appnum(n);
            }
        }
        c.get_preput("PARENT_ROOT_PORT_NAME")
    });
    let port = match port {
        Some(Ok(Some(p))) => p,
        Some(Err(e)) => {
            return Err(MpiError::new(
                MPI_ERR_SPAWN,
                format!("this process was spawned, but its parents' port cannot be read from the launcher: {e}"),
            ))
        }
        _ => return Ok(None),
    };
    connect(cx, crate::comm::WORLD, 0, Some(&port)).map(Some)
}

/// The engine ranks of other jobs that `c` names.
fn foreign_ranks(c: &Comm, job_size: usize) -> Vec<usize> {
    let mut v: Vec<usize> = c
        .peer_group()
        .ranks()
        .iter()
        .chain(c.group().ranks().iter())
        .map(|&r| r as usize)
        .filter(|&r| r >= job_size)
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}
