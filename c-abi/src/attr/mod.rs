//! Attributes on communicators: keyvals with copy and delete callbacks, the predefined
//! attributes, and their calls (`MPI_Comm_create_keyval`, `MPI_Comm_free_keyval`,
//! `MPI_Comm_set_attr`, `MPI_Comm_get_attr`, `MPI_Comm_delete_attr`, and the MPI-1 names
//! `MPI_Keyval_create`, `MPI_Keyval_free`, `MPI_Attr_put`, `MPI_Attr_get`, `MPI_Attr_delete`).
//!
//! A keyval is a pair of callbacks and an `extra_state` pointer, named by a handle
//! `0xa4000000 | index`. A communicator keeps its attributes as `(keyval, value)` in the order
//! they were set. The callbacks run:
//!
//! * copy, when the communicator is duplicated (`MPI_Comm_dup`): it decides whether and with
//!   which value the attribute goes to the copy (`MPI_COMM_NULL_COPY_FN`: never;
//!   `MPI_COMM_DUP_FN`, i.e. [`MPIR_Dup_fn`]: the same value);
//! * delete, when the attribute is replaced or deleted, and when the communicator is freed.
//!
//! A callback's failure (a return other than `MPI_SUCCESS`) fails the call with that code.
//! Callbacks may call MPI: the library holds no reference into its tables across the call and
//! reads everything it needs again afterwards. A freed keyval's callbacks stay known (the
//! attributes that still use it need them); its index is never reused.
//!
//! The predefined attributes (`MPI_TAG_UB`, `MPI_HOST`, `MPI_IO`, `MPI_WTIME_IS_GLOBAL`,
//! `MPI_UNIVERSE_SIZE`, `MPI_APPNUM`, `MPI_LASTUSEDCODE`) are read-only values every
//! communicator answers; `MPI_Comm_get_attr` hands out their addresses, as MPI's C binding says.

use crate::abi::*;
use crate::handle::{index_of, Kind, Table};
use crate::comm::{CommIdx, SELF};
use crate::cptr::Out;
use crate::error::{class_info, MpiError, MpiResult};
use crate::runtime::export::mpi_fn;
use crate::runtime::Runtime;
use mpich_channel::TAG_UB;
use std::ffi::{c_int, c_void};

/// The attributes set on one communicator, in the order they were set.
#[derive(Debug, Default)]
pub(crate) struct Attrs {
    list: Vec<(c_int, *mut c_void)>,
}

/// A user keyval.
struct Keyval {
    copy: MPI_Comm_copy_attr_function,
    delete: MPI_Comm_delete_attr_function,
    extra: *mut c_void,
}

/// Every keyval created by the process. A freed keyval is retired in its handle table: its
/// handle is refused, but attributes that use it still reach its callbacks.
pub(crate) struct KeyvalTable {
    keys: Table<Keyval>,
}

impl KeyvalTable {
    pub fn new() -> KeyvalTable {
        KeyvalTable { keys: Table::new(Kind::Keyval) }
    }

    fn create(
        &mut self,
        copy: MPI_Comm_copy_attr_function,
        delete: MPI_Comm_delete_attr_function,
        extra: *mut c_void,
    ) -> MpiResult<c_int> {
        self.keys
            .insert(Keyval { copy, delete, extra })
            .map(|(_, h)| h)
            .ok_or_else(|| MpiError::new(MPI_ERR_NO_MEM, "the process has made 2^26 keyvals, the most MPICH's handles can name"))
    }

    /// A keyval the program may use (not freed, not predefined).
    fn live(&self, keyval: c_int) -> MpiResult<&Keyval> {
        match self.keys.get(keyval) {
            Some(k) => Ok(k),
            None if self.any(keyval).is_some() => Err(MpiError::new(
                MPI_ERR_KEYVAL,
                format!("keyval 0x{keyval:08x} was freed"),
            )),
            None => Err(invalid_keyval(keyval)),
        }
    }

    /// A keyval, freed or not (attributes that use it still need its callbacks).
    fn any(&self, keyval: c_int) -> Option<&Keyval> {
        self.keys.at(index_of(Kind::Keyval, keyval)?)
    }

    /// Frees a keyval the program may use.
    fn free(&mut self, keyval: c_int) -> MpiResult<()> {
        self.live(keyval)?;
        self.keys.retire(keyval);
        Ok(())
    }
}

