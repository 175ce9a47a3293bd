//! The C entry points of the type constructors (`MPI_Type_contiguous` ...
//! `MPI_Type_create_resized`, `MPI_Type_create_darray`, `MPI_Type_dup`, and the MPI-1 names
//! `MPI_Type_hvector`, `MPI_Type_hindexed`, `MPI_Type_struct`), `MPI_Type_commit` and
//! `MPI_Type_free`: each hands its arguments to its constructor in `datatype::constructors`,
//! which checks them and describes the new type, and stores the result.

use crate::abi::*;
use crate::cptr::Out;
use crate::datatype::constructors::{
    blocks, contents, count_arg, darray, hindexed, hvector, indexed, indexed_block, structure,
    subarray, subarray_shape,
};
use crate::datatype::layout::resized;
use crate::datatype::{Datatype, TypeTable};
use crate::error::{MpiError, MpiResult};
use crate::runtime::export::mpi_fn;
use crate::runtime::Mpi;
use std::ffi::c_int;

/// Runs a constructor: `build` makes the type from the table; it is stored and its handle
/// written to `*newtype`.
fn create(
    st: &mut Mpi,
    newtype: *mut MPI_Datatype,
    build: impl FnOnce(&TypeTable) -> MpiResult<Datatype>,
) -> MpiResult<()> {
    let rt = st.runtime()?;
    let ty = build(&rt.types)?;
    let out = Out::new(newtype, "newtype")?;
    out.set(rt.types.insert(ty)?);
    Ok(())
}

mpi_fn! {
    /// `MPI_Type_contiguous`: `count` copies of `oldtype`, one extent apart.
    fn MPI_Type_contiguous / PMPI_Type_contiguous(
        count: c_int,
        oldtype: MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) |st| {
        create(st, newtype, |types| {
            let n = count_arg(count)?;
            let old = types.get(oldtype)?;
            let c = contents(MPI_COMBINER_CONTIGUOUS, vec![count], vec![], vec![oldtype]);
            Ok(blocks(old, [n].into_iter(), [0].into_iter(), c))
        })
    }
}

mpi_fn! {
    /// `MPI_Type_vector`: `count` blocks of `blocklength` elements, `stride` extents apart.
    fn MPI_Type_vector / PMPI_Type_vector(
        count: c_int,
        blocklength: c_int,
        stride: c_int,
        oldtype: MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) |st| {
        create(st, newtype, |types| {
            let ext = types.get(oldtype)?.extent();
            let c = contents(MPI_COMBINER_VECTOR, vec![count, blocklength, stride], vec![], vec![oldtype]);
            hvector(types, count, blocklength, stride as isize * ext, oldtype, c)
        })
    }
}

mpi_fn! {
    /// `MPI_Type_create_hvector`: a vector whose stride is in bytes.
    fn MPI_Type_create_hvector / PMPI_Type_create_hvector(
        count: c_int,
        blocklength: c_int,
        stride: MPI_Aint,
        oldtype: MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) |st| {
        create(st, newtype, |types| {
            let c = contents(MPI_COMBINER_HVECTOR, vec![count, blocklength], vec![stride], vec![oldtype]);
            hvector(types, count, blocklength, stride as isize, oldtype, c)
        })
    }
}

mpi_fn! {
    /// `MPI_Type_hvector`: the MPI-1 name of `MPI_Type_create_hvector`.
    fn MPI_Type_hvector / PMPI_Type_hvector(
        count: c_int,
        blocklength: c_int,
        stride: MPI_Aint,
        oldtype: MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) |st| {
        create(st, newtype, |types| {
            let c = contents(MPI_COMBINER_HVECTOR, vec![count, blocklength], vec![stride], vec![oldtype]);
            hvector(types, count, blocklength, stride as isize, oldtype, c)
        })
    }
}

