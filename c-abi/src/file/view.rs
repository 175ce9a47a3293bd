//! A file view as arithmetic: which bytes of the file a position of the view names.
//!
//! ```text
//!   file:  | disp |  tile 0 (filetype)  |  tile 1  |  tile 2  | ...     one tile per extent
//!                   ##..##....            ##..##....                     # = the filetype's data
//!   view:           0 1  2 3              4 5  6 7                        data bytes, in order
//! ```
//!
//! A view is a displacement, an elementary type (its size is the unit of positions) and a
//! filetype tiled from the displacement one extent apart. The data of the view is the
//! filetype's data runs of every tile, in order: data byte `d` of the view lies in tile
//! `d / size`, in the run where the running total of the run lengths passes `d % size`.
//! [`View::runs`] turns an access (a first data byte and a length) into the file byte runs
//! it covers, merged where they touch: a contiguous filetype gives one run however long the
//! access, so an access of one block is one system call.
//!
//! Every byte here is a byte of the file: where the view's data representation gives a type
//! another size than in memory (`MPI_LONG` in external32), the etype size and the filetype's
//! runs and extent are those of the file (`datarep::Representation::layout`), and an
//! access's length is its data's length in the file (`OpenFile::place`).
//!
//! Pure arithmetic, no I/O and no MPI handles: the unit tests below cover it.

/// One run of file bytes: `len` bytes from byte `offset` of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Extent {
    pub offset: u64,
    pub len: usize,
}

/// The layout of a view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct View {
    /// Where tile 0 starts, in bytes from the start of the file.
    pub disp: u64,
    /// Bytes of one elementary type (positions count these).
    pub etype_size: usize,
    /// The filetype's data runs within a tile (offset from the tile's start, length), in
    /// order, not overlapping, offsets not below zero.
    tile_runs: Vec<(u64, usize)>,
    /// Data bytes before each run of a tile (prefix sums of the lengths).
    before: Vec<usize>,
    /// Data bytes of one tile.
    tile_size: usize,
    /// Bytes from one tile to the next.
    tile_extent: u64,
}

/// Why a layout cannot be a view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BadView {
    /// The etype has no data.
    EmptyEtype,
    /// The filetype's data is not a whole number of etypes.
    NotEtypes { tile_size: usize, etype_size: usize },
    /// The filetype's runs go backwards, overlap, start before the tile, or span more than its
    /// extent (so that one tile's data would pass the next one's).
    Disorder,
}

impl View {
    /// The view of a whole file as bytes from 0: what `MPI_File_open` sets.
    pub fn bytes() -> View {
        View::new(0, 1, &[(0, 1)], 1).expect("the byte view is valid")
    }

    /// A view from its displacement, etype size, and the filetype's runs (offsets from a
    /// tile's start) and extent.
    pub fn new(
        disp: u64,
        etype_size: usize,
        runs: &[(isize, usize)],
        extent: isize,
    ) -> Result<View, BadView> {
        if etype_size == 0 {
            return Err(BadView::EmptyEtype);
        }
        let mut tile_runs: Vec<(u64, usize)> = Vec::with_capacity(runs.len());
        let mut end = 0u64;
        for &(offset, len) in runs.iter().filter(|r| r.1 > 0) {
            if offset < 0 || (offset as u64) < end {
                return Err(BadView::Disorder);
            }
            match tile_runs.last_mut() {
                Some(last) if last.0 + last.1 as u64 == offset as u64 => last.1 += len,
                _ => tile_runs.push((offset as u64, len)),
            }
            end = offset as u64 + len as u64;
        }
        let tile_size: usize = tile_runs.iter().map(|r| r.1).sum();
        if tile_size == 0 || !tile_size.is_multiple_of(etype_size) {
            return Err(BadView::NotEtypes {
                tile_size,
                etype_size,
            });
        }
        // The tiles' data must not overlap or go backwards: a tile's data spans at most one
        // extent. It need not start at the tile's start: a filetype whose lower bound is not 0
        // (HDF5's hindexed types of absolute addresses, 7920..8000 with extent 80) has its
        // data from that offset in every tile.
        let first = tile_runs.first().map_or(0, |r| r.0);
        if extent <= 0 || end - first > extent as u64 {
            return Err(BadView::Disorder);
        }
        let before = tile_runs
            .iter()
            .scan(0usize, |sum, r| {
                let b = *sum;
                *sum += r.1;
                Some(b)
            })
            .collect();
        Ok(View {
            disp,
            etype_size,
            tile_runs,
            before,
            tile_size,
            tile_extent: extent as u64,
        })
    }

