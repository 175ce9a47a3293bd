//! Two ranks ping-pong 8-byte messages through the ADI: one-way latency (median of round
//! trip / 2), for tuning the engine without the C layer above it.
//!
//! ```text
//! cargo run --release -p mpich-channel --example adi_pingpong [round-trips]
//! ```
//! It launches itself as a two-rank job, ranks pinned to cores; `MPI_CHANNEL` picks the channel.

use mpich_channel::{Engine, SendMode};

#[path = "common/launch.rs"]
mod launch;

fn main() {
    // Launch ourselves as ranks 0 and 1, pinned to cores as `layers` does.
    launch::as_two_ranks(true);
    let iters: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20_000);
    let mut adi = Engine::init().expect("starting the ADI");
    let me = adi.p2p_ref().rank();
    let peer = 1 - me;
    let mut buf = [0u8; 8];
    let mut samples = Vec::with_capacity(iters);
    for i in 0..iters + 1000 {
        let t = std::time::Instant::now();
        if me == 0 {
            adi.send(&buf.clone(), peer, 1, 0, SendMode::Standard)
                .unwrap();
            adi.recv(&mut buf, peer as i32, 1, 0).unwrap();
        } else {
            adi.recv(&mut buf, peer as i32, 1, 0).unwrap();
            adi.send(&buf.clone(), peer, 1, 0, SendMode::Standard)
                .unwrap();
        }
        if i >= 1000 {
            samples.push(t.elapsed().as_nanos() as f64 / 2.0);
        }
    }
    samples.sort_by(|a, b| a.partial_cmp(b).unwrap());
    if me == 0 {
        println!(
            "{} channel: 8 B one-way latency {:.3} us (median of {iters})",
            adi.p2p_ref().channel_name(),
            samples[iters / 2] / 1000.0
        );
    }
    adi.finalize().unwrap();
}