mpi_fn! {
    /// `MPI_Type_indexed`: blocks of `oldtype` at displacements in extents.
    fn MPI_Type_indexed / PMPI_Type_indexed(
        count: c_int,
        array_of_blocklengths: *const c_int,
        array_of_displacements: *const c_int,
        oldtype: MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) |st| {
        create(st, newtype, |types| {
            let (mut t, lens, disps) = indexed(types, count, array_of_blocklengths, array_of_displacements, true, oldtype, MPI_COMBINER_INDEXED)?;
            t.contents.ints = [vec![count], lens, disps].concat();
            t.contents.types = vec![oldtype];
            Ok(t)
        })
    }
}

mpi_fn! {
    /// `MPI_Type_create_hindexed`: blocks of `oldtype` at displacements in bytes.
    fn MPI_Type_create_hindexed / PMPI_Type_create_hindexed(
        count: c_int,
        array_of_blocklengths: *const c_int,
        array_of_displacements: *const MPI_Aint,
        oldtype: MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) |st| {
        create(st, newtype, |types| hindexed(types, count, array_of_blocklengths, array_of_displacements, oldtype))
    }
}

mpi_fn! {
    /// `MPI_Type_hindexed`: the MPI-1 name of `MPI_Type_create_hindexed`.
    fn MPI_Type_hindexed / PMPI_Type_hindexed(
        count: c_int,
        array_of_blocklengths: *const c_int,
        array_of_displacements: *const MPI_Aint,
        oldtype: MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) |st| {
        create(st, newtype, |types| hindexed(types, count, array_of_blocklengths, array_of_displacements, oldtype))
    }
}

mpi_fn! {
    /// `MPI_Type_create_indexed_block`: blocks of one length at displacements in extents.
    fn MPI_Type_create_indexed_block / PMPI_Type_create_indexed_block(
        count: c_int,
        blocklength: c_int,
        array_of_displacements: *const c_int,
        oldtype: MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) |st| {
        create(st, newtype, |types| {
            let (mut t, disps) = indexed_block(types, count, blocklength, array_of_displacements, true, oldtype)?;
            t.contents = contents(MPI_COMBINER_INDEXED_BLOCK, [vec![count, blocklength], disps].concat(), vec![], vec![oldtype]);
            Ok(t)
        })
    }
}

mpi_fn! {
    /// `MPI_Type_create_hindexed_block`: blocks of one length at displacements in bytes.
    fn MPI_Type_create_hindexed_block / PMPI_Type_create_hindexed_block(
        count: c_int,
        blocklength: c_int,
        array_of_displacements: *const MPI_Aint,
        oldtype: MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) |st| {
        create(st, newtype, |types| {
            let (mut t, disps) = indexed_block(types, count, blocklength, array_of_displacements, false, oldtype)?;
            t.contents = contents(MPI_COMBINER_HINDEXED_BLOCK, vec![count, blocklength], disps, vec![oldtype]);
            Ok(t)
        })
    }
}

mpi_fn! {
    /// `MPI_Type_create_struct`: blocks of different types at displacements in bytes.
    fn MPI_Type_create_struct / PMPI_Type_create_struct(
        count: c_int,
        array_of_blocklengths: *const c_int,
        array_of_displacements: *const MPI_Aint,
        array_of_types: *const MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) |st| {
        create(st, newtype, |types| structure(types, count, array_of_blocklengths, array_of_displacements, array_of_types))
    }
}

mpi_fn! {
    /// `MPI_Type_struct`: the MPI-1 name of `MPI_Type_create_struct` (`MPI_LB`/`MPI_UB` allowed).
    fn MPI_Type_struct / PMPI_Type_struct(
        count: c_int,
        array_of_blocklengths: *const c_int,
        array_of_displacements: *const MPI_Aint,
        array_of_types: *const MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) |st| {
        create(st, newtype, |types| structure(types, count, array_of_blocklengths, array_of_displacements, array_of_types))
    }
}