    /// Whether the view's data is one stretch of the file (tiles that touch).
    pub fn is_linear(&self) -> bool {
        self.tile_runs.len() == 1 && self.tile_size as u64 == self.tile_extent
    }

    /// The file byte of data byte `d` of the view.
    pub fn file_byte(&self, d: u64) -> u64 {
        let (tile, within) = (
            d / self.tile_size as u64,
            (d % self.tile_size as u64) as usize,
        );
        let run = self.before.partition_point(|&b| b <= within) - 1;
        self.disp
            + tile * self.tile_extent
            + self.tile_runs[run].0
            + (within - self.before[run]) as u64
    }

    /// The file byte runs of `len` data bytes of the view from data byte `first`, in order,
    /// merged where they touch.
    pub fn runs(&self, first: u64, len: usize) -> Vec<Extent> {
        let mut out: Vec<Extent> = Vec::new();
        if len == 0 {
            return out;
        }
        if self.is_linear() {
            out.push(Extent {
                offset: self.file_byte(first),
                len,
            });
            return out;
        }
        let size = self.tile_size as u64;
        let (mut tile, within) = (first / size, (first % size) as usize);
        let mut run = self.before.partition_point(|&b| b <= within) - 1;
        let mut skip = within - self.before[run];
        let mut left = len;
        while left > 0 {
            let (off, rlen) = self.tile_runs[run];
            let n = (rlen - skip).min(left);
            let offset = self.disp + tile * self.tile_extent + off + skip as u64;
            match out.last_mut() {
                Some(last) if last.offset + last.len as u64 == offset => last.len += n,
                _ => out.push(Extent { offset, len: n }),
            }
            left -= n;
            skip = 0;
            run += 1;
            if run == self.tile_runs.len() {
                run = 0;
                tile += 1;
            }
        }
        out
    }

