//! Tag queues over real processes: messages are retrieved in order within a tag and in any
//! order across tags, for short (buffered) and long (rendezvous) messages alike; several
//! senders on one tag; many receives and sends outstanding at once.

use bip_core::{Bip, BipConfig, Request};
use nic_model::testing::{is_rank, run_ranks};
use nic_model::Nic;

/// The bytes of message `index` on `tag`, `len` long: the first 8 bytes (as far as they fit)
/// encode (tag, index), the rest is a pattern that depends on both.
fn body(tag: u32, index: u32, len: usize) -> Vec<u8> {
    let mut v: Vec<u8> = (0..len)
        .map(|i| {
            (i.wrapping_mul(131)
                ^ (index as usize).wrapping_mul(17)
                ^ (tag as usize).wrapping_mul(29)
                ^ (i >> 9)) as u8
        })
        .collect();
    let mut head = [0u8; 8];
    head[..4].copy_from_slice(&tag.to_le_bytes());
    head[4..].copy_from_slice(&index.to_le_bytes());
    let n = len.min(8);
    v[..n].copy_from_slice(&head[..n]);
    v
}

/// Checks a received message against what `body` would have made, with a precise message.
fn check(got: &[u8], tag: u32, index: u32, len: usize) {
    assert_eq!(got.len(), len, "tag {tag} message {index}: length");
    let want = body(tag, index, len);
    if got != want.as_slice() {
        let at = got.iter().zip(&want).position(|(a, b)| a != b).unwrap();
        let mut seen = [0u8; 8];
        let n = got.len().min(8);
        seen[..n].copy_from_slice(&got[..n]);
        panic!(
            "tag {tag} message {index} ({len} B): first difference at byte {at}; header says tag {} index {}",
            u32::from_le_bytes(seen[..4].try_into().unwrap()),
            u32::from_le_bytes(seen[4..].try_into().unwrap())
        );
    }
}

const TAGS: u32 = 8;
const MESSAGES: u32 = 40;
/// 16 B and 3000 B are short (one packet, and one packet under the default 4 KiB slots);
/// 20 KiB and 200 KiB are long (rendezvous, above the 16 KiB eager threshold).
const SIZES: [usize; 4] = [16, 3000, 20 << 10, 200 << 10];

/// Message `i` goes to tag `i % TAGS`; sizes are mixed within each tag.
fn plan(i: u32) -> (u32, usize) {
    (i % TAGS, SIZES[((i / TAGS + i) % 4) as usize])
}

fn reverse_tags_body() {
    let mut bip = Bip::new(Nic::from_env().unwrap(), BipConfig::from_env()).unwrap();
    let me = bip.mynode();
    if me == 0 {
        // Every message is posted before rank 1 asks for any of tag 0, so blocking sends of
        // long messages would deadlock: send them all without waiting, then wait for all.
        let bufs: Vec<(u32, Vec<u8>)> = (0..MESSAGES)
            .map(|i| {
                let (tag, len) = plan(i);
                (tag, body(tag, i, len))
            })
            .collect();
        let mut reqs: Vec<Request> = Vec::new();
        for (tag, b) in &bufs {
            // SAFETY: `bufs` is neither moved nor modified until every request is waited for.
            reqs.push(unsafe { bip.isend(1, *tag, b.as_ptr(), b.len()) }.unwrap());
        }
        for (i, r) in reqs.into_iter().enumerate() {
            let c = bip.wait(r).unwrap();
            assert_eq!(
                (c.len, c.peer, c.tag),
                (bufs[i].1.len(), 1, bufs[i].0),
                "send {i} completion"
            );
        }
        // Rank 1 tells us when it has everything, so that finalize finds nothing in flight.
        let mut done = [0u8; 4];
        assert_eq!(bip.recv(TAGS, &mut done).unwrap(), (4, 1));
        assert_eq!(&done, b"done");
    } else {
        let mut buf = vec![0u8; (200 << 10) + 64];
        let mut total = 0;
        for tag in (0..TAGS).rev() {
            for i in (0..MESSAGES).filter(|i| i % TAGS == tag) {
                let (_, len) = plan(i);
                let (n, src) = bip.recv(tag, &mut buf).unwrap();
                assert_eq!(src, 0);
                check(&buf[..n], tag, i, len);
                total += 1;
            }
        }
        assert_eq!(total, MESSAGES);
        let c = bip.counters();
        assert_eq!(c.messages_received, MESSAGES as u64);
        // The long messages of tags 0..7 were announced long before they were asked for: they
        // waited as announcements, not as buffered data; the short ones were buffered.
        assert!(
            c.buffered_peak > 0,
            "short messages should have been buffered: {c:?}"
        );
        assert_eq!(
            c.buffered_bytes, 0,
            "everything buffered was delivered: {c:?}"
        );
        bip.send(0, TAGS, b"done").unwrap();
    }
    bip.finalize().unwrap();
}

