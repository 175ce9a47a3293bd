//! TCP or UDP for the network device's wire, by measurement.
//!
//! Between two processes in two network namespace hosts (`mpi_staging::netns`, one veth pair
//! each to a bridge) and between two processes on loopback, it measures ping-pong latency
//! (8 B and 1 KiB: median of round trip / 2 over `--iters` round trips) and streaming bandwidth
//! (64 KiB and 1 MiB messages: median over repetitions of 32 MiB) over
//! - **TCP**: `TCP_NODELAY`, non-blocking sockets polled in a busy loop with back-off, every
//!   message one `writev` of an 8-byte header and the payload;
//! - **UDP**: datagrams of at most `chunk` bytes of payload, either MTU-sized (1472 B on the
//!   veth: never fragmented) or ~64 KiB (fragmented by IP on the veth, not on loopback).
//!   Latency is one datagram each way (the reply is the ack; a lost one is sent again after a
//!   timeout). Streaming runs a minimal go-back-N: sequence numbers, a window of datagrams,
//!   cumulative acks every few datagrams and on the last of a window, and a retransmission
//!   timer, i.e. the least a reliability layer over UDP must do.
//!
//! The client runs on CPU 0 and the server on CPU 1, both busy-polling: on a machine shared
//! with other work, run it at a high priority (`nice -n -15`) for figures that are the wire's.
//!
//! Run as root (for the namespaces): `cargo run --release -p benches --example wire_choice`.
//! Without namespaces it measures loopback only. It starts itself in the roles `serve` and
//! `client`, which are not meant to be run by hand.

