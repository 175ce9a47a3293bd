//! The C entry points of attributes: `MPI_Comm_create_keyval`, `MPI_Comm_free_keyval`,
//! `MPI_Comm_set_attr`, `MPI_Comm_get_attr`, `MPI_Comm_delete_attr`, and the MPI-1 names
//! `MPI_Keyval_create`, `MPI_Keyval_free`, `MPI_Attr_put`, `MPI_Attr_get`, `MPI_Attr_delete`;
//! and `MPIR_Dup_fn` (`MPI_COMM_DUP_FN`), the copy callback programs pass; the datatype
//! attribute calls `MPI_Type_create_keyval`, `MPI_Type_free_keyval`, `MPI_Type_set_attr`,
//! `MPI_Type_get_attr`, `MPI_Type_delete_attr`.

use super::comm_attrs::{delete, get, set};
use super::{create_keyval, free_keyval, give};
use crate::abi::*;
use crate::runtime::export::mpi_fn;
use std::ffi::{c_int, c_void};

mpi_fn! {
    /// `MPI_Comm_create_keyval`: a new attribute key with its callbacks.
    fn MPI_Comm_create_keyval / PMPI_Comm_create_keyval(
        comm_copy_attr_fn: MPI_Comm_copy_attr_function,
        comm_delete_attr_fn: MPI_Comm_delete_attr_function,
        comm_keyval: *mut c_int,
        extra_state: *mut c_void,
    ) |st| {
        create_keyval(&mut st.runtime()?.keyvals, comm_copy_attr_fn, comm_delete_attr_fn, comm_keyval, extra_state)
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
        create_keyval(&mut st.runtime()?.keyvals, copy_fn, delete_fn, keyval, extra_state)
    }
}

mpi_fn! {
    /// `MPI_Comm_free_keyval`: frees a key (attributes using it keep working) and sets it to
    /// `MPI_KEYVAL_INVALID`.
    fn MPI_Comm_free_keyval / PMPI_Comm_free_keyval(comm_keyval: *mut c_int) |st| {
        free_keyval(&mut st.runtime()?.keyvals, comm_keyval)
    }
}

mpi_fn! {
    /// `MPI_Keyval_free`: the MPI-1 name of `MPI_Comm_free_keyval`.
    fn MPI_Keyval_free / PMPI_Keyval_free(keyval: *mut c_int) |st| {
        free_keyval(&mut st.runtime()?.keyvals, keyval)
    }
}

mpi_fn! {
    /// `MPI_Comm_set_attr`: sets (or replaces, running the delete callback on the old value)
    /// an attribute.
    fn MPI_Comm_set_attr / PMPI_Comm_set_attr(comm: MPI_Comm, comm_keyval: c_int, attribute_val: *mut c_void) |st| {
        let rt = st.runtime()?;
        set(&mut rt.comms, &rt.keyvals, comm, comm_keyval, attribute_val)
    }
}

mpi_fn! {
    /// `MPI_Attr_put`: the MPI-1 name of `MPI_Comm_set_attr`.
    fn MPI_Attr_put / PMPI_Attr_put(comm: MPI_Comm, keyval: c_int, attribute_val: *mut c_void) |st| {
        let rt = st.runtime()?;
        set(&mut rt.comms, &rt.keyvals, comm, keyval, attribute_val)
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
        let found = get(&rt.comms, &rt.keyvals, &rt.universe_size, &rt.errhandlers.last_used, comm, comm_keyval)?;
        give(found, attribute_val, flag).map_err(|e| e.on(idx))
    }
}

mpi_fn! {
    /// `MPI_Attr_get`: the MPI-1 name of `MPI_Comm_get_attr`.
    fn MPI_Attr_get / PMPI_Attr_get(comm: MPI_Comm, keyval: c_int, attribute_val: *mut c_void, flag: *mut c_int) |st| {
        let rt = st.runtime()?;
        let (idx, _) = rt.comms.lookup(comm)?;
        let found = get(&rt.comms, &rt.keyvals, &rt.universe_size, &rt.errhandlers.last_used, comm, keyval)?;
        give(found, attribute_val, flag).map_err(|e| e.on(idx))
    }
}

mpi_fn! {
    /// `MPI_Comm_delete_attr`: deletes an attribute, running its delete callback.
    fn MPI_Comm_delete_attr / PMPI_Comm_delete_attr(comm: MPI_Comm, comm_keyval: c_int) |st| {
        let rt = st.runtime()?;
        delete(&mut rt.comms, &rt.keyvals, comm, comm_keyval)
    }
}

mpi_fn! {
    /// `MPI_Attr_delete`: the MPI-1 name of `MPI_Comm_delete_attr`.
    fn MPI_Attr_delete / PMPI_Attr_delete(comm: MPI_Comm, keyval: c_int) |st| {
        let rt = st.runtime()?;
        delete(&mut rt.comms, &rt.keyvals, comm, keyval)
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

// ---- Datatype attributes (their lists are `type_attrs`'s) ----------------------------------

mpi_fn! {
    /// `MPI_Type_create_keyval`: a new attribute key for datatypes, with its callbacks (run
    /// by `MPI_Type_dup`, and by `MPI_Type_free` / `MPI_Type_delete_attr` / replacement).
    fn MPI_Type_create_keyval / PMPI_Type_create_keyval(
        type_copy_attr_fn: MPI_Type_copy_attr_function,
        type_delete_attr_fn: MPI_Type_delete_attr_function,
        type_keyval: *mut c_int,
        extra_state: *mut c_void,
    ) |st| {
        create_keyval(&mut st.runtime()?.keyvals, type_copy_attr_fn, type_delete_attr_fn, type_keyval, extra_state)
    }
}

mpi_fn! {
    /// `MPI_Type_free_keyval`: frees a key (attributes using it keep working);
    /// `*type_keyval` becomes `MPI_KEYVAL_INVALID`.
    fn MPI_Type_free_keyval / PMPI_Type_free_keyval(type_keyval: *mut c_int) |st| {
        free_keyval(&mut st.runtime()?.keyvals, type_keyval)
    }
}

mpi_fn! {
    /// `MPI_Type_set_attr`: sets (or replaces, running the delete callback on the old value)
    /// an attribute of a datatype, predefined or derived.
    fn MPI_Type_set_attr / PMPI_Type_set_attr(datatype: MPI_Datatype, type_keyval: c_int, attribute_val: *mut c_void) |st| {
        let rt = st.runtime()?;
        rt.types.get(datatype)?;
        rt.keyvals.set_type_attr(datatype, type_keyval, attribute_val)
    }
}

mpi_fn! {
    /// `MPI_Type_get_attr`: an attribute's value (`attribute_val` is really a `void **`), and
    /// whether it is set.
    fn MPI_Type_get_attr / PMPI_Type_get_attr(
        datatype: MPI_Datatype,
        type_keyval: c_int,
        attribute_val: *mut c_void,
        flag: *mut c_int,
    ) |st| {
        let rt = st.runtime()?;
        rt.types.get(datatype)?;
        let found = rt.keyvals.type_attr(datatype, type_keyval)?;
        give(found, attribute_val, flag)
    }
}

mpi_fn! {
    /// `MPI_Type_delete_attr`: deletes an attribute of a datatype, running its delete callback.
    fn MPI_Type_delete_attr / PMPI_Type_delete_attr(datatype: MPI_Datatype, type_keyval: c_int) |st| {
        let rt = st.runtime()?;
        rt.types.get(datatype)?;
        rt.keyvals.delete_type_attr(datatype, type_keyval)
    }
}
