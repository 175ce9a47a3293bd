//! What a type is: `MPI_Type_size`, the extent calls (and the MPI-1 `MPI_Type_extent`,
//! `MPI_Type_lb`, `MPI_Type_ub`), `MPI_Type_get_envelope`, `MPI_Type_get_contents` (and the
//! `_c` forms of these: see [`crate::count`]), the names,
//! `MPI_Type_match_size`, and the address calls (`MPI_Get_address`, `MPI_Address`,
//! `MPI_Aint_add`, `MPI_Aint_diff`).

use crate::abi::*;
use crate::count::CountOut;
use crate::cptr::{input_string, write_c_string, Array, Out};
use crate::datatype::{Contents, Datatype};
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
    /// (`MPI_UNDEFINED` in the int form if an `int` cannot hold it).
    fn MPI_Type_size / PMPI_Type_size, large MPI_Type_size_c / PMPI_Type_size_c
    where [Count = c_int | MPI_Count] (datatype: MPI_Datatype, size: *mut Count) |st| {
        query(st, datatype, |t| {
            let out = Out::new(size, "size")?;
            out.set(Count::from_count(t.size() as MPI_Count));
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
    fn MPI_Type_get_extent / PMPI_Type_get_extent, large MPI_Type_get_extent_c / PMPI_Type_get_extent_c
    where [Disp = MPI_Aint | MPI_Count] (datatype: MPI_Datatype, lb: *mut Disp, extent: *mut Disp) |st| {
        query(st, datatype, |t| set_pair(lb, "lb", t.lb() as Disp, extent, "extent", t.extent() as Disp))
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
    fn MPI_Type_get_true_extent / PMPI_Type_get_true_extent, large MPI_Type_get_true_extent_c / PMPI_Type_get_true_extent_c
    where [Disp = MPI_Aint | MPI_Count] (datatype: MPI_Datatype, true_lb: *mut Disp, true_extent: *mut Disp) |st| {
        query(st, datatype, |t| set_pair(true_lb, "true_lb", t.true_lb() as Disp, true_extent, "true_extent", t.true_extent() as Disp))
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

/// The arguments that made a type as the int forms report them: an error if a large-count
/// constructor made it (its large counts have no place there), of class `MPI_ERR_OTHER` as
/// MPICH 4.0.2 answers.
fn int_layout(c: &Contents) -> MpiResult<(Vec<MPI_Count>, Vec<MPI_Aint>)> {
    if c.large {
        return Err(MpiError::new(
            MPI_ERR_OTHER,
            "a large-count constructor (MPI_Type_*_c) made this datatype; use MPI_Type_get_envelope_c and MPI_Type_get_contents_c",
        ));
    }
    Ok((c.ints.clone(), c.aints.clone()))
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
            ];
            let combiner = Out::new(combiner, "combiner")?;
            let c = &t.contents;
            let (ints, aints) = int_layout(c)?;
            let values = [ints.len(), aints.len(), c.types.len()];
            for (o, v) in outs.iter().zip(values) {
                o.set(v as c_int);
            }
            combiner.set(c.combiner);
            Ok(())
        })
    }
}

mpi_fn! {
    /// `MPI_Type_get_envelope_c`: `MPI_Type_get_envelope` with the count of large-count
    /// arguments (nonzero for a type a `_c` constructor made).
    fn MPI_Type_get_envelope_c / PMPI_Type_get_envelope_c(
        datatype: MPI_Datatype,
        num_integers: *mut MPI_Count,
        num_addresses: *mut MPI_Count,
        num_large_counts: *mut MPI_Count,
        num_datatypes: *mut MPI_Count,
        combiner: *mut c_int,
    ) |st| {
        query(st, datatype, |t| {
            let outs = [
                Out::new(num_integers, "num_integers")?,
                Out::new(num_addresses, "num_addresses")?,
                Out::new(num_large_counts, "num_large_counts")?,
                Out::new(num_datatypes, "num_datatypes")?,
            ];
            let combiner = Out::new(combiner, "combiner")?;
            let c = &t.contents;
            let (ints, aints, large) = c.large_layout();
            let values = [ints.len(), aints.len(), large.len(), c.types.len()];
            for (o, v) in outs.iter().zip(values) {
                o.set(v as MPI_Count);
            }
            combiner.set(c.combiner);
            Ok(())
        })
    }
}

/// The arrays of `MPI_Type_get_contents(_c)` after their checks: how many entries each
/// caller's array has room for, and where it is.
struct ContentsOut<I> {
    ints: (*mut I, MPI_Count),
    aints: (*mut MPI_Aint, MPI_Count),
    large: (*mut MPI_Count, MPI_Count),
    types: (*mut MPI_Datatype, MPI_Count),
}

/// Writes the contents (`ints`, `aints`, `large`) of `datatype` to the caller's arrays; the
/// derived types returned are new references.
fn write_contents<I: CountOut>(
    st: &mut Mpi,
    datatype: MPI_Datatype,
    (ints, aints, large): (Vec<MPI_Count>, Vec<MPI_Aint>, Vec<MPI_Count>),
    out: ContentsOut<I>,
) -> MpiResult<()> {
    let rt = st.runtime()?;
    let c = rt.types.get(datatype)?.contents.clone();
    let fits = |room: MPI_Count, n: usize| room >= n as MPI_Count;
    if !fits(out.ints.1, ints.len())
        || !fits(out.aints.1, aints.len())
        || !fits(out.large.1, large.len())
        || !fits(out.types.1, c.types.len())
    {
        return Err(MpiError::new(
            MPI_ERR_OTHER,
            format!("the arrays are too small: this type has {} integers, {} addresses, {} large counts and {} datatypes (see MPI_Type_get_envelope)", ints.len(), aints.len(), large.len(), c.types.len()),
        ));
    }
    let int_out = Array::new(out.ints.0, ints.len(), "array_of_integers")?;
    let aint_out = Array::new(out.aints.0, aints.len(), "array_of_addresses")?;
    let large_out = Array::new(out.large.0, large.len(), "array_of_large_counts")?;
    let type_out = Array::new(out.types.0, c.types.len(), "array_of_datatypes")?;
    ints.iter()
        .enumerate()
        .for_each(|(i, &v)| int_out.set(i, I::from_count(v)));
    aints
        .iter()
        .enumerate()
        .for_each(|(i, &v)| aint_out.set(i, v));
    large
        .iter()
        .enumerate()
        .for_each(|(i, &v)| large_out.set(i, v));
    for (i, &t) in c.types.iter().enumerate() {
        rt.types.retain(t);
        type_out.set(i, t);
    }
    Ok(())
}

/// The contents of a derived type (`MPI_ERR_TYPE` for a predefined one).
fn derived_contents(st: &mut Mpi, datatype: MPI_Datatype) -> MpiResult<Contents> {
    let c = st.runtime()?.types.get(datatype)?.contents.clone();
    if c.combiner == MPI_COMBINER_NAMED {
        return Err(MpiError::new(
            MPI_ERR_TYPE,
            "the datatype is predefined (MPI_COMBINER_NAMED); only derived types have contents",
        ));
    }
    Ok(c)
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
        let c = derived_contents(st, datatype)?;
        let (ints, aints) = int_layout(&c)?;
        let out = ContentsOut {
            ints: (array_of_integers, max_integers.into()),
            aints: (array_of_addresses, max_addresses.into()),
            large: (std::ptr::null_mut(), 0),
            types: (array_of_datatypes, max_datatypes.into()),
        };
        write_contents(st, datatype, (ints, aints, Vec::new()), out)
    }
}

mpi_fn! {
    /// `MPI_Type_get_contents_c`: `MPI_Type_get_contents` with the large-count arguments.
    fn MPI_Type_get_contents_c / PMPI_Type_get_contents_c(
        datatype: MPI_Datatype,
        max_integers: MPI_Count,
        max_addresses: MPI_Count,
        max_large_counts: MPI_Count,
        max_datatypes: MPI_Count,
        array_of_integers: *mut c_int,
        array_of_addresses: *mut MPI_Aint,
        array_of_large_counts: *mut MPI_Count,
        array_of_datatypes: *mut MPI_Datatype,
    ) |st| {
        let c = derived_contents(st, datatype)?;
        let out = ContentsOut {
            ints: (array_of_integers, max_integers),
            aints: (array_of_addresses, max_addresses),
            large: (array_of_large_counts, max_large_counts),
            types: (array_of_datatypes, max_datatypes),
        };
        write_contents(st, datatype, c.large_layout(), out)
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
