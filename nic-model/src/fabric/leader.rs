//! One fabric per host without a common parent: the node leader's hand-over.
//!
//! Under MPICH's Hydra or Slurm the ranks of a host are started independently, so no launcher
//! can create the fabric and let them inherit it. Instead the host's lowest rank, its node
//! leader, creates it ([`HostLeader::create`]) together with a listening Unix socket in the
//! abstract namespace under a random name, publishes that name with its business card, and,
//! once every rank has read the cards, hands the fabric's descriptor to each follower
//! ([`HostLeader::serve`]) that connects to it ([`join`]):
//!
//! ```text
//! follower                                 leader
//!   connect @nic-leader-<32 hex>  ───────▶  accept; SO_PEERCRED: same uid? a published pid
//!                                            not yet served?      (otherwise: refused)
//!   SO_PEERCRED: same uid?
//!   hello {local rank}            ───────▶  the rank published for that pid?
//!                                 ◀───────  reply {granted, rank, ranks, job key}
//!                                            + the memory file (SCM_RIGHTS)
//!   check: one descriptor, a private file of ours, the fabric of that key, our rank
//! ```
//!
//! What protects the fabric: it is still a memory file of mode 0600 with no name in any file
//! system; the socket's name is unguessable but not secret (`/proc/net/unix` lists abstract
//! names), so the leader gives the descriptor only to processes of its own user whose pids
//! were published as this host's followers, each once. The socket is no file: its name
//! disappears when the leader closes it (after serving) or dies. The leader keeps the memory
//! file's descriptor only until serving ends; from then on only the processes' mappings keep
//! the fabric, and the kernel frees it when the last of them exits, cleanly or not.
//! The abstract namespace belongs to a network namespace: the ranks of a host must share one.

mod unix;
mod wire;

use super::{hex, random_key, Fabric, HostFabric, JobConfig};
use crate::error::{NicError, Rank, Result};
use std::collections::BTreeMap;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};
use unix::{Conn, Listener};
use wire::{Hello, Reply, Status};

/// What every leader's address starts with (followed by 32 hex digits of kernel entropy).
pub const ADDRESS_PREFIX: &str = "nic-leader-";
/// How long the leader waits for the hello of a follower that connected.
const HELLO_WAIT: Duration = Duration::from_secs(1);
/// How long the leader tries to tell a refused process why.
const REFUSAL_WAIT: Duration = Duration::from_millis(100);
/// Longest pause between a follower's connection attempts.
const RETRY_PAUSE_MAX: Duration = Duration::from_millis(50);

/// The leader's side: created before the card exchange, served after it.
pub struct HostLeader {
    address: String,
    key: [u8; 16],
    nranks: usize,
    /// The socket and the memory file's descriptor, until [`HostLeader::serve`] ends.
    handover: Mutex<Option<Handover>>,
}

struct Handover {
    listener: Listener,
    fabric: OwnedFd,
}

impl HostLeader {
    /// Creates the host's fabric for `cfg.nranks` local ranks and an abstract Unix socket with
    /// a random name (128 bits from the kernel); listening, not yet serving.
    pub fn create(cfg: &JobConfig) -> Result<HostLeader> {
        let (fabric, fd, key) = Fabric::create_for(cfg)?;
        // The leader's own NIC maps the fabric through `attach_self`; this mapping only wrote
        // the header.
        drop(fabric);
        let address = format!("{ADDRESS_PREFIX}{}", hex(&random_key()?));
        let listener = Listener::bind(&address, cfg.nranks + 64).map_err(|e| NicError::Os {
            what: "creating the node leader's socket",
            source: e,
        })?;
        tracing::debug!(target: "nic", %address, nranks = cfg.nranks, "node leader listening");
        Ok(HostLeader {
            address,
            key,
            nranks: cfg.nranks,
            handover: Mutex::new(Some(Handover {
                listener,
                fabric: fd,
            })),
        })
    }

