//! The environment: what `MPI_Wtime`, `MPI_Wtick`, `MPI_Get_processor_name`,
//! `MPI_Get_version`, `MPI_Get_library_version`, `MPI_Pcontrol`, `MPI_Alloc_mem` and
//! `MPI_Free_mem` answer.
//!
//! **Owns** the blocks of `MPI_Alloc_mem` ([`mem`]). **Entry:** the clock and the host name
//! here; the C functions (with `MPI_Alloc_mem` and `MPI_Free_mem`) are in `api`.

pub(crate) mod mem;

mod api;

use std::ffi::c_char;

/// Reads `CLOCK_MONOTONIC` (or its resolution) in seconds.
pub(crate) fn monotonic(resolution: bool) -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write; CLOCK_MONOTONIC always exists on Linux.
    let rc = unsafe {
        if resolution {
            libc::clock_getres(libc::CLOCK_MONOTONIC, &mut ts)
        } else {
            libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts)
        }
    };
    debug_assert_eq!(rc, 0);
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// This host's name.
pub(crate) fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into buf.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast::<c_char>(), buf.len()) };
    if rc != 0 {
        return "localhost".to_string();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}