#[test]
fn reverse_tag_order_keeps_per_tag_order() {
    if is_rank() {
        return reverse_tags_body();
    }
    let out = run_ranks("reverse_tag_order_keeps_per_tag_order", 2, &[]);
    assert!(out.success(), "{out:?}");
}

#[test]
fn reverse_tag_order_packet_fallback() {
    if is_rank() {
        return reverse_tags_body();
    }
    let out = run_ranks(
        "reverse_tag_order_packet_fallback",
        2,
        &[("MPI_NIC_DMA", "off")],
    );
    assert!(out.success(), "{out:?}");
}

/// Messages each sender sends to rank 0 on the shared tag.
const PER_SENDER: u32 = 150;
const SHARED_TAG: u32 = 3;

fn sender_size(src: usize, i: u32) -> usize {
    match (i + src as u32) % 5 {
        0 => 0,
        1 => 8,
        2 => 5000,             // short, two packets
        3 => 100 + i as usize, // short, one packet
        _ => 17 << 10,         // long
    }
}

fn two_senders_body() {
    let mut bip = Bip::new(Nic::from_env().unwrap(), BipConfig::from_env()).unwrap();
    let me = bip.mynode();
    assert_eq!(bip.numnodes(), 3);
    if me == 0 {
        let mut buf = vec![0u8; 32 << 10];
        let mut next = [0u32; 3];
        for _ in 0..2 * PER_SENDER {
            let (n, src) = bip.recv(SHARED_TAG, &mut buf).unwrap();
            assert!(src == 1 || src == 2, "unexpected sender {src}");
            let i = next[src];
            assert!(
                i < PER_SENDER,
                "more than {PER_SENDER} messages from rank {src}"
            );
            // The tag field of the contents carries the sender, so a mix-up between the two
            // senders' messages shows.
            check(&buf[..n], src as u32, i, sender_size(src, i));
            next[src] += 1;
        }
        assert_eq!(next, [0, PER_SENDER, PER_SENDER]);
        for src in [1, 2] {
            bip.send(src, SHARED_TAG + 1, b"done").unwrap();
        }
    } else {
        for i in 0..PER_SENDER {
            let b = body(me as u32, i, sender_size(me, i));
            bip.send(0, SHARED_TAG, &b).unwrap();
        }
        let mut done = [0u8; 8];
        assert_eq!(bip.recv(SHARED_TAG + 1, &mut done).unwrap(), (4, 0));
    }
    bip.finalize().unwrap();
}

#[test]
fn two_senders_one_tag_keep_per_sender_order() {
    if is_rank() {
        return two_senders_body();
    }
    let out = run_ranks("two_senders_one_tag_keep_per_sender_order", 3, &[]);
    assert!(out.success(), "{out:?}");
}

/// Tags and messages of the nonblocking test: `NB_TAGS` tags, `NB_PER_TAG` messages each.
const NB_TAGS: u32 = 5;
const NB_PER_TAG: u32 = 8;
const GO_TAG: u32 = 100;

fn nb_size(tag: u32, k: u32) -> usize {
    [
        1,
        64,
        4000,
        9000,
        24 << 10,
        (24 << 10) + 1,
        100_000,
        1 << 20,
    ][((tag + k) % 8) as usize]
}

