//! The attributes datatypes carry (`MPI_Type_set_attr` & co): the same keyvals and callbacks
//! as communicators and windows, on lists kept here by datatype handle.
//!
//! A datatype's `Datatype` is shared (`Arc`) with the operations that use it and cloned when
//! it changes, so its attributes are not kept in it: they live in [`TypeAttrs`], a map from a
//! handle to its [`Attrs`], inside the keyval table (so the running state needs no new field).
//! The datatype calls reach it at the two moments the standard names: `MPI_Type_dup` copies
//! the old type's attributes to the new one through their copy callbacks, `MPI_Type_free`
//! deletes them through their delete callbacks (before the handle can be reused). Predefined
//! types may carry attributes too; they are never freed, so theirs stay until `MPI_Finalize`
//! (which runs no callbacks on them, as MPICH does not either).

use super::{Attrs, KeyvalTable};
use crate::abi::*;
use crate::error::MpiResult;
use std::collections::HashMap;
use std::ffi::{c_int, c_void};

/// Every datatype's attributes, by handle (only types that have some are present).
#[derive(Debug, Default)]
pub(crate) struct TypeAttrs {
    by_type: HashMap<MPI_Datatype, Attrs>,
}

impl KeyvalTable {
    /// The value of `keyval` on `dt`: `Ok(None)` if it is not set; `MPI_ERR_KEYVAL` if the
    /// keyval is not one (an attribute set before its keyval was freed is still found).
    pub(crate) fn type_attr(
        &self,
        dt: MPI_Datatype,
        keyval: c_int,
    ) -> MpiResult<Option<*mut c_void>> {
        let found = self.types.by_type.get(&dt).and_then(|a| a.value(keyval));
        if found.is_none() {
            self.check(keyval)?;
        }
        Ok(found)
    }

    /// Sets `keyval` on `dt` to `value`; an old value is deleted first (its callback runs).
    pub(crate) fn set_type_attr(
        &mut self,
        dt: MPI_Datatype,
        keyval: c_int,
        value: *mut c_void,
    ) -> MpiResult<()> {
        self.check(keyval)?;
        if let Some(old) = self.types.by_type.get(&dt).and_then(|a| a.value(keyval)) {
            self.run_delete(dt, keyval, old)?;
        }
        self.types.by_type.entry(dt).or_default().put(keyval, value);
        Ok(())
    }

    /// Deletes `keyval` from `dt`, running its delete callback (which may refuse: then the
    /// attribute stays).
    pub(crate) fn delete_type_attr(&mut self, dt: MPI_Datatype, keyval: c_int) -> MpiResult<()> {
        let Some(old) = self.types.by_type.get(&dt).and_then(|a| a.value(keyval)) else {
            return self.check(keyval);
        };
        self.run_delete(dt, keyval, old)?;
        self.forget_type_attr(dt, keyval);
        Ok(())
    }

    fn forget_type_attr(&mut self, dt: MPI_Datatype, keyval: c_int) {
        if let Some(a) = self.types.by_type.get_mut(&dt) {
            a.remove(keyval);
            if a.list.is_empty() {
                self.types.by_type.remove(&dt);
            }
        }
    }

    /// What `MPI_Type_dup` does with attributes: `old`'s, copied to its duplicate `new`
    /// through their copy callbacks (`MPI_TYPE_NULL_COPY_FN`: not copied; `MPI_TYPE_DUP_FN`:
    /// the same value). If a callback fails, the copies made so far are deleted again and the
    /// error returned (the caller then frees `new`).
    pub(crate) fn copy_type_attrs(
        &mut self,
        old: MPI_Datatype,
        new: MPI_Datatype,
    ) -> MpiResult<()> {
        let list = match self.types.by_type.get(&old) {
            Some(a) => a.list.clone(),
            None => return Ok(()),
        };
        for (keyval, value) in list {
            match self.run_copy(old, keyval, value) {
                Ok(Some(out)) => self.types.by_type.entry(new).or_default().put(keyval, out),
                Ok(None) => {}
                Err(e) => {
                    let _ = self.delete_type_attrs(new);
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// What `MPI_Type_free` does with attributes: every one of `dt`'s deleted, latest first,
    /// through its delete callback. A failing callback stops the free (its attribute and the
    /// ones set before it stay).
    pub(crate) fn delete_type_attrs(&mut self, dt: MPI_Datatype) -> MpiResult<()> {
        while let Some((keyval, value)) = self.types.by_type.get(&dt).and_then(|a| a.last()) {
            self.run_delete(dt, keyval, value)?;
            self.forget_type_attr(dt, keyval);
        }
        Ok(())
    }
}
