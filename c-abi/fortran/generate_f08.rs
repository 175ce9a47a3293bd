//! Build-time half of the Fortran 2008 binding: the `mpi_f08` module (MPI 4.0 §19.2/§19.3)
//! and the few Rust entry points it needs, derived from `mpi.h` and from what the library
//! implements, like the `mpi` module (`generate.rs`, whose parsing and parameter rules this
//! file reuses).
//!
//! ```text
//!   mpi.h ──bindgen──▶ mpi_h.rs ──┬─ constants ──────────▶ mpi_f08.f90 ──gfortran──▶ mpi_f08.mod
//!                                 └─ prototypes ─┐              ▲
//!   src/**/*.rs ── implemented MPI_X ────────────┴──────────────┘
//!                                                └──▶ fortran_f08_entry_points.rs
//!                                                     (mpi_x_f08_, mpi_x_f08ts_, pmpi_...)
//! ```
//!
//! **Nothing but a `.mod`.** The module holds only types, named constants, abstract
//! interfaces and interface bodies of procedures the library itself exports, so a program
//! that says `use mpi_f08` links against `libmpi.so` alone: no Fortran object, no
//! `libmpifort`.
//!
//! **Names** (MPI 4.0 §19.1.4, §19.1.5 and its Table 19.1). A program calls the generic name
//! `MPI_X`; each generic interface holds the *specific procedures* under the standard's names,
//! which are also what a tool intercepts: `MPI_X_f08ts` for a procedure with a choice buffer
//! (scheme 1B: `TYPE(*), DIMENSION(..)`), `MPI_X_f08` without (scheme 1A), and for a
//! large-count function its `_c` before the token (`MPI_Send_c_f08ts`, `MPI_Type_size_c_f08`),
//! in the same generic, so that a call with an `INTEGER(KIND=MPI_COUNT_KIND)` count resolves
//! to it ([`generics`]). Where the two forms differ only in procedure arguments
//! (`MPI_Op_create_c`, `MPI_Register_datarep_c`, as the standard says) or between
//! `MPI_ADDRESS_KIND` and `MPI_COUNT_KIND` (the same kind here: `MPI_Type_get_extent_c`, ...)
//! no compiler could choose, and the `_c` form is a generic of its own. Each specific
//! procedure is an external procedure whose linker name is gfortran's for its specific name
//! (`mpi_comm_rank_f08_`, `mpi_send_f08ts_`), defined by `libmpi.so`. Each is one of two kinds
//! of interface:
//!
//! - **Without a choice buffer**: an ordinary (not `BIND(C)`) interface body for the external
//!   procedure `MPI_X_f08`, which gfortran calls as `mpi_x_f08_`: a forwarder to the entry
//!   point `mpi_x_` the `mpi` binding already has (generated here, or `twin!`'s `f08` form for
//!   the hand-written ones). This works because every f08 argument is passed as the `mpi`
//!   binding's is:
//!   `TYPE(MPI_Comm)` is a `BIND(C)` type whose one component `MPI_VAL` is the `INTEGER`
//!   handle, passed by reference like the `INTEGER`; `TYPE(MPI_Status)` has MPICH's layout,
//!   the C `MPI_Status`'s (`count_lo`, `count_hi_and_cancelled`, `MPI_SOURCE`, `MPI_TAG`,
//!   `MPI_ERROR`), which is also the `INTEGER(MPI_STATUS_SIZE)` status; `LOGICAL` is a 0/1
//!   `int`; strings come with hidden lengths; and an absent `OPTIONAL :: ierror` arrives as
//!   NULL, which the entry points already accept.
//! - **With a choice buffer** (`TYPE(*), DIMENSION(..)`): a `BIND(C)` interface body for
//!   `MPI_X_f08ts`, labelled `mpi_x_f08ts_`, because an assumed-rank dummy arrives as a C
//!   descriptor
//!   (`CFI_cdesc_t`, TS 29113, supported by gfortran since version 9). The generated Rust
//!   entry point takes the buffer's base address from the descriptor (strings of these
//!   procedures also come as descriptors) and calls `mpi_x_`. `MPI_SUBARRAYS_SUPPORTED` is
//!   `.FALSE.`: a non-contiguous array section is not copied; the entry point refuses it
//!   with `MPI_ERR_BUFFER` before calling anything (`refuse_noncontiguous`). Pass contiguous
//!   arrays, or describe the stride with a derived datatype.
//!
//! Functions listed in [`HAND_WRITTEN_F08`] get interface bodies written here by hand (the
//! attribute and keyval procedures, `MPI_Init`, ...); those in [`NOT_IN_F08`] (removed from
//! the standard before MPI 3) get none. A unit test (`src/fortran/f08.rs`) checks that every
//! other implemented function has its procedure.
//!
//! **Intents.** `const` pointers and values are `INTENT(IN)`; outputs are `INTENT(OUT)`,
//! except the handles that are read and written (`MPI_Comm_free`, `MPI_Wait`, `position`, ...:
//! see [`intent_of_output`]), as the standard gives them. Choice buffers of nonblocking and
//! one-sided procedures are `ASYNCHRONOUS`.
//!
//! **Sentinels.** `MPI_BOTTOM`, `MPI_IN_PLACE`, `MPI_STATUS(ES)_IGNORE` are `BIND(C)`
//! variables named as MPICH names them (`MPIR_F08_MPI_BOTTOM`, ...), defined by the library,
//! which recognises their addresses; `MPI_UNWEIGHTED`/`MPI_WEIGHTS_EMPTY` are bound to the
//! `mpif.h` common blocks, which it recognises already.
//!
//! **The `mpi` module's explicit interfaces** come from the same interface bodies
//! ([`mpi_module_interface`]: `INTEGER` handles, `INTEGER status(MPI_STATUS_SIZE)`, `EXTERNAL`
//! callbacks, a required `ierror`), written to `mpi_interfaces.h`, which `mpi_module.f90`
//! includes: the compiler checks the arguments of a `use mpi` program's calls of every
//! procedure without a choice buffer (but the few [`mpi_module_interface`] names); those with
//! choice buffers stay implicit there, as in `mpif.h`.
//!
//! **Profiling.** Every f08 procedure ends in `mpi_x_`, which calls `MPI_X`: a C profiling
//! library that intercepts `MPI_X` sees f08 calls too. A Fortran tool intercepts a specific
//! procedure by defining an external procedure of its name (MPI 4.0 §19.1.5's advice to
//! users: `MPI_Comm_rank_f08`; for `MPI_X_f08ts` with the module's `BIND(C)` label, the
//! descriptor being its calling convention) and calls the library under it through the
//! `pmpi_f08` module (as MPICH installs it; `pmpi_f08.mod` beside `mpi_f08.mod`): every
//! generic again as `PMPI_X` with the specifics `PMPI_X_f08(ts)` (the standard leaves these
//! names to the implementation), bound to `pmpi_x_f08(ts)_`, which end in the C `PMPI_X`.
//!
//! **Callbacks.** `MPI_User_function` and the error handler functions have the C ABI (value
//! `TYPE(C_PTR)`s, the rest by reference), so the procedure is passed on as it is. The
//! attribute copy/delete functions, generalized request callbacks and file error handlers use
//! the `mpi` binding's Fortran-ABI callbacks (same argument lists in f08), and so do the
//! data-representation functions of `MPI_Register_datarep(_c)` (their `TYPE(C_PTR), VALUE`
//! buffers arrive as the addresses the `mpi` binding's buffers are).

use crate::fortran::{
    classify, entry_signature, implemented_functions, parse_constants, parse_functions, wanted,
    write_if_changed, Function, Param, FORTRAN_ONLY, HAND_WRITTEN, OFFSET_CONSTANTS,
    PREDEFINED_KEYVALS, STRING_MAXIMA,
};
use std::collections::{BTreeSet, HashSet};
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

/// The handle types: Fortran derived type and C type (the same name).
pub const HANDLE_TYPES: &[&str] = &[
    "MPI_Comm",
    "MPI_Datatype",
    "MPI_Group",
    "MPI_Info",
    "MPI_Op",
    "MPI_Request",
    "MPI_Errhandler",
    "MPI_Win",
    "MPI_File",
    "MPI_Message",
    "MPI_Session",
];

