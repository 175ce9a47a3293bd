//! The job's shared-memory fabric from the outside: it disappears with the job (cleanly or
//! after a crash), it cannot be attached by a process of another job, it is private to the
//! user (mode 0600), a process outside a job is told so, and a full route pushes back on the
//! sender without losing anything.

use nic_model::testing::{is_rank, poll_from, run_ranks, run_ranks_with};
use nic_model::{
    send_bytes, Device, DeviceStack, Job, JobConfig, Nic, NicError, PeerStatus, RankExit,
};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

/// Where a rank writes what the parent needs to know (its job key and pid).
const OUT_ENV: &str = "FABRIC_TEST_OUT";
/// The harness's marker variable for "this process is a rank of test X" (see `testing.rs`).
const RANK_MARKER: &str = "NIC_TEST_RANK_OF";

fn out_path(test: &str) -> PathBuf {
    std::env::temp_dir().join(format!("nic-fabric-test-{}-{test}", std::process::id()))
}

/// The name the fabric's memory file carries: `nic-fabric-` and the first 4 key bytes in hex.
fn fabric_name(key_hex: &str) -> String {
    format!("nic-fabric-{}", &key_hex[..8])
}

/// In a rank: records this rank's job key and pid for the parent.
fn report_to_parent(rank: usize) {
    let key = std::env::var("NIC_JOB_KEY").unwrap();
    let path = format!("{}.{rank}", std::env::var(OUT_ENV).unwrap());
    std::fs::write(path, format!("{key} {}", std::process::id())).unwrap();
}

/// In the parent: the (key, pid) each rank reported; removes the files.
fn reports(test: &str, n: usize) -> Vec<(String, u32)> {
    (0..n)
        .map(|rank| {
            let path = format!("{}.{rank}", out_path(test).display());
            let s = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("rank {rank} left no report: {e}"));
            let _ = std::fs::remove_file(&path);
            let (key, pid) = s.split_once(' ').unwrap();
            (key.to_string(), pid.parse().unwrap())
        })
        .collect()
}

/// Every mapping and open descriptor of every process we can inspect that mentions `name`.
fn mentions(name: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let file_name = entry.file_name();
        let Some(pid) = file_name
            .to_str()
            .filter(|s| s.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        if let Ok(maps) = std::fs::read_to_string(entry.path().join("maps")) {
            for line in maps.lines().filter(|l| l.contains(name)) {
                found.push(format!("pid {pid} maps: {line}"));
            }
        }
        if let Ok(fds) = std::fs::read_dir(entry.path().join("fd")) {
            for fd in fds.flatten() {
                if let Ok(target) = std::fs::read_link(fd.path()) {
                    if target.to_string_lossy().contains(name) {
                        found.push(format!(
                            "pid {pid} fd {:?}: {}",
                            fd.file_name(),
                            target.display()
                        ));
                    }
                }
            }
        }
    }
    found
}

/// The names in /dev/shm that could be a fabric.
fn shm_suspects() -> BTreeSet<String> {
    std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.contains("nic") || n.contains("fabric"))
                .collect()
        })
        .unwrap_or_default()
}

/// Sends `data` to `dest`, waiting while the route is full; panics if `dest` dies or after 10 s.
fn send_packet(nic: &mut Nic, dest: usize, data: &[u8]) {
    let start = Instant::now();
    loop {
        if send_bytes(nic, dest, data) {
            return;
        }
        assert_ne!(nic.peer_status(dest), PeerStatus::Dead, "rank {dest} died");
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "route to {dest} stayed full"
        );
        std::thread::yield_now();
    }
}

/// The next packet from `src`, or `None` if `src` died first; panics after 10 s.
fn recv_packet(nic: &mut Nic, src: usize) -> Option<Vec<u8>> {
    let start = Instant::now();
    loop {
        if let Some(p) = poll_from(nic, src) {
            return Some(p);
        }
        if nic.peer_status(src) == PeerStatus::Dead {
            return None;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "nothing from rank {src}"
        );
        std::thread::yield_now();
    }
}

fn packet(i: u32, len: usize) -> Vec<u8> {
    let mut v: Vec<u8> = (0..len)
        .map(|k| (k as u32).wrapping_mul(31).wrapping_add(i.wrapping_mul(7)) as u8)
        .collect();
    let head = [i.to_le_bytes(), (len as u32).to_le_bytes()].concat();
    let n = len.min(8);
    v[..n].copy_from_slice(&head[..n]);
    v
}

