//! A one-rank job sending 8-byte FM 2.x messages to itself, for counting instructions per
//! message (send + extract + handler) under callgrind, as `bip-core/examples/self_loop.rs`
//! does for BIP:
//!
//! ```text
//! cargo build --release --example fm_self_loop
//! valgrind --tool=callgrind --trace-children=yes target/release/examples/fm_self_loop 10000
//! ```

use fm_streams::Fm;
use nic_model::{AnyNic, Job, JobConfig};
use std::cell::Cell;
use std::rc::Rc;

fn main() {
    let iters: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(100_000);
    if std::env::var_os("NIC_RANK").is_none() {
        let job = Job::new(&JobConfig::new(1)).expect("creating the job");
        let exe = std::env::current_exe().expect("own path");
        let out = job
            .run(
                |_| {
                    let mut c = std::process::Command::new(&exe);
                    c.arg(iters.to_string());
                    c
                },
                std::time::Duration::from_secs(1),
                None,
            )
            .expect("running the job");
        std::process::exit(if out.success() { 0 } else { 1 });
    }
    let mut fm = Fm::new(AnyNic::from_env().expect("attach")).expect("FM");
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
