//! The info hints of a file: every key the program gives is kept and reported back by
//! `MPI_File_get_info`, with ROMIO's names and defaults for the ones it did not set (so a
//! program tuned for ROMIO reads back what it expects), and the few that act now are read
//! here.
//!
//! | key | default | acts now |
//! |---|---|---|
//! | `cb_buffer_size` | 16777216 | no (collective buffering comes later) |
//! | `cb_nodes` | processes of the file | no |
//! | `romio_cb_read`, `romio_cb_write` | automatic | no |
//! | `romio_ds_read`, `romio_ds_write` | automatic | `disable` turns data sieving off |
//! | `ind_rd_buffer_size` | 4194304 | the largest sieving block of a read |
//! | `ind_wr_buffer_size` | 524288 | the largest sieving block of a write |
//! | `striping_unit`, `striping_factor` | (only if set) | no |

use crate::info::Hints;

/// Bytes of one read sieving block unless `ind_rd_buffer_size` says otherwise (ROMIO's).
pub(crate) const READ_BUFFER: usize = 4 << 20;
/// Bytes of one write sieving block unless `ind_wr_buffer_size` says otherwise (ROMIO's).
pub(crate) const WRITE_BUFFER: usize = 512 << 10;

/// The hints in force: the program's, then ROMIO's defaults for the keys it did not set.
pub(crate) fn in_force(set: &Hints, processes: usize) -> Hints {
    let mut h = set.clone();
    let defaults = [
        ("cb_buffer_size", "16777216".to_string()),
        ("romio_cb_read", "automatic".into()),
        ("romio_cb_write", "automatic".into()),
        ("cb_nodes", processes.to_string()),
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
    h
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
        let h = in_force(&set, 4);
        assert_eq!(h.get("striping_unit"), Some("65536"));
        assert_eq!(h.get("cb_nodes"), Some("4"));
        assert_eq!(h.get("cb_buffer_size"), Some("16777216"));
        assert_eq!(read_sieve(&h), Some(1024));
        assert_eq!(write_sieve(&h), None);
        assert_eq!(write_sieve(&Hints::default()), Some(WRITE_BUFFER));
    }
}