/// Implemented functions the `mpi_f08` module does not have: removed from the standard
/// before the f08 binding existed (as in MPICH's `mpi_f08`).
pub const NOT_IN_F08: &[&str] = &[
    "MPI_Address",
    "MPI_Attr_delete",
    "MPI_Attr_get",
    "MPI_Attr_put",
    "MPI_Errhandler_create",
    "MPI_Errhandler_get",
    "MPI_Errhandler_set",
    "MPI_Keyval_create",
    "MPI_Keyval_free",
    "MPI_Type_extent",
    "MPI_Type_hindexed",
    "MPI_Type_hvector",
    "MPI_Type_lb",
    "MPI_Type_struct",
    "MPI_Type_ub",
];

/// Interface bodies written by hand: `(function, Fortran text)`. Each binds to an entry point
/// of the `mpi` binding (or of `src/fortran/f08.rs`) whose arguments fit the f08 ones.
pub const HAND_WRITTEN_F08: &[(&str, &str)] = &[
    (
        "MPI_Init",
        "subroutine MPI_Init(ierror)
  integer, optional, intent(out) :: ierror
end subroutine",
    ),
    (
        "MPI_Init_thread",
        "subroutine MPI_Init_thread(required, provided, ierror)
  integer, intent(in) :: required
  integer, intent(out) :: provided
  integer, optional, intent(out) :: ierror
end subroutine",
    ),
    (
        "MPI_Info_create_env",
        "subroutine MPI_Info_create_env(info, ierror)
  import :: MPI_Info
  type(MPI_Info), intent(out) :: info
  integer, optional, intent(out) :: ierror
end subroutine",
    ),
    (
        "MPI_Pcontrol",
        "subroutine MPI_Pcontrol(level)
  integer, intent(in) :: level
end subroutine",
    ),
    (
        "MPI_Buffer_detach",
        "subroutine MPI_Buffer_detach(buffer_addr, size, ierror) bind(C, name=\"mpi_buffer_detach_f08_\")
  import :: c_ptr
  type(c_ptr), intent(out) :: buffer_addr
  integer, intent(out) :: size
  integer, optional, intent(out) :: ierror
end subroutine",
    ),
    (
        "MPI_Comm_set_attr",
        "subroutine MPI_Comm_set_attr(comm, comm_keyval, attribute_val, ierror)
  import :: MPI_Comm, MPI_ADDRESS_KIND
  type(MPI_Comm), intent(in) :: comm
  integer, intent(in) :: comm_keyval
  integer(kind=MPI_ADDRESS_KIND), intent(in) :: attribute_val
  integer, optional, intent(out) :: ierror
end subroutine",
    ),
    (
        "MPI_Comm_get_attr",
        "subroutine MPI_Comm_get_attr(comm, comm_keyval, attribute_val, flag, ierror)
  import :: MPI_Comm, MPI_ADDRESS_KIND
  type(MPI_Comm), intent(in) :: comm
  integer, intent(in) :: comm_keyval
  integer(kind=MPI_ADDRESS_KIND), intent(out) :: attribute_val
  logical, intent(out) :: flag
  integer, optional, intent(out) :: ierror
end subroutine",
    ),
    (
        "MPI_Type_set_attr",
        "subroutine MPI_Type_set_attr(datatype, type_keyval, attribute_val, ierror)
  import :: MPI_Datatype, MPI_ADDRESS_KIND
  type(MPI_Datatype), intent(in) :: datatype
  integer, intent(in) :: type_keyval
  integer(kind=MPI_ADDRESS_KIND), intent(in) :: attribute_val
  integer, optional, intent(out) :: ierror
end subroutine",
    ),
    (
        "MPI_Type_get_attr",
        "subroutine MPI_Type_get_attr(datatype, type_keyval, attribute_val, flag, ierror)
  import :: MPI_Datatype, MPI_ADDRESS_KIND
  type(MPI_Datatype), intent(in) :: datatype
  integer, intent(in) :: type_keyval
  integer(kind=MPI_ADDRESS_KIND), intent(out) :: attribute_val
  logical, intent(out) :: flag
  integer, optional, intent(out) :: ierror
end subroutine",
    ),
    (
        "MPI_Win_set_attr",
        "subroutine MPI_Win_set_attr(win, win_keyval, attribute_val, ierror)
  import :: MPI_Win, MPI_ADDRESS_KIND
  type(MPI_Win), intent(in) :: win
  integer, intent(in) :: win_keyval
  integer(kind=MPI_ADDRESS_KIND), intent(in) :: attribute_val
  integer, optional, intent(out) :: ierror
end subroutine",
    ),
    (
        "MPI_Win_get_attr",
        "subroutine MPI_Win_get_attr(win, win_keyval, attribute_val, flag, ierror)
  import :: MPI_Win, MPI_ADDRESS_KIND
  type(MPI_Win), intent(in) :: win
  integer, intent(in) :: win_keyval
  integer(kind=MPI_ADDRESS_KIND), intent(out) :: attribute_val
  logical, intent(out) :: flag
  integer, optional, intent(out) :: ierror
end subroutine",
    ),
    (
        "MPI_Comm_create_keyval",
        "subroutine MPI_Comm_create_keyval(comm_copy_attr_fn, comm_delete_attr_fn, comm_keyval, &
    extra_state, ierror)
  import :: MPI_Comm_copy_attr_function, MPI_Comm_delete_attr_function, MPI_ADDRESS_KIND
  procedure(MPI_Comm_copy_attr_function) :: comm_copy_attr_fn
  procedure(MPI_Comm_delete_attr_function) :: comm_delete_attr_fn
  integer, intent(out) :: comm_keyval
  integer(kind=MPI_ADDRESS_KIND), intent(in) :: extra_state
  integer, optional, intent(out) :: ierror
end subroutine",
    ),
    (
        "MPI_Type_create_keyval",
        "subroutine MPI_Type_create_keyval(type_copy_attr_fn, type_delete_attr_fn, type_keyval, &
    extra_state, ierror)
  import :: MPI_Type_copy_attr_function, MPI_Type_delete_attr_function, MPI_ADDRESS_KIND
  procedure(MPI_Type_copy_attr_function) :: type_copy_attr_fn
  procedure(MPI_Type_delete_attr_function) :: type_delete_attr_fn
  integer, intent(out) :: type_keyval
  integer(kind=MPI_ADDRESS_KIND), intent(in) :: extra_state
  integer, optional, intent(out) :: ierror
end subroutine",
    ),
    (
        "MPI_Win_create_keyval",
        "subroutine MPI_Win_create_keyval(win_copy_attr_fn, win_delete_attr_fn, win_keyval, &
    extra_state, ierror)
  import :: MPI_Win_copy_attr_function, MPI_Win_delete_attr_function, MPI_ADDRESS_KIND
  procedure(MPI_Win_copy_attr_function) :: win_copy_attr_fn
  procedure(MPI_Win_delete_attr_function) :: win_delete_attr_fn
  integer, intent(out) :: win_keyval
  integer(kind=MPI_ADDRESS_KIND), intent(in) :: extra_state
  integer, optional, intent(out) :: ierror
end subroutine",
    ),
    (
        "MPI_File_create_errhandler",
        "subroutine MPI_File_create_errhandler(file_errhandler_fn, errhandler, ierror)
  import :: MPI_File_errhandler_function, MPI_Errhandler
  procedure(MPI_File_errhandler_function) :: file_errhandler_fn
  type(MPI_Errhandler), intent(out) :: errhandler
  integer, optional, intent(out) :: ierror
end subroutine",
    ),
    (
        "MPI_Grequest_start",
        "subroutine MPI_Grequest_start(query_fn, free_fn, cancel_fn, extra_state, request, ierror)
  import :: MPI_Grequest_query_function, MPI_Grequest_free_function, &
      MPI_Grequest_cancel_function, MPI_ADDRESS_KIND, MPI_Request
  procedure(MPI_Grequest_query_function) :: query_fn
  procedure(MPI_Grequest_free_function) :: free_fn
  procedure(MPI_Grequest_cancel_function) :: cancel_fn
  integer(kind=MPI_ADDRESS_KIND), intent(in) :: extra_state
  type(MPI_Request), intent(out) :: request
  integer, optional, intent(out) :: ierror
end subroutine",
    ),
    (
        "MPI_Register_datarep",
        "subroutine MPI_Register_datarep(datarep, read_conversion_fn, write_conversion_fn, &
    dtype_file_extent_fn, extra_state, ierror)
  import :: MPI_Datarep_conversion_function, MPI_Datarep_extent_function, MPI_ADDRESS_KIND
  character(len=*), intent(in) :: datarep
  procedure(MPI_Datarep_conversion_function) :: read_conversion_fn, write_conversion_fn
  procedure(MPI_Datarep_extent_function) :: dtype_file_extent_fn
  integer(kind=MPI_ADDRESS_KIND), intent(in) :: extra_state
  integer, optional, intent(out) :: ierror
