//! The one module that maps shared memory. It owns the hazard of raw pointers into a mapping
//! that other processes write concurrently; everything else sees typed references.
//!
//! The fabric is an anonymous memory file (`memfd_create`): it has no name in any file system,
//! so no other job can open it, and the kernel frees it when the last process of the job that
//! holds it exits, whether cleanly or by a crash. Its descriptor reaches the job's processes by
//! inheritance only.

use crate::error::{NicError, Result};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// A shared mapping of the whole fabric.
pub struct SharedRegion {
    base: *mut u8,
    len: usize,
}

// SAFETY: the region is plain shared memory; all concurrent access goes through atomics in
// the layout types or through the single-writer protocols of `wire::ring`.
unsafe impl Send for SharedRegion {}
unsafe impl Sync for SharedRegion {}

impl SharedRegion {
    /// Creates a new anonymous memory file of `len` bytes, mode 0600, and maps it.
    pub fn create(len: usize, name: &str) -> Result<(Self, OwnedFd)> {
        let cname = std::ffi::CString::new(name).expect("fabric name has no NUL");
        // SAFETY: plain system calls on a NUL-terminated name and on the descriptor we own.
        let fd = unsafe {
            let raw = libc::memfd_create(cname.as_ptr(), libc::MFD_CLOEXEC);
            if raw < 0 {
                return Err(NicError::os("memfd_create for the fabric"));
            }
            OwnedFd::from_raw_fd(raw)
        };
        // SAFETY: descriptor owned above.
        if unsafe { libc::fchmod(fd.as_raw_fd(), 0o600) } != 0 {
            return Err(NicError::os("fchmod 0600 on the fabric"));
        }
        // SAFETY: descriptor owned above.
        if unsafe { libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) } != 0 {
            return Err(NicError::os("sizing the fabric (ftruncate)"));
        }
        let region = Self::map(fd.as_raw_fd(), len)?;
        Ok((region, fd))
    }

    /// Maps an inherited fabric descriptor; its size comes from `fstat`.
    pub fn attach(fd: RawFd) -> Result<Self> {
        // SAFETY: fstat writes into the zeroed struct; an invalid fd just fails.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        if unsafe { libc::fstat(fd, &mut st) } != 0 {
            return Err(NicError::os("fstat on the inherited fabric descriptor"));
        }
        if (st.st_mode & libc::S_IFMT) != libc::S_IFREG || st.st_size <= 0 {
            return Err(NicError::BadFabric(
                "the inherited descriptor is not a memory file".into(),
            ));
        }
        Self::map(fd, st.st_size as usize)
    }

    fn map(fd: RawFd, len: usize) -> Result<Self> {
        // SAFETY: a fresh shared mapping of a descriptor we hold; the kernel picks the address.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(NicError::os("mapping the fabric (mmap)"));
        }
        Ok(SharedRegion {
            base: p.cast(),
            len,
        })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// A reference to a `T` at `offset`.
    ///
    /// # Panics
    /// If `T` would not lie inside the region or `offset` is misaligned for `T`. Callers pass
    /// offsets from `layout::Geometry`, which are validated when the fabric is created.
    pub fn at<T>(&self, offset: usize) -> &T {
        assert!(
            offset + std::mem::size_of::<T>() <= self.len,
            "fabric access out of bounds"
        );
        assert_eq!(
            offset % std::mem::align_of::<T>(),
            0,
            "misaligned fabric access"
        );
        // SAFETY: in bounds and aligned (checked above); the layout types are made of atomics
        // and plain integers for which any bit pattern is valid, and the memory is zeroed at
        // creation.
        unsafe { &*(self.base.add(offset) as *const T) }
    }

    /// Raw pointer to `offset` for the ring module's payload copies.
    pub fn ptr(&self, offset: usize) -> *mut u8 {
        assert!(offset <= self.len, "fabric access out of bounds");
        // SAFETY: in bounds (checked above).
        unsafe { self.base.add(offset) }
    }
}

impl Drop for SharedRegion {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping we made; no reference into it outlives `self`
        // because every borrower borrows `self`.
        unsafe {
            libc::munmap(self.base.cast(), self.len);
        }
    }
}

/// Sixteen unguessable bytes from the kernel (the job key, the seed of region keys).
pub fn random_key() -> Result<[u8; 16]> {
    let mut key = [0u8; 16];
    // SAFETY: getrandom writes at most `key.len()` bytes into the buffer.
    let n = unsafe { libc::getrandom(key.as_mut_ptr().cast(), key.len(), 0) };
    if n != key.len() as isize {
        return Err(NicError::os("getrandom for the job key"));
    }
    Ok(key)
}
