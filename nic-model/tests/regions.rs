//! Exported regions between two real processes: a peer that holds a key reads (and, where
//! allowed, writes) the region in one copy, long reads are split between both ends when the
//! exporter is polling its device and not when it is away, and every access the exporter did
//! not allow (another key, a withdrawn region, bytes outside it, a write into a read-only
//! region) is refused without touching a byte.

use nic_model::testing::{is_rank, poll_from, run_ranks};
use nic_model::{send_bytes, Access, Device, Nic, NicError, PeerStatus, RegionKey, Transfer};
use std::time::{Duration, Instant};

fn send(nic: &mut Nic, dest: usize, data: &[u8]) {
    let start = Instant::now();
    while !send_bytes(nic, dest, data) {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "route to {dest} stayed full"
        );
        std::hint::spin_loop();
    }
}

/// The next packet from `src`, polling the device's own work meanwhile (so that a split read
/// the peer asked for gets served).
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
    }
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(2654435761).wrapping_shr(13) as u8 ^ seed)
        .collect()
}

/// Reads `len` bytes at `offset` of `peer`'s region, waiting for a pending split to finish.
fn read(
    nic: &mut Nic,
    peer: usize,
    key: RegionKey,
    offset: usize,
    buf: &mut [u8],
) -> nic_model::Result<()> {
    // SAFETY: `buf` is borrowed until the transfer is done, below.
    match unsafe { nic.read_region(peer, key, offset, buf.as_mut_ptr(), buf.len()) }? {
        Transfer::Done => Ok(()),
        Transfer::Pending(id) => {
            let start = Instant::now();
            while !nic.poll_transfer(id)? {
                assert!(
                    start.elapsed() < Duration::from_secs(10),
                    "split read never finished"
                );
            }
            Ok(())
        }
    }
}

fn refused(r: nic_model::Result<impl std::fmt::Debug>, what: &str) -> String {
    match r {
        Err(NicError::RegionRefused { rank: 0, why }) => why,
        other => panic!("{what}: expected a refusal by rank 0, got {other:?}"),
    }
}

const BIG: usize = 4 << 20;

#[test]
fn regions_are_read_and_written_within_what_was_exported() {
    if !is_rank() {
        let out = run_ranks(
            "regions_are_read_and_written_within_what_was_exported",
            2,
            &[],
        );
        assert!(out.success(), "{out:?}");
        return;
    }
    let mut nic = Nic::from_env().unwrap();
    if nic.rank() == 0 {
        let ro = pattern(BIG, 1);
        let mut rw = vec![0u8; 1000];
        // SAFETY: both buffers outlive their regions (withdrawn below, before they drop), and
        // `rw` is not read by this process until rank 1 says it is done writing.
        let (k_ro, k_rw) = unsafe {
            (
                nic.register(ro.as_ptr() as usize, ro.len(), Access::READ)
                    .unwrap(),
                nic.register(rw.as_mut_ptr() as usize, rw.len(), Access::READ_WRITE)
                    .unwrap(),
            )
        };
        assert_eq!(nic.local_region(k_ro).unwrap().len, BIG);
        send(&mut nic, 1, &[k_ro.emit(), k_rw.emit()].concat());
        // Serve split reads until rank 1 is done with its first phase.
        assert_eq!(recv(&mut nic, 1), b"phase 1 done");
        assert!(
            nic.counters().assists >= 1,
            "rank 1's long read was not split with us: {:?}",
            nic.counters()
        );
        assert_eq!(
            &rw[..10],
            b"0123456789",
            "rank 1's deliberate update did not land"
        );
        assert!(
            rw[10..].iter().all(|&b| b == 0),
            "rank 1 wrote outside what it asked for"
        );
        // Phase 2: we are away (not polling) while rank 1 reads: it must not wait for us.
        send(&mut nic, 1, b"go");
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(recv(&mut nic, 1), b"phase 2 done");
        nic.deregister(k_ro).unwrap();
        assert!(nic.deregister(k_ro).is_err(), "withdrawn twice");
        send(&mut nic, 1, b"withdrawn");
        assert_eq!(recv(&mut nic, 1), b"bye");
        nic.deregister(k_rw).unwrap();
        nic.finalize();
        return;
    }
    let keys = recv(&mut nic, 0);
    let (k_ro, k_rw) = (
        RegionKey::parse(&keys[..16]).unwrap(),
        RegionKey::parse(&keys[16..]).unwrap(),
    );
    let expect = pattern(BIG, 1);
    assert_eq!(nic.import(0, k_ro).unwrap().len, BIG);
    // A long read while rank 0 polls: split, and every byte right.
    let mut got = vec![0u8; BIG];
    read(&mut nic, 0, k_ro, 0, &mut got).unwrap();
    assert!(got == expect, "long read is wrong");
    // A short read from the middle, not split.
    let mut small = vec![0u8; 777];
    read(&mut nic, 0, k_ro, 12345, &mut small).unwrap();
    assert_eq!(small, &expect[12345..12345 + 777]);
    // Deliberate update into the writable region.
    nic.write_region(0, k_rw, 0, b"0123456789").unwrap();
    // What the exporter did not allow is refused, and the buffer is left as it was.
    let mut untouched = vec![0xeeu8; 64];
    let why = refused(
        read(&mut nic, 0, k_ro, BIG - 10, &mut untouched),
        "read past the end",
    );
    assert!(why.contains("outside"), "{why}");
    let why = refused(
        read(
            &mut nic,
            0,
            RegionKey {
                key: k_ro.key ^ 1,
                ..k_ro
            },
            0,
            &mut untouched,
        ),
        "a wrong key",
    );
    assert!(why.contains("no such region"), "{why}");
    let why = refused(
        read(&mut nic, 0, RegionKey { id: 77, key: 5 }, 0, &mut untouched),
        "an id never exported",
    );
    assert!(why.contains("no such region"), "{why}");
    let why = refused(
        nic.write_region(0, k_ro, 0, b"x"),
        "a write into a read-only region",
    );
    assert!(why.contains("may not be written"), "{why}");
    let why = refused(
        nic.write_region(0, k_rw, 995, b"123456"),
        "a write past the end",
    );
    assert!(why.contains("outside"), "{why}");
    assert!(
        untouched.iter().all(|&b| b == 0xee),
        "a refused read wrote into the buffer"
    );
    send(&mut nic, 0, b"phase 1 done");
    // Phase 2: rank 0 is asleep; the long read finishes anyway (we take its part back).
    assert_eq!(recv(&mut nic, 0), b"go");
    let assists_before = nic.counters().dma_ops;
    got.fill(0);
    let start = Instant::now();
    read(&mut nic, 0, k_ro, 0, &mut got).unwrap();
    assert!(
        start.elapsed() < Duration::from_millis(250),
        "the read waited for the sleeping exporter: {:?}",
        start.elapsed()
    );
    assert!(got == expect, "long read without the exporter is wrong");
    assert!(
        nic.counters().dma_ops >= assists_before + 2,
        "both parts should have been ours"
    );
    send(&mut nic, 0, b"phase 2 done");
    // After the exporter withdraws the region, the same key reads nothing.
    assert_eq!(recv(&mut nic, 0), b"withdrawn");
    let why = refused(
        read(&mut nic, 0, k_ro, 0, &mut untouched),
        "a withdrawn region",
    );
    assert!(why.contains("no such region"), "{why}");
    assert!(untouched.iter().all(|&b| b == 0xee));
    assert!(matches!(
        nic.import(0, k_ro),
        Err(NicError::RegionRefused { .. })
    ));
    send(&mut nic, 0, b"bye");
    nic.finalize();
}