end subroutine",
    ),
    (
        "MPI_Register_datarep_c",
        "subroutine MPI_Register_datarep_c(datarep, read_conversion_fn, write_conversion_fn, &
    dtype_file_extent_fn, extra_state, ierror)
  import :: MPI_Datarep_conversion_function_c, MPI_Datarep_extent_function, MPI_ADDRESS_KIND
  character(len=*), intent(in) :: datarep
  procedure(MPI_Datarep_conversion_function_c) :: read_conversion_fn, write_conversion_fn
  procedure(MPI_Datarep_extent_function) :: dtype_file_extent_fn
  integer(kind=MPI_ADDRESS_KIND), intent(in) :: extra_state
  integer, optional, intent(out) :: ierror
end subroutine",
    ),
    (
        "MPI_Comm_spawn",
        "subroutine MPI_Comm_spawn(command, argv, maxprocs, info, root, comm, intercomm, &
    array_of_errcodes, ierror)
  import :: MPI_Info, MPI_Comm
  character(len=*), intent(in) :: command, argv(*)
  integer, intent(in) :: maxprocs, root
  type(MPI_Info), intent(in) :: info
  type(MPI_Comm), intent(in) :: comm
  type(MPI_Comm), intent(out) :: intercomm
  integer :: array_of_errcodes(*)
  integer, optional, intent(out) :: ierror
end subroutine",
    ),
    (
        "MPI_Comm_spawn_multiple",
        "subroutine MPI_Comm_spawn_multiple(count, array_of_commands, array_of_argv, &
    array_of_maxprocs, array_of_info, root, comm, intercomm, array_of_errcodes, ierror)
  import :: MPI_Info, MPI_Comm
  integer, intent(in) :: count
  character(len=*), intent(in) :: array_of_commands(*), array_of_argv(count, *)
  integer, intent(in) :: array_of_maxprocs(*)
  type(MPI_Info), intent(in) :: array_of_info(*)
  integer, intent(in) :: root
  type(MPI_Comm), intent(in) :: comm
  type(MPI_Comm), intent(out) :: intercomm
  integer :: array_of_errcodes(*)
  integer, optional, intent(out) :: ierror
end subroutine",
    ),
    (
        "MPI_Status_f2f08",
        "subroutine MPI_Status_f2f08(f_status, f08_status, ierror) bind(C, name=\"mpi_status_f2f08_f08_\")
  import :: MPI_Status, MPI_STATUS_SIZE
  integer, intent(in) :: f_status(MPI_STATUS_SIZE)
  type(MPI_Status), intent(out) :: f08_status
  integer, optional, intent(out) :: ierror
end subroutine",
    ),
    (
        "MPI_Status_f082f",
        "subroutine MPI_Status_f082f(f08_status, f_status, ierror) bind(C, name=\"mpi_status_f082f_f08_\")
  import :: MPI_Status, MPI_STATUS_SIZE
  type(MPI_Status), intent(in) :: f08_status
  integer, intent(out) :: f_status(MPI_STATUS_SIZE)
  integer, optional, intent(out) :: ierror
end subroutine",
    ),
];

/// `MPI_F_sync_reg` (MPI 4.0 §19.1.17; `src/fortran/f08.rs`), as a generated body is written.
const F_SYNC_REG: &str = "  subroutine MPI_F_sync_reg(buf) bind(C, name=\"mpi_f_sync_reg_f08ts_\")
    type(*), dimension(..), asynchronous :: buf
  end subroutine
";

/// The hand-written interface bodies that the `mpi` module gets too (through
/// [`mpi_module_interface`]); the others keep implicit interfaces there, as before.
const HAND_WRITTEN_IN_MPI_MODULE: &[&str] = &["MPI_Comm_spawn", "MPI_Comm_spawn_multiple"];

/// The module's fixed part after the handle types: the abstract interfaces of the callbacks
/// and the predefined callback procedures (the `mpi` binding's, see `src/fortran/keyval.rs`).
const CALLBACKS: &str = "
abstract interface
  subroutine MPI_User_function(invec, inoutvec, len, datatype)
    import :: c_ptr, MPI_Datatype
    type(c_ptr), value :: invec, inoutvec
    integer :: len
    type(MPI_Datatype) :: datatype
  end subroutine
  subroutine MPI_User_function_c(invec, inoutvec, len, datatype)
    import :: c_ptr, MPI_Datatype, MPI_COUNT_KIND
    type(c_ptr), value :: invec, inoutvec
    integer(kind=MPI_COUNT_KIND) :: len
    type(MPI_Datatype) :: datatype
  end subroutine
  subroutine MPI_Comm_errhandler_function(comm, error_code)
    import :: MPI_Comm
    type(MPI_Comm) :: comm
    integer :: error_code
  end subroutine
  subroutine MPI_Win_errhandler_function(win, error_code)
    import :: MPI_Win
    type(MPI_Win) :: win
    integer :: error_code
  end subroutine
  subroutine MPI_File_errhandler_function(file, error_code)
    import :: MPI_File
    type(MPI_File) :: file
    integer :: error_code
  end subroutine
  subroutine MPI_Session_errhandler_function(session, error_code)
    import :: MPI_Session
    type(MPI_Session) :: session
    integer :: error_code
  end subroutine
  subroutine MPI_Comm_copy_attr_function(oldcomm, comm_keyval, extra_state, &
      attribute_val_in, attribute_val_out, flag, ierror)
    import :: MPI_Comm, MPI_ADDRESS_KIND
    type(MPI_Comm) :: oldcomm
    integer :: comm_keyval, ierror
    integer(kind=MPI_ADDRESS_KIND) :: extra_state, attribute_val_in, attribute_val_out
    logical :: flag
  end subroutine
  subroutine MPI_Comm_delete_attr_function(comm, comm_keyval, attribute_val, extra_state, ierror)
    import :: MPI_Comm, MPI_ADDRESS_KIND
    type(MPI_Comm) :: comm
    integer :: comm_keyval, ierror
    integer(kind=MPI_ADDRESS_KIND) :: attribute_val, extra_state
  end subroutine
  subroutine MPI_Type_copy_attr_function(oldtype, type_keyval, extra_state, &
      attribute_val_in, attribute_val_out, flag, ierror)
    import :: MPI_Datatype, MPI_ADDRESS_KIND
    type(MPI_Datatype) :: oldtype
    integer :: type_keyval, ierror
    integer(kind=MPI_ADDRESS_KIND) :: extra_state, attribute_val_in, attribute_val_out
    logical :: flag
  end subroutine
  subroutine MPI_Type_delete_attr_function(datatype, type_keyval, attribute_val, extra_state, ierror)
    import :: MPI_Datatype, MPI_ADDRESS_KIND
    type(MPI_Datatype) :: datatype
    integer :: type_keyval, ierror
    integer(kind=MPI_ADDRESS_KIND) :: attribute_val, extra_state
  end subroutine
  subroutine MPI_Win_copy_attr_function(oldwin, win_keyval, extra_state, &
      attribute_val_in, attribute_val_out, flag, ierror)
    import :: MPI_Win, MPI_ADDRESS_KIND
    type(MPI_Win) :: oldwin
    integer :: win_keyval, ierror
    integer(kind=MPI_ADDRESS_KIND) :: extra_state, attribute_val_in, attribute_val_out
    logical :: flag
  end subroutine
  subroutine MPI_Win_delete_attr_function(win, win_keyval, attribute_val, extra_state, ierror)
    import :: MPI_Win, MPI_ADDRESS_KIND
    type(MPI_Win) :: win
    integer :: win_keyval, ierror
    integer(kind=MPI_ADDRESS_KIND) :: attribute_val, extra_state
  end subroutine
  subroutine MPI_Datarep_conversion_function(userbuf, datatype, count, filebuf, position, &
      extra_state, ierror)
    import :: c_ptr, MPI_Datatype, MPI_OFFSET_KIND, MPI_ADDRESS_KIND
    type(c_ptr), value :: userbuf, filebuf
    type(MPI_Datatype) :: datatype
    integer :: count, ierror
    integer(kind=MPI_OFFSET_KIND) :: position
    integer(kind=MPI_ADDRESS_KIND) :: extra_state
  end subroutine
  subroutine MPI_Datarep_conversion_function_c(userbuf, datatype, count, filebuf, position, &
      extra_state, ierror)
    import :: c_ptr, MPI_Datatype, MPI_COUNT_KIND, MPI_OFFSET_KIND, MPI_ADDRESS_KIND
    type(c_ptr), value :: userbuf, filebuf
    type(MPI_Datatype) :: datatype
    integer(kind=MPI_COUNT_KIND) :: count
    integer :: ierror
    integer(kind=MPI_OFFSET_KIND) :: position
    integer(kind=MPI_ADDRESS_KIND) :: extra_state
  end subroutine
  subroutine MPI_Datarep_extent_function(datatype, extent, extra_state, ierror)
    import :: MPI_Datatype, MPI_ADDRESS_KIND
    type(MPI_Datatype) :: datatype
    integer(kind=MPI_ADDRESS_KIND) :: extent, extra_state
    integer :: ierror
  end subroutine
  subroutine MPI_Grequest_query_function(extra_state, status, ierror)
    import :: MPI_Status, MPI_ADDRESS_KIND
    integer(kind=MPI_ADDRESS_KIND) :: extra_state
    type(MPI_Status) :: status
    integer :: ierror
  end subroutine
  subroutine MPI_Grequest_free_function(extra_state, ierror)
    import :: MPI_ADDRESS_KIND
    integer(kind=MPI_ADDRESS_KIND) :: extra_state
    integer :: ierror
  end subroutine
  subroutine MPI_Grequest_cancel_function(extra_state, complete, ierror)
    import :: MPI_ADDRESS_KIND
    integer(kind=MPI_ADDRESS_KIND) :: extra_state
    logical :: complete
    integer :: ierror
  end subroutine
