//! What a type is: `MPI_Type_size`, the extent calls (and the MPI-1 `MPI_Type_extent`,
//! `MPI_Type_lb`, `MPI_Type_ub`), `MPI_Type_get_envelope`, `MPI_Type_get_contents`, the names,
//! `MPI_Type_match_size`, and the address calls (`MPI_Get_address`, `MPI_Address`,
//! `MPI_Aint_add`, `MPI_Aint_diff`).

use crate::abi::*;
use crate::cptr::{input_string, write_c_string, Array, Out};
use crate::datatype::Datatype;
use crate::error::{MpiError, MpiResult};
use crate::runtime::export::mpi_fn;
use crate::runtime::Mpi;
use std::ffi::{c_char, c_int, c_void};

/// Runs a query on the type behind `datatype`.
fn query(
    st: &mut Mpi,
    datatype: MPI_Datatype,
    f: impl FnOnce(&Datatype) -> MpiResult<()>,
) -> MpiResult<()> {
    let rt = st.runtime()?;
    f(rt.types.get(datatype)?)
}

/// Writes two values to two output arguments (checked first).
fn set_pair<T: Copy>(
    a: *mut T,
    an: &'static str,
    av: T,
    b: *mut T,
    bn: &'static str,
    bv: T,
) -> MpiResult<()> {
    let (a, b) = (Out::new(a, an)?, Out::new(b, bn)?);
    a.set(av);
    b.set(bv);
    Ok(())
}

mpi_fn! {
    /// `MPI_Type_size`: bytes of data in one element of `datatype`.
    fn MPI_Type_size / PMPI_Type_size(datatype: MPI_Datatype, size: *mut c_int) |st| {
        query(st, datatype, |t| {
            let out = Out::new(size, "size")?;
            out.set(c_int::try_from(t.size()).unwrap_or(MPI_UNDEFINED));
            Ok(())
        })
    }
}

mpi_fn! {
    /// `MPI_Type_size_x`: `MPI_Type_size` as an `MPI_Count`.
    fn MPI_Type_size_x / PMPI_Type_size_x(datatype: MPI_Datatype, size: *mut MPI_Count) |st| {
        query(st, datatype, |t| {
            Out::new(size, "size")?.set(t.size() as MPI_Count);
            Ok(())
        })
    }
}

mpi_fn! {
    /// `MPI_Type_get_extent`: lower bound and extent.
    fn MPI_Type_get_extent / PMPI_Type_get_extent(datatype: MPI_Datatype, lb: *mut MPI_Aint, extent: *mut MPI_Aint) |st| {
        query(st, datatype, |t| set_pair(lb, "lb", t.lb() as MPI_Aint, extent, "extent", t.extent() as MPI_Aint))
    }
}

mpi_fn! {
    /// `MPI_Type_get_extent_x`: `MPI_Type_get_extent` as `MPI_Count`s.
    fn MPI_Type_get_extent_x / PMPI_Type_get_extent_x(datatype: MPI_Datatype, lb: *mut MPI_Count, extent: *mut MPI_Count) |st| {
        query(st, datatype, |t| set_pair(lb, "lb", t.lb() as MPI_Count, extent, "extent", t.extent() as MPI_Count))
    }
}

mpi_fn! {
    /// `MPI_Type_get_true_extent`: the bounds of the data itself, ignoring explicit bounds.
    fn MPI_Type_get_true_extent / PMPI_Type_get_true_extent(datatype: MPI_Datatype, true_lb: *mut MPI_Aint, true_extent: *mut MPI_Aint) |st| {
        query(st, datatype, |t| set_pair(true_lb, "true_lb", t.true_lb() as MPI_Aint, true_extent, "true_extent", t.true_extent() as MPI_Aint))
    }
}

mpi_fn! {
    /// `MPI_Type_get_true_extent_x`: `MPI_Type_get_true_extent` as `MPI_Count`s.
    fn MPI_Type_get_true_extent_x / PMPI_Type_get_true_extent_x(datatype: MPI_Datatype, true_lb: *mut MPI_Count, true_extent: *mut MPI_Count) |st| {
        query(st, datatype, |t| set_pair(true_lb, "true_lb", t.true_lb() as MPI_Count, true_extent, "true_extent", t.true_extent() as MPI_Count))
    }
}

