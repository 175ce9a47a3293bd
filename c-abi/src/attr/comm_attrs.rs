//! The attributes a communicator carries: setting, reading and deleting them, copying them
//! to a duplicate and deleting them when it is freed, with the keyvals' callbacks.

use super::KeyvalTable;
use crate::abi::*;
use crate::comm::{CommIdx, CommTable, SELF};
use crate::error::{MpiError, MpiResult};
use mpich_channel::TAG_UB;
use std::ffi::{c_int, c_void};

/// Runs the delete callback of `keyval` on `value`, an attribute of `comm`.
fn run_delete(
    keyvals: &KeyvalTable,
    comm: MPI_Comm,
    keyval: c_int,
    value: *mut c_void,
) -> MpiResult<()> {
    keyvals.run_delete(comm, keyval, value)
}

/// Copies the attributes of `from` to its new duplicate `to` through their copy callbacks.
pub(crate) fn copy_all(
    comms: &mut CommTable,
    keyvals: &KeyvalTable,
    from: CommIdx,
    to: CommIdx,
) -> MpiResult<()> {
    let old = comms.get(from);
    let handle = old.handle;
    let list = old.attrs.list.clone();
    for (keyval, value) in list {
        if let Some(out) = keyvals.run_copy(handle, keyval, value)? {
            comms.get_mut(to).attrs.list.push((keyval, out));
        }
    }
    Ok(())
}

/// Deletes every attribute of `idx` (its communicator is being freed), latest first.
pub(crate) fn delete_all(
    comms: &mut CommTable,
    keyvals: &KeyvalTable,
    idx: CommIdx,
) -> MpiResult<()> {
    while let Some(&(keyval, value)) = comms.get(idx).attrs.list.last() {
        let handle = comms.get(idx).handle;
        run_delete(keyvals, handle, keyval, value)?;
        comms.get_mut(idx).attrs.list.pop();
    }
    Ok(())
}

/// What `MPI_Finalize` must do first (MPI standard): delete the attributes of `MPI_COMM_SELF`,
/// running their delete callbacks.
pub(crate) fn finalize(comms: &mut CommTable, keyvals: &KeyvalTable) -> MpiResult<()> {
    delete_all(comms, keyvals, SELF)
}

pub(crate) fn set(
    comms: &mut CommTable,
    keyvals: &KeyvalTable,
    comm: MPI_Comm,
    keyval: c_int,
    value: *mut c_void,
) -> MpiResult<()> {
    let (idx, c) = comms.lookup(comm)?;
    let handle = c.handle;
    let on = |e: MpiError| e.on(idx);
    keyvals.live(keyval).map_err(on)?;
    let existing = c.attrs.list.iter().position(|&(k, _)| k == keyval);
    match existing {
        Some(i) => {
            let old = c.attrs.list[i].1;
            run_delete(keyvals, handle, keyval, old).map_err(on)?;
            let list = &mut comms.get_mut(idx).attrs.list;
            match list.iter_mut().find(|(k, _)| *k == keyval) {
                Some(slot) => slot.1 = value,
                None => list.push((keyval, value)),
            }
        }
        None => comms.get_mut(idx).attrs.list.push((keyval, value)),
    }
    Ok(())
}

pub(crate) fn delete(
    comms: &mut CommTable,
    keyvals: &KeyvalTable,
    comm: MPI_Comm,
    keyval: c_int,
) -> MpiResult<()> {
    let (idx, c) = comms.lookup(comm)?;
    let handle = c.handle;
    // An attribute whose keyval was freed since it was set is still deleted by its old
    // handle (MPI 4.0 §7.7.2: the program frees such references explicitly).
    let Some(&(_, value)) = c.attrs.list.iter().find(|&&(k, _)| k == keyval) else {
        return keyvals.live(keyval).map(drop).map_err(|e| e.on(idx));
    };
    run_delete(keyvals, handle, keyval, value).map_err(|e| e.on(idx))?;
    comms.get_mut(idx).attrs.list.retain(|&(k, _)| k != keyval);
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
/// `MPI_APPNUM`: set at `MPI_Init` for a process started as one of several commands
/// (`dynamic::join_parent`); an `AtomicI32` has the layout of the `int` the caller reads.
static ATTR_APPNUM: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// Sets the value of `MPI_APPNUM`.
pub(crate) fn set_appnum(n: c_int) {
    ATTR_APPNUM.store(n, std::sync::atomic::Ordering::Relaxed);
}

/// The value of an attribute of `comm`: `Ok(None)` if it is not set. `universe_size` and
/// `last_used_code` are where the running state keeps the values of `MPI_UNIVERSE_SIZE` and
/// `MPI_LASTUSEDCODE`.
pub(crate) fn get(
    comms: &CommTable,
    keyvals: &KeyvalTable,
    universe_size: &c_int,
    last_used_code: &c_int,
    comm: MPI_Comm,
    keyval: c_int,
) -> MpiResult<Option<*mut c_void>> {
    let (idx, c) = comms.lookup(comm)?;
    let predefined: &c_int = match keyval {
        MPI_TAG_UB => &ATTR_TAG_UB,
        MPI_HOST => &ATTR_HOST,
        MPI_IO => &ATTR_IO,
        MPI_WTIME_IS_GLOBAL => &ATTR_WTIME_IS_GLOBAL,
        MPI_UNIVERSE_SIZE => universe_size,
        // SAFETY: an AtomicI32 has the size and alignment of a c_int (i32); the caller reads it.
        MPI_APPNUM => unsafe { &*ATTR_APPNUM.as_ptr() },
        MPI_LASTUSEDCODE => last_used_code,
        _ => {
            // Found even if its keyval was freed since (as `delete` does).
            let found = c.attrs.list.iter().find(|&&(k, _)| k == keyval);
            if found.is_none() {
                keyvals.live(keyval).map_err(|e| e.on(idx))?;
            }
            return Ok(found.map(|&(_, v)| v));
        }
    };
    Ok(Some((predefined as *const c_int).cast_mut().cast()))
}
