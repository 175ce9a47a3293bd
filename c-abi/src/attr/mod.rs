//! Attributes on communicators (and, through the same keyvals, on windows and datatypes):
//! keyvals with copy and delete callbacks, the predefined attributes, and their calls in `api` (`MPI_Comm_create_keyval`, `MPI_Comm_free_keyval`,
//! `MPI_Comm_set_attr`, `MPI_Comm_get_attr`, `MPI_Comm_delete_attr`, and the MPI-1 names
//! `MPI_Keyval_create`, `MPI_Keyval_free`, `MPI_Attr_put`, `MPI_Attr_get`, `MPI_Attr_delete`;
//! and for datatypes `MPI_Type_create_keyval`, `MPI_Type_free_keyval`, `MPI_Type_set_attr`,
//! `MPI_Type_get_attr`, `MPI_Type_delete_attr`, whose attributes `type_attrs` keeps).
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
//!
//! **Owns** the keyval table and each communicator's attribute list ([`Attrs`]). **Entry:**
//! [`comm_attrs`], which works on the communicator table and the keyvals it is given (the
//! communicator code copies and deletes attributes through it); the C functions, and
//! `MPIR_Dup_fn`, are in `api`.

mod api;
pub(crate) mod comm_attrs;
mod type_attrs;

use crate::abi::*;
use crate::cptr::Out;
use crate::error::{MpiError, MpiResult};
use crate::handle::{index_of, Kind, Table};
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
    /// The datatypes' attributes (`type_attrs`).
    types: type_attrs::TypeAttrs,
}

impl KeyvalTable {
    pub fn new() -> KeyvalTable {
        KeyvalTable {
            keys: Table::new(Kind::Keyval),
            types: Default::default(),
        }
    }

    fn create(
        &mut self,
        copy: MPI_Comm_copy_attr_function,
        delete: MPI_Comm_delete_attr_function,
        extra: *mut c_void,
    ) -> MpiResult<c_int> {
        self.keys
            .insert(Keyval {
                copy,
                delete,
                extra,
            })
            .map(|(_, h)| h)
            .ok_or_else(|| {
                MpiError::new(
                    MPI_ERR_NO_MEM,
                    "the process has made 2^26 keyvals, the most MPICH's handles can name",
                )
            })
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

impl KeyvalTable {
    /// A keyval the program may use (not freed, not predefined), or `MPI_ERR_KEYVAL`.
    pub(crate) fn check(&self, keyval: c_int) -> MpiResult<()> {
        self.live(keyval).map(|_| ())
    }

    /// Runs the delete callback of `keyval` on `value`, an attribute of the object with
    /// handle `object` (a communicator, a window: the callbacks take the handle as an int).
    pub(crate) fn run_delete(
        &self,
        object: c_int,
        keyval: c_int,
        value: *mut c_void,
    ) -> MpiResult<()> {
        let Some(k) = self.any(keyval) else {
            return Ok(());
        };
        let (Some(delete), extra) = (k.delete, k.extra) else {
            return Ok(());
        };
        // SAFETY: a delete callback the program registered, called with the arguments MPI's C
        // binding gives it; it may call MPI (no reference into the tables is held across it).
        let rc = unsafe { delete(object, keyval, value, extra) };
        if rc != MPI_SUCCESS {
            return Err(callback_failed("delete", keyval, rc));
        }
        Ok(())
    }

    /// Runs the copy callback of `keyval` on `value`, an attribute of the object with handle
    /// `object` being duplicated (a communicator, a datatype: the callbacks take the handle
    /// as an int): the duplicate's value, or `None` when it gets none (the callback said so,
    /// as `MPI_*_NULL_COPY_FN` does, or the keyval is freed or has no callback).
    pub(crate) fn run_copy(
        &self,
        object: c_int,
        keyval: c_int,
        value: *mut c_void,
    ) -> MpiResult<Option<*mut c_void>> {
        let Some(k) = self.any(keyval) else {
            return Ok(None);
        };
        let (Some(copy), extra) = (k.copy, k.extra) else {
            return Ok(None);
        };
        let mut out: *mut c_void = std::ptr::null_mut();
        let mut flag: c_int = 0;
        // SAFETY: a copy callback the program registered, with MPI's arguments: `out` and
        // `flag` are ours and writable; it may call MPI (no reference into the tables is held
        // across it).
        let rc = unsafe {
            copy(
                object,
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
        Ok((flag != 0).then_some(out))
    }
}

impl Attrs {
    /// The value set for `keyval`, if any.
    pub(crate) fn value(&self, keyval: c_int) -> Option<*mut c_void> {
        self.list
            .iter()
            .find(|&&(k, _)| k == keyval)
            .map(|&(_, v)| v)
    }

    /// Sets `keyval` to `value` (in place if it was set, else last).
    pub(crate) fn put(&mut self, keyval: c_int, value: *mut c_void) {
        match self.list.iter_mut().find(|(k, _)| *k == keyval) {
            Some(slot) => slot.1 = value,
            None => self.list.push((keyval, value)),
        }
    }

    /// Removes `keyval`.
    pub(crate) fn remove(&mut self, keyval: c_int) {
        self.list.retain(|&(k, _)| k != keyval);
    }

    /// The attribute set last.
    pub(crate) fn last(&self) -> Option<(c_int, *mut c_void)> {
        self.list.last().copied()
    }
}

pub(crate) fn create_keyval(
    keyvals: &mut KeyvalTable,
    copy: MPI_Comm_copy_attr_function,
    delete: MPI_Comm_delete_attr_function,
    keyval: *mut c_int,
    extra: *mut c_void,
) -> MpiResult<()> {
    let out = Out::new(keyval, "keyval")?;
    out.set(keyvals.create(copy, delete, extra)?);
    Ok(())
}

pub(crate) fn free_keyval(keyvals: &mut KeyvalTable, keyval: *mut c_int) -> MpiResult<()> {
    let out = Out::new(keyval, "keyval")?;
    keyvals.free(out.get())?;
    out.set(MPI_KEYVAL_INVALID);
    Ok(())
}

/// Writes an attribute lookup: `*(void **)attribute_val` and `*flag`.
pub(crate) fn give(
    found: Option<*mut c_void>,
    attribute_val: *mut c_void,
    flag: *mut c_int,
) -> MpiResult<()> {
    let value_out = Out::new(attribute_val.cast::<*mut c_void>(), "attribute_val")?;
    let flag_out = Out::new(flag, "flag")?;
    if let Some(v) = found {
        value_out.set(v);
    }
    flag_out.set(found.is_some() as c_int);
    Ok(())
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

pub(crate) fn is_predefined(keyval: c_int) -> bool {
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

/// A callback's return code as an error (its class if it is a code the library makes, else
/// `MPI_ERR_OTHER`).
fn callback_failed(which: &str, keyval: c_int, rc: c_int) -> MpiError {
    let class = crate::errhandler::codes::library_class(rc).unwrap_or(MPI_ERR_OTHER);
    MpiError::new(
        class,
        format!("the {which} callback of keyval 0x{keyval:08x} returned {rc}"),
    )
}
