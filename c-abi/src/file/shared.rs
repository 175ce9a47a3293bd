//! Shared file pointers (MPI 3.1 §13.4.4): the one pointer all processes of a file move, kept
//! where every process can reach it even when they run on different hosts and share nothing
//! but the file system.
//!
//! **Where it lives.** As in ROMIO, the pointer is an 8-byte little-endian number in a small
//! hidden side file next to the file: `dir/.name.shfp.<token>`, where `<token>` is 16 hex
//! digits rank 0 draws at open and the open hands to every process ([`new_token`],
//! [`side_path`]). A fresh token per open keeps two opens of one file (two jobs, or one job
//! opening twice) apart. Every change is a read-modify-write of those 8 bytes under an
//! `fcntl` write lock on them ([`RangeLock`]), so processes anywhere on the file system see
//! one sequence of values; the lock is the file system's, not this process's.
//!
//! **Lazily made, always removed.** A file whose program never uses its shared pointer gets no
//! side file: the first use on some process creates it (`O_CREAT`, no truncation, so two
//! processes creating it at once open the same file). While it does not exist, or is empty,
//! the pointer is [`SharedPointer::initial`]: 0, or the end of the file (bytes) when it was
//! opened `MPI_MODE_APPEND` (rank 0 measures it during the open, before any process can
//! write). `MPI_File_set_view` sets it back to 0: rank 0 writes 0 into the side file if it
//! exists (without creating it) and every process sets its `initial` to 0. At close, once
//! every process has come (the close's barrier), rank 0 unlinks the side file; nothing is
//! left after a normal close. If the job dies before its close, the side file (8 bytes,
//! hidden) stays; `MPI_File_delete` of the file removes every `.name.shfp.*` side file next
//! to it ([`remove_side_files`]). A dead process's locks are released by the system, so a
//! crash never leaves the pointer locked.
//!
//! **Units.** The number counts etypes of the view, which every process must have the same
//! (the standard's rule for shared pointers); this module does not know views, only numbers.

use crate::file::sys::{read_full, write_full, RangeLock};
use std::fs::File;
use std::hash::{BuildHasher, Hasher};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The bytes of the side file that hold the pointer (and that the lock covers).
const WIDTH: u64 = 8;

/// The hidden name's middle part: `.name` + `SUFFIX` + token.
const SUFFIX: &str = ".shfp.";

/// One process's handle on the shared pointer of an open file.
#[derive(Debug)]
pub(crate) struct SharedPointer {
    /// The side file.
    path: PathBuf,
    /// The pointer while the side file does not exist or is empty.
    pub initial: u64,
    /// The side file, once this process has used it.
    side: Option<File>,
}

/// A token for a side file name: random (the process's randomly keyed hasher) over the
/// process id, the time and a count of tokens drawn, so two opens anywhere do not collide.
pub(crate) fn new_token() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static DRAWN: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.write_u64(DRAWN.fetch_add(1, Ordering::Relaxed));
    if let Ok(t) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        h.write_u128(t.as_nanos());
    }
    h.finish()
}

/// The directory of `data` (`.` for a bare name) and its last component.
fn split(data: &str) -> (PathBuf, String) {
    let p = Path::new(data);
    let dir = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = p
        .file_name()
        .map_or_else(|| "file".to_string(), |n| n.to_string_lossy().into_owned());
    (dir, name)
}

/// The side file of the file named `data` for the open that drew `token`.
pub(crate) fn side_path(data: &str, token: u64) -> PathBuf {
    let (dir, name) = split(data);
    dir.join(format!(".{name}{SUFFIX}{token:016x}"))
}