    /// The socket name to publish (printable ASCII, no spaces).
    pub fn address(&self) -> &str {
        &self.address
    }

    /// The leader's own attachment (local rank 0): what [`crate::Nic::open`] needs. Call it
    /// before [`serve`](Self::serve) ends: from then on the leader no longer holds the fabric.
    pub fn attach_self(&self) -> Result<HostFabric> {
        let guard = self.handover.lock().unwrap_or_else(PoisonError::into_inner);
        let handover = guard.as_ref().ok_or_else(|| {
            NicError::Config(
                "HostLeader::attach_self after serve: the leader no longer holds the fabric; attach before serving".into(),
            )
        })?;
        let fd = handover.fabric.try_clone().map_err(|e| NicError::Os {
            what: "duplicating the fabric descriptor",
            source: e,
        })?;
        Ok(HostFabric::new(fd, self.key, 0))
    }

    /// Hands the fabric to each expected follower (local rank, pid), refusing any connection
    /// whose `SO_PEERCRED` uid differs from ours or whose pid is not an expected follower's
    /// (and duplicates); returns when all got it, or `FollowersMissing` naming the missing
    /// local ranks at `deadline`. Either way the socket and the leader's descriptor of the
    /// fabric are closed when it returns; it serves once.
    pub fn serve(&self, followers: &[(usize, u32)], deadline: Instant) -> Result<()> {
        let mut waiting = self.expected(followers)?;
        let handover = self
            .handover
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .ok_or_else(|| {
                NicError::Config("HostLeader::serve was called twice; it serves once".into())
            })?;
        let mut served = Vec::new();
        while !waiting.is_empty() {
            match handover.listener.accept(deadline) {
                Ok(Some(conn)) => {
                    self.answer(conn, &handover.fabric, &mut waiting, &mut served, deadline)
                }
                Ok(None) => break,
                Err(e) => {
                    // Out of descriptors, say: the connection waits in the queue; try again.
                    tracing::warn!(target: "nic", error = %e, "node leader cannot accept a connection");
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        break;
                    }
                    std::thread::sleep(left.min(Duration::from_millis(10)));
                }
            }
        }
        drop(handover);
        if waiting.is_empty() {
            tracing::debug!(target: "nic", followers = followers.len(), "node leader handed the fabric to every follower");
            return Ok(());
        }
        let mut missing: Vec<usize> = waiting.into_values().collect();
        missing.sort_unstable();
        Err(NicError::FollowersMissing { missing })
    }

    /// The followers by pid, after checking the list.
    fn expected(&self, followers: &[(usize, u32)]) -> Result<BTreeMap<u32, Rank>> {
        let mut by_pid = BTreeMap::new();
        let mut ranks = vec![false; self.nranks];
        for &(rank, pid) in followers {
            if rank == 0 || rank >= self.nranks {
                return Err(NicError::Config(format!(
                    "follower local rank {rank} is not in 1..{} (0 is the leader)",
                    self.nranks
                )));
            }
            if std::mem::replace(&mut ranks[rank], true) {
                return Err(NicError::Config(format!(
                    "local rank {rank} is listed twice among the followers"
                )));
            }
            if pid == 0 || pid == std::process::id() || by_pid.insert(pid, rank).is_some() {
                return Err(NicError::Config(format!(
                    "follower pid {pid} (local rank {rank}) is not a pid of its own"
                )));
            }
        }
        Ok(by_pid)
    }

    /// Deals with one connection: gives it the fabric if it is a waiting follower that asks
    /// for its own rank, tells it why not otherwise, and never lets it stop the serving.
    fn answer(
        &self,
        conn: Conn,
        fabric: &OwnedFd,
        waiting: &mut BTreeMap<u32, Rank>,
        served: &mut Vec<u32>,
        deadline: Instant,
    ) {
        let cred = match conn.peer_cred() {
            Ok(c) => c,
            Err(e) => {
                tracing::debug!(target: "nic", error = %e, "node leader: no credentials for a connection");
                return;
            }
        };
        let refuse = |status: Status| {
            tracing::warn!(target: "nic", pid = cred.pid, uid = cred.uid, why = status.describe(), "node leader refused a connection");
            let until = Instant::now() + REFUSAL_WAIT;
            let _ = conn.send_all(&Reply::refused(status).emit(), None, until);
        };
        if cred.uid != unix::own_uid() {
            return refuse(Status::OtherUser);
        }
        let Some(&rank) = waiting.get(&cred.pid) else {
            return refuse(if served.contains(&cred.pid) {
                Status::AlreadyServed
            } else {
                Status::NotExpected
            });
        };
        let mut hello = [0u8; wire::HELLO_LEN];
        match conn.recv_exact(&mut hello, deadline.min(Instant::now() + HELLO_WAIT), None) {
            Ok(n) if n == hello.len() => {}
            Ok(n) => {
                tracing::debug!(target: "nic", pid = cred.pid, bytes = n, "node leader: connection closed before a whole hello");
                return;
            }
            Err(e) => {
                tracing::debug!(target: "nic", pid = cred.pid, error = %e, "node leader: no hello");
                return;
            }
        }
        match Hello::parse(&hello) {
            Ok(h) if h.local_rank as usize == rank => {}
            Ok(_) => return refuse(Status::WrongRank),
            Err(why) => {
                tracing::debug!(target: "nic", pid = cred.pid, %why, "node leader: bad hello");
                return refuse(Status::BadHello);
            }
        }
        let reply = Reply {
            status: Status::Granted,
            local_rank: rank as u32,
            nranks: self.nranks as u32,
            key: self.key,
        };
        match conn.send_all(&reply.emit(), Some(fabric.as_fd()), deadline) {
            Ok(()) => {
                waiting.remove(&cred.pid);
                served.push(cred.pid);
                tracing::debug!(target: "nic", pid = cred.pid, rank, "node leader handed over the fabric");
            }
            Err(e) => {
                tracing::debug!(target: "nic", pid = cred.pid, error = %e, "node leader: hand-over failed")
            }
        }
    }
}

