//! The POSIX side: reads and writes at offsets, byte-range locks, preallocation, and what an
//! `errno` means as an MPI error class. The only `unsafe` of the file module (two system
//! calls `std` does not offer) is here.

use crate::abi::*;
use crate::error::MpiError;
use std::ffi::c_int;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;

/// The MPI error class of a failed system call: the ones the standard names, `MPI_ERR_IO`
/// for the rest.
pub(crate) fn class_of(e: &io::Error) -> c_int {
    match e.raw_os_error() {
        Some(libc::ENOENT) => MPI_ERR_NO_SUCH_FILE,
        Some(libc::EEXIST) => MPI_ERR_FILE_EXISTS,
        Some(libc::EACCES) | Some(libc::EPERM) => MPI_ERR_ACCESS,
        Some(libc::ENOSPC) => MPI_ERR_NO_SPACE,
        Some(libc::EDQUOT) => MPI_ERR_QUOTA,
        Some(libc::EROFS) => MPI_ERR_READ_ONLY,
        // A name that cannot name a file: too long, a directory, a path through a
        // non-directory or a loop (ROMIO's classes for them).
        Some(libc::ENAMETOOLONG | libc::EISDIR | libc::ENOTDIR | libc::ELOOP) => MPI_ERR_BAD_FILE,
        _ => MPI_ERR_IO,
    }
}

/// The error of `what` (a system call and its object) failing with `e`: its class, and the
/// system's reason in the detail.
#[cold]
pub(crate) fn io_error(what: &str, e: &io::Error) -> MpiError {
    MpiError::new(class_of(e), format!("{what} failed: {e}"))
}

/// Reads up to `buf.len()` bytes at `offset`, as far as the file goes: the bytes read (fewer
/// only at the end of the file).
pub(crate) fn read_full(f: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match f.read_at(&mut buf[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// Writes all of `buf` at `offset`.
pub(crate) fn write_full(f: &File, buf: &[u8], offset: u64) -> io::Result<()> {
    f.write_all_at(buf, offset)
}

/// Makes sure the file has storage for its first `size` bytes (`posix_fallocate`): the size
/// grows to `size` if it is smaller, and never shrinks.
pub(crate) fn preallocate(f: &File, size: u64) -> io::Result<()> {
    if size == 0 {
        return Ok(());
    }
    // SAFETY: posix_fallocate takes the descriptor of a file this `File` keeps open, and
    // integers; it touches no memory of ours.
    let rc = unsafe { libc::posix_fallocate(f.as_raw_fd(), 0, size as libc::off_t) };
    match rc {
        0 => Ok(()),
        // File systems without fallocate: extend the size (no storage reserved).
        libc::EOPNOTSUPP | libc::EINVAL => {
            if f.metadata()?.len() < size {
                f.set_len(size)?;
            }
            Ok(())
        }
        e => Err(io::Error::from_raw_os_error(e)),
    }
}

/// Whether the descriptor of `f` was opened for reading (`fcntl(F_GETFL)`).
pub(crate) fn can_read(f: &File) -> bool {
    // SAFETY: F_GETFL on a descriptor this `File` keeps open; no memory is passed.
    let flags = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_GETFL) };
    flags >= 0 && matches!(flags & libc::O_ACCMODE, libc::O_RDONLY | libc::O_RDWR)
}

/// A write lock on bytes `[start, start + len)` of a file (`fcntl(F_SETLKW)`), released when
/// dropped. Locks of other processes on overlapping bytes wait for it, so the read-modify-write
/// of data sieving does not lose their writes.
pub(crate) struct RangeLock<'a> {
    file: &'a File,
    start: u64,
    len: u64,
}

