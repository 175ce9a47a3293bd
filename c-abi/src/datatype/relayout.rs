//! A type's layout in a file's data representation (MPI 3.1 §13.5.1): the same type map with
//! every predefined type at the extent the representation gives it, for views whose etype
//! or filetype holds a type that changes size (`MPI_LONG` in external32: 8 bytes in memory,
//! 4 in the file) and for `MPI_File_get_type_extent`.
//!
//! ```text
//!   handle ──contents (combiner, ints, aints, types)──▶ the same constructor, its inner
//!   types rebuilt first ──▶ … ──▶ predefined type: one run of its file extent
//! ```
//!
//! The type is rebuilt from how it was made (`MPI_Type_get_contents`: inner types stay in
//! the table while a type built on them lives), by the constructors' own code (`blocks`,
//! `subarray`, `darray_of`, `struct_of`, `resized`) given the rebuilt inner types. So a
//! displacement counted in elements (`contiguous`, `vector`, `indexed`, `indexed_block`,
//! `subarray`, `darray`) scales with the inner type's file extent, as the standard says for
//! portable types, and a displacement in bytes (`hvector`, `hindexed`, `hindexed_block`,
//! `struct`, a resized type's lower bound and extent) stays as given: only the lengths of its
//! blocks change (a Fortran 90 parameterized type is the predefined type it stands for). A
//! predefined type in the file has no alignment (a struct is not padded
//! there: the file's data is packed; resize the type to give it another extent).

use super::constructors::{blocks, darray_of, struct_of, subarray};
use super::layout::{resized, Leaf, Run};
use super::{Contents, Datatype, TypeTable};
use crate::abi::*;
use crate::error::{MpiError, MpiResult};
use std::ffi::c_int;
use std::iter::{once, repeat_n};

/// A type's layout in a file's representation: its data runs from an element's start, its
/// lower bound and extent, and its bytes of data, all in file bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileLayout {
    pub runs: Vec<Run>,
    pub lb: isize,
    pub extent: isize,
    pub size: usize,
}

/// The file extent of each predefined type, as a representation gives it.
pub(crate) type FileExtent<'a> = &'a dyn Fn(MPI_Datatype) -> MpiResult<usize>;

impl TypeTable {
    /// The layout of type `dt` with every predefined type `p` taking `file_extent(p)` bytes
    /// (see the module documentation).
    pub(crate) fn layout_in(
        &self,
        dt: MPI_Datatype,
        file_extent: FileExtent,
    ) -> MpiResult<FileLayout> {
        let t = self.rebuilt_in(dt, file_extent)?;
        Ok(FileLayout {
            runs: t.runs.to_vec(),
            lb: t.lb,
            extent: t.extent(),
            size: t.size,
        })
    }

