//! The measurement method, the same for every layer.
//!
//! * Latency: the BIP paper's method. Each round trip is timed on its own; the figure is the
//!   median of (round trip / 2). At least 1000 round trips up to 64 KiB; above that as many as
//!   fit in about half a second, never fewer than 20 (a modeled 1997 NIC needs 66 ms for one
//!   8 MiB message).
//! * Bandwidth: streaming. The sender keeps a window of messages outstanding (64, or 16 from
//!   1 MiB up), the receiver takes them into separate buffers, and a zero-byte reply closes
//!   each timed repetition; the figure is the median over repetitions of bytes / time, in
//!   10^6 bytes per second.
//! * Bidirectional bandwidth: both ranks stream the same windows to each other at once (each
//!   receives into separate buffers); a zero-byte reply closes each timed repetition; the
//!   figure is the bytes moved both ways / time, median over repetitions.
//! * Counters: [`count_round_trips`] runs a short loop of round trips at one size between two
//!   reads of the layer's counters, for the per-message counts of the report.

use crate::transport::Transport;
use std::time::{Duration, Instant};

/// One measured size.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Point {
    pub size: usize,
    pub latency_us: f64,
    pub bandwidth_mb_s: f64,
    /// Both directions at once: total bytes / time, 10^6 B/s.
    #[serde(default)]
    pub bidir_bandwidth_mb_s: f64,
}

/// Message sizes of the standard sweep: 0 B to 8 MiB.
pub const SIZES: &[usize] = &[
    0,
    1,
    8,
    64,
    256,
    1024,
    4096,
    16384,
    65536,
    262_144,
    1 << 20,
    4 << 20,
    8 << 20,
];

/// Messages outstanding in a streaming measurement of `size`-byte messages.
pub fn window_for(size: usize) -> usize {
    if size >= 1 << 20 {
        16
    } else {
        64
    }
}

