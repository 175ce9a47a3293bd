//! The C interface `fm.h` (in `fm-streams/include/`): FM 2.x (and FM 1.x) for C programs.
//!
//! The functions here are the definitions of the declarations in `fm.h`, exported unmangled.
//! A C program links them from a binary that contains fm-streams (see `src/bin/fm-c-example.rs`,
//! which runs `examples-c/handlers.c`).
//!
//! **State.** One FM endpoint per process, created by [`FM_initialize`] and finalized by
//! [`FM_finalize`], lives in a *thread-local* `RefCell` of the thread that initialized it; a
//! process-wide flag makes initialization once per process, and calls from other threads get
//! `FM_ERR_WRONG_THREAD`. Not a `static Mutex` (as bip.h's endpoint) because:
//! * handlers run *inside* FM calls: a C handler runs inside `FM_extract` (or a blocking send,
//!   which extracts while it waits) and calls `FM_receive` there. A mutex held across
//!   `Fm::extract` would deadlock on any reentrant call; a `RefCell` detects it instead, and
//!   the call fails with `FM_ERR_IN_HANDLER`. `FM_receive` never touches the endpoint, only the
//!   stream it is given; `FM_nodeid`/`FM_numnodes` read a copy kept beside it, so both work
//!   inside handlers;
//! * the endpoint is not `Send`: handlers are `Rc`s, and a descheduled handler is a coroutine
//!   whose stack holds C frames, which may keep pointers to the initializing thread's own
//!   thread-local data (errno, their own `_Thread_local`s) and must be resumed on that thread.
//!
//! A panic inside FM (a bug) is caught at the boundary and reported as `FM_ERR_OTHER`; the
//! endpoint is then abandoned (leaked, not dropped, as its state may be half-updated) and every
//! later call returns `FM_ERR_OTHER`.
//!
//! **Streams.** C sees one type, `FM_stream`, for both sides: [`FmStream`], whose
//! `StreamKind` says which side it is.
//! * Send side: `FM_begin_message` boxes a [`SendStream`]; the endpoint keeps the addresses of
//!   the boxes it handed out and still owns, and a sending call looks its argument up there
//!   before using it, so a NULL, ended (freed) or foreign pointer, or a receive stream, is
//!   refused with `FM_ERR_BAD_STREAM` without being dereferenced.
//! * Receive side: the wrapper around a C handler builds an `FmStream` on the handler's
//!   stack (its coroutine's), pointing at the handler's [`Stream`], and passes its address to
//!   the C function. `CURRENT` holds the address of the receive stream whose handler is running
//!   C code at this instant (null otherwise: it is cleared while the handler is descheduled
//!   and restored when it resumes), and `FM_receive` refuses any other pointer, so a stream
//!   kept past its handler, used by another handler, or used outside handlers is refused
//!   without being dereferenced.
//!
//! **Safety.** All of fm-streams' C-facing `unsafe` is in this module. The functions that take
//! pointers are `unsafe extern "C"`: their contracts are those stated in `fm.h`. Unwinding never
//! crosses into C: every exported function catches panics, and the Rust frames that call C
//! handlers do nothing that can panic.

#![deny(unsafe_op_in_unsafe_fn)]
#![allow(non_snake_case)]

use crate::error::FmError;
use crate::fm::{Fm, SendStream};
use crate::stream::Stream;
use bip_core::BipError;
use nic_model::{DeviceStack, NicError, Rank};
use std::cell::{Cell, RefCell};
use std::ffi::{c_char, c_int, c_uint, c_ulong, c_void};
use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicBool, Ordering};

