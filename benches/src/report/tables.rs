//! The report's text: the method, and per profile the Markdown tables of latency, bandwidth
//! and percentage of the layer below, the peaks and N1/2, the MPICH reference, the charts and
//! the papers' figures with their sources.

use std::fmt::Write as _;

use super::charts::{percent, Image, VMMC_PAPER_PERCENT};
use super::data::{at, Point, Profile};
use super::published::Published;
use crate::plot::{format_bytes, format_number};

/// How the figures were measured (one section for the whole report).
pub fn method(profiles: &[Profile]) -> String {
    let names: Vec<&str> = profiles.iter().map(|p| p.name.as_str()).collect();
    let mut s = String::new();
    s.push_str("## Method\n\n");
    s.push_str(
        "Every layer is measured by the same code, `layers` (benches/src/measure.rs), between two \
         processes on this host, behind one interface: `nic` is the modeled NIC alone, `vmmc` VMMC's \
         deliberate update on it (an update with a notification, answered the same way; streamed \
         updates with one notification at the end), `bip` the BIP protocol on it, `fm` and `fm1` \
         the FM 2.x and FM 1.x interfaces on BIP, and `mpi-bip`, \
         `mpi-fm`, `mpi-fm1` MPI point-to-point through the MPICH channel over each of them.\n\n",
    );
    s.push_str(
        "- **Latency**: the BIP paper's method: each round trip is timed on its own and the figure \
         is the median of round trip / 2 over at least 1000 round trips (fewer, never under 20, for \
         the largest messages).\n\
         - **Bandwidth**: streaming with a window of outstanding messages; median over timed \
         repetitions of bytes / time, in 10^6 bytes per second (MB/s).\n\
         - **Bidirectional bandwidth**: both processes stream to each other at once; bytes moved \
         both ways / time.\n\
         - **N1/2**: the message size at which a layer reaches half of its peak bandwidth \
         (interpolated between measured sizes), for streaming and for ping-pong (size / latency).\n\
         - **% of the layer below**: a layer's bandwidth divided by the bandwidth of the layer it \
         is built on at the same size, as in Figures 4(b) and 6(b) of the FM 2.x paper; for \
         latency, the lower layer's latency divided by this layer's (100% = the layer adds \
         nothing).\n\
         - **Counters**: a short loop of round trips at each counted size between two reads of \
         each layer's counters, divided by the number of messages.\n\n",
    );
    writeln!(
        s,
        "Profiles in this report: {}. Timing here is from a shared machine: compare layers measured in \
         the same run, not across runs.\n",
        names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
    )
    .unwrap();
    s
}

/// The section of one profile: charts, tables, summary, MPICH, published figures.
pub fn profile_section(
    profile: &Profile,
    images: &[Image],
    published: Option<&Published>,
) -> String {
    let mut s = String::new();
    writeln!(s, "## Profile `{}`\n", profile.name).unwrap();
    for image in images {
        writeln!(s, "![{}]({})\n", image.title, image.svg).unwrap();
        writeln!(s, "([PNG]({}))\n", image.png).unwrap();
    }
    s.push_str(&summary_table(profile));
    s.push_str(&value_table(
        profile,
        "Latency (us, half round trip, median)",
        |p| Some(p.latency_us),
        2,
    ));
    s.push_str(&value_table(
        profile,
        "Bandwidth (MB/s, streaming)",
        |p| Some(p.bandwidth_mb_s),
        1,
    ));
    if profile
        .layers
        .iter()
        .any(|(_, pts)| pts.iter().any(|p| p.bidir_mb_s.is_some()))
    {
        s.push_str(&value_table(
            profile,
            "Bidirectional bandwidth (MB/s, both ways)",
            |p| p.bidir_mb_s,
            1,
        ));
    }
    s.push_str(&efficiency_table(profile));
    s.push_str(&vmmc_share(profile));
    if let Some(refs) = published {
        s.push_str(&published_table(profile, refs));
    }
    s
}

/// Peaks and N1/2 per layer, with the share of the layer below's peak.
fn summary_table(profile: &Profile) -> String {
    let mut s = String::from("### Peaks and N1/2\n\n");
    s.push_str("| layer | min latency (us) | peak bandwidth (MB/s) | % of layer below's peak | peak both ways (MB/s) | N1/2 streaming | N1/2 ping-pong |\n");
    s.push_str("|---|---:|---:|---:|---:|---:|---:|\n");
    let peak = |pts: &[Point]| {
        pts.iter()
            .map(|p| p.bandwidth_mb_s)
            .filter(|v| v.is_finite())
            .fold(0.0, f64::max)
    };
    // (shown as, summary key, points)
    let mut rows: Vec<(&str, &str, &[Point])> = profile
        .layers
        .iter()
        .map(|(l, p)| (l.as_str(), l.as_str(), p.as_slice()))
        .collect();
    if let Some(m) = &profile.mpich {
        rows.push(("MPICH", "mpich", m.as_slice()));
    }
    let peak_of = |key: &str, pts: &[Point]| {
        profile
            .summary_value(key, "peak_bandwidth_mb_s")
            .unwrap_or_else(|| peak(pts))
    };
    for (shown, key, pts) in rows {
        let min_lat = pts
            .iter()
            .map(|p| p.latency_us)
            .filter(|v| v.is_finite())
            .fold(f64::INFINITY, f64::min);
        let peak_bw = peak_of(key, pts);
        let share = super::below(key)
            .and_then(|b| Some(peak_of(b, profile.points(b)?)))
            .and_then(|b| percent(peak_bw, b));
        let bidir = pts
            .iter()
            .filter_map(|p| p.bidir_mb_s)
            .fold(None, |a: Option<f64>, v| Some(a.map_or(v, |a| a.max(v))));
        let n_half = |k: &str| {
            profile
                .summary_value(key, k)
                .map(|n| format_bytes(n.round() as u64))
                .unwrap_or_else(|| "-".into())
        };
        writeln!(
            s,
            "| {shown} | {} | {} | {} | {} | {} | {} |",
            num(Some(min_lat), 2),
            num(Some(peak_bw), 1),
            share.map_or("-".into(), |v| format!("{v:.0}%")),
            num(bidir, 1),
            n_half("n_half_streaming_bytes"),
            n_half("n_half_pingpong_bytes"),
        )
        .unwrap();
    }
    s.push('\n');
    s
}

