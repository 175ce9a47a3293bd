//! Counts and displacements in the two forms of MPI's functions: `int` and large (`_c`).
//!
//! MPI 4.0 gives most functions that take a count a twin whose name ends in `_c`
//! (`MPI_Send_c`): its counts are `MPI_Count`, and its displacement arrays (`MPI_Gatherv_c`'s
//! `displs`, `MPI_Type_indexed_c`'s) are `MPI_Aint`, so a message, a buffer or a file access
//! can pass 2 GiB elements. Both forms are one operation here:
//!
//! ```text
//!   MPI_Send(int count)  ──┐  mpi_fn! ... large MPI_Send_c / PMPI_Send_c where [Count = ...]
//!   MPI_Send_c(MPI_Count) ─┴─▶ one body: MPI_Count::from(count) ─▶ args::send_op(MPI_Count)
//! ```
//!
//! * **Scalars in.** The internals take `MPI_Count` (or `usize` once checked non-negative);
//!   an entry point widens with `MPI_Count::from(count)`, which is the identity in the `_c`
//!   form and a sign extension in the int form (`mpi_fn!`'s large form writes both from one
//!   body: see [`crate::runtime::export`]).
//! * **Arrays in.** [`CountArray`] is the caller's array of either width behind one type;
//!   the internals read entries as `MPI_Count` through it and never see the width.
//! * **Scalars out.** [`CountOut`] narrows a result for the int form: a value an `int` cannot
//!   hold becomes `MPI_UNDEFINED`, as MPI says for `MPI_Get_count`, `MPI_Get_elements` and
//!   `MPI_Type_size`; the `_c` form gets the value itself.
//!
//! `MPI_Count`, `MPI_Aint` and `MPI_Offset` are all `long` (64 bits) in MPICH's ABI, so one
//! wide type serves counts and displacements alike.

use crate::abi::{MPI_Count, MPI_UNDEFINED};
use crate::error::MpiResult;
use std::ffi::c_int;

/// A count or size written back to the caller, in the width of the function's form.
pub(crate) trait CountOut: Copy {
    /// Whether this is the large-count (`_c`) form's width.
    const LARGE: bool;
    /// `n` in this width: `MPI_UNDEFINED` if an `int` cannot hold it.
    fn from_count(n: MPI_Count) -> Self;
}

impl CountOut for c_int {
    const LARGE: bool = false;
    #[inline(always)]
    fn from_count(n: MPI_Count) -> c_int {
        c_int::try_from(n).unwrap_or(MPI_UNDEFINED)
    }
}

impl CountOut for MPI_Count {
    const LARGE: bool = true;
    #[inline(always)]
    fn from_count(n: MPI_Count) -> MPI_Count {
        n
    }
}

/// An array argument of counts or displacements as the caller passed it: `int`s (the int
/// form) or `MPI_Count`/`MPI_Aint`s (the `_c` form).
#[derive(Clone, Copy, Debug)]
pub(crate) enum CountArray {
    Int(*const c_int),
    Wide(*const MPI_Count),
}

impl From<*const c_int> for CountArray {
    fn from(p: *const c_int) -> CountArray {
        CountArray::Int(p)
    }
}

impl From<*const MPI_Count> for CountArray {
    fn from(p: *const MPI_Count) -> CountArray {
        CountArray::Wide(p)
    }
}

impl From<*mut c_int> for CountArray {
    fn from(p: *mut c_int) -> CountArray {
        CountArray::Int(p.cast_const())
    }
}

impl From<*mut MPI_Count> for CountArray {
    fn from(p: *mut MPI_Count) -> CountArray {
        CountArray::Wide(p.cast_const())
    }
}

impl CountArray {
    pub fn is_null(self) -> bool {
        match self {
            CountArray::Int(p) => p.is_null(),
            CountArray::Wide(p) => p.is_null(),
        }
    }

    /// The first `n` entries, widened; `MPI_ERR_ARG` naming `what` if the array is NULL (and
    /// `n > 0`: an empty array may be NULL, as for [`crate::cptr::input_array`]).
    ///
    /// The caller's array must have `n` entries (MPI's contract for the argument).
    pub fn read(self, n: usize, what: &str) -> MpiResult<Vec<MPI_Count>> {
        if self.is_null() {
            if n == 0 {
                return Ok(Vec::new());
            }
            return Err(crate::cptr::null_argument(what));
        }
        // SAFETY: not NULL, and the caller's array has `n` entries (see above).
        Ok(match self {
            CountArray::Int(p) => unsafe { std::slice::from_raw_parts(p, n) }
                .iter()
                .map(|&v| MPI_Count::from(v))
                .collect(),
            CountArray::Wide(p) => unsafe { std::slice::from_raw_parts(p, n) }.to_vec(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int_results_that_do_not_fit_are_undefined() {
        assert_eq!(c_int::from_count(7), 7);
        assert_eq!(c_int::from_count(1 << 31), MPI_UNDEFINED);
        assert_eq!(c_int::from_count(-(1 << 40)), MPI_UNDEFINED);
        assert_eq!(MPI_Count::from_count(1 << 40), 1 << 40);
    }

    #[test]
    fn arrays_of_either_width_read_the_same() {
        let narrow: [c_int; 3] = [1, -2, 3];
        let wide: [MPI_Count; 3] = [1, -2, 3];
        let a = CountArray::from(narrow.as_ptr()).read(3, "counts").unwrap();
        let b = CountArray::from(wide.as_ptr()).read(3, "counts").unwrap();
        assert_eq!(a, b);
        let null = CountArray::from(std::ptr::null::<c_int>());
        assert!(null.read(0, "counts").unwrap().is_empty());
        assert_eq!(
            null.read(2, "counts").unwrap_err().class,
            crate::abi::MPI_ERR_ARG
        );
    }
}
