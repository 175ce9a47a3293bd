//! The type constructors: what `MPI_Type_contiguous` ... `MPI_Type_create_resized`,
//! `MPI_Type_create_darray` and the MPI-1 names make (their entry points are in `api`).
//!
//! Each constructor checks its arguments in MPICH's order and classes (a negative count or
//! block length is `MPI_ERR_COUNT`, a bad old type `MPI_ERR_TYPE`, a NULL output or array or a
//! malformed subarray `MPI_ERR_ARG`), describes its blocks to a [`Builder`], and records its
//! arguments for `MPI_Type_get_contents`. Nothing is created unless every check passed.

use super::layout::{resized, Builder};
use super::{negative_count, Contents, Datatype, TypeTable};
use crate::abi::*;
use crate::count::CountArray;
use crate::cptr::input_array;
use crate::error::{MpiError, MpiResult};
use std::ffi::c_int;

pub(crate) fn count_arg(count: MPI_Count) -> MpiResult<usize> {
    usize::try_from(count).map_err(|_| negative_count(count))
}

pub(crate) fn blocklength_arg(len: MPI_Count) -> MpiResult<usize> {
    usize::try_from(len).map_err(|_| {
        MpiError::new(
            MPI_ERR_COUNT,
            format!("a block length is {len}; block lengths must be 0 or more"),
        )
    })
}

/// The arguments a constructor records (in the int form's layout; `large` when the `_c`
/// form made the type: see [`Contents`]).
pub(crate) fn contents(
    combiner: c_int,
    ints: Vec<MPI_Count>,
    aints: Vec<MPI_Aint>,
    types: Vec<MPI_Datatype>,
) -> Contents {
    Contents {
        combiner,
        ints,
        aints,
        types,
        large: false,
    }
}

/// Blocks of one old type at displacements in bytes.
pub(crate) fn blocks(
    old: &Datatype,
    lens: impl Iterator<Item = usize>,
    disps: impl Iterator<Item = isize>,
    c: Contents,
) -> Datatype {
    let mut b = Builder::new();
    for (len, disp) in lens.zip(disps) {
        b.push(disp, len, old);
    }
    b.finish(c, false)
}

/// A vector whose stride is in bytes.
pub(crate) fn hvector(
    types: &TypeTable,
    count: MPI_Count,
    blocklength: MPI_Count,
    stride_bytes: isize,
    oldtype: MPI_Datatype,
    c: Contents,
) -> MpiResult<Datatype> {
    let n = count_arg(count)?;
    let len = blocklength_arg(blocklength)?;
    let old = types.get(oldtype)?;
    let disps = (0..n as isize).map(|i| i * stride_bytes);
    Ok(blocks(old, (0..n).map(|_| len), disps, c))
}

/// Blocks of varying lengths at displacements given in units of `unit` bytes.
pub(crate) fn indexed(
    types: &TypeTable,
    count: MPI_Count,
    lens: CountArray,
    disps: CountArray,
    unit_is_extent: bool,
    oldtype: MPI_Datatype,
    combiner: c_int,
) -> MpiResult<(Datatype, Vec<MPI_Count>, Vec<MPI_Count>)> {
    let n = count_arg(count)?;
    let lens = lens.read(n, "array_of_blocklengths")?;
    let disps = disps.read(n, "array_of_displacements")?;
    let lens_usize = lens
        .iter()
        .map(|&l| blocklength_arg(l))
        .collect::<MpiResult<Vec<_>>>()?;
    let old = types.get(oldtype)?;
    let unit = if unit_is_extent { old.extent() } else { 1 };
    let d = disps.iter().map(|&d| d as isize * unit);
    let ty = blocks(
        old,
        lens_usize.into_iter(),
        d,
        Contents {
            combiner,
            ..Contents::default()
        },
    );
    Ok((ty, lens, disps))
}

/// `MPI_Type_create_hindexed` and `MPI_Type_hindexed`.
pub(crate) fn hindexed(
    types: &TypeTable,
    count: MPI_Count,
    lens: CountArray,
    disps: CountArray,
    oldtype: MPI_Datatype,
) -> MpiResult<Datatype> {
    let (mut t, lens, disps) = indexed(
        types,
        count,
        lens,
        disps,
        false,
        oldtype,
        MPI_COMBINER_HINDEXED,
    )?;
    t.contents.ints = [vec![count], lens].concat();
    t.contents.aints = disps;
    t.contents.types = vec![oldtype];
    Ok(t)
}

