//! How a function becomes an MPI entry point: the [`mpi_fn!`] macro and [`call`].
//!
//! ```text
//!   MPI_Send ──▶ PMPI_Send ──▶ call("MPI_Send", |st| body) ──Err──▶ raise
//!   (user-replaceable)  (the body)      └─ panic caught: MPI_ERR_INTERN
//! ```
//!
//! **The profiling interface.** Each function is defined once, under its `PMPI_` name; the
//! `MPI_` name is a second exported symbol that calls it. A tool that defines its own
//! `MPI_Send` and calls `PMPI_Send` inside (MPI's profiling interface) therefore sees every call
//! the program makes, and none of the library's own: internally the library calls its Rust
//! functions, never an exported symbol.
//!
//! **Header agreement.** The macro also checks, at compile time, that both symbols have exactly
//! the type `mpi.h` declares (bindgen's prototypes in [`crate::abi`]): a prototype that
//! disagrees with its definition does not compile.
//!
//! **Errors and panics.** The body returns an [`MpiResult`]; an error goes to the error handler
//! of the communicator it names (`raise`, which looks it up in the running state and hands the
//! error to `errhandler::handle`; the handler of the session, of the window, or of the file
//! whose own communicator it names, when it is about one), which returns an error code of its
//! class or ends the process. A panic (a bug, or a failed internal assertion) must not unwind into C: it is
//! caught here and reported as `MPI_ERR_INTERN` the same way.
//!
//! **The lock.** Under `MPI_THREAD_MULTIPLE`, or with `MPI_ASYNC_PROGRESS=1` (a thread of the
//! library turns the engine too), `call` holds one process-wide lock around the body and its
//! error path ([`crate::runtime::thread`]); otherwise it reads one flag and takes no lock.
//! A body that may wait takes the `waits` form ([`call_waiting`]), whose waits let the lock
//! go between looks at the state.

use crate::abi::MPI_SUCCESS;
use crate::errhandler;
use crate::error::{MpiError, MpiResult};
use crate::runtime::global;
use crate::runtime::raise::{panic_text, raise};
use crate::runtime::thread::{lane, lock, Calling, LaneCall, LaneProbe};
use crate::runtime::Mpi;
use std::ffi::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Runs the body of the MPI function `name` on the process's state and turns its result into
/// the C return value.
///
/// While calls take the lock (`MPI_THREAD_MULTIPLE`, or the asynchronous progress thread),
/// the body and its error path hold it ([`lock`]); otherwise this costs one relaxed load, a branch,
/// and the test of its outcome at the end (about 10 instructions per call, measured with
/// callgrind; keeping the guard out of the frame or the locked path out of line made LLVM
/// stop inlining the bodies, which cost more).
#[inline(always)]
pub(crate) fn call(name: &'static str, body: impl FnOnce(&mut Mpi) -> MpiResult<()>) -> c_int {
    let held = match enter(name) {
        Ok(held) => held,
        Err(code) => return code,
    };
    let code = run(name, body);
    drop(held);
    code
}

/// [`call`] when calls take no lock ([`locking`] said so): the body on the state.
#[inline(always)]
pub(crate) fn unlocked(name: &'static str, body: impl FnOnce(&mut Mpi) -> MpiResult<()>) -> c_int {
    run(name, body)
}

/// [`call_waiting`] when calls take no lock ([`locking`] said so).
#[inline(always)]
pub(crate) fn unlocked_waiting(
    name: &'static str,
    body: impl FnOnce(&mut Calling) -> MpiResult<()>,
) -> c_int {
    waiting(name, None, body)
}

/// Whether calls take the process lock (`MPI_THREAD_MULTIPLE`, the progress thread or the
/// checks): one relaxed load.
#[inline(always)]
pub(crate) fn locking() -> bool {
    lock::on()
}

/// The lock for the call `name` if calls take it (`None` if not); `Err` with the C return
/// value for a call that breaks its thread level's rule.
#[inline(always)]
fn enter(name: &'static str) -> Result<Option<lock::Held>, c_int> {
    if lock::on() {
        enter_locked(name)
    } else {
        Ok(None)
    }
}

