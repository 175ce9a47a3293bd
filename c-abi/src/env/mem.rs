//! `MPI_Alloc_mem` and `MPI_Free_mem`: memory for communication buffers.
//!
//! The engine needs no special memory (the NIC model reaches any address of a peer by
//! cross-memory attach), so this is plain aligned allocation from the C heap. The library
//! remembers what it handed out, so that `MPI_Free_mem` of any other address is an error
//! (`MPI_ERR_BASE`, as MPICH reports it) instead of a corrupted heap.

use crate::abi::*;
use crate::error::{MpiError, MpiResult};
use std::collections::HashSet;
use std::ffi::c_void;

/// Alignment of every block: a cache line, enough for any type and for vector loads.
const ALIGN: usize = 64;

/// The blocks `MPI_Alloc_mem` gave out and that are not freed yet.
#[derive(Default)]
pub(crate) struct Allocations {
    live: HashSet<usize>,
}

impl Allocations {
    pub fn new() -> Allocations {
        Allocations::default()
    }

    pub(crate) fn alloc(&mut self, size: usize) -> MpiResult<*mut c_void> {
        let mut p: *mut c_void = std::ptr::null_mut();
        // SAFETY: posix_memalign writes a pointer to a fresh block (or nothing) into `p`;
        // ALIGN is a power of two multiple of the pointer size.
        let rc = unsafe { libc::posix_memalign(&mut p, ALIGN, size.max(1)) };
        if rc != 0 || p.is_null() {
            return Err(MpiError::new(
                MPI_ERR_NO_MEM,
                format!("cannot allocate {size} bytes"),
            ));
        }
        self.live.insert(p as usize);
        Ok(p)
    }

    pub(crate) fn free(&mut self, p: *mut c_void) -> MpiResult<()> {
        if !self.live.remove(&(p as usize)) {
            return Err(MpiError::new(
                MPI_ERR_BASE,
                format!("{p:p} was not returned by MPI_Alloc_mem (or was freed already)"),
            ));
        }
        // SAFETY: `p` came from posix_memalign in `alloc` and was not freed since (it was in
        // the live set, from which it is now removed).
        unsafe { libc::free(p) };
        Ok(())
    }
}
