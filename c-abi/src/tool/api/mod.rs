//! The C entry points of `MPI_T`: thin wrappers over [`crate::tool`]'s tables and sessions.
//!
//! Each function is defined by [`tool_fn!`]: a `PMPI_T_` symbol, its `MPI_T_` twin, both checked
//! against `mpi.h`'s prototypes, as `mpi_fn!` does for the rest of MPI. Unlike `mpi_fn!`, an
//! error is returned as its class and goes to no error handler (MPI 4.0 §15.3.10: the `MPI_T`
//! functions return their error codes), and the interface's own state is taken from its mutex.
//! This file has the life cycle (`MPI_T_init_thread`, `MPI_T_finalize`), the enumerations and
//! the time source; `cvar`, `pvar`, `category` and `event` the rest.

mod category;
mod cvar;
mod event;
mod pvar;

use crate::abi::*;
use crate::cptr::{self, Out};
use crate::runtime::global;
use crate::runtime::{Mpi, Phase};
use crate::tool::catalog;
use crate::tool::handles::{self, Kind, ALL_PVAR_HANDLES};
use crate::tool::readings::Readings;
use crate::tool::ToolState;
use std::ffi::{c_char, c_int};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;

/// An `MPI_T` call's outcome: the error class on failure.
pub(super) type TResult<T = ()> = Result<T, c_int>;

/// The interface's state.
static TOOL: Mutex<ToolState> = Mutex::new(ToolState {
    init_count: 0,
    cvar_handles: std::collections::BTreeMap::new(),
    sessions: crate::tool::pvars::Sessions::new_const(),
});

/// `MPI_T_PVAR_ALL_HANDLES`: the constant `mpi.h` declares `extern` (a pointer in C; never
/// dereferenced, see [`handles`]).
#[no_mangle]
pub static MPI_T_PVAR_ALL_HANDLES: usize = ALL_PVAR_HANDLES;

/// Runs an `MPI_T` function's body on the process's MPI state and the interface's state.
///
/// With the lock on (`MPI_THREAD_MULTIPLE`, or the asynchronous progress thread), the body
/// holds it, as every MPI call does.
/// A panic is caught (it must not unwind into C) and returned as `MPI_ERR_INTERN`.
pub(super) fn call(body: impl FnOnce(&mut Mpi, &mut ToolState) -> TResult) -> c_int {
    let held = if crate::runtime::thread::lock::on() {
        Some(crate::runtime::thread::lock::enter())
    } else {
        None
    };
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let mut tool = TOOL.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        // SAFETY: the only reference to the MPI state during this call (an entry point, called
        // with the process's lock whenever calls take it: see runtime::thread).
        let st = unsafe { global::state() };
        body(st, &mut tool)
    }));
    drop(held);
    match outcome {
        Ok(Ok(())) => MPI_SUCCESS,
        Ok(Err(class)) => class,
        Err(_) => MPI_ERR_INTERN,
    }
}

/// Defines an `MPI_T` function under its `PMPI_T_` and `MPI_T_` names.
///
/// ```ignore
/// tool_fn! {
///     /// doc
///     fn MPI_T_cvar_get_num / PMPI_T_cvar_get_num(num: *mut c_int) |st, tool| { ... }
/// }
/// ```
macro_rules! tool_fn {
    (
        $(#[$doc:meta])*
        fn $mpi:ident / $pmpi:ident ( $($arg:ident : $ty:ty),* $(,)? ) |$st:ident, $tool:ident| $body:block
    ) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// The MPI standard's contract for this function's pointer arguments.
        #[no_mangle]
        #[allow(unused_variables)] // the event functions, which have no event to work on
        pub unsafe extern "C" fn $pmpi($($arg: $ty),*) -> ::std::ffi::c_int {
            $crate::tool::api::call(|$st: &mut $crate::runtime::Mpi, $tool: &mut $crate::tool::ToolState| -> $crate::tool::api::TResult { $body })
        }
        $crate::runtime::export::mpi_fn!(@twin $mpi $pmpi ($($arg: $ty),*) -> ::std::ffi::c_int);
    };
}
pub(super) use tool_fn;