/// [`enter`] for a call that may take the lane path, made only while calls take the lock (the
/// entry point has tested [`locking`]): `Err` with the C return value when it ran there (or
/// broke its level's rule).
#[inline(always)]
fn enter_lane(
    name: &'static str,
    lane_of: impl FnOnce(&mut LaneProbe) -> Option<usize>,
    on_lane: impl FnOnce(&mut LaneCall) -> MpiResult<()>,
) -> Result<Option<lock::Held>, c_int> {
    if let Some(code) = lane::try_call(name, lane_of, on_lane) {
        return Err(code);
    }
    enter_locked(name)
}

/// [`enter`] once calls take the lock.
#[inline(always)]
fn enter_locked(name: &'static str) -> Result<Option<lock::Held>, c_int> {
    let held = lock::enter_call(name);
    if let Some(misuse) = held.misuse() {
        return Err(misused(name, misuse, held));
    }
    Ok(Some(held))
}

/// A call that breaks its thread level's rule (`MPI_THREAD_CHECK=1`): reported instead of run.
#[cold]
#[inline(never)]
fn misused(name: &'static str, misuse: lock::Misuse, held: lock::Held) -> c_int {
    let e = MpiError::new(crate::abi::MPI_ERR_OTHER, misuse.message(name));
    let code = match misuse {
        // The lock is held: the error handler can be looked up.
        lock::Misuse::NotMain(_) => raise(name, e),
        // Another thread holds the state: nothing of it may be read here.
        lock::Misuse::Concurrent => errhandler::fatal(name, None, None, &e),
    };
    drop(held);
    code
}

/// As [`call`], for a body that may wait (`mpi_fn!`'s `waits` form): the body gets the call's
/// [`Calling`] instead of the state, and its waits ([`Calling::wait_until`]) let the lock go
/// between looks (see [`crate::runtime::thread`]).
#[inline(always)]
pub(crate) fn call_waiting(
    name: &'static str,
    body: impl FnOnce(&mut Calling) -> MpiResult<()>,
) -> c_int {
    let held = match enter(name) {
        Ok(held) => held,
        Err(code) => return code,
    };
    waiting(name, held, body)
}

/// The body of [`call_waiting`] with the lock taken (or not needed).
#[inline(always)]
fn waiting(
    name: &'static str,
    held: Option<lock::Held>,
    body: impl FnOnce(&mut Calling) -> MpiResult<()>,
) -> c_int {
    let mut calling = Calling::new(held);
    let outcome = catch_unwind(AssertUnwindSafe(|| body(&mut calling)));
    // The body's references into the state ended with it; `raise` takes its own (the lock
    // is held again: a wait resumes it before it returns or unwinds).
    let code = match outcome {
        Ok(Ok(())) => MPI_SUCCESS,
        Ok(Err(e)) => raise(name, e),
        Err(panic) => raise(name, MpiError::internal(panic_text(&*panic))),
    };
    drop(calling);
    code
}

/// As [`call`], for a point-to-point call that may take the lane path (`thread::lane`): when
/// calls take the lock and lanes are on, `lane_of` (on the state read-only, under the lock
/// held shared) names the call's lane; a lane other than 0 runs `on_lane` there, anything
/// else runs `body` as [`call`] does. Only called while calls take the lock (the entry point
/// runs [`call`] itself otherwise), and out of line, so that the fast path below
/// `MPI_THREAD_MULTIPLE` is [`call`]'s code alone.
#[inline(never)]
pub(crate) fn call_lane(
    name: &'static str,
    lane_of: impl FnOnce(&mut LaneProbe) -> Option<usize>,
    on_lane: impl FnOnce(&mut LaneCall) -> MpiResult<()>,
    body: impl FnOnce(&mut Mpi) -> MpiResult<()>,
) -> c_int {
    let held = match enter_lane(name, lane_of, on_lane) {
        Ok(held) => held,
        Err(code) => return code,
    };
    let code = run(name, body);
    drop(held);
    code
}

/// [`call_lane`] for a body that may wait ([`call_waiting`]).
#[inline(never)]
pub(crate) fn call_lane_waiting(
    name: &'static str,
    lane_of: impl FnOnce(&mut LaneProbe) -> Option<usize>,
    on_lane: impl FnOnce(&mut LaneCall) -> MpiResult<()>,
    body: impl FnOnce(&mut Calling) -> MpiResult<()>,
) -> c_int {
    let held = match enter_lane(name, lane_of, on_lane) {
        Ok(held) => held,
        Err(code) => return code,
    };
    waiting(name, held, body)
}

