//! The single-copy engine: `process_vm_readv` (and `process_vm_writev`), the modern stand-in for a NIC's DMA from pinned
//! user pages. This module owns the hazard of passing raw addresses to the kernel.

use std::io;

/// Copies `local.len()` bytes from `remote` in process `pid` into `local`. Returns the error
/// of the first failing call (EPERM when the kernel's ptrace policy forbids it, ESRCH when the
/// process is gone, EFAULT when the remote range is not mapped).
pub(crate) fn read_from(pid: libc::pid_t, remote: usize, local: &mut [u8]) -> io::Result<()> {
    let base = local.as_mut_ptr();
    copy_loop("process_vm_readv", local.len(), |done, left| {
        let l = libc::iovec {
            iov_base: base.wrapping_add(done).cast(),
            iov_len: left,
        };
        let r = libc::iovec {
            iov_base: (remote + done) as *mut libc::c_void,
            iov_len: left,
        };
        // SAFETY: `l` describes the unfilled end of memory we exclusively borrow; the kernel
        // validates `r` against the other process's address space and fails with EFAULT
        // instead of touching ours.
        unsafe { libc::process_vm_readv(pid, &l, 1, &r, 1, 0) }
    })
}

/// Copies `local` to `remote` in process `pid` (`process_vm_writev`); errors as `read_from`.
pub(crate) fn write_to(pid: libc::pid_t, remote: usize, local: &[u8]) -> io::Result<()> {
    let base = local.as_ptr();
    copy_loop("process_vm_writev", local.len(), |done, left| {
        let l = libc::iovec {
            iov_base: base.wrapping_add(done) as *mut libc::c_void,
            iov_len: left,
        };
        let r = libc::iovec {
            iov_base: (remote + done) as *mut libc::c_void,
            iov_len: left,
        };
        // SAFETY: `l` describes the unsent end of memory we borrow for reading (the kernel
        // only reads it); the kernel validates `r` against the other process's address space
        // and fails with EFAULT instead of touching ours.
        unsafe { libc::process_vm_writev(pid, &l, 1, &r, 1, 0) }
    })
}

/// Calls `call(done, left)` until `len` bytes have moved (the kernel may move fewer than
/// asked in one call); `call` returns what the system call `name` returned.
fn copy_loop(
    name: &str,
    len: usize,
    mut call: impl FnMut(usize, usize) -> isize,
) -> io::Result<()> {
    let mut done = 0usize;
    while done < len {
        let n = call(done, len - done);
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("{name} moved nothing"),
            ));
        }
        done += n as usize;
    }
    Ok(())
}

/// Lets any process of this user read our memory with `process_vm_readv` where a Yama ptrace
/// policy would otherwise restrict it to ancestors. Harmless (EINVAL) where Yama is absent.
pub(crate) fn allow_peers() {
    // SAFETY: prctl with integer arguments only.
    unsafe {
        libc::prctl(
            libc::PR_SET_PTRACER,
            libc::PR_SET_PTRACER_ANY as libc::c_ulong,
            0,
            0,
            0,
        );
    }
}