#[cold]
fn invalid_keyval(keyval: c_int) -> MpiError {
    let detail = if keyval == MPI_KEYVAL_INVALID {
        "the keyval is MPI_KEYVAL_INVALID".to_string()
    } else if is_predefined(keyval) {
        format!("keyval 0x{keyval:08x} is a predefined attribute: it can only be read")
    } else {
        format!("0x{keyval:08x} is not a keyval; create one with MPI_Comm_create_keyval")
    };
    MpiError::new(MPI_ERR_KEYVAL, detail)
}

fn is_predefined(keyval: c_int) -> bool {
    matches!(
        keyval,
        MPI_TAG_UB
            | MPI_HOST
            | MPI_IO
            | MPI_WTIME_IS_GLOBAL
            | MPI_UNIVERSE_SIZE
            | MPI_APPNUM
            | MPI_LASTUSEDCODE
    )
}

/// A callback's return code as an error (its class if it is one, else `MPI_ERR_OTHER`).
fn callback_failed(which: &str, keyval: c_int, rc: c_int) -> MpiError {
    let class = if class_info(rc).is_some() {
        rc
    } else {
        MPI_ERR_OTHER
    };
    MpiError::new(
        class,
        format!("the {which} callback of keyval 0x{keyval:08x} returned {rc}"),
    )
}

/// Runs the delete callback of `keyval` on `value`, an attribute of `comm`.
fn run_delete(rt: &Runtime, comm: MPI_Comm, keyval: c_int, value: *mut c_void) -> MpiResult<()> {
    let Some(k) = rt.keyvals.any(keyval) else {
        return Ok(());
    };
    let (Some(delete), extra) = (k.delete, k.extra) else {
        return Ok(());
    };
    // SAFETY: a delete callback the program registered, called with the arguments MPI's C
    // binding gives it; it may call MPI (no reference into the tables is held across it).
    let rc = unsafe { delete(comm, keyval, value, extra) };
    if rc != MPI_SUCCESS {
        return Err(callback_failed("delete", keyval, rc));
    }
    Ok(())
}

/// Copies the attributes of `from` to its new duplicate `to` through their copy callbacks.
pub(crate) fn copy_all(rt: &mut Runtime, from: CommIdx, to: CommIdx) -> MpiResult<()> {
    let old = rt.comms.get(from);
    let handle = old.handle;
    let list = old.attrs.list.clone();
    for (keyval, value) in list {
        let Some(k) = rt.keyvals.any(keyval) else {
            continue;
        };
        let (Some(copy), extra) = (k.copy, k.extra) else {
            continue;
        };
        let mut out: *mut c_void = std::ptr::null_mut();
        let mut flag: c_int = 0;
        // SAFETY: a copy callback the program registered, with MPI's arguments: `out` and
        // `flag` are ours and writable; it may call MPI (no reference is held across it).
        let rc = unsafe {
            copy(
                handle,
                keyval,
                extra,
                value,
                (&mut out as *mut *mut c_void).cast(),
                &mut flag,
            )
        };
        if rc != MPI_SUCCESS {
            return Err(callback_failed("copy", keyval, rc));
        }
        if flag != 0 {
            rt.comms.get_mut(to).attrs.list.push((keyval, out));
        }
    }
    Ok(())
}

/// Deletes every attribute of `idx` (its communicator is being freed), latest first.
pub(crate) fn delete_all(rt: &mut Runtime, idx: CommIdx) -> MpiResult<()> {
    while let Some(&(keyval, value)) = rt.comms.get(idx).attrs.list.last() {
        let handle = rt.comms.get(idx).handle;
        run_delete(rt, handle, keyval, value)?;
        rt.comms.get_mut(idx).attrs.list.pop();
    }
    Ok(())
}

/// What `MPI_Finalize` must do first (MPI standard): delete the attributes of `MPI_COMM_SELF`,
/// running their delete callbacks.
pub(crate) fn finalize(rt: &mut Runtime) -> MpiResult<()> {
    delete_all(rt, SELF)
}

fn set(rt: &mut Runtime, comm: MPI_Comm, keyval: c_int, value: *mut c_void) -> MpiResult<()> {
    let (idx, c) = rt.comms.lookup(comm)?;
    let handle = c.handle;
    let on = |e: MpiError| e.on(idx);
    rt.keyvals.live(keyval).map_err(on)?;
    let existing = c.attrs.list.iter().position(|&(k, _)| k == keyval);
    match existing {
        Some(i) => {
            let old = c.attrs.list[i].1;
            run_delete(rt, handle, keyval, old).map_err(on)?;
            let list = &mut rt.comms.get_mut(idx).attrs.list;
            match list.iter_mut().find(|(k, _)| *k == keyval) {
                Some(slot) => slot.1 = value,
                None => list.push((keyval, value)),
            }
        }
        None => rt.comms.get_mut(idx).attrs.list.push((keyval, value)),
    }
    Ok(())
}

