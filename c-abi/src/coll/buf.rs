//! Buffers of collectives: a datatype's memory layout, captured once per call ([`Layout`]),
//! with packing and unpacking, and the bridge to the reduction operations.
//!
//! A schedule may outlive the call that made it (nonblocking collectives), and MPI lets the
//! program free a datatype while operations on it are pending, so a schedule does not keep
//! the datatype handle: it keeps this snapshot of what it needs (the shared type itself when
//! its data is not contiguous, for packing).

use crate::abi::*;
use crate::datatype::{Datatype, TypeTable};
use crate::error::MpiResult;
use crate::op::OpTable;
use std::sync::Arc;

/// How `count` elements of a datatype sit in memory.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    /// Bytes of data in one element.
    pub size: usize,
    pub extent: isize,
    pub true_lb: isize,
    pub true_extent: isize,
    /// The datatype, kept when its data is not contiguous (for packing); `None` when `count`
    /// elements are `count * size` contiguous bytes from `true_lb`.
    ty: Option<Arc<Datatype>>,
}

impl Layout {
    /// Plain bytes (the library's own packed buffers).
    pub const BYTES: Layout = Layout {
        size: 1,
        extent: 1,
        true_lb: 0,
        true_extent: 1,
        ty: None,
    };

    /// `n`-byte words (the library's own buffers of integers).
    pub fn words(n: usize) -> Layout {
        Layout {
            size: n,
            extent: n as isize,
            true_lb: 0,
            true_extent: n as isize,
            ty: None,
        }
    }

    /// The layout of `dt`: `MPI_ERR_TYPE` unless it is a valid, committed datatype.
    pub fn of(types: &TypeTable, dt: MPI_Datatype) -> MpiResult<Layout> {
        let t = types.committed(dt)?;
        Ok(Layout {
            size: t.size(),
            extent: t.extent(),
            true_lb: t.true_lb(),
            true_extent: t.true_extent(),
            ty: (!t.is_contiguous()).then(|| Arc::clone(t)),
        })
    }

    pub fn contiguous(&self) -> bool {
        self.ty.is_none()
    }

    /// Whether two layouts describe data the same way.
    pub fn same(&self, other: &Layout) -> bool {
        self.size == other.size
            && self.extent == other.extent
            && self.true_lb == other.true_lb
            && match (&self.ty, &other.ty) {
                (None, None) => true,
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                _ => false,
            }
    }

    /// Bytes of memory `count` elements cover from their first data byte.
    pub fn span(&self, count: usize) -> usize {
        if count == 0 {
            return 0;
        }
        (self.true_extent + (count as isize - 1) * self.extent).max(0) as usize
    }

    /// Address of element `i` of a buffer at `base`.
    pub fn at(&self, base: *const u8, i: usize) -> *const u8 {
        base.wrapping_offset(self.extent * i as isize)
    }

    pub fn at_mut(&self, base: *mut u8, i: usize) -> *mut u8 {
        base.wrapping_offset(self.extent * i as isize)
    }

    /// Where the data of a contiguous layout starts.
    pub fn data_start(&self, base: *const u8) -> *const u8 {
        base.wrapping_offset(self.true_lb)
    }

    /// Packs `count` elements at `base` into `dst` (`count * size` bytes).
    ///
    /// # Safety
    /// `base` holds `count` elements of this layout and `dst` has room for their data.
    pub unsafe fn pack(&self, base: *const u8, count: usize, dst: *mut u8) {
        match &self.ty {
            // SAFETY: the caller's contract; contiguous data starts at true_lb.
            None => unsafe { std::ptr::copy(self.data_start(base), dst, count * self.size) },
            // SAFETY: the caller's contract, which is the datatype's.
            Some(t) => unsafe { t.pack(base, count, dst) },
        }
    }

    /// Fills up to `count` elements at `base` from the first `bytes` packed bytes at `src`.
    ///
    /// # Safety
    /// `src` holds `bytes` bytes and `base` has room for `count` elements of this layout.
    pub unsafe fn unpack(&self, src: *const u8, bytes: usize, base: *mut u8, count: usize) {
        let bytes = bytes.min(count * self.size);
        match &self.ty {
            // SAFETY: the caller's contract.
            None => unsafe { std::ptr::copy(src, self.data_start(base).cast_mut(), bytes) },
            // SAFETY: the caller's contract, which is the datatype's.
            Some(t) => unsafe { t.unpack(src, bytes, base, count) },
        }
    }
}

/// Checks that `op` applies to `dt` (`MPI_ERR_OP`) and tells whether it commutes.
pub(crate) fn check_op(
    ops: &OpTable,
    types: &TypeTable,
    op: MPI_Op,
    dt: MPI_Datatype,
) -> MpiResult<bool> {
    crate::op::check(ops, types, op, dt)?;
    crate::op::is_commutative(ops, op)
}
