//! The client's connection to its process manager: a blocking descriptor (an inherited
//! `PMI_FD` or a TCP socket to `PMI_PORT`) read and written under a deadline.
//!
//! Every wait goes through `poll(2)` with the time left, so a dead or stuck process manager
//! gives [`PmiError::Timeout`] instead of a hang, and a closed one [`PmiError::Closed`].
//! Sockets are written with `MSG_NOSIGNAL`: a process manager that went away must not kill
//! the program with `SIGPIPE` (the library runs inside C programs that keep its default).
//! This module holds the client's only `unsafe` code: `poll`, `send`, `fcntl`, `setsockopt`.

use crate::error::PmiError;
use std::fs::File;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::fs::FileTypeExt;
use std::time::{Duration, Instant};

/// The longest PMI-1 line the client accepts from a server.
pub const MAX_LINE: usize = 64 * 1024;

/// How long an exchange may wait, and which variable set that (for the message).
#[derive(Clone, Copy, Debug)]
pub struct Patience {
    pub limit: Option<Duration>,
    pub variable: &'static str,
}

/// A deadline for one exchange.
#[derive(Clone, Copy, Debug)]
pub struct Deadline {
    at: Option<Instant>,
    patience: Patience,
}

impl Deadline {
    pub fn start(patience: Patience) -> Deadline {
        Deadline {
            at: patience.limit.map(|limit| Instant::now() + limit),
            patience,
        }
    }

    fn remaining(&self) -> Option<Duration> {
        self.at
            .map(|at| at.saturating_duration_since(Instant::now()))
    }

    fn expired(&self, command: &'static str) -> PmiError {
        PmiError::Timeout {
            command,
            timeout: self.patience.limit.unwrap_or_default(),
            variable: self.patience.variable,
        }
    }
}

/// A blocking connection with a read buffer.
pub struct Connection {
    file: File,
    is_socket: bool,
    buffer: Vec<u8>,
}

impl Connection {
    /// Takes over the inherited descriptor `fd` (checked to be open), marking it
    /// close-on-exec so that programs the rank starts do not inherit it.
    pub fn inherit(fd: RawFd) -> Result<Connection, PmiError> {
        if fd < 0 {
            return Err(PmiError::Environment(format!(
                "PMI_FD={fd} is not a descriptor"
            )));
        }
        // SAFETY: F_GETFD/F_SETFD take and return plain integers; an fd that is not open makes
        // F_GETFD fail with EBADF, which is what is checked here, before ownership is taken.
        let open = unsafe { libc::fcntl(fd, libc::F_GETFD) } >= 0;
        if !open {
            return Err(PmiError::Environment(format!(
                "PMI_FD={fd} is not an open descriptor of this process (was the program started \
                 by a process manager, and has nothing closed it?)"
            )));
        }
        // SAFETY: as above; the descriptor is open.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
        // SAFETY: the process manager handed this descriptor to this process for PMI alone,
        // and `from_env` takes it at most once per process (see `client::take_pmi_fd`).
        let owned = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Connection::new(owned))
    }

    /// Connects to `address` (`host:port`, `[v6]:port`), trying each address it resolves to.
    pub fn connect(address: &str, timeout: Option<Duration>) -> Result<Connection, PmiError> {
        let failed = |source| PmiError::Connect {
            address: address.to_string(),
            source,
        };
        let candidates: Vec<SocketAddr> = address.to_socket_addrs().map_err(failed)?.collect();
        let mut last = io::Error::new(io::ErrorKind::NotFound, "the name resolves to no address");
        for candidate in candidates {
            let attempt = match timeout {
                Some(t) => TcpStream::connect_timeout(&candidate, t.max(Duration::from_millis(1))),
                None => TcpStream::connect(candidate),
            };
            match attempt {
                Ok(stream) => {
                    let _ = stream.set_nodelay(true);
                    keep_alive(&stream);
                    return Ok(Connection::new(OwnedFd::from(stream)));
                }
                Err(e) => last = e,
            }
        }
        Err(failed(last))
    }

    fn new(fd: OwnedFd) -> Connection {
        let file = File::from(fd);
        let is_socket = file
            .metadata()
            .map(|m| m.file_type().is_socket())
            .unwrap_or(false);
        Connection {
            file,
            is_socket,
            buffer: Vec::new(),
        }
    }

    /// Writes all of `bytes`.
    pub fn send(
        &mut self,
        bytes: &[u8],
        command: &'static str,
        deadline: Deadline,
    ) -> Result<(), PmiError> {
        let mut rest = bytes;
        while !rest.is_empty() {
            self.wait(libc::POLLOUT, command, deadline)?;
            match self.write_some(rest) {
                Ok(0) => {
                    return Err(PmiError::Closed {
                        command,
                        partial: String::new(),
                    })
                }
                Ok(n) => rest = &rest[n..],
                Err(e) if retry(&e) => {}
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                    return Err(PmiError::Closed {
                        command,
                        partial: String::new(),
                    })
                }
                Err(source) => return Err(PmiError::Io { command, source }),
            }
        }
        Ok(())
    }

    /// Reads one line (without its newline).
    pub fn read_line(
        &mut self,
        command: &'static str,
        deadline: Deadline,
    ) -> Result<String, PmiError> {
        loop {
            if let Some(end) = self.buffer.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.buffer.drain(..=end).collect();
                return text(&line[..end], command);
            }
            if self.buffer.len() > MAX_LINE {
                return Err(PmiError::Malformed {
                    command,
                    problem: format!("a reply line longer than {MAX_LINE} bytes"),
                    reply: lossy_start(&self.buffer),
                });
            }
            self.fill(command, deadline)?;
        }
    }

    /// Reads exactly `n` bytes.
    pub fn read_exact(
        &mut self,
        n: usize,
        command: &'static str,
        deadline: Deadline,
    ) -> Result<Vec<u8>, PmiError> {
        while self.buffer.len() < n {
            self.fill(command, deadline)?;
        }
        Ok(self.buffer.drain(..n).collect())
    }

    /// Reads whatever arrives next into the buffer.
    fn fill(&mut self, command: &'static str, deadline: Deadline) -> Result<(), PmiError> {
        let mut chunk = [0u8; 4096];
        loop {
            self.wait(libc::POLLIN, command, deadline)?;
            match (&self.file).read(&mut chunk) {
                Ok(0) => {
                    return Err(PmiError::Closed {
                        command,
                        partial: lossy_start(&self.buffer),
                    })
                }
                Ok(n) => {
                    self.buffer.extend_from_slice(&chunk[..n]);
                    return Ok(());
                }
                Err(e) if retry(&e) => {}
                Err(e) if e.kind() == io::ErrorKind::ConnectionReset => {
                    return Err(PmiError::Closed {
                        command,
                        partial: lossy_start(&self.buffer),
                    })
                }
                Err(source) => return Err(PmiError::Io { command, source }),
            }
        }
    }

    /// Waits until the descriptor is ready for `events` or the deadline passes.
    fn wait(&self, events: i16, command: &'static str, deadline: Deadline) -> Result<(), PmiError> {
        loop {
            let remaining = deadline.remaining();
            if remaining == Some(Duration::ZERO) {
                return Err(deadline.expired(command));
            }
            match poll_one(self.file.as_raw_fd(), events, remaining) {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(source) => return Err(PmiError::Io { command, source }),
            }
        }
    }

    fn write_some(&self, bytes: &[u8]) -> io::Result<usize> {
        if !self.is_socket {
            return (&self.file).write(bytes);
        }
        // SAFETY: `bytes` is a live slice for the duration of the call and send only reads
        // `bytes.len()` bytes of it; the descriptor is owned by `self.file`.
        let n = unsafe {
            libc::send(
                self.file.as_raw_fd(),
                bytes.as_ptr().cast(),
                bytes.len(),
                libc::MSG_NOSIGNAL,
            )
        };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }
}

