//! A peer that dies turns a blocked operation into `PeerGone` within a second, never a hang.
//!
//! In each test one rank kills itself (abort or SIGKILL) and the survivor measures how long
//! its blocked call took to fail, then exits 0 at once (the launcher kills the rest of a
//! failed job 2 s after the first failure). The parent asserts exactly that outcome.

use bip_core::{Bip, BipConfig, BipError};
use nic_model::testing::{is_rank, run_ranks};
use nic_model::{Device, Nic, RankExit};
use std::time::{Duration, Instant};

const HANDSHAKE: u32 = 1;
const DATA: u32 = 2;
/// The survivor must see the error this soon after the peer's last sign of life.
const LIMIT: Duration = Duration::from_millis(1500);

fn bip() -> Bip<Nic> {
    Bip::new(Nic::from_env().unwrap(), BipConfig::from_env()).unwrap()
}

fn die_by_sigkill() -> ! {
    // SAFETY: plain system calls; the process ends here.
    unsafe {
        libc::kill(libc::getpid(), libc::SIGKILL);
    }
    unreachable!("SIGKILL did not kill")
}

/// Checks the survivor's error: `PeerGone` naming `dead`, within `LIMIT` of `since`.
fn expect_peer_gone<T: std::fmt::Debug>(r: Result<T, BipError>, dead: usize, since: Instant) {
    let took = since.elapsed();
    match r {
        Err(BipError::PeerGone { rank, why }) => {
            assert_eq!(rank, dead, "PeerGone names the wrong rank ({why})");
            assert!(took < LIMIT, "death noticed after {took:?}");
            eprintln!("PeerGone ({why}) after {took:?}");
        }
        other => panic!("expected PeerGone from rank {dead}, got {other:?} after {took:?}"),
    }
}

/// Asserts that `dead` was killed by `signal`, every other rank exited 0, no timeout.
fn assert_outcome(out: &nic_model::JobOutcome, dead: usize, signal: i32) {
    assert!(!out.timed_out, "{out:?}");
    assert_eq!(out.first_failure, Some(dead), "{out:?}");
    for (rank, exit) in out.exits.iter().enumerate() {
        if rank == dead {
            assert_eq!(*exit, RankExit::Signal(signal), "rank {rank}: {out:?}");
        } else {
            assert_eq!(*exit, RankExit::Code(0), "rank {rank}: {out:?}");
        }
    }
}

/// Rank 0 answers a ping, then aborts; rank 1 has posted a 64 MiB receive it will never get.
#[test]
fn receiver_of_big_message_sees_sender_abort() {
    if is_rank() {
        let mut bip = bip();
        let mut b = [0u8; 4];
        if bip.mynode() == 0 {
            assert_eq!(bip.recv(HANDSHAKE, &mut b).unwrap(), (4, 1));
            bip.send(1, HANDSHAKE, b"pong").unwrap();
            std::process::abort();
        }
        let mut big = vec![0u8; 64 << 20];
        // SAFETY: `big` outlives the request and is not touched until it ends.
        let r = unsafe { bip.irecv(DATA, big.as_mut_ptr(), big.len()) }.unwrap();
        bip.send(0, HANDSHAKE, b"ping").unwrap();
        assert_eq!(bip.recv(HANDSHAKE, &mut b).unwrap(), (4, 0));
        let t = Instant::now();
        expect_peer_gone(bip.wait(r), 0, t);
        // Leave at once: the launcher kills survivors 2 s after the first failure.
        std::process::exit(0);
    }
    let out = run_ranks("receiver_of_big_message_sees_sender_abort", 2, &[]);
    assert_outcome(&out, 0, libc::SIGABRT);
}