    /// How many data bytes of the view lie before file byte `end` (for `MPI_SEEK_END`: the
    /// data the file holds).
    pub fn data_before(&self, end: u64) -> u64 {
        if end <= self.disp {
            return 0;
        }
        let from = end - self.disp;
        // Tile k's data lies in [k * extent + first, k * extent + first + extent): the tiles
        // before the one that holds `from` (if any holds it) are whole.
        let first = self.tile_runs[0].0;
        if from <= first {
            return 0;
        }
        let tiles = (from - first) / self.tile_extent;
        let rest = from - tiles * self.tile_extent;
        let partial: u64 = self
            .tile_runs
            .iter()
            .map(|&(off, len)| rest.saturating_sub(off).min(len as u64))
            .sum();
        tiles * self.tile_size as u64 + partial
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ext(offset: u64, len: usize) -> Extent {
        Extent { offset, len }
    }

    #[test]
    fn the_byte_view_is_the_file() {
        let v = View::bytes();
        assert!(v.is_linear());
        assert_eq!(v.runs(10, 5), vec![ext(10, 5)]);
        assert_eq!(v.file_byte(7), 7);
        assert_eq!(v.data_before(100), 100);
        assert!(v.runs(3, 0).is_empty());
    }

    #[test]
    fn a_contiguous_filetype_after_a_displacement_is_one_run() {
        // etype int, filetype 4 ints, displacement 100.
        let v = View::new(100, 4, &[(0, 16)], 16).unwrap();
        assert!(v.is_linear());
        assert_eq!(v.runs(8, 1 << 20), vec![ext(108, 1 << 20)]);
        assert_eq!(v.data_before(50), 0);
        assert_eq!(v.data_before(164), 64);
    }

    #[test]
    fn a_vector_filetype_interleaves_ranks() {
        // Rank 1 of 4: 2 ints of every 8, at byte 8 of each 32-byte tile (a vector resized).
        let v = View::new(0, 4, &[(8, 8)], 32).unwrap();
        assert!(!v.is_linear());
        assert_eq!(v.runs(0, 24), vec![ext(8, 8), ext(40, 8), ext(72, 8)]);
        // Starting mid-run.
        assert_eq!(v.runs(4, 8), vec![ext(12, 4), ext(40, 4)]);
        assert_eq!(v.file_byte(9), 41);
        assert_eq!(v.data_before(44), 12);
        assert_eq!(v.data_before(8), 0);
        assert_eq!(v.data_before(64), 16);
    }

    #[test]
    fn several_runs_per_tile_and_merging_across_tiles() {
        // Runs at 0..2 and 6..8 of an 8-byte tile: the second run of a tile touches the
        // first of the next, so they merge.
        let v = View::new(10, 1, &[(0, 2), (6, 2)], 8).unwrap();
        assert_eq!(v.runs(0, 8), vec![ext(10, 2), ext(16, 4), ext(24, 2)]);
        assert_eq!(v.runs(3, 2), vec![ext(17, 2)]);
        assert_eq!(v.file_byte(4), 18);
    }

    #[test]
    fn adjacent_runs_of_the_type_merge_and_bad_layouts_are_refused() {
        let v = View::new(0, 2, &[(0, 2), (2, 2)], 8).unwrap();
        assert_eq!(v.runs(0, 8), vec![ext(0, 4), ext(8, 4)]);
        assert_eq!(View::new(0, 0, &[(0, 4)], 4), Err(BadView::EmptyEtype));
        assert_eq!(
            View::new(0, 4, &[(0, 6)], 8),
            Err(BadView::NotEtypes {
                tile_size: 6,
                etype_size: 4
            })
        );
        assert_eq!(
            View::new(0, 1, &[(4, 2), (0, 2)], 8),
            Err(BadView::Disorder)
        );
        assert_eq!(View::new(0, 1, &[(-1, 2)], 8), Err(BadView::Disorder));
        assert_eq!(
            View::new(0, 1, &[(0, 2), (1, 2)], 8),
            Err(BadView::Disorder)
        );
        assert_eq!(View::new(0, 1, &[(0, 9)], 8), Err(BadView::Disorder));
        assert_eq!(
            View::new(0, 1, &[(100, 4), (106, 4)], 8),
            Err(BadView::Disorder)
        );
    }

    #[test]
    fn data_may_start_past_the_tiles_start() {
        // HDF5's chunk fill: hindexed runs at absolute addresses 7920..7960..8000, extent 80
        // (lower bound 7920), displacement 0: one stretch from 7920 on.
        let v = View::new(0, 1, &[(7920, 40), (7960, 40)], 80).unwrap();
        assert!(v.is_linear());
        assert_eq!(v.runs(0, 80), vec![ext(7920, 80)]);
        assert_eq!(v.file_byte(0), 7920);
        assert_eq!(v.file_byte(85), 8005);
        assert_eq!(v.data_before(7920), 0);
        assert_eq!(v.data_before(7930), 10);
        assert_eq!(v.data_before(8000), 80);
        assert_eq!(v.data_before(8010), 90);
        // With holes: 2 bytes at 100 and 2 at 104 of a 6-byte extent.
        let v = View::new(10, 1, &[(100, 2), (104, 2)], 6).unwrap();
        assert_eq!(v.runs(0, 8), vec![ext(110, 2), ext(114, 4), ext(120, 2)]);
        assert_eq!(v.file_byte(5), 117);
        assert_eq!(v.file_byte(7), 121);
        assert_eq!(v.data_before(110), 0);
        assert_eq!(v.data_before(113), 2);
        assert_eq!(v.data_before(115), 3);
        assert_eq!(v.data_before(117), 5);
        assert_eq!(v.data_before(118), 6);
    }
}
