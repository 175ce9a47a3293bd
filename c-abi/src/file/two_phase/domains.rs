//! The arithmetic of two-phase I/O, pure: file domains, and which part of a process's access
//! falls in a piece of a domain.

use crate::file::view::Extent;

/// The file domains of `naggs` aggregators over the global range `[lo, hi)`: equal shares
/// (the last ones shorter or empty), boundaries rounded up to multiples of `stripe` when set.
/// Domain `i` is `[bounds[i], bounds[i + 1])`.
pub(crate) fn file_domains(lo: u64, hi: u64, naggs: usize, stripe: Option<u64>) -> Vec<u64> {
    let naggs = naggs.max(1) as u64;
    let span = hi.saturating_sub(lo);
    let share = span.div_ceil(naggs).max(1);
    let mut bounds = Vec::with_capacity(naggs as usize + 1);
    bounds.push(lo);
    for i in 1..naggs {
        let mut b = lo.saturating_add(share.saturating_mul(i));
        if let Some(s) = stripe.filter(|&s| s > 1) {
            b = b.div_ceil(s).saturating_mul(s);
        }
        let prev = *bounds.last().unwrap();
        bounds.push(b.clamp(prev, hi));
    }
    bounds.push(hi.max(lo));
    bounds
}

/// Piece `r` of domain `[start, end)` in pieces of `piece` bytes (empty past the end).
pub(crate) fn piece(start: u64, end: u64, piece: usize, r: usize) -> (u64, u64) {
    let from = start
        .saturating_add((piece as u64).saturating_mul(r as u64))
        .min(end);
    (from, from.saturating_add(piece as u64).min(end))
}

/// How many pieces of `piece` bytes domain `[start, end)` has.
pub(crate) fn pieces(start: u64, end: u64, piece: usize) -> usize {
    end.saturating_sub(start).div_ceil(piece.max(1) as u64) as usize
}

/// One process's access: its file runs in order (offsets ascending, not overlapping: a view
/// goes forward), with the data bytes before each.
#[derive(Debug, Clone, Default)]
pub(crate) struct Runs {
    pub runs: Vec<Extent>,
    before: Vec<u64>,
    pub total: u64,
}

impl Runs {
    pub fn new(runs: Vec<Extent>) -> Runs {
        let mut before = Vec::with_capacity(runs.len());
        let mut total = 0u64;
        for r in &runs {
            before.push(total);
            total += r.len as u64;
        }
        Runs {
            runs,
            before,
            total,
        }
    }

    /// Data bytes of the access in file bytes before `off`.
    pub fn data_before(&self, off: u64) -> u64 {
        // The first run that ends after `off`.
        let i = self
            .runs
            .partition_point(|r| r.offset + r.len as u64 <= off);
        match self.runs.get(i) {
            None => self.total,
            Some(r) => self.before[i] + off.saturating_sub(r.offset),
        }
    }

    /// The data bytes in file bytes `[from, to)`: `[first, end)` of the data stream (a
    /// contiguous stretch, since the runs go forward).
    pub fn data_within(&self, from: u64, to: u64) -> (u64, u64) {
        (self.data_before(from), self.data_before(to.max(from)))
    }

    /// The runs clipped to file bytes `[from, to)`, in order.
    pub fn clipped(&self, from: u64, to: u64) -> impl Iterator<Item = Extent> + '_ {
        let i = self
            .runs
            .partition_point(|r| r.offset + r.len as u64 <= from);
        self.runs[i..]
            .iter()
            .take_while(move |r| r.offset < to)
            .filter_map(move |r| {
                let a = r.offset.max(from);
                let b = (r.offset + r.len as u64).min(to);
                (b > a).then(|| Extent {
                    offset: a,
                    len: (b - a) as usize,
                })
            })
    }

    /// Whether the access is one stretch of the file (or empty).
    pub fn contiguous(&self) -> bool {
        self.runs.len() <= 1
    }

    /// First file byte and the end of the last run, if any data.
    pub fn range(&self) -> Option<(u64, u64)> {
        let (a, z) = (self.runs.first()?, self.runs.last()?);
        Some((a.offset, z.offset + z.len as u64))
    }
}

/// The span of a set of runs and whether they cover it without gaps: `None` if empty.
pub(crate) fn coverage(mut runs: Vec<Extent>) -> Option<(u64, u64, bool)> {
    runs.sort_unstable_by_key(|r| r.offset);
    let lo = runs.first()?.offset;
    let mut end = lo;
    let mut whole = true;
    for r in &runs {
        if r.offset > end {
            whole = false;
        }
        end = end.max(r.offset + r.len as u64);
    }
    Some((lo, end, whole))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ext(offset: u64, len: usize) -> Extent {
        Extent { offset, len }
    }

    #[test]
    fn domains_share_the_range_and_follow_stripes() {
        assert_eq!(file_domains(0, 100, 4, None), vec![0, 25, 50, 75, 100]);
        assert_eq!(file_domains(10, 20, 3, None), vec![10, 14, 18, 20]);
        assert_eq!(file_domains(0, 2, 4, None), vec![0, 1, 2, 2, 2]);
        assert_eq!(
            file_domains(100, 1000, 3, Some(256)),
            vec![100, 512, 768, 1000]
        );
        assert_eq!(file_domains(5, 5, 2, None), vec![5, 5, 5]);
    }

    #[test]
    fn pieces_cut_a_domain() {
        assert_eq!(pieces(10, 35, 10), 3);
        assert_eq!(piece(10, 35, 10, 2), (30, 35));
        assert_eq!(piece(10, 35, 10, 3), (35, 35));
        assert_eq!(pieces(4, 4, 10), 0);
    }

    #[test]
    fn runs_clip_and_count_data() {
        let r = Runs::new(vec![ext(10, 5), ext(20, 5), ext(40, 10)]);
        assert_eq!(r.total, 20);
        assert_eq!(r.data_before(0), 0);
        assert_eq!(r.data_before(12), 2);
        assert_eq!(r.data_before(17), 5);
        assert_eq!(r.data_before(45), 15);
        assert_eq!(r.data_before(99), 20);
        assert_eq!(r.data_within(12, 42), (2, 12));
        let c: Vec<_> = r.clipped(12, 42).collect();
        assert_eq!(c, vec![ext(12, 3), ext(20, 5), ext(40, 2)]);
        assert_eq!(r.clipped(15, 20).count(), 0);
        assert_eq!(r.range(), Some((10, 50)));
        assert!(!r.contiguous());
    }

    #[test]
    fn coverage_finds_holes() {
        assert_eq!(coverage(vec![ext(5, 5), ext(0, 5)]), Some((0, 10, true)));
        assert_eq!(coverage(vec![ext(0, 4), ext(5, 5)]), Some((0, 10, false)));
        assert_eq!(coverage(vec![ext(0, 8), ext(2, 2)]), Some((0, 8, true)));
        assert_eq!(coverage(vec![]), None);
    }
}
