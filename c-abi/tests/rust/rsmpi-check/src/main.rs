//! A Rust MPI program written with the rsmpi crates (`mpi` over `mpi-sys`), built against this
//! project's `mpicc` / `libmpi.so` and run under its `mpirun`: the check that the C ABI serves
//! a real binding, not only C programs. `c-abi/tests/rsmpi.rs` builds and runs it.
//!
//! By hand (the two commands; `.cargo/config.toml` here points `MPICC` at our wrapper and
//! makes our `mpirun -n 2` the runner):
//!
//! ```text
//! cargo build --release                                    # at the repository root
//! cd c-abi/tests/rust/rsmpi-check && cargo run --release   # builds, then mpirun -n 2
//! ```
//!
//! More ranks: `../../../../target/release/mpirun -n 4 target/release/rsmpi-check`. mpi-sys's
//! build script asks `$MPICC -show` for the header and library (without `MPICC` it would try
//! `mpicc` on `PATH`, then pkg-config's MPICH or Open MPI); `build.rs` here turns the
//! wrapper's `-Wl,-rpath` into the binary's run path. mpi-sys regenerates its bindings only
//! when its own files change: after a change to our `mpi.h`, `cargo clean -p mpi-sys --release`.
//!
//! What it checks, on any number of ranks (at least 2): world rank and size; point-to-point
//! of typed vectors (blocking, with `receive_vec`'s matched probe, and nonblocking requests in
//! a `scope`); matched probes on any source (`Message`: `MPI_Mprobe`/`MPI_Mrecv` and their
//! nonblocking forms); a broadcast; `all_reduce` with `SystemOperation::sum`; a gather; a
//! communicator split by parity; a `#[derive(Equivalence)]` struct (an MPI struct datatype)
//! sent and broadcast. Every received value is compared with what it must be; a mismatch prints
//! `FAIL rsmpi rank R: ...` and ends the job with `MPI_Abort`. Then ranks 0 and 1 run a short
//! ping-pong of 8 bytes and rank 0 prints the median one-way latency (round trip / 2), and,
//! if everything passed, `OK rsmpi`. An optional argument (or `RSMPI_CHECK_ROUND_TRIPS`) sets
//! the number of round trips (default 1000).

use mpi::collective::SystemOperation;
use mpi::topology::{Color, SimpleCommunicator};
use mpi::traits::*;
use mpi::Rank;

/// A record with mixed field types, sent as one MPI struct datatype.
#[derive(Equivalence, Debug, Clone, Copy, PartialEq, Default)]
struct Particle {
    id: u32,
    position: [f64; 3],
    charge: i16,
}

/// What a rank must receive from `from` for the point-to-point checks.
fn vector_from(from: Rank, len: usize) -> Vec<i64> {
    (0..len as i64)
        .map(|i| from as i64 * 1_000_000 + i)
        .collect()
}

fn particle_of(rank: Rank) -> Particle {
    Particle {
        id: 100 + rank as u32,
        position: [rank as f64, 0.5 * rank as f64, -(rank as f64)],
        charge: -(rank as i16) - 1,
    }
}

/// Ends the job with a message when a check fails.
struct Checker<'a> {
    world: &'a SimpleCommunicator,
}

impl Checker<'_> {
    fn check(&self, ok: bool, what: impl FnOnce() -> String) {
        if !ok {
            eprintln!("FAIL rsmpi rank {}: {}", self.world.rank(), what());
            self.world.abort(1);
        }
    }

    fn equal<T: PartialEq + std::fmt::Debug>(&self, what: &str, got: &T, want: &T) {
        self.check(got == want, || {
            format!("{what}: received {got:?}, expected {want:?}")
        });
    }
}

/// Elements rank `from` sends around the ring: over 300 KiB, so that the messages take the
/// rendezvous protocol, and different on each rank, so that a mix-up shows.
fn ring_length(from: Rank) -> usize {
    40_000 + from as usize
}

/// Ring exchange of typed vectors: blocking send to the right, `receive_vec` from the left
/// (a matched probe, then a receive of the probed size).
fn blocking_ring(world: &SimpleCommunicator, c: &Checker) {
    let (rank, size) = (world.rank(), world.size());
    let right = (rank + 1) % size;
    let left = (rank + size - 1) % size;
    let len = ring_length(rank);
    let data = vector_from(rank, len);
    // Even ranks send first; odd ranks receive first, so the ring cannot deadlock even when
    // the messages are too long to be buffered.
    let receive = || world.process_at_rank(left).receive_vec_with_tag::<i64>(7);
    let (got, status) = if rank % 2 == 0 {
        world.process_at_rank(right).send_with_tag(&data[..], 7);
        receive()
    } else {
        let got = receive();
        world.process_at_rank(right).send_with_tag(&data[..], 7);
        got
    };
    c.equal("ring source", &status.source_rank(), &left);
    c.equal("ring tag", &status.tag(), &7);
    c.equal("ring vector", &got, &vector_from(left, ring_length(left)));
}

