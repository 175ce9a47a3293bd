//! `MPI_T_event_*`: the library exposes no event types (MPI 4.0 allows none). Every function
//! exists and checks its arguments: an event index is `MPI_T_ERR_INVALID_INDEX` (there is
//! none), a name `MPI_T_ERR_INVALID_NAME`, and a registration or an event instance
//! `MPI_T_ERR_INVALID_HANDLE` (none can exist: registrations come from
//! `MPI_T_event_handle_alloc` of an event type, instances are handed to their callbacks).

use super::{index_in, initialized, name_in, out, tool_fn, TResult};
use crate::abi::*;
use std::ffi::{c_char, c_int, c_void};

/// The event types: none.
const EVENT_TYPES: usize = 0;

/// Any registration handle: there are none.
fn registration_in(_registration: MPI_T_event_registration) -> TResult {
    Err(MPI_T_ERR_INVALID_HANDLE)
}

/// Any event instance: there are none.
fn instance_in(_instance: MPI_T_event_instance) -> TResult {
    Err(MPI_T_ERR_INVALID_HANDLE)
}

tool_fn! {
    /// `MPI_T_event_get_num`: 0.
    fn MPI_T_event_get_num / PMPI_T_event_get_num(num_events: *mut c_int) |st, tool| {
        initialized(tool)?;
        out(num_events)?.set(EVENT_TYPES as c_int);
        Ok(())
    }
}

tool_fn! {
    /// `MPI_T_event_get_info`: `MPI_T_ERR_INVALID_INDEX` (no event types).
    fn MPI_T_event_get_info / PMPI_T_event_get_info(
        event_index: c_int,
        name: *mut c_char,
        name_len: *mut c_int,
        verbosity: *mut c_int,
        array_of_datatypes: *mut MPI_Datatype,
        array_of_displacements: *mut MPI_Aint,
        num_elements: *mut c_int,
        enumtype: *mut MPI_T_enum,
        info: *mut MPI_Info,
        desc: *mut c_char,
        desc_len: *mut c_int,
        bind: *mut c_int,
    ) |st, tool| {
        initialized(tool)?;
        index_in(event_index, EVENT_TYPES)?;
        Ok(())
    }
}

tool_fn! {
    /// `MPI_T_event_get_index`: `MPI_T_ERR_INVALID_NAME` for every name (no event types).
    fn MPI_T_event_get_index / PMPI_T_event_get_index(name: *const c_char, event_index: *mut c_int) |st, tool| {
        initialized(tool)?;
        out(event_index)?;
        name_in(name)?;
        Err(MPI_T_ERR_INVALID_NAME)
    }
}

tool_fn! {
    /// `MPI_T_event_handle_alloc`: `MPI_T_ERR_INVALID_INDEX` (no event types).
    fn MPI_T_event_handle_alloc / PMPI_T_event_handle_alloc(
        event_index: c_int,
        obj_handle: *mut c_void,
        info: MPI_Info,
        event_registration: *mut MPI_T_event_registration,
    ) |st, tool| {
        initialized(tool)?;
        index_in(event_index, EVENT_TYPES)?;
        out(event_registration)?;
        Ok(())
    }
}

tool_fn! {
    /// `MPI_T_event_handle_set_info`: `MPI_T_ERR_INVALID_HANDLE` (no registration exists).
    fn MPI_T_event_handle_set_info / PMPI_T_event_handle_set_info(
        event_registration: MPI_T_event_registration,
        info: MPI_Info,
    ) |st, tool| {
        initialized(tool)?;
        registration_in(event_registration)
    }
}

tool_fn! {
    /// `MPI_T_event_handle_get_info`: `MPI_T_ERR_INVALID_HANDLE` (no registration exists).
    fn MPI_T_event_handle_get_info / PMPI_T_event_handle_get_info(
        event_registration: MPI_T_event_registration,
        info_used: *mut MPI_Info,
    ) |st, tool| {
        initialized(tool)?;
        registration_in(event_registration)
    }
}

