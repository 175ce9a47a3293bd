//! Message rate of T threads per process, each streaming 8-byte messages on a context of its
//! own, two processes: each thread on its own lane ([`Engine::into_lanes`]) against all
//! threads on one engine behind one lock (as `MPI_THREAD_MULTIPLE` without lanes), in the
//! same run.
//!
//! ```text
//! cargo run --release -p mpich-channel --example lane_rate [threads] [messages-per-thread] [rounds]
//! ```
//! It launches itself as a two-rank job; `MPI_CHANNEL` picks the channel. A round runs
//! "one lock" (all threads on lane 0's engine, each on its own context, one mutex around the
//! engine, released between two looks, as the C layer's lock is), then "lanes"; the median of
//! the rounds is printed, with the first run on the engine before the split ("no lanes").

use mpich_channel::lanes::contexts_of;
use mpich_channel::{pair_route, Engine, ReqId, SendMode};
use std::sync::Mutex;

#[path = "common/launch.rs"]
mod launch;
use std::time::Instant;

/// Messages in flight per thread before it waits for them and for the receiver's go-ahead.
const WINDOW: usize = 64;

/// One thread's side of the stream on `ctx`: windows of 8-byte nonblocking sends (rank 0) or
/// receives (rank 1), each message numbered and checked, one go-ahead per window back. `with`
/// runs a step on the thread's engine (under the lock, for the shared engine).
fn stream<F>(with: F, me: usize, thread: usize, ctx: u16, msgs: usize)
where
    F: Fn(&mut dyn FnMut(&mut Engine)),
{
    let mut bufs = vec![[0u8; 8]; WINDOW];
    for w in 0..msgs / WINDOW {
        let mut ids: Vec<ReqId> = Vec::with_capacity(WINDOW);
        for (i, b) in bufs.iter_mut().enumerate() {
            let seq = (thread << 48 | (w * WINDOW + i)) as u64;
            with(&mut |e| {
                // SAFETY: `bufs` outlives the requests, all completed in this window.
                ids.push(unsafe {
                    if me == 0 {
                        *b = seq.to_le_bytes();
                        e.p2p()
                            .isend(b.as_ptr(), 8, 1, 0, ctx, SendMode::Standard, 0)
                            .unwrap()
                    } else {
                        e.p2p().irecv(b.as_mut_ptr(), 8, 0, 0, ctx, 0).unwrap()
                    }
                })
            });
        }
        // Look, then let the lock go and back off between looks (`Calling::wait_until`).
        let mut left = ids.len();
        let mut spins = 0u32;
        while left > 0 {
            with(&mut |e| {
                e.progress().unwrap();
                for id in ids.iter_mut().filter(|id| **id != ReqId::MAX) {
                    if e.p2p().take(*id).unwrap().is_some() {
                        *id = ReqId::MAX;
                        left -= 1;
                    }
                }
            });
            spins += 1;
            if spins & 15 == 0 {
                std::thread::yield_now();
            }
        }
        if me == 1 {
            for (i, b) in bufs.iter().enumerate() {
                let want = (thread << 48 | (w * WINDOW + i)) as u64;
                assert_eq!(u64::from_le_bytes(*b), want, "message out of place");
            }
        }
        // The go-ahead, so that the sender does not run ahead of the receives.
        let mut id = ReqId::MAX;
        with(&mut |e| {
            // SAFETY: empty messages.
            id = unsafe {
                if me == 1 {
                    e.p2p()
                        .isend([].as_ptr(), 0, 0, 1, ctx, SendMode::Standard, 0)
                        .unwrap()
                } else {
                    e.p2p().irecv([].as_mut_ptr(), 0, 1, 1, ctx, 0).unwrap()
                }
            }
        });
        let mut done = false;
        while !done {
            with(&mut |e| done = e.test(id).unwrap().is_some());
            if !done {
                std::thread::yield_now();
            }
        }
    }
}

/// Both ranks start the next run together (a 0-byte exchange on world's context, lane 0).
fn barrier(e: &mut Engine) {
    let peer = 1 - e.p2p_ref().rank();
    e.send(&[], peer, 7, 0, SendMode::Standard).unwrap();
    e.recv(&mut [], peer as i32, 7, 0).unwrap();
}

/// All threads on one engine behind one lock, thread `t` on context `ctxs[t]`: seconds.
fn one_lock(e: &mut Engine, ctxs: &[u16], msgs: usize) -> f64 {
    barrier(e);
    let me = e.p2p_ref().rank();
    let shared = Mutex::new(e);
    let t0 = Instant::now();
    std::thread::scope(|s| {
        for (t, &ctx) in ctxs.iter().enumerate() {
            let shared = &shared;
            s.spawn(move || {
                let with = |f: &mut dyn FnMut(&mut Engine)| f(&mut shared.lock().unwrap());
                stream(with, me, t, ctx, msgs)
            });
        }
    });
    t0.elapsed().as_secs_f64()
}

/// Thread `t` on lane `t`, on that lane's context: seconds.
fn on_lanes(lanes: &mut [Engine], msgs: usize) -> f64 {
    let n = lanes.len();
    barrier(&mut lanes[0]);
    let me = lanes[0].p2p_ref().rank();
    let t0 = Instant::now();
    std::thread::scope(|s| {
        for (t, e) in lanes.iter_mut().enumerate() {
            s.spawn(move || {
                let cell = std::cell::RefCell::new(e);
                let with = |f: &mut dyn FnMut(&mut Engine)| f(&mut cell.borrow_mut());
                stream(with, me, t, contexts_of(t, n).next().unwrap(), msgs)
            });
        }
    });
    t0.elapsed().as_secs_f64()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    // Launch ourselves as ranks 0 and 1 (not pinned: the threads need both cores).
    launch::as_two_ranks(false);
    let arg = |i: usize, d: usize| {
        std::env::args()
            .nth(i)
            .and_then(|a| a.parse().ok())
            .unwrap_or(d)
    };
    let (threads, msgs, rounds) = (arg(1, 4), arg(2, 20_000), arg(3, 5));
    let msgs = msgs.div_ceil(WINDOW) * WINDOW;
    let mut e = Engine::init().expect("starting the ADI");
    let me = e.p2p_ref().rank();
    let total = (threads * msgs) as f64;
    // Contexts that all go to lane 0 of `threads` lanes: the one-lock runs use them.
    let lane0: Vec<u16> = contexts_of(0, threads).take(threads).collect();
    let unsplit = one_lock(&mut e, &lane0, msgs);
    let mut lanes = e.into_lanes(threads, pair_route).expect("making lanes");
    let (mut one, mut many) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        one.push(total / one_lock(&mut lanes[0], &lane0, msgs));
        many.push(total / on_lanes(&mut lanes, msgs));
    }
    if me == 0 {
        let name = lanes[0].p2p_ref().channel_name();
        println!(
            "{name} channel, {threads} threads x {msgs} 8-byte messages, median of {rounds} rounds:"
        );
        println!(
            "  no lanes, one lock : {:>8.3} M msg/s (one run)",
            total / unsplit / 1e6
        );
        println!("  lane 0, one lock   : {:>8.3} M msg/s", median(one) / 1e6);
        println!(
            "  {threads} lanes           : {:>8.3} M msg/s",
            median(many) / 1e6
        );
    }
    for e in lanes {
        e.finalize().unwrap();
    }
}
