//! One fabric per host without a common parent: processes that a test starts independently
//! (as Hydra or Slurm would) find each other through a node leader. The followers get the
//! leader's fabric and exchange packets and a region over it; strangers, repeated requests,
//! garbage and truncated requests are refused without stopping the hand-over; a follower
//! whose leader never serves or died gets an error by its deadline; a peer killed with
//! SIGKILL (left a zombie) is reported dead within a second; and after the processes exit
//! neither the leader's socket nor the fabric is left anywhere.

use nic_model::fabric::{join, HostLeader};
use nic_model::testing::{poll_from, set_aside_arrivals};
use nic_model::{
    send_bytes, Access, Device, JobConfig, Nic, NicError, PeerStatus, RegionKey, Transfer,
};
use std::io::{BufRead, Read, Write};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixStream};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Which part a child process of a test plays (unset in the test itself).
const ROLE_ENV: &str = "NIC_LEADER_TEST_ROLE";
/// Lines a child prints for its parent start with this.
const TAG: &str = "@@ ";

// ---------------------------------------------------------------------------------------
// The parent's side: child processes that talk in tagged lines.

/// A child process running one role of a test; killed and reaped on drop.
struct Kid {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl Kid {
    fn spawn(test: &str, role: &str, env: &[(&str, &str)]) -> Kid {
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args([test, "--exact", "--nocapture", "--test-threads", "1"])
            .env(ROLE_ENV, role)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        let mut child = cmd.spawn().expect("starting a child process");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                // libtest may have begun the line with the test's name.
                if let Some(at) = line.find(TAG) {
                    if tx.send(line[at + TAG.len()..].to_string()).is_err() {
                        break;
                    }
                }
            }
        });
        Kid {
            name: format!("{role} (pid {})", child.id()),
            stdin: child.stdin.take(),
            child,
            lines,
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The rest of the child's next tagged line, which must start with `what`.
    fn expect(&mut self, what: &str) -> String {
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|e| {
                panic!(
                    "{} said nothing ({e}) while we waited for {what:?}",
                    self.name
                )
            });
        let rest = line
            .strip_prefix(what)
            .unwrap_or_else(|| panic!("{} said {line:?} while we waited for {what:?}", self.name));
        rest.trim().to_string()
    }

    fn tell(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{line}").expect("writing to a child");
        stdin.flush().unwrap();
    }

    /// Waits (at most 60 s) for the child to exit successfully.
    fn succeeds(mut self) {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "{} failed: {status}", self.name);
                return;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "{} did not finish",
                self.name
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Kid {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The names of the Unix sockets of this network namespace (abstract ones start with `@`).
fn unix_sockets() -> Vec<String> {
    std::fs::read_to_string("/proc/net/unix")
        .unwrap()
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().nth(7).map(str::to_string))
        .collect()
}

fn socket_listed(address: &str) -> bool {
    unix_sockets().iter().any(|s| s == &format!("@{address}"))
}

/// Every mapping and open descriptor of every process we can inspect that mentions `name`.
fn mentions(name: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let pid = entry.file_name().to_string_lossy().into_owned();
        if !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if let Ok(maps) = std::fs::read_to_string(entry.path().join("maps")) {
            found.extend(
                maps.lines()
                    .filter(|l| l.contains(name))
                    .map(|l| format!("pid {pid} maps {l}")),
            );
        }
        for fd in std::fs::read_dir(entry.path().join("fd"))
            .into_iter()
            .flatten()
            .flatten()
        {
            if let Ok(target) = std::fs::read_link(fd.path()) {
                if target.to_string_lossy().contains(name) {
                    found.push(format!("pid {pid} holds {}", target.display()));
                }
            }
        }
    }
    found
}

/// After a test's processes are gone: no socket under `address`, no trace of fabric `memfd`.
fn assert_nothing_left(address: &str, memfd: &str) {
    assert!(
        !socket_listed(address),
        "socket @{address} outlived its processes"
    );
    let left = mentions(memfd);
    assert!(
        left.is_empty(),
        "fabric {memfd} outlived its processes: {left:#?}"
    );
}

// ---------------------------------------------------------------------------------------
// The children's side.

fn say(what: &str) {
    println!("{TAG}{what}");
}

/// The next line the parent writes to our stdin.
fn heard() -> String {
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).unwrap();
    assert!(!line.is_empty(), "the parent closed our stdin");
    line.trim().to_string()
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} not set"))
}

