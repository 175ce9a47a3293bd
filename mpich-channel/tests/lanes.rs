//! Lanes over real processes: several threads per process, each owning one lane's engine and
//! working on its own contexts, on each channel; every byte checked.

use mpich_channel::lanes::contexts_of;
use mpich_channel::{pair_route, AdiError, Engine, SendMode, ANY_SOURCE, ANY_TAG};
use nic_model::testing::{is_rank, run_ranks};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

fn pattern(len: usize, seed: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i.wrapping_mul(31) ^ seed.wrapping_mul(7) ^ (i >> 8)) as u8)
        .collect()
}

/// The `which`th point-to-point context [`pair_route`] gives to `lane` of `n`.
fn ctx_for(lane: usize, n: usize, which: usize) -> u16 {
    contexts_of(lane, n).nth(which).unwrap()
}

/// Eager (up to a packet), rendezvous, and past the unexpected staging sizes.
const SIZES: &[usize] = &[
    0,
    1,
    8,
    4000,
    8168,
    8193,
    20_000,
    65_536,
    1 << 20,
    3_000_001,
];

/// Splits this rank's engine into `n` lanes and runs `body` on each in a thread of its own
/// (lane, lane count); each thread finalizes its lane when done, in whatever order they end.
fn on_lanes(n: usize, body: fn(&mut Engine, usize, usize)) {
    on_lanes_routed(n, pair_route, body)
}

/// As [`on_lanes`], with lanes chosen by `route`.
fn on_lanes_routed(
    n: usize,
    route: mpich_channel::lanes::Route,
    body: fn(&mut Engine, usize, usize),
) {
    let lanes = Engine::init().unwrap().into_lanes(n, route).unwrap();
    assert_eq!(lanes.len(), n);
    let threads: Vec<_> = lanes
        .into_iter()
        .enumerate()
        .map(|(lane, mut e)| {
            std::thread::spawn(move || {
                body(&mut e, lane, n);
                e.finalize().unwrap();
            })
        })
        .collect();
    for t in threads {
        t.join().expect("a lane's thread failed");
    }
}

/// Ping-pong of every size on this lane's context (seeded by lane, so a message that reached
/// the wrong lane shows), then with ANY_SOURCE and ANY_TAG.
fn pingpong(e: &mut Engine, lane: usize, n: usize) {
    let ctx = ctx_for(lane, n, 0);
    let me = e.p2p_ref().rank();
    let peer = 1 - me;
    for (k, &len) in SIZES.iter().enumerate() {
        let msg = pattern(len, lane * 100 + k);
        let mut buf = vec![0u8; len];
        if me == 0 {
            e.send(&msg, peer, k as i32, ctx, SendMode::Standard)
                .unwrap();
            let s = e.recv(&mut buf, peer as i32, k as i32, ctx).unwrap();
            assert_eq!(
                (s.len, s.source, s.tag, s.truncated),
                (len, 1, k as i32, false)
            );
        } else {
            let s = e.recv(&mut buf, ANY_SOURCE, ANY_TAG, ctx).unwrap();
            assert_eq!((s.len, s.source, s.tag), (len, 0, k as i32));
            assert!(buf == msg, "lane {lane}, size {len}: data differs");
            e.send(&buf, 0, k as i32, ctx, SendMode::Standard).unwrap();
        }
        assert!(buf == msg, "lane {lane}, size {len}: data differs");
    }
}