mpi_fn! {
    /// `MPI_Type_extent` (MPI-1): the extent.
    fn MPI_Type_extent / PMPI_Type_extent(datatype: MPI_Datatype, extent: *mut MPI_Aint) |st| {
        query(st, datatype, |t| {
            Out::new(extent, "extent")?.set(t.extent() as MPI_Aint);
            Ok(())
        })
    }
}

mpi_fn! {
    /// `MPI_Type_lb` (MPI-1): the lower bound.
    fn MPI_Type_lb / PMPI_Type_lb(datatype: MPI_Datatype, displacement: *mut MPI_Aint) |st| {
        query(st, datatype, |t| {
            Out::new(displacement, "displacement")?.set(t.lb() as MPI_Aint);
            Ok(())
        })
    }
}

mpi_fn! {
    /// `MPI_Type_ub` (MPI-1): the upper bound.
    fn MPI_Type_ub / PMPI_Type_ub(datatype: MPI_Datatype, displacement: *mut MPI_Aint) |st| {
        query(st, datatype, |t| {
            Out::new(displacement, "displacement")?.set(t.ub() as MPI_Aint);
            Ok(())
        })
    }
}

mpi_fn! {
    /// `MPI_Type_get_envelope`: how many arguments of each kind made the type, and its
    /// combiner (`MPI_COMBINER_NAMED` for a predefined type).
    fn MPI_Type_get_envelope / PMPI_Type_get_envelope(
        datatype: MPI_Datatype,
        num_integers: *mut c_int,
        num_addresses: *mut c_int,
        num_datatypes: *mut c_int,
        combiner: *mut c_int,
    ) |st| {
        query(st, datatype, |t| {
            let outs = [
                Out::new(num_integers, "num_integers")?,
                Out::new(num_addresses, "num_addresses")?,
                Out::new(num_datatypes, "num_datatypes")?,
                Out::new(combiner, "combiner")?,
            ];
            let c = &t.contents;
            let values = [c.ints.len() as c_int, c.aints.len() as c_int, c.types.len() as c_int, c.combiner];
            for (o, v) in outs.iter().zip(values) {
                o.set(v);
            }
            Ok(())
        })
    }
}

