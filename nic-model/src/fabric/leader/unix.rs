//! The Unix-socket system calls of the hand-over: a listener in the abstract namespace (no
//! file: the name vanishes with the last descriptor of the socket, even after a crash),
//! non-blocking connections with deadlines, the peer's credentials (`SO_PEERCRED`) and
//! descriptor passing (`SCM_RIGHTS`). This module owns the hazard of raw socket calls.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::time::Instant;

/// The longest name an abstract address can carry (`sun_path` less its leading NUL).
pub(super) const MAX_NAME: usize = 107;

/// A listening socket.
pub(super) struct Listener {
    fd: OwnedFd,
}

/// A connected stream socket (non-blocking; every call takes a deadline).
pub(super) struct Conn {
    fd: OwnedFd,
}

/// Who is at the other end of a connection (as the kernel recorded at connect or listen time).
#[derive(Clone, Copy, Debug)]
pub(super) struct PeerCred {
    pub pid: u32,
    pub uid: u32,
}

/// This process's real user id.
pub(super) fn own_uid() -> u32 {
    // SAFETY: getuid has no preconditions.
    unsafe { libc::getuid() }
}

impl Listener {
    /// Binds abstract name `name` and listens.
    pub(super) fn bind(name: &str, backlog: usize) -> io::Result<Listener> {
        let fd = stream_socket()?;
        let (addr, len) = abstract_addr(name)?;
        // SAFETY: `addr` is an initialized sockaddr_un of which `len` bytes are meaningful.
        if unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&addr as *const libc::sockaddr_un).cast(),
                len,
            )
        } != 0
        {
            return Err(io::Error::last_os_error());
        }
        let backlog = backlog.min(libc::c_int::MAX as usize) as libc::c_int;
        // SAFETY: listen on a socket we own.
        if unsafe { libc::listen(fd.as_raw_fd(), backlog) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Listener { fd })
    }

    /// The next connection, waiting until `deadline`; `None` at the deadline.
    pub(super) fn accept(&self, deadline: Instant) -> io::Result<Option<Conn>> {
        loop {
            // SAFETY: accept4 on a socket we own, without asking for the peer's address.
            let raw = unsafe {
                libc::accept4(
                    self.fd.as_raw_fd(),
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
                )
            };
            if raw >= 0 {
                // SAFETY: a new descriptor that nothing else owns.
                let fd = unsafe { OwnedFd::from_raw_fd(raw) };
                return Ok(Some(Conn { fd }));
            }
            let err = io::Error::last_os_error();
            match err.raw_os_error() {
                Some(libc::EAGAIN) => {
                    if !wait(self.fd.as_raw_fd(), libc::POLLIN, deadline)? {
                        return Ok(None);
                    }
                }
                Some(libc::EINTR | libc::ECONNABORTED) => {}
                _ => return Err(err),
            }
        }
    }
}