fn deadline_in(secs: u64) -> Instant {
    Instant::now() + Duration::from_secs(secs)
}

/// The fabric this process maps (its memfd name), from /proc/self/maps.
fn mapped_fabric() -> String {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let line = maps
        .lines()
        .find(|l| l.contains("/memfd:nic-fabric-"))
        .expect("no fabric mapped");
    let at = line.find("nic-fabric-").unwrap();
    line[at..at + "nic-fabric-".len() + 8].to_string()
}

/// Descriptors of this process that point at a fabric, with whether each is close-on-exec.
fn fabric_descriptors() -> Vec<(i32, bool)> {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let target = std::fs::read_link(e.path()).ok()?;
            let fd: i32 = e.file_name().to_str()?.parse().ok()?;
            target
                .to_string_lossy()
                .contains("/memfd:nic-fabric-")
                .then(|| {
                    // SAFETY: F_GETFD only reads the descriptor's flags.
                    let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
                    (fd, flags >= 0 && flags & libc::FD_CLOEXEC != 0)
                })
        })
        .collect()
}

fn send(nic: &mut Nic, dest: usize, data: &[u8]) {
    let start = Instant::now();
    while !send_bytes(nic, dest, data) {
        // The destination may itself be waiting for room in our queue.
        set_aside_arrivals(nic);
        assert_ne!(nic.peer_status(dest), PeerStatus::Dead, "rank {dest} died");
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "route to {dest} stayed full"
        );
        std::thread::yield_now();
    }
}

fn recv(nic: &mut Nic, src: usize) -> Vec<u8> {
    let start = Instant::now();
    loop {
        nic.progress();
        if let Some(p) = poll_from(nic, src) {
            return p;
        }
        assert_ne!(nic.peer_status(src), PeerStatus::Dead, "rank {src} died");
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "nothing from rank {src}"
        );
        std::thread::yield_now();
    }
}

/// Packet `i` from `src`: its length and every byte depend on both.
fn packet(src: usize, i: usize, mtu: usize) -> Vec<u8> {
    let len = 8 + (i * 733 + src * 101) % (mtu - 8);
    let mut p: Vec<u8> = (0..len)
        .map(|k| (k * 31 + i * 7 + src * 13) as u8)
        .collect();
    p[..4].copy_from_slice(&(src as u32).to_le_bytes());
    p[4..8].copy_from_slice(&(i as u32).to_le_bytes());
    p
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(2654435761).wrapping_shr(11) as u8)
        .collect()
}

const PACKETS: usize = 40;
const REGION: usize = 1 << 20;

/// Every rank sends `PACKETS` checked packets to every other and receives theirs; then every
/// follower reads the leader's region in one copy and checks it.
fn exchange(nic: &mut Nic) {
    let (me, n) = (nic.rank(), nic.nranks());
    let mtu = nic.capabilities().mtu;
    for i in 0..PACKETS {
        for dest in (0..n).filter(|&d| d != me) {
            send(nic, dest, &packet(me, i, mtu));
        }
    }
    for i in 0..PACKETS {
        for src in (0..n).filter(|&s| s != me) {
            assert!(
                recv(nic, src) == packet(src, i, mtu),
                "packet {i} from rank {src} is wrong"
            );
        }
    }
    assert_eq!(nic.counters().packets_rx, (PACKETS * (n - 1)) as u64);
    if me == 0 {
        let data = pattern(REGION);
        // SAFETY: `data` outlives the region, withdrawn below before it drops.
        let key =
            unsafe { nic.register(data.as_ptr() as usize, data.len(), Access::READ) }.unwrap();
        for f in 1..n {
            send(nic, f, &key.emit());
        }
        for f in 1..n {
            assert_eq!(recv(nic, f), b"read it");
        }
        nic.deregister(key).unwrap();
    } else {
        let key = RegionKey::parse(&recv(nic, 0)).expect("a region key");
        let mut buf = vec![0u8; REGION];
        // SAFETY: `buf` is ours until the transfer is done, below.
        match unsafe { nic.read_region(0, key, 0, buf.as_mut_ptr(), buf.len()) }.unwrap() {
            Transfer::Done => {}
            Transfer::Pending(id) => {
                let start = Instant::now();
                while !nic.poll_transfer(id).unwrap() {
                    assert!(
                        start.elapsed() < Duration::from_secs(20),
                        "read never ended"
                    );
                    std::thread::yield_now();
                }
            }
        }
        assert!(buf == pattern(REGION), "the region read is wrong");
        assert!(nic.counters().dma_ops >= 1, "{:?}", nic.counters());
        send(nic, 0, b"read it");
    }
}