end interface
";

/// The predefined copy/delete procedures: `(object, type of the object)`.
const PREDEFINED_CALLBACK_OBJECTS: &[(&str, &str)] = &[
    ("COMM", "MPI_Comm"),
    ("TYPE", "MPI_Datatype"),
    ("WIN", "MPI_Win"),
];

/// C callback types and the f08 abstract interface each is passed as.
const CALLBACK_INTERFACES: &[(&str, &str)] = &[
    ("MPI_User_function", "MPI_User_function"),
    ("MPI_User_function_c", "MPI_User_function_c"),
    (
        "MPI_Comm_errhandler_function",
        "MPI_Comm_errhandler_function",
    ),
    ("MPI_Comm_errhandler_fn", "MPI_Comm_errhandler_function"),
    ("MPI_Win_errhandler_function", "MPI_Win_errhandler_function"),
    (
        "MPI_Session_errhandler_function",
        "MPI_Session_errhandler_function",
    ),
];

/// C `int` parameters that are `LOGICAL` in Fortran.
const LOGICAL_PARAMS: &[&str] = &[
    "flag",
    "commute",
    "reorder",
    "periods",
    "remain_dims",
    "high",
    "weighted",
];

/// Output pointers that are arrays (the rest are scalars); every `const` pointer is an array
/// except a status.
const OUTPUT_ARRAYS: &[&str] = &[
    "coords",
    "dims",
    "edges",
    "neighbors",
    "ranks2",
    "sources",
    "destinations",
    "sourceweights",
    "destweights",
    "periods",
];

/// Runs every step: writes `mpi_f08.f90` and the Rust entry points, compiles the module
/// into `include/mpi_f08.mod`.
pub fn run(bindings: &str, src_dir: &Path, out_dir: &Path) {
    let implemented = implemented_functions(src_dir);
    let functions = parse_functions(bindings);
    let constants = parse_constants(bindings);
    let generated = generate(&functions, &constants, &implemented);
    std::fs::write(out_dir.join("fortran_f08_entry_points.rs"), &generated.rust)
        .expect("could not write the f08 entry points to OUT_DIR");
    let include = out_dir.join("fortran");
    std::fs::create_dir_all(&include).expect("could not create OUT_DIR/fortran");
    write_if_changed(&include.join("mpi_interfaces.h"), &generated.mpi_interfaces);
    let source = include.join("mpi_f08.f90");
    write_if_changed(&source, &generated.module);
    compile(&source, "mpi_f08", &include);
    let source = include.join("pmpi_f08.f90");
    write_if_changed(&source, &generated.pmpi_module);
    compile(&source, "pmpi_f08", &include);
}

/// What [`generate`] makes.
pub struct Generated {
    /// The Fortran source of the `mpi_f08` module.
    pub module: String,
    /// The Fortran source of the `pmpi_f08` module.
    pub pmpi_module: String,
    /// The Rust entry points and the lists the tests check.
    pub rust: String,
    /// Explicit interfaces for the `mpi` module (`mpi_interfaces.h`, see
    /// [`mpi_module_interface`]).
    pub mpi_interfaces: String,
}

/// How one procedure is bound.
enum Binding {
    /// An interface body for `mpi_x_f08_`, which forwards to the `mpi` binding's `mpi_x_`.
    Direct,
    /// A `BIND(C)` interface for the generated `mpi_x_f08ts_`, which reads descriptors.
    Descriptor,
}

/// The module text and the Rust entry points.
pub fn generate(
    functions: &[Function],
    constants: &[(String, i64)],
    implemented: &BTreeSet<String>,
) -> Generated {
    let mut mpi_interfaces = String::from(
        "! Explicit interfaces of the mpi module's procedures without choice buffers.\n\
         ! Generated by c-abi/fortran/generate_f08.rs; do not edit.\ninterface\n",
    );
    let mut rust = String::from(
        "// Generated by c-abi/fortran/generate_f08.rs from mpi.h; see src/fortran/f08.rs.\n",
    );
    let mut procedures = Vec::new();
    let mut skipped = Vec::new();
    // The interface bodies, by function (named `MPI_X` here), put together after the loop
    // under their generic names with their specific ones (see [`generics`]).
    let mut bodies: Vec<(String, String)> = Vec::new();
    for f in functions {
        if !implemented.contains(&f.name) || NOT_IN_F08.contains(&f.name.as_str()) {
            continue;
        }
        if let Some((_, text)) = HAND_WRITTEN_F08.iter().find(|(n, _)| *n == f.name) {
            if HAND_WRITTEN_IN_MPI_MODULE.contains(&f.name.as_str()) {
                if let Some(mpi) = mpi_module_interface(f, text) {
                    mpi_interfaces.push_str(&indent(&mpi));
                }
            }
            bodies.push((f.name.clone(), indent(text)));
            procedures.push(f.name.clone());
            continue;
        }
        if HAND_WRITTEN.contains(&f.name.as_str()) {
            // Hand-written in the `mpi` binding, without an f08 form here.
            skipped.push(format!(
                "{} (callbacks of another f08 interface: not provided in f08)",
                f.name
            ));
            continue;
        }
        if !wanted(&f.name) {
            continue;
        }
        match procedure(f) {
            Ok((text, entry)) => {
                if let Some(mpi) = mpi_module_interface(f, &text) {
                    mpi_interfaces.push_str(&mpi);
                }
                bodies.push((f.name.clone(), text));
                rust.push_str(&entry);
                procedures.push(f.name.clone());
            }
            Err(why) => skipped.push(format!("{} ({why})", f.name)),
        }
    }
    // The hand-written ones for functions outside `src/` scanning (the status conversions).
    for (name, text) in HAND_WRITTEN_F08 {
        if name.starts_with("MPI_Status_f") && !procedures.iter().any(|p| p == name) {
            bodies.push(((*name).to_owned(), indent(text)));
            procedures.push((*name).to_owned());
        }
    }
    let interfaces = generics(&bodies, "");
    let pmpi_interfaces = generics(&bodies, "P");
    writeln!(
        rust,
        "\n/// The MPI procedures of the `mpi_f08` module.\npub(crate) const F08_PROCEDURES: &[&str] = &{procedures:?};"
    )
    .unwrap();
    writeln!(
        rust,
        "\n/// Implemented, with a Fortran form, but no f08 procedure (and why).\npub(crate) const WITHOUT_F08_PROCEDURE: &[&str] = &{skipped:?};"
    )
    .unwrap();
    let implemented: Vec<&String> = implemented.iter().collect();
    writeln!(
        rust,
        "\n/// Every function the library implements (as `generate.rs` finds them).\npub(crate) const IMPLEMENTED: &[&str] = &{implemented:?};"
    )
    .unwrap();
    mpi_interfaces.push_str("end interface\n");
    Generated {
        mpi_interfaces,
        module: module_text(constants, &interfaces),
        pmpi_module: pmpi_module_text(&pmpi_interfaces),
        rust,
    }
}