impl Conn {
    /// Connects to abstract name `name` without waiting: `ECONNREFUSED` when nobody listens
    /// there, `EAGAIN` when the listener's queue is full.
    pub(super) fn connect(name: &str) -> io::Result<Conn> {
        let fd = stream_socket()?;
        let (addr, len) = abstract_addr(name)?;
        // SAFETY: `addr` is an initialized sockaddr_un of which `len` bytes are meaningful.
        let r = unsafe {
            libc::connect(
                fd.as_raw_fd(),
                (&addr as *const libc::sockaddr_un).cast(),
                len,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Conn { fd })
    }

    /// The process at the other end.
    pub(super) fn peer_cred(&self) -> io::Result<PeerCred> {
        // SAFETY: an all-zero ucred is valid.
        let mut cred: libc::ucred = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
        // SAFETY: getsockopt writes at most `len` bytes into `cred`.
        let r = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_PEERCRED,
                (&mut cred as *mut libc::ucred).cast(),
                &mut len,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        if len as usize != std::mem::size_of::<libc::ucred>() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "short SO_PEERCRED answer",
            ));
        }
        Ok(PeerCred {
            pid: cred.pid as u32,
            uid: cred.uid,
        })
    }

    /// Sends all of `bytes` by `deadline`, with `fd` attached to the first byte if given.
    pub(super) fn send_all(
        &self,
        bytes: &[u8],
        mut fd: Option<BorrowedFd<'_>>,
        deadline: Instant,
    ) -> io::Result<()> {
        let mut sent = 0;
        while sent < bytes.len() {
            let n = self.send_once(&bytes[sent..], fd)?;
            match n {
                Some(n) => {
                    sent += n;
                    // The descriptor went with the first byte sent.
                    fd = None;
                }
                None => {
                    if !wait(self.fd.as_raw_fd(), libc::POLLOUT, deadline)? {
                        return Err(io::ErrorKind::TimedOut.into());
                    }
                }
            }
        }
        Ok(())
    }

    /// One `sendmsg`; `None` when the socket's buffer is full.
    fn send_once(&self, bytes: &[u8], fd: Option<BorrowedFd<'_>>) -> io::Result<Option<usize>> {
        let mut iov = libc::iovec {
            iov_base: bytes.as_ptr() as *mut libc::c_void,
            iov_len: bytes.len(),
        };
        let mut control = ControlBuf::new();
        // SAFETY: an all-zero msghdr is valid (no name, no iovecs, no control data).
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        if let Some(fd) = fd {
            let raw: libc::c_int = fd.as_raw_fd();
            // SAFETY: the constant sizes of one int's control message.
            let (space, len) = unsafe {
                (
                    libc::CMSG_SPACE(std::mem::size_of::<libc::c_int>() as u32) as usize,
                    libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) as usize,
                )
            };
            msg.msg_control = control.as_mut_ptr();
            msg.msg_controllen = space as _;
            // SAFETY: the control buffer is aligned for cmsghdr and larger than `space`, so
            // the first header and its one int of data lie inside it.
            unsafe {
                let c = libc::CMSG_FIRSTHDR(&msg);
                (*c).cmsg_level = libc::SOL_SOCKET;
                (*c).cmsg_type = libc::SCM_RIGHTS;
                (*c).cmsg_len = len as _;
                std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<libc::c_int>(), raw);
            }
        }
        loop {
            // SAFETY: `msg` points at `iov` (our borrowed bytes) and at `control`, both alive
            // for the call; MSG_NOSIGNAL turns a closed peer into EPIPE instead of SIGPIPE.
            let n = unsafe {
                libc::sendmsg(
                    self.fd.as_raw_fd(),
                    &msg,
                    libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT,
                )
            };
            if n >= 0 {
                return Ok(Some(n as usize));
            }
            let err = io::Error::last_os_error();
            match err.raw_os_error() {
                Some(libc::EAGAIN) => return Ok(None),
                Some(libc::EINTR) => {}
                _ => return Err(err),
            }
        }
    }

    /// Reads until `buf` is full or the peer closes; returns the bytes read (fewer than asked
    /// only at the end of the stream). With `fds`, the descriptors that came along are added
    /// to it (close-on-exec); without, the kernel discards any. `TimedOut` at `deadline`.
    pub(super) fn recv_exact(
        &self,
        buf: &mut [u8],
        deadline: Instant,
        mut fds: Option<&mut Vec<OwnedFd>>,
    ) -> io::Result<usize> {
        let mut got = 0;
        while got < buf.len() {
            match self.recv_once(&mut buf[got..], fds.as_deref_mut())? {
                Some(0) => break,
                Some(n) => got += n,
                None => {
                    if !wait(self.fd.as_raw_fd(), libc::POLLIN, deadline)? {
                        return Err(io::ErrorKind::TimedOut.into());
                    }
                }
            }
        }
        Ok(got)
    }

    /// One `recvmsg`; `None` when nothing is there yet.
    fn recv_once(
        &self,
        buf: &mut [u8],
        fds: Option<&mut Vec<OwnedFd>>,
    ) -> io::Result<Option<usize>> {
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        let mut control = ControlBuf::new();
        // SAFETY: an all-zero msghdr is valid (no name, no iovecs, no control data).
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        if fds.is_some() {
            msg.msg_control = control.as_mut_ptr();
            msg.msg_controllen = ControlBuf::LEN as _;
        }
        let n = loop {
            // SAFETY: `msg` points at `iov` (our exclusively borrowed buffer) and at
            // `control`, both alive for the call.
            let n = unsafe {
                libc::recvmsg(
                    self.fd.as_raw_fd(),
                    &mut msg,
                    libc::MSG_CMSG_CLOEXEC | libc::MSG_DONTWAIT,
                )
            };
            if n >= 0 {
                break n as usize;
            }
            let err = io::Error::last_os_error();
            match err.raw_os_error() {
                Some(libc::EAGAIN) => return Ok(None),
                Some(libc::EINTR) => {}
                _ => return Err(err),
            }
        };
        if let Some(fds) = fds {
            // Take ownership of every descriptor first, so that each is closed whatever
            // happens next.
            // SAFETY: `msg` was filled in by the kernel; its control data lies in `control`.
            unsafe { take_descriptors(&msg, fds) };
            if msg.msg_flags & libc::MSG_CTRUNC != 0 {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "descriptors were cut off (more were sent than the hand-over carries, or this process has no descriptor left)",
                ));
            }
        }
        Ok(Some(n))
    }
}

