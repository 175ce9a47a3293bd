//! The network device across "hosts" on loopback addresses (127.0.0.h, a host id each): the
//! wire-up, packets between every pair, region reads of every size up to 16 MiB across hosts
//! and within one, refusals, and the death of a peer on another host.

use nic_model::net::{wire_up, Wired};
use nic_model::testing::poll_from;
use nic_model::testing::{is_rank, run_on_hosts, FileExchange};
use nic_model::{send_bytes, Access, Device, JobConfig, PeerStatus, Transfer};
use std::time::{Duration, Instant};

fn device() -> Box<dyn Device> {
    let mut ex = FileExchange::from_env().expect("started by run_on_hosts");
    match wire_up(&mut ex, &JobConfig::new).expect("wire-up") {
        Wired::OneHost(nic) => Box::new(nic),
        Wired::Hosts(net) => net,
    }
}

/// Receives the next packet from `src`, polling with a deadline.
fn recv_from(dev: &mut dyn Device, src: usize) -> Vec<u8> {
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(p) = poll_from(dev, src) {
            return p;
        }
        dev.progress();
        assert!(Instant::now() < end, "nothing from rank {src}");
        std::thread::yield_now();
    }
}

fn send_to(dev: &mut dyn Device, dest: usize, bytes: &[u8]) {
    let end = Instant::now() + Duration::from_secs(20);
    while !send_bytes(dev, dest, bytes) {
        dev.progress();
        assert!(Instant::now() < end, "route to {dest} stays full");
        std::thread::yield_now();
    }
}

/// Waits for a transfer, serving peers meanwhile.
fn finish(dev: &mut dyn Device, t: Transfer) {
    let Transfer::Pending(id) = t else { return };
    let end = Instant::now() + Duration::from_secs(60);
    while !dev.poll_transfer(id).expect("transfer") {
        dev.progress();
        assert!(Instant::now() < end, "transfer {id:?} never ends");
    }
}

