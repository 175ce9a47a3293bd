//! The C entry points of the type constructors (`MPI_Type_contiguous` ...
//! `MPI_Type_create_resized`, `MPI_Type_create_darray`, `MPI_Type_dup`, and the MPI-1 names
//! `MPI_Type_hvector`, `MPI_Type_hindexed`, `MPI_Type_struct`), `MPI_Type_commit` and
//! `MPI_Type_free`: each hands its arguments to its constructor in `datatype::constructors`,
//! which checks them and describes the new type, and stores the result.

use crate::abi::*;
use crate::count::CountOut;
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
///
/// `large` records that the large-count form made it (see [`crate::datatype::Contents`]).
fn create(
    st: &mut Mpi,
    newtype: *mut MPI_Datatype,
    large: bool,
    build: impl FnOnce(&TypeTable) -> MpiResult<Datatype>,
) -> MpiResult<()> {
    let rt = st.runtime()?;
    let mut ty = build(&rt.types)?;
    ty.contents.large = large;
    let out = Out::new(newtype, "newtype")?;
    out.set(rt.types.insert(ty)?);
    Ok(())
}

mpi_fn! {
    /// `MPI_Type_contiguous`: `count` copies of `oldtype`, one extent apart.
    fn MPI_Type_contiguous / PMPI_Type_contiguous, large MPI_Type_contiguous_c / PMPI_Type_contiguous_c
    where [Count = c_int | MPI_Count, Disp = MPI_Aint | MPI_Count] (
        count: Count,
        oldtype: MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) |st| {
        create(st, newtype, Count::LARGE, |types| {
            let count = MPI_Count::from(count);
            let n = count_arg(count)?;
            let old = types.get(oldtype)?;
            let c = contents(MPI_COMBINER_CONTIGUOUS, vec![count], vec![], vec![oldtype]);
            Ok(blocks(old, [n].into_iter(), [0].into_iter(), c))
        })
    }
}

mpi_fn! {
    /// `MPI_Type_vector`: `count` blocks of `blocklength` elements, `stride` extents apart.
    fn MPI_Type_vector / PMPI_Type_vector, large MPI_Type_vector_c / PMPI_Type_vector_c
    where [Count = c_int | MPI_Count, Disp = MPI_Aint | MPI_Count] (
        count: Count,
        blocklength: Count,
        stride: Count,
        oldtype: MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) |st| {
        create(st, newtype, Count::LARGE, |types| {
            let (count, blocklength, stride) = (MPI_Count::from(count), MPI_Count::from(blocklength), MPI_Count::from(stride));
            let ext = types.get(oldtype)?.extent();
            let c = contents(MPI_COMBINER_VECTOR, vec![count, blocklength, stride], vec![], vec![oldtype]);
            hvector(types, count, blocklength, stride as isize * ext, oldtype, c)
        })
    }
}

