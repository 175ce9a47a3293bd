//! VMMC between real processes, on one host (the shared fabric) and across loopback "hosts"
//! (the network device): export and import by name, deliberate updates from many importers
//! into one exporter with notifications (each notification's bytes are checked when it is
//! seen, so the data must be in place first), fetches, and every refusal of the paper's
//! protection (a name never exported, bytes outside the region, a write into a read-only
//! region, a region withdrawn after it was imported), each checked to touch nothing: the
//! exporter's bytes, guard bytes after its regions included, stay as they were, and no
//! notification is raised.

use nic_model::net::{wire_up, Wired};
use nic_model::testing::{is_rank, poll_from, run_on_hosts, run_ranks, FileExchange};
use nic_model::vmmc::{Import, Name, Notification, Vmmc};
use nic_model::{send_bytes, Access, Device, JobConfig, Nic, NicError, PeerStatus};
use std::time::{Duration, Instant};

type V = Vmmc<Box<dyn Device>>;

/// Updates (with a notification each) every importer makes into its part of the exporter's
/// inbox: more than the notification ring holds, so importers wait for the exporter.
const SMALL_UPDATES: usize = 300;
/// Bytes of each of them.
const SMALL: usize = 48;
/// One long update per importer (several network chunks).
const LONG: usize = (1 << 20) + 4093;
/// Each importer's part of the inbox.
const PART: usize = SMALL_UPDATES * SMALL + LONG;
/// Guard bytes after each exported region, which no refused access may reach.
const GUARD: usize = 4096;
const GUARD_BYTE: u8 = 0xee;

fn name(s: &str) -> Name {
    Name::from_str(s).unwrap()
}

fn pattern(seed: usize, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| ((i as u32).wrapping_mul(2654435761) >> 11) as u8 ^ (seed as u8).wrapping_mul(37))
        .collect()
}

fn send(v: &mut V, dest: usize, bytes: &[u8]) {
    let end = Instant::now() + Duration::from_secs(30);
    while !send_bytes(v.device(), dest, bytes) {
        v.device().progress();
        assert!(Instant::now() < end, "route to {dest} stays full");
        std::thread::yield_now();
    }
}

/// The next packet from `src`; notifications that arrive meanwhile go to `notes`.
fn recv(v: &mut V, src: usize, notes: &mut Vec<Notification>) -> Vec<u8> {
    let end = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(p) = poll_from(v.device(), src) {
            return p;
        }
        notes.extend(v.notifications());
        v.device().progress();
        assert_ne!(
            v.device().peer_status(src),
            PeerStatus::Dead,
            "rank {src} died"
        );
        assert!(Instant::now() < end, "nothing from rank {src}");
        std::thread::yield_now();
    }
}

fn refused<T: std::fmt::Debug>(r: nic_model::Result<T>, what: &str) -> String {
    match r {
        Err(NicError::RegionRefused { rank: 0, why }) => why,
        other => panic!("{what}: expected a refusal by rank 0, got {other:?}"),
    }
}

/// A buffer exported without its guard bytes.
struct Guarded {
    buf: Vec<u8>,
    len: usize,
}

impl Guarded {
    fn new(len: usize, fill: impl Fn(usize) -> u8) -> Guarded {
        let mut buf: Vec<u8> = (0..len).map(fill).collect();
        buf.resize(len + GUARD, GUARD_BYTE);
        Guarded { buf, len }
    }

    /// Exports the first `len` bytes under `n`.
    fn export(&mut self, v: &mut V, n: &str, access: Access) {
        // SAFETY: the buffer outlives the export: every test withdraws it (`finish`) before
        // dropping it, and reads it only once importers are done writing.
        unsafe { v.export(name(n), self.buf.as_mut_ptr(), self.len, access) }.unwrap();
    }

    /// The exported bytes as they are now.
    fn bytes(&self) -> &[u8] {
        // Importers wrote these bytes from other processes; the notification that said so was
        // taken with acquire ordering, and no read is moved before this point.
        std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
        &self.buf[..self.len]
    }

    fn guard_intact(&self) -> bool {
        self.buf[self.len..].iter().all(|&b| b == GUARD_BYTE)
    }
}