/// Moves the descriptors of every `SCM_RIGHTS` message in `msg`'s control data into `fds`.
///
/// # Safety
/// `msg` was just filled in by `recvmsg`, and its control buffer is still alive.
unsafe fn take_descriptors(msg: &libc::msghdr, fds: &mut Vec<OwnedFd>) {
    let int = std::mem::size_of::<libc::c_int>();
    // SAFETY (whole body): the CMSG_* walk stays within the control length the kernel set,
    // and every header it returns was written by the kernel.
    unsafe {
        let header = libc::CMSG_LEN(0) as usize;
        let mut c = libc::CMSG_FIRSTHDR(msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let count = ((*c).cmsg_len as usize).saturating_sub(header) / int;
                let data = libc::CMSG_DATA(c).cast::<libc::c_int>();
                for i in 0..count {
                    let raw = std::ptr::read_unaligned(data.add(i));
                    // The kernel installed each descriptor for us; we are its only owner.
                    fds.push(OwnedFd::from_raw_fd(raw));
                }
            }
            c = libc::CMSG_NXTHDR(msg, c);
        }
    }
}

/// Room for a few control messages, aligned for `cmsghdr`.
#[repr(C, align(8))]
struct ControlBuf([u8; ControlBuf::LEN]);

impl ControlBuf {
    /// Enough for several descriptors, so that a sender that attaches more than one is seen
    /// (and every descriptor closed) instead of silently truncated.
    const LEN: usize = 128;

    fn new() -> ControlBuf {
        ControlBuf([0; Self::LEN])
    }

    fn as_mut_ptr(&mut self) -> *mut libc::c_void {
        self.0.as_mut_ptr().cast()
    }
}

/// A new close-on-exec, non-blocking Unix stream socket.
fn stream_socket() -> io::Result<OwnedFd> {
    // SAFETY: socket with constant arguments.
    let raw = unsafe {
        libc::socket(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
            0,
        )
    };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// The abstract address `name` (a NUL, then the name's bytes, no terminator) and its length.
fn abstract_addr(name: &str) -> io::Result<(libc::sockaddr_un, libc::socklen_t)> {
    // SAFETY: an all-zero sockaddr_un is valid.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes.len() > MAX_NAME {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "an abstract socket name has 1 to 107 bytes",
        ));
    }
    for (slot, &b) in addr.sun_path[1..].iter_mut().zip(bytes) {
        *slot = b as libc::c_char;
    }
    let len = std::mem::offset_of!(libc::sockaddr_un, sun_path) + 1 + bytes.len();
    Ok((addr, len as libc::socklen_t))
}

/// Waits until `fd` is ready for `events` (or has hung up); false at `deadline`.
fn wait(fd: RawFd, events: libc::c_short, deadline: Instant) -> io::Result<bool> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(false);
        }
        // Round up, so that a wait never ends before the deadline and spins.
        let ms = left.as_micros().div_ceil(1000).min(i32::MAX as u128) as libc::c_int;
        let mut p = libc::pollfd {
            fd,
            events,
            revents: 0,
        };
        // SAFETY: one pollfd on our stack.
        let n = unsafe { libc::poll(&mut p, 1, ms) };
        if n > 0 {
            return Ok(true);
        }
        if n < 0 {
            let err = io::Error::last_os_error();
            if err.raw_os_error() != Some(libc::EINTR) {
                return Err(err);
            }
        }
    }
}