/// `MPI_T_ERR_NOT_INITIALIZED` unless `MPI_T_init_thread` was called (and not yet finalized).
pub(super) fn initialized(tool: &ToolState) -> TResult {
    if tool.init_count == 0 {
        Err(MPI_T_ERR_NOT_INITIALIZED)
    } else {
        Ok(())
    }
}

/// A required output argument: NULL is `MPI_T_ERR_INVALID`.
pub(super) fn out<T: Copy>(p: *mut T) -> TResult<Out<T>> {
    Out::new(p, "output").map_err(|_| MPI_T_ERR_INVALID)
}

/// An optional output argument of a `get_info` call: not returned when NULL.
pub(super) fn set_if_wanted<T: Copy>(p: *mut T, value: T) {
    if let Ok(o) = Out::new(p, "output") {
        o.set(value);
    }
}

/// Returns a string the `MPI_T` way (MPI 4.0 §15.3.3): `*len` in is the room in `buf`
/// (including the NUL); nothing is written to `buf` when it or `len` is NULL or the room is 0;
/// else up to `*len - 1` characters and the NUL. `*len` out is the string's full length plus 1.
pub(super) fn string_out(buf: *mut c_char, len: *mut c_int, s: &str) -> TResult {
    let Ok(len) = Out::new(len, "length") else {
        return Ok(());
    };
    let room = len.get();
    if room < 0 {
        return Err(MPI_T_ERR_INVALID);
    }
    if !buf.is_null() && room > 0 {
        cptr::write_c_string(buf, room as usize, s, "string").map_err(|_| MPI_T_ERR_INVALID)?;
    }
    len.set(c_int::try_from(s.len() + 1).unwrap_or(c_int::MAX));
    Ok(())
}

/// An input name (`MPI_T_cvar_get_index`): NULL is `MPI_T_ERR_INVALID`.
pub(super) fn name_in(name: *const c_char) -> TResult<String> {
    cptr::input_string(name, "name").map_err(|_| MPI_T_ERR_INVALID)
}

/// An index argument into a table of `len` entries.
pub(super) fn index_in(index: c_int, len: usize) -> TResult<usize> {
    usize::try_from(index)
        .ok()
        .filter(|&i| i < len)
        .ok_or(MPI_T_ERR_INVALID_INDEX)
}

/// The engine's counters, channel and eager limit while MPI runs; after `MPI_Finalize`, the
/// last ones (kept by it); before `MPI_Init`, none.
pub(super) fn readings(st: &Mpi) -> Option<Readings> {
    match &st.phase {
        Phase::Running(rt) => {
            let mut r = Readings::of(rt.engine.p2p_ref(), rt.lanes.count());
            for k in 1..rt.lanes.count() {
                r.add_lane(rt.lanes.lock(k).engine().p2p_ref());
            }
            Some(r)
        }
        Phase::Finalized => st.last_readings,
        Phase::NotStarted => None,
    }
}

/// Whether `MPI_Init` has been called.
pub(super) fn mpi_started(st: &Mpi) -> bool {
    !matches!(st.phase, Phase::NotStarted)
}

tool_fn! {
    /// `MPI_T_init_thread`: starts (or counts one more use of) the interface; may be called
    /// before `MPI_Init`, after `MPI_Finalize` and any number of times. `*provided` is the
    /// thread level granted (the one asked for, up to `MPI_THREAD_MULTIPLE`, as
    /// `MPI_Init_thread` grants).
    fn MPI_T_init_thread / PMPI_T_init_thread(required: c_int, provided: *mut c_int) |st, tool| {
        let provided = out(provided)?;
        tool.init_count = tool.init_count.checked_add(1).ok_or(MPI_T_ERR_CANNOT_INIT)?;
        provided.set(crate::runtime::thread::grant(required));
        Ok(())
    }
}