/// A stream of nonblocking sends of mixed sizes from rank 0, sent before rank 1 posts
/// anything (so they arrive unexpected, many taken off the channel by other lanes), received
/// with ANY_TAG in order; then receives posted first (in reverse), the messages after.
fn stream(e: &mut Engine, lane: usize, n: usize) {
    const N: usize = 120;
    const POSTED: usize = 30;
    let ctx = ctx_for(lane, n, 0);
    let len_of = |i: usize| [0, 3, 100, 5000, 9000, 33_000, 200_000][(i + lane) % 7];
    let msgs: Vec<Vec<u8>> = (0..N)
        .map(|i| pattern(len_of(i), lane * 1000 + i))
        .collect();
    if e.p2p_ref().rank() == 0 {
        let mut reqs = Vec::new();
        for (i, m) in msgs.iter().enumerate() {
            // SAFETY: `msgs` outlives the requests, all waited for below.
            reqs.push(unsafe {
                e.p2p()
                    .isend(
                        m.as_ptr(),
                        m.len(),
                        1,
                        (i % 5) as i32,
                        ctx,
                        SendMode::Standard,
                        0,
                    )
                    .unwrap()
            });
        }
        for r in reqs {
            e.wait(r).unwrap();
        }
        e.recv(&mut [], 1, 99, ctx).unwrap();
        for (i, m) in msgs.iter().enumerate().take(POSTED) {
            e.send(m, 1, 100 + i as i32, ctx, SendMode::Standard)
                .unwrap();
        }
    } else {
        let t = Instant::now();
        while t.elapsed() < Duration::from_millis(30) {
            e.progress().unwrap();
            std::thread::yield_now();
        }
        let mut buf = vec![0u8; 200_000];
        for (i, m) in msgs.iter().enumerate() {
            let s = e.recv(&mut buf, 0, ANY_TAG, ctx).unwrap();
            assert_eq!(
                (s.tag, s.len),
                ((i % 5) as i32, m.len()),
                "lane {lane}, message {i}"
            );
            assert!(
                buf[..s.len] == m[..],
                "lane {lane}, message {i}: data differs"
            );
        }
        let mut bufs: Vec<Vec<u8>> = msgs[..POSTED].iter().map(|m| vec![0u8; m.len()]).collect();
        let mut ids = Vec::new();
        for (i, b) in bufs.iter_mut().enumerate().rev() {
            // SAFETY: `bufs` outlives the receives, all waited for below.
            ids.push(unsafe {
                e.p2p()
                    .irecv(b.as_mut_ptr(), b.len(), ANY_SOURCE, 100 + i as i32, ctx, 0)
                    .unwrap()
            });
        }
        e.send(&[], 0, 99, ctx, SendMode::Standard).unwrap();
        for id in ids {
            e.wait(id).unwrap();
        }
        for (i, b) in bufs.iter().enumerate() {
            assert!(
                b[..] == msgs[i][..],
                "lane {lane}, posted {i}: data differs"
            );
        }
    }
}

/// Both tests in one run, in every lane.
fn pingpong_and_stream(e: &mut Engine, lane: usize, n: usize) {
    pingpong(e, lane, n);
    stream(e, lane, n);
}

/// Synchronous sends do not complete before their receive is posted (the acknowledgement
/// comes back to the sender's lane), unmatched sends are cancelled (the cancel and its
/// answer on the lane), a posted receive is cancelled.
fn sync_and_cancel(e: &mut Engine, lane: usize, n: usize) {
    let ctx = ctx_for(lane, n, 0);
    if e.p2p_ref().rank() == 0 {
        sync_sends(e, lane, ctx, 5, 6);
        for len in [64usize, 300_000] {
            cancel_unmatched(e, lane, ctx, 99, len);
        }
        e.send(&[], 1, 3, ctx, SendMode::Standard).unwrap();
    } else {
        receive_sync_sends(e, lane, ctx, 5, 6);
        let mut buf = [0u8; 4];
        // SAFETY: `buf` outlives the request.
        let r = unsafe { e.p2p().irecv(buf.as_mut_ptr(), 4, 0, 77, ctx, 0).unwrap() };
        e.p2p().cancel(r).unwrap();
        assert!(
            e.wait(r).unwrap().cancelled,
            "lane {lane}: receive not cancelled"
        );
        e.recv(&mut [], 0, 3, ctx).unwrap();
        assert!(
            e.iprobe(0, 99, ctx).unwrap().is_none(),
            "lane {lane}: a cancelled send arrived"
        );
    }
}