/// Success.
pub const FM_OK: c_int = 0;
/// FM is not initialized (or was finalized).
pub const FM_ERR_NOT_INITIALIZED: c_int = -1;
/// `FM_initialize` was already called successfully.
pub const FM_ERR_ALREADY_INITIALIZED: c_int = -2;
/// Not started by a job launcher.
pub const FM_ERR_NOT_IN_JOB: c_int = -3;
/// Destination rank out of range.
pub const FM_ERR_BAD_RANK: c_int = -4;
/// Handler id out of range, or a NULL handler.
pub const FM_ERR_BAD_HANDLER: c_int = -5;
/// A message named a handler not registered here.
pub const FM_ERR_UNKNOWN_HANDLER: c_int = -6;
/// A message to this destination is already open.
pub const FM_ERR_STREAM_OPEN: c_int = -7;
/// The pieces do not add up to the message's size.
pub const FM_ERR_SIZE_MISMATCH: c_int = -8;
/// NULL, ended, foreign or wrong-kind stream, or a receive stream outside its handler.
pub const FM_ERR_BAD_STREAM: c_int = -9;
/// A call handlers may not make, made inside a handler.
pub const FM_ERR_IN_HANDLER: c_int = -10;
/// A peer died, finalized or stopped answering.
pub const FM_ERR_PEER_GONE: c_int = -11;
/// NULL buffer with a non-zero length, or a length too large.
pub const FM_ERR_INVALID_ARG: c_int = -12;
/// A malformed FM packet.
pub const FM_ERR_PROTOCOL: c_int = -13;
/// FM was initialized on another thread.
pub const FM_ERR_WRONG_THREAD: c_int = -14;
/// Any other failure.
pub const FM_ERR_OTHER: c_int = -15;

/// `FM_handler`: `int (*)(FM_stream *stream, unsigned sender)`.
pub type FmHandler = unsafe extern "C" fn(stream: *mut FmStream, sender: c_uint) -> c_int;
/// `FM1_handler`: `void (*)(void *buf, unsigned long size, unsigned sender)`.
pub type Fm1Handler = unsafe extern "C" fn(buf: *mut c_void, size: c_ulong, sender: c_uint);

// ---- Streams --------------------------------------------------------------------------------

/// `FM_stream`: a message being sent or received, as C holds it.
pub struct FmStream {
    kind: StreamKind,
}

/// Which side of a message an [`FmStream`] is.
enum StreamKind {
    /// Boxed by `FM_begin_message`, freed by `FM_end_message` (or `FM_finalize`).
    Send(SendStream),
    /// On a handler coroutine's stack, valid during the handler call only: the handler's
    /// stream (its lifetime erased; it outlives the `FmStream`).
    Receive(*mut Stream<'static>),
}

// ---- Thread-local state -----------------------------------------------------------------------

/// An initialized endpoint and the send streams it handed out.
struct Live {
    fm: Fm<DeviceStack>,
    sends: SendBoxes,
}

/// Boxes from `Box::into_raw`, owned here until `FM_end_message` takes them back; the rest
/// are freed with the endpoint.
#[derive(Default)]
struct SendBoxes(Vec<*mut FmStream>);

impl Drop for SendBoxes {
    fn drop(&mut self) {
        for p in self.0.drain(..) {
            // SAFETY: every entry came from `Box::into_raw` and is removed before being freed
            // anywhere else, so this is its only release.
            drop(unsafe { Box::from_raw(p) });
        }
    }
}

enum State {
    Uninit,
    Live(Box<Live>),
    Finalized,
    /// A panic left the endpoint in an unknown state; it was leaked.
    Broken,
}

thread_local! {
    static STATE: RefCell<State> = const { RefCell::new(State::Uninit) };
    /// The receive stream whose handler is running C code right now, or null.
    static CURRENT: Cell<*mut FmStream> = const { Cell::new(ptr::null_mut()) };
    /// The outcome of this thread's last FM call.
    static LAST_ERROR: Cell<c_int> = const { Cell::new(FM_OK) };
    /// (rank, nranks) while the endpoint is live, readable inside handlers.
    static IDS: Cell<Option<(c_int, c_int)>> = const { Cell::new(None) };
}

/// Set by the first successful `FM_initialize` in the process, on any thread.
static CLAIMED: AtomicBool = AtomicBool::new(false);
/// Set once `FM_initialize` has explained a failure on stderr.
static INIT_FAILURE_REPORTED: AtomicBool = AtomicBool::new(false);

/// Why there is no endpoint on this thread.
fn absent() -> c_int {
    if CLAIMED.load(Ordering::Acquire) {
        // Initialized (and maybe finalized) somewhere: here, or on another thread.
        let here = STATE
            .try_with(|s| {
                s.try_borrow()
                    .map_or(true, |s| !matches!(*s, State::Uninit))
            })
            .unwrap_or(true);
        if here {
            FM_ERR_NOT_INITIALIZED
        } else {
            FM_ERR_WRONG_THREAD
        }
    } else {
        FM_ERR_NOT_INITIALIZED
    }
}

/// Runs `f` on this thread's live endpoint. Refuses reentrant calls (from inside a handler)
/// with `FM_ERR_IN_HANDLER`; a panic in `f` abandons the endpoint.
fn with_live<T>(f: impl FnOnce(&mut Live) -> Result<T, c_int>) -> Result<T, c_int> {
    STATE
        .try_with(|cell| {
            let mut g = cell.try_borrow_mut().map_err(|_| FM_ERR_IN_HANDLER)?;
            let live = match &mut *g {
                State::Live(live) => live,
                State::Broken => return Err(FM_ERR_OTHER),
                State::Uninit | State::Finalized => return Err(absent()),
            };
            match catch_unwind(AssertUnwindSafe(|| f(live))) {
                Ok(r) => r,
                Err(_) => {
                    std::mem::forget(std::mem::replace(&mut *g, State::Broken));
                    IDS.set(None);
                    Err(FM_ERR_OTHER)
                }
            }
        })
        .unwrap_or(Err(FM_ERR_OTHER))
}

/// Records `code` as the outcome of the current call.
fn set_last(code: c_int) {
    let _ = LAST_ERROR.try_with(|c| c.set(code));
}

/// Runs `f`, turning a panic into `on_panic` (and `FM_ERR_OTHER`) so that no unwinding
/// crosses into C.
fn guarded<T>(on_panic: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| {
        set_last(FM_ERR_OTHER);
        on_panic
    })
}