impl std::fmt::Debug for HostLeader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostLeader")
            .field("address", &self.address)
            .field("nranks", &self.nranks)
            .finish_non_exhaustive()
    }
}

/// A follower's side: connects to the leader's published `address` (retrying until `deadline`
/// while nobody listens there or the leader has not answered), checks that the leader runs as
/// our user, asks for the fabric as `local_rank`, and checks what it gets: one descriptor of a
/// memory file private to our user, holding the fabric of the key sent along, with room for
/// our rank. A refusal or a malformed answer ends it at once.
pub fn join(address: &str, local_rank: usize, deadline: Instant) -> Result<HostFabric> {
    let fail = |why: String| NicError::NoFabricFromLeader {
        address: address.to_string(),
        why,
    };
    if address.is_empty()
        || address.len() > unix::MAX_NAME
        || !address.bytes().all(|b| b.is_ascii_graphic())
    {
        return Err(fail(
            "not a leader's address (1 to 107 printable characters, no spaces)".into(),
        ));
    }
    let rank = u32::try_from(local_rank).map_err(|_| fail("local rank out of range".into()))?;
    let hello = Hello { local_rank: rank }.emit();
    let mut pause = Duration::from_millis(1);
    loop {
        let why = match attempt(address, &hello, local_rank, deadline) {
            Ok(fabric) => return Ok(fabric),
            Err(Attempt::Fatal(why)) => return Err(fail(why)),
            Err(Attempt::Retry(why)) => why,
        };
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(fail(format!("no hand-over by the deadline: {why}")));
        }
        std::thread::sleep(pause.min(left));
        pause = (pause * 2).min(RETRY_PAUSE_MAX);
    }
}

