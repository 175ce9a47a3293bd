//! FM 2.x over real processes: gather on the send side and scatter on the receive side with
//! piece sizes that match neither each other nor the packets, 0 B to 16 MiB.

use fm_streams::Fm;
use nic_model::testing::{is_rank, run_ranks};
use nic_model::DeviceStack;
use std::cell::RefCell;
use std::rc::Rc;

fn pattern(len: usize, seed: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i.wrapping_mul(131) ^ seed.wrapping_mul(17) ^ (i >> 9)) as u8)
        .collect()
}

const SIZES: &[usize] = &[
    0,
    1,
    8,
    100,
    4000,
    4100,
    20_000,
    40_000,
    65_536,
    100_003,
    1 << 20,
    (1 << 20) + 7,
    16 << 20,
];

/// Receives a message in pieces of `sizes` (cycled), into one buffer.
/// Messages a handler has received: (sender, contents).
type Inbox = Rc<RefCell<Vec<(usize, Vec<u8>)>>>;

fn scatter_handler(inbox: Inbox, sizes: &'static [usize]) -> impl Fn(&mut fm_streams::Stream<'_>) {
    move |s| {
        let total = s.size() as usize;
        let mut buf = vec![0u8; total];
        let mut at = 0;
        let mut k = 0;
        while at < total {
            let n = sizes[k % sizes.len()].min(total - at);
            assert_eq!(s.receive(&mut buf[at..at + n]), n);
            at += n;
            k += 1;
        }
        assert_eq!(s.remaining(), 0);
        let from = s.sender();
        inbox.borrow_mut().push((from, buf));
    }
}

fn gather_send(fm: &mut Fm<DeviceStack>, dest: usize, data: &[u8], pieces: &[usize]) {
    let mut s = fm.begin_message(dest, data.len() as u64, 1).unwrap();
    let mut at = 0;
    let mut k = 0;
    while at < data.len() {
        let n = pieces[k % pieces.len()].min(data.len() - at);
        fm.send_piece(&mut s, &data[at..at + n]).unwrap();
        at += n;
        k += 1;
    }
    fm.end_message(s).unwrap();
}

fn wait_for(fm: &mut Fm<DeviceStack>, inbox: &Inbox, n: usize) {
    let t = std::time::Instant::now();
    while inbox.borrow().len() < n {
        fm.extract(usize::MAX).unwrap();
        assert!(t.elapsed().as_secs() < 30, "timed out waiting for messages");
    }
}

fn gather_scatter_body() {
    let mut fm = Fm::new(DeviceStack::from_env().unwrap()).unwrap();
    let inbox = Rc::new(RefCell::new(Vec::new()));
    // Receive side: a header-sized piece, then odd sizes, then big ones.
    fm.set_handler(
        1,
        scatter_handler(inbox.clone(), &[8, 333, 4096, 70_000, 1]),
    )
    .unwrap();
    let me = fm.rank();
    let peer = 1 - me;
    for (i, &len) in SIZES.iter().enumerate() {
        let data = pattern(len, i);
        if me == 0 {
            gather_send(&mut fm, peer, &data, &[5, 1000, 50_000, 3]);
            wait_for(&mut fm, &inbox, 1);
            let (from, back) = inbox.borrow_mut().pop().unwrap();
            assert_eq!(from, peer);
            assert!(back == data, "echo of {len} bytes differs");
        } else {
            wait_for(&mut fm, &inbox, 1);
            let (from, got) = inbox.borrow_mut().pop().unwrap();
            assert_eq!(from, peer);
            assert!(got == data, "message of {len} bytes differs");
            gather_send(&mut fm, peer, &got, &[40_000, 7, 4003]);
        }
    }
    let c = fm.counters();
    assert!(c.bulk_direct + c.bulk_staged > 0, "no bulk transfer: {c:?}");
    assert!(c.suspensions > 0, "handlers never waited: {c:?}");
}

#[test]
fn gather_scatter_0_to_16mib() {
    if is_rank() {
        return gather_scatter_body();
    }
    let out = run_ranks("gather_scatter_0_to_16mib", 2, &[]);
    assert!(out.success(), "{out:?}");
}

#[test]
fn gather_scatter_packet_fallback() {
    if is_rank() {
        return gather_scatter_body();
    }
    let out = run_ranks(
        "gather_scatter_packet_fallback",
        2,
        &[("MPI_NIC_DMA", "off")],
    );
    assert!(out.success(), "{out:?}");
}