tool_fn! {
    /// `MPI_T_event_register_callback`: `MPI_T_ERR_INVALID_HANDLE` (no registration exists).
    fn MPI_T_event_register_callback / PMPI_T_event_register_callback(
        event_registration: MPI_T_event_registration,
        cb_safety: MPI_T_cb_safety,
        info: MPI_Info,
        user_data: *mut c_void,
        event_cb_function: MPI_T_event_cb_function,
    ) |st, tool| {
        initialized(tool)?;
        registration_in(event_registration)
    }
}

tool_fn! {
    /// `MPI_T_event_callback_set_info`: `MPI_T_ERR_INVALID_HANDLE` (no registration exists).
    fn MPI_T_event_callback_set_info / PMPI_T_event_callback_set_info(
        event_registration: MPI_T_event_registration,
        cb_safety: MPI_T_cb_safety,
        info: MPI_Info,
    ) |st, tool| {
        initialized(tool)?;
        registration_in(event_registration)
    }
}

tool_fn! {
    /// `MPI_T_event_callback_get_info`: `MPI_T_ERR_INVALID_HANDLE` (no registration exists).
    fn MPI_T_event_callback_get_info / PMPI_T_event_callback_get_info(
        event_registration: MPI_T_event_registration,
        cb_safety: MPI_T_cb_safety,
        info_used: *mut MPI_Info,
    ) |st, tool| {
        initialized(tool)?;
        registration_in(event_registration)
    }
}

tool_fn! {
    /// `MPI_T_event_handle_free`: `MPI_T_ERR_INVALID_HANDLE` (no registration exists).
    fn MPI_T_event_handle_free / PMPI_T_event_handle_free(
        event_registration: MPI_T_event_registration,
        user_data: *mut c_void,
        free_cb_function: MPI_T_event_free_cb_function,
    ) |st, tool| {
        initialized(tool)?;
        registration_in(event_registration)
    }
}

tool_fn! {
    /// `MPI_T_event_set_dropped_handler`: `MPI_T_ERR_INVALID_HANDLE` (no registration exists).
    fn MPI_T_event_set_dropped_handler / PMPI_T_event_set_dropped_handler(
        event_registration: MPI_T_event_registration,
        dropped_cb_function: MPI_T_event_dropped_cb_function,
    ) |st, tool| {
        initialized(tool)?;
        registration_in(event_registration)
    }
}

tool_fn! {
    /// `MPI_T_event_read`: `MPI_T_ERR_INVALID_HANDLE` (no event instance exists).
    fn MPI_T_event_read / PMPI_T_event_read(
        event_instance: MPI_T_event_instance,
        element_index: c_int,
        buffer: *mut c_void,
    ) |st, tool| {
        initialized(tool)?;
        instance_in(event_instance)
    }
}

tool_fn! {
    /// `MPI_T_event_copy`: `MPI_T_ERR_INVALID_HANDLE` (no event instance exists).
    fn MPI_T_event_copy / PMPI_T_event_copy(event_instance: MPI_T_event_instance, buffer: *mut c_void) |st, tool| {
        initialized(tool)?;
        instance_in(event_instance)
    }
}

tool_fn! {
    /// `MPI_T_event_get_timestamp`: `MPI_T_ERR_INVALID_HANDLE` (no event instance exists).
    fn MPI_T_event_get_timestamp / PMPI_T_event_get_timestamp(
        event_instance: MPI_T_event_instance,
        event_timestamp: *mut MPI_Count,
    ) |st, tool| {
        initialized(tool)?;
        instance_in(event_instance)
    }
}

tool_fn! {
    /// `MPI_T_event_get_source`: `MPI_T_ERR_INVALID_HANDLE` (no event instance exists).
    fn MPI_T_event_get_source / PMPI_T_event_get_source(
        event_instance: MPI_T_event_instance,
        source_index: *mut c_int,
    ) |st, tool| {
        initialized(tool)?;
        instance_in(event_instance)
    }
}
