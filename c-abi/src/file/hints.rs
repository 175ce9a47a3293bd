//! The info hints of a file: every key the program gives is kept and reported back by
//! `MPI_File_get_info`, with ROMIO's names and defaults for the ones it did not set (so a
//! program tuned for ROMIO reads back what it expects), and the ones that act are read
//! here.
//!
//! | key | default | acts |
//! |---|---|---|
//! | `cb_buffer_size` | 16777216 | the largest piece of its file domain an aggregator does at once (two-phase) |
//! | `cb_nodes` | one aggregator per host | how many aggregators in all, spread over the hosts; reported as the number in force |
//! | `cb_config_list` | `*:1` | `*:N` (or `*:*`): aggregators per host when `cb_nodes` is not set; other lists are kept, not acted on |
//! | `romio_cb_read`, `romio_cb_write` | automatic | `enable`: collective access is always two-phase; `disable`: never (each process accesses alone); `automatic`: two-phase when the processes' accesses interleave or one is noncontiguous |
//! | `striping_unit` | (only if set) | file domain boundaries are multiples of it |
//! | `romio_ds_read`, `romio_ds_write` | automatic | `disable` turns data sieving off |
//! | `ind_rd_buffer_size` | 4194304 | the largest sieving block of a read |
//! | `ind_wr_buffer_size` | 524288 | the largest sieving block of a write |
//! | `striping_factor` | (only if set) | no |

use crate::info::Hints;
use std::ffi::c_int;

/// Bytes of one read sieving block unless `ind_rd_buffer_size` says otherwise (ROMIO's).
pub(crate) const READ_BUFFER: usize = 4 << 20;
/// Bytes of one write sieving block unless `ind_wr_buffer_size` says otherwise (ROMIO's).
pub(crate) const WRITE_BUFFER: usize = 512 << 10;
/// Bytes of an aggregator's piece unless `cb_buffer_size` says otherwise (ROMIO's).
pub(crate) const CB_BUFFER: usize = 16 << 20;

/// The hints in force on a file whose processes are on `hosts` (one host color per rank):
/// the program's, then ROMIO's defaults for the keys it did not set; `cb_nodes` is the
/// number of aggregators two-phase I/O uses.
pub(crate) fn in_force(set: &Hints, hosts: &[c_int]) -> Hints {
    let mut h = set.clone();
    let defaults = [
        ("cb_buffer_size", CB_BUFFER.to_string()),
        ("romio_cb_read", "automatic".into()),
        ("romio_cb_write", "automatic".into()),
        ("cb_config_list", "*:1".into()),
        ("romio_ds_read", "automatic".into()),
        ("romio_ds_write", "automatic".into()),
        ("ind_rd_buffer_size", READ_BUFFER.to_string()),
        ("ind_wr_buffer_size", WRITE_BUFFER.to_string()),
    ];
    for (k, v) in defaults {
        if h.get(k).is_none() {
            h.set(k.into(), v);
        }
    }
    h.set("cb_nodes".into(), aggregators(set, hosts).len().to_string());
    h
}

/// When a collective access is two-phase (`romio_cb_read` / `romio_cb_write`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Buffering {
    /// Always.
    Enable,
    /// Never: every process accesses the file alone.
    Disable,
    /// When the accesses interleave or one is noncontiguous (ROMIO's rule).
    Automatic,
}

/// What two-phase I/O reads from the hints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Collective {
    pub read: Buffering,
    pub write: Buffering,
    /// Largest piece of a file domain done at once (bytes).
    pub buffer: usize,
    /// The aggregators (ranks of the file's communicator), ascending.
    pub aggregators: Vec<usize>,
    /// File domain boundaries are multiples of this (bytes), if set.
    pub striping_unit: Option<u64>,
}

/// The two-phase settings of a file whose processes are on `hosts`.
pub(crate) fn collective(h: &Hints, hosts: &[c_int]) -> Collective {
    Collective {
        read: buffering(h.get("romio_cb_read")),
        write: buffering(h.get("romio_cb_write")),
        buffer: number(h, "cb_buffer_size").unwrap_or(CB_BUFFER as u64) as usize,
        aggregators: aggregators(h, hosts),
        striping_unit: number(h, "striping_unit"),
    }
}

fn buffering(v: Option<&str>) -> Buffering {
    match v.map(str::trim) {
        Some(v) if v.eq_ignore_ascii_case("enable") => Buffering::Enable,
        Some(v) if v.eq_ignore_ascii_case("disable") => Buffering::Disable,
        _ => Buffering::Automatic,
    }
}

/// A positive number hint.
fn number(h: &Hints, key: &str) -> Option<u64> {
    h.get(key)
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|&n| n > 0)
}

