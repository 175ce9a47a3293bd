//! A one-rank job that sends 8-byte messages to itself: the whole BIP send and receive path
//! in one process, with no waiting, for counting instructions per message:
//!
//! ```text
//! cargo build --release --example self_loop
//! valgrind --tool=callgrind --trace-children=yes target/release/examples/self_loop 10000
//! valgrind --tool=callgrind --trace-children=yes target/release/examples/self_loop 20000
//! ```
//! The difference of the two totals over 10000 is the cost of one send plus one receive.
//! `SELF_LOOP_PLAIN=1` runs BIP over the plain `Nic` instead of `DeviceStack`, to see what the
//! run-time choice of wrappers costs.

use bip_core::{Bip, BipConfig};
use nic_model::{Device, DeviceStack, Nic};

fn main() {
    let iters: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
    // Outside a job, run this program again as a job of one rank.
    if let Some(code) = nic_model::testing::relaunch_as_job(1) {
        std::process::exit(code);
    }
    if std::env::var_os("SELF_LOOP_PLAIN").is_some() {
        run(Nic::from_env().expect("attach"), iters);
    } else {
        run(DeviceStack::from_env().expect("attach"), iters);
    }
}

fn run<D: Device>(dev: D, iters: usize) {
    let mut bip = Bip::new(dev, BipConfig::from_env()).expect("BIP");
    let msg = [7u8; 8];
    let mut buf = [0u8; 8];
    for _ in 0..iters {
        bip.send(0, 1, &msg).unwrap();
        let (n, src) = bip.recv(1, &mut buf).unwrap();
        assert_eq!((n, src), (8, 0));
    }
    bip.finalize().unwrap();
}