/// The body of `call`: the body on the state, its error raised, a panic caught.
#[inline(always)]
fn run(name: &'static str, body: impl FnOnce(&mut Mpi) -> MpiResult<()>) -> c_int {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: the only reference to the state during this call: the body borrows it until
        // it returns, and the error handler takes a new one only after that.
        let st = unsafe { global::state() };
        body(st)
    }));
    match outcome {
        Ok(Ok(())) => MPI_SUCCESS,
        Ok(Err(e)) => raise(name, e),
        Err(panic) => raise(name, MpiError::internal(panic_text(&*panic))),
    }
}

/// Defines an MPI function under its `PMPI_` and `MPI_` names.
///
/// ```ignore
/// mpi_fn! {
///     /// doc
///     fn MPI_Comm_rank / PMPI_Comm_rank(comm: MPI_Comm, rank: *mut c_int) |st| {
///         ... // st: &mut Mpi; evaluates to MpiResult<()>
///     }
/// }
/// ```
///
/// With `then after` following the body, the C return value is `after(code)`, run once the
/// call (and its borrow of the state) is over: `MPI_Init` starts the progress thread there.
///
/// **Large counts.** With `, large NAME_c / PNAME_c where [Count = c_int | MPI_Count, ...]`
/// after the names, one body makes both the int function and its MPI 4.0 large-count twin:
/// each is defined in a module of its own (named after its `PMPI_` symbol) where the aliases
/// (`Count`, `Disp`, ...) name the first type (the int form) or the second (the `_c` form), and
/// the arguments are declared in terms of the aliases. The body converts them to the wide
/// types the internals take (`MPI_Count::from(count)`, [`crate::count`]), so both functions
/// run the same code; the int one pays a sign extension.
///
/// With `waits |call|` instead of `|st|`, the body gets a `&mut Calling` (the call's right to
/// the state, [`crate::runtime::thread::Calling`]) and may wait with the lock let go.
///
/// With `lanes |rt| { lane } on_lane |lc| { lane body }` before the body (either form), a
/// point-to-point function may take the lane path ([`call_lane`]): `lane` (on `rt: &mut
/// LaneProbe`, which reads handles without the state and the state read-only on demand) names
/// the call's lane, `None` for the exclusive path; the lane body gets a
/// `&mut LaneCall` ([`crate::runtime::thread::LaneCall`]).
///
/// The last form, `raw fn NAME / PNAME(args) -> T { body }`, is for the few functions that
/// cannot fail and do not return an error code (`MPI_Wtime`): the body is the function.
macro_rules! mpi_fn {
    (
        $(#[$doc:meta])*
        fn $mpi:ident / $pmpi:ident , large $mpi_c:ident / $pmpi_c:ident
        where [ $($alias:ident = $narrow:ty | $wide:ty),+ $(,)? ]
        ( $($arg:ident : $ty:ty),* $(,)? ) lanes |$rt:ident| $lane_of:block
        on_lane |$lc:ident| $lane_body:block $($how:tt)+
    ) => {
        $crate::runtime::export::mpi_fn!(@form $pmpi [$($alias = $narrow),+]
            [lanes |$rt| $lane_of on_lane |$lc| $lane_body $($how)+]
            $(#[$doc])* fn $mpi / $pmpi ($($arg: $ty),*));
        $crate::runtime::export::mpi_fn!(@form $pmpi_c [$($alias = $wide),+]
            [lanes |$rt| $lane_of on_lane |$lc| $lane_body $($how)+]
            $(#[$doc])*
            #[doc = concat!("The large-count form of `", stringify!($mpi), "`.")]
            fn $mpi_c / $pmpi_c ($($arg: $ty),*));
    };
    (
        $(#[$doc:meta])*
        fn $mpi:ident / $pmpi:ident ( $($arg:ident : $ty:ty),* $(,)? ) lanes |$rt:ident| $lane_of:block
        on_lane |$lc:ident| $lane_body:block waits |$call:ident| $body:block
    ) => {
        $crate::runtime::export::mpi_fn!(@lanes call_lane_waiting unlocked_waiting [$crate::runtime::thread::Calling]
            $(#[$doc])* fn $mpi / $pmpi ($($arg: $ty),*) |$rt| $lane_of |$lc| $lane_body |$call| $body);
    };
    (
        $(#[$doc:meta])*
        fn $mpi:ident / $pmpi:ident ( $($arg:ident : $ty:ty),* $(,)? ) lanes |$rt:ident| $lane_of:block
        on_lane |$lc:ident| $lane_body:block |$st:ident| $body:block
    ) => {
        $crate::runtime::export::mpi_fn!(@lanes call_lane unlocked [$crate::runtime::Mpi]
            $(#[$doc])* fn $mpi / $pmpi ($($arg: $ty),*) |$rt| $lane_of |$lc| $lane_body |$st| $body);
    };
    (@lanes $entry:ident $plain:ident [$state:ty]
        $(#[$doc:meta])* fn $mpi:ident / $pmpi:ident ( $($arg:ident : $ty:ty),* )
        |$rt:ident| $lane_of:block |$lc:ident| $lane_body:block |$st:ident| $body:block
    ) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// The MPI standard's contract for this function's pointer arguments.
        #[no_mangle]
        pub unsafe extern "C" fn $pmpi($($arg: $ty),*) -> ::std::ffi::c_int {
            // Below MPI_THREAD_MULTIPLE there are no lanes: the plain entry, with the body
            // written out for it alone (one caller: inlined as in every other function; a
            // body shared with the lane entry would be called from two places and kept out
            // of line), and no lane closure built.
            if !$crate::runtime::export::locking() {
                return $crate::runtime::export::$plain(
                    stringify!($mpi),
                    |$st: &mut $state| -> $crate::error::MpiResult<()> { $body },
                );
            }
            // The locked entry out of line, so that its closures' frame is not set up on the
            // plain path (callgrind: 5 to 9 instructions fewer per MPI_Isend, Irecv, Wait).
            #[cold]
            #[inline(never)]
            #[allow(clippy::too_many_arguments)] // the C function's
            unsafe fn locked($($arg: $ty),*) -> ::std::ffi::c_int {
                $crate::runtime::export::$entry(
                    stringify!($mpi),
                    move |$rt: &mut $crate::runtime::thread::LaneProbe| -> Option<usize> { $lane_of },
                    move |$lc: &mut $crate::runtime::thread::LaneCall| -> $crate::error::MpiResult<()> { $lane_body },
                    move |$st: &mut $state| -> $crate::error::MpiResult<()> { $body },
                )
            }
            // SAFETY: the same arguments, under the caller's contract.
            unsafe { locked($($arg),*) }
        }
        $crate::runtime::export::mpi_fn!(@twin $mpi $pmpi ($($arg: $ty),*) -> ::std::ffi::c_int);
    };
    (
        $(#[$doc:meta])*
        fn $mpi:ident / $pmpi:ident , large $mpi_c:ident / $pmpi_c:ident
        where [ $($alias:ident = $narrow:ty | $wide:ty),+ $(,)? ]
        ( $($arg:ident : $ty:ty),* $(,)? ) |$st:ident| $body:block
    ) => {
        $crate::runtime::export::mpi_fn!(@form $pmpi [$($alias = $narrow),+] [|$st| $body]
            $(#[$doc])* fn $mpi / $pmpi ($($arg: $ty),*));
        $crate::runtime::export::mpi_fn!(@form $pmpi_c [$($alias = $wide),+] [|$st| $body]
            $(#[$doc])*
            #[doc = concat!("The large-count form of `", stringify!($mpi), "`.")]
            fn $mpi_c / $pmpi_c ($($arg: $ty),*));
    };
    (
        $(#[$doc:meta])*
        fn $mpi:ident / $pmpi:ident , large $mpi_c:ident / $pmpi_c:ident
        where [ $($alias:ident = $narrow:ty | $wide:ty),+ $(,)? ]
        ( $($arg:ident : $ty:ty),* $(,)? ) waits |$call:ident| $body:block
    ) => {
        $crate::runtime::export::mpi_fn!(@form $pmpi [$($alias = $narrow),+] [waits |$call| $body]
            $(#[$doc])* fn $mpi / $pmpi ($($arg: $ty),*));
        $crate::runtime::export::mpi_fn!(@form $pmpi_c [$($alias = $wide),+] [waits |$call| $body]
            $(#[$doc])*
            #[doc = concat!("The large-count form of `", stringify!($mpi), "`.")]
            fn $mpi_c / $pmpi_c ($($arg: $ty),*));
    };
    (@form $module:ident [$($alias:ident = $t:ty),+] [$($how:tt)+]
        $(#[$doc:meta])* fn $mpi:ident / $pmpi:ident ($($arg:ident : $ty:ty),*)
    ) => {
        // The body widens its counts (`MPI_Count::from`, `into()`): the identity in the `_c`
        // form, which clippy would otherwise call useless there.
        #[allow(non_snake_case, clippy::useless_conversion)]
        mod $module {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[allow(dead_code)]
                type $alias = $t;
            )+
            $crate::runtime::export::mpi_fn! {
                $(#[$doc])*
                fn $mpi / $pmpi($($arg: $ty),*) $($how)+
            }
        }
    };
    (
        $(#[$doc:meta])*
        fn $mpi:ident / $pmpi:ident ( $($arg:ident : $ty:ty),* $(,)? ) waits |$call:ident| $body:block
    ) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// The MPI standard's contract for this function's pointer arguments.
        #[no_mangle]
        pub unsafe extern "C" fn $pmpi($($arg: $ty),*) -> ::std::ffi::c_int {
            $crate::runtime::export::call_waiting(
                stringify!($mpi),
                |$call: &mut $crate::runtime::thread::Calling| -> $crate::error::MpiResult<()> { $body },
            )
        }
        $crate::runtime::export::mpi_fn!(@twin $mpi $pmpi ($($arg: $ty),*) -> ::std::ffi::c_int);
    };
    (
        $(#[$doc:meta])*
        fn $mpi:ident / $pmpi:ident ( $($arg:ident : $ty:ty),* $(,)? ) |$st:ident| $body:block
    ) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// The MPI standard's contract for this function's pointer arguments.
        #[no_mangle]
        pub unsafe extern "C" fn $pmpi($($arg: $ty),*) -> ::std::ffi::c_int {
            $crate::runtime::export::call(
                stringify!($mpi),
                |$st: &mut $crate::runtime::Mpi| -> $crate::error::MpiResult<()> { $body },
            )
        }
        $crate::runtime::export::mpi_fn!(@twin $mpi $pmpi ($($arg: $ty),*) -> ::std::ffi::c_int);
    };
    (
        $(#[$doc:meta])*
        fn $mpi:ident / $pmpi:ident ( $($arg:ident : $ty:ty),* $(,)? ) |$st:ident| $body:block
        then $after:path
    ) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// The MPI standard's contract for this function's pointer arguments.
        #[no_mangle]
        pub unsafe extern "C" fn $pmpi($($arg: $ty),*) -> ::std::ffi::c_int {
            $after($crate::runtime::export::call(
                stringify!($mpi),
                |$st: &mut $crate::runtime::Mpi| -> $crate::error::MpiResult<()> { $body },
            ))
        }
        $crate::runtime::export::mpi_fn!(@twin $mpi $pmpi ($($arg: $ty),*) -> ::std::ffi::c_int);
    };
    (
        $(#[$doc:meta])*
        raw fn $mpi:ident / $pmpi:ident ( $($arg:ident : $ty:ty),* $(,)? ) -> $ret:ty $body:block
    ) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// The MPI standard's contract for this function.
        #[no_mangle]
        pub unsafe extern "C" fn $pmpi($($arg: $ty),*) -> $ret $body
        $crate::runtime::export::mpi_fn!(@twin $mpi $pmpi ($($arg: $ty),*) -> $ret);
    };
    (@twin $mpi:ident $pmpi:ident ($($arg:ident : $ty:ty),*) -> $ret:ty) => {
        #[doc = concat!("`", stringify!($mpi), "`: the same function as [`", stringify!($pmpi), "`], under its replaceable name.")]
        ///
        /// # Safety
        /// As for the `PMPI_` function.
        #[no_mangle]
        pub unsafe extern "C" fn $mpi($($arg: $ty),*) -> $ret {
            // SAFETY: the same function under its other name; the caller's contract is passed on.
            unsafe { $pmpi($($arg),*) }
        }
        // Both symbols have the type mpi.h declares.
        const _: unsafe extern "C" fn($($ty),*) -> $ret = $crate::abi::$pmpi;
        const _: unsafe extern "C" fn($($ty),*) -> $ret = $crate::abi::$mpi;
    };
}
pub(crate) use mpi_fn;
