//! A one-rank job sending 8-byte FM 2.x messages to itself, for counting instructions per
//! message (send + extract + handler) under callgrind, as `bip-core/examples/self_loop.rs`
//! does for BIP:
//!
//! ```text
//! cargo build --release --example fm_self_loop
//! valgrind --tool=callgrind --trace-children=yes target/release/examples/fm_self_loop 10000
//! ```

use fm_streams::Fm;
use nic_model::DeviceStack;
use std::cell::Cell;
use std::rc::Rc;

fn main() {
    let iters: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
    // Outside a job, run this program again as a job of one rank.
    if let Some(code) = nic_model::testing::relaunch_as_job(1) {
        std::process::exit(code);
    }
    let mut fm = Fm::new(DeviceStack::from_env().expect("attach")).expect("FM");
    let got = Rc::new(Cell::new(0usize));
    let g = got.clone();
    fm.set_handler(1, move |s| {
        let mut b = [0u8; 8];
        s.receive(&mut b);
        g.set(g.get() + 1);
    })
    .unwrap();
    let msg = [7u8; 8];
    for i in 0..iters {
        let mut s = fm.begin_message(0, 8, 1).unwrap();
        fm.send_piece(&mut s, &msg).unwrap();
        fm.end_message(s).unwrap();
        while got.get() <= i {
            fm.extract(usize::MAX).unwrap();
        }
    }
    fm.finalize().unwrap();
}