fn retry(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock
    )
}

fn text(bytes: &[u8], command: &'static str) -> Result<String, PmiError> {
    String::from_utf8(bytes.to_vec()).map_err(|_| PmiError::Malformed {
        command,
        problem: "a reply that is not UTF-8 text".into(),
        reply: lossy_start(bytes),
    })
}

/// The start of `bytes` as text, for messages.
fn lossy_start(bytes: &[u8]) -> String {
    let shown = &bytes[..bytes.len().min(200)];
    String::from_utf8_lossy(shown).into_owned()
}

/// Polls one descriptor; true if it is ready (or in error or hung up, which the next read or
/// write reports).
fn poll_one(fd: RawFd, events: i16, timeout: Option<Duration>) -> io::Result<bool> {
    let millis = match timeout {
        None => -1,
        // Round up so that a wait never ends just before its deadline.
        Some(t) => i32::try_from(t.as_micros().div_ceil(1000)).unwrap_or(i32::MAX),
    };
    let mut entry = libc::pollfd {
        fd,
        events,
        revents: 0,
    };
    // SAFETY: `entry` is one valid pollfd on this stack frame and the count passed is 1.
    let ready = unsafe { libc::poll(&mut entry, 1, millis) };
    if ready < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ready > 0)
    }
}

/// Turns on TCP keepalive probes after 10 s of silence (every 5 s, 3 of them), so that a
/// process manager whose host vanished is noticed in about half a minute even while the
/// client waits in a fence without a time limit.
fn keep_alive(stream: &TcpStream) {
    let fd = stream.as_raw_fd();
    let set = |level: i32, name: i32, value: i32| {
        // SAFETY: setsockopt reads exactly size_of::<i32>() bytes from `&value`, which lives
        // on this stack frame for the call; the descriptor belongs to `stream`.
        unsafe {
            libc::setsockopt(
                fd,
                level,
                name,
                (&value as *const i32).cast(),
                std::mem::size_of::<i32>() as libc::socklen_t,
            )
        }
    };
    set(libc::SOL_SOCKET, libc::SO_KEEPALIVE, 1);
    set(libc::IPPROTO_TCP, libc::TCP_KEEPIDLE, 10);
    set(libc::IPPROTO_TCP, libc::TCP_KEEPINTVL, 5);
    set(libc::IPPROTO_TCP, libc::TCP_KEEPCNT, 3);
}