mpi_fn! {
    /// `MPI_Type_create_hvector`: a vector whose stride is in bytes.
    fn MPI_Type_create_hvector / PMPI_Type_create_hvector, large MPI_Type_create_hvector_c / PMPI_Type_create_hvector_c
    where [Count = c_int | MPI_Count, Disp = MPI_Aint | MPI_Count] (
        count: Count,
        blocklength: Count,
        stride: Disp,
        oldtype: MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) |st| {
        create(st, newtype, Count::LARGE, |types| {
            let (count, blocklength) = (MPI_Count::from(count), MPI_Count::from(blocklength));
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
        create(st, newtype, false, |types| {
            let (count, blocklength) = (MPI_Count::from(count), MPI_Count::from(blocklength));
            let c = contents(MPI_COMBINER_HVECTOR, vec![count, blocklength], vec![stride], vec![oldtype]);
            hvector(types, count, blocklength, stride as isize, oldtype, c)
        })
    }
}

mpi_fn! {
    /// `MPI_Type_indexed`: blocks of `oldtype` at displacements in extents.
    fn MPI_Type_indexed / PMPI_Type_indexed, large MPI_Type_indexed_c / PMPI_Type_indexed_c
    where [Count = c_int | MPI_Count, Disp = MPI_Aint | MPI_Count] (
        count: Count,
        array_of_blocklengths: *const Count,
        array_of_displacements: *const Count,
        oldtype: MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) |st| {
        create(st, newtype, Count::LARGE, |types| {
            let count = MPI_Count::from(count);
            let (mut t, lens, disps) = indexed(types, count, array_of_blocklengths.into(), array_of_displacements.into(), true, oldtype, MPI_COMBINER_INDEXED)?;
            t.contents.ints = [vec![count], lens, disps].concat();
            t.contents.types = vec![oldtype];
            Ok(t)
        })
    }
}

mpi_fn! {
    /// `MPI_Type_create_hindexed`: blocks of `oldtype` at displacements in bytes.
    fn MPI_Type_create_hindexed / PMPI_Type_create_hindexed, large MPI_Type_create_hindexed_c / PMPI_Type_create_hindexed_c
    where [Count = c_int | MPI_Count, Disp = MPI_Aint | MPI_Count] (
        count: Count,
        array_of_blocklengths: *const Count,
        array_of_displacements: *const Disp,
        oldtype: MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) |st| {
        create(st, newtype, Count::LARGE, |types| hindexed(types, count.into(), array_of_blocklengths.into(), array_of_displacements.into(), oldtype))
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
        create(st, newtype, false, |types| hindexed(types, count.into(), array_of_blocklengths.into(), array_of_displacements.into(), oldtype))
    }
}

mpi_fn! {
    /// `MPI_Type_create_indexed_block`: blocks of one length at displacements in extents.
    fn MPI_Type_create_indexed_block / PMPI_Type_create_indexed_block, large MPI_Type_create_indexed_block_c / PMPI_Type_create_indexed_block_c
    where [Count = c_int | MPI_Count, Disp = MPI_Aint | MPI_Count] (
        count: Count,
        blocklength: Count,
        array_of_displacements: *const Count,
        oldtype: MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) |st| {
        create(st, newtype, Count::LARGE, |types| {
            let (count, blocklength) = (MPI_Count::from(count), MPI_Count::from(blocklength));
            let (mut t, disps) = indexed_block(types, count, blocklength, array_of_displacements.into(), true, oldtype)?;
            t.contents = contents(MPI_COMBINER_INDEXED_BLOCK, [vec![count, blocklength], disps].concat(), vec![], vec![oldtype]);
            Ok(t)
        })
    }
}

mpi_fn! {
    /// `MPI_Type_create_hindexed_block`: blocks of one length at displacements in bytes.
    fn MPI_Type_create_hindexed_block / PMPI_Type_create_hindexed_block, large MPI_Type_create_hindexed_block_c / PMPI_Type_create_hindexed_block_c
    where [Count = c_int | MPI_Count, Disp = MPI_Aint | MPI_Count] (
        count: Count,
        blocklength: Count,
        array_of_displacements: *const Disp,
        oldtype: MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) |st| {
        create(st, newtype, Count::LARGE, |types| {
            let (count, blocklength) = (MPI_Count::from(count), MPI_Count::from(blocklength));
            let (mut t, disps) = indexed_block(types, count, blocklength, array_of_displacements.into(), false, oldtype)?;
            t.contents = contents(MPI_COMBINER_HINDEXED_BLOCK, vec![count, blocklength], disps, vec![oldtype]);
            Ok(t)
        })
    }
}

mpi_fn! {
    /// `MPI_Type_create_struct`: blocks of different types at displacements in bytes.
    fn MPI_Type_create_struct / PMPI_Type_create_struct, large MPI_Type_create_struct_c / PMPI_Type_create_struct_c
    where [Count = c_int | MPI_Count, Disp = MPI_Aint | MPI_Count] (
        count: Count,
        array_of_blocklengths: *const Count,
        array_of_displacements: *const Disp,
        array_of_types: *const MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) |st| {
        create(st, newtype, Count::LARGE, |types| structure(types, count.into(), array_of_blocklengths.into(), array_of_displacements.into(), array_of_types))
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
        create(st, newtype, false, |types| structure(types, count.into(), array_of_blocklengths.into(), array_of_displacements.into(), array_of_types))
    }
}

mpi_fn! {
    /// `MPI_Type_create_subarray`: a block of an `ndims`-dimensional array, in C or Fortran
    /// order; its extent is the whole array's.
    fn MPI_Type_create_subarray / PMPI_Type_create_subarray, large MPI_Type_create_subarray_c / PMPI_Type_create_subarray_c
    where [Count = c_int | MPI_Count, Disp = MPI_Aint | MPI_Count] (
        ndims: c_int,
        array_of_sizes: *const Count,
        array_of_subsizes: *const Count,
        array_of_starts: *const Count,
        order: c_int,
        oldtype: MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) |st| {
        create(st, newtype, Count::LARGE, |types| {
            let old = types.get(oldtype)?;
            let (sizes, subsizes, starts) = subarray_shape(ndims, array_of_sizes.into(), array_of_subsizes.into(), array_of_starts.into(), order)?;
            let wide = |a: &[usize]| a.iter().map(|&x| x as MPI_Count).collect::<Vec<_>>();
            let ints = [vec![MPI_Count::from(ndims)], wide(&sizes), wide(&subsizes), wide(&starts), vec![MPI_Count::from(order)]].concat();
            let c = contents(MPI_COMBINER_SUBARRAY, ints, vec![], vec![oldtype]);
            Ok(subarray(old, &sizes, &subsizes, &starts, order == MPI_ORDER_FORTRAN, c))
        })
    }
}

mpi_fn! {
    /// `MPI_Type_create_resized`: `oldtype` with lower bound `lb` and extent `extent`.
    fn MPI_Type_create_resized / PMPI_Type_create_resized, large MPI_Type_create_resized_c / PMPI_Type_create_resized_c
    where [Count = c_int | MPI_Count, Disp = MPI_Aint | MPI_Count] (
        oldtype: MPI_Datatype,
        lb: Disp,
        extent: Disp,
        newtype: *mut MPI_Datatype,
    ) |st| {
        create(st, newtype, Count::LARGE, |types| {
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
    fn MPI_Type_create_darray / PMPI_Type_create_darray, large MPI_Type_create_darray_c / PMPI_Type_create_darray_c
    where [Count = c_int | MPI_Count, Disp = MPI_Aint | MPI_Count] (
        size: c_int,
        rank: c_int,
        ndims: c_int,
        array_of_gsizes: *const Count,
        array_of_distribs: *const c_int,
        array_of_dargs: *const c_int,
        array_of_psizes: *const c_int,
        order: c_int,
        oldtype: MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) |st| {
        create(st, newtype, Count::LARGE, |types| {
            darray(types, size, rank, ndims, array_of_gsizes.into(), array_of_distribs, array_of_dargs, array_of_psizes, order, oldtype)
        })
    }
}