/// Rank 0's side: synchronous sends of 8 B and 100 kB on `tag` that must not complete before
/// rank 1 has matched them (it receives them once `go` arrives).
fn sync_sends(e: &mut Engine, lane: usize, ctx: u16, tag: i32, go: i32) {
    for len in [8usize, 100_000] {
        let data = pattern(len, lane + len);
        // SAFETY: `data` outlives the request.
        let r = unsafe {
            e.p2p()
                .isend(data.as_ptr(), len, 1, tag, ctx, SendMode::Synchronous, 0)
                .unwrap()
        };
        let t = Instant::now();
        while t.elapsed() < Duration::from_millis(40) {
            assert!(
                e.test(r).unwrap().is_none(),
                "lane {lane}: synchronous send of {len} B completed unmatched"
            );
            std::thread::yield_now();
        }
        e.send(&[], 1, go, ctx, SendMode::Standard).unwrap();
        e.wait(r).unwrap();
    }
}

/// Rank 1's side of [`sync_sends`].
fn receive_sync_sends(e: &mut Engine, lane: usize, ctx: u16, tag: i32, go: i32) {
    for len in [8usize, 100_000] {
        e.recv(&mut [], 0, go, ctx).unwrap();
        let mut buf = vec![0u8; len];
        e.recv(&mut buf, 0, tag, ctx).unwrap();
        assert!(buf == pattern(len, lane + len), "lane {lane}: data differs");
    }
}

/// Rank 0: a send of `len` bytes on `tag` that rank 1 never receives, cancelled.
fn cancel_unmatched(e: &mut Engine, lane: usize, ctx: u16, tag: i32, len: usize) {
    let data = pattern(len, 3);
    // SAFETY: `data` outlives the request.
    let r = unsafe {
        e.p2p()
            .isend(data.as_ptr(), len, 1, tag, ctx, SendMode::Standard, 0)
            .unwrap()
    };
    let t = Instant::now();
    while t.elapsed() < Duration::from_millis(20) {
        e.progress().unwrap();
        std::thread::yield_now();
    }
    e.p2p().cancel(r).unwrap();
    let s = e.wait(r).unwrap();
    assert!(
        s.cancelled,
        "lane {lane}: unmatched send of {len} B not cancelled"
    );
}

/// Contexts that share a lane: two of them on this lane, the same tags interleaved on both,
/// received the other way round; messages never cross contexts.
fn shared_lane(e: &mut Engine, lane: usize, n: usize) {
    let (a, b) = (ctx_for(lane, n, 0), ctx_for(lane, n, 1));
    assert_eq!(pair_route(a, 0) % n, pair_route(b, 0) % n);
    const N: usize = 20;
    let len_of = |i: usize| [5, 9000, 70_000][i % 3];
    if e.p2p_ref().rank() == 0 {
        let msgs: Vec<(u16, i32, Vec<u8>)> = (0..N)
            .flat_map(|i| [(0, a), (1, b)].map(|(c, ctx)| (c, ctx, i)))
            .map(|(c, ctx, i)| (ctx, (i % 2) as i32, pattern(len_of(i), c * 100 + i)))
            .collect();
        let mut reqs = Vec::new();
        for (ctx, tag, m) in &msgs {
            // SAFETY: `msgs` outlives the requests, all waited for below.
            reqs.push(unsafe {
                e.p2p()
                    .isend(m.as_ptr(), m.len(), 1, *tag, *ctx, SendMode::Standard, 0)
                    .unwrap()
            });
        }
        for r in reqs {
            e.wait(r).unwrap();
        }
    } else {
        let mut buf = vec![0u8; 70_000];
        for (c, ctx) in [(1, b), (0, a)] {
            for i in 0..N {
                let s = e.recv(&mut buf, ANY_SOURCE, ANY_TAG, ctx).unwrap();
                assert_eq!((s.tag, s.len), ((i % 2) as i32, len_of(i)));
                assert!(buf[..s.len] == pattern(len_of(i), c * 100 + i)[..]);
            }
        }
    }
}