/// Blocks of one length at displacements in units of the old extent or bytes.
pub(crate) fn indexed_block(
    types: &TypeTable,
    count: MPI_Count,
    blocklength: MPI_Count,
    disps: CountArray,
    unit_is_extent: bool,
    oldtype: MPI_Datatype,
) -> MpiResult<(Datatype, Vec<MPI_Count>)> {
    let n = count_arg(count)?;
    let len = blocklength_arg(blocklength)?;
    let disps = disps.read(n, "array_of_displacements")?;
    let old = types.get(oldtype)?;
    let unit = if unit_is_extent { old.extent() } else { 1 };
    let d = disps.iter().map(|&d| d as isize * unit);
    let ty = blocks(old, (0..n).map(|_| len), d, Contents::default());
    Ok((ty, disps))
}

/// `MPI_Type_create_struct` and `MPI_Type_struct`: blocks of different types, padded to the
/// alignment of the largest part as a C struct is (unless `MPI_LB` / `MPI_UB` set a bound, or
/// every block has the same type, which MPICH builds as an hindexed type).
pub(crate) fn structure(
    types: &TypeTable,
    count: MPI_Count,
    lens: CountArray,
    disps: CountArray,
    olds: *const MPI_Datatype,
) -> MpiResult<Datatype> {
    let n = count_arg(count)?;
    let lens = lens.read(n, "array_of_blocklengths")?;
    let disps = disps.read(n, "array_of_displacements")?;
    let olds = input_array(olds, n, "array_of_types")?;
    let mut parts = Vec::with_capacity(n);
    for i in 0..n {
        let len = blocklength_arg(lens[i])?;
        let old = types.get(olds[i]).map_err(|e| MpiError {
            detail: format!("array_of_types[{i}]: {}", e.detail),
            ..e
        })?;
        parts.push((disps[i] as isize, len, old));
    }
    let c = contents(
        MPI_COMBINER_STRUCT,
        [vec![count], lens].concat(),
        disps,
        olds.to_vec(),
    );
    let all_same = olds.windows(2).all(|w| w[0] == w[1]);
    Ok(struct_of(parts, all_same, c))
}

/// The struct of `parts` (displacement in bytes, block length, type), padded as a C struct
/// unless every block has the same type (`all_same`).
pub(crate) fn struct_of(
    parts: Vec<(isize, usize, &Datatype)>,
    all_same: bool,
    c: Contents,
) -> Datatype {
    let mut b = Builder::new();
    for (disp, len, old) in parts {
        b.push(disp, len, old);
    }
    b.finish(c, !all_same)
}

/// Checks a subarray's shape: `ndims` dimensions of sizes, subsizes and starts.
pub(crate) fn subarray_shape(
    ndims: c_int,
    sizes: CountArray,
    subsizes: CountArray,
    starts: CountArray,
    order: c_int,
) -> MpiResult<(Vec<usize>, Vec<usize>, Vec<usize>)> {
    if ndims < 1 {
        return Err(MpiError::arg(format!(
            "ndims is {ndims}; a subarray has 1 dimension or more"
        )));
    }
    if order != MPI_ORDER_C && order != MPI_ORDER_FORTRAN {
        return Err(MpiError::arg(format!(
            "the order is {order}; it must be MPI_ORDER_C or MPI_ORDER_FORTRAN"
        )));
    }
    let n = ndims as usize;
    let sizes = sizes.read(n, "array_of_sizes")?;
    let subsizes = subsizes.read(n, "array_of_subsizes")?;
    let starts = starts.read(n, "array_of_starts")?;
    for i in 0..n {
        let (size, sub, start) = (sizes[i], subsizes[i], starts[i]);
        if size < 1 || sub < 1 || sub > size || start < 0 || start > size - sub {
            return Err(MpiError::arg(format!(
                "dimension {i}: size {size}, subsize {sub}, start {start}; it needs size >= 1, 1 <= subsize <= size and 0 <= start <= size - subsize"
            )));
        }
    }
    let v = |a: &[MPI_Count]| a.iter().map(|&x| x as usize).collect::<Vec<_>>();
    Ok((v(&sizes), v(&subsizes), v(&starts)))
}