/// The aggregators of processes on `hosts`: `cb_nodes` of them if set (at most one per
/// process), else `cb_config_list`'s `*:N` per host (1 by default, `*:*` every process);
/// spread over the hosts: each host's first process, then each host's second, and so on.
/// Ascending ranks.
pub(crate) fn aggregators(h: &Hints, hosts: &[c_int]) -> Vec<usize> {
    // The ranks of each host, hosts in order of their first rank.
    let mut by_host: Vec<(c_int, Vec<usize>)> = Vec::new();
    for (rank, &host) in hosts.iter().enumerate() {
        match by_host.iter_mut().find(|(h, _)| *h == host) {
            Some((_, ranks)) => ranks.push(rank),
            None => by_host.push((host, vec![rank])),
        }
    }
    let total = match number(h, "cb_nodes") {
        Some(n) => (n as usize).min(hosts.len()),
        None => {
            let per_host = per_host(h.get("cb_config_list"));
            by_host.iter().map(|(_, r)| r.len().min(per_host)).sum()
        }
    };
    let mut picked = Vec::with_capacity(total);
    let mut level = 0;
    while picked.len() < total {
        for (_, ranks) in &by_host {
            if picked.len() < total {
                if let Some(&r) = ranks.get(level) {
                    picked.push(r);
                }
            }
        }
        level += 1;
    }
    picked.sort_unstable();
    picked
}

/// Aggregators per host a `cb_config_list` asks for: `*:N`, `*:*` (all), else 1.
fn per_host(list: Option<&str>) -> usize {
    let Some(rest) = list.and_then(|l| l.trim().strip_prefix("*:")) else {
        return 1;
    };
    if rest.trim() == "*" {
        return usize::MAX;
    }
    rest.trim()
        .parse::<usize>()
        .ok()
        .filter(|&n| n > 0)
        .unwrap_or(1)
}

/// The sieving block of a read (`None`: sieving is off).
pub(crate) fn read_sieve(h: &Hints) -> Option<usize> {
    sieve(h, "romio_ds_read", "ind_rd_buffer_size", READ_BUFFER)
}

/// The sieving block of a write (`None`: sieving is off).
pub(crate) fn write_sieve(h: &Hints) -> Option<usize> {
    sieve(h, "romio_ds_write", "ind_wr_buffer_size", WRITE_BUFFER)
}

fn sieve(h: &Hints, switch: &str, size: &str, default: usize) -> Option<usize> {
    if h.get(switch)
        .is_some_and(|v| v.eq_ignore_ascii_case("disable"))
    {
        return None;
    }
    let bytes = h
        .get(size)
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or(default);
    Some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_fill_in_and_the_sieving_keys_act() {
        let mut set = Hints::default();
        set.set("striping_unit".into(), "65536".into());
        set.set("romio_ds_write".into(), "disable".into());
        set.set("ind_rd_buffer_size".into(), "1024".into());
        let h = in_force(&set, &[7, 7, 7, 7]);
        assert_eq!(h.get("striping_unit"), Some("65536"));
        assert_eq!(h.get("cb_nodes"), Some("1"), "one aggregator per host");
        assert_eq!(h.get("cb_config_list"), Some("*:1"));
        assert_eq!(h.get("cb_buffer_size"), Some("16777216"));
        assert_eq!(read_sieve(&h), Some(1024));
        assert_eq!(write_sieve(&h), None);
        assert_eq!(write_sieve(&Hints::default()), Some(WRITE_BUFFER));
    }

    #[test]
    fn aggregators_spread_over_hosts() {
        let hosts = [1, 1, 2, 2, 1, 2, 3, 1];
        let none = Hints::default();
        assert_eq!(aggregators(&none, &hosts), vec![0, 2, 6]);
        let mut h = Hints::default();
        h.set("cb_nodes".into(), "5".into());
        assert_eq!(aggregators(&h, &hosts), vec![0, 1, 2, 3, 6]);
        h.set("cb_nodes".into(), "99".into());
        assert_eq!(aggregators(&h, &hosts).len(), 8);
        let mut l = Hints::default();
        l.set("cb_config_list".into(), "*:2".into());
        assert_eq!(aggregators(&l, &hosts), vec![0, 1, 2, 3, 6]);
        l.set("cb_config_list".into(), "*:*".into());
        assert_eq!(aggregators(&l, &hosts).len(), 8);
        assert_eq!(in_force(&h, &hosts).get("cb_nodes"), Some("8"));
    }

    #[test]
    fn the_collective_settings_read_the_switches() {
        let mut h = Hints::default();
        h.set("romio_cb_write".into(), "disable".into());
        h.set("romio_cb_read".into(), "ENABLE".into());
        h.set("cb_buffer_size".into(), "4096".into());
        let c = collective(&h, &[0, 0]);
        assert_eq!((c.read, c.write), (Buffering::Enable, Buffering::Disable));
        assert_eq!((c.buffer, c.aggregators.clone()), (4096, vec![0]));
        assert_eq!(
            collective(&Hints::default(), &[0]).write,
            Buffering::Automatic
        );
    }
}