/// Every other rank sends rank 0 a vector whose length says who sent it; rank 0 takes them in
/// arrival order with matched probes on any source (blocking and nonblocking alternately) and
/// receives each through its `Message` (`MPI_Mrecv`, `MPI_Imrecv`).
fn matched_probes(world: &SimpleCommunicator, c: &Checker) {
    let (rank, size) = (world.rank(), world.size());
    if rank != 0 {
        let mine = vec![rank; rank as usize + 1];
        world.process_at_rank(0).send_with_tag(&mine[..], 21);
        return;
    }
    let mut seen = vec![false; size as usize];
    for k in 1..size {
        let (message, status) = if k % 2 == 1 {
            world.any_process().matched_probe_with_tag(21)
        } else {
            loop {
                if let Some(found) = world.any_process().immediate_matched_probe_with_tag(21) {
                    break found;
                }
            }
        };
        let from = status.source_rank();
        c.check((1..size).contains(&from) && !seen[from as usize], || {
            format!("matched probe reported source {from} (seen before: {seen:?})")
        });
        seen[from as usize] = true;
        c.equal(
            "matched probe count",
            &status.count(Rank::equivalent_datatype()),
            &(from + 1),
        );
        let mut got = vec![-1 as Rank; from as usize + 1];
        if k % 2 == 1 {
            message.matched_receive_into(&mut got[..]);
        } else {
            mpi::request::scope(|scope| {
                message
                    .immediate_matched_receive_into(scope, &mut got[..])
                    .wait();
            });
        }
        c.equal("matched receive", &got, &vec![from; from as usize + 1]);
    }
}

/// Every rank sends a vector to every other rank with nonblocking requests in a scope, and
/// receives theirs into preallocated buffers.
fn nonblocking_all_pairs(world: &SimpleCommunicator, c: &Checker) {
    let (rank, size) = (world.rank(), world.size());
    let len = 64;
    let mine: Vec<f64> = (0..len).map(|i| rank as f64 + i as f64 / 64.0).collect();
    let mut inbox: Vec<Vec<f64>> = vec![vec![0.0; len]; size as usize];
    mpi::request::scope(|scope| {
        let mut requests = Vec::new();
        for (peer, slot) in inbox.iter_mut().enumerate() {
            let peer = peer as Rank;
            if peer == rank {
                continue;
            }
            requests.push(world.process_at_rank(peer).immediate_receive_into_with_tag(
                scope,
                &mut slot[..],
                11,
            ));
        }
        for peer in (0..size).filter(|&p| p != rank) {
            requests.push(world.process_at_rank(peer).immediate_send_with_tag(
                scope,
                &mine[..],
                11,
            ));
        }
        for request in requests {
            request.wait();
        }
    });
    for (peer, got) in inbox.iter().enumerate() {
        if peer as Rank == rank {
            continue;
        }
        let want: Vec<f64> = (0..len).map(|i| peer as f64 + i as f64 / 64.0).collect();
        c.equal(&format!("nonblocking vector from rank {peer}"), got, &want);
    }
}

/// Broadcast from the last rank, a sum over all ranks, and a gather at rank 0.
fn collectives(world: &SimpleCommunicator, c: &Checker) {
    let (rank, size) = (world.rank(), world.size());
    let root = world.process_at_rank(size - 1);
    let mut table: Vec<u32> = if rank == size - 1 {
        (0..300).map(|i| i * 3 + 1).collect()
    } else {
        vec![0; 300]
    };
    root.broadcast_into(&mut table[..]);
    c.equal(
        "broadcast",
        &table,
        &(0..300).map(|i| i * 3 + 1).collect::<Vec<u32>>(),
    );

    let contribution = [rank as i64 + 1, 2 * rank as i64, 1];
    let mut total = [0i64; 3];
    world.all_reduce_into(&contribution[..], &mut total[..], SystemOperation::sum());
    let n = size as i64;
    c.equal("all_reduce sum", &total, &[n * (n + 1) / 2, n * (n - 1), n]);

    let gather_root = world.process_at_rank(0);
    let mine = [rank * 10, rank * 10 + 1];
    if rank == 0 {
        let mut all = vec![-1 as Rank; 2 * size as usize];
        gather_root.gather_into_root(&mine[..], &mut all[..]);
        let want: Vec<Rank> = (0..size).flat_map(|r| [r * 10, r * 10 + 1]).collect();
        c.equal("gather", &all, &want);
    } else {
        gather_root.gather_into(&mine[..]);
    }
}