/// Records the outcome of `r` and returns its value, or `on_err`.
fn outcome<T>(r: Result<T, c_int>, on_err: T) -> T {
    match r {
        Ok(v) => {
            set_last(FM_OK);
            v
        }
        Err(code) => {
            set_last(code);
            on_err
        }
    }
}

/// Records the outcome of `r` and returns it as a C status.
fn status(r: Result<(), c_int>) -> c_int {
    let code = r.err().unwrap_or(FM_OK);
    set_last(code);
    code
}

// ---- Conversions ----------------------------------------------------------------------------

/// The error code of an FM error.
#[allow(unreachable_patterns)] // The wildcards keep this working as errors are added.
fn code(e: &FmError) -> c_int {
    match e {
        FmError::Bip(b) => match b {
            BipError::Nic(NicError::NotInJob(_)) => FM_ERR_NOT_IN_JOB,
            BipError::Nic(NicError::PeerDead { .. }) => FM_ERR_PEER_GONE,
            BipError::Nic(NicError::BadRank { .. }) | BipError::BadRank { .. } => FM_ERR_BAD_RANK,
            BipError::PeerGone { .. } | BipError::LinkFailed { .. } => FM_ERR_PEER_GONE,
            _ => FM_ERR_OTHER,
        },
        FmError::SizeMismatch { .. } => FM_ERR_SIZE_MISMATCH,
        FmError::StreamOpen { .. } => FM_ERR_STREAM_OPEN,
        FmError::UnknownHandler { .. } => FM_ERR_UNKNOWN_HANDLER,
        FmError::BadHandlerId(_) => FM_ERR_BAD_HANDLER,
        FmError::Protocol { .. } => FM_ERR_PROTOCOL,
        _ => FM_ERR_OTHER,
    }
}

fn fm_err(e: FmError) -> c_int {
    code(&e)
}

fn rank_out(r: Rank) -> c_int {
    c_int::try_from(r).unwrap_or(c_int::MAX)
}

fn rank_arg(dest: c_uint) -> Result<Rank, c_int> {
    Rank::try_from(dest).map_err(|_| FM_ERR_BAD_RANK)
}

fn len_arg(n: c_ulong) -> Result<usize, c_int> {
    usize::try_from(n)
        .ok()
        .filter(|&n| n <= isize::MAX as usize)
        .ok_or(FM_ERR_INVALID_ARG)
}

/// A message size (`unsigned long` is 64 bits here, 32 on some other targets).
#[allow(clippy::useless_conversion)]
fn size_arg(n: c_ulong) -> u64 {
    u64::from(n)
}

fn len_out(n: usize) -> c_ulong {
    c_ulong::try_from(n).unwrap_or(c_ulong::MAX)
}

/// A buffer pointer Rust may build a slice from: non-null (a dangling one for an empty buffer,
/// which C may pass as NULL).
fn buf_arg(p: *const c_void, len: usize) -> Result<*mut u8, c_int> {
    match NonNull::new(p.cast_mut().cast::<u8>()) {
        Some(p) => Ok(p.as_ptr()),
        None if len == 0 => Ok(NonNull::dangling().as_ptr()),
        None => Err(FM_ERR_INVALID_ARG),
    }
}