/// Every lane runs [`shared_lane`] with two lanes, and then world's context (lane 0) is used
/// by lane 0 only.
fn shared_lane_and_world(e: &mut Engine, lane: usize, n: usize) {
    shared_lane(e, lane, n);
    if lane == 0 {
        let me = e.p2p_ref().rank();
        let mut buf = [0u8; 4];
        if me == 0 {
            e.send(b"word", 1, 1, 0, SendMode::Standard).unwrap();
        } else {
            e.recv(&mut buf, 0, 1, 0).unwrap();
            assert_eq!(&buf, b"word");
        }
    }
}

/// A lane whose thread does not turn it does not hold the others up: while lane 2 of rank 1
/// sleeps, rank 0's lane 2 floods it with more short messages than the receive queue and the
/// sender's boxes hold, and lane 1 ping-pongs meanwhile until the flood's sends are complete
/// (which needs rank 1 to take them off the channel: lane 1's polls put them in lane 2's
/// inbox). Lane 2 then finds them all, in order, when it wakes.
fn sleeping_lane(e: &mut Engine, lane: usize, n: usize) {
    // Per process: rank 0's flood is sent; rank 1's lane 1 is done.
    static FLOOD_SENT: AtomicBool = AtomicBool::new(false);
    static LANE_1_DONE: AtomicBool = AtomicBool::new(false);
    const FLOOD: usize = 600;
    let ctx = ctx_for(lane, n, 0);
    let me = e.p2p_ref().rank();
    let peer = 1 - me;
    let t = Instant::now();
    let in_time = |what: &str| assert!(t.elapsed() < Duration::from_secs(30), "{what}");
    match lane {
        1 => {
            // Rank 0 says in each ping whether to go on.
            for i in 0.. {
                in_time("the flood was not taken while lane 2 slept");
                let mut m = pattern(40, i);
                m[0] = u8::from(me == 0 && FLOOD_SENT.load(Ordering::Acquire));
                let mut buf = [0u8; 40];
                if me == 0 {
                    e.send(&m, peer, 1, ctx, SendMode::Standard).unwrap();
                    e.recv(&mut buf, peer as i32, 1, ctx).unwrap();
                } else {
                    e.recv(&mut buf, peer as i32, 1, ctx).unwrap();
                    e.send(&buf, peer, 1, ctx, SendMode::Standard).unwrap();
                }
                assert!(buf[1..] == m[1..], "round {i}");
                if buf[0] == 1 {
                    break;
                }
            }
            LANE_1_DONE.store(true, Ordering::Release);
        }
        2 if me == 0 => {
            let msgs: Vec<Vec<u8>> = (0..FLOOD).map(|i| pattern(100, 5000 + i)).collect();
            let mut reqs = Vec::new();
            for m in &msgs {
                // SAFETY: `msgs` outlives the requests, all waited for below.
                reqs.push(unsafe {
                    e.p2p()
                        .isend(m.as_ptr(), m.len(), 1, 3, ctx, SendMode::Standard, 0)
                        .unwrap()
                });
            }
            for r in reqs {
                e.wait(r).unwrap();
            }
            FLOOD_SENT.store(true, Ordering::Release);
        }
        2 => {
            // Asleep until lane 1 is done: nothing turns this lane meanwhile.
            while !LANE_1_DONE.load(Ordering::Acquire) {
                in_time("lane 1 was held up while lane 2 slept");
                std::thread::sleep(Duration::from_millis(5));
            }
            let mut buf = [0u8; 100];
            for i in 0..FLOOD {
                e.recv(&mut buf, 0, 3, ctx).unwrap();
                assert!(buf[..] == pattern(100, 5000 + i)[..], "flood message {i}");
            }
            // A lane other than 0 counts only its copies out of its inbox: most of the flood
            // came that way (what the sender's boxes held when its sends completed may not).
            let c = e.p2p_ref().counters().channel;
            assert!(
                c.channel.copies >= (FLOOD / 2) as u64,
                "{} of {FLOOD} came through lane 2's inbox",
                c.channel.copies
            );
            assert_eq!(c.nic.packets_tx, 0, "the channel's counters are lane 0's");
        }
        _ => {}
    }
}