fn delete(rt: &mut Runtime, comm: MPI_Comm, keyval: c_int) -> MpiResult<()> {
    let (idx, c) = rt.comms.lookup(comm)?;
    let handle = c.handle;
    rt.keyvals.live(keyval).map_err(|e| e.on(idx))?;
    let Some(&(_, value)) = c.attrs.list.iter().find(|&&(k, _)| k == keyval) else {
        return Ok(());
    };
    run_delete(rt, handle, keyval, value).map_err(|e| e.on(idx))?;
    rt.comms
        .get_mut(idx)
        .attrs
        .list
        .retain(|&(k, _)| k != keyval);
    Ok(())
}

// ---- Values of the predefined attributes (MPI_Comm_get_attr hands out their addresses) ----

static ATTR_TAG_UB: c_int = TAG_UB;
/// No process is the "host" (MPI's definition: `MPI_PROC_NULL`).
static ATTR_HOST: c_int = MPI_PROC_NULL;
/// Every process can do I/O.
static ATTR_IO: c_int = MPI_ANY_SOURCE;
/// `MPI_Wtime` reads each host's own monotonic clock; ranks on different hosts (the TCP wire)
/// do not share it, so the library does not promise a global clock.
static ATTR_WTIME_IS_GLOBAL: c_int = 0;
static ATTR_APPNUM: c_int = 0;

/// The value of an attribute of `comm`: `Ok(None)` if it is not set.
fn get(rt: &Runtime, comm: MPI_Comm, keyval: c_int) -> MpiResult<Option<*mut c_void>> {
    let (idx, c) = rt.comms.lookup(comm)?;
    let predefined: &c_int = match keyval {
        MPI_TAG_UB => &ATTR_TAG_UB,
        MPI_HOST => &ATTR_HOST,
        MPI_IO => &ATTR_IO,
        MPI_WTIME_IS_GLOBAL => &ATTR_WTIME_IS_GLOBAL,
        MPI_UNIVERSE_SIZE => &rt.universe_size,
        MPI_APPNUM => &ATTR_APPNUM,
        MPI_LASTUSEDCODE => &rt.errhandlers.last_used,
        _ => {
            rt.keyvals.live(keyval).map_err(|e| e.on(idx))?;
            return Ok(c
                .attrs
                .list
                .iter()
                .find(|&&(k, _)| k == keyval)
                .map(|&(_, v)| v));
        }
    };
    Ok(Some((predefined as *const c_int).cast_mut().cast()))
}

fn create_keyval(
    rt: &mut Runtime,
    copy: MPI_Comm_copy_attr_function,
    delete: MPI_Comm_delete_attr_function,
    keyval: *mut c_int,
    extra: *mut c_void,
) -> MpiResult<()> {
    let out = Out::new(keyval, "keyval")?;
    out.set(rt.keyvals.create(copy, delete, extra)?);
    Ok(())
}

fn free_keyval(rt: &mut Runtime, keyval: *mut c_int) -> MpiResult<()> {
    let out = Out::new(keyval, "keyval")?;
    rt.keyvals.free(out.get())?;
    out.set(MPI_KEYVAL_INVALID);
    Ok(())
}

/// Writes an attribute lookup: `*(void **)attribute_val` and `*flag`.
fn give(found: Option<*mut c_void>, attribute_val: *mut c_void, flag: *mut c_int) -> MpiResult<()> {
    let value_out = Out::new(attribute_val.cast::<*mut c_void>(), "attribute_val")?;
    let flag_out = Out::new(flag, "flag")?;
    if let Some(v) = found {
        value_out.set(v);
    }
    flag_out.set(found.is_some() as c_int);
    Ok(())
}

mpi_fn! {
    /// `MPI_Comm_create_keyval`: a new attribute key with its callbacks.
    fn MPI_Comm_create_keyval / PMPI_Comm_create_keyval(
        comm_copy_attr_fn: MPI_Comm_copy_attr_function,
        comm_delete_attr_fn: MPI_Comm_delete_attr_function,
        comm_keyval: *mut c_int,
        extra_state: *mut c_void,
    ) |st| {
        create_keyval(st.runtime()?, comm_copy_attr_fn, comm_delete_attr_fn, comm_keyval, extra_state)
    }
}

