//! A one-rank job that sends 8-byte messages to itself: the whole BIP send and receive path
//! in one process, with no waiting, for counting instructions per message:
//!
//! ```text
//! cargo build --release --example self_loop
//! valgrind --tool=callgrind --trace-children=yes target/release/examples/self_loop 100000
//! ```
//! Compare the totals of two iteration counts to cancel start-up.

use bip_core::{Bip, BipConfig};
use nic_model::{AnyNic, Job, JobConfig};

fn main() {
    let iters: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(100_000);
    if std::env::var_os("NIC_RANK").is_none() {
        let job = Job::new(&JobConfig::new(1)).expect("job");
        let exe = std::env::current_exe().unwrap();
        let out = job
            .run(|_| {
                let mut c = std::process::Command::new(&exe);
                c.arg(iters.to_string());
                c
            }, std::time::Duration::from_secs(1), None)
            .expect("run");
        std::process::exit(if out.success() { 0 } else { 1 });
    }
    let mut bip = Bip::new(AnyNic::from_env().unwrap(), BipConfig::from_env()).unwrap();
    let msg = [7u8; 8];
    let mut buf = [0u8; 8];
    for _ in 0..iters {
        bip.send(0, 1, &msg).unwrap();
        let (n, src) = bip.recv(1, &mut buf).unwrap();
        assert_eq!((n, src), (8, 0));
    }
    bip.finalize().unwrap();
}