fn pattern(seed: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// Keeps polling every peer (serving their reads) until each has sent a packet "done".
fn serve_until_done(dev: &mut dyn Device) {
    let me = dev.rank();
    let n = dev.nranks();
    let end = Instant::now() + Duration::from_secs(60);
    let mut done = vec![false; n];
    done[me] = true;
    while done.iter().any(|d| !d) {
        for (s, done) in done.iter_mut().enumerate() {
            if *done {
                continue;
            }
            if let Some(p) = poll_from(dev, s) {
                assert_eq!(p, b"done", "from {s}");
                *done = true;
            }
        }
        dev.progress();
        assert!(Instant::now() < end, "peers never said done: {done:?}");
    }
}

#[test]
fn two_hosts_two_ranks_packets_and_regions() {
    if is_rank() {
        let mut dev = device();
        let (me, n) = (dev.rank(), dev.nranks());
        assert_eq!(n, 4);
        // Every pair, both ways, in order, various sizes up to the mtu.
        let mtu = dev.capabilities().mtu;
        for round in 0..50u8 {
            for peer in (0..n).filter(|&p| p != me) {
                let len = (round as usize * 97 + peer * 13) % mtu;
                send_to(&mut *dev, peer, &pattern(round ^ me as u8, len));
            }
            for peer in (0..n).filter(|&p| p != me) {
                let len = (round as usize * 97 + me * 13) % mtu;
                assert_eq!(recv_from(&mut *dev, peer), pattern(round ^ peer as u8, len));
            }
        }
        // Each rank exports a buffer; every other rank reads it at several sizes (crossing
        // hosts for two of the three peers).
        const BIG: usize = 16 << 20;
        let mine = pattern(me as u8, BIG);
        // SAFETY: `mine` outlives the region (withdrawn below before it is dropped).
        let key = unsafe { dev.register(mine.as_ptr() as usize, BIG, Access::READ) }.unwrap();
        for peer in (0..n).filter(|&p| p != me) {
            send_to(&mut *dev, peer, &key.emit());
        }
        let mut keys = vec![None; n];
        for peer in (0..n).filter(|&p| p != me) {
            keys[peer] = nic_model::RegionKey::parse(&recv_from(&mut *dev, peer));
        }
        for peer in (0..n).filter(|&p| p != me) {
            let key = keys[peer].expect("a key");
            let want = pattern(peer as u8, BIG);
            for &(off, len) in &[
                (0, 0),
                (0, 1),
                (5, 4095),
                (100, 65536),
                (7, 1 << 20),
                (0, BIG),
            ] {
                let mut got = vec![0u8; len];
                // SAFETY: `got` lives until `finish` returns.
                let t = unsafe { dev.read_region(peer, key, off, got.as_mut_ptr(), len) };
                finish(&mut *dev, t.expect("read"));
                assert!(
                    got == want[off..off + len],
                    "read of {len} at {off} from {peer}"
                );
            }
            // Outside the region: refused, nothing written.
            let mut got = vec![7u8; 16];
            // SAFETY: as above.
            let r = unsafe { dev.read_region(peer, key, BIG - 8, got.as_mut_ptr(), 16) }.and_then(
                |t| match t {
                    Transfer::Pending(id) => loop {
                        match dev.poll_transfer(id) {
                            Ok(false) => {
                                dev.progress();
                            }
                            Ok(true) => break Ok(Transfer::Done),
                            Err(e) => break Err(e),
                        }
                    },
                    done => Ok(done),
                },
            );
            assert!(r.is_err(), "a read past the end was not refused");
            assert_eq!(got, vec![7u8; 16]);
            send_to(&mut *dev, peer, b"done");
        }
        serve_until_done(&mut *dev);
        dev.deregister(key).unwrap();
        dev.finalize();
        println!("rank {me} ok");
        return;
    }
    let out = run_on_hosts(
        "two_hosts_two_ranks_packets_and_regions",
        &[2, 2],
        &[],
        Duration::from_secs(120),
    );
    assert!(out.success(), "{out:?}");
}

#[test]
fn three_hosts_uneven_ring() {
    if is_rank() {
        let mut dev = device();
        let (me, n) = (dev.rank(), dev.nranks());
        for p in 0..n {
            assert_eq!(dev.peer_status(p), PeerStatus::Alive, "rank {me} sees {p}");
        }
        // A token around the ring, three times: crosses each host boundary.
        for lap in 0..3u8 {
            if me == 0 {
                send_to(&mut *dev, 1, &[lap]);
                assert_eq!(recv_from(&mut *dev, n - 1), vec![lap]);
            } else {
                let t = recv_from(&mut *dev, me - 1);
                send_to(&mut *dev, (me + 1) % n, &t);
            }
        }
        dev.finalize();
        return;
    }
    let out = run_on_hosts(
        "three_hosts_uneven_ring",
        &[1, 2, 1],
        &[],
        Duration::from_secs(60),
    );
    assert!(out.success(), "{out:?}");
}

#[test]
fn a_dead_remote_peer_is_reported() {
    if is_rank() {
        let mut dev = device();
        let me = dev.rank();
        if me == 1 {
            // Dies without finalizing, once rank 0 knows it is up.
            send_to(&mut *dev, 0, b"up");
            std::process::exit(3);
        }
        assert_eq!(recv_from(&mut *dev, 1), b"up");
        let end = Instant::now() + Duration::from_secs(5);
        loop {
            let _ = poll_from(&mut *dev, 1);
            if dev.peer_status(1) == PeerStatus::Dead {
                break;
            }
            assert!(Instant::now() < end, "rank 1's death was not seen in 5 s");
            std::thread::sleep(Duration::from_millis(10));
        }
        dev.finalize();
        return;
    }
    let out = run_on_hosts(
        "a_dead_remote_peer_is_reported",
        &[1, 1],
        &[],
        Duration::from_secs(60),
    );
    assert_eq!(out.status, vec![Some(0), Some(3)], "{out:?}");
    assert!(
        out.output[0].contains("lost rank 1 on host testhost1"),
        "{}",
        out.output[0]
    );
}

#[test]
fn wrappers_wrap_the_network_device() {
    if is_rank() {
        let net: Box<dyn Device> = device();
        let me = net.rank();
        let dir = std::env::var("NET_TEST_PCAP_DIR").unwrap();
        let path = std::path::Path::new(&dir).join(format!("rank{me}.pcap"));
        let mut dev = nic_model::phy::PcapWriter::new(net, &path).expect("pcap file");
        let peer = 1 - me;
        for i in 0..10u8 {
            send_to(&mut dev, peer, &[i; 100]);
            assert_eq!(recv_from(&mut dev, peer), vec![i; 100]);
        }
        dev.finalize();
        return;
    }
    let dir = std::env::temp_dir().join(format!("net-pcap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = run_on_hosts(
        "wrappers_wrap_the_network_device",
        &[1, 1],
        &[("NET_TEST_PCAP_DIR", dir.to_str().unwrap())],
        Duration::from_secs(60),
    );
    assert!(out.success(), "{out:?}");
    for rank in 0..2 {
        let file = std::fs::File::open(dir.join(format!("rank{rank}.pcap"))).unwrap();
        let mut reader = pcap_file::pcap::PcapReader::new(file).unwrap();
        let mut packets = 0;
        while let Some(p) = reader.next_packet() {
            let p = p.unwrap();
            assert!(p.data.len() >= 100 + nic_model::phy::PSEUDO_HEADER_LEN);
            packets += 1;
        }
        // 10 sent and 10 received, each recorded once.
        assert_eq!(packets, 20, "rank {rank}'s trace");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