/// The send stream behind `p`, if `p` is one that `live` handed out and still owns.
fn send_stream(live: &Live, p: *mut FmStream) -> Result<*mut FmStream, c_int> {
    if p.is_null() || !live.sends.0.contains(&p) {
        return Err(FM_ERR_BAD_STREAM);
    }
    Ok(p)
}

// ---- Setup ----------------------------------------------------------------------------------

fn init() -> Result<(), (c_int, String)> {
    let other = |what: &str| (FM_ERR_OTHER, format!("FM_initialize: {what}"));
    STATE
        .try_with(|cell| {
            let mut g = cell.try_borrow_mut().map_err(|_| {
                (FM_ERR_IN_HANDLER, "FM_initialize: called inside a handler".to_string())
            })?;
            match *g {
                State::Uninit => {}
                State::Broken => return Err(other("FM is unusable after an earlier internal error")),
                State::Live(_) | State::Finalized => {
                    return Err((
                        FM_ERR_ALREADY_INITIALIZED,
                        "FM_initialize: FM was already initialized in this process (FM_initialize may be called only once, even after FM_finalize)".to_string(),
                    ))
                }
            }
            if CLAIMED.swap(true, Ordering::AcqRel) {
                return Err((
                    FM_ERR_ALREADY_INITIALIZED,
                    "FM_initialize: FM was already initialized in this process, on another thread".to_string(),
                ));
            }
            let describe = |e: FmError| {
                let msg = match &e {
                    FmError::Bip(BipError::Nic(NicError::NotInJob(var))) => format!(
                        "FM_initialize: not started by a job launcher ({var} is not set, so there is no job to join); \
                         start the program with mpirun or from a nic_model::Job"
                    ),
                    other => format!("FM_initialize: cannot start FM: {other}"),
                };
                (code(&e), msg)
            };
            let started = DeviceStack::from_env()
                .map_err(|e| describe(FmError::Bip(BipError::from(e))))
                .and_then(|nic| Fm::new(nic).map_err(describe));
            let fm = match started {
                Ok(fm) => fm,
                Err(e) => {
                    CLAIMED.store(false, Ordering::Release);
                    return Err(e);
                }
            };
            IDS.set(Some((rank_out(fm.rank()), rank_out(fm.nranks()))));
            *g = State::Live(Box::new(Live { fm, sends: SendBoxes::default() }));
            Ok(())
        })
        .unwrap_or_else(|_| Err(other("thread-local state is gone (thread exiting)")))
}

/// `int FM_initialize(void)`: attaches to the job and starts FM.
#[no_mangle]
pub extern "C" fn FM_initialize() -> c_int {
    guarded(FM_ERR_OTHER, || match init() {
        Ok(()) => status(Ok(())),
        Err((code, msg)) => {
            if !INIT_FAILURE_REPORTED.swap(true, Ordering::Relaxed) {
                // Not eprintln!: a failing stderr must not panic.
                let _ = writeln!(std::io::stderr(), "{msg}");
            }
            status(Err(code))
        }
    })
}

/// The (rank, nranks) of the live endpoint; works inside handlers.
fn ids() -> Result<(c_int, c_int), c_int> {
    match IDS.try_with(Cell::get) {
        Ok(Some(ids)) => Ok(ids),
        Ok(None) => {
            let broken = STATE
                .try_with(|s| s.try_borrow().is_ok_and(|s| matches!(*s, State::Broken)))
                .unwrap_or(false);
            Err(if broken { FM_ERR_OTHER } else { absent() })
        }
        Err(_) => Err(FM_ERR_OTHER),
    }
}

/// `int FM_nodeid(void)`: this process's rank, or a negative error code.
#[no_mangle]
pub extern "C" fn FM_nodeid() -> c_int {
    guarded(FM_ERR_OTHER, || {
        let r = ids().map(|(rank, _)| rank);
        outcome(r, r.unwrap_or_else(|e| e))
    })
}

/// `int FM_numnodes(void)`: the number of processes, or a negative error code.
#[no_mangle]
pub extern "C" fn FM_numnodes() -> c_int {
    guarded(FM_ERR_OTHER, || {
        let r = ids().map(|(_, n)| n);
        outcome(r, r.unwrap_or_else(|e| e))
    })
}

