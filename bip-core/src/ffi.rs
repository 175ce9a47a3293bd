//! The C interface `bip.h` (in `bip-core/include/`): BIP for C programs.
//!
//! The functions here are the definitions of the declarations in `bip.h`, exported unmangled.
//! A C program links them from a binary that contains bip-core (see `src/bin/bip-c-example.rs`,
//! which runs `examples-c/pingpong.c`).
//!
//! **State.** One process-wide BIP endpoint, created by [`bip_init`] and consumed by
//! [`bip_finalize`], lives in a `static` [`Mutex`]. `bip.h` documents the interface as
//! "not thread-safe beyond one thread at a time": calls may come from any thread, and the mutex
//! serializes them. A thread-local would have tied BIP to the thread that called `bip_init`,
//! which C programs do not expect. A panic inside BIP (a bug) is caught at the boundary and
//! reported as `BIP_ERR_OTHER`; it poisons the mutex, and every later call then returns
//! `BIP_ERR_OTHER` rather than run on state a panic may have left half-updated.
//!
//! **Request handles.** A [`Request`] is `(idx, gen)`: `idx < 2^16` (the wire format's request
//! id is 16 bits) and a generation that grows each time `idx` is reused. The C handle is
//! `idx | (gen mod 2^15) << 16`, a non-negative `int`. The full generation of the last request
//! handed out at each `idx` is kept here, so that a handle decodes to the exact `Request` it was
//! made from; a stale handle (its request completed, the slot possibly reused since) carries an
//! old generation and is refused by the generation check, unless exactly a multiple of 2^15
//! requests have reused its slot since, which a 31-bit handle cannot tell apart.
//!
//! **Safety.** All of bip-core's C-facing `unsafe` is in this module. The functions that take
//! pointers are `unsafe extern "C"`: their contracts are those stated in `bip.h`.

#![deny(unsafe_op_in_unsafe_fn)]

use crate::bip::Bip;
use crate::config::BipConfig;
use crate::error::BipError;
use crate::request::{Completion, Request, MAX_REQUESTS};
use nic_model::{DeviceStack, NicError, Rank};
use std::ffi::{c_char, c_int, c_long, c_void};
use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Success.
pub const BIP_OK: c_int = 0;
/// BIP is not initialized (or was finalized).
pub const BIP_ERR_NOT_INITIALIZED: c_int = -1;
/// `bip_init` was already called successfully.
pub const BIP_ERR_ALREADY_INITIALIZED: c_int = -2;
/// Not started by a job launcher.
pub const BIP_ERR_NOT_IN_JOB: c_int = -3;
/// Destination rank out of range.
pub const BIP_ERR_BAD_RANK: c_int = -4;
/// Tag out of range.
pub const BIP_ERR_BAD_TAG: c_int = -5;
/// Message longer than the receive buffer.
pub const BIP_ERR_TRUNCATED: c_int = -6;
/// A peer died or finalized while needed.
pub const BIP_ERR_PEER_GONE: c_int = -7;
/// Invalid or already completed request handle.
pub const BIP_ERR_INVALID_REQUEST: c_int = -8;
/// Too many outstanding requests.
pub const BIP_ERR_TOO_MANY_REQUESTS: c_int = -9;
/// A peer stopped acknowledging over an unreliable link.
pub const BIP_ERR_LINK_FAILED: c_int = -10;
/// Any other failure.
pub const BIP_ERR_OTHER: c_int = -11;
/// NULL buffer with a non-zero length, or a length too large.
pub const BIP_ERR_INVALID_ARG: c_int = -12;

// ---- Request handles ----------------------------------------------------------------------

/// Bits of a handle that carry the request's index.
const IDX_BITS: u32 = 16;
const IDX_MASK: u32 = (1 << IDX_BITS) - 1;
/// The generation bits a handle keeps (15, so that handles are non-negative `int`s).
const GEN_MASK: u32 = (1 << (c_int::BITS - 1 - IDX_BITS)) - 1;

const _: () = assert!(
    MAX_REQUESTS <= 1 << IDX_BITS,
    "request indices must fit a handle's index bits"
);

fn encode(r: Request) -> c_int {
    debug_assert!(r.idx <= IDX_MASK);
    // At most 31 bits are set, so the value is a non-negative c_int.
    (((r.gen & GEN_MASK) << IDX_BITS) | (r.idx & IDX_MASK)) as c_int
}

