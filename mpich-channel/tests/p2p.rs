//! The ADI over real processes, on each channel: data checked byte for byte.

use mpich_channel::{Engine, SendMode, Status, ANY_SOURCE, ANY_TAG};
use nic_model::testing::{is_rank, run_ranks};

fn pattern(len: usize, seed: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i.wrapping_mul(31) ^ seed.wrapping_mul(7) ^ (i >> 8)) as u8)
        .collect()
}

const SIZES: &[usize] = &[
    0,
    1,
    8,
    4000,
    8168,
    8192,
    8193,
    20_000,
    65_536,
    1 << 20,
    (4 << 20) + 3,
];

fn pingpong(adi: &mut Engine) {
    let peer = 1 - adi.p2p_ref().rank();
    for (k, &len) in SIZES.iter().enumerate() {
        let msg = pattern(len, k);
        let mut buf = vec![0u8; len];
        if adi.p2p_ref().rank() == 0 {
            adi.send(&msg, peer, k as i32, 0, SendMode::Standard)
                .unwrap();
            let s = adi.recv(&mut buf, peer as i32, k as i32, 0).unwrap();
            assert_eq!(
                (s.len, s.source, s.tag, s.truncated),
                (len, 1, k as i32, false)
            );
        } else {
            let s = adi.recv(&mut buf, 0, ANY_TAG, 0).unwrap();
            assert_eq!(s.len, len);
            assert!(buf == msg, "size {len}: data differs");
            adi.send(&buf, 0, k as i32, 0, SendMode::Standard).unwrap();
        }
        assert!(buf == msg, "size {len}: data differs");
    }
}

/// Every rank but 0 sends a numbered sequence of short and long messages to rank 0, which
/// receives them with wildcards: each sender's messages must arrive in order.
fn any_source_order(adi: &mut Engine) {
    const N: usize = 40;
    let len_of = |i: usize| if i % 5 == 4 { 70_000 } else { 16 * (i % 7) + 4 };
    if adi.p2p_ref().rank() == 0 {
        let mut next = vec![0usize; adi.p2p_ref().size()];
        let mut buf = vec![0u8; 70_000];
        for _ in 0..N * (adi.p2p_ref().size() - 1) {
            let s = adi.recv(&mut buf, ANY_SOURCE, ANY_TAG, 0).unwrap();
            let src = s.source as usize;
            let i = next[src];
            assert_eq!(s.tag, (i % 3) as i32);
            assert_eq!(s.len, len_of(i));
            assert!(
                buf[..s.len] == pattern(s.len, src * 1000 + i)[..],
                "from {src}, message {i}"
            );
            next[src] += 1;
        }
    } else {
        for i in 0..N {
            let msg = pattern(len_of(i), adi.p2p_ref().rank() * 1000 + i);
            adi.send(&msg, 0, (i % 3) as i32, 0, SendMode::Standard)
                .unwrap();
        }
    }
}

/// Everyone sends to everyone many messages of mixed sizes and tags before any receive is
/// posted; receives are posted in another order (by tag, descending), and a last message per
/// peer is taken with ANY_TAG.
fn storm(adi: &mut Engine) {
    const PER_PEER: usize = 61;
    let (me, n) = (adi.p2p_ref().rank(), adi.p2p_ref().size());
    let len_of = |from: usize, i: usize| [0, 3, 100, 5000, 9000, 33_000, 200_000][(i + from) % 7];
    let tag_of = |i: usize| {
        if i == PER_PEER - 1 {
            10
        } else {
            (i % 10) as i32
        }
    };
    let peers: Vec<usize> = (0..n).filter(|&p| p != me).collect();
    let sends: Vec<(usize, usize, Vec<u8>)> = peers
        .iter()
        .flat_map(|&p| (0..PER_PEER).map(move |i| (p, i)))
        .map(|(p, i)| (p, i, pattern(len_of(me, i), me * 7919 + i)))
        .collect();
    let mut reqs = Vec::new();
    for (p, i, data) in &sends {
        // SAFETY: `sends` outlives the requests, all waited for below.
        reqs.push(unsafe {
            adi.p2p()
                .isend(
                    data.as_ptr(),
                    data.len(),
                    *p,
                    tag_of(*i),
                    0,
                    SendMode::Standard,
                    0,
                )
                .unwrap()
        });
    }
    let mut bufs: Vec<(usize, usize, Vec<u8>)> = Vec::new();
    for &p in &peers {
        for t in (0..10).rev() {
            for i in (0..PER_PEER - 1).filter(|i| i % 10 == t) {
                bufs.push((p, i, vec![0u8; 200_000]));
            }
        }
        bufs.push((p, PER_PEER - 1, vec![0u8; 200_000]));
    }
    let mut rreqs = Vec::new();
    for (p, i, b) in bufs.iter_mut() {
        let tag = if *i == PER_PEER - 1 {
            ANY_TAG
        } else {
            tag_of(*i)
        };
        // SAFETY: `bufs` outlives the requests.
        rreqs.push((
            unsafe {
                adi.p2p()
                    .irecv(b.as_mut_ptr(), b.len(), *p as i32, tag, 0, 0)
                    .unwrap()
            },
            *p,
            *i,
        ));
    }
    // Complete in a scrambled order.
    rreqs.reverse();
    for (r, p, i) in &rreqs {
        let s = adi.wait(*r).unwrap();
        assert_eq!(
            (s.source as usize, s.tag, s.len),
            (*p, tag_of(*i), len_of(*p, *i))
        );
    }
    for (p, i, b) in &bufs {
        let len = len_of(*p, *i);
        assert!(
            b[..len] == pattern(len, p * 7919 + i)[..],
            "from {p}, message {i}"
        );
    }
    for r in reqs {
        adi.wait(r).unwrap();
    }
}

