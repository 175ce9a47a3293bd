//! Connecting two groups of processes that share no job: the handshake behind
//! `MPI_Comm_accept` / `MPI_Comm_connect` (and so `MPI_Comm_spawn` and `MPI_Comm_join`).
//!
//! ```text
//!  accepting group A (root ra, port P)            connecting group B (root rb)
//!  every member: a listener; addresses ──allgather──▶ ra
//!  ra: accept on P ◀──── "MPIDYN1 <secret> <|B|> <rb>" ──── rb connects to P
//!      wrong secret: "refused", closed, ra waits for the next
//!  ra ──── "OK <token> <|A|> <ra> <address of each member of A>" ────▶ rb
//!  ra ──bcast──▶ A: |B|, rb, token             rb ──bcast──▶ B: |A|, ra, token, addresses
//!  each member j of B connects to each member i of A: "MPIDYN2 <token> <j>"
//!  each member of A accepts |B| such connections (others refused), then closes its listener
//! ```
//!
//! Every member ends with one stream per member of the other group, in that group's rank
//! order, which the engine takes as new peers. The token (random, per connection of the two
//! groups) keeps strangers off the members' listeners; the port's secret keeps them off the
//! port. Every wait is bounded: a connecting root waits `MPI_PORT_TIMEOUT` seconds (default
//! 60) for an accept, the members' connections get 30 s; an accepting root waits as long as
//! `MPI_ACCEPT_TIMEOUT` says (default: without end, as MPI's accept does).
//!
//! **Waiting.** The exchanges within a group go through a [`Progress`] (`comm::net`), the
//! socket work (the root's accept on the port and its handshake, the members' connections)
//! through [`Progress::outside`]: it touches nothing of the process's state (the port is the
//! call's own copy, the tables its own buffers), so under `MPI_THREAD_MULTIPLE` a blocking
//! call's `Calling` runs it with the process's lock let go, and the other threads' calls run
//! while the root waits for a connection. Held throughout (below that level), each runs as it
//! did before; the messages are the same either way.

use super::port::{self, same_secret, OpenPort, SECRET_BYTES};
use crate::abi::*;
use crate::comm::net::{Net, Progress, TAG_BCAST};
use crate::error::{MpiError, MpiResult};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// Tags of this module's exchanges within a group (beside `comm::net`'s).
const TAG_ADDRS: i32 = TAG_BCAST + 0x0040_0000;
const TAG_HEADER: i32 = TAG_BCAST + 0x0040_0001;
const TAG_TABLE: i32 = TAG_BCAST + 0x0040_0002;
/// Bytes of one member's address in the gathered table.
const ADDR_BYTES: usize = 64;
/// How long members have to connect to each other once the roots agreed.
const MEMBERS_LIMIT: Duration = Duration::from_secs(30);
/// How long one handshake line may take once a connection is made.
const LINE_LIMIT: Duration = Duration::from_secs(10);

/// One group's end of a connection between two groups.
pub(crate) struct Linked {
    /// A stream to each member of the other group, in its rank order.
    pub socks: Vec<TcpStream>,
    /// The token of this connection (random, the same at every member of both groups).
    pub token: [u8; SECRET_BYTES],
    /// Whether this group is the accepting one.
    pub accepting: bool,
}

fn seconds_from_env(name: &str) -> Option<Duration> {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| *s > 0.0)
        .map(Duration::from_secs_f64)
}

/// Reads one line (without its newline), byte by byte so that nothing behind it is taken.
fn read_line(s: &mut TcpStream, limit: Duration) -> std::io::Result<String> {
    s.set_read_timeout(Some(limit))?;
    let mut line = Vec::new();
    let mut b = [0u8; 1];
    loop {
        match s.read(&mut b)? {
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            _ if b[0] == b'\n' => break,
            _ => line.push(b[0]),
        }
        if line.len() > 64 * 1024 {
            return Err(std::io::ErrorKind::InvalidData.into());
        }
    }
    s.set_read_timeout(None)?;
    Ok(String::from_utf8_lossy(&line).into_owned())
}