/// Rank 1 blocks in a plain `recv`; rank 0 SIGKILLs itself after the handshake.
#[test]
fn blocked_recv_sees_sigkill() {
    if is_rank() {
        let mut bip = bip();
        let mut b = [0u8; 4];
        if bip.mynode() == 0 {
            assert_eq!(bip.recv(HANDSHAKE, &mut b).unwrap(), (4, 1));
            bip.send(1, HANDSHAKE, b"pong").unwrap();
            die_by_sigkill();
        }
        bip.send(0, HANDSHAKE, b"ping").unwrap();
        assert_eq!(bip.recv(HANDSHAKE, &mut b).unwrap(), (4, 0));
        let t = Instant::now();
        let mut buf = [0u8; 64];
        expect_peer_gone(bip.recv(DATA, &mut buf), 0, t);
        std::process::exit(0);
    }
    let out = run_ranks("blocked_recv_sees_sigkill", 2, &[]);
    assert_outcome(&out, 0, libc::SIGKILL);
}

const BIG: usize = 64 << 20;

fn byte(i: usize) -> u8 {
    (i ^ (i >> 12)) as u8
}

/// Rank 0 of the mid-transfer tests: sends 64 MiB to rank 1 and kills itself once 1000
/// packets (about 4 MiB, under `MPI_NIC_DMA=off`) are on their way.
fn die_mid_send(bip: &mut Bip<Nic>) -> ! {
    // The pattern repeats every MiB: build one and copy it.
    let block: Vec<u8> = (0..1 << 20).map(byte).collect();
    let data = block.repeat(BIG >> 20);
    let mut b = [0u8; 4];
    assert_eq!(bip.recv(HANDSHAKE, &mut b).unwrap(), (4, 1));
    // SAFETY: `data` outlives the request (the process dies holding it).
    let r = unsafe { bip.isend(1, DATA, data.as_ptr(), BIG) }.unwrap();
    let start = Instant::now();
    while bip.device().counters().packets_tx < 1000 {
        assert!(
            bip.test(r).unwrap().is_none(),
            "a 64 MiB send finished early"
        );
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "the transfer did not start"
        );
    }
    die_by_sigkill();
}

/// Rank 1 of the mid-transfer tests: what arrived before the error is part of the message,
/// intact, and not all of it.
fn check_partial(bip: &Bip<Nic>, big: &[u8]) {
    let got = bip.device().counters().bytes_rx;
    assert!(
        got > 1 << 20,
        "only {got} bytes arrived: the sender did not die mid-transfer"
    );
    assert!(
        got < BIG as u64,
        "the whole message arrived ({got} bytes) yet the receive failed"
    );
    let arrived = (got as usize).min(1 << 20);
    assert!(
        big[..arrived]
            .iter()
            .enumerate()
            .all(|(i, &x)| x == byte(i)),
        "the part that arrived is corrupt"
    );
}

/// The packet path (no single copy): rank 0 pushes a 64 MiB message in packets and is killed
/// once a good part of it is on its way; rank 1, blocked in `wait` in the middle of receiving
/// it, gets `PeerGone` and has really received part of the message, intact.
#[test]
fn sender_killed_mid_transfer_packet_path() {
    if is_rank() {
        let mut bip = bip();
        if bip.mynode() == 0 {
            die_mid_send(&mut bip);
        }
        let mut big = vec![0u8; BIG];
        // SAFETY: `big` outlives the request and is not touched until it ends.
        let r = unsafe { bip.irecv(DATA, big.as_mut_ptr(), big.len()) }.unwrap();
        bip.send(0, HANDSHAKE, b"ping").unwrap();
        let t = Instant::now();
        expect_peer_gone(bip.wait(r), 0, t);
        check_partial(&bip, &big);
        std::process::exit(0);
    }
    let out = run_ranks(
        "sender_killed_mid_transfer_packet_path",
        2,
        &[("MPI_NIC_DMA", "off")],
    );
    assert_outcome(&out, 0, libc::SIGKILL);
}

