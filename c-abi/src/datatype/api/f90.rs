//! The C entry points of the parameterized Fortran 90 types: `MPI_Type_create_f90_integer`,
//! `MPI_Type_create_f90_real`, `MPI_Type_create_f90_complex` (the choice of type is
//! `datatype::f90`'s).

use crate::abi::*;
use crate::cptr::Out;
use crate::datatype::F90Kind;
use crate::error::MpiResult;
use crate::runtime::export::mpi_fn;
use crate::runtime::Mpi;
use std::ffi::c_int;

/// Writes the type of `(p, r)` of `kind` to `*newtype` (`MPI_DATATYPE_NULL` if there is none).
fn create_f90(
    st: &mut Mpi,
    kind: F90Kind,
    p: c_int,
    r: c_int,
    newtype: *mut MPI_Datatype,
) -> MpiResult<()> {
    let rt = st.runtime()?;
    let out = Out::new(newtype, "newtype")?;
    match rt.types.f90(kind, p, r) {
        Ok(h) => {
            out.set(h);
            Ok(())
        }
        Err(e) => {
            out.set(MPI_DATATYPE_NULL);
            Err(e)
        }
    }
}

mpi_fn! {
    /// `MPI_Type_create_f90_integer`: the type of Fortran's `INTEGER(SELECTED_INT_KIND(r))`.
    fn MPI_Type_create_f90_integer / PMPI_Type_create_f90_integer(r: c_int, newtype: *mut MPI_Datatype) |st| {
        create_f90(st, F90Kind::Integer, MPI_UNDEFINED, r, newtype)
    }
}

mpi_fn! {
    /// `MPI_Type_create_f90_real`: the type of Fortran's `REAL(SELECTED_REAL_KIND(p, r))`.
    fn MPI_Type_create_f90_real / PMPI_Type_create_f90_real(p: c_int, r: c_int, newtype: *mut MPI_Datatype) |st| {
        create_f90(st, F90Kind::Real, p, r, newtype)
    }
}

mpi_fn! {
    /// `MPI_Type_create_f90_complex`: the type of Fortran's
    /// `COMPLEX(SELECTED_REAL_KIND(p, r))`.
    fn MPI_Type_create_f90_complex / PMPI_Type_create_f90_complex(p: c_int, r: c_int, newtype: *mut MPI_Datatype) |st| {
        create_f90(st, F90Kind::Complex, p, r, newtype)
    }
}
