//! The single-copy engine: `process_vm_readv` (and `process_vm_writev`), the modern stand-in for a NIC's DMA from pinned
//! user pages. This module owns the hazard of passing raw addresses to the kernel.

use std::io;

/// Copies `local.len()` bytes from `remote` in process `pid` into `local`. Returns the error
/// of the first failing call (EPERM when the kernel's ptrace policy forbids it, ESRCH when the
/// process is gone, EFAULT when the remote range is not mapped).
pub(crate) fn read_from(pid: libc::pid_t, remote: usize, local: &mut [u8]) -> io::Result<()> {
    let mut done = 0usize;
    while done < local.len() {
        let l = libc::iovec { iov_base: local[done..].as_mut_ptr().cast(), iov_len: local.len() - done };
        let r = libc::iovec { iov_base: (remote + done) as *mut libc::c_void, iov_len: local.len() - done };
        // SAFETY: `l` describes memory we exclusively borrow; the kernel validates `r` against
        // the other process's address space and fails with EFAULT instead of touching ours.
        let n = unsafe { libc::process_vm_readv(pid, &l, 1, &r, 1, 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        if n == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "process_vm_readv moved nothing"));
        }
        done += n as usize;
    }
    Ok(())
}

/// Copies `local` to `remote` in process `pid` (`process_vm_writev`); errors as `read_from`.
pub(crate) fn write_to(pid: libc::pid_t, remote: usize, local: &[u8]) -> io::Result<()> {
    let mut done = 0usize;
    while done < local.len() {
        let l = libc::iovec { iov_base: local[done..].as_ptr() as *mut libc::c_void, iov_len: local.len() - done };
        let r = libc::iovec { iov_base: (remote + done) as *mut libc::c_void, iov_len: local.len() - done };
        // SAFETY: `l` describes memory we borrow for reading (the kernel only reads it); the
        // kernel validates `r` against the other process's address space and fails with EFAULT
        // instead of touching ours.
        let n = unsafe { libc::process_vm_writev(pid, &l, 1, &r, 1, 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        if n == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "process_vm_writev moved nothing"));
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
        libc::prctl(libc::PR_SET_PTRACER, libc::PR_SET_PTRACER_ANY as libc::c_ulong, 0, 0, 0);
    }
}