/// Whether `entry` (a name in the directory of the file called `name`) is one of its side
/// files.
fn is_side_file_of(entry: &str, name: &str) -> bool {
    entry
        .strip_prefix('.')
        .and_then(|r| r.strip_prefix(name))
        .and_then(|r| r.strip_prefix(SUFFIX))
        .is_some_and(|t| t.len() == 16 && t.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Removes every side file of the file named `data` (`MPI_File_delete`: those of jobs that
/// died before closing it); how many were removed. A missing directory is no error.
pub(crate) fn remove_side_files(data: &str) -> io::Result<usize> {
    let (dir, name) = split(data);
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let mut removed = 0;
    for entry in entries {
        let entry = entry?;
        if is_side_file_of(&entry.file_name().to_string_lossy(), &name) {
            match std::fs::remove_file(entry.path()) {
                Ok(()) => removed += 1,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(removed)
}

/// The pointer the side file's first bytes hold (`bytes` of them were read): `initial` for
/// an empty file.
fn decode(buf: &[u8; WIDTH as usize], bytes: usize, initial: u64) -> io::Result<u64> {
    match bytes {
        0 => Ok(initial),
        8 => Ok(u64::from_le_bytes(*buf)),
        n => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("the shared file pointer's file holds {n} bytes, not 8"),
        )),
    }
}

/// The offsets of an ordered access: the exclusive prefix of `sizes` (one per rank, in rank
/// order) at rank `me`, and their total.
pub(crate) fn ordered_place(sizes: &[u64], me: usize) -> (u64, u64) {
    let before = sizes[..me].iter().sum();
    (before, sizes.iter().sum())
}

/// Where a seek of `offset` etypes from `base` leads; `None` if before 0.
pub(crate) fn seek_target(base: u64, offset: i64) -> Option<u64> {
    let to = base as i128 + offset as i128;
    u64::try_from(to).ok()
}

impl SharedPointer {
    /// The shared pointer of the file named `data`, for the open that drew `token`; `initial`
    /// its value until it is first moved.
    pub fn new(data: &str, token: u64, initial: u64) -> SharedPointer {
        SharedPointer {
            path: side_path(data, token),
            initial,
            side: None,
        }
    }

    /// The side file's path (for messages).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The side file, opened (and created if need be) on first use.
    fn side(&mut self) -> io::Result<&File> {
        if self.side.is_none() {
            let f = File::options()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o666)
                .open(&self.path)?;
            self.side = Some(f);
        }
        Ok(self.side.as_ref().expect("just opened"))
    }

    /// Moves the pointer forward by `n` and gives where it was (one locked read-modify-write).
    pub fn fetch_add(&mut self, n: u64) -> io::Result<u64> {
        let initial = self.initial;
        let f = self.side()?;
        let _lock = RangeLock::write(f, 0, WIDTH)?;
        let old = read_value(f, initial)?;
        let new = old.checked_add(n).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "the shared file pointer would pass 2^64",
            )
        })?;
        if n != 0 {
            write_full(f, &new.to_le_bytes(), 0)?;
        }
        Ok(old)
    }

    /// The pointer now.
    pub fn get(&mut self) -> io::Result<u64> {
        self.fetch_add(0)
    }

    /// Sets the pointer to `v`.
    pub fn set(&mut self, v: u64) -> io::Result<()> {
        let f = self.side()?;
        let _lock = RangeLock::write(f, 0, WIDTH)?;
        write_full(f, &v.to_le_bytes(), 0)
    }

    /// Sets the pointer to `v` where it is kept, without creating the side file: writes it
    /// there if the side file exists (called by one process), and makes `v` the value of a
    /// side file made later (called by every process).
    pub fn reset(&mut self, v: u64, write_it: bool) -> io::Result<()> {
        self.initial = v;
        if !write_it {
            return Ok(());
        }
        if self.side.is_none() {
            match File::options().read(true).write(true).open(&self.path) {
                Ok(f) => self.side = Some(f),
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
                Err(e) => return Err(e),
            }
        }
        self.set(v)
    }

    /// At close (after every process came): closes this process's side file descriptor and,
    /// if `unlink` (one process), removes the side file if some process made it.
    pub fn discard(&mut self, unlink: bool) -> io::Result<()> {
        self.side = None;
        if !unlink {
            return Ok(());
        }
        match std::fs::remove_file(&self.path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
}

/// The pointer in side file `f` (under its lock).
fn read_value(f: &File, initial: u64) -> io::Result<u64> {
    let mut buf = [0u8; WIDTH as usize];
    let n = read_full(f, &mut buf, 0)?;
    decode(&buf, n, initial)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("file-shared-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn side_file_names_sit_next_to_the_file_and_are_recognised() {
        assert_eq!(
            side_path("/a/b/data.bin", 0xab),
            PathBuf::from("/a/b/.data.bin.shfp.00000000000000ab")
        );
        assert_eq!(
            side_path("data", 1),
            PathBuf::from("./.data.shfp.0000000000000001")
        );
        assert!(is_side_file_of(".data.shfp.00000000000000ab", "data"));
        assert!(!is_side_file_of(".data.shfp.00000000000000ab", "dat"));
        assert!(!is_side_file_of(".data.shfp.xyz", "data"));
        assert!(!is_side_file_of("data.shfp.00000000000000ab", "data"));
        assert!(!is_side_file_of(".data.bin.shfp.00000000000000ab", "data"));
        assert_ne!(new_token(), new_token());
    }

    #[test]
    fn ordered_places_and_seeks() {
        assert_eq!(ordered_place(&[3, 0, 5, 2], 0), (0, 10));
        assert_eq!(ordered_place(&[3, 0, 5, 2], 2), (3, 10));
        assert_eq!(ordered_place(&[3, 0, 5, 2], 3), (8, 10));
        assert_eq!(seek_target(10, -3), Some(7));
        assert_eq!(seek_target(10, -11), None);
        assert_eq!(seek_target(0, 5), Some(5));
        let buf = 7u64.to_le_bytes();
        assert_eq!(decode(&buf, 8, 3).unwrap(), 7);
        assert_eq!(decode(&buf, 0, 3).unwrap(), 3);
        assert!(decode(&buf, 5, 3).is_err());
    }

    #[test]
    fn the_pointer_is_made_lazily_moved_reset_and_removed() {
        let dir = scratch("life");
        let data = dir.join("f.dat");
        let data = data.to_str().unwrap();
        let mut a = SharedPointer::new(data, 42, 100);
        let mut b = SharedPointer::new(data, 42, 100);
        assert!(!a.path().exists(), "nothing is made before the first use");
        b.reset(0, true).unwrap();
        assert!(!a.path().exists(), "a reset makes no side file");
        a.initial = 100;
        b.initial = 100;
        assert_eq!(a.fetch_add(5).unwrap(), 100);
        assert!(a.path().exists());
        assert_eq!(
            b.fetch_add(7).unwrap(),
            105,
            "two handles share one pointer"
        );
        assert_eq!(a.get().unwrap(), 112);
        b.set(3).unwrap();
        assert_eq!(a.get().unwrap(), 3);
        a.reset(0, true).unwrap();
        b.reset(0, false).unwrap();
        assert_eq!(b.get().unwrap(), 0);
        let mut other = SharedPointer::new(data, 43, 0);
        assert_ne!(other.path(), a.path(), "another open, another side file");
        let path = a.path().to_path_buf();
        b.discard(false).unwrap();
        a.discard(true).unwrap();
        assert!(!path.exists(), "removed at close");
        other.discard(true).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn delete_removes_leftover_side_files_only() {
        let dir = scratch("leftover");
        let data = dir.join("f.dat");
        let data = data.to_str().unwrap();
        std::fs::write(data, b"x").unwrap();
        for token in [1, 2] {
            SharedPointer::new(data, token, 0).fetch_add(1).unwrap();
        }
        let other = dir.join("g.dat");
        let mut keep = SharedPointer::new(other.to_str().unwrap(), 3, 0);
        keep.fetch_add(1).unwrap();
        assert_eq!(remove_side_files(data).unwrap(), 2);
        assert!(keep.path().exists(), "another file's side file stays");
        assert!(std::path::Path::new(data).exists());
        assert_eq!(
            remove_side_files(dir.join("none/x").to_str().unwrap()).unwrap(),
            0
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn processes_moving_the_pointer_at_once_never_share_a_slot() {
        // Threads of one process do not exclude each other with fcntl locks, so real
        // processes race here: this test's own executable, run again as a child.
        if let Ok(data) = std::env::var("SHARED_POINTER_CHILD") {
            let mut p = SharedPointer::new(&data, 9, 0);
            let mut got = Vec::new();
            for _ in 0..500 {
                got.push(p.fetch_add(1).unwrap().to_string());
            }
            println!("SLOTS {}", got.join(" "));
            return;
        }
        let dir = scratch("race");
        let data = dir.join("f.dat");
        let exe = std::env::current_exe().unwrap();
        let children: Vec<_> = (0..3)
            .map(|_| {
                std::process::Command::new(&exe)
                    .args([
                        "--exact",
                        "file::shared::tests::processes_moving_the_pointer_at_once_never_share_a_slot",
                        "--nocapture",
                        "--test-threads=1",
                    ])
                    .env("SHARED_POINTER_CHILD", &data)
                    .stdout(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let mut slots = Vec::new();
        for c in children {
            let out = c.wait_with_output().unwrap();
            assert!(out.status.success());
            let text = String::from_utf8_lossy(&out.stdout);
            let line = text
                .lines()
                .find_map(|l| l.split_once("SLOTS ").map(|(_, slots)| slots))
                .expect("the child printed its slots");
            slots.extend(line.split(' ').map(|s| s.parse::<u64>().unwrap()));
        }
        slots.sort_unstable();
        assert_eq!(slots, (0..1500).collect::<Vec<u64>>());
        SharedPointer::new(data.to_str().unwrap(), 9, 0)
            .discard(true)
            .unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