/// Rank 1 posts receives for a flood before it starts (most of them, in order; a few tags
/// only later), then rank 0 sends it. Arrivals are delivered in batches while receives are
/// posted: each must land in its own receive, the ones without a receive must wait as
/// unexpected messages, and a blocking receive in the middle of the flood must take exactly
/// its message.
fn posted_flood(adi: &mut Engine) {
    const N: usize = 300;
    let len_of = |i: usize| [0, 1, 8, 64, 500, 4000, 8000][i % 7];
    // Tag 7 has no receive posted up front: those messages arrive unexpected. Tag 8 is the
    // one message a blocking receive takes in the middle of the flood.
    let tag_of = |i: usize| match i {
        _ if i == N / 2 => 8,
        _ if i % 50 == 49 => 7,
        _ => (i % 5) as i32,
    };
    let (me, peer) = (adi.p2p_ref().rank(), 1 - adi.p2p_ref().rank());
    if me == 0 {
        let mut go = [0u8; 1];
        adi.recv(&mut go, 1, 99, 0).unwrap();
        let msgs: Vec<Vec<u8>> = (0..N).map(|i| pattern(len_of(i), i)).collect();
        let mut reqs = Vec::new();
        for (i, m) in msgs.iter().enumerate() {
            // SAFETY: `msgs` outlives the requests, all waited for below.
            reqs.push(unsafe {
                adi.p2p()
                    .isend(
                        m.as_ptr(),
                        m.len(),
                        peer,
                        tag_of(i),
                        0,
                        SendMode::Standard,
                        0,
                    )
                    .unwrap()
            });
        }
        for r in reqs {
            adi.wait(r).unwrap();
        }
        return;
    }
    let mut bufs: Vec<Vec<u8>> = (0..N).map(|_| vec![0u8; 8000]).collect();
    let mut reqs = Vec::new();
    for (i, b) in bufs.iter_mut().enumerate() {
        if tag_of(i) >= 7 {
            continue;
        }
        // SAFETY: `bufs` outlives the requests.
        let r = unsafe {
            adi.p2p()
                .irecv(b.as_mut_ptr(), b.len(), 0, tag_of(i), 0, 0)
                .unwrap()
        };
        reqs.push((i, r));
    }
    adi.send(&[1], 0, 99, 0, SendMode::Standard).unwrap();
    // A blocking receive, while the flood arrives, for the message in its middle.
    let mid = N / 2;
    let s = adi.recv(&mut bufs[mid], 0, tag_of(mid), 0).unwrap();
    assert_eq!(s.len, len_of(mid));
    for (i, r) in reqs {
        let s = adi.wait(r).unwrap();
        assert_eq!((s.len, s.tag), (len_of(i), tag_of(i)), "message {i}");
    }
    for i in (0..N).filter(|&i| tag_of(i) == 7) {
        let s = adi.recv(&mut bufs[i], 0, 7, 0).unwrap();
        assert_eq!(s.len, len_of(i), "unexpected message {i}");
    }
    for (i, b) in bufs.iter().enumerate() {
        assert!(
            b[..len_of(i)] == pattern(len_of(i), i)[..],
            "message {i}: data differs"
        );
    }
}

/// A synchronous send does not complete before the receive is posted.
fn synchronous(adi: &mut Engine) {
    for len in [8usize, 100_000] {
        let data = pattern(len, len);
        if adi.p2p_ref().rank() == 0 {
            // SAFETY: `data` outlives the request.
            let r = unsafe {
                adi.p2p()
                    .isend(data.as_ptr(), len, 1, 5, 0, SendMode::Synchronous, 0)
                    .unwrap()
            };
            let t = std::time::Instant::now();
            while t.elapsed().as_millis() < 50 {
                assert!(
                    adi.test(r).unwrap().is_none(),
                    "synchronous send of {len} B completed unmatched"
                );
            }
            adi.send(&[], 1, 6, 0, SendMode::Standard).unwrap();
            adi.wait(r).unwrap();
        } else {
            adi.recv(&mut [], 0, 6, 0).unwrap();
            let mut buf = vec![0u8; len];
            adi.recv(&mut buf, 0, 5, 0).unwrap();
            assert!(buf == data);
        }
    }
}