// ---- The global endpoint ------------------------------------------------------------------

/// The endpoint of an initialized process, with what decoding handles needs.
struct Live {
    bip: Bip<DeviceStack>,
    /// `gens[idx]`: full generation of the last request handed to C at index `idx`.
    gens: Vec<u32>,
}

// SAFETY: `Bip<DeviceStack>` is not `Send` only because it holds raw pointers, and none of them is
// tied to a thread: the NIC's rings point into the job's shared mapping, which the NIC owns and
// which is valid from any thread of the process (its owner, `SharedRegion`, is `Send + Sync`);
// the request table points into the C caller's buffers, which `bip.h` requires to stay valid
// until the request completes, whatever thread completes it. Nothing in the stack uses
// thread-local state or thread identity (the kernel's ptrace permission for single copy is set
// per process). `Live` is only reached through `GLOBAL`'s mutex, so one thread at a time uses it.
unsafe impl Send for Live {}

impl Live {
    /// Records `r` and returns its C handle.
    fn issue(&mut self, r: Request) -> c_int {
        let idx = r.idx as usize;
        if self.gens.len() <= idx {
            self.gens.resize(idx + 1, 0);
        }
        self.gens[idx] = r.gen;
        encode(r)
    }

    fn decode(&self, handle: c_int) -> Result<Request, c_int> {
        decode(&self.gens, handle)
    }
}

/// The request a C handle was made from, given the full generation last handed out at each
/// index; stale generations are refused here, completed requests of the current generation by
/// `Bip` itself.
fn decode(gens: &[u32], handle: c_int) -> Result<Request, c_int> {
    let h = u32::try_from(handle).map_err(|_| BIP_ERR_INVALID_REQUEST)?;
    let idx = h & IDX_MASK;
    let gen = *gens.get(idx as usize).ok_or(BIP_ERR_INVALID_REQUEST)?;
    if gen & GEN_MASK != h >> IDX_BITS {
        return Err(BIP_ERR_INVALID_REQUEST);
    }
    Ok(Request { idx, gen })
}

enum Global {
    Uninit,
    Live(Box<Live>),
    Finalized,
}

static GLOBAL: Mutex<Global> = Mutex::new(Global::Uninit);

/// Runs `f` on the live endpoint.
fn with_live<T>(f: impl FnOnce(&mut Live) -> Result<T, c_int>) -> Result<T, c_int> {
    let mut g = GLOBAL.lock().map_err(|_| BIP_ERR_OTHER)?;
    match &mut *g {
        Global::Live(live) => f(live),
        Global::Uninit | Global::Finalized => Err(BIP_ERR_NOT_INITIALIZED),
    }
}

/// Runs `f`, turning a panic into `on_panic` so that no unwinding crosses into C.
fn guarded<T>(on_panic: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(on_panic)
}

/// The C return value of a call: the value, or the (negative) error code.
fn flat<T: From<c_int>>(r: Result<T, c_int>) -> T {
    r.unwrap_or_else(T::from)
}

// ---- Conversions ---------------------------------------------------------------------------

/// The error code of a BIP error.
fn code(e: &BipError) -> c_int {
    match e {
        BipError::Nic(n) => match n {
            NicError::NotInJob(_) => BIP_ERR_NOT_IN_JOB,
            NicError::PeerDead { .. } => BIP_ERR_PEER_GONE,
            NicError::BadRank { .. } => BIP_ERR_BAD_RANK,
            _ => BIP_ERR_OTHER,
        },
        BipError::BadRank { .. } => BIP_ERR_BAD_RANK,
        BipError::BadTag { .. } => BIP_ERR_BAD_TAG,
        BipError::Truncated { .. } => BIP_ERR_TRUNCATED,
        BipError::PeerGone { .. } => BIP_ERR_PEER_GONE,
        BipError::InvalidRequest => BIP_ERR_INVALID_REQUEST,
        BipError::TooManyRequests(_) => BIP_ERR_TOO_MANY_REQUESTS,
        BipError::LinkFailed { .. } => BIP_ERR_LINK_FAILED,
        BipError::Protocol { .. } | BipError::NotLendable { .. } | BipError::Refused { .. } => {
            BIP_ERR_OTHER
        }
    }
}

fn rank_arg(dest: c_int) -> Result<Rank, c_int> {
    Rank::try_from(dest).map_err(|_| BIP_ERR_BAD_RANK)
}