/// The context whose messages [`tag_route`] spreads over lanes 1..=3 by tag.
const TAGGED: u16 = 4000;

/// [`pair_route`], but context [`TAGGED`] by tag: tag `t` on lane `1 + t % 3` (as the MPI
/// library routes a communicator made with `mpi_assert_no_any_tag`).
fn tag_route(ctx: u16, tag: i32) -> usize {
    if ctx == TAGGED {
        1 + tag.rem_euclid(3) as usize
    } else {
        pair_route(ctx, tag)
    }
}

/// Lanes 1..=3 each on tags of their own of ONE context (lane 0 idle): ping-pongs of every
/// size, synchronous sends that complete only once matched (the acknowledgement carries the
/// tag back to the sender's lane), an unmatched send cancelled (the cancel request and its
/// answer ride the tag's lane at both ends); every byte checked.
fn tags_of_one_context(e: &mut Engine, lane: usize, _n: usize) {
    if lane == 0 {
        return;
    }
    let tag = |k: i32| (lane as i32 - 1) + 3 * k;
    let me = e.p2p_ref().rank();
    let peer = 1 - me;
    for (k, &len) in SIZES.iter().enumerate() {
        let msg = pattern(len, lane * 100 + k);
        let mut buf = vec![0u8; len];
        if me == 0 {
            e.send(&msg, peer, tag(0), TAGGED, SendMode::Standard)
                .unwrap();
            let s = e.recv(&mut buf, peer as i32, tag(0), TAGGED).unwrap();
            assert_eq!((s.len, s.tag), (len, tag(0)));
        } else {
            let s = e.recv(&mut buf, ANY_SOURCE, tag(0), TAGGED).unwrap();
            assert_eq!((s.len, s.source, s.tag), (len, 0, tag(0)));
            assert!(buf == msg, "lane {lane}, size {len}: data differs");
            e.send(&buf, 0, tag(0), TAGGED, SendMode::Standard).unwrap();
        }
        assert!(buf == msg, "lane {lane}, size {len}: data differs");
    }
    if me == 0 {
        sync_sends(e, lane, TAGGED, tag(1), tag(2));
        cancel_unmatched(e, lane, TAGGED, tag(3), 300_000);
        e.send(&[], 1, tag(0), TAGGED, SendMode::Standard).unwrap();
    } else {
        receive_sync_sends(e, lane, TAGGED, tag(1), tag(2));
        e.recv(&mut [], 0, tag(0), TAGGED).unwrap();
        assert!(
            e.iprobe(0, tag(3), TAGGED).unwrap().is_none(),
            "lane {lane}: a cancelled send arrived"
        );
    }
}

fn rank_main(test: &str) {
    match test {
        "four_lanes" => on_lanes(4, pingpong_and_stream),
        "sync_cancel" => on_lanes(4, sync_and_cancel),
        "shared_lane" => on_lanes(2, shared_lane_and_world),
        "sleeping_lane" => on_lanes(3, sleeping_lane),
        "tags" => on_lanes_routed(4, tag_route, tags_of_one_context),
        other => panic!("no rank body {other}"),
    }
}

macro_rules! on_channels {
    ($($name:ident: $body:expr;)*) => {
        mod bip { use super::*; $(on_channels!(@one "bip", $name, $body);)* }
        mod fm { use super::*; $(on_channels!(@one "fm", $name, $body);)* }
        mod fm1 { use super::*; $(on_channels!(@one "fm1", $name, $body);)* }
    };
    (@one $ch:expr, $name:ident, $body:expr) => {
        #[test]
        fn $name() {
            if is_rank() {
                return rank_main($body);
            }
            let test = format!("{}::{}", module_path!().rsplit("::").next().unwrap(), stringify!($name));
            let out = run_ranks(&test, 2, &[("MPI_CHANNEL", $ch)]);
            assert!(out.success(), "{out:?}");
        }
    };
}

