//! `MPI_T_cvar_*`: the library's settings (see [`crate::tool::cvars`]).

use super::{
    enum_handle, index_in, initialized, mpi_started, name_in, out, readings, set_if_wanted,
    string_out, tool_fn,
};
use crate::abi::*;
use crate::cptr;
use crate::runtime::Phase;
use crate::tool::cvars::{self, Type, Value, WriteRefused, CVARS, TEXT_COUNT};
use crate::tool::handles::{self, Kind};
use crate::tool::ToolState;
use std::ffi::{c_char, c_int, c_void};

tool_fn! {
    /// `MPI_T_cvar_get_num`: how many control variables there are.
    fn MPI_T_cvar_get_num / PMPI_T_cvar_get_num(num_cvar: *mut c_int) |st, tool| {
        initialized(tool)?;
        out(num_cvar)?.set(CVARS.len() as c_int);
        Ok(())
    }
}

tool_fn! {
    /// `MPI_T_cvar_get_info`: a control variable's name, verbosity, datatype, enumeration,
    /// description, binding (always `MPI_T_BIND_NO_OBJECT`) and scope.
    fn MPI_T_cvar_get_info / PMPI_T_cvar_get_info(
        cvar_index: c_int,
        name: *mut c_char,
        name_len: *mut c_int,
        verbosity: *mut c_int,
        datatype: *mut MPI_Datatype,
        enumtype: *mut MPI_T_enum,
        desc: *mut c_char,
        desc_len: *mut c_int,
        bind: *mut c_int,
        scope: *mut c_int,
    ) |st, tool| {
        initialized(tool)?;
        let c = &CVARS[index_in(cvar_index, CVARS.len())?];
        string_out(name, name_len, c.name)?;
        string_out(desc, desc_len, c.desc)?;
        set_if_wanted(verbosity, c.verbosity);
        set_if_wanted(datatype, c.ty.datatype());
        let e = match c.ty {
            Type::Enum(i) => enum_handle(i),
            _ => std::ptr::null_mut(),
        };
        set_if_wanted(enumtype, e);
        set_if_wanted(bind, MPI_T_BIND_NO_OBJECT);
        set_if_wanted(scope, c.writable.scope());
        Ok(())
    }
}

tool_fn! {
    /// `MPI_T_cvar_get_index`: the index of the control variable called `name`
    /// (`MPI_T_ERR_INVALID_NAME` if there is none).
    fn MPI_T_cvar_get_index / PMPI_T_cvar_get_index(name: *const c_char, cvar_index: *mut c_int) |st, tool| {
        initialized(tool)?;
        let index = out(cvar_index)?;
        let i = cvars::index_of(&name_in(name)?).ok_or(MPI_T_ERR_INVALID_NAME)?;
        index.set(i as c_int);
        Ok(())
    }
}

tool_fn! {
    /// `MPI_T_cvar_handle_alloc`: a handle of a control variable (`obj_handle` is not used:
    /// every variable is bound to no object) and the number of elements of its value.
    fn MPI_T_cvar_handle_alloc / PMPI_T_cvar_handle_alloc(
        cvar_index: c_int,
        obj_handle: *mut c_void,
        handle: *mut MPI_T_cvar_handle,
        count: *mut c_int,
    ) |st, tool| {
        initialized(tool)?;
        let i = index_in(cvar_index, CVARS.len())?;
        let (handle, count) = (out(handle)?, out(count)?);
        let serial = handles::next_serial();
        tool.cvar_handles.insert(serial, i);
        handle.set(handles::encode(Kind::CvarHandle, serial) as MPI_T_cvar_handle);
        count.set(CVARS[i].ty.count());
        Ok(())
    }
}

/// The control variable a handle reads.
fn cvar_of(tool: &ToolState, handle: MPI_T_cvar_handle) -> Result<usize, c_int> {
    handles::decode(Kind::CvarHandle, handle as usize)
        .and_then(|s| tool.cvar_handles.get(&s).copied())
        .ok_or(MPI_T_ERR_INVALID_HANDLE)
}

tool_fn! {
    /// `MPI_T_cvar_handle_free`: frees a handle; `*handle` becomes `MPI_T_CVAR_HANDLE_NULL`.
    fn MPI_T_cvar_handle_free / PMPI_T_cvar_handle_free(handle: *mut MPI_T_cvar_handle) |st, tool| {
        initialized(tool)?;
        let handle = out(handle)?;
        cvar_of(tool, handle.get())?;
        if let Some(serial) = handles::decode(Kind::CvarHandle, handle.get() as usize) {
            tool.cvar_handles.remove(&serial);
        }
        handle.set(std::ptr::null_mut());
        Ok(())
    }
}

tool_fn! {
    /// `MPI_T_cvar_read`: the setting's value into `buf` (an `unsigned long long`, an `int`, or
    /// a string of at most `TEXT_COUNT` chars with its NUL, as the variable's datatype says).
    fn MPI_T_cvar_read / PMPI_T_cvar_read(handle: MPI_T_cvar_handle, buf: *mut c_void) |st, tool| {
        initialized(tool)?;
        let i = cvar_of(tool, handle)?;
        let running = match st.phase {
            Phase::Running(_) => readings(st),
            _ => None,
        };
        let env = |name: &str| std::env::var(name).ok();
        match cvars::read(i, running.as_ref(), &env) {
            Value::Count(n) => out(buf.cast::<u64>())?.set(n),
            Value::Int(v) => out(buf.cast::<c_int>())?.set(v),
            Value::Text(t) => {
                cptr::write_c_string(buf.cast::<c_char>(), TEXT_COUNT as usize, &t, "buf")
                    .map_err(|_| MPI_T_ERR_INVALID)?;
            }
        }
        Ok(())
    }
}

tool_fn! {
    /// `MPI_T_cvar_write`: sets a setting `MPI_Init` reads, before `MPI_Init` (it sets the
    /// environment variable of that name, which `MPI_Init` then reads).
    /// `MPI_T_ERR_CVAR_SET_NEVER` for a read-only one, `MPI_T_ERR_CVAR_SET_NOT_NOW` once MPI
    /// has started, `MPI_T_ERR_INVALID` for a value it does not take.
    fn MPI_T_cvar_write / PMPI_T_cvar_write(handle: MPI_T_cvar_handle, buf: *const c_void) |st, tool| {
        initialized(tool)?;
        let i = cvar_of(tool, handle)?;
        let value = match CVARS[i].ty {
            Type::Count => Value::Count(cptr::read(buf.cast::<u64>(), "buf").map_err(|_| MPI_T_ERR_INVALID)?),
            Type::Flag | Type::Enum(_) => Value::Int(cptr::read(buf.cast::<c_int>(), "buf").map_err(|_| MPI_T_ERR_INVALID)?),
            Type::Text => Value::Text(cptr::input_string(buf.cast::<c_char>(), "buf").map_err(|_| MPI_T_ERR_INVALID)?),
        };
        let text = cvars::text_to_write(i, &value, mpi_started(st)).map_err(|why| match why {
            WriteRefused::Never => MPI_T_ERR_CVAR_SET_NEVER,
            WriteRefused::NotNow => MPI_T_ERR_CVAR_SET_NOT_NOW,
            WriteRefused::BadValue(what) => {
                tracing::debug!(what, "MPI_T_cvar_write refused");
                MPI_T_ERR_INVALID
            }
        })?;
        // Before MPI_Init the library runs no thread of its own; the program's other threads,
        // if any, are its to keep out of getenv meanwhile (as for its own setenv).
        std::env::set_var(CVARS[i].name, text);
        Ok(())
    }
}