const PINGS: u32 = 200;

/// Raw ping-pong through `Device::send/poll`. With `crash_after`, rank 1 aborts after
/// echoing that many packets and rank 0 must see it dead.
fn raw_pingpong_body(crash_after: Option<u32>) {
    let mut nic = Nic::from_env().unwrap();
    let me = nic.rank();
    let peer = 1 - me;
    report_to_parent(me);
    let name = fabric_name(&std::env::var("NIC_JOB_KEY").unwrap());
    // Positive control for the parent's check: while the job runs, the fabric is visible in
    // our own mappings, under its memfd name, and nowhere in /dev/shm.
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    assert!(
        maps.lines()
            .any(|l| l.contains(&name) && l.contains("memfd:")),
        "fabric {name} not mapped as a memfd"
    );
    assert!(
        shm_suspects().iter().all(|n| !n.contains(&name[11..])),
        "fabric visible in /dev/shm"
    );
    let mtu = nic.capabilities().mtu;
    for i in 0..PINGS {
        let len = 1 + (i as usize * 211) % mtu;
        if me == 0 {
            send_packet(&mut nic, peer, &packet(i, len));
            match recv_packet(&mut nic, peer) {
                Some(echo) => assert!(echo == packet(i, len), "echo {i} of {len} B is wrong"),
                None => {
                    let k = crash_after.expect("rank 1 died in a job where it should not");
                    assert_eq!(i, k, "rank 1 died at the wrong time");
                    // The launcher marked it dead: we were told within the 10 s of recv_packet.
                    assert_eq!(nic.peer_status(peer), PeerStatus::Dead);
                    return;
                }
            }
        } else {
            if crash_after == Some(i) {
                std::process::abort();
            }
            let got = recv_packet(&mut nic, peer).expect("rank 0 died");
            assert!(got == packet(i, len), "ping {i} of {len} B is wrong");
            send_packet(&mut nic, peer, &got);
        }
    }
    assert!(crash_after.is_none());
    assert_eq!(nic.counters().packets_rx, PINGS as u64);
    nic.finalize();
}

/// After the job: no process maps or holds the fabric, the ranks are gone, /dev/shm is clean.
fn assert_fabric_gone(test: &str, shm_before: &BTreeSet<String>) {
    let reps = reports(test, 2);
    assert_eq!(reps[0].0, reps[1].0, "both ranks belong to one job");
    let name = fabric_name(&reps[0].0);
    let left = mentions(&name);
    assert!(
        left.is_empty(),
        "fabric {name} still referenced after the job: {left:#?}"
    );
    for (_, pid) in &reps {
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "rank process {pid} still exists"
        );
    }
    let new: Vec<_> = shm_suspects().difference(shm_before).cloned().collect();
    assert!(new.is_empty(), "/dev/shm gained {new:?}");
}

#[test]
fn fabric_is_gone_after_the_job() {
    if is_rank() {
        return raw_pingpong_body(None);
    }
    let test = "fabric_is_gone_after_the_job";
    let shm_before = shm_suspects();
    let out_file = out_path(test);
    let out = run_ranks(test, 2, &[(OUT_ENV, out_file.to_str().unwrap())]);
    assert!(out.success(), "{out:?}");
    assert_fabric_gone(test, &shm_before);
}

#[test]
fn fabric_is_gone_after_a_crash() {
    if is_rank() {
        return raw_pingpong_body(Some(17));
    }
    let test = "fabric_is_gone_after_a_crash";
    let shm_before = shm_suspects();
    let out_file = out_path(test);
    let out = run_ranks(test, 2, &[(OUT_ENV, out_file.to_str().unwrap())]);
    assert!(!out.timed_out, "{out:?}");
    assert_eq!(
        out.exits,
        vec![RankExit::Code(0), RankExit::Signal(libc::SIGABRT)],
        "{out:?}"
    );
    assert_eq!(out.first_failure, Some(1));
    assert_fabric_gone(test, &shm_before);
}