fn words_to_bytes(w: &[u64]) -> Vec<u8> {
    w.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn bytes_to_words(b: &[u8]) -> Vec<u64> {
    b.chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect()
}

fn token_words(t: &[u8; SECRET_BYTES]) -> [u64; 2] {
    [
        u64::from_le_bytes(t[..8].try_into().expect("8")),
        u64::from_le_bytes(t[8..].try_into().expect("8")),
    ]
}

fn words_token(w: &[u64]) -> [u8; SECRET_BYTES] {
    let mut t = [0u8; SECRET_BYTES];
    t[..8].copy_from_slice(&w[0].to_le_bytes());
    t[8..].copy_from_slice(&w[1].to_le_bytes());
    t
}

/// The header a root broadcasts: status (0 or an error class), the other group's size and
/// root, the token.
const HEADER_WORDS: usize = 5;

fn bcast_header(
    a: &mut impl Progress,
    net: &Net,
    root: usize,
    header: &mut [u64; HEADER_WORDS],
) -> MpiResult<()> {
    let mut bytes = words_to_bytes(header);
    net.bcast(a, root, &mut bytes, TAG_HEADER)?;
    header.copy_from_slice(&bytes_to_words(&bytes));
    Ok(())
}

fn failed_at_root(class: u64, what: &str) -> MpiError {
    MpiError::new(
        class as i32,
        format!("{what} failed at the root (its error says why)"),
    )
}

/// The accepting group's side. `port` is the root's open port (ignored elsewhere).
pub(crate) fn accept(
    a: &mut impl Progress,
    net: &Net,
    root: usize,
    port: Option<&OpenPort>,
) -> MpiResult<Linked> {
    let (listener, bound) = port::listener()?;
    let mut mine = [0u8; ADDR_BYTES];
    let text = bound.to_string();
    mine[..text.len()].copy_from_slice(text.as_bytes());
    let mut table = vec![0u8; ADDR_BYTES * net.size()];
    net.allgather(a, &mine, &mut table, TAG_ADDRS)?;
    let mut header = [0u64; HEADER_WORDS];
    let mut root_error = None;
    if net.me == root {
        match a.outside(|| root_accept(port, net, root, &table)) {
            Ok((n, rb, token)) => {
                let t = token_words(&token);
                header = [0, n as u64, rb as u64, t[0], t[1]];
            }
            Err(e) => {
                header[0] = e.class as u64;
                root_error = Some(e);
            }
        }
    }
    bcast_header(a, net, root, &mut header)?;
    if header[0] != 0 {
        return Err(root_error.unwrap_or_else(|| failed_at_root(header[0], "MPI_Comm_accept")));
    }
    let (n, token) = (header[1] as usize, words_token(&header[3..5]));
    let socks = a.outside(|| accept_members(&listener, n, &token))?;
    Ok(Linked {
        socks,
        token,
        accepting: true,
    })
}

/// The accepting root: waits for a connecting root with the secret; returns the other
/// group's size, its root and the token of this connection.
fn root_accept(
    port: Option<&OpenPort>,
    net: &Net,
    root: usize,
    table: &[u8],
) -> MpiResult<(usize, usize, [u8; SECRET_BYTES])> {
    let port = port.ok_or_else(|| MpiError::new(MPI_ERR_PORT, "no open port at the root"))?;
    let limit = seconds_from_env("MPI_ACCEPT_TIMEOUT");
    let deadline = limit.map(|l| Instant::now() + l);
    port.listener
        .set_nonblocking(true)
        .map_err(|e| MpiError::new(MPI_ERR_PORT, format!("the port's listener: {e}")))?;
    let mut backoff = nic_model::wait::Backoff::new();
    loop {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(MpiError::new(
                MPI_ERR_PORT,
                format!(
                    "MPI_Comm_accept: nobody connected to port {} within MPI_ACCEPT_TIMEOUT ({:?})",
                    port.name,
                    limit.unwrap_or_default()
                ),
            ));
        }
        let mut s = match port.listener.accept() {
            Ok((s, _)) => s,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                backoff.snooze();
                continue;
            }
            Err(e) => {
                return Err(MpiError::new(
                    MPI_ERR_PORT,
                    format!("accepting on the port: {e}"),
                ))
            }
        };
        backoff.reset();
        let _ = s.set_nonblocking(false);
        let Ok(line) = read_line(&mut s, LINE_LIMIT) else {
            continue;
        };
        let mut w = line.split_whitespace();
        let hello = (
            w.next(),
            w.next().and_then(port::unhex),
            w.next().and_then(|n| n.parse::<usize>().ok()),
            w.next().and_then(|n| n.parse::<usize>().ok()),
        );
        let (Some("MPIDYN1"), Some(secret), Some(n), Some(rb)) = hello else {
            let _ = s.write_all(b"refused: not a connection of this library\n");
            continue;
        };
        if !same_secret(&secret, &port.secret) || n == 0 || rb >= n {
            tracing::info!(target: "mpi", "refused a connection to port {} (wrong secret)", port.name);
            let _ = s.write_all(b"refused: wrong secret\n");
            continue;
        }
        let token = port::random_bytes()?;
        let mut reply = format!("OK {} {} {}", port::hex(&token), net.size(), root);
        for i in 0..net.size() {
            let a = &table[i * ADDR_BYTES..(i + 1) * ADDR_BYTES];
            let end = a.iter().position(|&b| b == 0).unwrap_or(ADDR_BYTES);
            reply.push(' ');
            reply.push_str(&String::from_utf8_lossy(&a[..end]));
        }
        reply.push('\n');
        if s.write_all(reply.as_bytes()).is_err() {
            continue;
        }
        return Ok((n, rb, token));
    }
}