/// Rank 0 exports; every other rank imports and updates. One script for one host and for
/// several: only the device differs.
fn scenario(mut v: V) {
    let (me, n) = (v.rank(), v.nranks());
    let importers = n - 1;
    if me == 0 {
        let mut inbox = Guarded::new(importers * PART, |_| 0);
        let ro_bytes = pattern(99, 8192);
        let mut ro = Guarded::new(8192, |i| ro_bytes[i]);
        let mut wo = Guarded::new(4096, |_| 7);
        let mut gone = Guarded::new(4096, |_| 5);
        inbox.export(&mut v, "inbox", Access::READ_WRITE);
        ro.export(&mut v, "ro", Access::READ);
        wo.export(&mut v, "wo", Access::WRITE);
        gone.export(&mut v, "gone", Access::READ_WRITE);
        // A name is exported once.
        // SAFETY: refused (checked below), so nothing is exported.
        let again = unsafe { v.export(name("ro"), ro.buf.as_mut_ptr(), 1, Access::READ) };
        assert!(again.is_err(), "a name exported twice: {again:?}");
        for r in 1..n {
            send(&mut v, r, b"exported");
        }

        // Every importer's updates, checked when their notification is seen.
        let mut next_small = vec![0usize; n];
        let mut long_seen = vec![false; n];
        let end = Instant::now() + Duration::from_secs(90);
        let mut notes = Vec::new();
        while (1..n).any(|r| next_small[r] < SMALL_UPDATES || !long_seen[r]) {
            notes.extend(v.notifications());
            for note in notes.drain(..) {
                let r = note.from;
                assert!(r >= 1 && r < n, "{note:?}");
                assert_eq!(note.name, name("inbox"), "{note:?}");
                let base = (r - 1) * PART;
                let got = &inbox.bytes()[note.offset..note.offset + note.len];
                if note.len == LONG {
                    assert_eq!(note.offset, base + SMALL_UPDATES * SMALL);
                    assert!(
                        got == &pattern(1000 + r, LONG)[..],
                        "long update of {r} not in place at its notification"
                    );
                    long_seen[r] = true;
                } else {
                    let k = next_small[r];
                    assert_eq!(
                        (note.offset, note.len),
                        (base + k * SMALL, SMALL),
                        "rank {r}'s update {k} out of order"
                    );
                    assert_eq!(
                        got,
                        &pattern(r * 1000 + k, SMALL)[..],
                        "rank {r}'s update {k} not in place at its notification"
                    );
                    next_small[r] += 1;
                }
            }
            v.device().progress();
            assert!(
                Instant::now() < end,
                "updates missing: {next_small:?} {long_seen:?}"
            );
            std::thread::yield_now();
        }
        // The importers try every refused access, then say so.
        for r in 1..n {
            assert_eq!(recv(&mut v, r, &mut notes), b"refusals tried");
        }
        v.withdraw(name("gone")).unwrap();
        assert!(v.withdraw(name("gone")).is_err(), "withdrawn twice");
        for r in 1..n {
            send(&mut v, r, b"withdrawn");
        }
        for r in 1..n {
            assert_eq!(recv(&mut v, r, &mut notes), b"done");
        }
        notes.extend(v.notifications());
        assert!(
            notes.is_empty(),
            "refused accesses raised notifications: {notes:?}"
        );
        // Nothing refused touched a byte.
        assert!(
            inbox.guard_intact() && ro.guard_intact() && wo.guard_intact() && gone.guard_intact()
        );
        assert_eq!(
            ro.bytes(),
            &pattern(99, 8192)[..],
            "the read-only region changed"
        );
        assert!(
            wo.bytes().iter().all(|&b| b == 7),
            "the write-only region changed"
        );
        assert!(
            gone.bytes().iter().all(|&b| b == 5),
            "the withdrawn region changed"
        );
        for r in 1..n {
            let part = &inbox.bytes()[(r - 1) * PART..r * PART];
            for k in 0..SMALL_UPDATES {
                assert_eq!(
                    &part[k * SMALL..(k + 1) * SMALL],
                    &pattern(r * 1000 + k, SMALL)[..]
                );
            }
        }
        let mut dev = v.finish();
        dev.finalize();
        drop((inbox, ro, wo, gone));
        return;
    }

    let mut notes = Vec::new();
    assert_eq!(recv(&mut v, 0, &mut notes), b"exported");
    let inbox = v.import(0, name("inbox")).unwrap();
    assert_eq!(
        (inbox.len, inbox.access),
        (importers * PART, Access::READ_WRITE)
    );
    let ro = v.import(0, name("ro")).unwrap();
    assert_eq!((ro.len, ro.access), (8192, Access::READ));
    let wo = v.import(0, name("wo")).unwrap();
    let gone = v.import(0, name("gone")).unwrap();
    let why = refused(
        v.import(0, name("nothere")),
        "import of a name never exported",
    );
    assert!(why.contains("nothere"), "{why}");

    // Updates with notifications, into this rank's part.
    let base = (me - 1) * PART;
    for k in 0..SMALL_UPDATES {
        v.update(
            &inbox,
            base + k * SMALL,
            &pattern(me * 1000 + k, SMALL),
            true,
        )
        .unwrap();
    }
    v.update(
        &inbox,
        base + SMALL_UPDATES * SMALL,
        &pattern(1000 + me, LONG),
        true,
    )
    .unwrap();
    v.complete(0).unwrap();
    // Fetches: what this rank wrote, and the read-only region.
    let mut back = vec![0u8; LONG];
    v.fetch(&inbox, base + SMALL_UPDATES * SMALL, &mut back)
        .unwrap();
    assert!(back == pattern(1000 + me, LONG), "fetched bytes differ");
    let mut r = vec![0u8; 1000];
    v.fetch(&ro, 7000, &mut r[..1000 - 808]).unwrap();
    assert_eq!(&r[..192], &pattern(99, 8192)[7000..7192]);

    // Refused by the importer's own check, before anything moves.
    refused(
        v.update(&ro, 0, b"x", false),
        "update of a read-only import",
    );
    refused(
        v.update(&inbox, inbox.len - 3, b"abcd", true),
        "update past the end",
    );
    refused(
        v.update(&inbox, usize::MAX, b"a", true),
        "update at an absurd offset",
    );
    refused(
        v.fetch(&wo, 0, &mut r[..1]),
        "fetch from a write-only import",
    );
    refused(v.fetch(&ro, 8000, &mut r[..193]), "fetch past the end");
    // Refused by the exporter's device against the region itself: imports forged to claim
    // more than was exported.
    let bigger = Import {
        len: inbox.len + GUARD,
        ..inbox
    };
    let r1 = v
        .update(&bigger, inbox.len, &[1u8; 16], true)
        .and_then(|()| v.complete(0));
    let why = refused(r1, "update into the guard bytes");
    assert!(why.contains("outside"), "{why}");
    let writable = Import {
        access: Access::READ_WRITE,
        ..ro
    };
    let r2 = v
        .update(&writable, 0, &[2u8; 16], true)
        .and_then(|()| v.complete(0));
    let why = refused(r2, "update of a read-only region");
    assert!(why.contains("may not be written"), "{why}");
    let readable = Import {
        access: Access::READ_WRITE,
        ..wo
    };
    refused(
        v.fetch(&readable, 0, &mut r[..16]),
        "fetch of a write-only region",
    );
    let past = Import {
        len: ro.len + GUARD,
        ..ro
    };
    refused(
        v.fetch(&past, ro.len, &mut r[..16]),
        "fetch of the guard bytes",
    );
    send(&mut v, 0, b"refusals tried");

    // The exporter withdraws a region this rank imported.
    assert_eq!(recv(&mut v, 0, &mut notes), b"withdrawn");
    let r3 = v
        .update(&gone, 0, &[3u8; 64], true)
        .and_then(|()| v.complete(0));
    let why = refused(r3, "update of a withdrawn region");
    assert!(why.contains("withdrawn"), "{why}");
    refused(
        v.fetch(&gone, 0, &mut r[..8]),
        "fetch of a withdrawn region",
    );
    refused(v.import(0, name("gone")), "import of a withdrawn name");
    assert!(
        notes.is_empty() && v.poll_notification().is_none(),
        "no one notifies an importer"
    );
    send(&mut v, 0, b"done");
    let mut dev = v.finish();
    dev.finalize();
}