/// A connection to the leader's socket that does not go through `join`.
fn raw_connect(address: &str) -> UnixStream {
    let addr = SocketAddr::from_abstract_name(address.as_bytes()).unwrap();
    let s = UnixStream::connect_addr(&addr).expect("connecting to the leader");
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s
}

/// Sends `bytes` on a raw connection and returns the status of the leader's reply (see the
/// wire format in `fabric/leader/wire.rs`), or `None` if it closed the connection unanswered.
fn raw_request(address: &str, bytes: &[u8]) -> Option<u32> {
    let mut s = raw_connect(address);
    // The leader may refuse (and close) before it reads anything: the write may then fail.
    let _ = s.write_all(bytes);
    // The leader sees the end of the request at once instead of waiting for more.
    let _ = s.shutdown(std::net::Shutdown::Write);
    let mut reply = Vec::new();
    let _ = s.read_to_end(&mut reply);
    if reply.is_empty() {
        return None;
    }
    assert_eq!(reply.len(), 40, "reply {reply:?}");
    assert_eq!(&reply[..8], b"NICHAND1");
    Some(u32::from_le_bytes(reply[8..12].try_into().unwrap()))
}

fn hello(local_rank: u32) -> Vec<u8> {
    [&b"NICJOIN1"[..], &local_rank.to_le_bytes(), &[0; 4]].concat()
}

fn refusal(r: Result<impl std::fmt::Debug, NicError>) -> String {
    match r {
        Err(NicError::NoFabricFromLeader { why, .. }) => why,
        other => panic!("expected the leader to refuse, got {other:?}"),
    }
}

/// The leader of a host of `NRANKS` ranks: publishes its address, attaches, serves the
/// followers the parent names, then exchanges with them (unless `EXCHANGE=no`: then it
/// watches local rank 1 die).
fn leader_role() {
    let nranks: usize = env("NRANKS").parse().unwrap();
    let leader = HostLeader::create(&JobConfig::new(nranks)).unwrap();
    let address = leader.address().to_string();
    assert!(address.bytes().all(|b| b.is_ascii_graphic()), "{address:?}");
    assert!(address.len() >= 32);
    say(&format!("addr {address}"));
    let mut nic = Nic::open(leader.attach_self().unwrap()).unwrap();
    assert_eq!((nic.rank(), nic.nranks()), (0, nranks));
    say(&format!("memfd {}", mapped_fabric()));
    let order = heard();
    let followers: Vec<(usize, u32)> = order
        .strip_prefix("serve")
        .unwrap()
        .split_whitespace()
        .map(|f| {
            let (r, p) = f.split_once(':').unwrap();
            (r.parse().unwrap(), p.parse().unwrap())
        })
        .collect();
    // Before serving, the leader holds the fabric's descriptor (not inheritable) and its socket.
    assert!(socket_listed(&address));
    let fds = fabric_descriptors();
    assert!(fds.len() == 1 && fds[0].1, "before serving: {fds:?}");
    leader.serve(&followers, deadline_in(30)).unwrap();
    // Served: only the mapping keeps the fabric, and the socket is gone.
    assert_eq!(
        fabric_descriptors(),
        vec![],
        "descriptor kept after serving"
    );
    assert!(!socket_listed(&address), "socket kept after serving");
    assert!(matches!(
        leader.serve(&followers, deadline_in(1)),
        Err(NicError::Config(_))
    ));
    assert!(leader.attach_self().is_err());
    say("served");
    if std::env::var("EXCHANGE").as_deref() == Ok("no") {
        return watch_a_peer_die(nic);
    }
    exchange(&mut nic);
    nic.finalize();
}