tool_fn! {
    /// `MPI_T_finalize`: ends one use of the interface; the last frees every handle and
    /// session. `MPI_T_ERR_NOT_INITIALIZED` if there is no use to end.
    fn MPI_T_finalize / PMPI_T_finalize() |st, tool| {
        initialized(tool)?;
        tool.init_count -= 1;
        if tool.init_count == 0 {
            tool.free_all();
        }
        Ok(())
    }
}

/// The enumeration a handle names.
pub(super) fn enum_in(enumtype: MPI_T_enum) -> TResult<&'static catalog::Enumeration> {
    handles::decode(Kind::Enum, enumtype as usize)
        .and_then(|i| catalog::ENUMS.get(i as usize))
        .ok_or(MPI_T_ERR_INVALID_HANDLE)
}

/// The handle of enumeration `index`.
pub(super) fn enum_handle(index: usize) -> MPI_T_enum {
    handles::encode(Kind::Enum, index as u64) as MPI_T_enum
}

tool_fn! {
    /// `MPI_T_enum_get_info`: the number of items and the name of an enumeration.
    fn MPI_T_enum_get_info / PMPI_T_enum_get_info(
        enumtype: MPI_T_enum,
        num: *mut c_int,
        name: *mut c_char,
        name_len: *mut c_int,
    ) |st, tool| {
        initialized(tool)?;
        let e = enum_in(enumtype)?;
        set_if_wanted(num, e.items.len() as c_int);
        string_out(name, name_len, e.name)
    }
}

tool_fn! {
    /// `MPI_T_enum_get_item`: the value and name of item `indx` of an enumeration.
    fn MPI_T_enum_get_item / PMPI_T_enum_get_item(
        enumtype: MPI_T_enum,
        indx: c_int,
        value: *mut c_int,
        name: *mut c_char,
        name_len: *mut c_int,
    ) |st, tool| {
        initialized(tool)?;
        let e = enum_in(enumtype)?;
        let (v, n) = e.items[index_in(indx, e.items.len())?];
        set_if_wanted(value, v);
        string_out(name, name_len, n)
    }
}

tool_fn! {
    /// `MPI_T_source_get_num`: one time source, the monotonic clock.
    fn MPI_T_source_get_num / PMPI_T_source_get_num(num_sources: *mut c_int) |st, tool| {
        initialized(tool)?;
        out(num_sources)?.set(1);
        Ok(())
    }
}

tool_fn! {
    /// `MPI_T_source_get_info`: the clock's name and description, ordered, in nanoseconds;
    /// `*info` is `MPI_INFO_NULL` (no hints).
    fn MPI_T_source_get_info / PMPI_T_source_get_info(
        source_index: c_int,
        name: *mut c_char,
        name_len: *mut c_int,
        desc: *mut c_char,
        desc_len: *mut c_int,
        ordering: *mut MPI_T_source_order,
        ticks_per_second: *mut MPI_Count,
        max_ticks: *mut MPI_Count,
        info: *mut MPI_Info,
    ) |st, tool| {
        initialized(tool)?;
        index_in(source_index, 1)?;
        string_out(name, name_len, catalog::SOURCE_NAME)?;
        string_out(desc, desc_len, catalog::SOURCE_DESC)?;
        set_if_wanted(ordering, MPI_T_source_order_MPI_T_SOURCE_ORDERED);
        set_if_wanted(ticks_per_second, catalog::SOURCE_TICKS_PER_SECOND);
        set_if_wanted(max_ticks, MPI_Count::MAX);
        set_if_wanted(info, MPI_INFO_NULL);
        Ok(())
    }
}

tool_fn! {
    /// `MPI_T_source_get_timestamp`: the clock's current tick.
    fn MPI_T_source_get_timestamp / PMPI_T_source_get_timestamp(
        source_index: c_int,
        timestamp: *mut MPI_Count,
    ) |st, tool| {
        initialized(tool)?;
        index_in(source_index, 1)?;
        out(timestamp)?.set(catalog::source_timestamp());
        Ok(())
    }
}