on_channels! {
    four_lanes_pingpong_and_stream: "four_lanes";
    synchronous_and_cancel_on_lanes: "sync_cancel";
    contexts_sharing_a_lane: "shared_lane";
    a_sleeping_lane_holds_nobody_up: "sleeping_lane";
    tags_of_one_context_on_lanes_of_their_own: "tags";
}

/// One lane is the engine as it was: the same engine back, and it works as before.
#[test]
fn one_lane_is_the_engine_itself() {
    if is_rank() {
        let mut lanes = Engine::init().unwrap().into_lanes(1, pair_route).unwrap();
        assert_eq!(lanes.len(), 1);
        let mut e = lanes.pop().unwrap();
        pingpong(&mut e, 0, 1);
        return e.finalize().unwrap();
    }
    let out = run_ranks("one_lane_is_the_engine_itself", 2, &[]);
    assert!(out.success(), "{out:?}");
}

/// Messages that arrived before the split move to their lane; a process with lanes talks to
/// one without (routing is local); a split is refused while a receive of another lane's
/// context is posted.
#[test]
fn messages_before_the_split_and_mixed_lane_counts() {
    if is_rank() {
        let n = 4;
        let (c2, c3) = (ctx_for(2, n, 0), ctx_for(3, n, 0));
        let mut e = Engine::init().unwrap();
        if e.p2p_ref().rank() == 1 {
            // No lanes here.
            let small = pattern(100, 1);
            let long = pattern(100_000, 2);
            e.send(&small, 0, 1, c2, SendMode::Standard).unwrap();
            // SAFETY: `long` outlives the request.
            let r = unsafe {
                e.p2p()
                    .isend(long.as_ptr(), long.len(), 0, 2, c3, SendMode::Standard, 0)
                    .unwrap()
            };
            e.send(&[], 0, 9, 0, SendMode::Standard).unwrap();
            let mut back = vec![0u8; 100_000];
            e.recv(&mut back, 0, 3, c3).unwrap();
            assert!(back == long);
            e.wait(r).unwrap();
            return e.finalize().unwrap();
        }
        // A receive of lane 0's context stays posted across the split.
        // SAFETY: an empty receive.
        let go = unsafe { e.p2p().irecv([].as_mut_ptr(), 0, 1, 9, 0, 0).unwrap() };
        // Wait until both have arrived (unexpected), on the engine before its split.
        let t = Instant::now();
        while e.iprobe(1, 2, c3).unwrap().is_none() || e.iprobe(1, 1, c2).unwrap().is_none() {
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "messages did not arrive"
            );
            std::thread::yield_now();
        }
        let mut lanes = e.into_lanes(n, pair_route).unwrap();
        assert_eq!(lanes[0].wait(go).unwrap().tag, 9);
        let mut buf = vec![0u8; 100_000];
        let s = lanes[2].recv(&mut buf, 1, 1, c2).unwrap();
        assert!(buf[..s.len] == pattern(100, 1)[..]);
        assert!(lanes[0].iprobe(ANY_SOURCE, ANY_TAG, c3).unwrap().is_none());
        let s = lanes[3].recv(&mut buf, 1, 2, c3).unwrap();
        assert_eq!(s.len, 100_000);
        assert!(buf == pattern(100_000, 2));
        lanes[3].send(&buf, 1, 3, c3, SendMode::Standard).unwrap();
        for e in lanes.into_iter().rev() {
            e.finalize().unwrap();
        }
        return;
    }
    let out = run_ranks("messages_before_the_split_and_mixed_lane_counts", 2, &[]);
    assert!(out.success(), "{out:?}");
}