#[test]
fn one_host_three_importers() {
    if is_rank() {
        let nic: Box<dyn Device> = Box::new(Nic::from_env().unwrap());
        scenario(Vmmc::new(nic));
        return;
    }
    let out = run_ranks("one_host_three_importers", 4, &[]);
    assert!(out.success(), "{out:?}");
}

fn net_device() -> Box<dyn Device> {
    let mut ex = FileExchange::from_env().expect("started by run_on_hosts");
    match wire_up(&mut ex, &JobConfig::new).expect("wire-up") {
        Wired::OneHost(nic) => Box::new(nic),
        Wired::Hosts(net) => net,
    }
}

/// Rank 0 and 1 on one host, 2 and 3 on another: importers on the exporter's host and on the
/// other one at once.
#[test]
fn two_hosts_three_importers() {
    if is_rank() {
        scenario(Vmmc::new(net_device()));
        return;
    }
    let out = run_on_hosts(
        "two_hosts_three_importers",
        &[2, 2],
        &[],
        Duration::from_secs(120),
    );
    assert!(out.success(), "{out:?}");
}

/// Ping-pong of notifying updates between two ranks, each importing the other's region: the
/// answer to update `k` carries `k`, so each side checks what it sees is the latest; and a
/// notification on an empty update.
fn ping_pong(mut v: V) {
    let me = v.rank();
    let peer = 1 - me;
    let mut mine = Guarded::new(64, |_| 0);
    mine.export(&mut v, "pp", Access::WRITE);
    // Name 0 is reserved; a rank has 64 names on its host, then exports are refused until it
    // withdraws one.
    let mut spare = [0u8; 64];
    // SAFETY: `spare` outlives these exports: all are refused or withdrawn below.
    let zero = unsafe { v.export(Name::new(0), spare.as_mut_ptr(), 64, Access::READ) };
    assert!(zero.is_err(), "name 0 was exported: {zero:?}");
    for i in 1..64u64 {
        // SAFETY: as above.
        unsafe { v.export(Name::new(1000 + i), spare.as_mut_ptr(), 64, Access::READ) }
            .unwrap_or_else(|e| panic!("name {i} of 64: {e}"));
    }
    // SAFETY: as above.
    let full = unsafe { v.export(Name::new(2000), spare.as_mut_ptr(), 64, Access::READ) };
    assert!(
        matches!(&full, Err(NicError::RegionRefused { why, .. }) if why.contains("64 names")),
        "a 65th name: {full:?}"
    );
    for i in 1..64u64 {
        v.withdraw(Name::new(1000 + i)).unwrap();
    }
    let theirs = v
        .import_when_exported(peer, name("pp"), Duration::from_secs(30))
        .unwrap();
    for k in 0..500u64 {
        if me == 0 {
            v.update(&theirs, 8, &k.to_le_bytes(), true).unwrap();
        }
        let note = v
            .wait_notification(Duration::from_secs(30))
            .expect("an answer");
        assert_eq!(
            (note.from, note.name, note.offset, note.len),
            (peer, name("pp"), 8, 8)
        );
        let got = u64::from_le_bytes(mine.bytes()[8..16].try_into().unwrap());
        assert_eq!(got, k, "round {k}: the bytes are not the notified ones");
        if me == 1 {
            v.update(&theirs, 8, &k.to_le_bytes(), true).unwrap();
        }
    }
    // A pure notification: no bytes.
    v.update(&theirs, 64, &[], true).unwrap();
    let note = v
        .wait_notification(Duration::from_secs(30))
        .expect("an empty update's notification");
    assert_eq!((note.offset, note.len), (64, 0));
    // Both sides are done with each other's region before either withdraws its own.
    v.update(&theirs, 0, &[1], true).unwrap();
    assert!(v.wait_notification(Duration::from_secs(30)).is_some());
    let mut dev = v.finish();
    dev.finalize();
    drop(mine);
}

#[test]
fn one_host_ping_pong() {
    if is_rank() {
        let nic: Box<dyn Device> = Box::new(Nic::from_env().unwrap());
        ping_pong(Vmmc::new(nic));
        return;
    }
    let out = run_ranks("one_host_ping_pong", 2, &[]);
    assert!(out.success(), "{out:?}");
}

#[test]
fn two_hosts_ping_pong() {
    if is_rank() {
        ping_pong(Vmmc::new(net_device()));
        return;
    }
    let out = run_on_hosts("two_hosts_ping_pong", &[1, 1], &[], Duration::from_secs(60));
    assert!(out.success(), "{out:?}");
}