impl<'a> RangeLock<'a> {
    /// Waits for and takes the lock.
    pub fn write(file: &'a File, start: u64, len: u64) -> io::Result<RangeLock<'a>> {
        lock(file, libc::F_WRLCK as libc::c_short, start, len)?;
        Ok(RangeLock { file, start, len })
    }

    /// Takes the lock if no other process holds a conflicting one, without waiting: `None`
    /// if one does.
    pub fn try_write(file: &'a File, start: u64, len: u64) -> io::Result<Option<RangeLock<'a>>> {
        match set_lock(
            file,
            libc::F_SETLK,
            libc::F_WRLCK as libc::c_short,
            start,
            len,
        ) {
            Ok(()) => Ok(Some(RangeLock { file, start, len })),
            // POSIX allows either errno for "held by another process".
            Err(e) if matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::EACCES)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Waits for and takes a shared lock (readers share it; a writer's lock waits for them,
    /// and they for it). The descriptor must be open for reading.
    pub fn read(file: &'a File, start: u64, len: u64) -> io::Result<RangeLock<'a>> {
        lock(file, libc::F_RDLCK as libc::c_short, start, len)?;
        Ok(RangeLock { file, start, len })
    }
}

impl Drop for RangeLock<'_> {
    fn drop(&mut self) {
        let _ = lock(
            self.file,
            libc::F_UNLCK as libc::c_short,
            self.start,
            self.len,
        );
    }
}

/// Waits for and takes (or, with `F_UNLCK`, releases) a lock of `kind` on the bytes.
fn lock(file: &File, kind: libc::c_short, start: u64, len: u64) -> io::Result<()> {
    set_lock(file, libc::F_SETLKW, kind, start, len)
}

/// `fcntl(cmd)` with a lock of `kind` on `len` bytes from `start`, retried when a signal
/// interrupts it.
fn set_lock(
    file: &File,
    cmd: libc::c_int,
    kind: libc::c_short,
    start: u64,
    len: u64,
) -> io::Result<()> {
    let mut fl: libc::flock = {
        // SAFETY: `flock` is a plain C struct of integers; all zeroes is a valid value.
        unsafe { std::mem::zeroed() }
    };
    fl.l_type = kind;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    fl.l_start = start as libc::off_t;
    fl.l_len = len as libc::off_t;
    loop {
        // SAFETY: fcntl(F_SETLK or F_SETLKW) on a descriptor this `File` keeps open, with a
        // pointer to a `flock` that lives across the call.
        let rc = unsafe { libc::fcntl(file.as_raw_fd(), cmd, &mut fl) };
        if rc == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errno_classes() {
        let c = |n| class_of(&io::Error::from_raw_os_error(n));
        assert_eq!(c(libc::ENOENT), MPI_ERR_NO_SUCH_FILE);
        assert_eq!(c(libc::EEXIST), MPI_ERR_FILE_EXISTS);
        assert_eq!(c(libc::EACCES), MPI_ERR_ACCESS);
        assert_eq!(c(libc::EPERM), MPI_ERR_ACCESS);
        assert_eq!(c(libc::ENOSPC), MPI_ERR_NO_SPACE);
        assert_eq!(c(libc::EDQUOT), MPI_ERR_QUOTA);
        assert_eq!(c(libc::EROFS), MPI_ERR_READ_ONLY);
        assert_eq!(c(libc::EIO), MPI_ERR_IO);
        for bad_name in [libc::ENAMETOOLONG, libc::EISDIR, libc::ENOTDIR, libc::ELOOP] {
            assert_eq!(c(bad_name), MPI_ERR_BAD_FILE);
        }
        let e = io_error("open(\"x\")", &io::Error::from_raw_os_error(libc::ENOENT));
        assert!(e.detail.contains("No such file"), "{}", e.detail);
    }

    #[test]
    fn reads_stop_at_the_end_and_locks_and_preallocation_work() {
        let dir = std::env::temp_dir().join(format!("file-sys-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        let f = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        assert!(can_read(&f));
        write_full(&f, b"hello", 3).unwrap();
        let mut buf = [9u8; 16];
        assert_eq!(read_full(&f, &mut buf, 0).unwrap(), 8);
        assert_eq!(&buf[..8], b"\0\0\0hello");
        assert_eq!(read_full(&f, &mut buf, 100).unwrap(), 0);
        {
            let _l = RangeLock::write(&f, 0, 8).unwrap();
        }
        {
            let _l = RangeLock::read(&f, 0, 8).unwrap();
        }
        preallocate(&f, 4096).unwrap();
        assert_eq!(f.metadata().unwrap().len(), 4096);
        preallocate(&f, 10).unwrap();
        assert_eq!(f.metadata().unwrap().len(), 4096);
        drop(f);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
