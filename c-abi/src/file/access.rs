//! Moving data between a contiguous buffer and the file byte runs of an access.
//!
//! A run is one `pread`/`pwrite` of its own, straight from or into the buffer. Runs that lie
//! close together (their span fits the sieving block) are done by data sieving, as ROMIO
//! does: one read of the covering block into a staging buffer; for a read, the runs are
//! copied out of it; for a write, the runs are copied into it and the block is written back
//! whole, under an `fcntl` write lock on its bytes so that another process sieving into the
//! same block (interleaved runs of another rank) waits instead of overwriting our bytes with
//! its stale copy. A block of one run is never sieved.

use super::sys::{self, RangeLock};
use super::view::Extent;
use std::fs::File;
use std::io;

/// How many runs from `runs[first]` on fit one sieving block of `block` bytes (at least 1).
fn block_of(runs: &[Extent], first: usize, block: usize) -> usize {
    let start = runs[first].offset;
    let n = runs[first..]
        .iter()
        .take_while(|r| r.offset + r.len as u64 - start <= block as u64)
        .count();
    n.max(1)
}

/// The lock an access in atomic mode holds over its whole span (first byte of the first run
/// to the end of the last): shared for a read, exclusive for a write, so a read sees each
/// concurrent write whole or not at all. `None` outside atomic mode or for no runs.
fn atomic_lock<'a>(
    f: &'a File,
    runs: &[Extent],
    atomic: bool,
    write: bool,
) -> io::Result<Option<RangeLock<'a>>> {
    let (Some(a), Some(z), true) = (runs.first(), runs.last(), atomic) else {
        return Ok(None);
    };
    let len = z.offset + z.len as u64 - a.offset;
    let lock = if write {
        RangeLock::write(f, a.offset, len)?
    } else {
        RangeLock::read(f, a.offset, len)?
    };
    Ok(Some(lock))
}

/// Reads the runs, in order, into `out` (their total length): the data bytes read, which
/// stop short at the end of the file (the runs go forward, so the rest is past it too).
/// `atomic`: under a shared lock over the whole span (atomic mode).
pub(crate) fn read(
    f: &File,
    runs: &[Extent],
    out: &mut [u8],
    sieve: Option<usize>,
    atomic: bool,
) -> io::Result<usize> {
    let _lock = atomic_lock(f, runs, atomic, false)?;
    let mut staging = Vec::new();
    let (mut i, mut at) = (0, 0);
    while i < runs.len() {
        let n = sieve.map_or(1, |b| block_of(runs, i, b));
        if n == 1 {
            let r = runs[i];
            let got = sys::read_full(f, &mut out[at..at + r.len], r.offset)?;
            at += got;
            if got < r.len {
                return Ok(at);
            }
            i += 1;
            continue;
        }
        let block = &runs[i..i + n];
        let start = block[0].offset;
        let span = (block[n - 1].offset + block[n - 1].len as u64 - start) as usize;
        staging.resize(span, 0);
        let got = sys::read_full(f, &mut staging, start)?;
        for r in block {
            let from = (r.offset - start) as usize;
            let have = got.saturating_sub(from).min(r.len);
            out[at..at + have].copy_from_slice(&staging[from..from + have]);
            at += have;
            if have < r.len {
                return Ok(at);
            }
        }
        i += n;
    }
    Ok(at)
}

/// Writes `data` (their total length) to the runs. `atomic`: under an exclusive lock over the
/// whole span (atomic mode), and then the sieving blocks take none of their own (a process's
/// `fcntl` locks merge: unlocking a block would release part of the span's).
///
/// Outside atomic mode a sieving block whose lock another process holds is not waited for at
/// once: it is put aside and done after the blocks that were free, waiting for its lock then.
/// Processes that sieve interleaved runs of the same span (ranks writing their parts of one
/// region, all starting at its first block) thus spread over different blocks instead of
/// queueing behind each other block after block. The runs are disjoint, so the order in
/// which the blocks reach the file does not change what it holds.
pub(crate) fn write(
    f: &File,
    runs: &[Extent],
    data: &[u8],
    sieve: Option<usize>,
    atomic: bool,
) -> io::Result<()> {
    let _lock = atomic_lock(f, runs, atomic, true)?;
    let mut staging = Vec::new();
    // Sieving blocks whose lock was busy: (first run, runs, first data byte).
    let mut busy: Vec<(usize, usize, usize)> = Vec::new();
    let (mut i, mut at) = (0, 0);
    while i < runs.len() {
        let n = sieve.map_or(1, |b| block_of(runs, i, b));
        let bytes: usize = runs[i..i + n].iter().map(|r| r.len).sum();
        if n == 1 {
            let r = runs[i];
            sys::write_full(f, &data[at..at + r.len], r.offset)?;
        } else if atomic {
            sieve_block(f, &runs[i..i + n], &data[at..at + bytes], &mut staging)?;
        } else {
            let (start, span) = span_of(&runs[i..i + n]);
            match RangeLock::try_write(f, start, span)? {
                Some(_lock) => {
                    sieve_block(f, &runs[i..i + n], &data[at..at + bytes], &mut staging)?
                }
                None => busy.push((i, n, at)),
            }
        }
        at += bytes;
        i += n;
    }
    for (i, n, at) in busy {
        let (start, span) = span_of(&runs[i..i + n]);
        let _lock = RangeLock::write(f, start, span)?;
        let bytes: usize = runs[i..i + n].iter().map(|r| r.len).sum();
        sieve_block(f, &runs[i..i + n], &data[at..at + bytes], &mut staging)?;
    }
    Ok(())
}

