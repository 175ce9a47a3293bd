//! The memory a window allocates: private pages (`MPI_Win_allocate`) or one memory file
//! mapped by every process of a shared window (`MPI_Win_allocate_shared`).
//!
//! A shared window's file is made by its rank 0 (`memfd_create`: no name in any file
//! system, freed with the last mapping, so nothing is left behind however the job ends).
//! The others take the descriptor from rank 0's process with `pidfd_getfd` (the same
//! permission as the single-copy reads of the NIC layer: a process of the same user, which
//! ptrace policy allows to be inspected) and map it too. The file starts with a control block
//! (a cache line per process: `win::direct`'s locks), then each process's part, one right
//! after the other in rank order (MPI's default contiguous layout).

use crate::abi::*;
use crate::error::{MpiError, MpiResult};

/// Memory a window mapped, unmapped when the window is freed.
#[derive(Debug)]
pub(crate) struct Owned {
    addr: *mut u8,
    len: usize,
}

impl Owned {
    pub fn addr(&self) -> *mut u8 {
        self.addr
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        // SAFETY: a mapping this type made, of `len` bytes, unmapped once.
        unsafe { libc::munmap(self.addr.cast(), self.len) };
    }
}

fn page_rounded(len: usize) -> usize {
    len.max(1).div_ceil(4096) * 4096
}

fn no_memory(what: &str, len: usize, e: std::io::Error) -> MpiError {
    MpiError::new(
        MPI_ERR_NO_MEM,
        format!("could not map {len} bytes for {what}: {e}"),
    )
}

/// `len` bytes of fresh, zeroed, private memory.
pub(crate) fn private(len: usize) -> MpiResult<Owned> {
    map(
        len,
        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
        -1,
        "the window",
    )
}

/// Maps `len` bytes (rounded up to pages) with `flags`, of file `fd` (or anonymous memory).
fn map(len: usize, flags: libc::c_int, fd: libc::c_int, what: &str) -> MpiResult<Owned> {
    let len = page_rounded(len);
    // SAFETY: a new mapping where the kernel chooses; `fd` is -1 or a memory file at least
    // `len` bytes long.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            flags,
            fd,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(no_memory(what, len, std::io::Error::last_os_error()));
    }
    Ok(Owned {
        addr: p.cast(),
        len,
    })
}

/// Bytes of the control block at the start of a shared window's file: one cache line per
/// process (its lock word and accumulate lock: `win::direct`).
pub(crate) fn control_len(n: usize) -> usize {
    n * 64
}

/// Where each process's part of a shared window starts in its file (after the control
/// block, one part right after the other, as MPI's default contiguous layout has them), and
/// the file's length.
pub(crate) fn shared_layout(sizes: &[usize]) -> (Vec<usize>, usize) {
    let mut at = control_len(sizes.len());
    let offsets = sizes
        .iter()
        .map(|&s| {
            let o = at;
            at += s;
            o
        })
        .collect();
    (offsets, at)
}

/// A new memory file of `len` bytes (rank 0 of a shared window); its descriptor.
pub(crate) fn shared_file(len: usize) -> MpiResult<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: the name is a NUL-terminated string; the flags are valid.
    let fd = unsafe { libc::memfd_create(c"mpi-win-shared".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(no_memory(
            "a shared window (memfd_create)",
            len,
            std::io::Error::last_os_error(),
        ));
    }
    // SAFETY: a descriptor we just made and own.
    let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
    // SAFETY: a valid descriptor of a memory file.
    if unsafe {
        libc::ftruncate(
            std::os::fd::AsRawFd::as_raw_fd(&fd),
            page_rounded(len) as libc::off_t,
        )
    } != 0
    {
        return Err(no_memory(
            "a shared window (ftruncate)",
            len,
            std::io::Error::last_os_error(),
        ));
    }
    Ok(fd)
}

/// Rank 0's memory file, taken from its process `pid`, where it is descriptor `fd`.
pub(crate) fn take_shared_file(pid: i32, fd: i32) -> MpiResult<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    let refused = |step: &str, e: std::io::Error| {
        MpiError::new(
            MPI_ERR_RMA_SHARED,
            format!("could not share the window's memory with process {pid} ({step}: {e}); shared windows need the processes of one host to be allowed to inspect each other (as single-copy transfers do: see /proc/sys/kernel/yama/ptrace_scope)"),
        )
    };
    // SAFETY: plain system calls on integers.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if pidfd < 0 {
        return Err(refused("pidfd_open", std::io::Error::last_os_error()));
    }
    // SAFETY: a descriptor we just made and own.
    let pidfd = unsafe { std::os::fd::OwnedFd::from_raw_fd(pidfd as i32) };
    // SAFETY: as above.
    let got = unsafe {
        libc::syscall(
            libc::SYS_pidfd_getfd,
            std::os::fd::AsRawFd::as_raw_fd(&pidfd),
            fd,
            0,
        )
    };
    if got < 0 {
        return Err(refused("pidfd_getfd", std::io::Error::last_os_error()));
    }
    // SAFETY: a descriptor the kernel just gave us.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(got as i32) })
}

/// Maps `len` bytes of memory file `fd`, shared.
pub(crate) fn map_shared(fd: &std::os::fd::OwnedFd, len: usize) -> MpiResult<Owned> {
    let raw = std::os::fd::AsRawFd::as_raw_fd(fd);
    map(len, libc::MAP_SHARED, raw, "a shared window")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_parts_follow_the_control_block_in_rank_order() {
        let (offsets, total) = shared_layout(&[10, 0, 64, 65]);
        assert_eq!(offsets, [256, 266, 266, 330]);
        assert_eq!(total, 395);
    }

    #[test]
    fn a_memory_file_taken_from_this_process_maps_the_same_bytes() {
        let fd = shared_file(4096).expect("memfd");
        let a = map_shared(&fd, 4096).expect("map");
        let pid = std::process::id() as i32;
        let again = take_shared_file(pid, std::os::fd::AsRawFd::as_raw_fd(&fd));
        // Where pidfd_getfd is not permitted, say so instead of failing the build's tests.
        let Ok(again) = again else {
            eprintln!("pidfd_getfd refused here: {:?}", again.err());
            return;
        };
        let b = map_shared(&again, 4096).expect("map");
        // SAFETY: both mappings are 4096 bytes of the same file.
        unsafe {
            a.addr().write(42);
            assert_eq!(b.addr().read(), 42);
        }
    }
}
