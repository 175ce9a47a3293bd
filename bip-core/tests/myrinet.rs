//! Under a timing profile, packets are not delivered before their modeled arrival: round
//! trips can only be slower than the model says, never faster (a correctness check, so only
//! lower bounds are asserted), and data still arrives intact.

use bip_core::{Bip, BipConfig};
use nic_model::testing::{is_rank, run_ranks};
use nic_model::{Nic, NicError, Profile};
use std::time::Instant;

const PROFILE: &str = "myrinet-lanai4";

fn ns(bytes: f64, mb_s: f64) -> u64 {
    (bytes * 1000.0 / mb_s) as u64
}

/// Modeled one-way time of a lone packet of `len` bytes through idle resources, as the profile
/// defines it (host, PCI or PIO, NIC, link, switch, NIC, PCI, host).
fn one_packet_ns(p: &Profile, len: usize) -> u64 {
    let l = len as f64;
    let pio = l <= p.pio_max_bytes;
    let mut t = p.host_send_ns as u64 + if pio { ns(l, p.pio_mb_s) } else { 0 };
    if !pio {
        t += p.dma_setup_ns as u64 + ns(l, p.pci_mb_s);
    }
    t += p.nic_send_ns as u64
        + ns(l + p.wire_header_bytes, p.link_mb_s)
        + p.switch_ns as u64
        + p.nic_recv_ns as u64;
    t + p.dma_setup_ns as u64 + ns(l, p.pci_mb_s) + p.host_recv_ns as u64
}

/// A lower bound on the one-way time of a message of `len` bytes, however it is cut into
/// packets or moved (rendezvous included): the fixed costs of one packet, plus every payload
/// byte crossing the receiver's PCI bus, which serves one packet at a time.
fn message_lower_bound_ns(p: &Profile, len: usize) -> u64 {
    let fixed = p.host_send_ns
        + p.nic_send_ns
        + p.switch_ns
        + p.nic_recv_ns
        + p.dma_setup_ns
        + p.host_recv_ns;
    fixed as u64 + ns(len as f64, p.pci_mb_s)
}

fn pattern(len: usize, seed: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i.wrapping_mul(73) ^ seed.wrapping_mul(11) ^ (i >> 10)) as u8)
        .collect()
}

const SIZES: &[usize] = &[
    0,
    8,
    100,
    1024,
    1025,
    4000,
    4100,
    16 << 10,
    24 << 10,
    (24 << 10) + 1,
    65536,
    300_000,
    1 << 20,
];

fn myrinet_body() {
    let mut bip = Bip::new(Nic::from_env().unwrap(), BipConfig::from_env()).unwrap();
    let p = bip
        .device()
        .profile()
        .expect("MPI_NIC_PROFILE is set")
        .clone();
    assert_eq!(p.name, PROFILE);
    let me = bip.mynode();
    let peer = 1 - me;
    let mut buf = vec![0u8; (1 << 20) + 64];

    // 8 B ping-pong: one packet each way; BIP's header is charged as the profile's wire
    // header (`set_protocol_header`), so the model sees 8 payload bytes.
    let rounds = 200;
    let msg = *b"8 bytes!";
    let mut rtts = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        if me == 0 {
            let t = Instant::now();
            bip.send(peer, 1, &msg).unwrap();
            let (n, _) = bip.recv(1, &mut buf).unwrap();
            rtts.push(t.elapsed().as_nanos() as u64);
            assert_eq!(&buf[..n], &msg);
        } else {
            let (n, _) = bip.recv(1, &mut buf).unwrap();
            assert_eq!(&buf[..n], &msg);
            bip.send(peer, 1, &msg).unwrap();
        }
    }
    if me == 0 {
        rtts.sort_unstable();
        let model = one_packet_ns(&p, 8);
        let (min, median) = (rtts[0] / 2, rtts[rounds / 2] / 2);
        eprintln!("8 B one-way: min {min} ns, median {median} ns, model {model} ns");
        assert!(
            model >= 3000,
            "the profile's fixed costs alone exceed 3 us: {model}"
        );
        assert!(
            median >= model,
            "median one-way {median} ns is faster than the model's {model} ns"
        );
        assert!(
            min >= model,
            "a packet arrived before its modeled time: {min} ns < {model} ns"
        );
    }

    // Every size, a few round trips each: intact, and never faster than the bound.
    for (i, &len) in SIZES.iter().enumerate() {
        let want = pattern(len, i);
        let reps = if len >= 100_000 { 2 } else { 5 };
        for _ in 0..reps {
            if me == 0 {
                let t = Instant::now();
                bip.send(peer, 2, &want).unwrap();
                let (n, src) = bip.recv(2, &mut buf).unwrap();
                let rtt = t.elapsed().as_nanos() as u64;
                assert_eq!((n, src), (len, peer));
                assert!(buf[..n] == want[..], "echo of {len} B is corrupt");
                let bound = message_lower_bound_ns(&p, len);
                assert!(
                    rtt >= 2 * bound,
                    "{len} B round trip took {rtt} ns, under the model's bound of 2 x {bound} ns"
                );
            } else {
                let (n, src) = bip.recv(2, &mut buf).unwrap();
                assert_eq!((n, src), (len, peer));
                assert!(buf[..n] == want[..], "ping of {len} B is corrupt");
                bip.send(peer, 2, &buf[..n]).unwrap();
            }
        }
    }
    bip.finalize().unwrap();
}

#[test]
fn myrinet_profile_is_never_faster_than_modeled() {
    if is_rank() {
        return myrinet_body();
    }
    let t = Instant::now();
    let out = run_ranks(
        "myrinet_profile_is_never_faster_than_modeled",
        2,
        &[("MPI_NIC_PROFILE", PROFILE)],
    );
    assert!(out.success(), "{out:?}");
    println!("took {:?}", t.elapsed());
}

#[test]
fn myrinet_profile_packet_fallback() {
    if is_rank() {
        return myrinet_body();
    }
    let out = run_ranks(
        "myrinet_profile_packet_fallback",
        2,
        &[("MPI_NIC_PROFILE", PROFILE), ("MPI_NIC_DMA", "off")],
    );
    assert!(out.success(), "{out:?}");
}

#[test]
fn unknown_profile_is_a_clear_error() {
    if is_rank() {
        let name = std::env::var("MPI_NIC_PROFILE").unwrap();
        match Nic::from_env() {
            Ok(_) => panic!("profile {name:?} was accepted"),
            Err(e) => {
                let msg = e.to_string();
                assert!(
                    matches!(&e, NicError::Profile { name: n, .. } if *n == name),
                    "{e:?}"
                );
                assert!(msg.contains(&name), "{msg}");
                for builtin in nic_model::timing::built_in_names() {
                    assert!(
                        msg.contains(builtin),
                        "the error does not list {builtin}: {msg}"
                    );
                }
                assert!(msg.contains(PROFILE), "{msg}");
            }
        }
        return;
    }
    let out = run_ranks(
        "unknown_profile_is_a_clear_error",
        2,
        &[("MPI_NIC_PROFILE", "myrinet-lanai9")],
    );
    assert!(out.success(), "{out:?}");
}