/// The Rust handler that runs C handler `h` for each message (on the message's coroutine, or
/// directly when the message arrived whole in one packet).
fn c_handler(h: FmHandler) -> impl Fn(&mut Stream<'_>) + 'static {
    move |s: &mut Stream<'_>| {
        let sender = c_uint::try_from(s.sender()).unwrap_or(c_uint::MAX);
        let mut cs = FmStream {
            kind: StreamKind::Receive(ptr::from_mut(s).cast::<Stream<'static>>()),
        };
        let p: *mut FmStream = &mut cs;
        let prev = CURRENT.replace(p);
        // SAFETY: `h` is a C function of the `FM_handler` type (`FM_set_handler`'s contract);
        // `p` points to a live `FmStream` for the whole call, during which `s` is used only
        // through it. The return value is reserved (`FM_CONTINUE`).
        let _ = unsafe { h(p, sender) };
        CURRENT.set(prev);
        // `cs` (and the pointer C had) ends here; `CURRENT` no longer names it.
    }
}

/// `int FM_set_handler(unsigned id, FM_handler h)`.
#[no_mangle]
pub extern "C" fn FM_set_handler(id: c_uint, h: Option<FmHandler>) -> c_int {
    guarded(FM_ERR_OTHER, || {
        status(with_live(|l| {
            let h = h.ok_or(FM_ERR_BAD_HANDLER)?;
            l.fm.set_handler(id, c_handler(h)).map_err(fm_err)
        }))
    })
}

/// `int FM_set_handler1(unsigned id, FM1_handler h)`.
#[no_mangle]
pub extern "C" fn FM_set_handler1(id: c_uint, h: Option<Fm1Handler>) -> c_int {
    guarded(FM_ERR_OTHER, || {
        status(with_live(|l| {
            let h = h.ok_or(FM_ERR_BAD_HANDLER)?;
            let wrapper = move |src: Rank, data: &[u8]| {
                let sender = c_uint::try_from(src).unwrap_or(c_uint::MAX);
                // SAFETY: `h` is a C function of the `FM1_handler` type; `data` is valid for
                // the call (never NULL: a slice's pointer is dangling-but-non-null when empty),
                // and `fm.h` forbids writing through it.
                unsafe { h(data.as_ptr().cast_mut().cast(), len_out(data.len()), sender) };
            };
            l.fm.set_handler1(id, wrapper).map_err(fm_err)
        }))
    })
}

/// `int FM_finalize(void)`: frees FM, delivers what is in flight and detaches from the job.
#[no_mangle]
pub extern "C" fn FM_finalize() -> c_int {
    guarded(FM_ERR_OTHER, || {
        let r = STATE
            .try_with(|cell| {
                let mut g = cell.try_borrow_mut().map_err(|_| FM_ERR_IN_HANDLER)?;
                match std::mem::replace(&mut *g, State::Finalized) {
                    State::Live(live) => {
                        IDS.set(None);
                        let Live { fm, sends } = *live;
                        drop(sends);
                        // Handlers still descheduled are leaked, never unwound through their
                        // C frames; then BIP delivers what is in flight and detaches.
                        fm.finalize().map_err(fm_err)
                    }
                    other => {
                        let broken = matches!(other, State::Broken);
                        *g = other;
                        Err(if broken { FM_ERR_OTHER } else { absent() })
                    }
                }
            })
            .unwrap_or(Err(FM_ERR_OTHER));
        status(r)
    })
}

// ---- FM 2.x: sending ------------------------------------------------------------------------

/// `FM_stream *FM_begin_message(unsigned dest, unsigned long size, unsigned handler)`: the
/// stream, or NULL.
#[no_mangle]
pub extern "C" fn FM_begin_message(dest: c_uint, size: c_ulong, handler: c_uint) -> *mut FmStream {
    guarded(ptr::null_mut(), || {
        let r = with_live(|l| {
            let s =
                l.fm.begin_message(rank_arg(dest)?, size_arg(size), handler)
                    .map_err(fm_err)?;
            l.sends.0.reserve(1);
            let p = Box::into_raw(Box::new(FmStream {
                kind: StreamKind::Send(s),
            }));
            l.sends.0.push(p);
            Ok(p)
        });
        outcome(r, ptr::null_mut())
    })
}

/// `int FM_send_piece(FM_stream *stream, const void *buf, unsigned long bytes)`.
///
/// # Safety
/// `buf` is NULL with `bytes == 0`, or points to `bytes` readable bytes not modified during the
/// call. `stream` may be anything: it is dereferenced only if FM handed it out and owns it.
#[no_mangle]
pub unsafe extern "C" fn FM_send_piece(
    stream: *mut FmStream,
    buf: *const c_void,
    bytes: c_ulong,
) -> c_int {
    guarded(FM_ERR_OTHER, || {
        status(with_live(|l| {
            let p = send_stream(l, stream)?;
            let len = len_arg(bytes)?;
            let data = buf_arg(buf, len)?;
            // SAFETY: `p` is a live box owned by `l.sends` (checked), not otherwise borrowed.
            let StreamKind::Send(s) = (unsafe { &mut (*p).kind }) else {
                return Err(FM_ERR_BAD_STREAM);
            };
            // SAFETY: `data` is non-null, `len <= isize::MAX`, and the caller provides `len`
            // readable bytes unmodified during the call (dangling is valid for `len == 0`).
            let piece = unsafe { std::slice::from_raw_parts(data.cast_const(), len) };
            l.fm.send_piece(s, piece).map_err(fm_err)
        }))
    })
}

/// `int FM_end_message(FM_stream *stream)`: ends the message and frees the stream.
///
/// # Safety
/// None beyond C's: `stream` is dereferenced only if FM handed it out and owns it.
#[no_mangle]
pub unsafe extern "C" fn FM_end_message(stream: *mut FmStream) -> c_int {
    guarded(FM_ERR_OTHER, || {
        status(with_live(|l| {
            let p = send_stream(l, stream)?;
            l.sends.0.retain(|&q| q != p);
            // SAFETY: `p` came from `Box::into_raw` and was just removed from the owners'
            // list, so it is released exactly once, here.
            let b = unsafe { Box::from_raw(p) };
            match b.kind {
                StreamKind::Send(s) => l.fm.end_message(s).map_err(fm_err),
                StreamKind::Receive(_) => Err(FM_ERR_BAD_STREAM),
            }
        }))
    })
}

// ---- FM 2.x: receiving ----------------------------------------------------------------------

/// `unsigned long FM_receive(void *buf, FM_stream *stream, unsigned long bytes)`: the bytes
/// received (0 on error). Does not touch the endpoint: runs inside a handler, inside
/// `FM_extract` (or a blocking send), which holds it.
///
/// # Safety
/// `buf` is NULL with `bytes == 0`, or points to `bytes` writable bytes that nothing else
/// accesses until the call returns (the handler may be descheduled meanwhile). `stream` is
/// dereferenced only if it is the receive stream whose handler is running.
#[no_mangle]
pub unsafe extern "C" fn FM_receive(
    buf: *mut c_void,
    stream: *mut FmStream,
    bytes: c_ulong,
) -> c_ulong {
    guarded(0, || {
        let current = CURRENT.try_with(Cell::get).unwrap_or(ptr::null_mut());
        let r = (|| {
            if stream.is_null() || stream != current {
                return Err(FM_ERR_BAD_STREAM);
            }
            let len = len_arg(bytes)?;
            let data = buf_arg(buf, len)?;
            // SAFETY: `stream` is `CURRENT`: the `FmStream` on the stack of the handler now
            // running (this call is on its coroutine), alive until the handler returns.
            let StreamKind::Receive(s) = (unsafe { &(*stream).kind }) else {
                return Err(FM_ERR_BAD_STREAM);
            };
            let s = *s;
            // SAFETY: caller's contract: `len` writable bytes at `data`, reserved to us (and,
            // for a bulk piece, to the transfer into them) until we return.
            let out = unsafe { std::slice::from_raw_parts_mut(data, len) };
            // The handler may be descheduled in `receive`: no stream is current meanwhile.
            CURRENT.set(ptr::null_mut());
            // SAFETY: `s` points to the running handler's `Stream`, which outlives its
            // `FmStream`; the handler's Rust frame does not use it while C runs.
            let got = unsafe { (*s).receive(out) };
            CURRENT.set(stream);
            Ok(len_out(got))
        })();
        outcome(r, 0)
    })
}

/// `unsigned long FM_extract(unsigned long max_bytes)`: the bytes processed (0 on error).
#[no_mangle]
pub extern "C" fn FM_extract(max_bytes: c_ulong) -> c_ulong {
    guarded(0, || {
        let max = usize::try_from(max_bytes).unwrap_or(usize::MAX);
        let r = with_live(|l| l.fm.extract(max).map(len_out).map_err(fm_err));
        outcome(r, 0)
    })
}

// ---- FM 1.x ---------------------------------------------------------------------------------

/// `int FM_send(unsigned dest, unsigned handler, const void *buf, unsigned long size)`.
///
/// # Safety
/// `buf` is NULL with `size == 0`, or points to `size` readable bytes not modified during the
/// call.
#[no_mangle]
pub unsafe extern "C" fn FM_send(
    dest: c_uint,
    handler: c_uint,
    buf: *const c_void,
    size: c_ulong,
) -> c_int {
    guarded(FM_ERR_OTHER, || {
        status(with_live(|l| {
            let dest = rank_arg(dest)?;
            let len = len_arg(size)?;
            let data = buf_arg(buf, len)?;
            // SAFETY: as in `FM_send_piece`.
            let msg = unsafe { std::slice::from_raw_parts(data.cast_const(), len) };
            l.fm.send1(dest, handler, msg).map_err(fm_err)
        }))
    })
}

/// `int FM_send_4(unsigned dest, unsigned handler, unsigned i0, unsigned i1, unsigned i2,
/// unsigned i3)`.
#[no_mangle]
pub extern "C" fn FM_send_4(
    dest: c_uint,
    handler: c_uint,
    i0: c_uint,
    i1: c_uint,
    i2: c_uint,
    i3: c_uint,
) -> c_int {
    guarded(FM_ERR_OTHER, || {
        status(with_live(|l| {
            let dest = rank_arg(dest)?;
            l.fm.send4(dest, handler, [i0, i1, i2, i3]).map_err(fm_err)
        }))
    })
}

// ---- Errors ---------------------------------------------------------------------------------

/// `int FM_last_error(void)`: the outcome of this thread's last FM call.
#[no_mangle]
pub extern "C" fn FM_last_error() -> c_int {
    LAST_ERROR.try_with(Cell::get).unwrap_or(FM_ERR_OTHER)
}

/// `const char *FM_strerror(int code)`: a static description of an error code; never NULL.
#[no_mangle]
pub extern "C" fn FM_strerror(code: c_int) -> *const c_char {
    let s: &'static std::ffi::CStr = match code {
        FM_OK => c"success",
        FM_ERR_NOT_INITIALIZED => c"FM is not initialized (call FM_initialize first) or was finalized",
        FM_ERR_ALREADY_INITIALIZED => c"FM is already initialized (FM_initialize may be called only once)",
        FM_ERR_NOT_IN_JOB => c"not started by a job launcher (run the program with mpirun or from a nic_model::Job)",
        FM_ERR_BAD_RANK => c"destination rank out of range (0..FM_numnodes()-1)",
        FM_ERR_BAD_HANDLER => c"handler id out of range (0..2^24-1) or NULL handler",
        FM_ERR_UNKNOWN_HANDLER => c"a message named a handler id that is not registered in this process",
        FM_ERR_STREAM_OPEN => c"a message to this destination is already open; end it first",
        FM_ERR_SIZE_MISMATCH => c"the pieces sent do not add up to the size given to FM_begin_message",
        FM_ERR_BAD_STREAM => {
            c"invalid stream (NULL, already ended, of the wrong kind, or a receive stream used outside its handler)"
        }
        FM_ERR_IN_HANDLER => c"this call is not allowed inside a handler (handlers may only receive)",
        FM_ERR_PEER_GONE => c"a peer process died, finalized or stopped answering while needed",
        FM_ERR_INVALID_ARG => c"invalid argument (NULL buffer with a non-zero length, or length too large)",
        FM_ERR_PROTOCOL => c"malformed FM packet received",
        FM_ERR_WRONG_THREAD => c"FM was initialized on another thread; call it from that thread",
        FM_ERR_OTHER => c"FM failed (operating-system error, bad configuration or internal error)",
        _ => c"unknown FM error code",
    };
    s.as_ptr()
}

