//! Flow control of short messages: a sender far ahead of a slow receiver waits for credit
//! instead of losing messages or making the receiver buffer without bound.

use bip_core::config::{DEFAULT_EAGER_MAX, ENVELOPE_COST};
use bip_core::{Bip, BipConfig};
use nic_model::testing::{is_rank, run_ranks};
use nic_model::Nic;
use std::time::{Duration, Instant};

const SHORT_LIMIT: usize = 65536;
const LEN: usize = 1000;
const TAG: u32 = 9;
const DONE_TAG: u32 = 10;

fn message(src: usize, i: u32) -> Vec<u8> {
    let mut v: Vec<u8> = (0..LEN)
        .map(|k| (k as u32 ^ i.wrapping_mul(2_654_435_761) ^ (src as u32 * 77)) as u8)
        .collect();
    v[..4].copy_from_slice(&i.to_le_bytes());
    v[4..8].copy_from_slice(&(src as u32).to_le_bytes());
    v
}

/// The credit each sender gets, as `BipConfig::grant_per_sender` computes it.
fn grant(cfg: &BipConfig, nranks: usize) -> usize {
    (cfg.short_limit / nranks).max(cfg.eager_max + ENVELOPE_COST)
}

/// Ranks `1..n` each send `count` messages of `LEN` bytes to rank 0 as fast as they can;
/// rank 0 sleeps first, then looks at what it buffered, then receives everything in order.
fn slow_receiver_body(count: u32) {
    let cfg = BipConfig::from_env();
    assert_eq!(cfg.short_limit, SHORT_LIMIT, "the job sets BIP_SHORT_LIMIT");
    assert_eq!(cfg.eager_max, DEFAULT_EAGER_MAX);
    let mut bip = Bip::new(Nic::from_env().unwrap(), cfg.clone()).unwrap();
    let me = bip.mynode();
    let n = bip.numnodes();
    let senders = n - 1;
    let grant = grant(&cfg, n);
    let cost = LEN + ENVELOPE_COST;
    assert!(
        count as usize * cost > 10 * grant,
        "the test must send far beyond the credit"
    );
    if me == 0 {
        std::thread::sleep(Duration::from_millis(300));
        // Take in everything that has arrived (without posting receives): the senders can have
        // put at most their credit's worth in our buffers.
        let t = Instant::now();
        while t.elapsed() < Duration::from_millis(50) {
            bip.progress().unwrap();
        }
        let c = bip.counters();
        assert_eq!(c.messages_received, 0);
        let per_sender_payload = (grant / cost) * LEN;
        assert!(
            c.buffered_bytes as usize >= per_sender_payload * senders / 2,
            "the senders should have filled their credit by now: {c:?}"
        );
        assert!(
            c.buffered_bytes as usize <= grant * senders,
            "buffered beyond the credit granted: {c:?} grant {grant}"
        );

        let mut buf = vec![0u8; 2 * LEN];
        let mut next = vec![0u32; n];
        for _ in 0..count as usize * senders {
            let (len, src) = bip.recv(TAG, &mut buf).unwrap();
            assert!((1..n).contains(&src), "message from rank {src}");
            assert_eq!(len, LEN);
            let i = next[src];
            assert!(
                buf[..len] == message(src, i),
                "message {i} from rank {src} is wrong (lost, reordered or corrupt)"
            );
            next[src] += 1;
        }
        assert!(
            next[1..].iter().all(|&k| k == count),
            "per-sender counts {next:?}"
        );
        let c = bip.counters();
        assert_eq!(c.messages_received, count as u64 * senders as u64);
        assert_eq!(c.buffered_bytes, 0);
        // Bounded memory: never more than each sender's credit (payload plus envelope)...
        assert!(
            c.buffered_peak as usize <= grant * senders,
            "peak {} > {senders} x grant {grant}",
            c.buffered_peak
        );
        // ... which is within the configured limit plus one message per sender.
        assert!(
            c.buffered_peak as usize <= SHORT_LIMIT + senders * cost,
            "peak {}",
            c.buffered_peak
        );
        for p in 1..n {
            bip.send(p, DONE_TAG, b"done").unwrap();
        }
    } else {
        let start = Instant::now();
        for i in 0..count {
            bip.send(0, TAG, &message(me, i)).unwrap();
        }
        let took = start.elapsed();
        let c = bip.counters();
        assert!(
            c.credit_waits > 0,
            "the sender never had to wait for credit: {c:?}"
        );
        assert_eq!(c.messages_sent, count as u64);
        // The receiver slept 300 ms before taking anything; with a bounded buffer the sender
        // could not have finished before it woke up.
        assert!(
            took >= Duration::from_millis(100),
            "sent {count} messages in {took:?} to a sleeping receiver"
        );
        let mut done = [0u8; 4];
        assert_eq!(bip.recv(DONE_TAG, &mut done).unwrap(), (4, 0));
    }
    bip.finalize().unwrap();
}

#[test]
fn fast_sender_slow_receiver_waits_for_credit() {
    if is_rank() {
        return slow_receiver_body(5000);
    }
    let t = Instant::now();
    let out = run_ranks(
        "fast_sender_slow_receiver_waits_for_credit",
        2,
        &[("BIP_SHORT_LIMIT", "65536")],
    );
    assert!(out.success(), "{out:?}");
    println!("took {:?}", t.elapsed());
}

#[test]
fn two_fast_senders_share_the_limit() {
    if is_rank() {
        return slow_receiver_body(2000);
    }
    let t = Instant::now();
    let out = run_ranks(
        "two_fast_senders_share_the_limit",
        3,
        &[("BIP_SHORT_LIMIT", "65536")],
    );
    assert!(out.success(), "{out:?}");
    println!("took {:?}", t.elapsed());
}