/// How one connection attempt of a follower failed.
enum Attempt {
    /// Worth trying again before the deadline (nobody listens yet, the leader went away).
    Retry(String),
    /// Trying again cannot help (refused, malformed answer, foreign leader).
    Fatal(String),
}

fn attempt(
    address: &str,
    hello: &[u8],
    local_rank: Rank,
    deadline: Instant,
) -> std::result::Result<HostFabric, Attempt> {
    use Attempt::{Fatal, Retry};
    let transient = |e: &std::io::Error| {
        matches!(
            e.raw_os_error(),
            Some(
                libc::ECONNREFUSED
                    | libc::ENOENT
                    | libc::EAGAIN
                    | libc::EINTR
                    | libc::ECONNRESET
                    | libc::EPIPE
            )
        ) || e.kind() == std::io::ErrorKind::TimedOut
    };
    let classify = |what: &str, e: std::io::Error| {
        let why = format!("{what}: {e}");
        if transient(&e) {
            Retry(why)
        } else {
            Fatal(why)
        }
    };
    let conn = Conn::connect(address).map_err(|e| classify("connecting", e))?;
    let leader = conn
        .peer_cred()
        .map_err(|e| Fatal(format!("reading the leader's credentials: {e}")))?;
    if leader.uid != unix::own_uid() {
        return Err(Fatal(format!(
            "the process listening there (pid {}) runs as uid {}, not as our uid {}",
            leader.pid,
            leader.uid,
            unix::own_uid()
        )));
    }
    conn.send_all(hello, None, deadline)
        .map_err(|e| classify("sending the request", e))?;
    let mut fds = Vec::new();
    let mut buf = [0u8; wire::REPLY_LEN];
    let n = conn
        .recv_exact(&mut buf, deadline, Some(&mut fds))
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::TimedOut => Retry("the leader did not answer".into()),
            _ => classify("reading the answer", e),
        })?;
    if n == 0 {
        return Err(Retry("the leader closed the connection unanswered".into()));
    }
    let reply = Reply::parse(&buf[..n]).map_err(|why| Fatal(format!("bad answer: {why}")))?;
    if reply.status != Status::Granted {
        return Err(Fatal(format!(
            "the leader refused: {}",
            reply.status.describe()
        )));
    }
    if reply.local_rank as usize != local_rank {
        return Err(Fatal(format!(
            "the leader answered for local rank {}, not {local_rank}",
            reply.local_rank
        )));
    }
    if fds.len() != 1 {
        return Err(Fatal(format!(
            "the answer carried {} descriptors instead of the fabric's one",
            fds.len()
        )));
    }
    let fd = fds.pop().expect("one descriptor");
    check_private(&fd).map_err(Fatal)?;
    let fabric = HostFabric::new(fd, reply.key, local_rank);
    let mapped = fabric.map().map_err(|e| Fatal(e.to_string()))?;
    if mapped.geometry().nranks != reply.nranks as usize {
        return Err(Fatal(format!(
            "the answer says {} ranks, the fabric {}",
            reply.nranks,
            mapped.geometry().nranks
        )));
    }
    Ok(fabric)
}

/// The descriptor is a regular file (a memory file) of our user that no one else may open.
fn check_private(fd: &OwnedFd) -> std::result::Result<(), String> {
    // SAFETY: an all-zero stat is valid; fstat writes into it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat on a descriptor we own.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(format!(
            "fstat on the descriptor received: {}",
            std::io::Error::last_os_error()
        ));
    }
    if st.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Err("the descriptor received is not a memory file".into());
    }
    if st.st_uid != unix::own_uid() || st.st_mode & 0o077 != 0 {
        return Err(format!(
            "the memory file received is not private to us (owner uid {}, mode {:o})",
            st.st_uid,
            st.st_mode & 0o7777
        ));
    }
    Ok(())
}