/// The subarray type: rows of the fastest dimension as blocks, in memory order, then resized
/// to the whole array (lower bound 0, extent the full array's).
pub(crate) fn subarray(
    old: &Datatype,
    sizes: &[usize],
    subsizes: &[usize],
    starts: &[usize],
    fortran: bool,
    c: Contents,
) -> Datatype {
    // Dimensions from slowest to fastest.
    let order: Vec<usize> = if fortran {
        (0..sizes.len()).rev().collect()
    } else {
        (0..sizes.len()).collect()
    };
    let ext = old.extent();
    let mut stride = vec![0isize; sizes.len()];
    let mut s = 1isize;
    for &d in order.iter().rev() {
        stride[d] = s;
        s *= sizes[d] as isize;
    }
    let total = s * ext;
    let fastest = *order.last().expect("ndims >= 1");
    let outer = &order[..order.len() - 1];
    let mut idx = vec![0usize; sizes.len()];
    let mut b = Builder::new();
    'rows: loop {
        let disp: isize = order
            .iter()
            .map(|&d| (starts[d] + idx[d]) as isize * stride[d])
            .sum();
        b.push(disp * ext, subsizes[fastest], old);
        // The next row: an odometer over the outer dimensions, fastest of them first.
        for &d in outer.iter().rev() {
            idx[d] += 1;
            if idx[d] < subsizes[d] {
                continue 'rows;
            }
            idx[d] = 0;
        }
        break;
    }
    let t = b.finish(Contents::default(), false);
    resized(&t, 0, total, c)
}

/// The global indices process coordinate `coord` of `procs` owns in one dimension of `gsize`
/// elements, in increasing order, as runs `(first, len)`.
pub(crate) fn owned_runs(
    gsize: usize,
    distrib: c_int,
    darg: c_int,
    procs: usize,
    coord: usize,
) -> MpiResult<Vec<(usize, usize)>> {
    let bad = |what: String| MpiError::arg(what);
    match distrib {
        MPI_DISTRIBUTE_NONE => {
            if procs != 1 {
                return Err(bad(format!(
                    "a dimension distributed with MPI_DISTRIBUTE_NONE needs 1 process, not {procs}"
                )));
            }
            Ok(vec![(0, gsize)])
        }
        MPI_DISTRIBUTE_BLOCK => {
            let b = if darg == MPI_DISTRIBUTE_DFLT_DARG {
                gsize.div_ceil(procs)
            } else {
                usize::try_from(darg)
                    .ok()
                    .filter(|&b| b > 0 && b * procs >= gsize)
                    .ok_or_else(|| {
                        bad(format!(
                            "block size {darg} cannot cover {gsize} elements on {procs} processes"
                        ))
                    })?
            };
            let start = (coord * b).min(gsize);
            let end = ((coord + 1) * b).min(gsize);
            Ok(if end > start {
                vec![(start, end - start)]
            } else {
                vec![]
            })
        }
        MPI_DISTRIBUTE_CYCLIC => {
            let k = if darg == MPI_DISTRIBUTE_DFLT_DARG {
                1
            } else {
                usize::try_from(darg)
                    .ok()
                    .filter(|&k| k > 0)
                    .ok_or_else(|| bad(format!("cyclic block size {darg} must be positive")))?
            };
            let mut runs = Vec::new();
            let mut start = coord * k;
            while start < gsize {
                runs.push((start, k.min(gsize - start)));
                start += procs * k;
            }
            Ok(runs)
        }
        _ => Err(bad(format!(
            "distribution {distrib} is not MPI_DISTRIBUTE_BLOCK, _CYCLIC or _NONE"
        ))),
    }
}