mpi_fn! {
    /// `MPI_Keyval_create`: the MPI-1 name of `MPI_Comm_create_keyval`.
    fn MPI_Keyval_create / PMPI_Keyval_create(
        copy_fn: MPI_Copy_function,
        delete_fn: MPI_Delete_function,
        keyval: *mut c_int,
        extra_state: *mut c_void,
    ) |st| {
        create_keyval(st.runtime()?, copy_fn, delete_fn, keyval, extra_state)
    }
}

mpi_fn! {
    /// `MPI_Comm_free_keyval`: frees a key (attributes using it keep working) and sets it to
    /// `MPI_KEYVAL_INVALID`.
    fn MPI_Comm_free_keyval / PMPI_Comm_free_keyval(comm_keyval: *mut c_int) |st| {
        free_keyval(st.runtime()?, comm_keyval)
    }
}

mpi_fn! {
    /// `MPI_Keyval_free`: the MPI-1 name of `MPI_Comm_free_keyval`.
    fn MPI_Keyval_free / PMPI_Keyval_free(keyval: *mut c_int) |st| {
        free_keyval(st.runtime()?, keyval)
    }
}

mpi_fn! {
    /// `MPI_Comm_set_attr`: sets (or replaces, running the delete callback on the old value)
    /// an attribute.
    fn MPI_Comm_set_attr / PMPI_Comm_set_attr(comm: MPI_Comm, comm_keyval: c_int, attribute_val: *mut c_void) |st| {
        set(st.runtime()?, comm, comm_keyval, attribute_val)
    }
}

mpi_fn! {
    /// `MPI_Attr_put`: the MPI-1 name of `MPI_Comm_set_attr`.
    fn MPI_Attr_put / PMPI_Attr_put(comm: MPI_Comm, keyval: c_int, attribute_val: *mut c_void) |st| {
        set(st.runtime()?, comm, keyval, attribute_val)
    }
}

mpi_fn! {
    /// `MPI_Comm_get_attr`: an attribute's value (`attribute_val` is really a `void **`), and
    /// whether it is set. The predefined attributes are pointers to their values.
    fn MPI_Comm_get_attr / PMPI_Comm_get_attr(
        comm: MPI_Comm,
        comm_keyval: c_int,
        attribute_val: *mut c_void,
        flag: *mut c_int,
    ) |st| {
        let rt = st.runtime()?;
        let (idx, _) = rt.comms.lookup(comm)?;
        let found = get(rt, comm, comm_keyval)?;
        give(found, attribute_val, flag).map_err(|e| e.on(idx))
    }
}

mpi_fn! {
    /// `MPI_Attr_get`: the MPI-1 name of `MPI_Comm_get_attr`.
    fn MPI_Attr_get / PMPI_Attr_get(comm: MPI_Comm, keyval: c_int, attribute_val: *mut c_void, flag: *mut c_int) |st| {
        let rt = st.runtime()?;
        let (idx, _) = rt.comms.lookup(comm)?;
        let found = get(rt, comm, keyval)?;
        give(found, attribute_val, flag).map_err(|e| e.on(idx))
    }
}

mpi_fn! {
    /// `MPI_Comm_delete_attr`: deletes an attribute, running its delete callback.
    fn MPI_Comm_delete_attr / PMPI_Comm_delete_attr(comm: MPI_Comm, comm_keyval: c_int) |st| {
        delete(st.runtime()?, comm, comm_keyval)
    }
}

mpi_fn! {
    /// `MPI_Attr_delete`: the MPI-1 name of `MPI_Comm_delete_attr`.
    fn MPI_Attr_delete / PMPI_Attr_delete(comm: MPI_Comm, keyval: c_int) |st| {
        delete(st.runtime()?, comm, keyval)
    }
}

/// `MPI_COMM_DUP_FN` (MPICH's `MPIR_Dup_fn`, which `mpi.h` names): the copy callback that
/// gives the duplicate the same value.
///
/// # Safety
/// Called by the library (or the program) as a copy callback: `attribute_val_out` points to a
/// writable `void *` and `flag` to a writable `int`.
#[no_mangle]
pub unsafe extern "C" fn MPIR_Dup_fn(
    _oldcomm: MPI_Comm,
    _keyval: c_int,
    _extra_state: *mut c_void,
    attribute_val_in: *mut c_void,
    attribute_val_out: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    // SAFETY: the copy-callback contract above.
    unsafe {
        attribute_val_out
            .cast::<*mut c_void>()
            .write(attribute_val_in);
        flag.write(1);
    }
    MPI_SUCCESS
}