fn nonblocking_body() {
    let mut bip = Bip::new(Nic::from_env().unwrap(), BipConfig::from_env()).unwrap();
    let me = bip.mynode();
    let n = NB_TAGS * NB_PER_TAG;
    if me == 1 {
        // Post every receive first, each with its own buffer; only then let the sender go.
        let mut bufs: Vec<Vec<u8>> = (0..n).map(|_| vec![0xEEu8; (1 << 20) + 16]).collect();
        let mut reqs = Vec::new();
        for tag in 0..NB_TAGS {
            for k in 0..NB_PER_TAG {
                let b = &mut bufs[(tag * NB_PER_TAG + k) as usize];
                // SAFETY: each buffer is used by exactly one request and is not touched (nor is
                // `bufs` moved or resized) until that request is waited for.
                reqs.push((
                    tag,
                    k,
                    unsafe { bip.irecv(tag, b.as_mut_ptr(), b.len()) }.unwrap(),
                ));
            }
        }
        assert_eq!(bip.counters().messages_received, 0);
        bip.send(0, GO_TAG, b"go").unwrap();
        // Wait in an order unrelated to the posting order: last tag first, odd slots first.
        reqs.sort_by_key(|&(tag, k, _)| (std::cmp::Reverse(tag), k % 2 == 0, k));
        for (tag, k, r) in reqs {
            let c = bip.wait(r).unwrap();
            let len = nb_size(tag, k);
            assert_eq!(
                (c.len, c.peer, c.tag),
                (len, 0, tag),
                "receive {k} of tag {tag}"
            );
            let b = &bufs[(tag * NB_PER_TAG + k) as usize];
            // Receives of one tag match messages of that tag in order.
            check(&b[..len], tag, k, len);
            assert!(
                b[len..].iter().all(|&x| x == 0xEE),
                "tag {tag} message {k}: written past its end"
            );
        }
        assert_eq!(bip.counters().messages_received, n as u64);
        assert_eq!(
            bip.counters().buffered_peak,
            0,
            "every message had a posted receive"
        );
        bip.send(0, GO_TAG, b"done").unwrap();
    } else {
        let mut go = [0u8; 2];
        assert_eq!(bip.recv(GO_TAG, &mut go).unwrap(), (2, 1));
        // Interleave the tags: message k of every tag, then k + 1 ...
        let mut bufs = Vec::new();
        for k in 0..NB_PER_TAG {
            for tag in 0..NB_TAGS {
                bufs.push((tag, body(tag, k, nb_size(tag, k))));
            }
        }
        let mut reqs = Vec::new();
        for (tag, b) in &bufs {
            // SAFETY: `bufs` is not modified or moved until every request is waited for.
            reqs.push(unsafe { bip.isend(1, *tag, b.as_ptr(), b.len()) }.unwrap());
        }
        // Test (without waiting) until all are done, in reverse order, to exercise `test`.
        let mut left: Vec<(usize, Request)> = reqs.into_iter().enumerate().rev().collect();
        let start = std::time::Instant::now();
        while !left.is_empty() {
            let mut still = Vec::new();
            for (i, r) in left {
                match bip.test(r).unwrap() {
                    Some(c) => assert_eq!((c.len, c.peer, c.tag), (bufs[i].1.len(), 1, bufs[i].0)),
                    None => still.push((i, r)),
                }
            }
            left = still;
            assert!(start.elapsed().as_secs() < 20, "sends did not complete");
        }
        let mut done = [0u8; 4];
        assert_eq!(bip.recv(GO_TAG, &mut done).unwrap(), (4, 1));
        assert_eq!(&done, b"done");
    }
    bip.finalize().unwrap();
}

#[test]
fn many_outstanding_irecvs_and_isends() {
    if is_rank() {
        return nonblocking_body();
    }
    let out = run_ranks("many_outstanding_irecvs_and_isends", 2, &[]);
    assert!(out.success(), "{out:?}");
}
