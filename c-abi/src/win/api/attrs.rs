//! A window's attributes, name, group, info and error handler: `MPI_Win_create_keyval`,
//! `MPI_Win_free_keyval`, `MPI_Win_set_attr`, `MPI_Win_get_attr`, `MPI_Win_delete_attr`,
//! `MPI_Win_set_name`, `MPI_Win_get_name`, `MPI_Win_get_group`, `MPI_Win_set_info`,
//! `MPI_Win_get_info`, `MPI_Win_create_errhandler`, `MPI_Win_set_errhandler`,
//! `MPI_Win_get_errhandler`, `MPI_Win_call_errhandler`.
//!
//! Keyvals are the communicators' (one table, MPICH's handles); a window's attributes run
//! their delete callbacks when replaced, deleted, or when the window is freed. The
//! predefined attributes (`MPI_WIN_BASE`, `MPI_WIN_SIZE`, `MPI_WIN_DISP_UNIT`,
//! `MPI_WIN_CREATE_FLAVOR`, `MPI_WIN_MODEL`) are read-only: the base is handed out as the
//! value itself, the others as the address of a value the window keeps.

use crate::abi::*;
use crate::attr::{create_keyval, free_keyval, give};
use crate::cptr::{write_c_string, Out};
use crate::error::{MpiError, MpiResult};
use crate::runtime::export::mpi_fn;
use crate::runtime::Runtime;
use std::ffi::{c_char, c_int, c_void};

/// Deletes every attribute of window `h` (it is being freed), latest first.
pub(super) fn delete_all(rt: &mut Runtime, h: MPI_Win) -> MpiResult<()> {
    while let Some((keyval, value)) = rt.wins.get(h)?.attrs.last() {
        rt.keyvals
            .run_delete(h, keyval, value)
            .map_err(|e| e.on_win(h))?;
        rt.wins.get_mut(h)?.attrs.remove(keyval);
    }
    Ok(())
}

fn is_predefined(keyval: c_int) -> bool {
    matches!(
        keyval,
        MPI_WIN_BASE | MPI_WIN_SIZE | MPI_WIN_DISP_UNIT | MPI_WIN_CREATE_FLAVOR | MPI_WIN_MODEL
    )
}

mpi_fn! {
    /// `MPI_Win_create_keyval`: a new attribute key for windows, with its callbacks.
    fn MPI_Win_create_keyval / PMPI_Win_create_keyval(
        win_copy_attr_fn: MPI_Win_copy_attr_function,
        win_delete_attr_fn: MPI_Win_delete_attr_function,
        win_keyval: *mut c_int,
        extra_state: *mut c_void,
    ) |st| {
        create_keyval(&mut st.runtime()?.keyvals, win_copy_attr_fn, win_delete_attr_fn, win_keyval, extra_state)
    }
}

mpi_fn! {
    /// `MPI_Win_free_keyval`: frees a key; `*win_keyval` becomes `MPI_KEYVAL_INVALID`.
    fn MPI_Win_free_keyval / PMPI_Win_free_keyval(win_keyval: *mut c_int) |st| {
        free_keyval(&mut st.runtime()?.keyvals, win_keyval)
    }
}