/// The specific procedure name of the interface body of `name` (MPI 4.0 §19.1.5, Table
/// 19.1): `MPI_X_f08ts` with a choice buffer (`TYPE(*), DIMENSION(..)`, scheme 1B),
/// `MPI_X_f08` without (scheme 1A); a large-count function keeps its `_c` before the suffix
/// (`MPI_Send_c_f08ts`). With `prefix` "P", the profiling twin `PMPI_X_f08(ts)`.
fn specific_name(name: &str, text: &str, prefix: &str) -> String {
    let suffix = if text.contains("type(*), dimension(..)") {
        "_f08ts"
    } else {
        "_f08"
    };
    format!("{prefix}{name}{suffix}")
}

/// The interface body of `name` (written as `MPI_X`) as its specific procedure
/// ([`specific_name`]). A body without `BIND(C)` is the external procedure of that name,
/// which gfortran calls as `mpi_x_f08_`, the name tools intercept (`src/fortran/f08.rs`
/// forwards it to `mpi_x_`); a `BIND(C)` body (descriptors) already names its entry point
/// `mpi_x_f08ts_` (or `mpi_x_f08_`), as gfortran would mangle the specific name. The
/// profiling twin's entry point is the same with `p` in front (`pmpi_x_f08ts_`).
fn specific(name: &str, text: &str, prefix: &str) -> String {
    let specific = specific_name(name, text, prefix);
    let lower = name.to_ascii_lowercase();
    let mut out = text
        .replacen(
            &format!("subroutine {name}("),
            &format!("subroutine {specific}("),
            1,
        )
        .replacen(
            &format!("function {name}("),
            &format!("function {specific}("),
            1,
        );
    if !prefix.is_empty() {
        out = out.replace(
            &format!("name=\"{lower}_f08"),
            &format!("name=\"{}{lower}_f08", prefix.to_ascii_lowercase()),
        );
    }
    out
}

/// The generic interfaces of `bodies` (each `(MPI_X, interface body written as MPI_X)`):
/// `interface MPI_X` holding the specific procedure `MPI_X_f08(ts)` and, if the function has
/// a large-count twin, `MPI_X_c_f08(ts)` (MPI 4.0 §19.2: `MPI_Send` with an
/// `INTEGER(KIND=MPI_COUNT_KIND)` count resolves to `MPI_Send_c_f08ts`). Twins a compiler
/// cannot tell apart (their arguments differ only between `MPI_ADDRESS_KIND` and
/// `MPI_COUNT_KIND`, both 8 bytes: `MPI_Type_get_extent_c`) get a generic of their own
/// (`MPI_Type_get_extent_c`). With `prefix` "P", the same for `pmpi_f08`.
fn generics(bodies: &[(String, String)], prefix: &str) -> String {
    let text_of = |name: &str| bodies.iter().find(|(n, _)| n == name).map(|(_, t)| t);
    let mut out = String::new();
    for (name, text) in bodies {
        if let Some(base) = name.strip_suffix("_c") {
            if text_of(base).is_some_and(|b| distinguishable(b, text)) {
                continue; // in its base's generic
            }
        }
        writeln!(out, "interface {prefix}{name}").unwrap();
        out.push_str(&specific(name, text, prefix));
        let large = format!("{name}_c");
        if let Some(large_text) = text_of(&large).filter(|l| distinguishable(text, l)) {
            out.push_str(&specific(&large, large_text, prefix));
        }
        writeln!(out, "end interface {prefix}{name}").unwrap();
    }
    out
}

/// The text of `pmpi_f08.f90`: MPI 4.0 §19.1.5's profiling names of the Fortran 2008 binding
/// (`PMPI_Send`, ..., as MPICH's `pmpi_f08` module has them). It uses `mpi_f08` for the
/// types, constants and callback interfaces (a tool says `use mpi_f08` and `use pmpi_f08`, or
/// the latter alone) and, like it, holds only interfaces: every generic `PMPI_X` has the
/// specifics `PMPI_X_f08(ts)` (and `PMPI_X_c_f08(ts)`), `libmpi.so`'s `pmpi_x_f08(ts)_`, which
/// end in the C `PMPI_X`, so a Fortran tool that wraps `MPI_X_f08` and calls `PMPI_X` reaches
/// the library without passing through itself.
fn pmpi_module_text(interfaces: &str) -> String {
    let mut m = String::from(
        "! The pmpi_f08 module (MPI 4.0 section 19.1.5): the PMPI_ names of mpi_f08.
! Generated by c-abi/fortran/generate_f08.rs; do not edit. Interfaces only.
module pmpi_f08
  use mpi_f08
  implicit none
",
    );
    m.push_str(interfaces);
    m.push_str(&generics(
        &[("MPI_F_sync_reg".into(), F_SYNC_REG.into())],
        "P",
    ));
    m.push_str("end module pmpi_f08\n");
    m
}

/// Whether two interface bodies differ in the type, kind or number of their dummy arguments
/// (with the 8-byte kinds taken as one), which generic resolution needs.
fn distinguishable(a: &str, b: &str) -> bool {
    let shape = |text: &str| -> Vec<String> {
        text.lines()
            .filter_map(|l| l.trim().split_once(" :: ").map(|(decl, _)| decl.to_owned()))
            .filter(|decl| !decl.starts_with("import"))
            .map(|decl| {
                let ty = decl.split(", ").next().unwrap_or("").to_owned();
                // Procedure arguments do not tell specifics apart (Fortran 2008 §12.4.3.4.5).
                if ty.starts_with("procedure(") {
                    return "procedure".to_owned();
                }
                ty.replace("MPI_COUNT_KIND", "MPI_ADDRESS_KIND")
                    .replace("MPI_OFFSET_KIND", "MPI_ADDRESS_KIND")
            })
            .collect()
    };
    shape(a) != shape(b)
}

fn indent(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        writeln!(out, "  {line}").unwrap();
    }
    out
}

/// One Fortran dummy argument: declaration and the Rust side of a descriptor entry point.
struct Dummy {
    name: String,
    declaration: String,
    imports: Vec<String>,
    /// Rust parameter(s) of `mpi_x_f08ts_` and what it passes to `mpi_x_` (arguments, hidden
    /// lengths).
    rust_param: String,
    rust_pass: String,
    rust_hidden: Option<String>,
    choice: bool,
}