/// `MPI_Type_create_darray`: the elements of a global array that process `rank` of a
/// row-major grid of `psizes` owns, in memory order, with the whole array's extent.
#[allow(clippy::too_many_arguments)]
pub(crate) fn darray(
    types: &TypeTable,
    size: c_int,
    rank: c_int,
    ndims: c_int,
    gsizes: CountArray,
    distribs: *const c_int,
    dargs: *const c_int,
    psizes: *const c_int,
    order: c_int,
    oldtype: MPI_Datatype,
) -> MpiResult<Datatype> {
    let old = types.get(oldtype)?;
    if ndims < 1 || size < 1 || rank < 0 || rank >= size {
        return Err(MpiError::arg(format!("size {size}, rank {rank}, ndims {ndims}: it needs size >= 1, 0 <= rank < size, ndims >= 1")));
    }
    if order != MPI_ORDER_C && order != MPI_ORDER_FORTRAN {
        return Err(MpiError::arg(format!(
            "the order is {order}; it must be MPI_ORDER_C or MPI_ORDER_FORTRAN"
        )));
    }
    let n = ndims as usize;
    let gs = gsizes.read(n, "array_of_gsizes")?;
    let ds = input_array(distribs, n, "array_of_distribs")?;
    let da = input_array(dargs, n, "array_of_dargs")?;
    let ps = input_array(psizes, n, "array_of_psizes")?;
    darray_of(old, size, rank, &gs, ds, da, ps, order, oldtype)
}

/// The darray of `old` (handle `oldtype`, recorded in the contents) once its arrays are read:
/// `gs` global sizes, `ds` distributions, `da` distribution arguments, `ps` process grid.
#[allow(clippy::too_many_arguments)]
pub(crate) fn darray_of(
    old: &Datatype,
    size: c_int,
    rank: c_int,
    gs: &[MPI_Count],
    ds: &[c_int],
    da: &[c_int],
    ps: &[c_int],
    order: c_int,
    oldtype: MPI_Datatype,
) -> MpiResult<Datatype> {
    let n = gs.len();
    let ndims = n as c_int;
    if gs.iter().any(|&g| g < 1) || ps.iter().any(|&p| p < 1) {
        return Err(MpiError::arg(
            "every global size and process count must be 1 or more",
        ));
    }
    if ps.iter().map(|&p| p as i64).product::<i64>() != size as i64 {
        return Err(MpiError::arg(format!(
            "the process grid has {} processes, not size = {size}",
            ps.iter().map(|&p| p as i64).product::<i64>()
        )));
    }
    // Row-major coordinates of `rank` in the process grid.
    let mut coords = vec![0usize; n];
    let mut r = rank as usize;
    for d in (0..n).rev() {
        coords[d] = r % ps[d] as usize;
        r /= ps[d] as usize;
    }
    let owned = (0..n)
        .map(|d| owned_runs(gs[d] as usize, ds[d], da[d], ps[d] as usize, coords[d]))
        .collect::<MpiResult<Vec<_>>>()?;
    // Dimensions from slowest to fastest in memory, and their strides in elements.
    let order_dims: Vec<usize> = if order == MPI_ORDER_FORTRAN {
        (0..n).rev().collect()
    } else {
        (0..n).collect()
    };
    let mut stride = vec![0isize; n];
    let mut s = 1isize;
    for &d in order_dims.iter().rev() {
        stride[d] = s;
        s *= gs[d] as isize;
    }
    let ext = old.extent();
    let mut b = Builder::new();
    if owned.iter().all(|runs| !runs.is_empty()) {
        let fastest = order_dims[n - 1];
        let outer = &order_dims[..n - 1];
        // An odometer over the owned indices of the outer dimensions.
        let mut pos: Vec<(usize, usize)> = vec![(0, 0); n]; // (run, index in run)
        'rows: loop {
            let base: isize = outer
                .iter()
                .map(|&d| {
                    let (run, i) = pos[d];
                    (owned[d][run].0 + i) as isize * stride[d]
                })
                .sum();
            for &(first, len) in &owned[fastest] {
                b.push((base + first as isize) * ext, len, old);
            }
            for &d in outer.iter().rev() {
                let (run, i) = &mut pos[d];
                *i += 1;
                if *i == owned[d][*run].1 {
                    *i = 0;
                    *run += 1;
                }
                if *run < owned[d].len() {
                    continue 'rows;
                }
                pos[d] = (0, 0);
            }
            break;
        }
    }
    let wide = |a: &[c_int]| a.iter().map(|&x| MPI_Count::from(x)).collect::<Vec<_>>();
    let ints = [
        wide(&[size, rank, ndims]),
        gs.to_vec(),
        wide(ds),
        wide(da),
        wide(ps),
        vec![MPI_Count::from(order)],
    ]
    .concat();
    let t = b.finish(Contents::default(), false);
    Ok(resized(
        &t,
        0,
        s * ext,
        contents(MPI_COMBINER_DARRAY, ints, vec![], vec![oldtype]),
    ))
}