fn tag_arg(tag: c_int) -> Result<u32, c_int> {
    u32::try_from(tag).map_err(|_| BIP_ERR_BAD_TAG)
}

fn rank_out(r: Rank) -> c_int {
    c_int::try_from(r).unwrap_or(c_int::MAX)
}

fn len_out(n: usize) -> c_long {
    c_long::try_from(n).unwrap_or(c_long::MAX)
}

/// A buffer pointer Rust may build a slice from: non-null (a dangling one for an empty
/// buffer, which C may pass as NULL) and with a length within `isize::MAX`.
fn buf_arg<T>(p: *mut T, len: usize) -> Result<*mut u8, c_int> {
    if len > isize::MAX as usize {
        return Err(BIP_ERR_INVALID_ARG);
    }
    match NonNull::new(p.cast::<u8>()) {
        Some(p) => Ok(p.as_ptr()),
        None if len == 0 => Ok(NonNull::dangling().as_ptr()),
        None => Err(BIP_ERR_INVALID_ARG),
    }
}

/// Stores `v` in `*p` unless `p` is null.
///
/// # Safety
/// `p` is null or valid for writing a `T` (aligned, writable).
unsafe fn put<T>(p: *mut T, v: T) {
    if !p.is_null() {
        // SAFETY: non-null, and valid for writes by this function's contract.
        unsafe { p.write(v) };
    }
}

/// Reports how a request ended through the optional out-pointers of `bip_test`/`bip_wait`.
///
/// # Safety
/// As [`put`], for both pointers.
unsafe fn report(len: *mut c_long, source: *mut c_int, n: usize, peer: Rank) {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        put(len, len_out(n));
        put(source, rank_out(peer));
    }
}

/// How a request ended, for C: its completion, or the error code; reports length and peer
/// through the out-pointers on success and on truncation.
///
/// # Safety
/// As [`report`].
unsafe fn completion(
    r: crate::Result<Completion>,
    len: *mut c_long,
    source: *mut c_int,
) -> Result<Completion, c_int> {
    match r {
        Ok(c) => {
            // SAFETY: forwarded from this function's contract.
            unsafe { report(len, source, c.len, c.peer) };
            Ok(c)
        }
        Err(BipError::Truncated {
            len: total, from, ..
        }) => {
            // SAFETY: forwarded from this function's contract.
            unsafe { report(len, source, total, from) };
            Err(BIP_ERR_TRUNCATED)
        }
        Err(e) => Err(code(&e)),
    }
}

// ---- Setup ---------------------------------------------------------------------------------

/// Set once `bip_init` has explained a failure on stderr.
static INIT_FAILURE_REPORTED: AtomicBool = AtomicBool::new(false);

fn init() -> Result<(), (c_int, String)> {
    let mut g = GLOBAL.lock().map_err(|_| {
        (
            BIP_ERR_OTHER,
            "bip_init: BIP is unusable after an earlier internal error".to_string(),
        )
    })?;
    if !matches!(*g, Global::Uninit) {
        return Err((
            BIP_ERR_ALREADY_INITIALIZED,
            "bip_init: BIP was already initialized in this process (bip_init may be called only once, even after bip_finalize)".to_string(),
        ));
    }
    let describe = |e: BipError| {
        let msg = match &e {
            BipError::Nic(NicError::NotInJob(var)) => format!(
                "bip_init: not started by a job launcher ({var} is not set, so there is no job to join); \
                 start the program with mpirun or from a nic_model::Job"
            ),
            other => format!("bip_init: cannot start BIP: {other}"),
        };
        (code(&e), msg)
    };
    let nic = DeviceStack::from_env().map_err(|e| describe(e.into()))?;
    let bip = Bip::new(nic, BipConfig::from_env()).map_err(describe)?;
    *g = Global::Live(Box::new(Live {
        bip,
        gens: Vec::new(),
    }));
    Ok(())
}

/// `int bip_init(void)`: attaches to the job and starts BIP.
#[no_mangle]
pub extern "C" fn bip_init() -> c_int {
    guarded(BIP_ERR_OTHER, || match init() {
        Ok(()) => BIP_OK,
        Err((code, msg)) => {
            if !INIT_FAILURE_REPORTED.swap(true, Ordering::Relaxed) {
                // Not eprintln!: a failing stderr must not panic.
                let _ = writeln!(std::io::stderr(), "{msg}");
            }
            code
        }
    })
}