/// As above, but rank 1 polls with `test` instead of blocking in `wait`, as an MPI_Test loop
/// does: the dead sender must surface as an error there too, not as "in progress" forever.
#[test]
fn test_polling_sees_sender_death() {
    let out = run_ranks(
        "test_polling_sees_sender_death_rank",
        2,
        &[("MPI_NIC_DMA", "off")],
    );
    assert_outcome(&out, 0, libc::SIGKILL);
}

/// The ranks of `test_polling_sees_sender_death` (a no-op outside a job).
#[test]
fn test_polling_sees_sender_death_rank() {
    if is_rank() {
        let mut bip = bip();
        if bip.mynode() == 0 {
            die_mid_send(&mut bip);
        }
        let mut big = vec![0u8; BIG];
        // SAFETY: `big` outlives the request and is not touched until it ends.
        let r = unsafe { bip.irecv(DATA, big.as_mut_ptr(), big.len()) }.unwrap();
        bip.send(0, HANDSHAKE, b"ping").unwrap();
        // Poll, noting when the last packet came.
        let mut last = (0u64, Instant::now());
        let res = loop {
            match bip.test(r) {
                Ok(None) => {
                    let got = bip.device().counters().bytes_rx;
                    if got != last.0 {
                        last = (got, Instant::now());
                    }
                    assert!(
                        last.1.elapsed() < LIMIT,
                        "test() still says 'in progress' {LIMIT:?} after the last packet ({got} bytes); the sender is dead"
                    );
                }
                other => break other,
            }
        };
        expect_peer_gone(res, 0, last.1);
        check_partial(&bip, &big);
        std::process::exit(0);
    }
}

/// Rank 0 is blocked sending a 16 MiB message (rendezvous: it waits for the receiver to pull);
/// rank 1 dies before posting the receive.
#[test]
fn rendezvous_sender_sees_receiver_die() {
    if is_rank() {
        let mut bip = bip();
        let mut b = [0u8; 4];
        if bip.mynode() == 1 {
            assert_eq!(bip.recv(HANDSHAKE, &mut b).unwrap(), (4, 0));
            // Let rank 0 get well into its blocked send, then die without receiving.
            std::thread::sleep(Duration::from_millis(100));
            die_by_sigkill();
        }
        let data = vec![7u8; 16 << 20];
        bip.send(1, HANDSHAKE, b"ping").unwrap();
        let t = Instant::now();
        let r = bip.send(1, DATA, &data);
        assert!(
            t.elapsed() >= Duration::from_millis(90),
            "the send returned before the receiver died: {r:?}"
        );
        expect_peer_gone(r, 1, t);
        std::process::exit(0);
    }
    let out = run_ranks("rendezvous_sender_sees_receiver_die", 2, &[]);
    assert_outcome(&out, 1, libc::SIGKILL);
}

/// A receive waiting on a peer that finalized cleanly (and so will send nothing more) fails
/// with `PeerGone` too; nobody died, so both exit 0.
#[test]
fn recv_from_finalized_peer_fails() {
    if is_rank() {
        let mut bip = bip();
        let mut b = [0u8; 4];
        if bip.mynode() == 0 {
            assert_eq!(bip.recv(HANDSHAKE, &mut b).unwrap(), (4, 1));
            bip.send(1, HANDSHAKE, b"last").unwrap();
            bip.finalize().unwrap();
            return;
        }
        bip.send(0, HANDSHAKE, b"ping").unwrap();
        // What a finalized peer sent before it left can still be received...
        assert_eq!(bip.recv(HANDSHAKE, &mut b).unwrap(), (4, 0));
        assert_eq!(&b, b"last");
        // ... but nothing more will come.
        let t = Instant::now();
        let r = bip.recv(DATA, &mut b);
        assert!(
            matches!(r, Err(BipError::PeerGone { rank: 0, .. })),
            "{r:?}"
        );
        assert!(t.elapsed() < LIMIT, "noticed after {:?}", t.elapsed());
        return;
    }
    let out = run_ranks("recv_from_finalized_peer_fails", 2, &[]);
    assert!(out.success(), "{out:?}");
}