    /// Type `dt` rebuilt from its contents with the predefined types' file extents.
    fn rebuilt_in(&self, dt: MPI_Datatype, file_extent: FileExtent) -> MpiResult<Datatype> {
        let t = self.get(dt)?;
        let c = &t.contents;
        let inner = |i: usize| self.rebuilt_in(c.types[i], file_extent);
        // Counts and lengths were checked (not negative) when the type was made.
        let int = |i: usize| c.ints[i] as usize;
        let none = Contents::default;
        Ok(match c.combiner {
            // A Fortran 90 parameterized type is the predefined type it stands for.
            MPI_COMBINER_NAMED
            | MPI_COMBINER_F90_REAL
            | MPI_COMBINER_F90_COMPLEX
            | MPI_COMBINER_F90_INTEGER => predefined_in(t, file_extent)?,
            MPI_COMBINER_DUP => inner(0)?,
            MPI_COMBINER_CONTIGUOUS => blocks(&inner(0)?, once(int(0)), once(0), none()),
            MPI_COMBINER_VECTOR => {
                let old = inner(0)?;
                let stride = c.ints[2] as isize * old.extent();
                let disps = (0..int(0) as isize).map(|i| i * stride);
                blocks(&old, repeat_n(int(1), int(0)), disps, none())
            }
            MPI_COMBINER_HVECTOR | MPI_COMBINER_HVECTOR_INTEGER => {
                let stride = c.aints[0] as isize;
                let disps = (0..int(0) as isize).map(|i| i * stride);
                blocks(&inner(0)?, repeat_n(int(1), int(0)), disps, none())
            }
            MPI_COMBINER_INDEXED => {
                let (old, n) = (inner(0)?, int(0));
                let lens = c.ints[1..=n].iter().map(|&l| l as usize);
                let disps = c.ints[n + 1..=2 * n]
                    .iter()
                    .map(|&d| d as isize * old.extent());
                blocks(&old, lens, disps, none())
            }
            MPI_COMBINER_HINDEXED | MPI_COMBINER_HINDEXED_INTEGER => {
                let n = int(0);
                let lens = c.ints[1..=n].iter().map(|&l| l as usize);
                let disps = c.aints.iter().map(|&d| d as isize);
                blocks(&inner(0)?, lens, disps, none())
            }
            MPI_COMBINER_INDEXED_BLOCK => {
                let (old, n) = (inner(0)?, int(0));
                let disps = c.ints[2..2 + n].iter().map(|&d| d as isize * old.extent());
                blocks(&old, repeat_n(int(1), n), disps, none())
            }
            MPI_COMBINER_HINDEXED_BLOCK => {
                let disps = c.aints.iter().map(|&d| d as isize);
                blocks(&inner(0)?, repeat_n(int(1), int(0)), disps, none())
            }
            MPI_COMBINER_STRUCT | MPI_COMBINER_STRUCT_INTEGER => {
                let n = int(0);
                let olds = (0..n).map(inner).collect::<MpiResult<Vec<_>>>()?;
                let parts = (0..n)
                    .map(|i| (c.aints[i] as isize, int(1 + i), &olds[i]))
                    .collect();
                let all_same = c.types.windows(2).all(|w| w[0] == w[1]);
                struct_of(parts, all_same, none())
            }
            MPI_COMBINER_SUBARRAY => {
                let n = int(0);
                let dims = |k: usize| -> Vec<usize> {
                    c.ints[1 + k * n..1 + (k + 1) * n]
                        .iter()
                        .map(|&x| x as usize)
                        .collect()
                };
                let fortran = c.ints[1 + 3 * n] == MPI_Count::from(MPI_ORDER_FORTRAN);
                subarray(&inner(0)?, &dims(0), &dims(1), &dims(2), fortran, none())
            }
            MPI_COMBINER_DARRAY => {
                // Every integer but the global sizes came from an int argument.
                let narrow = |v: MPI_Count| v as c_int;
                let (size, rank, n) = (narrow(c.ints[0]), narrow(c.ints[1]), int(2));
                let arr = |k: usize| &c.ints[3 + k * n..3 + (k + 1) * n];
                let ints = |k: usize| arr(k).iter().map(|&v| narrow(v)).collect::<Vec<_>>();
                let order = narrow(c.ints[3 + 4 * n]);
                let old = inner(0)?;
                darray_of(
                    &old,
                    size,
                    rank,
                    arr(0),
                    &ints(1),
                    &ints(2),
                    &ints(3),
                    order,
                    c.types[0],
                )?
            }
            MPI_COMBINER_RESIZED => resized(
                &inner(0)?,
                c.aints[0] as isize,
                c.aints[1] as isize,
                none(),
            ),
            other => {
                return Err(MpiError::new(
                    MPI_ERR_TYPE,
                    format!(
                        "the datatype 0x{dt:08x} (combiner {other}) cannot be laid out in a file's data representation"
                    ),
                ))
            }
        })
    }
}