mpi_fn! {
    /// `MPI_Type_create_subarray`: a block of an `ndims`-dimensional array, in C or Fortran
    /// order; its extent is the whole array's.
    fn MPI_Type_create_subarray / PMPI_Type_create_subarray(
        ndims: c_int,
        array_of_sizes: *const c_int,
        array_of_subsizes: *const c_int,
        array_of_starts: *const c_int,
        order: c_int,
        oldtype: MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) |st| {
        create(st, newtype, |types| {
            let old = types.get(oldtype)?;
            let (sizes, subsizes, starts) = subarray_shape(ndims, array_of_sizes, array_of_subsizes, array_of_starts, order)?;
            let as_ints = |a: &[usize]| a.iter().map(|&x| x as c_int).collect::<Vec<_>>();
            let ints = [vec![ndims], as_ints(&sizes), as_ints(&subsizes), as_ints(&starts), vec![order]].concat();
            let c = contents(MPI_COMBINER_SUBARRAY, ints, vec![], vec![oldtype]);
            Ok(subarray(old, &sizes, &subsizes, &starts, order == MPI_ORDER_FORTRAN, c))
        })
    }
}

mpi_fn! {
    /// `MPI_Type_create_resized`: `oldtype` with lower bound `lb` and extent `extent`.
    fn MPI_Type_create_resized / PMPI_Type_create_resized(
        oldtype: MPI_Datatype,
        lb: MPI_Aint,
        extent: MPI_Aint,
        newtype: *mut MPI_Datatype,
    ) |st| {
        create(st, newtype, |types| {
            let old = types.get(oldtype)?;
            let c = contents(MPI_COMBINER_RESIZED, vec![], vec![lb, extent], vec![oldtype]);
            Ok(resized(old, lb as isize, extent as isize, c))
        })
    }
}

mpi_fn! {
    /// `MPI_Type_dup`: a copy of `oldtype` (committed if it is).
    fn MPI_Type_dup / PMPI_Type_dup(oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) |st| {
        let rt = st.runtime()?;
        let out = Out::new(newtype, "newtype")?;
        let new = rt.types.dup(oldtype)?;
        // The attributes go to the copy through their copy callbacks; if one fails, so does
        // the call, and the copy is freed again.
        if let Err(e) = rt.keyvals.copy_type_attrs(oldtype, new) {
            rt.types.release(new);
            return Err(e);
        }
        out.set(new);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Type_commit`: makes a type usable in communication.
    fn MPI_Type_commit / PMPI_Type_commit(datatype: *mut MPI_Datatype) |st| {
        let rt = st.runtime()?;
        let dt = Out::new(datatype, "datatype")?.get();
        rt.types.get_mut(dt)?.committed = true;
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Type_free`: frees a derived type (`*datatype` becomes `MPI_DATATYPE_NULL`).
    /// Operations and types using it are not affected.
    fn MPI_Type_free / PMPI_Type_free(datatype: *mut MPI_Datatype) |st| {
        let rt = st.runtime()?;
        let out = Out::new(datatype, "datatype")?;
        let dt = out.get();
        rt.types.get(dt)?;
        if TypeTable::is_predefined(dt) {
            return Err(MpiError::new(
                MPI_ERR_TYPE,
                format!("{} is a predefined datatype, which cannot be freed", rt.types.get(dt)?.name),
            ));
        }
        // Its attributes are deleted first (their callbacks may refuse, failing the call).
        rt.keyvals.delete_type_attrs(dt)?;
        // A type of MPI_Type_create_f90_* stays for the next call that asks for it.
        if !rt.types.is_f90(dt) {
            rt.types.release(dt);
        }
        out.set(MPI_DATATYPE_NULL);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Type_create_darray`: the part of a block / cyclic distributed global array that
    /// process `rank` of a `size`-process grid owns (HPF-style distributions).
    fn MPI_Type_create_darray / PMPI_Type_create_darray(
        size: c_int,
        rank: c_int,
        ndims: c_int,
        array_of_gsizes: *const c_int,
        array_of_distribs: *const c_int,
        array_of_dargs: *const c_int,
        array_of_psizes: *const c_int,
        order: c_int,
        oldtype: MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) |st| {
        create(st, newtype, |types| {
            darray(types, size, rank, ndims, array_of_gsizes, array_of_distribs, array_of_dargs, array_of_psizes, order, oldtype)
        })
    }
}