/// Every function of `fm.h`. A binary whose C code calls FM by name, but whose Rust code calls
/// none of these functions, names this table (for instance
/// `std::hint::black_box(&fm_streams::ffi::EXPORTS)`) so that the linker keeps their definitions.
#[derive(Clone, Copy)]
pub struct Exports {
    pub initialize: extern "C" fn() -> c_int,
    pub nodeid: extern "C" fn() -> c_int,
    pub numnodes: extern "C" fn() -> c_int,
    pub set_handler: extern "C" fn(c_uint, Option<FmHandler>) -> c_int,
    pub finalize: extern "C" fn() -> c_int,
    pub begin_message: extern "C" fn(c_uint, c_ulong, c_uint) -> *mut FmStream,
    pub send_piece: unsafe extern "C" fn(*mut FmStream, *const c_void, c_ulong) -> c_int,
    pub end_message: unsafe extern "C" fn(*mut FmStream) -> c_int,
    pub receive: unsafe extern "C" fn(*mut c_void, *mut FmStream, c_ulong) -> c_ulong,
    pub extract: extern "C" fn(c_ulong) -> c_ulong,
    pub set_handler1: extern "C" fn(c_uint, Option<Fm1Handler>) -> c_int,
    pub send: unsafe extern "C" fn(c_uint, c_uint, *const c_void, c_ulong) -> c_int,
    pub send_4: extern "C" fn(c_uint, c_uint, c_uint, c_uint, c_uint, c_uint) -> c_int,
    pub last_error: extern "C" fn() -> c_int,
    pub strerror: extern "C" fn(c_int) -> *const c_char,
}

