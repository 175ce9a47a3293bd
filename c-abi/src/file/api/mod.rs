//! The C entry points of MPI-IO: opening, closing and managing files (`manage`), views,
//! representations and individual file pointers (`view`), independent data access (`data`),
//! its nonblocking forms (`nonblocking`), collective data access that completes later
//! (`collective`: nonblocking and split; the blocking `_all` calls are in `data`), shared
//! file pointers and ordered access (`shared`), file error handlers (`errhandler`).
//!
//! Each is defined by [`file_fn!`]: `mpi_fn!`'s `PMPI_`/`MPI_` pair, whose body runs through
//! [`run`], which sends its errors to the file's error handler instead of a communicator's
//! (the body names the file its errors belong to; until it does, or when that is not an open
//! file, they go to `MPI_FILE_NULL`'s handler). The handler is chosen while the library's
//! state is held; a function of the program's is called after it is let go, so it may call
//! MPI.
//!
//! The collective steps exchange on the file's own communicator with `comm::net`'s blocking
//! exchanges, tags from [`TAG_FILE`] up (the two-phase accesses use their own tags, from
//! `two_phase::TAG_TWO_PHASE`). The collective calls take `file_fn!`'s `waits` form and are
//! written on `runtime::thread::Reach` ([`reaching!`]): under `MPI_THREAD_MULTIPLE` their
//! exchanges (and a two-phase access, stepped in the looks) wait with the process's lock let
//! go; the file table's own mutex (`file::files`) is never held across such a wait.

mod collective;
mod data;
mod errhandler;
mod manage;
mod nonblocking;
mod shared;
mod view;

use crate::abi::*;
use crate::comm::net::{as_bytes, as_bytes_mut, Net};
use crate::comm::{CommIdx, WORLD};
use crate::errhandler::{call_file_user, judge_file, FileVerdict};
use crate::error::{MpiError, MpiResult};
use crate::file::{files, MPI_FILE_NULL};
use crate::runtime::export::{call, call_waiting};
use crate::runtime::thread::{Calling, Reach};
use crate::runtime::Runtime;
use std::ffi::c_int;

/// Tags of the files' exchanges on their communicators' collective contexts (above the
/// windows' `0x3400_0000`, within the range `comm::net` leaves to its users).
const TAG_FILE: c_int = 0x3500_0000;

/// Runs the body of the file function `name` and returns its C result: `MPI_SUCCESS`, or
/// what the error handler of the file the body routed its error to makes of it.
pub(super) fn run(
    name: &'static str,
    body: impl FnOnce(&mut Runtime, &mut MPI_File) -> MpiResult<()>,
) -> c_int {
    let mut failed = None;
    let code = call(name, |st| {
        let rt = st.runtime()?;
        let mut route = MPI_FILE_NULL;
        if let Err(e) = body(rt, &mut route) {
            failed = Some((e, route));
        }
        Ok(())
    });
    match failed {
        Some((e, route)) => raise_routed(name, e, route),
        None => code,
    }
}

/// Hands `e`, raised by the file function `name` about file `route`, to that file's error
/// handler (`MPI_FILE_NULL`'s when it is not an open file); the code to return.
fn raise_routed(name: &'static str, e: MpiError, route: MPI_File) -> c_int {
    let mut verdict = None;
    let code = call(name, |st| {
        let rt = st.runtime()?;
        let (handler, label) = files().errhandler_of(route);
        let rank = rt.comms.get(WORLD).rank;
        verdict = Some(judge_file(name, e, handler, &label, rank, &rt.errhandlers));
        Ok(())
    });
    match verdict {
        Some(FileVerdict::Return(c)) => c,
        Some(FileVerdict::Call(f, c)) => call_file_user(f, route, c),
        None => code,
    }
}

/// [`run`] for a body that may wait (`file_fn!`'s `waits` form): the body gets the call's
/// [`Calling`] (`runtime::export::call_waiting`), whose waits let the process's lock go
/// between looks under `MPI_THREAD_MULTIPLE`; its error goes to the file's handler as
/// [`run`]'s does.
pub(super) fn run_waiting(
    name: &'static str,
    body: impl FnOnce(&mut Calling, &mut MPI_File) -> MpiResult<()>,
) -> c_int {
    let mut failed = None;
    let code = call_waiting(name, |call| {
        let mut route = MPI_FILE_NULL;
        if let Err(e) = body(call, &mut route) {
            failed = Some((e, route));
        }
        Ok(())
    });
    match failed {
        Some((e, route)) => raise_routed(name, e, route),
        None => code,
    }
}

/// Where an error raised by a function that is not a file function (`MPI_Wait`, `MPI_Test`,
/// ... on the request of a nonblocking collective access) goes when it names a file's own
/// communicator: to that file's error handler, as the file's own calls' errors do (the
/// program's function gets the file handle). The code to return, or `e` back when it is not
/// about an open file's communicator.
#[cold]
pub(crate) fn raise_on_file(
    func: &'static str,
    e: MpiError,
    rt: &Runtime,
) -> Result<c_int, MpiError> {
    let Some((fh, handler, label)) = e.comm.and_then(|c| files().of_comm(c)) else {
        return Err(e);
    };
    let rank = rt.comms.get(WORLD).rank;
    Ok(
        match judge_file(func, e, handler, &label, rank, &rt.errhandlers) {
            FileVerdict::Return(c) => c,
            FileVerdict::Call(f, c) => call_file_user(f, fh, c),
        },
    )
}

