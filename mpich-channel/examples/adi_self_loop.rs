//! One process sends 8-byte messages to itself through the ADI and receives them: the cost of
//! the MPI point-to-point path in instructions, without a second process's noise.
//!
//! ```text
//! cargo build --release -p mpich-channel --example adi_self_loop
//! valgrind --tool=callgrind target/release/examples/adi_self_loop 100000
//! ```
//! Started alone, the ADI makes a one-rank job of its own. `MPI_CHANNEL` picks the channel.

use mpich_channel::{Engine, SendMode};

fn main() {
    let iters: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let mut adi = Engine::init().expect("starting the ADI");
    let msg = [7u8; 8];
    let mut buf = [0u8; 8];
    let t = std::time::Instant::now();
    for i in 0..iters {
        adi.send(&msg, 0, (i & 0xff) as i32, 0, SendMode::Standard)
            .unwrap();
        adi.recv(&mut buf, 0, (i & 0xff) as i32, 0).unwrap();
    }
    let ns = t.elapsed().as_nanos() as f64 / iters as f64;
    assert_eq!(buf, msg);
    println!(
        "{} channel: {ns:.1} ns per send+recv of 8 bytes to self",
        adi.p2p_ref().channel_name()
    );
    adi.finalize().unwrap();
}