/// The first byte of a block of runs and the bytes from there to the end of its last run.
fn span_of(block: &[Extent]) -> (u64, u64) {
    let (a, z) = (block[0], block[block.len() - 1]);
    (a.offset, z.offset + z.len as u64 - a.offset)
}

/// One sieving write, its lock held by the caller: reads the block's span into `staging`,
/// puts `data` (the runs' bytes, in order) into their places and writes the span back.
fn sieve_block(f: &File, block: &[Extent], data: &[u8], staging: &mut Vec<u8>) -> io::Result<()> {
    let (start, span) = span_of(block);
    let span = span as usize;
    staging.resize(span, 0);
    // Past the end of the file the gaps are zero, which is what a hole reads as.
    let got = sys::read_full(f, &mut staging[..span], start)?;
    staging[got..span].fill(0);
    let mut at = 0;
    for r in block {
        let from = (r.offset - start) as usize;
        staging[from..from + r.len].copy_from_slice(&data[at..at + r.len]);
        at += r.len;
    }
    sys::write_full(f, &staging[..span], start)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ext(offset: u64, len: usize) -> Extent {
        Extent { offset, len }
    }

    fn scratch(name: &str) -> (std::path::PathBuf, File) {
        let dir = std::env::temp_dir().join(format!("file-access-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        let f = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        (dir, f)
    }

    #[test]
    fn blocks_group_runs_that_fit() {
        let runs = [ext(0, 4), ext(8, 4), ext(100, 4), ext(104, 50)];
        assert_eq!(block_of(&runs, 0, 16), 2);
        assert_eq!(block_of(&runs, 2, 16), 1);
        assert_eq!(
            block_of(&runs, 3, 16),
            1,
            "a run longer than the block alone"
        );
        assert_eq!(block_of(&runs, 0, 1000), 4);
    }

    #[test]
    fn sieved_and_plain_writes_and_reads_agree() {
        for sieve in [None, Some(16), Some(1 << 20)] {
            let (dir, f) = scratch(&format!("{sieve:?}"));
            sys::write_full(&f, &[0xee; 40], 0).unwrap();
            let runs = [ext(2, 3), ext(10, 2), ext(30, 4), ext(36, 1)];
            let data: Vec<u8> = (1..=10).collect();
            write(&f, &runs, &data, sieve, false).unwrap();
            let mut all = vec![0; 40];
            sys::read_full(&f, &mut all, 0).unwrap();
            let mut want = vec![0xee; 40];
            want[2..5].copy_from_slice(&[1, 2, 3]);
            want[10..12].copy_from_slice(&[4, 5]);
            want[30..34].copy_from_slice(&[6, 7, 8, 9]);
            want[36] = 10;
            assert_eq!(all, want, "sieve {sieve:?}");
            let mut back = vec![0; 10];
            assert_eq!(read(&f, &runs, &mut back, sieve, false).unwrap(), 10);
            assert_eq!(back, data);
            // Past the end: the count stops where the file does.
            let far = [ext(36, 2), ext(39, 4)];
            let mut tail = vec![0; 6];
            assert_eq!(read(&f, &far, &mut tail, sieve, false).unwrap(), 3);
            assert_eq!(&tail[..3], &[10, 0xee, 0xee]);
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }

    #[test]
    fn a_sieved_write_past_the_end_leaves_zero_holes() {
        let (dir, f) = scratch("holes");
        write(&f, &[ext(4, 2), ext(8, 2)], &[1, 2, 3, 4], Some(64), false).unwrap();
        let mut all = vec![9; 12];
        assert_eq!(sys::read_full(&f, &mut all, 0).unwrap(), 10);
        assert_eq!(&all[..10], &[0, 0, 0, 0, 1, 2, 0, 0, 3, 4]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