/// `int bip_mynode(void)`: this process's rank, or a negative error code.
#[no_mangle]
pub extern "C" fn bip_mynode() -> c_int {
    guarded(BIP_ERR_OTHER, || {
        flat(with_live(|l| Ok(rank_out(l.bip.mynode()))))
    })
}

/// `int bip_numnodes(void)`: the number of processes in the job, or a negative error code.
#[no_mangle]
pub extern "C" fn bip_numnodes() -> c_int {
    guarded(BIP_ERR_OTHER, || {
        flat(with_live(|l| Ok(rank_out(l.bip.numnodes()))))
    })
}

/// `int bip_finalize(void)`: drains the sends, detaches from the job; BIP is then unusable.
#[no_mangle]
pub extern "C" fn bip_finalize() -> c_int {
    guarded(BIP_ERR_OTHER, || {
        let Ok(mut g) = GLOBAL.lock() else {
            return BIP_ERR_OTHER;
        };
        match std::mem::replace(&mut *g, Global::Finalized) {
            // Receives still posted are abandoned: the endpoint is dropped here and never
            // touches their buffers again.
            Global::Live(live) => live.bip.finalize().map_or_else(|e| code(&e), |()| BIP_OK),
            other => {
                *g = other;
                BIP_ERR_NOT_INITIALIZED
            }
        }
    })
}

// ---- Blocking communication ----------------------------------------------------------------

/// `int bip_send(int dest, int tag, const void *buf, size_t len)`.
///
/// # Safety
/// `buf` is NULL with `len == 0`, or points to `len` readable bytes that are not modified
/// during the call.
#[no_mangle]
pub unsafe extern "C" fn bip_send(
    dest: c_int,
    tag: c_int,
    buf: *const c_void,
    len: usize,
) -> c_int {
    guarded(BIP_ERR_OTHER, || {
        let r = with_live(|l| {
            let (dest, tag) = (rank_arg(dest)?, tag_arg(tag)?);
            let p = buf_arg(buf.cast_mut(), len)?;
            // SAFETY: `p` is non-null and `len <= isize::MAX` (`buf_arg`); the caller provides
            // `len` readable bytes at `buf`, unmodified during the call; for `len == 0` a
            // dangling pointer is valid.
            let data = unsafe { std::slice::from_raw_parts(p.cast_const(), len) };
            l.bip.send(dest, tag, data).map_err(|e| code(&e))
        });
        flat(r.map(|()| BIP_OK))
    })
}

/// `long bip_recv(int tag, void *buf, size_t maxlen, int *source)`: the message's length, or
/// a negative error code.
///
/// # Safety
/// `buf` is NULL with `maxlen == 0`, or points to `maxlen` writable bytes not accessed
/// otherwise during the call; `source` is NULL or points to a writable `int`.
#[no_mangle]
pub unsafe extern "C" fn bip_recv(
    tag: c_int,
    buf: *mut c_void,
    maxlen: usize,
    source: *mut c_int,
) -> c_long {
    guarded(c_long::from(BIP_ERR_OTHER), || {
        let r = with_live(|l| {
            let tag = tag_arg(tag)?;
            let p = buf_arg(buf, maxlen)?;
            // SAFETY: `p` is non-null and `maxlen <= isize::MAX` (`buf_arg`); the caller provides
            // `maxlen` writable bytes at `buf` that nothing else accesses during the call.
            let data = unsafe { std::slice::from_raw_parts_mut(p, maxlen) };
            let r = l.bip.recv(tag, data).map(|(n, src)| Completion {
                len: n,
                peer: src,
                tag,
            });
            // SAFETY: `source` is NULL or points to a writable `int` (caller's contract).
            unsafe { completion(r, std::ptr::null_mut(), source) }.map(|c| len_out(c.len))
        });
        flat(r)
    })
}

// ---- Non-blocking communication ------------------------------------------------------------