/// Defines a file function under its `PMPI_` and `MPI_` names: `|rt, route| body`, where
/// `rt` is the running state and `route` the file the body's errors go to; or
/// `waits |call, route| body`, where `call` is the call's [`Calling`] (`mpi_fn!`'s `waits`
/// form: the body may wait with the process's lock let go, [`run_waiting`]).
macro_rules! file_fn {
    (
        $(#[$doc:meta])*
        fn $mpi:ident / $pmpi:ident , large $mpi_c:ident / $pmpi_c:ident
        where [ $($alias:ident = $narrow:ty | $wide:ty),+ $(,)? ]
        ( $($arg:ident : $ty:ty),* $(,)? ) $($waits:ident)? |$rt:ident, $route:ident| $body:block
    ) => {
        $crate::file::api::file_fn!(@form $pmpi [$($alias = $narrow),+]
            $(#[$doc])* fn $mpi / $pmpi ($($arg: $ty),*) [$($waits)?] |$rt, $route| $body);
        $crate::file::api::file_fn!(@form $pmpi_c [$($alias = $wide),+]
            $(#[$doc])*
            #[doc = concat!("The large-count form of `", stringify!($mpi), "`.")]
            fn $mpi_c / $pmpi_c ($($arg: $ty),*) [$($waits)?] |$rt, $route| $body);
    };
    (@form $module:ident [$($alias:ident = $t:ty),+]
        $(#[$doc:meta])* fn $mpi:ident / $pmpi:ident ($($arg:ident : $ty:ty),*) [$($how:tt)?] |$rt:ident, $route:ident| $body:block
    ) => {
        // One module per form, as `mpi_fn!`'s large form makes them.
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
            $crate::file::api::file_fn! {
                $(#[$doc])*
                fn $mpi / $pmpi($($arg: $ty),*) $($how)? |$rt, $route| $body
            }
        }
    };
    (
        $(#[$doc:meta])*
        fn $mpi:ident / $pmpi:ident ( $($arg:ident : $ty:ty),* $(,)? ) waits |$call:ident, $route:ident| $body:block
    ) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// The MPI standard's contract for this function's pointer arguments.
        #[no_mangle]
        pub unsafe extern "C" fn $pmpi($($arg: $ty),*) -> ::std::ffi::c_int {
            $crate::file::api::run_waiting(
                stringify!($mpi),
                |$call: &mut $crate::runtime::thread::Calling,
                 $route: &mut $crate::abi::MPI_File|
                 -> $crate::error::MpiResult<()> { $body },
            )
        }
        $crate::runtime::export::mpi_fn!(@twin $mpi $pmpi ($($arg: $ty),*) -> ::std::ffi::c_int);
    };
    (
        $(#[$doc:meta])*
        fn $mpi:ident / $pmpi:ident ( $($arg:ident : $ty:ty),* $(,)? ) |$rt:ident, $route:ident| $body:block
    ) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// The MPI standard's contract for this function's pointer arguments.
        #[no_mangle]
        pub unsafe extern "C" fn $pmpi($($arg: $ty),*) -> ::std::ffi::c_int {
            $crate::file::api::run(
                stringify!($mpi),
                |$rt: &mut $crate::runtime::Runtime,
                 $route: &mut $crate::abi::MPI_File|
                 -> $crate::error::MpiResult<()> { $body },
            )
        }
        $crate::runtime::export::mpi_fn!(@twin $mpi $pmpi ($($arg: $ty),*) -> ::std::ffi::c_int);
    };
}
pub(super) use file_fn;

/// Runs `$body` (generic over `Reach`, named `$a`) for the blocking file call `$call`: on
/// the call itself when its waits let the lock go (`MPI_THREAD_MULTIPLE`), else on the
/// running state held throughout, as before.
macro_rules! reaching {
    ($call:ident, |$a:ident| $body:expr) => {
        if $call.releases() {
            let $a = &mut *$call;
            $body
        } else {
            let $a = $call.state().runtime()?;
            $body
        }
    };
}
pub(super) use reaching;

/// Every member's `mine`, in rank order, on communicator `comm`.
fn gather(a: &mut impl Reach, comm: CommIdx, mine: u64) -> MpiResult<Vec<u64>> {
    let net = a.rt(|rt| Ok(Net::local(rt.comms.get(comm))))?;
    let mut all = vec![0u64; net.size()];
    net.allgather(a, as_bytes(&[mine]), as_bytes_mut(&mut all), TAG_FILE)?;
    Ok(all)
}

/// The collective outcome of a step every member did (or tried): `Ok` on every member if it
/// succeeded on every member; otherwise the same class on every member (the lowest failing
/// rank's), with this member's own detail if it failed, or the failing rank named.
fn agree(a: &mut impl Reach, comm: CommIdx, mine: MpiResult<()>, what: &str) -> MpiResult<()> {
    let word = match &mine {
        Ok(()) => 0,
        Err(e) => e.class as u64,
    };
    let all = gather(a, comm, word)?;
    let Some((rank, &class)) = all.iter().enumerate().find(|(_, &w)| w != 0) else {
        return Ok(());
    };
    match mine {
        Err(e) if e.class as u64 == class => Err(e),
        _ => Err(MpiError::new(
            class as c_int,
            format!("{what} failed on rank {rank} of the file's communicator"),
        )),
    }
}