/// Sizes down, layers (and MPICH) across.
fn value_table(
    profile: &Profile,
    title: &str,
    value: impl Fn(&Point) -> Option<f64>,
    decimals: usize,
) -> String {
    let mut s = format!("### {title}\n\n| size |");
    let mut columns: Vec<(&str, &[Point])> = profile
        .layers
        .iter()
        .map(|(l, p)| (l.as_str(), p.as_slice()))
        .collect();
    if let Some(m) = &profile.mpich {
        columns.push(("MPICH", m));
    }
    for (name, _) in &columns {
        write!(s, " {name} |").unwrap();
    }
    s.push_str("\n|---:|");
    s.push_str(&"---:|".repeat(columns.len()));
    s.push('\n');
    for size in profile.sizes() {
        write!(s, "| {} |", format_bytes(size)).unwrap();
        for (_, pts) in &columns {
            write!(s, " {} |", num(at(pts, size).and_then(&value), decimals)).unwrap();
        }
        s.push('\n');
    }
    s.push('\n');
    s
}

/// Per size and pair: bandwidth % of the layer below, and the latency the layer adds.
fn efficiency_table(profile: &Profile) -> String {
    let pairs = profile.pairs();
    if pairs.is_empty() {
        return String::new();
    }
    let mut s = String::from("### Each layer against the layer below\n\n");
    s.push_str("Bandwidth as % of the layer below's at the same size, and latency added over it (us).\n\n| size |");
    for (u, l) in &pairs {
        write!(s, " {u}/{l} bw % | {u} adds (us) |").unwrap();
    }
    s.push_str("\n|---:|");
    s.push_str(&"---:|---:|".repeat(pairs.len()));
    s.push('\n');
    for size in profile.sizes() {
        write!(s, "| {} |", format_bytes(size)).unwrap();
        for (u, l) in &pairs {
            let (up, lo) = (
                profile.points(u).and_then(|p| at(p, size)),
                profile.points(l).and_then(|p| at(p, size)),
            );
            let (bw, added) = match (up, lo) {
                (Some(up), Some(lo)) => (
                    percent(up.bandwidth_mb_s, lo.bandwidth_mb_s),
                    Some(up.latency_us - lo.latency_us),
                ),
                _ => (None, None),
            };
            write!(
                s,
                " {} | {} |",
                bw.map_or("-".into(), |v| format!("{v:.0}%")),
                num(added, 2)
            )
            .unwrap();
        }
        s.push('\n');
    }
    s.push('\n');
    s
}

/// VMMC against the NIC it runs on, beside the paper's share of its hardware's limit.
fn vmmc_share(profile: &Profile) -> String {
    let (Some(v), Some(n)) = (profile.points("vmmc"), profile.points("nic")) else {
        return String::new();
    };
    let mut s = String::from("### VMMC's deliberate update as a share of the NIC\n\n");
    writeln!(
        s,
        "The VMMC paper's deliberate update delivered 108.4 MB/s, {VMMC_PAPER_PERCENT:.0}% of the \
         110 MB/s its hardware allowed (seed 003, section 5); here the hardware is the NIC layer, \
         and issue 14 asks for at least 95% of its bandwidth from 64 KiB up.\n"
    )
    .unwrap();
    s.push_str(
        "| size | vmmc bw % of nic | paper | nic latency % of vmmc's |\n|---:|---:|---:|---:|\n",
    );
    for p in v.iter().filter(|p| p.size > 0) {
        let Some(q) = at(n, p.size) else { continue };
        writeln!(
            s,
            "| {} | {} | {VMMC_PAPER_PERCENT:.0}% | {} |",
            format_bytes(p.size),
            percent(p.bandwidth_mb_s, q.bandwidth_mb_s).map_or("-".into(), |v| format!("{v:.0}%")),
            percent(q.latency_us, p.latency_us).map_or("-".into(), |v| format!("{v:.0}%")),
        )
        .unwrap();
    }
    s.push('\n');
    s
}

/// The papers' figures drawn on this profile's charts, with their sources.
fn published_table(profile: &Profile, refs: &Published) -> String {
    let mut s = String::from("### The papers' published figures (dashed on the charts)\n\n");
    writeln!(s, "{}\n", refs.about).unwrap();
    s.push_str("| series | measured here? | source |\n|---|---|---|\n");
    for r in &refs.series {
        let here = if profile.points(&r.layer).is_some() {
            "yes"
        } else {
            "no (layer not in this run)"
        };
        writeln!(
            s,
            "| {} | {here} | {} |",
            r.label,
            r.source.replace('|', "/")
        )
        .unwrap();
    }
    s.push('\n');
    s
}

/// A table cell: the number, or "-" when missing.
fn num(v: Option<f64>, decimals: usize) -> String {
    match v {
        Some(v) if v.is_finite() => {
            if v.abs() >= 1e6 {
                format_number(v)
            } else {
                format!("{v:.decimals$}")
            }
        }
        _ => "-".into(),
    }
}
