//! Fault injection never yields silent corruption: under `MPI_NIC_FAULTS` (drops, corruption,
//! duplicates, delays) every message arrives exactly once, in order, byte for byte, and the
//! faults were really injected and really recovered from; a link that loses everything fails
//! with an error instead of hanging or delivering garbage.

use bip_core::{Bip, BipConfig, BipError};
use nic_model::testing::{is_rank, run_ranks};
use nic_model::{Device, DeviceStack};
use std::time::{Duration, Instant};

fn bip() -> Bip<DeviceStack> {
    let bip = Bip::new(DeviceStack::from_env().unwrap(), BipConfig::from_env()).unwrap();
    assert!(
        !bip.device().capabilities().reliable,
        "MPI_NIC_FAULTS should make the device unreliable"
    );
    bip
}

fn pattern(len: usize, seed: u32) -> Vec<u8> {
    let mut v: Vec<u8> = (0..len)
        .map(|i| ((i as u32).wrapping_mul(2_654_435_761) >> 13 ^ seed.wrapping_mul(97)) as u8)
        .collect();
    let n = len.min(4);
    v[..n].copy_from_slice(&seed.to_le_bytes()[..n]);
    v
}

/// With the default 4 KiB slots a packet carries at most 4040 bytes of BIP payload: these are
/// empty, one-packet, multi-packet short (up to the 16 KiB eager limit) and long messages.
const SIZES: &[usize] = &[
    0,
    1,
    7,
    64,
    1000,
    4039,
    4040,
    4041,
    8081,
    8 << 10,
    (8 << 10) + 1,
    12_000,
    16 << 10,
    24 << 10,
    (24 << 10) + 1,
    65_537,
    300_000,
    1 << 20,
];

const PING: u32 = 1;
const STREAM: u32 = 2;
const REPORT: u32 = 3;

fn verify(got: &[u8], want: &[u8], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    if got != want {
        let at = got.iter().zip(want).position(|(a, b)| a != b).unwrap();
        panic!("{what}: SILENT CORRUPTION at byte {at} of {}", want.len());
    }
}