/// A follower: waits for the parent's go, (with `PROBES=yes`) tries the leader's socket with
/// garbage first, joins, (with `PROBES`) asks again, then exchanges.
fn follower_role() {
    let address = env("ADDR");
    let rank: usize = env("LOCAL_RANK").parse().unwrap();
    let probes = std::env::var("PROBES").as_deref() == Ok("yes");
    assert_eq!(heard(), "go");
    let idle = probes.then(|| {
        // Truncated hello, garbage, nothing at all, someone else's rank: each refused or
        // dropped, and none stops the leader.
        assert_eq!(raw_request(&address, &hello(rank as u32)[..5]), None);
        assert_eq!(raw_request(&address, &[0x5a; 16]), Some(4), "garbage");
        assert_eq!(raw_request(&address, &[]), None);
        let other = if rank == 1 { 2 } else { 1 };
        assert_eq!(raw_request(&address, &hello(other)), Some(3), "wrong rank");
        // One connection stays open and silent while we join on another.
        raw_connect(&address)
    });
    let fabric = join(&address, rank, deadline_in(30)).unwrap();
    assert_eq!(fabric.rank(), rank);
    // The descriptor received is not inherited by programs this process would start.
    let fds = fabric_descriptors();
    assert!(fds.len() == 1 && fds[0].1, "after joining: {fds:?}");
    if probes {
        let why = refusal(join(&address, rank, deadline_in(5)));
        assert!(why.contains("already got the fabric"), "{why}");
    }
    drop(idle);
    say("joined");
    let mut nic = Nic::open(fabric).unwrap();
    assert_eq!(nic.rank(), rank);
    assert_eq!(
        fabric_descriptors(),
        vec![],
        "descriptor kept after attaching"
    );
    if std::env::var("EXCHANGE").as_deref() == Ok("no") {
        send(&mut nic, 0, b"attached");
        // Wait here until the parent kills us.
        let _ = heard();
        panic!("the parent was to kill this process");
    }
    exchange(&mut nic);
    nic.finalize();
}

/// A process of the same user that is not a follower: it tries garbage, then joins.
fn stranger_role() {
    let address = env("ADDR");
    assert_eq!(raw_request(&address, b"\x01\x02\x03junk"), Some(1));
    let why = refusal(join(&address, 1, deadline_in(20)));
    assert!(why.contains("not one of the followers"), "{why}");
    say("refused");
}