/// The rank side of `other_job_cannot_attach`: `EXPECT` says whether attaching must work.
#[test]
fn attach_probe() {
    if !is_rank() {
        return;
    }
    match (std::env::var("EXPECT").unwrap().as_str(), Nic::from_env()) {
        ("accept", Ok(nic)) => assert_eq!(nic.rank(), 0),
        ("reject", Err(NicError::BadFabric(why))) => assert!(why.contains("another job"), "{why}"),
        (want, Ok(_)) => panic!("expected {want}, but attached"),
        (want, Err(e)) => panic!("expected {want}, got {e:?}"),
    }
}

/// Starts `attach_probe` with job A's fabric descriptor and rank, and job B's key when
/// `foreign_key`; returns whether it succeeded.
fn probe(a: &Job, b: &Job, foreign_key: bool) -> bool {
    let get = |cmd: &Command, k: &str| -> String {
        cmd.get_envs()
            .find(|(n, _)| *n == k)
            .and_then(|(_, v)| v)
            .unwrap()
            .to_string_lossy()
            .into_owned()
    };
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "attach_probe",
        "--exact",
        "--nocapture",
        "--test-threads",
        "1",
    ])
    .env(RANK_MARKER, "attach_probe")
    .env("EXPECT", if foreign_key { "reject" } else { "accept" });
    a.prepare(&mut cmd, 0);
    let (fd_a, key_a) = (get(&cmd, "NIC_FABRIC_FD"), get(&cmd, "NIC_JOB_KEY"));
    if foreign_key {
        // B's preparation sets B's key (and keeps B's descriptor open too); point the
        // descriptor variable back at A's fabric.
        b.prepare(&mut cmd, 0);
        let key_b = get(&cmd, "NIC_JOB_KEY");
        assert_ne!(key_a, key_b);
        cmd.env("NIC_FABRIC_FD", &fd_a).env("NIC_RANK", "0");
        assert_eq!(get(&cmd, "NIC_JOB_KEY"), key_b);
    }
    // The probe's own test report would clutter ours; its panic message still shows on stderr.
    let mut child = cmd.stdout(std::process::Stdio::null()).spawn().unwrap();
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.success();
        }
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("the probe hung");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn other_job_cannot_attach() {
    if is_rank() {
        return;
    }
    let a = Job::new(&JobConfig::new(2)).unwrap();
    let b = Job::new(&JobConfig::new(2)).unwrap();
    // Control for `mentions`, which the other tests expect to find nothing: it does see the
    // fabrics this process holds now.
    let me = format!("pid {} ", std::process::id());
    assert!(
        mentions("nic-fabric-")
            .iter()
            .filter(|m| m.starts_with(&me))
            .count()
            >= 4,
        "{:#?}",
        mentions("nic-fabric-")
    );
    assert!(
        probe(&a, &b, true),
        "a process with job B's key attached to job A's fabric (or failed otherwise)"
    );
    // Control: with its own job's key the same process attaches.
    assert!(
        probe(&a, &b, false),
        "a process of job A could not attach to job A's fabric"
    );
}

#[test]
fn fabric_file_is_private_and_not_left_open() {
    if is_rank() {
        let fd: i32 = std::env::var("NIC_FABRIC_FD").unwrap().parse().unwrap();
        let key = std::env::var("NIC_JOB_KEY").unwrap();
        // SAFETY: fstat and fcntl on a descriptor number only read kernel state.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        assert_eq!(
            unsafe { libc::fstat(fd, &mut st) },
            0,
            "fabric descriptor {fd} not open"
        );
        assert_eq!(st.st_mode & libc::S_IFMT, libc::S_IFREG);
        assert_eq!(
            st.st_mode & 0o7777,
            0o600,
            "fabric mode is {:o}",
            st.st_mode & 0o7777
        );
        assert_eq!(st.st_uid, unsafe { libc::getuid() });
        let target = std::fs::read_link(format!("/proc/self/fd/{fd}")).unwrap();
        let target = target.to_string_lossy();
        assert!(
            target.starts_with(&format!("/memfd:{}", fabric_name(&key))),
            "fabric is {target}"
        );
        // Inherited across exec, so it must not be close-on-exec... until we attach, which
        // maps it and closes the descriptor: nothing else of this process can reach it.
        let nic = Nic::from_env().unwrap();
        assert_eq!(
            unsafe { libc::fcntl(fd, libc::F_GETFD) },
            -1,
            "descriptor {fd} left open after attaching"
        );
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let line = maps
            .lines()
            .find(|l| l.contains(&fabric_name(&key)))
            .expect("fabric mapped");
        assert!(
            line.split_whitespace().nth(1).unwrap().starts_with("rw-s"),
            "fabric mapping is {line}"
        );
        drop(nic);
        return;
    }
    let out = run_ranks("fabric_file_is_private_and_not_left_open", 2, &[]);
    assert!(out.success(), "{out:?}");
}