/// Probe for the size, truncation, cancel of receives and of unmatched sends.
fn probe_truncate_cancel(adi: &mut Engine) {
    if adi.p2p_ref().rank() == 0 {
        for len in [10usize, 300_000] {
            adi.send(&pattern(len, 1), 1, 1, 0, SendMode::Standard)
                .unwrap();
            adi.send(&pattern(len, 2), 1, 2, 0, SendMode::Standard)
                .unwrap();
        }
        // Unmatched sends, short and rendezvous, then their cancel.
        for len in [64usize, 300_000] {
            let data = pattern(len, 3);
            // SAFETY: `data` outlives the request.
            let r = unsafe {
                adi.p2p()
                    .isend(data.as_ptr(), len, 1, 99, 0, SendMode::Standard, 0)
                    .unwrap()
            };
            let t = std::time::Instant::now();
            while t.elapsed().as_millis() < 20 {
                adi.progress().unwrap();
            }
            adi.p2p().cancel(r).unwrap();
            let s = adi.wait(r).unwrap();
            assert!(s.cancelled, "unmatched send of {len} B was not cancelled");
        }
        adi.send(&[], 1, 3, 0, SendMode::Standard).unwrap();
    } else {
        for len in [10usize, 300_000] {
            let s = adi.probe(ANY_SOURCE, ANY_TAG, 0).unwrap();
            assert_eq!((s.source, s.tag, s.len), (0, 1, len));
            let mut buf = vec![0u8; s.len];
            adi.recv(&mut buf, 0, 1, 0).unwrap();
            assert!(buf == pattern(len, 1));
            let mut small = vec![0u8; 7];
            let s = adi.recv(&mut small, 0, 2, 0).unwrap();
            assert_eq!((s.len, s.truncated), (7, true));
            assert!(small[..] == pattern(len, 2)[..7]);
        }
        let mut buf = [0u8; 4];
        // SAFETY: `buf` outlives the request.
        let r = unsafe { adi.p2p().irecv(buf.as_mut_ptr(), 4, 0, 77, 0, 0).unwrap() };
        adi.p2p().cancel(r).unwrap();
        assert_eq!(
            adi.wait(r).unwrap(),
            Status {
                source: ANY_SOURCE,
                tag: ANY_TAG,
                cancelled: true,
                ..Status::default()
            }
        );
        adi.recv(&mut [], 0, 3, 0).unwrap();
        assert!(
            adi.iprobe(0, 99, 0).unwrap().is_none(),
            "a cancelled send arrived"
        );
    }
}

fn run(body: fn(&mut Engine)) {
    let mut adi = Engine::init().unwrap();
    body(&mut adi);
    adi.finalize().unwrap();
}

macro_rules! on_channels {
    ($($name:ident: $body:ident, $n:expr;)*) => {
        mod bip { use super::*; $(on_channels!(@one "bip", $name, $body, $n);)* }
        mod fm { use super::*; $(on_channels!(@one "fm", $name, $body, $n);)* }
        mod fm1 { use super::*; $(on_channels!(@one "fm1", $name, $body, $n);)* }
    };
    (@one $ch:expr, $name:ident, $body:ident, $n:expr) => {
        #[test]
        fn $name() {
            if is_rank() {
                return run($body);
            }
            let test = format!("{}::{}", module_path!().rsplit("::").next().unwrap(), stringify!($name));
            let out = run_ranks(&test, $n, &[("MPI_CHANNEL", $ch)]);
            assert!(out.success(), "{out:?}");
        }
    };
}

on_channels! {
    pingpong_0_to_4mib: pingpong, 2;
    any_source_keeps_order: any_source_order, 4;
    storm_of_nonblocking: storm, 3;
    posted_receives_take_a_flood: posted_flood, 2;
    synchronous_send_waits_for_match: synchronous, 2;
    probe_truncate_cancel_: probe_truncate_cancel, 2;
}

/// A low eager limit makes mid-size messages rendezvous whose early data BIP still sends
/// eagerly: the data can be handed over while the RTS waits in a full route's queue.
#[test]
fn bip_low_eager_limit_storm() {
    if is_rank() {
        return run(|adi| {
            storm(adi);
            pingpong_if_two(adi);
        });
    }
    let out = run_ranks(
        "bip_low_eager_limit_storm",
        2,
        &[("MPI_CHANNEL", "bip"), ("MPI_EAGER_MAX", "1024")],
    );
    assert!(out.success(), "{out:?}");
}

fn pingpong_if_two(adi: &mut Engine) {
    if adi.p2p_ref().size() == 2 {
        pingpong(adi);
    }
}

/// Over a faulty device (BIP's link protocol on: sequence numbers, checksums, resends) every
/// channel still delivers every byte, in order.
#[test]
fn storm_over_a_faulty_device() {
    if is_rank() {
        return run(|adi| {
            storm(adi);
            any_source_order(adi);
        });
    }
    for ch in ["bip", "fm", "fm1"] {
        let env = [
            ("MPI_CHANNEL", ch),
            ("MPI_NIC_FAULTS", "drop=0.01,corrupt=0.01,dup=0.01,seed=5"),
        ];
        let out = run_ranks("storm_over_a_faulty_device", 3, &env);
        assert!(out.success(), "channel {ch}: {out:?}");
    }
}
