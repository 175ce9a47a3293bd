//! The parameterized Fortran 90 types: what `MPI_Type_create_f90_integer`, `_real` and
//! `_complex` return for a precision `p` and a decimal exponent range `r`.
//!
//! Fortran's `SELECTED_INT_KIND(r)` / `SELECTED_REAL_KIND(p, r)` pick the smallest kind that
//! has at least that range and precision; MPI returns the datatype of that kind. The choice
//! here is MPICH 4.0.2's (measured: `scripts`-style probes of `mpicc.mpich` programs):
//!
//! | call      | (p, r)                              | data as                        |
//! |-----------|-------------------------------------|--------------------------------|
//! | integer   | r <= 2, 4, 9, 18                    | `MPI_INTEGER1`, `2`, `4`, `8`  |
//! | real      | p <= 6 and r <= 37; p <= 15 and r <= 307 | `MPI_REAL4`, `MPI_REAL8`  |
//! | complex   | as real                             | `MPI_COMPLEX8`, `MPI_COMPLEX16`|
//!
//! (`MPI_UNDEFINED` for p or r asks nothing of it; MPICH offers no 10- or 16-byte real here
//! either.) No such type: `MPI_ERR_ARG` (MPICH's documented class; MPICH 4.0.2 itself
//! returns `MPI_ERR_OTHER`).
//!
//! **What the program gets.** As in MPICH, a new handle per distinct `(p, r)` that behaves as
//! the predefined type it stands for (same layout and leaves, so reductions and
//! `MPI_Type_match_size`-style uses work), whose envelope is `MPI_COMBINER_F90_INTEGER` /
//! `_REAL` / `_COMPLEX` with the arguments as contents (`[r]` or `[p, r]`, as given), and
//! whose name is empty. The same `(p, r)` gives the same handle again (the table keeps them),
//! and `MPI_Type_free` on one sets the caller's handle to `MPI_DATATYPE_NULL` but keeps the
//! type (MPI 4.0 §19.1.9: these are predefined, not freed).

use super::{Contents, TypeTable};
use crate::abi::*;
use crate::error::{MpiError, MpiResult};
use std::ffi::c_int;

/// Which of the three calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum F90Kind {
    Integer,
    Real,
    Complex,
}

impl F90Kind {
    fn combiner(self) -> c_int {
        match self {
            F90Kind::Integer => MPI_COMBINER_F90_INTEGER,
            F90Kind::Real => MPI_COMBINER_F90_REAL,
            F90Kind::Complex => MPI_COMBINER_F90_COMPLEX,
        }
    }
}

/// `MPI_UNDEFINED` (no requirement) as 0, which every kind meets.
fn wanted(v: c_int) -> c_int {
    if v == MPI_UNDEFINED {
        0
    } else {
        v
    }
}

/// The predefined type whose data a `kind` type of `(p, r)` is, if there is one.
pub(crate) fn base_type(kind: F90Kind, p: c_int, r: c_int) -> Option<MPI_Datatype> {
    let (p, r) = (wanted(p), wanted(r));
    match kind {
        F90Kind::Integer => match r {
            ..=2 => Some(MPI_INTEGER1),
            3..=4 => Some(MPI_INTEGER2),
            5..=9 => Some(MPI_INTEGER4),
            10..=18 => Some(MPI_INTEGER8),
            _ => None,
        },
        F90Kind::Real | F90Kind::Complex => {
            let single = p <= 6 && r <= 37;
            let double = p <= 15 && r <= 307;
            match (kind, single, double) {
                (F90Kind::Real, true, _) => Some(MPI_REAL4),
                (F90Kind::Real, false, true) => Some(MPI_REAL8),
                (F90Kind::Complex, true, _) => Some(MPI_COMPLEX8),
                (F90Kind::Complex, false, true) => Some(MPI_COMPLEX16),
                _ => None,
            }
        }
    }
}

/// The cache of the types made so far: `(kind, p, r)` as the program gave them -> handle.
pub(crate) type F90Types = std::collections::HashMap<(F90Kind, c_int, c_int), MPI_Datatype>;