#[test]
fn outside_a_job_is_not_in_job() {
    if is_rank() {
        return;
    }
    assert!(
        std::env::var_os("NIC_FABRIC_FD").is_none(),
        "this test must run outside a job"
    );
    match Nic::from_env() {
        Err(NicError::NotInJob(var)) => assert_eq!(var, "NIC_FABRIC_FD"),
        Err(e) => panic!("expected NotInJob, got {e:?}"),
        Ok(_) => panic!("attached outside a job"),
    }
    match DeviceStack::from_env() {
        Err(e @ NicError::NotInJob(_)) => assert!(e.to_string().contains("launcher"), "{e}"),
        Err(e) => panic!("expected NotInJob, got {e:?}"),
        Ok(_) => panic!("attached outside a job"),
    }
}

const SLOTS: usize = 16;

#[test]
fn full_route_pushes_back_without_loss() {
    if is_rank() {
        let mut nic = Nic::from_env().unwrap();
        let mtu = nic.capabilities().mtu;
        let total = 10 * SLOTS as u32;
        let len_of = |i: u32| 8 + (i as usize * 997) % (mtu - 8);
        if nic.rank() == 0 {
            let mut first_full = None;
            let mut blocked = Duration::ZERO;
            for i in 0..total {
                let data = packet(i, len_of(i));
                let mut since: Option<Instant> = None;
                loop {
                    if send_bytes(&mut nic, 1, &data) {
                        break;
                    }
                    first_full.get_or_insert(i);
                    let s = *since.get_or_insert_with(Instant::now);
                    assert!(s.elapsed() < Duration::from_secs(10), "route stayed full");
                    assert_ne!(nic.peer_status(1), PeerStatus::Dead);
                    std::hint::spin_loop();
                }
                if let Some(s) = since {
                    blocked = blocked.max(s.elapsed());
                }
            }
            // The route holds exactly SLOTS packets (the receiver took the first at once, and
            // its release reaches the sender once it finds the ring empty); the sender then
            // waits for the receiver, which slept 200 ms before taking more.
            assert!(
                matches!(first_full, Some(f) if f == SLOTS as u32 || f == SLOTS as u32 + 1),
                "send refused at packet {first_full:?}"
            );
            assert!(
                blocked >= Duration::from_millis(150),
                "longest wait for room only {blocked:?}"
            );
            assert!(nic.counters().stalls >= 1);
            assert_eq!(nic.counters().packets_tx, total as u64);
            nic.finalize();
        } else {
            // Take the first packet, then let the sender fill the route.
            let first = recv_packet(&mut nic, 0).expect("rank 0 died");
            assert!(first == packet(0, len_of(0)), "packet 0: lost or corrupt");
            std::thread::sleep(Duration::from_millis(200));
            for i in 1..total {
                let got = recv_packet(&mut nic, 0).expect("rank 0 died");
                assert!(
                    got == packet(i, len_of(i)),
                    "packet {i}: lost, reordered or corrupt"
                );
            }
            // Nothing more: no duplicate, nothing left over.
            std::thread::sleep(Duration::from_millis(20));
            assert!(
                poll_from(&mut nic, 0).is_none(),
                "more packets than were sent"
            );
            assert_eq!(nic.counters().packets_rx, total as u64);
            nic.finalize();
        }
        return;
    }
    let mut cfg = JobConfig::new(2);
    cfg.queue_slots = SLOTS;
    cfg.slot_bytes = 4096;
    // Every packet through the queue, whose size the test checks.
    cfg.box_count = 0;
    let out = run_ranks_with(
        "full_route_pushes_back_without_loss",
        &cfg,
        &[],
        Duration::from_secs(30),
    );
    assert!(out.success(), "{out:?}");
}
