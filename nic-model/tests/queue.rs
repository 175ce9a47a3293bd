//! The inbox under load, with real processes: several senders flood one receiver at once with
//! packets that alternate between fast-box size and queue size, while the receiver now and
//! then stops polling so that boxes and the queue fill up (and small packets wait behind large
//! ones and the other way round). Every packet must arrive once, in the order its sender sent it, every byte intact;
//! also when the receiver's pool has fewer fast boxes than it has senders (some senders then
//! use the queue only). Bounded: each rank gives up after 30 s, the job after 60 s.

use nic_model::testing::{is_rank, run_ranks_with};
use nic_model::{poll_bytes, send_bytes, Device, JobConfig, Nic, PeerStatus};
use std::time::{Duration, Instant};

const PACKETS: u32 = 4000;
const LIMIT: Duration = Duration::from_secs(30);

/// Packet `i` of `src`: runs of small packets (they fit a fast box) and large ones (queue
/// only), of varying lengths; every byte depends on `src`, `i` and its position.
fn packet(src: usize, i: u32, box_mtu: usize, mtu: usize) -> Vec<u8> {
    let small = (i / 5 + i % 3).is_multiple_of(2);
    let len = if small {
        8 + (i as usize * 7 + src) % (box_mtu - 7)
    } else {
        box_mtu + 1 + (i as usize * 131 + src * 17) % (mtu - box_mtu)
    };
    let mut p: Vec<u8> = (0..len)
        .map(|k| (k as u32).wrapping_mul(97) ^ i.wrapping_mul(13) ^ (src as u32) << 4)
        .map(|x| x as u8)
        .collect();
    p[..4].copy_from_slice(&i.to_le_bytes());
    p
}

fn flood_body(box_mtu: usize) {
    let mut nic = Nic::from_env().unwrap();
    let (me, n) = (nic.rank(), nic.nranks());
    let mtu = nic.capabilities().mtu;
    let start = Instant::now();
    if me != 0 {
        for i in 0..PACKETS {
            let p = packet(me, i, box_mtu, mtu);
            while !send_bytes(&mut nic, 0, &p) {
                assert_ne!(nic.peer_status(0), PeerStatus::Dead, "the receiver died");
                assert!(start.elapsed() < LIMIT, "rank {me}: stuck at packet {i}");
                std::thread::yield_now();
            }
        }
        nic.finalize();
        return;
    }
    let mut next = vec![0u32; n];
    let mut received = 0u64;
    let total = PACKETS as u64 * (n as u64 - 1);
    let mut pauses = 0;
    while received < total {
        assert!(
            start.elapsed() < LIMIT,
            "received {received} of {total}: next expected {next:?}"
        );
        // Stop polling now and then, long enough for the senders to fill boxes and queue.
        if received >= (pauses + 1) * 1500 {
            pauses += 1;
            std::thread::sleep(Duration::from_millis(30));
        }
        match poll_bytes(&mut nic) {
            Some((src, p)) => {
                assert!(src != 0 && src < n, "packet from rank {src}");
                let i = next[src];
                assert!(i < PACKETS, "more packets from {src} than were sent");
                assert!(
                    p == packet(src, i, box_mtu, mtu),
                    "packet {i} from rank {src}: lost, reordered or corrupt (got number {})",
                    u32::from_le_bytes(p[..4].try_into().unwrap())
                );
                next[src] += 1;
                received += 1;
            }
            None => std::thread::yield_now(),
        }
    }
    assert!(next[1..].iter().all(|&k| k == PACKETS), "{next:?}");
    std::thread::sleep(Duration::from_millis(20));
    assert!(
        poll_bytes(&mut nic).is_none(),
        "more packets than were sent"
    );
    assert_eq!(nic.counters().packets_rx, total);
    nic.finalize();
}

/// Small queue and boxes, so that both fill up.
fn config(nranks: usize, boxes: usize) -> JobConfig {
    let mut cfg = JobConfig::new(nranks);
    cfg.queue_slots = 16;
    cfg.slot_bytes = 2048;
    cfg.box_count = boxes;
    cfg.box_slots = 8;
    cfg.box_slot_bytes = 256;
    cfg
}

const BOX_MTU: usize = 256 - 24;

fn run(name: &str, cfg: &JobConfig) {
    let out = run_ranks_with(name, cfg, &[], Duration::from_secs(60));
    assert!(out.success(), "{out:?}");
}

#[test]
fn a_flood_from_four_senders_arrives_in_order_with_every_byte() {
    if is_rank() {
        return flood_body(BOX_MTU);
    }
    run(
        "a_flood_from_four_senders_arrives_in_order_with_every_byte",
        &config(5, 5),
    );
}

#[test]
fn senders_without_a_fast_box_still_arrive_in_order() {
    if is_rank() {
        return flood_body(BOX_MTU);
    }
    // Two boxes for four senders: the two that come last use the queue only.
    run(
        "senders_without_a_fast_box_still_arrive_in_order",
        &config(5, 2),
    );
}