impl TypeTable {
    /// The type `MPI_Type_create_f90_*` returns for `(p, r)` (`p` is unused for integers).
    pub(crate) fn f90(&mut self, kind: F90Kind, p: c_int, r: c_int) -> MpiResult<MPI_Datatype> {
        if let Some(&h) = self.f90.get(&(kind, p, r)) {
            return Ok(h);
        }
        let Some(base) = base_type(kind, p, r) else {
            let what = match kind {
                F90Kind::Integer => format!("an INTEGER kind with a decimal range of {r} digits"),
                F90Kind::Real => format!("a REAL kind with precision {p} and range {r}"),
                F90Kind::Complex => format!("a COMPLEX kind with precision {p} and range {r}"),
            };
            return Err(MpiError::arg(format!(
                "there is no {what} (the largest are INTEGER*8: range 18; REAL*8 / COMPLEX*16: precision 15, range 307; MPI_UNDEFINED asks nothing)"
            )));
        };
        let ints = match kind {
            F90Kind::Integer => vec![MPI_Count::from(r)],
            _ => vec![MPI_Count::from(p), MPI_Count::from(r)],
        };
        let mut ty = self.get(base)?.clone();
        ty.contents = Contents {
            combiner: kind.combiner(),
            ints,
            ..Contents::default()
        };
        ty.name = String::new();
        let h = self.insert(ty)?;
        self.f90.insert((kind, p, r), h);
        Ok(h)
    }

    /// Whether `dt` is a type `MPI_Type_create_f90_*` made (never freed).
    pub(crate) fn is_f90(&self, dt: MPI_Datatype) -> bool {
        self.f90.values().any(|&h| h == dt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_chosen_as_mpich_chooses_them() {
        let u = MPI_UNDEFINED;
        assert_eq!(base_type(F90Kind::Integer, 0, -1), Some(MPI_INTEGER1));
        assert_eq!(base_type(F90Kind::Integer, 0, 2), Some(MPI_INTEGER1));
        assert_eq!(base_type(F90Kind::Integer, 0, 3), Some(MPI_INTEGER2));
        assert_eq!(base_type(F90Kind::Integer, 0, 9), Some(MPI_INTEGER4));
        assert_eq!(base_type(F90Kind::Integer, 0, 18), Some(MPI_INTEGER8));
        assert_eq!(base_type(F90Kind::Integer, 0, 19), None);
        assert_eq!(base_type(F90Kind::Real, u, 37), Some(MPI_REAL4));
        assert_eq!(base_type(F90Kind::Real, u, 38), Some(MPI_REAL8));
        assert_eq!(base_type(F90Kind::Real, 7, u), Some(MPI_REAL8));
        assert_eq!(base_type(F90Kind::Real, 15, 307), Some(MPI_REAL8));
        assert_eq!(base_type(F90Kind::Real, 16, u), None);
        assert_eq!(base_type(F90Kind::Real, u, 308), None);
        assert_eq!(base_type(F90Kind::Complex, 6, 37), Some(MPI_COMPLEX8));
        assert_eq!(base_type(F90Kind::Complex, 6, 38), Some(MPI_COMPLEX16));
        assert_eq!(base_type(F90Kind::Complex, 34, u), None);
    }

    #[test]
    fn a_pair_gives_one_handle_with_the_f90_envelope() {
        let mut t = TypeTable::new();
        let a = t.f90(F90Kind::Real, 6, MPI_UNDEFINED).unwrap();
        assert_eq!(t.f90(F90Kind::Real, 6, MPI_UNDEFINED).unwrap(), a);
        assert_ne!(t.f90(F90Kind::Real, 5, MPI_UNDEFINED).unwrap(), a);
        let ty = t.get(a).unwrap();
        assert_eq!(ty.size(), 4);
        assert_eq!(ty.contents.combiner, MPI_COMBINER_F90_REAL);
        assert_eq!(ty.contents.ints, vec![6, MPI_Count::from(MPI_UNDEFINED)]);
        assert!(t.is_f90(a));
        assert_eq!(
            t.f90(F90Kind::Integer, 0, 40).unwrap_err().class,
            MPI_ERR_ARG
        );
    }
}