use clap::{Parser, Subcommand, ValueEnum};
use std::io::{BufRead, BufReader, ErrorKind, IoSlice, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Sizes of the latency test.
const LATENCY_SIZES: [usize; 2] = [8, 1024];
/// Sizes of the streaming test.
const STREAM_SIZES: [usize; 2] = [64 << 10, 1 << 20];
/// Bytes of one streaming repetition.
const STREAM_BYTES: usize = 32 << 20;
/// Timed streaming repetitions (after one untimed).
const STREAM_REPS: usize = 5;
/// Untimed round trips before the timed ones.
const WARMUP: usize = 100;
/// How long any wait may go without progress before the run fails.
const STALL_LIMIT: Duration = Duration::from_secs(10);
/// The largest UDP payload over IPv4.
const MAX_UDP_PAYLOAD: usize = 65507;
/// UDP payload that fills a 1500-byte MTU (20 B IP + 8 B UDP headers).
const MTU_UDP_PAYLOAD: usize = 1472;
/// Send and receive buffers asked for the UDP sockets (net.core.rmem_max/wmem_max cap them).
const UDP_SOCKET_BUFFER: usize = 4 << 20;

#[derive(Parser)]
#[command(about = "Measures TCP and UDP between two network namespace hosts and on loopback")]
struct Cli {
    #[command(subcommand)]
    role: Option<Role>,
    /// Timed round trips per latency size.
    #[arg(long, default_value_t = 2000)]
    iters: usize,
    /// Go-back-N window in bytes of UDP payload (the UDP sockets' buffers are set to
    /// [`UDP_SOCKET_BUFFER`], which bounds what arrives without loss).
    #[arg(long, default_value_t = 1 << 20)]
    window_bytes: usize,
}

#[derive(Subcommand)]
enum Role {
    /// Serves one client: echoes, sinks streams, acks.
    Serve {
        #[arg(long)]
        proto: Proto,
        #[arg(long)]
        bind: IpAddr,
    },
    /// Measures against a server and prints `result` lines.
    Client {
        #[arg(long)]
        proto: Proto,
        #[arg(long)]
        server: SocketAddr,
        #[arg(long)]
        iters: usize,
        /// UDP payload per datagram.
        #[arg(long, default_value_t = MTU_UDP_PAYLOAD)]
        chunk: usize,
        #[arg(long)]
        window_bytes: usize,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Proto {
    Tcp,
    Udp,
}

/// Keeps this process on CPU `cpu` (when there is such a CPU): the two sides then always run
/// on different cores, rather than sometimes sharing one (which makes round trips ~5x slower).
fn pin_to_cpu(cpu: usize) {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpu >= cpus {
        return;
    }
    // SAFETY: `set` is a zeroed cpu_set_t on our stack, changed only by CPU_SET with an index
    // below the CPU count, and passed with its own size; pid 0 is this process.
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if rc != 0 {
        eprintln!(
            "wire_choice: cannot pin to CPU {cpu}: {}",
            std::io::Error::last_os_error()
        );
    }
}

fn main() {
    let cli = Cli::parse();
    match cli.role {
        Some(Role::Client { .. }) => pin_to_cpu(0),
        Some(Role::Serve { .. }) => pin_to_cpu(1),
        None => {}
    }
    let outcome = match cli.role {
        None => orchestrate(cli.iters, cli.window_bytes),
        Some(Role::Serve { proto, bind }) => match proto {
            Proto::Tcp => tcp::serve(bind),
            Proto::Udp => udp::serve(bind),
        },
        Some(Role::Client {
            proto,
            server,
            iters,
            chunk,
            window_bytes,
        }) => match proto {
            Proto::Tcp => tcp::client(server, iters),
            Proto::Udp => udp::client(
                server,
                iters,
                chunk.min(MAX_UDP_PAYLOAD - udp::HEADER),
                window_bytes,
            ),
        },
    };
    if let Err(e) = outcome {
        eprintln!("wire_choice: {e}");
        std::process::exit(1);
    }
}

/// Waits for a non-blocking socket: spins a little, then yields the CPU for up to
/// [`YIELD_FOR`], then sleeps [`NAP`] at a time, and fails after [`STALL_LIMIT`] without
/// progress.
struct Backoff {
    polls: u32,
    since: Instant,
}

/// How long a waiting side yields before it sleeps.
const YIELD_FOR: Duration = Duration::from_millis(2);
/// The sleep of a waiting side after [`YIELD_FOR`].
const NAP: Duration = Duration::from_micros(50);

impl Backoff {
    fn new() -> Backoff {
        Backoff {
            polls: 0,
            since: Instant::now(),
        }
    }

    /// Progress was made: spin again next time.
    fn reset(&mut self) {
        self.polls = 0;
        self.since = Instant::now();
    }

    fn wait(&mut self) -> std::io::Result<()> {
        self.polls = self.polls.saturating_add(1);
        if self.polls < 64 {
            std::hint::spin_loop();
            return Ok(());
        }
        let waited = self.since.elapsed();
        if waited < YIELD_FOR {
            std::thread::yield_now();
        } else if waited < STALL_LIMIT {
            std::thread::sleep(NAP);
        } else {
            return Err(std::io::Error::new(
                ErrorKind::TimedOut,
                "no progress for 10 s",
            ));
        }
        Ok(())
    }
}

/// Median of `values` (sorted in place).
fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// Prints one figure for the orchestrator.
fn report(test: &str, size: usize, value: f64, unit: &str) {
    println!("result {test} {size} {value:.3} {unit}");
}

/// Messages per streaming repetition of `size`-byte messages.
fn stream_count(size: usize) -> usize {
    (STREAM_BYTES / size).max(8)
}

mod tcp {
    //! The TCP wire: 8-byte header (kind, length) and payload, one `writev` per message.

    use super::*;

    const ECHO: u32 = 1;
    const SINK: u32 = 2;
    const SYNC: u32 = 3;
    const ACK: u32 = 4;

    /// Writes header and payload with `writev` until all is sent, polling a non-blocking socket.
    fn send(stream: &mut TcpStream, kind: u32, payload: &[u8]) -> std::io::Result<()> {
        let mut header = [0u8; 8];
        header[..4].copy_from_slice(&kind.to_le_bytes());
        header[4..].copy_from_slice(&(payload.len() as u32).to_le_bytes());
        let total = header.len() + payload.len();
        let mut sent = 0;
        let mut backoff = Backoff::new();
        while sent < total {
            let result = if sent < header.len() {
                stream.write_vectored(&[IoSlice::new(&header[sent..]), IoSlice::new(payload)])
            } else {
                stream.write(&payload[sent - header.len()..])
            };
            match result {
                Ok(n) => {
                    sent += n;
                    backoff.reset();
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => backoff.wait()?,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Fills `buf`, polling; Ok(false) on an end of stream before the first byte.
    fn recv_exact(stream: &mut TcpStream, buf: &mut [u8]) -> std::io::Result<bool> {
        let mut got = 0;
        let mut backoff = Backoff::new();
        while got < buf.len() {
            match stream.read(&mut buf[got..]) {
                Ok(0) if got == 0 => return Ok(false),
                Ok(0) => return Err(ErrorKind::UnexpectedEof.into()),
                Ok(n) => {
                    got += n;
                    backoff.reset();
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => backoff.wait()?,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    /// Receives one message into `buf`; its kind and length, or None at the end of the stream.
    fn recv(stream: &mut TcpStream, buf: &mut [u8]) -> std::io::Result<Option<(u32, usize)>> {
        let mut header = [0u8; 8];
        if !recv_exact(stream, &mut header)? {
            return Ok(None);
        }
        let kind = u32::from_le_bytes(header[..4].try_into().expect("4 bytes"));
        let len = u32::from_le_bytes(header[4..].try_into().expect("4 bytes")) as usize;
        if len > buf.len() {
            return Err(std::io::Error::new(
                ErrorKind::InvalidData,
                "message too long",
            ));
        }
        if !recv_exact(stream, &mut buf[..len])? && len > 0 {
            return Err(ErrorKind::UnexpectedEof.into());
        }
        Ok(Some((kind, len)))
    }

    fn prepare(stream: &TcpStream) -> std::io::Result<()> {
        stream.set_nodelay(true)?;
        stream.set_nonblocking(true)
    }

    pub fn serve(bind: IpAddr) -> Result<(), String> {
        let listener = TcpListener::bind((bind, 0)).map_err(|e| format!("bind: {e}"))?;
        let port = listener.local_addr().map_err(|e| e.to_string())?.port();
        println!("ready {port}");
        std::io::stdout().flush().map_err(|e| e.to_string())?;
        let (mut stream, _) = listener.accept().map_err(|e| format!("accept: {e}"))?;
        prepare(&stream).map_err(|e| e.to_string())?;
        let mut buf = vec![0u8; 1 << 20];
        while let Some((kind, len)) = recv(&mut stream, &mut buf).map_err(|e| e.to_string())? {
            let reply = match kind {
                ECHO => Some((ECHO, len)),
                SYNC => Some((ACK, 0)),
                _ => None,
            };
            if let Some((kind, len)) = reply {
                send(&mut stream, kind, &buf[..len]).map_err(|e| e.to_string())?;
            }
        }
        Ok(())
    }

    pub fn client(server: SocketAddr, iters: usize) -> Result<(), String> {
        let mut stream = TcpStream::connect_timeout(&server, Duration::from_secs(5))
            .map_err(|e| format!("connect to {server}: {e}"))?;
        prepare(&stream).map_err(|e| e.to_string())?;
        let io = |e: std::io::Error| e.to_string();
        let mut reply = vec![0u8; 1 << 20];
        for size in LATENCY_SIZES {
            let message: Vec<u8> = (0..size).map(|i| (i * 7 + 3) as u8).collect();
            let mut half_round_trips = Vec::with_capacity(iters);
            for i in 0..WARMUP + iters {
                let start = Instant::now();
                send(&mut stream, ECHO, &message).map_err(io)?;
                let got = recv(&mut stream, &mut reply).map_err(io)?;
                let elapsed = start.elapsed();
                if got != Some((ECHO, size)) || (i == 0 && reply[..size] != message[..]) {
                    return Err(format!("wrong echo of {size} B: {got:?}"));
                }
                if i >= WARMUP {
                    half_round_trips.push(elapsed.as_secs_f64() / 2.0 * 1e6);
                }
            }
            report("latency", size, median(&mut half_round_trips), "us");
        }
        for size in STREAM_SIZES {
            let message = vec![0x5au8; size];
            let count = stream_count(size);
            let mut rates = Vec::new();
            for rep in 0..=STREAM_REPS {
                let start = Instant::now();
                for _ in 0..count {
                    send(&mut stream, SINK, &message).map_err(io)?;
                }
                send(&mut stream, SYNC, &[]).map_err(io)?;
                let got = recv(&mut stream, &mut reply).map_err(io)?;
                if got != Some((ACK, 0)) {
                    return Err(format!("expected an ack, got {got:?}"));
                }
                if rep > 0 {
                    rates.push((count * size) as f64 / start.elapsed().as_secs_f64() / 1e6);
                }
            }
            report("bandwidth", size, median(&mut rates), "MB/s");
        }
        Ok(())
    }
}

mod udp {
    //! The UDP wire: 16-byte header (kind, flags, sequence number, length) and payload.
    //! Latency: stop-and-wait (the echo is the ack). Streams: go-back-N.

    use super::*;

    pub const HEADER: usize = 16;
    const ECHO: u8 = 1;
    const DATA: u8 = 2;
    const ACK: u8 = 3;
    const BYE: u8 = 4;
    /// On DATA: ack at once (last datagram of a window or of a stream).
    const ACK_NOW: u8 = 1;
    /// The receiver acks after this many in-order datagrams without a request.
    const ACK_EVERY: u64 = 16;
    /// Retransmission timeout.
    const RTO: Duration = Duration::from_millis(20);

    fn encode(buf: &mut [u8], kind: u8, flags: u8, seq: u64, len: usize) {
        buf[0] = kind;
        buf[1] = flags;
        buf[2..4].fill(0);
        buf[4..12].copy_from_slice(&seq.to_le_bytes());
        buf[12..16].copy_from_slice(&(len as u32).to_le_bytes());
    }

    fn decode(buf: &[u8]) -> Option<(u8, u8, u64, usize)> {
        if buf.len() < HEADER {
            return None;
        }
        let seq = u64::from_le_bytes(buf[4..12].try_into().ok()?);
        let len = u32::from_le_bytes(buf[12..16].try_into().ok()?) as usize;
        Some((buf[0], buf[1], seq, len))
    }

    /// Asks for [`UDP_SOCKET_BUFFER`] bytes of send and receive buffer: the default (about
    /// 200 KiB) holds only a few fragmented 64 KiB datagrams.
    fn enlarge_buffers(socket: &UdpSocket) -> Result<(), String> {
        use std::os::fd::AsRawFd;
        let size = UDP_SOCKET_BUFFER as libc::c_int;
        for option in [libc::SO_RCVBUF, libc::SO_SNDBUF] {
            // SAFETY: the descriptor is the open socket's, and the option value is a c_int
            // that lives across the call, with its size passed as its length.
            let rc = unsafe {
                libc::setsockopt(
                    socket.as_raw_fd(),
                    libc::SOL_SOCKET,
                    option,
                    (&size as *const libc::c_int).cast(),
                    std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                )
            };
            if rc != 0 {
                return Err(format!("setsockopt: {}", std::io::Error::last_os_error()));
            }
        }
        Ok(())
    }

    /// Sends one datagram, polling while the socket's buffer is full.
    fn send(socket: &UdpSocket, datagram: &[u8], to: SocketAddr) -> std::io::Result<()> {
        let mut backoff = Backoff::new();
        loop {
            match socket.send_to(datagram, to) {
                Ok(_) => return Ok(()),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {
                    backoff.wait()?
                }
                Err(e) => return Err(e),
            }
        }
    }

    pub fn serve(bind: IpAddr) -> Result<(), String> {
        let socket = UdpSocket::bind((bind, 0)).map_err(|e| format!("bind: {e}"))?;
        let port = socket.local_addr().map_err(|e| e.to_string())?.port();
        socket.set_nonblocking(true).map_err(|e| e.to_string())?;
        enlarge_buffers(&socket)?;
        println!("ready {port}");
        std::io::stdout().flush().map_err(|e| e.to_string())?;
        let io = |e: std::io::Error| e.to_string();
        let mut buf = vec![0u8; MAX_UDP_PAYLOAD];
        let mut ack = [0u8; HEADER];
        let mut expected = 0u64;
        let mut since_ack = 0u64;
        let mut backoff = Backoff::new();
        loop {
            let (n, from) = match socket.recv_from(&mut buf) {
                Ok(got) => {
                    backoff.reset();
                    got
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {
                    backoff.wait().map_err(io)?;
                    continue;
                }
                Err(e) => return Err(e.to_string()),
            };
            let Some((kind, flags, seq, _)) = decode(&buf[..n]) else {
                continue;
            };
            match kind {
                ECHO => send(&socket, &buf[..n], from).map_err(io)?,
                DATA => {
                    let in_order = seq == expected;
                    if in_order {
                        expected += 1;
                        since_ack += 1;
                    }
                    // Out of order: the sender must go back; tell it where to.
                    if !in_order || flags & ACK_NOW != 0 || since_ack >= ACK_EVERY {
                        since_ack = 0;
                        encode(&mut ack, ACK, 0, expected, 0);
                        send(&socket, &ack, from).map_err(io)?;
                    }
                }
                BYE => return Ok(()),
                _ => {}
            }
        }
    }

    pub fn client(
        server: SocketAddr,
        iters: usize,
        chunk: usize,
        window_bytes: usize,
    ) -> Result<(), String> {
        let local: IpAddr = if server.ip().is_loopback() {
            Ipv4Addr::LOCALHOST.into()
        } else {
            Ipv4Addr::UNSPECIFIED.into()
        };
        let socket = UdpSocket::bind((local, 0)).map_err(|e| format!("bind: {e}"))?;
        socket.set_nonblocking(true).map_err(|e| e.to_string())?;
        enlarge_buffers(&socket)?;
        let io = |e: std::io::Error| e.to_string();
        let mut datagram = vec![0u8; HEADER + chunk];
        let mut reply = vec![0u8; MAX_UDP_PAYLOAD];
        let mut resent = 0u64;

        for size in LATENCY_SIZES {
            let mut half_round_trips = Vec::with_capacity(iters);
            for i in 0..(WARMUP + iters) as u64 {
                encode(&mut datagram, ECHO, 0, i, size);
                let start = Instant::now();
                let mut sent_at = start;
                send(&socket, &datagram[..HEADER + size], server).map_err(io)?;
                let mut backoff = Backoff::new();
                loop {
                    match socket.recv_from(&mut reply) {
                        Ok((n, _))
                            if decode(&reply[..n]).is_some_and(|d| d.0 == ECHO && d.2 == i) =>
                        {
                            break
                        }
                        Ok(_) => {}
                        Err(e)
                            if matches!(
                                e.kind(),
                                ErrorKind::WouldBlock | ErrorKind::Interrupted
                            ) =>
                        {
                            if sent_at.elapsed() > RTO {
                                send(&socket, &datagram[..HEADER + size], server).map_err(io)?;
                                sent_at = Instant::now();
                                resent += 1;
                            }
                            backoff.wait().map_err(io)?;
                        }
                        Err(e) => return Err(e.to_string()),
                    }
                }
                if i >= WARMUP as u64 {
                    half_round_trips.push(start.elapsed().as_secs_f64() / 2.0 * 1e6);
                }
            }
            report("latency", size, median(&mut half_round_trips), "us");
        }

        let window = (window_bytes / chunk).max(1) as u64;
        let mut next_seq = 0u64;
        for size in STREAM_SIZES {
            // The datagram lengths of one message.
            let pieces: Vec<usize> = (0..size.div_ceil(chunk))
                .map(|k| chunk.min(size - k * chunk))
                .collect();
            let count = stream_count(size);
            let mut rates = Vec::new();
            for rep in 0..=STREAM_REPS {
                let start = Instant::now();
                let first = next_seq;
                let end = first + (count * pieces.len()) as u64;
                let length = |seq: u64| pieces[((seq - first) % pieces.len() as u64) as usize];
                let mut base = first;
                let mut next = first;
                let mut progress_at = Instant::now();
                let mut backoff = Backoff::new();
                while base < end {
                    while next < end && next < base + window {
                        let len = length(next);
                        let last = next + 1 == end || next + 1 == base + window;
                        encode(
                            &mut datagram,
                            DATA,
                            if last { ACK_NOW } else { 0 },
                            next,
                            len,
                        );
                        send(&socket, &datagram[..HEADER + len], server).map_err(io)?;
                        next += 1;
                    }
                    match socket.recv_from(&mut reply) {
                        Ok((n, _)) => {
                            if let Some((ACK, _, acked, _)) = decode(&reply[..n]) {
                                if acked > base {
                                    base = acked.min(end);
                                    progress_at = Instant::now();
                                    backoff.reset();
                                }
                            }
                        }
                        Err(e)
                            if matches!(
                                e.kind(),
                                ErrorKind::WouldBlock | ErrorKind::Interrupted
                            ) =>
                        {
                            if progress_at.elapsed() > RTO {
                                resent += next - base;
                                next = base;
                                progress_at = Instant::now();
                            }
                            backoff.wait().map_err(io)?;
                        }
                        Err(e) => return Err(e.to_string()),
                    }
                }
                next_seq = end;
                if rep > 0 {
                    rates.push((count * size) as f64 / start.elapsed().as_secs_f64() / 1e6);
                }
            }
            report("bandwidth", size, median(&mut rates), "MB/s");
        }
        encode(&mut datagram, BYE, 0, 0, 0);
        send(&socket, &datagram[..HEADER], server).map_err(io)?;
        println!("resent {resent}");
        Ok(())
    }
}

/// A child process killed when dropped.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Where the two processes run.
enum Place<'a> {
    Loopback,
    Namespaces(&'a mpi_staging::netns::Hosts),
}

impl Place<'_> {
    fn name(&self) -> &'static str {
        match self {
            Place::Loopback => "loopback",
            Place::Namespaces(_) => "netns veth",
        }
    }

    /// This program in the server's (`side` 1) or the client's (`side` 0) place.
    fn command(&self, side: usize) -> Command {
        let exe = std::env::current_exe().expect("the program knows its executable");
        match self {
            Place::Loopback => Command::new(exe),
            Place::Namespaces(hosts) => hosts.command_in(side, exe),
        }
    }

    fn server_ip(&self) -> IpAddr {
        match self {
            Place::Loopback => Ipv4Addr::LOCALHOST.into(),
            Place::Namespaces(hosts) => hosts.addr(1).into(),
        }
    }
}

/// One measured configuration: its figures in the order of the table, and datagrams resent.
struct Figures {
    values: Vec<f64>,
    resent: u64,
}

/// Runs one server and one client and collects the client's figures.
fn measure(
    place: &Place,
    proto: Proto,
    chunk: usize,
    iters: usize,
    window_bytes: usize,
) -> Result<Figures, String> {
    let proto_name = format!("{proto:?}").to_lowercase();
    let mut server = place.command(1);
    server
        .args(["serve", "--proto", &proto_name, "--bind"])
        .arg(place.server_ip().to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped());
    let mut child = server
        .spawn()
        .map_err(|e| format!("cannot start the server: {e}"))?;
    let stdout = child.stdout.take().expect("piped");
    let _server = KillOnDrop(child);
    let mut ready = String::new();
    BufReader::new(stdout)
        .read_line(&mut ready)
        .map_err(|e| e.to_string())?;
    let port: u16 = ready
        .strip_prefix("ready ")
        .and_then(|p| p.trim().parse().ok())
        .ok_or_else(|| format!("the server did not start: {ready:?}"))?;
    let out = place
        .command(0)
        .args(["client", "--proto", &proto_name, "--server"])
        .arg(SocketAddr::new(place.server_ip(), port).to_string())
        .args(["--iters", &iters.to_string()])
        .args(["--chunk", &chunk.to_string()])
        .args(["--window-bytes", &window_bytes.to_string()])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot start the client: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "the client failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let values = text
        .lines()
        .filter_map(|line| line.strip_prefix("result "))
        .filter_map(|rest| rest.split_whitespace().nth(2)?.parse().ok())
        .collect();
    let resent = text
        .lines()
        .find_map(|line| line.strip_prefix("resent ")?.trim().parse().ok())
        .unwrap_or(0);
    Ok(Figures { values, resent })
}

fn orchestrate(iters: usize, window_bytes: usize) -> Result<(), String> {
    let hosts = match mpi_staging::netns::Hosts::create(2) {
        Ok(hosts) => Some(hosts),
        Err(reason) => {
            eprintln!("no namespace hosts, loopback only: {reason}");
            None
        }
    };
    let mut places = vec![Place::Loopback];
    if let Some(hosts) = &hosts {
        places.push(Place::Namespaces(hosts));
    }
    let wires = [
        ("tcp", Proto::Tcp, 0),
        ("udp 1472 B", Proto::Udp, MTU_UDP_PAYLOAD),
        ("udp 64 KiB", Proto::Udp, MAX_UDP_PAYLOAD - udp::HEADER),
    ];
    println!(
        "# latency: median of round trip / 2 over {iters}; bandwidth: median of {STREAM_REPS} x {} MiB, MB/s = 10^6 B/s; udp window {window_bytes} B",
        STREAM_BYTES >> 20
    );
    println!(
        "{:<11} {:<11} {:>10} {:>10} {:>12} {:>12} {:>7}",
        "place", "wire", "lat 8B us", "lat 1K us", "bw 64K MB/s", "bw 1M MB/s", "resent"
    );
    for place in &places {
        for (name, proto, chunk) in wires {
            let figures = measure(place, proto, chunk, iters, window_bytes)?;
            let cells: Vec<String> = figures.values.iter().map(|v| format!("{v:.2}")).collect();
            if cells.len() != 4 {
                return Err(format!("{name}: expected 4 figures, got {cells:?}"));
            }
            println!(
                "{:<11} {:<11} {:>10} {:>10} {:>12} {:>12} {:>7}",
                place.name(),
                name,
                cells[0],
                cells[1],
                cells[2],
                cells[3],
                figures.resent
            );
        }
    }
    Ok(())
}