/// The interface body of `f` and, for a descriptor binding, its Rust entry point.
fn procedure(f: &Function) -> Result<(String, String), String> {
    let params = classify(f)?;
    let mut dummies = Vec::new();
    for ((name, ty), p) in f.params.iter().zip(&params) {
        dummies.push(dummy(f, name, ty, p)?);
    }
    let binding = if dummies.iter().any(|d| d.choice) {
        Binding::Descriptor
    } else {
        Binding::Direct
    };
    let returns_code = f.ret == "c_int";
    let result_type = match f.ret.as_str() {
        "c_int" | "" => None,
        "f64" | "c_double" => Some("double precision".to_owned()),
        "MPI_Aint" => Some("integer(kind=MPI_ADDRESS_KIND)".to_owned()),
        other => return Err(format!("returns {other}")),
    };
    let mut names: Vec<String> = dummies.iter().map(|d| d.name.clone()).collect();
    if returns_code {
        names.push("ierror".into());
    }
    let (kind, end) = match &result_type {
        Some(t) => (format!("{t} function"), "end function"),
        None => ("subroutine".to_owned(), "end subroutine"),
    };
    let suffix = match binding {
        Binding::Direct => String::new(),
        Binding::Descriptor => format!(" bind(C, name=\"{}_f08ts_\")", f.name.to_ascii_lowercase()),
    };
    let mut text = String::new();
    wrap_line(
        &mut text,
        &format!("  {kind} {}({}){suffix}", f.name, names.join(", ")),
    );
    let mut imports: Vec<String> = dummies.iter().flat_map(|d| d.imports.clone()).collect();
    if result_type
        .as_deref()
        .is_some_and(|t| t.contains("MPI_ADDRESS_KIND"))
    {
        imports.push("MPI_ADDRESS_KIND".into());
    }
    imports.sort();
    imports.dedup();
    if !imports.is_empty() {
        wrap_line(&mut text, &format!("    import :: {}", imports.join(", ")));
    }
    for d in &dummies {
        wrap_line(&mut text, &format!("    {}", d.declaration));
    }
    if returns_code {
        text.push_str("    integer, optional, intent(out) :: ierror\n");
    }
    writeln!(text, "  {end}").unwrap();

    let mut rust = String::new();
    // `mpi_x_f08ts_` calls `mpi_x_`, and `pmpi_x_f08ts_` (the `pmpi_f08` module's) `pmpi_x_`;
    // without descriptors, `mpi_x_f08_` is `mpi_x_` under the specific procedure's name.
    if matches!(binding, Binding::Direct) {
        rust.push_str(&forwarders(f)?);
    }
    for prefix in ["", "p"] {
        if !matches!(binding, Binding::Descriptor) {
            break;
        }
        let lower = format!("{prefix}{}", f.name.to_ascii_lowercase());
        let mut params: Vec<String> = dummies.iter().map(|d| d.rust_param.clone()).collect();
        let mut pass: Vec<String> = dummies.iter().map(|d| d.rust_pass.clone()).collect();
        if returns_code {
            params.push("ierr: *mut MPI_Fint".into());
            pass.push("ierr".into());
        }
        pass.extend(dummies.iter().filter_map(|d| d.rust_hidden.clone()));
        let (module, shown) = if prefix.is_empty() {
            ("mpi_f08", f.name.clone())
        } else {
            ("pmpi_f08", format!("P{}", f.name))
        };
        writeln!(
            rust,
            "\n/// `{shown}` of `{module}` (`{lower}_f08ts_`): the choice buffers' base addresses to `{lower}_`."
        )
        .unwrap();
        writeln!(
            rust,
            "///\n/// # Safety\n/// gfortran's `BIND(C)` convention: descriptors for the choice buffers and strings,\n/// the rest by reference."
        )
        .unwrap();
        writeln!(rust, "#[no_mangle]").unwrap();
        writeln!(
            rust,
            "pub unsafe extern \"C\" fn {lower}_f08ts_({}) {{",
            params.join(", ")
        )
        .unwrap();
        writeln!(
            rust,
            "    // SAFETY: the descriptors and references come from the Fortran caller, valid for\n    // the call; the `mpi` entry point gets what it expects."
        )
        .unwrap();
        if returns_code {
            for d in dummies.iter().filter(|d| d.choice) {
                writeln!(
                    rust,
                    "    if let Some(code) = unsafe {{ super::refuse_noncontiguous(a_{}, \"{}\") }} {{\n        unsafe {{ super::set_ierr(ierr, code) }};\n        return;\n    }}",
                    d.name, f.name
                )
                .unwrap();
            }
        }
        writeln!(
            rust,
            "    unsafe {{ crate::fortran::generated::{lower}_({}) }}\n}}",
            pass.join(", ")
        )
        .unwrap();
    }
    Ok((text, rust))
}

/// The entry points of `f`'s specific procedures without descriptors, `mpi_x_f08_` and
/// `pmpi_x_f08_` (the names gfortran gives `MPI_X_f08` and `PMPI_X_f08`): each calls
/// `mpi_x_` (`pmpi_x_`) with its arguments as they came, the calling conventions being the
/// same (see the module doc).
fn forwarders(f: &Function) -> Result<String, String> {
    let (params, ret) = entry_signature(f, &classify(f)?);
    let names: Vec<&str> = params
        .iter()
        .map(|p| p.split(':').next().unwrap_or("").trim())
        .collect();
    let mut rust = String::new();
    for prefix in ["", "p"] {
        let lower = format!("{prefix}{}", f.name.to_ascii_lowercase());
        writeln!(
            rust,
            "\n/// `{}{}_f08` of `{prefix}mpi_f08` (`{lower}_f08_`): `{lower}_`.\n///\n/// # Safety\n/// As `{lower}_`.\n#[no_mangle]\npub unsafe extern \"C\" fn {lower}_f08_({}){ret} {{\n    // SAFETY: the caller's arguments, passed on as they came.\n    unsafe {{ crate::fortran::generated::{lower}_({}) }}\n}}",
            prefix.to_ascii_uppercase(),
            f.name,
            params.join(", "),
            names.join(", ")
        )
        .unwrap();
    }
    Ok(rust)
}

/// Splits a long free-form line with `&` continuations at `, `.
fn wrap_line(out: &mut String, line: &str) {
    const MAX: usize = 100;
    let mut rest = line.to_owned();
    while rest.len() > MAX {
        let cut = rest[..MAX].rfind(", ").map(|i| i + 2).unwrap_or(MAX);
        writeln!(out, "{}&", &rest[..cut]).unwrap();
        rest = format!("        {}", &rest[cut..]);
    }
    writeln!(out, "{rest}").unwrap();
}

/// The Fortran type of a C value type (`c_int` for a parameter called `name`).
fn fortran_type(c: &str, name: &str) -> Option<(String, Option<&'static str>)> {
    Some(match c {
        "c_int" | "MPI_Fint" if LOGICAL_PARAMS.contains(&name) => ("logical".into(), None),
        "c_int" | "MPI_Fint" => ("integer".into(), None),
        "MPI_Aint" => (
            "integer(kind=MPI_ADDRESS_KIND)".into(),
            Some("MPI_ADDRESS_KIND"),
        ),
        "MPI_Offset" => (
            "integer(kind=MPI_OFFSET_KIND)".into(),
            Some("MPI_OFFSET_KIND"),
        ),
        "MPI_Count" => (
            "integer(kind=MPI_COUNT_KIND)".into(),
            Some("MPI_COUNT_KIND"),
        ),
        "c_double" | "f64" => ("double precision".into(), None),
        "MPI_Status" => ("type(MPI_Status)".into(), Some("MPI_Status")),
        h => {
            let h = HANDLE_TYPES.iter().find(|t| **t == h)?;
            (format!("type({h})"), Some(h))
        }
    })
}

/// Whether a procedure's choice buffers may still be in use after it returns.
fn asynchronous(function: &str) -> bool {
    let base = function.trim_start_matches("MPI_");
    let first_two: Vec<char> = base.chars().take(2).collect();
    let nonblocking = matches!(first_two.as_slice(), ['I', c] if c.is_ascii_lowercase());
    nonblocking
        || matches!(base, "Rput" | "Rget" | "Raccumulate" | "Rget_accumulate")
        || base.ends_with("_init")
        || base.ends_with("_begin")
        || base.ends_with("_end")
        || base.starts_with("File_i")
        || matches!(
            base,
            "Put"
                | "Get"
                | "Accumulate"
                | "Get_accumulate"
                | "Fetch_and_op"
                | "Compare_and_swap"
                | "Buffer_attach"
                | "Win_create"
                | "Win_attach"
                | "Win_detach"
                | "Free_mem"
        )
}