/// The functions of `fm.h`, by address.
pub static EXPORTS: Exports = Exports {
    initialize: FM_initialize,
    nodeid: FM_nodeid,
    numnodes: FM_numnodes,
    set_handler: FM_set_handler,
    finalize: FM_finalize,
    begin_message: FM_begin_message,
    send_piece: FM_send_piece,
    end_message: FM_end_message,
    receive: FM_receive,
    extract: FM_extract,
    set_handler1: FM_set_handler1,
    send: FM_send,
    send_4: FM_send_4,
    last_error: FM_last_error,
    strerror: FM_strerror,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_its_own_description() {
        let codes = FM_ERR_OTHER..=FM_OK;
        let texts: std::collections::HashSet<_> = codes
            .clone()
            .map(|c| {
                // SAFETY: FM_strerror returns a static NUL-terminated string.
                unsafe { std::ffi::CStr::from_ptr(FM_strerror(c)) }
            })
            .collect();
        assert_eq!(texts.len(), codes.count());
    }

    #[test]
    fn calls_before_init_fail_cleanly() {
        assert_eq!(FM_nodeid(), FM_ERR_NOT_INITIALIZED);
        assert_eq!(FM_last_error(), FM_ERR_NOT_INITIALIZED);
        assert_eq!(FM_extract(!0), 0);
        assert_eq!(FM_last_error(), FM_ERR_NOT_INITIALIZED);
        assert!(FM_begin_message(0, 0, 0).is_null());
        // SAFETY: NULL streams and buffers with zero lengths are allowed arguments.
        unsafe {
            assert_eq!(
                FM_send_piece(ptr::null_mut(), ptr::null(), 0),
                FM_ERR_NOT_INITIALIZED
            );
            assert_eq!(FM_end_message(ptr::null_mut()), FM_ERR_NOT_INITIALIZED);
            assert_eq!(FM_send(0, 0, ptr::null(), 0), FM_ERR_NOT_INITIALIZED);
        }
        assert_eq!(FM_finalize(), FM_ERR_NOT_INITIALIZED);
    }

    #[test]
    fn receive_outside_a_handler_is_refused_without_touching_the_stream() {
        // A pointer that is not a stream at all: never dereferenced.
        let bogus = 16usize as *mut FmStream;
        let mut b = [0u8; 4];
        // SAFETY: `b` is writable; the stream is refused before any use.
        let n = unsafe { FM_receive(b.as_mut_ptr().cast(), bogus, 4) };
        assert_eq!(n, 0);
        assert_eq!(FM_last_error(), FM_ERR_BAD_STREAM);
        // SAFETY: as above.
        let n = unsafe { FM_receive(b.as_mut_ptr().cast(), ptr::null_mut(), 4) };
        assert_eq!((n, FM_last_error()), (0, FM_ERR_BAD_STREAM));
    }
}