/// `int bip_isend(int dest, int tag, const void *buf, size_t len)`: a request handle, or a
/// negative error code.
///
/// # Safety
/// `buf` is NULL with `len == 0`, or points to `len` readable bytes that stay valid and
/// unmodified until the request completes (`bip_test` returns 1 or `bip_wait` returns).
#[no_mangle]
pub unsafe extern "C" fn bip_isend(
    dest: c_int,
    tag: c_int,
    buf: *const c_void,
    len: usize,
) -> c_int {
    guarded(BIP_ERR_OTHER, || {
        flat(with_live(|l| {
            let (dest, tag) = (rank_arg(dest)?, tag_arg(tag)?);
            let p = buf_arg(buf.cast_mut(), len)?;
            // SAFETY: `p` is non-null with `len <= isize::MAX` bytes (`buf_arg`), and the caller
            // keeps them valid and unmodified until the request completes; a request still
            // running at `bip_finalize` is waited for there, before the endpoint goes away.
            let r = unsafe { l.bip.isend(dest, tag, p.cast_const(), len) }.map_err(|e| code(&e))?;
            Ok(l.issue(r))
        }))
    })
}

/// `int bip_irecv(int tag, void *buf, size_t maxlen)`: a request handle, or a negative error
/// code.
///
/// # Safety
/// `buf` is NULL with `maxlen == 0`, or points to `maxlen` writable bytes that stay valid and
/// are not accessed otherwise until the request completes or BIP is finalized.
#[no_mangle]
pub unsafe extern "C" fn bip_irecv(tag: c_int, buf: *mut c_void, maxlen: usize) -> c_int {
    guarded(BIP_ERR_OTHER, || {
        flat(with_live(|l| {
            let tag = tag_arg(tag)?;
            let p = buf_arg(buf, maxlen)?;
            // SAFETY: `p` is non-null with `maxlen <= isize::MAX` bytes (`buf_arg`), valid and
            // reserved to BIP until the request completes (caller's contract). A receive still
            // posted at `bip_finalize` is abandoned with the endpoint, which is dropped there
            // and so never writes to the buffer afterwards.
            let r = unsafe { l.bip.irecv(tag, p, maxlen) }.map_err(|e| code(&e))?;
            Ok(l.issue(r))
        }))
    })
}

/// `int bip_test(int request, long *len, int *source)`: 1 if the request completed, 0 if not
/// yet, or a negative error code.
///
/// # Safety
/// `len` is NULL or points to a writable `long`; `source` is NULL or points to a writable `int`.
#[no_mangle]
pub unsafe extern "C" fn bip_test(request: c_int, len: *mut c_long, source: *mut c_int) -> c_int {
    guarded(BIP_ERR_OTHER, || {
        flat(with_live(|l| {
            let r = l.decode(request)?;
            match l.bip.test(r).transpose() {
                None => Ok(0),
                // SAFETY: the out-pointers are NULL or writable (caller's contract).
                Some(done) => unsafe { completion(done, len, source) }.map(|_| 1),
            }
        }))
    })
}

/// `int bip_wait(int request, long *len, int *source)`: waits for the request to complete.
///
/// # Safety
/// As [`bip_test`].
#[no_mangle]
pub unsafe extern "C" fn bip_wait(request: c_int, len: *mut c_long, source: *mut c_int) -> c_int {
    guarded(BIP_ERR_OTHER, || {
        flat(with_live(|l| {
            let r = l.decode(request)?;
            let done = l.bip.wait(r);
            // SAFETY: the out-pointers are NULL or writable (caller's contract).
            unsafe { completion(done, len, source) }.map(|_| BIP_OK)
        }))
    })
}

// ---- Errors --------------------------------------------------------------------------------

/// `const char *bip_strerror(int code)`: a static description of an error code; never NULL.
#[no_mangle]
pub extern "C" fn bip_strerror(code: c_int) -> *const c_char {
    let s: &'static std::ffi::CStr = match code {
        BIP_OK => c"success",
        BIP_ERR_NOT_INITIALIZED => c"BIP is not initialized (call bip_init first) or was finalized",
        BIP_ERR_ALREADY_INITIALIZED => {
            c"BIP is already initialized (bip_init may be called only once)"
        }
        BIP_ERR_NOT_IN_JOB => {
            c"not started by a job launcher (run the program with mpirun or from a nic_model::Job)"
        }
        BIP_ERR_BAD_RANK => c"destination rank out of range (0..bip_numnodes()-1)",
        BIP_ERR_BAD_TAG => c"tag out of range (0..BIP_TAGS-1)",
        BIP_ERR_TRUNCATED => c"message truncated: longer than the receive buffer",
        BIP_ERR_PEER_GONE => c"a peer process died or finalized while an operation still needed it",
        BIP_ERR_INVALID_REQUEST => c"invalid or already completed request handle",
        BIP_ERR_TOO_MANY_REQUESTS => c"too many outstanding requests; complete some first",
        BIP_ERR_LINK_FAILED => c"link failed: a peer stopped acknowledging packets",
        BIP_ERR_OTHER => {
            c"BIP failed (operating-system error, bad configuration or internal error)"
        }
        BIP_ERR_INVALID_ARG => {
            c"invalid argument (NULL buffer with a non-zero length, or length too large)"
        }
        _ => c"unknown BIP error code",
    };
    s.as_ptr()
}