/// The intent of an output pointer `name` of `function`: `INOUT` where the standard reads
/// the value too, `IN` where C takes a pointer to an input (`MPI_Cancel`), else `OUT`.
fn intent_of_output(function: &str, name: &str) -> &'static str {
    let base = function.trim_start_matches("MPI_");
    if name == "ranges" {
        return "in"; // MPI_Group_range_incl/excl: `int ranges[][3]`, read only
    }
    if base == "Pready_list" && name == "array_of_partitions" {
        return "in"; // MPICH's prototype lacks the `const` the standard's INTENT(IN) means
    }
    let in_out = name == "position"
        || (base == "Dims_create" && name == "dims")
        || (base == "Info_get_string" && name == "buflen")
        || (base == "Session_get_nth_pset" && name == "pset_len")
        || base.ends_with("_free")
        || base.ends_with("_free_keyval")
        || matches!(
            base,
            "Comm_disconnect" | "Type_commit" | "File_close" | "Session_finalize"
        )
        || (matches!(
            base,
            "Wait"
                | "Waitall"
                | "Waitany"
                | "Waitsome"
                | "Test"
                | "Testall"
                | "Testany"
                | "Testsome"
                | "Start"
                | "Startall"
        ) && name.contains("request"))
        || (matches!(base, "Mrecv" | "Imrecv") && name == "message")
        || (base.starts_with("Status_set") && name == "status");
    if base == "Cancel" || base == "Request_get_status" && name == "request" {
        "in"
    } else if in_out {
        "inout"
    } else {
        "out"
    }
}

/// One parameter as a Fortran dummy argument.
fn dummy(f: &Function, name: &str, ty: &str, p: &Param) -> Result<Dummy, String> {
    let mut d = Dummy {
        name: name.to_owned(),
        declaration: String::new(),
        imports: Vec::new(),
        rust_param: String::new(),
        rust_pass: format!("a_{name}"),
        rust_hidden: None,
        choice: false,
    };
    let a = format!("a_{name}");
    let is_const = ty.starts_with("*const");
    match p {
        Param::Buffer(t) if name == "baseptr" => {
            d.declaration = format!("type(c_ptr), intent(out) :: {name}");
            d.imports.push("c_ptr".into());
            d.rust_param = format!("{a}: {t}");
        }
        Param::Buffer(t) => {
            let mut attrs = String::from("type(*), dimension(..)");
            if is_const {
                attrs.push_str(", intent(in)");
            }
            if asynchronous(&f.name) {
                attrs.push_str(", asynchronous");
            }
            d.declaration = format!("{attrs} :: {name}");
            d.rust_param = format!("{a}: *const super::CfiDescriptor");
            d.rust_pass = format!("super::choice_address({a}) as {t}");
            d.choice = true;
        }
        Param::InString | Param::OutString => {
            let intent = if matches!(p, Param::InString) {
                "in"
            } else {
                "out"
            };
            d.declaration = format!("character(len=*), intent({intent}) :: {name}");
            d.rust_param = format!("{a}: *const super::CfiDescriptor");
            d.rust_pass = format!("super::choice_address({a}) as _");
            d.rust_hidden = Some(format!("super::string_length({a})"));
        }
        Param::FileIn => {
            d.declaration = format!("type(MPI_File), intent(in) :: {name}");
            d.imports.push("MPI_File".into());
            d.rust_param = format!("{a}: *const MPI_Fint");
        }
        Param::FileInOut | Param::FileOut => {
            let intent = if matches!(p, Param::FileOut) {
                "out"
            } else {
                "inout"
            };
            d.declaration = format!("type(MPI_File), intent({intent}) :: {name}");
            d.imports.push("MPI_File".into());
            d.rust_param = format!("{a}: *mut MPI_Fint");
        }
        Param::Value(t) => {
            let (ft, import) = fortran_type(t, name).ok_or(format!("{name}: {t}"))?;
            d.declaration = format!("{ft}, intent(in) :: {name}");
            d.imports.extend(import.map(str::to_owned));
            d.rust_param = format!("{a}: *const {t}");
        }
        Param::Status(t) | Param::Weights(t) | Param::Through(t) => {
            d.rust_param = format!("{a}: {t}");
            if let Some((_, interface)) = CALLBACK_INTERFACES.iter().find(|(c, _)| *c == t.as_str())
            {
                d.declaration = format!("procedure({interface}) :: {name}");
                d.imports.push((*interface).to_owned());
                return Ok(d);
            }
            let target = ty
                .strip_prefix("*const ")
                .or_else(|| ty.strip_prefix("*mut "))
                .ok_or(format!("{name}: {ty}"))?;
            let (target, shape) = if let Some(inner) = target
                .strip_prefix('[')
                .and_then(|t| t.strip_suffix("; 3usize]"))
            {
                (inner, "(3, *)")
            } else {
                let array = if is_const {
                    target != "MPI_Status"
                } else {
                    name.starts_with("array_of_")
                        || OUTPUT_ARRAYS.contains(&name)
                        || (f.name == "MPI_Graph_get" && name == "indx")
                };
                (target, if array { "(*)" } else { "" })
            };
            let (ft, import) = fortran_type(target, name).ok_or(format!("{name}: {ty}"))?;
            d.imports.extend(import.map(str::to_owned));
            let intent = if is_const {
                "in"
            } else {
                intent_of_output(&f.name, name)
            };
            d.declaration = format!("{ft}, intent({intent}) :: {name}{shape}");
        }
    }
    Ok(d)
}

/// The Fortran type of a named constant by its MPICH handle value: `None` for an integer.
fn constant_type(name: &str, value: i64) -> Option<&'static str> {
    if name == "MPI_FILE_NULL" {
        return Some("MPI_File");
    }
    let bits = value as u32;
    // MPICH handles: bits 30-31 the handle kind (0 invalid, 1 built-in, 2 direct), bits
    // 26-29 the object kind.
    if bits < 0x0400_0000 || bits >> 30 == 3 {
        return None;
    }
    Some(match (bits >> 26) & 0xf {
        1 => "MPI_Comm",
        2 => "MPI_Group",
        3 => "MPI_Datatype",
        5 => "MPI_Errhandler",
        6 => "MPI_Op",
        7 => "MPI_Info",
        8 => "MPI_Win",
        0xb if name.starts_with("MPI_MESSAGE_") => "MPI_Message",
        0xb => "MPI_Request",
        0xe if name.starts_with("MPI_SESSION_") => "MPI_Session",
        _ => return None,
    })
}