mpi_fn! {
    /// `MPI_Win_set_attr`: sets (or replaces, after its delete callback) an attribute.
    fn MPI_Win_set_attr / PMPI_Win_set_attr(win: MPI_Win, win_keyval: c_int, attribute_val: *mut c_void) |st| {
        let rt = st.runtime()?;
        rt.wins.get(win)?;
        let on = |e: MpiError| e.on_win(win);
        if is_predefined(win_keyval) {
            return Err(on(MpiError::new(MPI_ERR_KEYVAL, format!("keyval 0x{win_keyval:08x} is a predefined window attribute: it can only be read"))));
        }
        rt.keyvals.check(win_keyval).map_err(on)?;
        if let Some(old) = rt.wins.get(win)?.attrs.value(win_keyval) {
            rt.keyvals.run_delete(win, win_keyval, old).map_err(on)?;
        }
        rt.wins.get_mut(win)?.attrs.put(win_keyval, attribute_val);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Win_get_attr`: an attribute's value, or `*flag` false.
    fn MPI_Win_get_attr / PMPI_Win_get_attr(win: MPI_Win, win_keyval: c_int, attribute_val: *mut c_void, flag: *mut c_int) |st| {
        let rt = st.runtime()?;
        let w = rt.wins.get(win)?;
        let on = |e: MpiError| e.on_win(win);
        let found = match win_keyval {
            MPI_WIN_BASE => Some(w.base),
            MPI_WIN_SIZE => Some((&w.size_attr as *const MPI_Aint).cast_mut().cast()),
            MPI_WIN_DISP_UNIT => Some((&w.disp_unit_attr as *const c_int).cast_mut().cast()),
            MPI_WIN_CREATE_FLAVOR => Some((&w.flavor_attr as *const c_int).cast_mut().cast()),
            MPI_WIN_MODEL => Some((&w.model_attr as *const c_int).cast_mut().cast()),
            k => {
                // Found even if its keyval was freed since (as `MPI_Win_delete_attr` does).
                let found = w.attrs.value(k);
                if found.is_none() {
                    rt.keyvals.check(k).map_err(on)?;
                }
                found
            }
        };
        give(found, attribute_val, flag).map_err(on)
    }
}

mpi_fn! {
    /// `MPI_Win_delete_attr`: deletes an attribute (its delete callback runs).
    fn MPI_Win_delete_attr / PMPI_Win_delete_attr(win: MPI_Win, win_keyval: c_int) |st| {
        let rt = st.runtime()?;
        rt.wins.get(win)?;
        let on = |e: MpiError| e.on_win(win);
        // An attribute whose keyval was freed since it was set is still deleted by its old
        // handle (MPI 4.0 §7.7.2: the program frees such references explicitly).
        let Some(old) = rt.wins.get(win)?.attrs.value(win_keyval) else {
            return rt.keyvals.check(win_keyval).map_err(on);
        };
        rt.keyvals.run_delete(win, win_keyval, old).map_err(on)?;
        rt.wins.get_mut(win)?.attrs.remove(win_keyval);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Win_set_name`: names the window (for messages and `MPI_Win_get_name`).
    fn MPI_Win_set_name / PMPI_Win_set_name(win: MPI_Win, win_name: *const c_char) |st| {
        let rt = st.runtime()?;
        rt.wins.get(win)?;
        let name = crate::info::read_c_string(win_name, MPI_MAX_OBJECT_NAME as usize - 1, "win_name")
            .map_err(|e| e.on_win(win))?;
        rt.wins.get_mut(win)?.name = name;
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Win_get_name`: the window's name ("" if it has none).
    fn MPI_Win_get_name / PMPI_Win_get_name(win: MPI_Win, win_name: *mut c_char, resultlen: *mut c_int) |st| {
        let rt = st.runtime()?;
        let w = rt.wins.get(win)?;
        let on = |e: MpiError| e.on_win(win);
        let len = Out::new(resultlen, "resultlen").map_err(on)?;
        len.set(write_c_string(win_name, MPI_MAX_OBJECT_NAME as usize, &w.name, "win_name").map_err(on)?);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Win_get_group`: a new group of the window's processes.
    fn MPI_Win_get_group / PMPI_Win_get_group(win: MPI_Win, group: *mut MPI_Group) |st| {
        let rt = st.runtime()?;
        let w = rt.wins.get(win)?;
        let out = Out::new(group, "group").map_err(|e| e.on_win(win))?;
        let g = rt.comms.get(w.comm).group();
        out.set(rt.groups.insert(g)?);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Win_set_info`: records hints on the window (`no_locks`, `accumulate_ordering`,
    /// ...: it is correct under all of them, and acts on none).
    fn MPI_Win_set_info / PMPI_Win_set_info(win: MPI_Win, info: MPI_Info) |st| {
        let rt = st.runtime()?;
        rt.wins.get(win)?;
        let hints = rt.infos.hints(info).map_err(|e| e.on_win(win))?;
        let w = rt.wins.get_mut(win)?;
        for (k, v) in hints.pairs() {
            w.hints.set(k.to_string(), v.to_string());
        }
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Win_get_info`: a new info object with the hints in force.
    fn MPI_Win_get_info / PMPI_Win_get_info(win: MPI_Win, info_used: *mut MPI_Info) |st| {
        let rt = st.runtime()?;
        let w = rt.wins.get(win)?;
        let out = Out::new(info_used, "info_used").map_err(|e| e.on_win(win))?;
        let mut hints = w.hints.clone();
        // The defaults the standard names, unless the program set them.
        for (k, v) in [("no_locks", "false"), ("accumulate_ordering", "rar,raw,war,waw"), ("accumulate_ops", "same_op_no_op"), ("same_size", "false"), ("same_disp_unit", "false")] {
            if hints.get(k).is_none() {
                hints.set(k.to_string(), v.to_string());
            }
        }
        out.set(rt.infos.insert(hints)?);
        Ok(())
    }
}