/// Every function of `bip.h`. A binary whose C code calls BIP by name, but whose Rust code
/// calls none of these functions, names this table (for instance
/// `std::hint::black_box(&bip_core::ffi::EXPORTS)`) so that the linker keeps their definitions.
#[derive(Clone, Copy)]
pub struct Exports {
    pub init: extern "C" fn() -> c_int,
    pub mynode: extern "C" fn() -> c_int,
    pub numnodes: extern "C" fn() -> c_int,
    pub finalize: extern "C" fn() -> c_int,
    pub send: unsafe extern "C" fn(c_int, c_int, *const c_void, usize) -> c_int,
    pub recv: unsafe extern "C" fn(c_int, *mut c_void, usize, *mut c_int) -> c_long,
    pub isend: unsafe extern "C" fn(c_int, c_int, *const c_void, usize) -> c_int,
    pub irecv: unsafe extern "C" fn(c_int, *mut c_void, usize) -> c_int,
    pub test: unsafe extern "C" fn(c_int, *mut c_long, *mut c_int) -> c_int,
    pub wait: unsafe extern "C" fn(c_int, *mut c_long, *mut c_int) -> c_int,
    pub strerror: extern "C" fn(c_int) -> *const c_char,
}

/// The functions of `bip.h`, by address.
pub static EXPORTS: Exports = Exports {
    init: bip_init,
    mynode: bip_mynode,
    numnodes: bip_numnodes,
    finalize: bip_finalize,
    send: bip_send,
    recv: bip_recv,
    isend: bip_isend,
    irecv: bip_irecv,
    test: bip_test,
    wait: bip_wait,
    strerror: bip_strerror,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_are_non_negative_and_keep_index_and_low_generation() {
        for (idx, gen) in [
            (0, 0),
            (0, 1),
            (65535, 0x7fff),
            (65535, u32::MAX),
            (1234, 0x8001),
        ] {
            let h = encode(Request { idx, gen });
            assert!(h >= 0, "{idx} {gen} -> {h}");
            assert_eq!(h as u32 & IDX_MASK, idx);
            assert_eq!(h as u32 >> IDX_BITS, gen & GEN_MASK);
        }
    }

    #[test]
    fn stale_and_foreign_handles_are_refused() {
        let gens = [3u32, 0x8005];
        let check = |h| decode(&gens, h);
        assert_eq!(
            check(encode(Request {
                idx: 1,
                gen: 0x8005
            })),
            Ok(Request {
                idx: 1,
                gen: 0x8005
            })
        );
        assert_eq!(
            check(encode(Request { idx: 0, gen: 2 })),
            Err(BIP_ERR_INVALID_REQUEST)
        );
        assert_eq!(
            check(encode(Request { idx: 2, gen: 1 })),
            Err(BIP_ERR_INVALID_REQUEST)
        );
        assert_eq!(check(-5), Err(BIP_ERR_INVALID_REQUEST));
    }

    #[test]
    fn every_code_has_its_own_description() {
        let codes = BIP_ERR_INVALID_ARG..=BIP_OK;
        let texts: std::collections::HashSet<_> = codes
            .clone()
            .map(|c| {
                // SAFETY: bip_strerror returns a static NUL-terminated string.
                unsafe { std::ffi::CStr::from_ptr(bip_strerror(c)) }
            })
            .collect();
        assert_eq!(texts.len(), codes.count());
    }

    #[test]
    fn calls_before_init_fail_cleanly() {
        assert_eq!(bip_mynode(), BIP_ERR_NOT_INITIALIZED);
        // SAFETY: NULL out-pointers are allowed; no buffer is passed.
        unsafe {
            assert_eq!(
                bip_wait(0, std::ptr::null_mut(), std::ptr::null_mut()),
                BIP_ERR_NOT_INITIALIZED
            );
            assert_eq!(bip_send(0, 0, std::ptr::null(), 0), BIP_ERR_NOT_INITIALIZED);
        }
    }
}