/// Splits the world by parity and checks the new communicator's ranks, size and a sum in it.
fn split(world: &SimpleCommunicator, c: &Checker) {
    let (rank, size) = (world.rank(), world.size());
    let parity = rank % 2;
    let half = world
        .split_by_color(Color::with_value(parity))
        .unwrap_or_else(|| {
            c.check(false, || "split_by_color gave no communicator".into());
            unreachable!()
        });
    let expected_size = (0..size).filter(|r| r % 2 == parity).count() as Rank;
    c.equal("split size", &half.size(), &expected_size);
    c.equal("split rank", &half.rank(), &(rank / 2));
    let mut sum: Rank = 0;
    half.all_reduce_into(&rank, &mut sum, SystemOperation::sum());
    let want: Rank = (0..size).filter(|r| r % 2 == parity).sum();
    c.equal("sum of world ranks in the split communicator", &sum, &want);
}

/// A derived struct type: rank 0 sends one particle to each rank, the last rank broadcasts
/// an array of them.
fn derived_type(world: &SimpleCommunicator, c: &Checker) {
    let (rank, size) = (world.rank(), world.size());
    if rank == 0 {
        for peer in 1..size {
            world.process_at_rank(peer).send(&particle_of(peer));
        }
    } else {
        let (got, _) = world.process_at_rank(0).receive::<Particle>();
        c.equal("particle", &got, &particle_of(rank));
    }
    let mut all = [Particle::default(); 5];
    if rank == size - 1 {
        for (i, p) in all.iter_mut().enumerate() {
            *p = particle_of(i as Rank + 40);
        }
    }
    world.process_at_rank(size - 1).broadcast_into(&mut all[..]);
    for (i, p) in all.iter().enumerate() {
        c.equal("broadcast particle", p, &particle_of(i as Rank + 40));
    }
}

/// Ranks 0 and 1 bounce 8 bytes `round_trips` times; returns rank 0's median one-way latency
/// in microseconds (half of each round trip, the BIP paper's method).
fn ping_pong(world: &SimpleCommunicator, c: &Checker, round_trips: usize) -> Option<f64> {
    let rank = world.rank();
    if rank > 1 {
        return None;
    }
    let peer = world.process_at_rank(1 - rank);
    let mut message = [0u8; 8];
    let warm_up = round_trips / 10 + 10;
    let mut half_trips = Vec::with_capacity(round_trips);
    for i in 0..warm_up + round_trips {
        let stamp = (i as u64).to_le_bytes();
        if rank == 0 {
            let start = mpi::time();
            peer.send(&stamp[..]);
            peer.receive_into(&mut message[..]);
            let end = mpi::time();
            c.equal("ping-pong echo", &message, &stamp);
            if i >= warm_up {
                half_trips.push((end - start) * 1e6 / 2.0);
            }
        } else {
            peer.receive_into(&mut message[..]);
            c.equal("ping-pong message", &message, &stamp);
            peer.send(&message[..]);
        }
    }
    if rank != 0 {
        return None;
    }
    half_trips.sort_by(f64::total_cmp);
    half_trips.get(half_trips.len() / 2).copied()
}

/// Sets the number of ping-pong round trips when no argument does.
const ROUND_TRIPS_VARIABLE: &str = "RSMPI_CHECK_ROUND_TRIPS";

fn main() {
    let round_trips: usize = match std::env::args()
        .nth(1)
        .or_else(|| std::env::var(ROUND_TRIPS_VARIABLE).ok())
    {
        None => 1000,
        Some(text) => text.parse().unwrap_or_else(|_| {
            eprintln!(
                "rsmpi-check: the argument (or {ROUND_TRIPS_VARIABLE}) is the number of ping-pong round trips, got {text:?}"
            );
            std::process::exit(2);
        }),
    };
    let universe = mpi::initialize().unwrap_or_else(|| {
        eprintln!("rsmpi-check: MPI was initialized already");
        std::process::exit(2);
    });
    let world = universe.world();
    let c = Checker { world: &world };
    let size = world.size();
    c.check(size >= 2, || {
        format!("needs at least 2 ranks, started with {size}: mpirun -n 2 or more")
    });
    let mut rank_sum: Rank = 0;
    world.all_reduce_into(&world.rank(), &mut rank_sum, SystemOperation::sum());
    c.equal("sum of ranks", &rank_sum, &(size * (size - 1) / 2));

    blocking_ring(&world, &c);
    nonblocking_all_pairs(&world, &c);
    matched_probes(&world, &c);
    collectives(&world, &c);
    split(&world, &c);
    derived_type(&world, &c);
    let latency = ping_pong(&world, &c, round_trips);
    world.barrier();
    if let Some(us) = latency {
        println!(
            "rsmpi 8 B latency: {us:.2} us (median of {round_trips} round trips / 2, {size} ranks)"
        );
        println!("OK rsmpi");
    }
}
