//! Connecting every pair of ranks on different hosts, at start-up.
//!
//! Each rank listens before it publishes its card. Then a rank connects to every remote rank
//! below it and says hello, accepts a connection from every remote rank above it (refusing
//! strangers), and finally reads the verdicts on its own hellos. No rank waits for a verdict
//! before it has accepted its own callers, so the order cannot deadlock, and every step has
//! the same deadline: a host that cannot be reached ends the start-up with an error that names
//! it, instead of a hang.

use super::card::{library_version, Card};
use super::conn::Conn;
use super::handshake::{read_verdict, same_key, send_verdict, Hello};
use crate::error::{NicError, Rank, Result};
use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// Longest a single connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest an accepted client may take to say hello (a silent stranger costs this much).
const HELLO_TIMEOUT: Duration = Duration::from_secs(2);

/// "rank r on host h (a:p)".
pub fn peer_name(rank: Rank, card: &Card) -> String {
    format!("rank {rank} on {}", card.where_())
}

fn network(msg: String) -> NicError {
    NicError::Network(msg)
}

/// Connects this rank (`me`) to every rank in `remote`; returns the connections in the order
/// of `remote`.
pub fn connect_all(
    me: Rank,
    cards: &[Card],
    remote: &[Rank],
    job_key: [u8; 16],
    listener: &TcpListener,
    deadline: Instant,
) -> Result<Vec<(Rank, Conn)>> {
    let mut outgoing = Vec::new();
    for &peer in remote.iter().filter(|&&p| p < me) {
        let mut s = dial(peer, &cards[peer], deadline)?;
        s.write_all(&Hello::ours(me, peer, job_key).emit())
            .map_err(|e| {
                network(format!(
                    "cannot greet {}: {e}",
                    peer_name(peer, &cards[peer])
                ))
            })?;
        outgoing.push((peer, s));
    }
    let callers: Vec<Rank> = remote.iter().copied().filter(|&p| p > me).collect();
    let mut incoming = accept_callers(me, cards, &callers, job_key, listener, deadline)?;
    let mut conns = Vec::with_capacity(remote.len());
    for (peer, mut s) in outgoing {
        read_verdict(&mut s, deadline)
            .map_err(|why| network(format!("{}: {why}", peer_name(peer, &cards[peer]))))?;
        conns.push((peer, s));
    }
    conns.append(&mut incoming);
    conns.sort_by_key(|(p, _)| remote.iter().position(|r| r == p));
    conns
        .into_iter()
        .map(|(peer, s)| {
            let name = peer_name(peer, &cards[peer]);
            Conn::new(s, name.clone())
                .map(|c| (peer, c))
                .map_err(|e| network(format!("cannot set up the connection to {name}: {e}")))
        })
        .collect()
}

/// Connects to one of `card`'s addresses, in order.
fn dial(peer: Rank, card: &Card, deadline: Instant) -> Result<TcpStream> {
    let mut why = Vec::new();
    for addr in &card.addrs {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        let to = SocketAddr::from((*addr, card.port));
        match TcpStream::connect_timeout(&to, left.min(CONNECT_TIMEOUT)) {
            Ok(s) => return Ok(s),
            Err(e) => why.push(format!("{to}: {e}")),
        }
    }
    Err(network(format!(
        "cannot reach {} ({}); check that the host is up and reachable from this one, or set \
         MPI_NET_ADDR on it to an address this host can reach",
        peer_name(peer, card),
        if why.is_empty() {
            "no time left".to_string()
        } else {
            why.join("; ")
        }
    )))
}

/// Accepts one connection from each of `callers`, refusing anything else.
fn accept_callers(
    me: Rank,
    cards: &[Card],
    callers: &[Rank],
    job_key: [u8; 16],
    listener: &TcpListener,
    deadline: Instant,
) -> Result<Vec<(Rank, TcpStream)>> {
    let mut got: Vec<(Rank, TcpStream)> = Vec::with_capacity(callers.len());
    listener
        .set_nonblocking(true)
        .map_err(|e| network(format!("listening socket: {e}")))?;
    let mut backoff = crate::wait::Backoff::new();
    while got.len() < callers.len() {
        if Instant::now() > deadline {
            let missing: Vec<String> = callers
                .iter()
                .filter(|c| !got.iter().any(|(g, _)| g == *c))
                .map(|&c| peer_name(c, &cards[c]))
                .collect();
            return Err(network(format!(
                "no connection from {} in time; is that host reachable from this one?",
                missing.join(", ")
            )));
        }
        let (mut s, from) = match listener.accept() {
            Ok(x) => x,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                backoff.snooze();
                continue;
            }
            Err(e) => return Err(network(format!("accepting a connection: {e}"))),
        };
        backoff = crate::wait::Backoff::new();
        let _ = s.set_nonblocking(false);
        let said_by = deadline.min(Instant::now() + HELLO_TIMEOUT);
        let verdict = Hello::read(&mut s, said_by)
            .and_then(|h| check_hello(&h, me, callers, &got, job_key).map(|()| h.from as Rank));
        match verdict {
            Ok(peer) => {
                if send_verdict(&mut s, None).is_ok() {
                    got.push((peer, s));
                }
            }
            Err(why) => {
                tracing::warn!(target: "nic", %from, %why, "refused a connection");
                let _ = send_verdict(&mut s, Some(&why));
            }
        }
    }
    Ok(got)
}

/// Why a hello is refused, if it is.
fn check_hello(
    h: &Hello,
    me: Rank,
    callers: &[Rank],
    got: &[(Rank, TcpStream)],
    job_key: [u8; 16],
) -> std::result::Result<(), String> {
    if !same_key(&h.job_key, &job_key) {
        return Err("wrong job key: not a rank of this job".into());
    }
    if h.version != library_version() {
        return Err(format!(
            "rank {me} runs library version {}, the caller {}; build every rank against one \
             library",
            library_version(),
            h.version
        ));
    }
    let from = h.from as Rank;
    if h.to as Rank != me {
        return Err(format!("this is rank {me}, not rank {}", h.to));
    }
    if !callers.contains(&from) || got.iter().any(|(g, _)| *g == from) {
        return Err(format!("rank {from} is not expected to connect here"));
    }
    Ok(())
}
