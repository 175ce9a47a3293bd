//! Wire-up: from a launcher's key-value space to this rank's device.
//!
//! ```text
//!  listen (TCP) ─▶ put card ─▶ fence ─▶ get every card ─┬─ same host id: a fabric shared
//!                                                       │   through the host's leader
//!  leader: create fabric, put its address ─▶ fence ─────┤   (lowest rank of the host)
//!  follower: ─────────────────────────────▶ fence ─▶ get address, join
//!                                                       └─ other hosts: one TCP connection
//!                                                           per pair, made now (mesh)
//! ```
//!
//! Connections are made at start-up rather than on first use: an unreachable host then fails
//! `MPI_Init` with a message naming it (instead of the first message to it, anywhere in the
//! program), the listening socket is closed once every peer is in (nothing is left for a
//! stranger to talk to), and no send ever waits for a connection to be made. For the job sizes
//! this project runs (tens of ranks) a full mesh costs a few milliseconds at start-up.
//!
//! When every rank of the job is on this host, the result is the plain NIC over the shared
//! fabric: the one-host fast path does not change.

use super::card::{library_version, Card};
use super::device::{HostNet, Route};
use super::host;
use super::mesh;
use crate::error::{NicError, Rank, Result};
use crate::fabric::{self, HostFabric, HostLeader, JobConfig};
use crate::nic::Nic;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::time::{Duration, Instant};

/// Environment variable that chooses the wire: `auto` (shared memory within a host, TCP
/// between hosts; the default) or `tcp` (every pair over TCP, each rank a host of its own:
/// for measurement and tests).
pub const WIRE_ENV: &str = "MPI_WIRE";
/// Environment variable with the port this rank listens on (default: any free port).
pub const PORT_ENV: &str = "MPI_NET_PORT";
/// How long each step of the wire-up may take before it fails naming what is missing (an
/// unreachable host is reported within 10 s, with room for the launcher to end the job).
const STEP_DEADLINE: Duration = Duration::from_secs(8);

/// The launcher's key-value space, as the wire-up uses it (PMI is one).
pub trait Exchange {
    fn rank(&self) -> Rank;
    fn size(&self) -> usize;
    fn put(&mut self, key: &str, value: &str) -> std::result::Result<(), String>;
    /// Makes every rank's puts visible to every rank; returns when all ranks have called it.
    fn fence(&mut self) -> std::result::Result<(), String>;
    fn get(&mut self, rank: Rank, key: &str) -> std::result::Result<String, String>;
}

/// What the wire-up made.
#[allow(clippy::large_enum_variant)] // Made once; the plain NIC moves into `DeviceStack::Plain`.
pub enum Wired {
    /// Every rank is on this host: the plain NIC.
    OneHost(Nic),
    /// The job spans hosts.
    Hosts(Box<HostNet>),
}

/// Which wire the job uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    Auto,
    Tcp,
}

impl Wire {
    pub fn from_env() -> Result<Wire> {
        match std::env::var(WIRE_ENV).as_deref() {
            Err(_) | Ok("") | Ok("auto") => Ok(Wire::Auto),
            Ok("tcp") => Ok(Wire::Tcp),
            Ok(other) => Err(NicError::Config(format!(
                "{WIRE_ENV}={other:?}: the wires are auto (shared memory within a host, TCP \
                 between hosts) and tcp (every pair over TCP)"
            ))),
        }
    }
}

fn pmi_failed(what: &str, why: String) -> NicError {
    NicError::Network(format!(
        "the launcher's key-value space failed ({what}): {why}"
    ))
}