mpi_fn! {
    /// `MPI_Type_get_contents`: the arguments that made a derived type. The derived types
    /// returned are new references, to be freed with `MPI_Type_free`.
    fn MPI_Type_get_contents / PMPI_Type_get_contents(
        datatype: MPI_Datatype,
        max_integers: c_int,
        max_addresses: c_int,
        max_datatypes: c_int,
        array_of_integers: *mut c_int,
        array_of_addresses: *mut MPI_Aint,
        array_of_datatypes: *mut MPI_Datatype,
    ) |st| {
        let rt = st.runtime()?;
        let c = rt.types.get(datatype)?.contents.clone();
        if c.combiner == MPI_COMBINER_NAMED {
            return Err(MpiError::new(MPI_ERR_TYPE, "the datatype is predefined (MPI_COMBINER_NAMED); only derived types have contents"));
        }
        if (max_integers as i64) < c.ints.len() as i64 || (max_addresses as i64) < c.aints.len() as i64 || (max_datatypes as i64) < c.types.len() as i64 {
            return Err(MpiError::new(
                MPI_ERR_OTHER,
                format!("the arrays are too small: this type has {} integers, {} addresses and {} datatypes (see MPI_Type_get_envelope)", c.ints.len(), c.aints.len(), c.types.len()),
            ));
        }
        let ints = Array::new(array_of_integers, c.ints.len(), "array_of_integers")?;
        let aints = Array::new(array_of_addresses, c.aints.len(), "array_of_addresses")?;
        let types = Array::new(array_of_datatypes, c.types.len(), "array_of_datatypes")?;
        c.ints.iter().enumerate().for_each(|(i, &v)| ints.set(i, v));
        c.aints.iter().enumerate().for_each(|(i, &v)| aints.set(i, v));
        for (i, &t) in c.types.iter().enumerate() {
            rt.types.retain(t);
            types.set(i, t);
        }
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Type_set_name`: names a type (at most `MPI_MAX_OBJECT_NAME - 1` bytes are kept).
    fn MPI_Type_set_name / PMPI_Type_set_name(datatype: MPI_Datatype, type_name: *const c_char) |st| {
        let rt = st.runtime()?;
        rt.types.get(datatype)?;
        let mut name = input_string(type_name, "type_name")?;
        let max = MPI_MAX_OBJECT_NAME as usize - 1;
        if name.len() > max {
            let mut end = max;
            while !name.is_char_boundary(end) {
                end -= 1;
            }
            name.truncate(end);
        }
        rt.types.get_mut(datatype)?.name = name;
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Type_get_name`: a type's name (`MPI_INT`, ...; empty for an unnamed derived type).
    fn MPI_Type_get_name / PMPI_Type_get_name(datatype: MPI_Datatype, type_name: *mut c_char, resultlen: *mut c_int) |st| {
        query(st, datatype, |t| {
            let len = Out::new(resultlen, "resultlen")?;
            len.set(write_c_string(type_name, MPI_MAX_OBJECT_NAME as usize, &t.name, "type_name")?);
            Ok(())
        })
    }
}

/// The predefined types `MPI_Type_match_size` chooses from, per type class (MPICH's choice:
/// the Fortran types).
const MATCHES: &[(c_int, MPI_Datatype)] = &[
    (MPI_TYPECLASS_REAL, MPI_REAL4),
    (MPI_TYPECLASS_REAL, MPI_REAL8),
    (MPI_TYPECLASS_REAL, MPI_REAL16),
    (MPI_TYPECLASS_INTEGER, MPI_INTEGER1),
    (MPI_TYPECLASS_INTEGER, MPI_INTEGER2),
    (MPI_TYPECLASS_INTEGER, MPI_INTEGER4),
    (MPI_TYPECLASS_INTEGER, MPI_INTEGER8),
    (MPI_TYPECLASS_COMPLEX, MPI_COMPLEX8),
    (MPI_TYPECLASS_COMPLEX, MPI_COMPLEX16),
    (MPI_TYPECLASS_COMPLEX, MPI_COMPLEX32),
];

mpi_fn! {
    /// `MPI_Type_match_size`: the predefined type of class `typeclass` and `size` bytes.
    fn MPI_Type_match_size / PMPI_Type_match_size(typeclass: c_int, size: c_int, datatype: *mut MPI_Datatype) |st| {
        let rt = st.runtime()?;
        let out = Out::new(datatype, "datatype")?;
        if ![MPI_TYPECLASS_REAL, MPI_TYPECLASS_INTEGER, MPI_TYPECLASS_COMPLEX].contains(&typeclass) {
            return Err(MpiError::arg(format!("typeclass {typeclass} is not MPI_TYPECLASS_REAL, MPI_TYPECLASS_INTEGER or MPI_TYPECLASS_COMPLEX")));
        }
        let found = MATCHES
            .iter()
            .filter(|(c, _)| *c == typeclass)
            .find(|(_, t)| rt.types.get(*t).map(|t| t.size() as c_int) == Ok(size));
        match found {
            Some(&(_, t)) => {
                out.set(t);
                Ok(())
            }
            None => Err(MpiError::arg(format!("no predefined type of this class has {size} bytes"))),
        }
    }
}

mpi_fn! {
    /// `MPI_Get_address`: the address of a location, as an `MPI_Aint`.
    fn MPI_Get_address / PMPI_Get_address(location: *const c_void, address: *mut MPI_Aint) |_st| {
        Out::new(address, "address")?.set(location as MPI_Aint);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Address` (MPI-1): `MPI_Get_address`.
    fn MPI_Address / PMPI_Address(location: *mut c_void, address: *mut MPI_Aint) |_st| {
        Out::new(address, "address")?.set(location as MPI_Aint);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Aint_add`: `base + disp` as addresses.
    raw fn MPI_Aint_add / PMPI_Aint_add(base: MPI_Aint, disp: MPI_Aint) -> MPI_Aint {
        base.wrapping_add(disp)
    }
}

mpi_fn! {
    /// `MPI_Aint_diff`: `addr1 - addr2` as addresses.
    raw fn MPI_Aint_diff / PMPI_Aint_diff(addr1: MPI_Aint, addr2: MPI_Aint) -> MPI_Aint {
        addr1.wrapping_sub(addr2)
    }
}
