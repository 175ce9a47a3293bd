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
//!                        free on every process of both groups (masks ANDed in each group,
//!                        swapped by the leaders over the new streams)
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
use crate::comm::context::MASK_WORDS;
use crate::comm::make::{self, Cx};
use crate::comm::net::{as_bytes, as_bytes_mut, Net, TAG_ALLREDUCE, TAG_BCAST, TAG_LEADERS};
use crate::comm::{Comm, CommIdx, Members};
use crate::error::{MpiError, MpiResult};
use crate::group::GroupData;
pub(crate) use port::OpenPort;

/// What this process keeps of its dynamic connections.
#[derive(Default)]
pub(crate) struct Dynamic {
    /// Ports opened by `MPI_Open_port` and not yet closed.
    pub ports: Vec<OpenPort>,
    /// `MPI_Comm_get_parent`'s answer.
    pub parent: Option<MPI_Comm>,
}

/// The context the two leaders swap masks on (with a tag of their own; the sources, ranks
/// of another job, keep it apart from the job's own traffic there).
const LEADERS_CTX: u16 = 1;
const TAG_DYN_LEADERS: i32 = TAG_LEADERS + 0x0050_0000;
const TAG_DYN_BCAST: i32 = TAG_BCAST + 0x0050_0000;

/// Makes the intercommunicator between the local group of `local` (an intracommunicator)
/// and the group at the other end of `linked`; everyone of the local group calls it.
pub(crate) fn make_intercomm(
    cx: &mut Cx<'_>,
    local: CommIdx,
    root: usize,
    linked: link::Linked,
) -> MpiResult<MPI_Comm> {
    let remote = cx
        .engine
        .p2p()
        .add_peers(linked.socks)
        .map_err(MpiError::from)?;
    let net = Net::local(cx.comms.get(local));
    let _lock = crate::comm::agree::Exclusive::acquire(cx.engine, &cx.comms.contexts)?;
    let mut words = cx.comms.free_words().to_vec();
    net.allreduce_band(cx.engine, &mut words, TAG_ALLREDUCE + 0x50)?;
    if net.me == root {
        let link = Net {
            ranks: vec![remote[linked.remote_root]],
            me: 0,
            ctx: LEADERS_CTX,
        };
        let mut theirs = vec![0u64; MASK_WORDS];
        link.sendrecv(
            cx.engine,
            Some(0),
            as_bytes(&words),
            Some(0),
            as_bytes_mut(&mut theirs),
            TAG_DYN_LEADERS,
        )?;
        for (w, t) in words.iter_mut().zip(&theirs) {
            *w &= t;
        }
    }
    net.bcast(cx.engine, root, as_bytes_mut(&mut words), TAG_DYN_BCAST)?;
    let ctxs = make::take(cx, &words, true)?;
    let lc = cx.comms.get(local);
    let local_group = lc.group();
    let n = remote.len();
    let remote_group = GroupData::new(remote.iter().map(|&r| r as u32).collect());
    let mut c = Comm::new(
        String::new(),
        ctxs,
        lc.rank,
        Members::List(remote_group),
        n,
        Some(local_group),
    );
    c.errhandler = lc.errhandler;
    let idle = cx.idle();
    Ok(cx.comms.insert(c, idle).1)
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
    let world = crate::comm::WORLD;
    let net = Net::local(cx.comms.get(world));
    let linked = link::connect(cx.engine, &net, 0, Some(&port))?;
    make_intercomm(cx, world, 0, linked).map(Some)
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
