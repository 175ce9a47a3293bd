//! Dynamic processes: `MPI_Comm_spawn` and `MPI_Comm_spawn_multiple`, refused.
//!
//! A job here has the fixed set of ranks `mpirun` started on one shared-memory fabric, set
//! up before the first rank runs; there is no way to add processes to it. The functions exist
//! so that programs and bindings that mention them (rsmpi's `mpi` crate does) compile and
//! link; a call reports `MPI_ERR_SPAWN` through the communicator's error handler and changes
//! nothing. `MPI_Comm_get_parent` (in `comm::create`) answers `MPI_COMM_NULL` accordingly.

use crate::abi::*;
use crate::error::{MpiError, MpiResult};
use crate::runtime::export::mpi_fn;
use crate::runtime::Runtime;
use std::ffi::{c_char, c_int};

/// The error of every spawn, on `comm`'s error handler when `comm` is valid.
fn refuse(rt: &Runtime, comm: MPI_Comm, call: &str) -> MpiResult<()> {
    let (idx, _) = rt.comms.lookup(comm)?;
    Err(MpiError::new(
        MPI_ERR_SPAWN,
        format!(
            "{call}: this library cannot add processes to a running job; start every process with mpirun -n N instead"
        ),
    )
    .on(idx))
}

mpi_fn! {
    /// `MPI_Comm_spawn`: refused with `MPI_ERR_SPAWN` (see the module documentation).
    fn MPI_Comm_spawn / PMPI_Comm_spawn(
        _command: *const c_char,
        _argv: *mut *mut c_char,
        _maxprocs: c_int,
        _info: MPI_Info,
        _root: c_int,
        comm: MPI_Comm,
        _intercomm: *mut MPI_Comm,
        _array_of_errcodes: *mut c_int,
    ) |st| {
        refuse(st.runtime()?, comm, "MPI_Comm_spawn")
    }
}

mpi_fn! {
    /// `MPI_Comm_spawn_multiple`: refused with `MPI_ERR_SPAWN` (see the module documentation).
    fn MPI_Comm_spawn_multiple / PMPI_Comm_spawn_multiple(
        _count: c_int,
        _array_of_commands: *mut *mut c_char,
        _array_of_argv: *mut *mut *mut c_char,
        _array_of_maxprocs: *const c_int,
        _array_of_info: *const MPI_Info,
        _root: c_int,
        comm: MPI_Comm,
        _intercomm: *mut MPI_Comm,
        _array_of_errcodes: *mut c_int,
    ) |st| {
        refuse(st.runtime()?, comm, "MPI_Comm_spawn_multiple")
    }
}