/// Builds this rank's device through `ex`. `config(n)` gives the geometry of a fabric for `n`
/// ranks of this host.
pub fn wire_up(ex: &mut dyn Exchange, config: &dyn Fn(usize) -> JobConfig) -> Result<Wired> {
    let (me, n) = (ex.rank(), ex.size());
    let wire = Wire::from_env()?;
    let mut host = host::host_id();
    if wire == Wire::Tcp {
        host = format!("{host}/rank{me}");
    }
    let addrs = host::addresses().map_err(NicError::Config)?;
    let listener = listen(&addrs)?;
    let port = listener
        .local_addr()
        .map_err(|e| NicError::Network(format!("listening socket: {e}")))?
        .port();
    let slot_bytes = config(1).slot_bytes;
    let mine = Card {
        version: library_version(),
        host,
        // SAFETY: getpid has no preconditions.
        pid: unsafe { libc::getpid() } as u32,
        addrs,
        port,
        slot_bytes,
        job_key: if me == 0 {
            Some(fabric::random_key()?)
        } else {
            None
        },
    };
    ex.put(&card_key(me), &mine.emit())
        .map_err(|e| pmi_failed("publishing this rank's card", e))?;
    ex.fence().map_err(|e| pmi_failed("fence", e))?;
    let cards = read_cards(ex, me, n, &mine)?;
    let local: Vec<Rank> = (0..n).filter(|&r| cards[r].host == mine.host).collect();
    let local_index = local
        .iter()
        .position(|&r| r == me)
        .expect("a rank is on its host");
    tracing::debug!(target: "nic", rank = me, local = local.len(), ranks = n, "wire-up: cards read");

    // The host's fabric: the lowest rank of the host creates it, the others join.
    let leader = if local_index == 0 {
        let l = HostLeader::create(&config(local.len()))?;
        if local.len() > 1 {
            ex.put(&leader_key(me), l.address())
                .map_err(|e| pmi_failed("publishing the host's fabric", e))?;
        }
        Some(l)
    } else {
        None
    };
    ex.fence().map_err(|e| pmi_failed("fence", e))?;
    let deadline = Instant::now() + STEP_DEADLINE;
    let hf: HostFabric = match &leader {
        Some(l) => {
            let followers: Vec<(usize, u32)> = local
                .iter()
                .enumerate()
                .skip(1)
                .map(|(i, &r)| (i, cards[r].pid))
                .collect();
            let own = l.attach_self()?;
            l.serve(&followers, deadline)?;
            own
        }
        None => {
            let address = ex
                .get(local[0], &leader_key(local[0]))
                .map_err(|e| pmi_failed("reading the host's fabric", e))?;
            fabric::join(&address, local_index, deadline)?
        }
    };
    drop(leader);
    let nic = Nic::open(hf)?;
    if local.len() == n {
        return Ok(Wired::OneHost(nic));
    }

    let remote: Vec<Rank> = (0..n).filter(|r| !local.contains(r)).collect();
    let job_key = cards[0]
        .job_key
        .ok_or_else(|| NicError::Network("rank 0's card has no job key".into()))?;
    let conns = mesh::connect_all(
        me,
        &cards,
        &remote,
        job_key,
        &listener,
        Instant::now() + STEP_DEADLINE,
    )?;
    drop(listener);
    let routes = (0..n)
        .map(|r| match local.iter().position(|&l| l == r) {
            Some(i) => Route::Local(i),
            None => Route::Remote(remote.iter().position(|&x| x == r).expect("remote")),
        })
        .collect();
    tracing::debug!(target: "nic", rank = me, remote = remote.len(), "wire-up: connected");
    Ok(Wired::Hosts(Box::new(HostNet::new(nic, me, routes, conns))))
}

fn card_key(rank: Rank) -> String {
    format!("nic-card-{rank}")
}

fn leader_key(rank: Rank) -> String {
    format!("nic-leader-{rank}")
}

/// Listens on `MPI_NET_PORT` (or any port) of the first published address, or of every
/// address when none was named.
fn listen(addrs: &[Ipv4Addr]) -> Result<TcpListener> {
    let port: u16 = match std::env::var(PORT_ENV) {
        Ok(p) => p
            .parse()
            .map_err(|_| NicError::Config(format!("{PORT_ENV}={p:?} is not a port number")))?,
        Err(_) => 0,
    };
    let ip = if std::env::var_os(host::ADDR_ENV).is_some() {
        addrs[0]
    } else {
        Ipv4Addr::UNSPECIFIED
    };
    TcpListener::bind(SocketAddr::from((ip, port))).map_err(|e| {
        // Name the host and the settings that chose the address and port: what a user changes.
        let setting =
            |name| std::env::var(name).map_or(String::new(), |v| format!(", {name}={v:?}"));
        let (host, addr, port_set) = (host::host_id(), setting(host::ADDR_ENV), setting(PORT_ENV));
        NicError::Network(format!(
            "cannot listen on {ip}:{port} (host {host}{addr}{port_set}): {e}"
        ))
    })
}

/// Every rank's card, checked: same library, same packet size.
fn read_cards(ex: &mut dyn Exchange, me: Rank, n: usize, mine: &Card) -> Result<Vec<Card>> {
    let mut cards = Vec::with_capacity(n);
    for r in 0..n {
        if r == me {
            cards.push(mine.clone());
            continue;
        }
        let raw = ex
            .get(r, &card_key(r))
            .map_err(|e| pmi_failed(&format!("reading rank {r}'s card"), e))?;
        let card = Card::parse(&raw)
            .map_err(|why| NicError::Network(format!("rank {r}'s card {raw:?}: {why}")))?;
        if card.version != mine.version {
            return Err(NicError::Network(format!(
                "rank {r} on {} was built with library version {}, this rank (rank {me}) with \
                 {}: build every rank of the job against the same library",
                card.where_(),
                card.version,
                mine.version
            )));
        }
        if card.slot_bytes != mine.slot_bytes {
            return Err(NicError::Config(format!(
                "rank {r} uses packet buffers of {} bytes and rank {me} of {}: give every rank \
                 the same MPI_NIC_SLOT_BYTES",
                card.slot_bytes, mine.slot_bytes
            )));
        }
        cards.push(card);
    }
    Ok(cards)
}