/// Takes `n` connections of the other group's members on `listener`, by their rank.
fn accept_members(
    listener: &TcpListener,
    n: usize,
    token: &[u8; SECRET_BYTES],
) -> MpiResult<Vec<TcpStream>> {
    let deadline = Instant::now() + MEMBERS_LIMIT;
    let mut socks: Vec<Option<TcpStream>> = (0..n).map(|_| None).collect();
    let mut got = 0;
    listener
        .set_nonblocking(true)
        .map_err(|e| MpiError::new(MPI_ERR_OTHER, format!("a listener: {e}")))?;
    let mut backoff = nic_model::wait::Backoff::new();
    while got < n {
        if Instant::now() >= deadline {
            return Err(MpiError::new(
                MPI_ERR_OTHER,
                format!("only {got} of the {n} processes of the other job connected within {MEMBERS_LIMIT:?}"),
            ));
        }
        let mut s = match listener.accept() {
            Ok((s, _)) => s,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                backoff.snooze();
                continue;
            }
            Err(e) => {
                return Err(MpiError::new(
                    MPI_ERR_OTHER,
                    format!("accepting a process of the other job: {e}"),
                ))
            }
        };
        let _ = s.set_nonblocking(false);
        let Ok(line) = read_line(&mut s, LINE_LIMIT) else {
            continue;
        };
        let mut w = line.split_whitespace();
        let (Some("MPIDYN2"), Some(t), Some(j)) = (
            w.next(),
            w.next().and_then(port::unhex),
            w.next().and_then(|j| j.parse::<usize>().ok()),
        ) else {
            continue;
        };
        if !same_secret(&t, token) || j >= n || socks[j].is_some() {
            continue;
        }
        socks[j] = Some(s);
        got += 1;
    }
    Ok(socks
        .into_iter()
        .map(|s| s.expect("every member connected"))
        .collect())
}

/// The connecting group's side. `port_name` is the root's argument (ignored elsewhere).
pub(crate) fn connect(
    a: &mut impl Progress,
    net: &Net,
    root: usize,
    port_name: Option<&str>,
) -> MpiResult<Linked> {
    let mut header = [0u64; HEADER_WORDS];
    let mut root_error = None;
    let mut addrs_text = String::new();
    if net.me == root {
        match a.outside(|| root_connect(port_name.unwrap_or(""), net.size(), root)) {
            Ok((n, ra, token, addrs)) => {
                let t = token_words(&token);
                header = [0, n as u64, ra as u64, t[0], t[1]];
                addrs_text = addrs;
            }
            Err(e) => {
                header[0] = e.class as u64;
                root_error = Some(e);
            }
        }
    }
    bcast_header(a, net, root, &mut header)?;
    if header[0] != 0 {
        return Err(root_error.unwrap_or_else(|| failed_at_root(header[0], "MPI_Comm_connect")));
    }
    let (n, token) = (header[1] as usize, words_token(&header[3..5]));
    let mut table = vec![0u8; ADDR_BYTES * n];
    if net.me == root {
        for (i, a) in addrs_text.split_whitespace().take(n).enumerate() {
            let b = a.as_bytes();
            table[i * ADDR_BYTES..i * ADDR_BYTES + b.len().min(ADDR_BYTES)]
                .copy_from_slice(&b[..b.len().min(ADDR_BYTES)]);
        }
    }
    net.bcast(a, root, &mut table, TAG_TABLE)?;
    let socks = a.outside(|| connect_members(&table, n, &token, net.me))?;
    Ok(Linked {
        socks,
        token,
        accepting: false,
    })
}