/// A predefined type `t` in the file: one run of its file extent.
fn predefined_in(t: &Datatype, file_extent: FileExtent) -> MpiResult<Datatype> {
    let Some(&leaf) = t.leaves.first() else {
        // No data (MPI_LB, MPI_UB): the same everywhere.
        return Ok(t.clone());
    };
    let size = file_extent(leaf.ty)?;
    let runs: Box<[Run]> = if size > 0 {
        Box::new([Run {
            offset: 0,
            len: size,
        }])
    } else {
        Box::new([])
    };
    Ok(Datatype {
        size,
        lb: 0,
        ub: size as isize,
        true_lb: 0,
        true_ub: size as isize,
        lb_marked: false,
        ub_marked: false,
        align: 1,
        runs,
        leaves: Box::new([Leaf { unit: size, ..leaf }]),
        committed: true,
        contents: t.contents.clone(),
        name: t.name.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::super::constructors::{contents, hvector, subarray_shape};
    use super::*;

    /// external32's sizes: MPI_LONG 4, the rest as in memory.
    fn ext32(ty: MPI_Datatype) -> MpiResult<usize> {
        Ok(super::super::external32_predefined_size(ty).expect("a type with data"))
    }

    fn runs(l: &FileLayout) -> Vec<(isize, usize)> {
        l.runs.iter().map(|r| (r.offset, r.len)).collect()
    }

    fn vector(
        types: &mut TypeTable,
        n: MPI_Count,
        bl: MPI_Count,
        stride: MPI_Count,
        old: MPI_Datatype,
    ) -> MPI_Datatype {
        let ext = types.get(old).unwrap().extent();
        let c = contents(MPI_COMBINER_VECTOR, vec![n, bl, stride], vec![], vec![old]);
        let t = hvector(types, n, bl, stride as isize * ext, old, c).unwrap();
        types.insert(t).unwrap()
    }

    #[test]
    fn a_vector_of_longs_scales_its_stride_and_an_hvector_keeps_its_bytes() {
        let mut types = TypeTable::new();
        let v = vector(&mut types, 3, 2, 5, MPI_LONG);
        let l = types.layout_in(v, &ext32).unwrap();
        assert_eq!(runs(&l), vec![(0, 8), (20, 8), (40, 8)]);
        assert_eq!((l.lb, l.extent, l.size), (0, 48, 24));
        // In memory: (0,16), (40,16), (80,16), extent 96.
        assert_eq!(types.get(v).unwrap().extent(), 96);

        let c = contents(MPI_COMBINER_HVECTOR, vec![3, 2], vec![40], vec![MPI_LONG]);
        let h = hvector(&types, 3, 2, 40, MPI_LONG, c).unwrap();
        let h = types.insert(h).unwrap();
        let l = types.layout_in(h, &ext32).unwrap();
        assert_eq!(runs(&l), vec![(0, 8), (40, 8), (80, 8)]);
        assert_eq!(l.extent, 88);

        // A predefined type alone, and one that keeps its size.
        let l = types.layout_in(MPI_LONG, &ext32).unwrap();
        assert_eq!((runs(&l), l.extent, l.size), (vec![(0, 4)], 4, 4));
        let l = types.layout_in(MPI_LONG_INT, &ext32).unwrap();
        assert_eq!((runs(&l), l.extent, l.size), (vec![(0, 8)], 8, 8));
        let d = vector(&mut types, 2, 1, 3, MPI_DOUBLE);
        let l = types.layout_in(d, &ext32).unwrap();
        assert_eq!((runs(&l), l.extent), (vec![(0, 8), (24, 8)], 32));
    }

    #[test]
    fn a_struct_keeps_its_displacements_and_resized_its_bounds() {
        let mut types = TypeTable::new();
        let (lens, disps, olds) = ([2 as c_int, 1], [0 as MPI_Aint, 24], [MPI_LONG, MPI_INT]);
        let s = super::super::constructors::structure(
            &types,
            2,
            lens.as_ptr().into(),
            disps.as_ptr().into(),
            olds.as_ptr(),
        )
        .unwrap();
        let s = types.insert(s).unwrap();
        let l = types.layout_in(s, &ext32).unwrap();
        assert_eq!(runs(&l), vec![(0, 8), (24, 4)]);
        assert_eq!(
            (l.lb, l.extent, l.size),
            (0, 28, 12),
            "not padded in the file"
        );

        let old = types.get(MPI_LONG).unwrap();
        let c = contents(MPI_COMBINER_RESIZED, vec![], vec![-4, 40], vec![MPI_LONG]);
        let r = resized(old, -4, 40, c);
        let r = types.insert(r).unwrap();
        let l = types.layout_in(r, &ext32).unwrap();
        assert_eq!(
            (runs(&l), l.lb, l.extent, l.size),
            (vec![(0, 4)], -4, 40, 4)
        );

        // A dup and a contiguous of the resized type: copies 40 bytes apart.
        let d = types.dup(r).unwrap();
        let c = contents(MPI_COMBINER_CONTIGUOUS, vec![3], vec![], vec![d]);
        let t = blocks(types.get(d).unwrap(), once(3), once(0), c);
        let t = types.insert(t).unwrap();
        let l = types.layout_in(t, &ext32).unwrap();
        assert_eq!(runs(&l), vec![(0, 4), (40, 4), (80, 4)]);
        assert_eq!((l.lb, l.extent), (-4, 120));
    }

    #[test]
    fn subarray_and_darray_of_longs_scale() {
        let mut types = TypeTable::new();
        // A 4x6 C array of longs, the 2x3 block from (1, 2).
        let (sizes, subsizes, starts) = ([4 as c_int, 6], [2 as c_int, 3], [1 as c_int, 2]);
        let (sz, sub, st) = subarray_shape(
            2,
            sizes.as_ptr().into(),
            subsizes.as_ptr().into(),
            starts.as_ptr().into(),
            MPI_ORDER_C,
        )
        .unwrap();
        let ints = vec![2, 4, 6, 2, 3, 1, 2, MPI_Count::from(MPI_ORDER_C)];
        let c = contents(MPI_COMBINER_SUBARRAY, ints, vec![], vec![MPI_LONG]);
        let t = subarray(types.get(MPI_LONG).unwrap(), &sz, &sub, &st, false, c);
        let t = types.insert(t).unwrap();
        let l = types.layout_in(t, &ext32).unwrap();
        assert_eq!(runs(&l), vec![(32, 12), (56, 12)]);
        assert_eq!((l.lb, l.extent, l.size), (0, 96, 24));

        // 8 longs cyclic over 2 processes, rank 1: longs 1, 3, 5, 7.
        let (gs, ds, da, ps) = (
            [8 as c_int],
            [MPI_DISTRIBUTE_CYCLIC],
            [MPI_DISTRIBUTE_DFLT_DARG],
            [2],
        );
        let t = super::super::constructors::darray(
            &types,
            2,
            1,
            1,
            gs.as_ptr().into(),
            ds.as_ptr(),
            da.as_ptr(),
            ps.as_ptr(),
            MPI_ORDER_C,
            MPI_LONG,
        )
        .unwrap();
        let t = types.insert(t).unwrap();
        let l = types.layout_in(t, &ext32).unwrap();
        assert_eq!(runs(&l), vec![(4, 4), (12, 4), (20, 4), (28, 4)]);
        assert_eq!(l.extent, 32);
    }

    #[test]
    fn a_representation_with_wide_ints_doubles_int_strides() {
        let mut types = TypeTable::new();
        let wide = |ty: MPI_Datatype| Ok(if ty == MPI_INT { 8 } else { 4 });
        let v = vector(&mut types, 2, 3, 4, MPI_INT);
        let l = types.layout_in(v, &wide).unwrap();
        assert_eq!(runs(&l), vec![(0, 24), (32, 24)]);
        assert_eq!((l.extent, l.size), (56, 48));
        let (lens, disps) = ([1 as c_int, 2], [5 as c_int, 0]);
        let (t, _, _) = super::super::constructors::indexed(
            &types,
            2,
            lens.as_ptr().into(),
            disps.as_ptr().into(),
            true,
            MPI_INT,
            MPI_COMBINER_INDEXED,
        )
        .unwrap();
        let mut t = t;
        t.contents.ints = vec![2, 1, 2, 5, 0];
        t.contents.types = vec![MPI_INT];
        let t = types.insert(t).unwrap();
        let l = types.layout_in(t, &wide).unwrap();
        assert_eq!(runs(&l), vec![(40, 8), (0, 16)]);
        assert_eq!((l.lb, l.extent), (0, 48));
        // A failing extent function is the layout's error.
        let failing = |_: MPI_Datatype| Err(MpiError::new(MPI_ERR_CONVERSION, "no"));
        assert_eq!(
            types.layout_in(v, &failing).unwrap_err().class,
            MPI_ERR_CONVERSION
        );
    }
}