/// The text of `mpi_f08.f90`.
fn module_text(constants: &[(String, i64)], interfaces: &str) -> String {
    let mut m = String::from(
        "! The mpi_f08 module (MPI 4.0 section 19.2/19.3). Generated from mpi.h by
! c-abi/fortran/generate_f08.rs; do not edit. Types, constants and interfaces only:
! every procedure is in libmpi.so.
module mpi_f08
  use, intrinsic :: iso_c_binding, only: c_ptr, c_int
  implicit none
",
    );
    for t in HANDLE_TYPES {
        writeln!(
            m,
            "  type, bind(C) :: {t}\n    integer :: MPI_VAL\n  end type {t}"
        )
        .unwrap();
    }
    m.push_str(
        "  ! MPICH's layout, which is the C MPI_Status's.
  type, bind(C) :: MPI_Status
    integer :: count_lo
    integer :: count_hi_and_cancelled
    integer :: MPI_SOURCE
    integer :: MPI_TAG
    integer :: MPI_ERROR
  end type MPI_Status
",
    );
    let mut seen = HashSet::new();
    let fortran_only = FORTRAN_ONLY.iter().map(|(n, v)| (n.to_string(), *v));
    for (name, value) in fortran_only.chain(constants.iter().cloned()) {
        if name.starts_with("MPI_T_") || !seen.insert(name.to_ascii_uppercase()) {
            continue;
        }
        let value = if PREDEFINED_KEYVALS.contains(&name.as_str()) {
            value + 1
        } else if STRING_MAXIMA.contains(&name.as_str()) {
            value - 1
        } else {
            value
        };
        let line = if let Some(t) = constant_type(&name, value) {
            format!("  type({t}), parameter :: {name} = {t}({value})")
        } else if OFFSET_CONSTANTS.contains(&name.as_str()) {
            format!("  integer(kind=MPI_OFFSET_KIND), parameter :: {name} = {value}")
        } else {
            format!("  integer, parameter :: {name} = {value}")
        };
        writeln!(m, "{line}").unwrap();
    }
    m.push_str(
        "  logical, parameter :: MPI_SUBARRAYS_SUPPORTED = .false.
  logical, parameter :: MPI_ASYNC_PROTECTS_NONBLOCKING = .false.
  ! Sentinels: the library recognises their addresses.
  integer(c_int), bind(C, name=\"MPIR_F08_MPI_BOTTOM\"), target :: MPI_BOTTOM
  integer(c_int), bind(C, name=\"MPIR_F08_MPI_IN_PLACE\"), target :: MPI_IN_PLACE
  type(MPI_Status), bind(C, name=\"MPIR_F08_MPI_STATUS_IGNORE_OBJ\"), target :: MPI_STATUS_IGNORE
  type(MPI_Status), bind(C, name=\"MPIR_F08_MPI_STATUSES_IGNORE_OBJ\"), target :: &
      MPI_STATUSES_IGNORE(1)
  integer(c_int), bind(C, name=\"mpifcmb5_\"), target :: MPI_UNWEIGHTED(1)
  integer(c_int), bind(C, name=\"mpifcmb9_\"), target :: MPI_WEIGHTS_EMPTY(1)
  character(len=1), bind(C, name=\"MPIR_F08_MPI_ARGV_NULL\"), target :: MPI_ARGV_NULL(1)
  character(len=1), bind(C, name=\"MPIR_F08_MPI_ARGVS_NULL\"), target :: MPI_ARGVS_NULL(1, 1)
  integer(c_int), bind(C, name=\"MPIR_F08_MPI_ERRCODES_IGNORE\"), target :: &
      MPI_ERRCODES_IGNORE(1)
",
    );
    m.push_str(CALLBACKS);
    // == and /= on handles: functions of the library (`src/fortran/f08.rs`).
    for (op, suffix) in [("==", "eq"), ("/=", "ne")] {
        writeln!(m, "interface operator({op})").unwrap();
        for t in HANDLE_TYPES {
            let lower = t.to_ascii_lowercase();
            writeln!(
                m,
                "  logical function {lower}_{suffix}(a, b) bind(C, name=\"{lower}_f08_{suffix}\")
    import :: {t}
    type({t}), intent(in) :: a, b
  end function"
            )
            .unwrap();
        }
        writeln!(m, "end interface").unwrap();
    }
    m.push_str("interface\n");
    for (object, t) in PREDEFINED_CALLBACK_OBJECTS {
        for copy in ["NULL_COPY_FN", "DUP_FN"] {
            writeln!(
                m,
                "  subroutine MPI_{object}_{copy}(old_object, keyval, extra_state, attribute_val_in, &
      attribute_val_out, flag, ierror)
    import :: {t}, MPI_ADDRESS_KIND
    type({t}) :: old_object
    integer :: keyval, ierror
    integer(kind=MPI_ADDRESS_KIND) :: extra_state, attribute_val_in, attribute_val_out
    logical :: flag
  end subroutine"
            )
            .unwrap();
        }
        writeln!(
            m,
            "  subroutine MPI_{object}_NULL_DELETE_FN(object, keyval, attribute_val, extra_state, ierror)
    import :: {t}, MPI_ADDRESS_KIND
    type({t}) :: object
    integer :: keyval, ierror
    integer(kind=MPI_ADDRESS_KIND) :: attribute_val, extra_state
  end subroutine"
        )
        .unwrap();
    }
    // "No conversion" for MPI_Register_datarep(_c): the library knows their addresses.
    m.push_str(
        "  subroutine MPI_CONVERSION_FN_NULL(userbuf, datatype, count, filebuf, position, &
      extra_state, ierror)
    import :: c_ptr, MPI_Datatype, MPI_OFFSET_KIND, MPI_ADDRESS_KIND
    type(c_ptr), value :: userbuf, filebuf
    type(MPI_Datatype) :: datatype
    integer :: count, ierror
    integer(kind=MPI_OFFSET_KIND) :: position
    integer(kind=MPI_ADDRESS_KIND) :: extra_state
  end subroutine
  subroutine MPI_CONVERSION_FN_NULL_C(userbuf, datatype, count, filebuf, position, &
      extra_state, ierror)
    import :: c_ptr, MPI_Datatype, MPI_COUNT_KIND, MPI_OFFSET_KIND, MPI_ADDRESS_KIND
    type(c_ptr), value :: userbuf, filebuf
    type(MPI_Datatype) :: datatype
    integer(kind=MPI_COUNT_KIND) :: count
    integer :: ierror
    integer(kind=MPI_OFFSET_KIND) :: position
    integer(kind=MPI_ADDRESS_KIND) :: extra_state
  end subroutine
",
    );
    m.push_str("end interface\n");
    // MPI_F_sync_reg (MPI 4.0 19.1.17): a call the compiler must assume modifies `buf`.
    m.push_str(&generics(
        &[("MPI_F_sync_reg".into(), F_SYNC_REG.into())],
        "",
    ));
    m.push_str(interfaces);
    m.push_str("end module mpi_f08\n");
    m
}

/// Compiles the module `name` into `include/<name>.mod` (`$FC` or gfortran; modules it uses
/// are found in `include/`); without a compiler, or if it fails, a warning and no stale
/// module.
fn compile(source: &Path, name: &str, include: &Path) {
    let fc = std::env::var("FC")
        .ok()
        .filter(|f| !f.trim().is_empty())
        .unwrap_or_else(|| "gfortran".into());
    let module = include.join(format!("{name}.mod"));
    let _ = std::fs::remove_file(&module);
    let object = include.join(format!("{name}.o"));
    // -Wno-c-binding-type: default INTEGER and LOGICAL in BIND(C) interfaces are what the
    // library's C side reads (4-byte int), which gfortran only warns about.
    let result = Command::new(&fc)
        .args(["-c", "-Wno-c-binding-type"])
        .arg(source)
        .arg("-I")
        .arg(include)
        .arg("-J")
        .arg(include)
        .arg("-o")
        .arg(&object)
        .output();
    let _ = std::fs::remove_file(&object);
    match result {
        Ok(out) if out.status.success() && module.is_file() => {}
        Ok(out) => println!(
            "cargo:warning={fc} could not compile {} into {name}.mod: {}",
            source.display(),
            String::from_utf8_lossy(&out.stderr).replace('\n', " ")
        ),
        Err(e) => println!("cargo:warning=no Fortran compiler ({fc}: {e}): {name}.mod not built"),
    }
}

/// The `mpi` module's explicit interface of `f`, made from its f08 interface body `f08`:
/// `INTEGER` handles, `INTEGER status(MPI_STATUS_SIZE)`, `EXTERNAL` callbacks, a required
/// `ierror`. `None` for the procedures that keep implicit interfaces there: those with
/// choice buffers (any buffer type is accepted, as with `mpif.h`), those whose arguments
/// may be the scalar sentinels of `mpif.h` (`MPI_UNWEIGHTED`), and `MPI_Wtime`/`MPI_Wtick`,
/// which `mpif.h` declares.
fn mpi_module_interface(f: &Function, f08: &str) -> Option<String> {
    if f08.contains("bind(C")
        // The large-count forms are `mpi_f08`'s only (MPI 4.0 §19.1.2).
        || f.name.ends_with("_c")
        || f08.contains("weights")
        || matches!(f.name.as_str(), "MPI_Wtime" | "MPI_Wtick")
    {
        return None;
    }
    let mut out = String::new();
    for line in f08.lines() {
        let trimmed = line.trim_start();
        let line = if trimmed.starts_with("import ::") {
            "    import".to_owned()
        } else if trimmed.starts_with("integer, optional, intent(out) :: ierror") {
            "    integer, intent(out) :: ierror".to_owned()
        } else if let Some(rest) = trimmed.strip_prefix("type(MPI_Status), ") {
            let (attrs, name) = rest.split_once(" :: ")?;
            let name = match name.strip_suffix("(*)") {
                Some(array) => format!("{array}(MPI_STATUS_SIZE, *)"),
                None => format!("{name}(MPI_STATUS_SIZE)"),
            };
            format!("    integer, {attrs} :: {name}")
        } else if let Some(rest) = trimmed.strip_prefix("procedure(") {
            format!("    external :: {}", rest.split_once(" :: ")?.1)
        } else if trimmed.starts_with("type(c_ptr)") {
            line.replace("type(c_ptr)", "integer(kind=MPI_ADDRESS_KIND)")
        } else if trimmed.starts_with("type(MPI_") {
            let (_, rest) = trimmed.split_once(')')?;
            format!("    integer{rest}")
        } else {
            line.to_owned()
        };
        out.push_str(&line);
        out.push('\n');
    }
    Some(out)
}