/// The leader's side of `a_killed_peer_is_dead_within_a_second`.
fn watch_a_peer_die(mut nic: Nic) {
    assert_eq!(recv(&mut nic, 1), b"attached");
    // Control: a live peer stays alive through many checks.
    for _ in 0..20 {
        assert_eq!(nic.peer_status(1), PeerStatus::Alive);
        std::thread::sleep(Duration::from_millis(5));
    }
    say("alive");
    assert_eq!(heard(), "killed");
    let start = Instant::now();
    while nic.peer_status(1) != PeerStatus::Dead {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "rank 1 never reported dead"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    say(&format!("dead-after {}", start.elapsed().as_millis()));
    nic.finalize();
}

/// Runs this process's role if it is a child of a test; true if it was.
fn child_role() -> bool {
    let Ok(role) = std::env::var(ROLE_ENV) else {
        return false;
    };
    match role.as_str() {
        "leader" => leader_role(),
        "follower" => follower_role(),
        "stranger" => stranger_role(),
        other => panic!("unknown role {other}"),
    }
    true
}

// ---------------------------------------------------------------------------------------
// The tests.

#[test]
fn followers_share_the_leaders_fabric_and_strangers_are_refused() {
    if child_role() {
        return;
    }
    let test = "followers_share_the_leaders_fabric_and_strangers_are_refused";
    let mut leader = Kid::spawn(test, "leader", &[("NRANKS", "3")]);
    let address = leader.expect("addr");
    let memfd = leader.expect("memfd");
    assert!(
        socket_listed(&address),
        "control: the leader's socket is listed"
    );
    assert!(!mentions(&memfd).is_empty(), "control: the fabric is seen");
    let addr_env = ("ADDR", address.as_str());
    let mut f1 = Kid::spawn(
        test,
        "follower",
        &[addr_env, ("LOCAL_RANK", "1"), ("PROBES", "yes")],
    );
    let mut f2 = Kid::spawn(test, "follower", &[addr_env, ("LOCAL_RANK", "2")]);
    let mut stranger = Kid::spawn(test, "stranger", &[addr_env]);
    leader.tell(&format!("serve 1:{} 2:{}", f1.pid(), f2.pid()));
    // The stranger is refused while the leader waits for its followers...
    stranger.expect("refused");
    stranger.succeeds();
    // ... and so are the first follower's garbage and its second request, before the second
    // follower even starts to ask.
    f1.tell("go");
    f1.expect("joined");
    f2.tell("go");
    f2.expect("joined");
    leader.expect("served");
    f1.succeeds();
    f2.succeeds();
    leader.succeeds();
    assert_nothing_left(&address, &memfd);
}

#[test]
fn a_follower_gets_an_error_by_its_deadline_when_the_leader_does_not_serve() {
    if child_role() {
        return;
    }
    let test = "a_follower_gets_an_error_by_its_deadline_when_the_leader_does_not_serve";
    let mut leader = Kid::spawn(test, "leader", &[("NRANKS", "2")]);
    let address = leader.expect("addr");
    let memfd = leader.expect("memfd");
    let timed_join = |wait: Duration| {
        let start = Instant::now();
        let why = refusal(join(&address, 1, start + wait));
        (start.elapsed(), why)
    };
    let on_time =
        |took: Duration, wait: Duration| took >= wait && took < wait + Duration::from_millis(500);
    // Listening but not serving (it waits for its "serve" line): no answer by the deadline.
    let wait = Duration::from_millis(800);
    let (took, why) = timed_join(wait);
    assert!(on_time(took, wait), "took {took:?}");
    assert!(
        why.contains("deadline") && why.contains("did not answer"),
        "{why}"
    );
    // The leader dies while we wait in its queue.
    let wait = Duration::from_millis(1500);
    let (took, why) = std::thread::scope(|s| {
        let waiting = s.spawn(|| timed_join(wait));
        std::thread::sleep(Duration::from_millis(300));
        drop(leader);
        waiting.join().unwrap()
    });
    assert!(on_time(took, wait), "took {took:?}");
    assert!(why.contains("deadline"), "{why}");
    // Dead and gone: nothing listens at the address; the crash left nothing behind.
    assert_nothing_left(&address, &memfd);
    let wait = Duration::from_millis(300);
    let (took, why) = timed_join(wait);
    assert!(on_time(took, wait), "took {took:?}");
    assert!(why.contains("deadline") && why.contains("refused"), "{why}");
    // Addresses that cannot be a leader's are refused at once.
    for bad in ["", "with space", &"x".repeat(200)] {
        let (took, _) = {
            let start = Instant::now();
            let r = join(bad, 1, start + Duration::from_secs(5));
            assert!(
                matches!(r, Err(NicError::NoFabricFromLeader { .. })),
                "{bad:?}"
            );
            (start.elapsed(), ())
        };
        assert!(took < Duration::from_secs(1));
    }
}

#[test]
fn a_leader_names_the_followers_that_did_not_come() {
    if child_role() {
        return;
    }
    let leader = HostLeader::create(&JobConfig::new(4)).unwrap();
    // Lists that cannot be right are refused before serving.
    for bad in [
        vec![(0, 4242)],
        vec![(4, 4242)],
        vec![(1, 4242), (1, 4243)],
        vec![(1, 4242), (2, 4242)],
        vec![(1, std::process::id())],
    ] {
        assert!(
            matches!(leader.serve(&bad, Instant::now()), Err(NicError::Config(_))),
            "{bad:?}"
        );
    }
    // A pid that is no process never comes.
    let start = Instant::now();
    match leader.serve(
        &[(2, 999_999_999), (3, 999_999_998)],
        start + Duration::from_millis(300),
    ) {
        Err(NicError::FollowersMissing { missing }) => assert_eq!(missing, vec![2, 3]),
        other => panic!("expected missing followers, got {other:?}"),
    }
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_secs(2),
        "{took:?}"
    );
    assert!(!socket_listed(leader.address()));
}

#[test]
fn a_killed_peer_is_dead_within_a_second() {
    if child_role() {
        return;
    }
    let test = "a_killed_peer_is_dead_within_a_second";
    let no = ("EXCHANGE", "no");
    let mut leader = Kid::spawn(test, "leader", &[("NRANKS", "2"), no]);
    let address = leader.expect("addr");
    let memfd = leader.expect("memfd");
    let mut f1 = Kid::spawn(
        test,
        "follower",
        &[("ADDR", &address), ("LOCAL_RANK", "1"), no],
    );
    leader.tell(&format!("serve 1:{}", f1.pid()));
    f1.tell("go");
    f1.expect("joined");
    leader.expect("served");
    leader.expect("alive");
    // SIGKILL, and no reaping: the follower stays a zombie, which `kill(pid, 0)` would still
    // find.
    let pid = f1.pid();
    f1.child.kill().unwrap();
    leader.tell("killed");
    let took: u64 = leader.expect("dead-after").parse().unwrap();
    assert!(took < 1000, "reported dead after {took} ms");
    let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let state = state[state.rfind(')').unwrap() + 2..].chars().next();
    assert_eq!(
        state,
        Some('Z'),
        "control: the follower is a zombie until reaped"
    );
    drop(f1);
    leader.succeeds();
    assert_nothing_left(&address, &memfd);
}