/// A connecting member (`me`): a stream to each of the `n` members of the accepting group, at
/// the addresses of `table`, each greeted with the token and `me`.
fn connect_members(
    table: &[u8],
    n: usize,
    token: &[u8; SECRET_BYTES],
    me: usize,
) -> MpiResult<Vec<TcpStream>> {
    let mut socks = Vec::with_capacity(n);
    for i in 0..n {
        let a = &table[i * ADDR_BYTES..(i + 1) * ADDR_BYTES];
        let end = a.iter().position(|&b| b == 0).unwrap_or(ADDR_BYTES);
        let addr: SocketAddr = String::from_utf8_lossy(&a[..end])
            .parse()
            .map_err(|_| MpiError::internal("a malformed address of a process of the other job"))?;
        let mut s = TcpStream::connect_timeout(&addr, MEMBERS_LIMIT).map_err(|e| {
            MpiError::new(
                MPI_ERR_OTHER,
                format!("cannot reach process {i} of the other job at {addr}: {e}"),
            )
        })?;
        s.write_all(format!("MPIDYN2 {} {}\n", port::hex(token), me).as_bytes())
            .map_err(|e| {
                MpiError::new(
                    MPI_ERR_OTHER,
                    format!("greeting process {i} of the other job: {e}"),
                )
            })?;
        socks.push(s);
    }
    Ok(socks)
}

/// The connecting root: presents the secret; returns the other group's size, root, the token
/// and its members' addresses.
fn root_connect(
    name: &str,
    size: usize,
    root: usize,
) -> MpiResult<(usize, usize, [u8; SECRET_BYTES], String)> {
    let target = port::parse(name)?;
    let limit = seconds_from_env("MPI_PORT_TIMEOUT").unwrap_or(Duration::from_secs(60));
    let unreachable = |why: String| {
        MpiError::new(
            MPI_ERR_PORT,
            format!("MPI_Comm_connect: port {name}: {why}"),
        )
    };
    let mut s = TcpStream::connect_timeout(&target.addr, limit.min(Duration::from_secs(10)))
        .map_err(|e| unreachable(format!("nobody listens there ({e}); was it closed?")))?;
    s.write_all(format!("MPIDYN1 {} {size} {root}\n", port::hex(&target.secret)).as_bytes())
        .map_err(|e| unreachable(format!("sending the greeting failed: {e}")))?;
    let line = read_line(&mut s, limit).map_err(|e| {
        if matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ) {
            unreachable(format!(
                "nobody accepted within {limit:?} (MPI_PORT_TIMEOUT)"
            ))
        } else {
            unreachable(format!("the port closed the connection ({e})"))
        }
    })?;
    let mut w = line.split_whitespace();
    if w.next() != Some("OK") {
        return Err(unreachable(format!("refused: {line}")));
    }
    let token = w.next().and_then(port::unhex);
    let n = w.next().and_then(|n| n.parse::<usize>().ok());
    let ra = w.next().and_then(|n| n.parse::<usize>().ok());
    let (Some(token), Some(n), Some(ra)) = (token, n, ra) else {
        return Err(unreachable(format!("a malformed answer: {line}")));
    };
    let addrs: Vec<&str> = w.collect();
    if addrs.len() != n || n == 0 || ra >= n {
        return Err(unreachable(format!("a malformed answer: {line}")));
    }
    Ok((n, ra, token, addrs.join(" ")))
}

/// Writes `line` and reads the peer's over the caller's socket `fd`, which stays open.
pub(crate) fn swap_lines(fd: std::ffi::c_int, line: &str) -> MpiResult<String> {
    use std::os::fd::FromRawFd;
    if fd < 0 {
        return Err(MpiError::new(MPI_ERR_ARG, format!("{fd} is not a socket")));
    }
    // SAFETY: the caller's socket stays open during the call (MPI_Comm_join's contract); the
    // stream is never dropped (ManuallyDrop), so the descriptor is not closed here.
    let mut s = std::mem::ManuallyDrop::new(unsafe { std::net::TcpStream::from_raw_fd(fd) });
    let io =
        |e: std::io::Error| MpiError::new(MPI_ERR_OTHER, format!("MPI_Comm_join: the socket: {e}"));
    s.write_all(format!("{line}\n").as_bytes()).map_err(io)?;
    let mut got = Vec::new();
    let mut b = [0u8; 1];
    while got.len() < 1024 {
        if s.read(&mut b).map_err(io)? == 0 {
            return Err(MpiError::new(
                MPI_ERR_OTHER,
                "MPI_Comm_join: the other side closed the socket",
            ));
        }
        if b[0] == b'\n' {
            return Ok(String::from_utf8_lossy(&got).into_owned());
        }
        got.push(b[0]);
    }
    Err(MpiError::new(
        MPI_ERR_OTHER,
        "MPI_Comm_join: the other side sent no port",
    ))
}