/// A split is refused, with a message that says why, while a receive on another lane's
/// context is posted; the engine is as it was (`split_lanes`), and splits once it is gone.
#[test]
fn split_refused_while_another_lanes_receive_is_posted() {
    if is_rank() {
        let mut e = Engine::init().unwrap();
        let mut buf = [0u8; 8];
        // SAFETY: `buf` outlives the request, cancelled and completed below.
        let r = unsafe {
            e.p2p()
                .irecv(buf.as_mut_ptr(), 8, ANY_SOURCE, 1, ctx_for(1, 4, 0), 0)
                .unwrap()
        };
        match e.split_lanes(4, pair_route) {
            Err(AdiError::Lanes(why)) => assert!(why.contains("context"), "{why}"),
            Err(other) => panic!("wrong error: {other}"),
            Ok(_) => panic!("split with another lane's receive posted"),
        }
        e.p2p().cancel(r).unwrap();
        assert!(e.wait(r).unwrap().cancelled);
        let mut lanes = e.into_lanes(4, pair_route).unwrap();
        // Lane 1 works: a message to this very process on its context.
        let ctx = ctx_for(1, 4, 0);
        lanes[1]
            .send(b"12345678", 0, 1, ctx, SendMode::Standard)
            .unwrap();
        lanes[1].recv(&mut buf, 0, 1, ctx).unwrap();
        assert_eq!(&buf, b"12345678");
        for e in lanes {
            e.finalize().unwrap();
        }
        return;
    }
    let out = run_ranks(
        "split_refused_while_another_lanes_receive_is_posted",
        1,
        &[],
    );
    assert!(out.success(), "{out:?}");
}

/// Peers of other jobs join the channel all lanes share: added through lane 1, reached from
/// lanes 2 and 3 (eager and rendezvous, both ways, every byte checked), removed through lane 0.
/// The two ranks of one job connect to each other by TCP as well and so are also each
/// other's peer of "another job", engine rank 2.
#[test]
fn peers_of_other_jobs_on_every_lane() {
    if is_rank() {
        let n = 4;
        let mut lanes = Engine::init().unwrap().into_lanes(n, pair_route).unwrap();
        let me = lanes[0].p2p_ref().rank();
        let sock = if me == 0 {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let port = l.local_addr().unwrap().port().to_le_bytes();
            lanes[0].send(&port, 1, 1, 0, SendMode::Standard).unwrap();
            l.accept().unwrap().0
        } else {
            let mut port = [0u8; 2];
            lanes[0].recv(&mut port, 0, 1, 0).unwrap();
            std::net::TcpStream::connect(("127.0.0.1", u16::from_le_bytes(port))).unwrap()
        };
        assert_eq!(lanes[1].p2p().add_peers(vec![sock]).unwrap(), [2]);
        std::thread::scope(|s| {
            for (lane, e) in lanes.iter_mut().enumerate().skip(2) {
                s.spawn(move || {
                    let ctx = ctx_for(lane, n, 0);
                    for len in [100usize, 200_000] {
                        let m = pattern(len, lane * 10 + me);
                        let want = pattern(len, lane * 10 + (1 - me));
                        let mut buf = vec![0u8; len];
                        // SAFETY: `m` outlives the request, waited for below.
                        let r = unsafe {
                            e.p2p()
                                .isend(m.as_ptr(), len, 2, 4, ctx, SendMode::Standard, 0)
                                .unwrap()
                        };
                        let st = e.recv(&mut buf, 2, 4, ctx).unwrap();
                        assert_eq!((st.source, st.len), (2, len));
                        assert!(
                            buf == want,
                            "lane {lane}, {len} B from the peer: data differs"
                        );
                        e.wait(r).unwrap();
                    }
                });
            }
        });
        lanes[0].send(&[], 2, 5, 0, SendMode::Standard).unwrap();
        lanes[0].recv(&mut [], 2, 5, 0).unwrap();
        lanes[0].p2p().remove_peers(&[2]);
        for e in lanes {
            e.finalize().unwrap();
        }
        return;
    }
    let out = run_ranks("peers_of_other_jobs_on_every_lane", 2, &[]);
    assert!(out.success(), "{out:?}");
}
