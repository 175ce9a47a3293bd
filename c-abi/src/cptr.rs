//! The C caller's pointers: where the library reads and writes through them (status
//! arguments, which need the status encoding, are `p2p::status`'s).
//!
//! Every raw pointer handled here came from the C program, as an argument of an MPI function.
//! The MPI standard makes its validity the caller's obligation (an output argument points to a
//! writable object of its type, a buffer holds `count` elements of the datatype, an array has
//! `count` entries), and the C entry points are `unsafe extern "C"` functions with exactly that
//! contract. What this module adds is the checking the library can do: NULL where an object is
//! required is `MPI_ERR_ARG` (checked when the wrapper is made, before the call changes
//! anything). The wrappers are made
//! inside an entry point from its own arguments and do not outlive it.

use crate::error::{MpiError, MpiResult};
use std::ffi::{c_char, c_int};
use std::marker::PhantomData;
use std::ptr::NonNull;

/// An output argument (`int *rank`, `MPI_Request *request`, ...), known not to be NULL.
pub(crate) struct Out<T>(NonNull<T>);

impl<T: Copy> Out<T> {
    /// `what` names the argument in the error message (`"rank"`).
    #[inline(always)]
    pub fn new(p: *mut T, what: &'static str) -> MpiResult<Out<T>> {
        match NonNull::new(p) {
            Some(p) => Ok(Out(p)),
            None => Err(null_argument(what)),
        }
    }

    #[inline(always)]
    pub fn set(&self, value: T) {
        // SAFETY: a non-NULL output argument of an MPI call points to a writable T (the
        // caller's contract, see the module documentation).
        unsafe { self.0.as_ptr().write(value) }
    }

    /// Reads the current value of an in-out argument (`MPI_Request *`).
    #[inline(always)]
    pub fn get(&self) -> T {
        // SAFETY: as for `set`; in-out arguments are also readable.
        unsafe { self.0.as_ptr().read() }
    }
}

#[cold]
pub(crate) fn null_argument(what: &str) -> MpiError {
    MpiError::arg(format!(
        "the {what} argument is NULL; pass the address of a variable"
    ))
}

/// Reads an input argument passed by pointer (`const MPI_Status *status`).
pub(crate) fn read<T: Copy>(p: *const T, what: &'static str) -> MpiResult<T> {
    if p.is_null() {
        return Err(null_argument(what));
    }
    // SAFETY: a non-NULL input argument points to a readable T (the caller's contract).
    Ok(unsafe { p.read() })
}

/// An array argument of `len` entries: `MPI_Request array_of_requests[]`, the statuses and
/// indices of the multiple-completion calls. A NULL array is allowed only when `len` is 0 (or,
/// for statuses, as `MPI_STATUSES_IGNORE`, in which case nothing is written).
pub(crate) struct Array<'a, T> {
    ptr: Option<NonNull<T>>,
    len: usize,
    _caller: PhantomData<&'a mut [T]>,
}

impl<'a, T: Copy> Array<'a, T> {
    pub fn new(p: *mut T, len: usize, what: &'static str) -> MpiResult<Array<'a, T>> {
        match NonNull::new(p) {
            None if len > 0 => Err(null_argument(what)),
            ptr => Ok(Array {
                ptr,
                len,
                _caller: PhantomData,
            }),
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub fn get(&self, i: usize) -> T {
        assert!(i < self.len);
        let p = self.ptr.expect("a non-empty array is not NULL");
        // SAFETY: the caller's array has `len` readable entries and i < len.
        unsafe { p.as_ptr().add(i).read() }
    }

    #[inline]
    pub fn set(&self, i: usize, value: T) {
        assert!(i < self.len);
        let p = self.ptr.expect("a non-empty array is not NULL");
        // SAFETY: the caller's array has `len` writable entries and i < len.
        unsafe { p.as_ptr().add(i).write(value) }
    }
}

/// The bytes of a send buffer. `len` is 0 or the buffer was checked non-NULL.
#[inline(always)]
pub(crate) fn send_bytes<'a>(buf: *const u8, len: usize) -> &'a [u8] {
    if len == 0 {
        return &[];
    }
    // SAFETY: a send buffer of `count` elements of a contiguous datatype is `len` readable
    // bytes (the caller's contract); it is not NULL (checked by the caller of this function).
    unsafe { std::slice::from_raw_parts(buf, len) }
}

/// The bytes of a receive buffer. `len` is 0 or the buffer was checked non-NULL.
#[inline(always)]
pub(crate) fn recv_bytes<'a>(buf: *mut u8, len: usize) -> &'a mut [u8] {
    if len == 0 {
        return &mut [];
    }
    // SAFETY: a receive buffer of `count` elements of a contiguous datatype is `len` writable
    // bytes that nothing else accesses during the call (the caller's contract); not NULL.
    unsafe { std::slice::from_raw_parts_mut(buf, len) }
}

/// A pointer the engine may keep for a nonblocking operation on an empty buffer (it requires a
/// non-NULL pointer even for zero bytes).
#[inline(always)]
pub(crate) fn nonnull_or_dangling(buf: *const u8) -> *const u8 {
    if buf.is_null() {
        NonNull::<u8>::dangling().as_ptr()
    } else {
        buf
    }
}

/// Writes `s` as a NUL-terminated string into the caller's `cap`-byte array (truncated to
/// `cap - 1` bytes) and returns the length written, without the NUL.
pub(crate) fn write_c_string(
    dst: *mut c_char,
    cap: usize,
    s: &str,
    what: &'static str,
) -> MpiResult<c_int> {
    if dst.is_null() {
        return Err(null_argument(what));
    }
    let n = s.len().min(cap.saturating_sub(1));
    // SAFETY: the caller's array has `cap` writable bytes (MPI_MAX_..._STRING for this
    // argument, the caller's contract); we write n + 1 <= cap of them.
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr(), dst.cast::<u8>(), n);
        dst.add(n).write(0);
    }
    Ok(n as c_int)
}

/// An input array argument of `len` entries (`const int array_of_blocklengths[]`): NULL is
/// allowed only when `len` is 0.
pub(crate) fn input_array<'a, T>(p: *const T, len: usize, what: &str) -> MpiResult<&'a [T]> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(null_argument(what));
    }
    // SAFETY: a non-NULL array argument of `len` entries is readable for `len` entries and not
    // written during the call (the caller's contract).
    Ok(unsafe { std::slice::from_raw_parts(p, len) })
}

/// Reads a NUL-terminated input string (`const char *type_name`).
pub(crate) fn input_string(p: *const c_char, what: &str) -> MpiResult<String> {
    if p.is_null() {
        return Err(null_argument(what));
    }
    // SAFETY: a non-NULL string argument is NUL-terminated (the caller's contract).
    let s = unsafe { std::ffi::CStr::from_ptr(p) };
    Ok(s.to_string_lossy().into_owned())
}