/// Ping-pong over every size, then a one-way stream of many messages, all verified; then the
/// ranks pool their counters and rank 0 checks that faults were injected and recovered.
fn faulty_body() {
    let t0 = Instant::now();
    let mut bip = bip();
    let me = bip.mynode();
    let peer = 1 - me;
    let mut buf = vec![0u8; (1 << 20) + 64];
    // Ping-pong: rank 0 sends, rank 1 checks and echoes, rank 0 checks the echo.
    for (i, &len) in SIZES.iter().enumerate() {
        let want = pattern(len, i as u32);
        if me == 0 {
            bip.send(peer, PING, &want).unwrap();
            let (n, src) = bip.recv(PING, &mut buf).unwrap();
            assert_eq!(src, peer);
            verify(&buf[..n], &want, &format!("echo of {len} B"));
        } else {
            let (n, src) = bip.recv(PING, &mut buf).unwrap();
            assert_eq!(src, peer);
            verify(&buf[..n], &want, &format!("ping of {len} B"));
            bip.send(peer, PING, &buf[..n]).unwrap();
        }
    }
    // Stream: 150 messages, sizes cycling through SIZES except the largest ones.
    let stream_len = |k: usize| SIZES[k % (SIZES.len() - 2)] + k % 3;
    for k in 0..150 {
        let want = pattern(stream_len(k), 1000 + k as u32);
        if me == 0 {
            bip.send(peer, STREAM, &want).unwrap();
        } else {
            let (n, src) = bip.recv(STREAM, &mut buf).unwrap();
            assert_eq!(src, peer);
            verify(&buf[..n], &want, &format!("stream message {k}"));
        }
    }
    // Pool the counters: rank 1 reports (faults, retransmits, rejected) to rank 0.
    let mine = {
        let c = bip.counters();
        [bip.device().counters().faults, c.retransmits, c.rejected]
    };
    eprintln!(
        "rank {me}: faults {} retransmits {} rejected {} in {:?}",
        mine[0],
        mine[1],
        mine[2],
        t0.elapsed()
    );
    if me == 1 {
        let bytes: Vec<u8> = mine.iter().flat_map(|x| x.to_le_bytes()).collect();
        bip.send(0, REPORT, &bytes).unwrap();
    } else {
        let mut b = [0u8; 24];
        assert_eq!(bip.recv(REPORT, &mut b).unwrap(), (24, 1));
        let theirs: Vec<u64> = b
            .chunks(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        let faults = mine[0] + theirs[0];
        let recovered = mine[1] + mine[2] + theirs[1] + theirs[2];
        assert!(
            mine[0] > 0 && theirs[0] > 0,
            "faults were not injected on both ranks: {mine:?} {theirs:?}"
        );
        assert!(
            faults > 10,
            "too few faults injected to test anything: {faults}"
        );
        assert!(
            recovered > 0,
            "faults injected but no retransmission or rejection: {mine:?} {theirs:?}"
        );
        assert_eq!(bip.counters().messages_received as usize, SIZES.len() + 1);
    }
    // Finalize at once: a peer that already finalized must not make this one wait for
    // acknowledgements it will never send (see `finalize_over_lossy_link`).
    let t = Instant::now();
    bip.finalize().unwrap();
    assert!(
        t.elapsed() < Duration::from_secs(1),
        "finalize took {:?}",
        t.elapsed()
    );
}

fn run_faulty(name: &str, spec: &str) {
    let t = Instant::now();
    let out = run_ranks(name, 2, &[("MPI_NIC_FAULTS", spec)]);
    assert!(out.success(), "{spec}: {out:?}");
    println!("{spec}: {:?}", t.elapsed());
}

#[test]
fn drops_are_recovered() {
    if is_rank() {
        return faulty_body();
    }
    run_faulty("drops_are_recovered", "drop=0.05,seed=1");
}

#[test]
fn corruption_is_caught() {
    if is_rank() {
        return faulty_body();
    }
    run_faulty("corruption_is_caught", "corrupt=0.05,seed=2");
}

#[test]
fn duplicates_are_discarded() {
    if is_rank() {
        return faulty_body();
    }
    run_faulty("duplicates_are_discarded", "dup=0.05,seed=3");
}

#[test]
fn delays_are_reordered() {
    if is_rank() {
        return faulty_body();
    }
    run_faulty("delays_are_reordered", "delay=0.05,seed=4");
}

#[test]
fn all_faults_together() {
    if is_rank() {
        return faulty_body();
    }
    run_faulty(
        "all_faults_together",
        "drop=0.02,corrupt=0.02,dup=0.02,delay=0.02,seed=5",
    );
}

/// A link that loses (or garbles) every packet: the first exchange must end in an error,
/// `LinkFailed` (retransmissions exhausted) or `PeerGone` (the peer gave up and left first),
/// well within 10 s, and never deliver anything.
fn dead_link_body() {
    let mut bip = bip();
    let me = bip.mynode();
    let t = Instant::now();
    let r = if me == 0 {
        bip.send(1, PING, &pattern(100, 1)).map(|()| (0, 0))
    } else {
        let mut b = [0u8; 256];
        bip.recv(PING, &mut b)
    };
    let took = t.elapsed();
    eprintln!("rank {me}: {r:?} after {took:?}");
    match r {
        Err(BipError::LinkFailed { peer, retries }) => {
            // Every rank also has a (loopback) link to itself, which the injector breaks too;
            // either may be the first found failed.
            assert!(peer < 2, "LinkFailed names rank {peer}");
            assert!(retries > 0);
        }
        Err(BipError::PeerGone { rank, .. }) => assert_eq!(rank, 1 - me),
        other => panic!("expected LinkFailed or PeerGone, got {other:?}"),
    }
    assert!(took < Duration::from_secs(8), "failing took {took:?}");
    assert_eq!(
        bip.counters().messages_received,
        0,
        "something was delivered over a dead link"
    );
    assert!(bip.device().counters().faults > 0);
    std::process::exit(0);
}

#[test]
fn total_loss_fails_with_link_failed() {
    if is_rank() {
        return dead_link_body();
    }
    let out = run_ranks(
        "total_loss_fails_with_link_failed",
        2,
        &[("MPI_NIC_FAULTS", "drop=1.0,seed=6")],
    );
    assert!(out.success(), "{out:?}");
}

#[test]
fn total_corruption_fails_with_link_failed() {
    if is_rank() {
        return dead_link_body();
    }
    let out = run_ranks(
        "total_corruption_fails_with_link_failed",
        2,
        &[("MPI_NIC_FAULTS", "corrupt=1.0,seed=7")],
    );
    assert!(out.success(), "{out:?}");
}

/// The smallest clean shutdown over a lossy link: rank 1 sends one message, rank 0 receives
/// it and finalizes at once, rank 1 finalizes. Both must succeed promptly, whichever packets
/// the link loses.
fn finalize_body() {
    let mut bip = bip();
    let t = Instant::now();
    if bip.mynode() == 1 {
        bip.send(0, PING, b"bye").unwrap();
    } else {
        let mut b = [0u8; 8];
        assert_eq!(bip.recv(PING, &mut b).unwrap(), (3, 1));
    }
    let r = bip.finalize();
    assert!(r.is_ok(), "finalize failed after {:?}: {r:?}", t.elapsed());
}

/// The ranks of `finalize_over_lossy_link` (a no-op outside a job).
#[test]
fn finalize_over_lossy_link_rank() {
    if is_rank() {
        finalize_body();
    }
}

/// Several seeds, each a job; with drop=0.5 most of them lose the last acknowledgement.
#[test]
fn finalize_over_lossy_link() {
    for seed in 1..=8 {
        let spec = format!("drop=0.5,seed={seed}");
        let t = Instant::now();
        let out = run_ranks(
            "finalize_over_lossy_link_rank",
            2,
            &[("MPI_NIC_FAULTS", &spec)],
        );
        assert!(out.success(), "{spec}: {out:?} after {:?}", t.elapsed());
        assert!(
            t.elapsed() < Duration::from_secs(1),
            "{spec}: shutdown took {:?}",
            t.elapsed()
        );
    }
}
