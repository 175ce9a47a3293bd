//! `lend` skips the rest of a poll's work after most deliveries (that is what makes a stream
//! of short messages cheap); a flood of arrivals must still not starve what waits to be sent.
//!
//! Rank 1 exhausts its credit towards rank 0, so that its next message is queued; rank 0
//! consumes what it got (its credit goes back to rank 1) and floods rank 1 with short messages.
//! While rank 1 only calls `lend`, and every call delivers one of those, its queued message
//! must go out within a bounded number of deliveries.

use bip_core::config::ENVELOPE_COST;
use bip_core::{Bip, BipConfig};
use nic_model::testing::{is_rank, run_ranks};
use nic_model::Nic;
use std::time::{Duration, Instant};

/// Credit per sender: `max(SHORT_LIMIT / 2, eager_max + ENVELOPE_COST)`.
const SHORT_LIMIT: &str = "4096";
const LEN: usize = 100;
const HELLO_TAG: u32 = 1;
const FILL_TAG: u32 = 2;
const FLOOD_TAG: u32 = 3;
const FLOOD: u32 = 40;
/// `lend` runs the rest of a poll's work at least every 16 deliveries; the test allows twice
/// that.
const BOUND: u32 = 32;

fn fill_message(i: u32) -> Vec<u8> {
    (0..LEN)
        .map(|k| ((k as u32 * 7) ^ (i * 13)) as u8)
        .collect()
}

fn body() {
    let cfg = BipConfig::from_env();
    let mut bip = Bip::new(Nic::from_env().unwrap(), cfg.clone()).unwrap();
    let me = bip.mynode();
    assert!(LEN <= bip.max_packet_message());
    let grant = (cfg.short_limit / 2).max(cfg.eager_max + ENVELOPE_COST);
    let fits = (grant / (LEN + ENVELOPE_COST)) as u32;
    assert!(
        fits < 60,
        "the credit must run out before the route does ({fits})"
    );
    if me == 0 {
        bip.send(1, HELLO_TAG, b"hi").unwrap();
        std::thread::sleep(Duration::from_millis(200));
        let mut buf = vec![0u8; LEN];
        for i in 0..fits {
            assert_eq!(bip.recv(FILL_TAG, &mut buf).unwrap(), (LEN, 1));
            assert!(buf == fill_message(i), "message {i}");
        }
        for i in 0..FLOOD {
            bip.send(1, FLOOD_TAG, &i.to_le_bytes()).unwrap();
        }
        // The message rank 1 had to queue for lack of credit.
        assert_eq!(bip.recv(FILL_TAG, &mut buf).unwrap(), (LEN, 1));
        assert!(buf == fill_message(fits), "the queued message");
    } else {
        let mut hello = [0u8; 2];
        assert_eq!(bip.recv(HELLO_TAG, &mut hello).unwrap(), (2, 0));
        let messages: Vec<Vec<u8>> = (0..=fits).map(fill_message).collect();
        for m in &messages[..fits as usize] {
            // SAFETY: `messages` outlives every request (each is complete or waited for).
            let r = unsafe { bip.isend(0, FILL_TAG, m.as_ptr(), m.len()) }.unwrap();
            assert!(
                bip.test_done(r).unwrap().is_some(),
                "within credit: sent at once"
            );
        }
        let m = &messages[fits as usize];
        // SAFETY: as above; waited for below.
        let queued = unsafe { bip.isend(0, FILL_TAG, m.as_ptr(), m.len()) }.unwrap();
        assert!(
            bip.test_done(queued).unwrap().is_none(),
            "beyond the credit: queued"
        );
        assert_eq!(bip.counters().credit_waits, 1);
        // Rank 0 takes the messages in (returning credit) and floods us meanwhile.
        std::thread::sleep(Duration::from_millis(600));
        let mut sent_after = None;
        let mut empty_polls_before = 0;
        let deadline = Instant::now() + Duration::from_secs(20);
        for i in 0..FLOOD {
            let got = loop {
                if let Some(v) = bip
                    .lend(FLOOD_TAG, |src, m| {
                        (src, u32::from_le_bytes(m.try_into().unwrap()))
                    })
                    .unwrap()
                {
                    break v;
                }
                if sent_after.is_none() {
                    empty_polls_before += 1;
                }
                assert!(Instant::now() < deadline, "flood message {i} never came");
            };
            assert_eq!(got, (0, i));
            if sent_after.is_none() && bip.test_done(queued).unwrap().is_some() {
                sent_after = Some(i + 1);
            }
        }
        let sent_after = sent_after.expect("the queued message went out during the flood");
        // Only a stream that kept every `lend` busy shows the bound (an empty poll runs all of
        // a poll's work anyway).
        if empty_polls_before == 0 {
            assert!(
                sent_after <= BOUND,
                "queued message went out only after {sent_after} deliveries"
            );
        }
        println!(
            "queued message out after {sent_after} deliveries ({empty_polls_before} empty polls)"
        );
    }
    bip.finalize().unwrap();
}

#[test]
fn queued_send_goes_out_while_lend_is_kept_busy() {
    if is_rank() {
        return body();
    }
    let out = run_ranks(
        "queued_send_goes_out_while_lend_is_kept_busy",
        2,
        &[("BIP_SHORT_LIMIT", SHORT_LIMIT)],
    );
    assert!(out.success(), "{out:?}");
}