/// The median of `v` (sorted in place; 0 when empty).
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n == 0 {
        0.0
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Exchanges a count chosen by rank 0 so both sides run the same number of iterations.
fn agree(t: &mut dyn Transport, value: u64) -> u64 {
    let mut b = value.to_le_bytes();
    if t.rank() == 0 {
        t.send(&b);
    } else {
        t.recv(&mut b);
    }
    u64::from_le_bytes(b)
}

/// Measures latency and bandwidth at each size. Rank 0 returns the points; rank 1 returns
/// an empty list.
pub fn sweep(t: &mut dyn Transport, sizes: &[usize], min_iters: usize) -> Vec<Point> {
    let me = t.rank();
    let max = sizes.iter().copied().max().unwrap_or(0);
    let sendbuf: Vec<u8> = (0..max).map(|i| (i * 7 + 3) as u8).collect();
    let mut recvbuf = vec![0u8; max];
    let mut points = Vec::new();
    // Warm up the path (page faults, caches, the scheduler's placement) for ~100 ms.
    let t0 = Instant::now();
    while agree(t, (t0.elapsed() < Duration::from_millis(100)) as u64) == 1 {
        round_trip(t, me, &sendbuf[..8.min(max)], &mut recvbuf[..8.min(max)]);
    }
    for &size in sizes {
        // Latency: a few warm-up round trips, one to time the iteration count.
        let warm = Instant::now();
        for _ in 0..5 {
            round_trip(t, me, &sendbuf[..size], &mut recvbuf[..size]);
        }
        let per = warm.elapsed() / 5;
        let iters = if size <= 65536 {
            min_iters
        } else {
            ((Duration::from_millis(500).as_nanos() / per.as_nanos().max(1)) as usize)
                .clamp(20, min_iters)
        };
        let iters = agree(t, iters as u64) as usize;
        let mut samples = Vec::with_capacity(iters);
        for _ in 0..iters {
            let t0 = Instant::now();
            round_trip(t, me, &sendbuf[..size], &mut recvbuf[..size]);
            samples.push(t0.elapsed().as_nanos() as f64 / 2.0 / 1000.0);
        }
        if me == 1 {
            assert!(
                recvbuf[..size] == sendbuf[..size],
                "data corrupted at {size} bytes"
            );
        }
        let latency_us = median(&mut samples);

        // Bandwidth, one way then both ways.
        let bandwidth_mb_s = if size == 0 {
            0.0
        } else {
            stream(t, me, size, &sendbuf[..size], false)
        };
        let bidir_bandwidth_mb_s = if size == 0 {
            0.0
        } else {
            stream(t, me, size, &sendbuf[..size], true)
        };
        if me == 0 {
            points.push(Point {
                size,
                latency_us,
                bandwidth_mb_s,
                bidir_bandwidth_mb_s,
            });
        }
    }
    points
}

#[inline]
fn round_trip(t: &mut dyn Transport, me: usize, out: &[u8], inb: &mut [u8]) {
    if me == 0 {
        t.send(out);
        t.recv(inb);
    } else {
        t.recv(inb);
        t.send(out);
    }
}

/// Streams `size`-byte messages from rank 0 to rank 1 (`both`: each way at once); returns
/// the bytes moved (both ways) per second, 10^6 B/s.
fn stream(t: &mut dyn Transport, me: usize, size: usize, out: &[u8], both: bool) -> f64 {
    let window = window_for(size);
    let mut bufs: Vec<Vec<u8>> = if me == 1 || both {
        (0..window).map(|_| vec![0u8; size]).collect()
    } else {
        Vec::new()
    };
    let mut ack = [0u8; 0];
    let mut one_rep = |t: &mut dyn Transport, count: usize| -> Duration {
        let t0 = Instant::now();
        if both {
            t.exchange(out, &mut bufs, count, window);
            if me == 0 {
                t.recv(&mut ack);
            } else {
                t.send(&ack);
            }
        } else if me == 0 {
            t.stream_send(out, count, window);
            t.recv(&mut ack);
        } else {
            t.stream_recv(&mut bufs, count, window);
            t.send(&ack);
        }
        t0.elapsed()
    };
    // One window to size the repetitions to about 30 ms each.
    let probe = one_rep(t, window);
    let count = ((Duration::from_millis(30).as_nanos() * window as u128 / probe.as_nanos().max(1))
        as usize)
        .clamp(window, 1 << 20);
    let count = agree(t, count as u64) as usize;
    let reps = agree(
        t,
        if probe > Duration::from_millis(200) {
            3
        } else {
            7
        },
    ) as usize;
    let mut rates = Vec::with_capacity(reps);
    let directions = if both { 2 } else { 1 };
    for _ in 0..reps {
        let d = one_rep(t, count);
        rates.push((directions * count * size) as f64 / d.as_secs_f64() / 1e6);
    }
    if both {
        assert!(
            bufs.iter().all(|b| b[..] == out[..]),
            "data corrupted at {size} bytes (both ways)"
        );
    }
    median(&mut rates)
}

/// Runs `round_trips` round trips of `size` bytes between two reads of the layer's counters;
/// returns this rank's counts of the loop alone (after minus before, every numeric field).
pub fn count_round_trips(
    t: &mut dyn Transport,
    size: usize,
    round_trips: usize,
) -> serde_json::Value {
    let me = t.rank();
    let sendbuf: Vec<u8> = (0..size).map(|i| (i * 13 + 1) as u8).collect();
    let mut recvbuf = vec![0u8; size];
    // Two warm-up round trips (first-use costs: credits, buffers), then both sides agree that
    // the loop starts, so that neither reads its counters with the other's warm-up in flight.
    for _ in 0..2 {
        round_trip(t, me, &sendbuf, &mut recvbuf);
    }
    agree(t, 0);
    let before = t.counters();
    for _ in 0..round_trips {
        round_trip(t, me, &sendbuf, &mut recvbuf);
    }
    let after = t.counters();
    assert!(recvbuf == sendbuf, "data corrupted at {size} bytes");
    // Let the peer read its counters before this side moves on.
    agree(t, 0);
    crate::counters::difference(&after, &before)
}

/// Size at which bandwidth reaches half of the peak of `values(point)`, interpolated
/// log-linearly between measured sizes.
pub fn n_half(points: &[Point], value: impl Fn(&Point) -> f64) -> Option<f64> {
    let pts: Vec<(f64, f64)> = points
        .iter()
        .filter(|p| p.size > 0)
        .map(|p| (p.size as f64, value(p)))
        .collect();
    let peak = pts.iter().map(|p| p.1).fold(0.0, f64::max);
    if peak <= 0.0 {
        return None;
    }
    let half = peak / 2.0;
    let mut prev: Option<(f64, f64)> = None;
    for &(s, v) in &pts {
        if v >= half {
            return Some(match prev {
                None => s,
                Some((s0, v0)) => {
                    let f = (half - v0) / (v - v0);
                    (s0.ln() + f * (s.ln() - s0.ln())).exp()
                }
            });
        }
        prev = Some((s, v));
    }
    None
}

/// Ping-pong bandwidth (size / one-way time), the paper's throughput method.
pub fn pingpong_mb_s(p: &Point) -> f64 {
    if p.latency_us > 0.0 {
        p.size as f64 / p.latency_us
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn n_half_interpolates() {
        let pts = vec![
            Point {
                size: 1000,
                latency_us: 1.0,
                bandwidth_mb_s: 10.0,
                bidir_bandwidth_mb_s: 0.0,
            },
            Point {
                size: 4000,
                latency_us: 1.0,
                bandwidth_mb_s: 30.0,
                bidir_bandwidth_mb_s: 0.0,
            },
            Point {
                size: 16000,
                latency_us: 1.0,
                bandwidth_mb_s: 100.0,
                bidir_bandwidth_mb_s: 0.0,
            },
        ];
        let n = n_half(&pts, |p| p.bandwidth_mb_s).unwrap();
        assert!(n > 4000.0 && n < 16000.0, "{n}");
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
    }
}
