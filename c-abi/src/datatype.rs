//! Datatypes: what a `(buffer, count, datatype)` triple means in bytes, and `MPI_Type_size`.
//!
//! This issue has the predefined datatypes only, and each is one contiguous block of memory
//! per element, so a message is `count * extent` bytes taken straight from (or put straight
//! into) the user's buffer: [`message_bytes`]. Derived datatypes (the next issue) will give
//! non-contiguous layouts; they belong in this module, behind the same lookup.
//!
//! **Decoding without a search.** A predefined datatype's handle is `0x4c00SSII` (MPICH's
//! encoding): `SS` its size in bytes, `II` an index unique among the predefined types. The
//! table below is indexed by `II` and holds the size each index must come with, so a handle is
//! validated and decoded with a mask, a load and a compare (the fast path of every send and
//! receive). The value-and-index pairs for `MPI_MINLOC`/`MPI_MAXLOC` whose C struct has padding
//! (`MPI_DOUBLE_INT`, ...) are `0x8c00000I` and come from a second, five-entry table.
//!
//! **Pairs with padding.** `MPI_DOUBLE_INT` is `struct { double; int; }`: 12 bytes of data
//! (its `MPI_Type_size`, as in MPICH) in a 16-byte element. With contiguous transfers the
//! library moves the whole 16-byte element, padding included, so `MPI_Get_count` with such a
//! type counts 16-byte elements; only `MPI_Get_count(..., MPI_BYTE, ...)` on such a message
//! differs from MPICH (16 bytes per element instead of 12).

use crate::abi::*;
use crate::cptr::Out;
use crate::error::{MpiError, MpiResult};
use crate::export::mpi_fn;
use std::ffi::c_int;

/// What the library needs to know about a datatype.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TypeInfo {
    /// Bytes of data in one element (`MPI_Type_size`).
    pub size: usize,
    /// Bytes one element occupies in memory and in a message.
    pub extent: usize,
    /// Basic elements in one element (`MPI_Get_elements`): 2 for the pair types.
    pub parts: usize,
    /// Whether the parts all have one size (`MPI_2INT`), so that a partial element can be
    /// counted in parts.
    pub uniform: bool,
}

/// The predefined types of the form `0x4c00SSII`, with the number of basic elements in each.
const BUILTIN: &[(MPI_Datatype, usize)] = &[
    (MPI_CHAR, 1),
    (MPI_SIGNED_CHAR, 1),
    (MPI_UNSIGNED_CHAR, 1),
    (MPI_BYTE, 1),
    (MPI_WCHAR, 1),
    (MPI_SHORT, 1),
    (MPI_UNSIGNED_SHORT, 1),
    (MPI_INT, 1),
    (MPI_UNSIGNED, 1),
    (MPI_LONG, 1),
    (MPI_UNSIGNED_LONG, 1),
    (MPI_LONG_LONG_INT, 1),
    (MPI_UNSIGNED_LONG_LONG, 1),
    (MPI_FLOAT, 1),
    (MPI_DOUBLE, 1),
    (MPI_LONG_DOUBLE, 1),
    (MPI_PACKED, 1),
    (MPI_LB, 0),
    (MPI_UB, 0),
    (MPI_2INT, 2),
    (MPI_INT8_T, 1),
    (MPI_INT16_T, 1),
    (MPI_INT32_T, 1),
    (MPI_INT64_T, 1),
    (MPI_UINT8_T, 1),
    (MPI_UINT16_T, 1),
    (MPI_UINT32_T, 1),
    (MPI_UINT64_T, 1),
    (MPI_C_BOOL, 1),
    (MPI_C_FLOAT_COMPLEX, 1),
    (MPI_C_DOUBLE_COMPLEX, 1),
    (MPI_C_LONG_DOUBLE_COMPLEX, 1),
    (MPIX_C_FLOAT16, 1),
    (MPI_AINT, 1),
    (MPI_OFFSET, 1),
    (MPI_COUNT, 1),
    (MPI_CXX_BOOL, 1),
    (MPI_CXX_FLOAT_COMPLEX, 1),
    (MPI_CXX_DOUBLE_COMPLEX, 1),
    (MPI_CXX_LONG_DOUBLE_COMPLEX, 1),
    (MPI_CHARACTER, 1),
    (MPI_LOGICAL, 1),
    (MPI_INTEGER, 1),
    (MPI_REAL, 1),
    (MPI_DOUBLE_PRECISION, 1),
    (MPI_COMPLEX, 1),
    (MPI_DOUBLE_COMPLEX, 1),
    (MPI_2INTEGER, 2),
    (MPI_2REAL, 2),
    (MPI_2DOUBLE_PRECISION, 2),
    (MPI_INTEGER1, 1),
    (MPI_INTEGER2, 1),
    (MPI_INTEGER4, 1),
    (MPI_INTEGER8, 1),
    (MPI_REAL4, 1),
    (MPI_REAL8, 1),
    (MPI_REAL16, 1),
    (MPI_COMPLEX8, 1),
    (MPI_COMPLEX16, 1),
    (MPI_COMPLEX32, 1),
];

/// Handle bits shared by every type of [`BUILTIN`].
const BUILTIN_TAG: u32 = 0x4c00_0000;
const BUILTIN_TAG_MASK: u32 = 0xffff_0000;
/// Handle bits shared by the padded pair types.
const PAIR_TAG: u32 = 0x8c00_0000;

/// Per index `II`: the handle that index belongs to, and its basic elements (0 = no type).
const BY_INDEX: [(u32, u8); 256] = {
    let mut t = [(0u32, 0u8); 256];
    let mut i = 0;
    while i < BUILTIN.len() {
        let (h, parts) = BUILTIN[i];
        let h = h as u32;
        assert!(
            h & BUILTIN_TAG_MASK == BUILTIN_TAG,
            "a predefined type outside 0x4c00xxxx"
        );
        let idx = (h & 0xff) as usize;
        assert!(t[idx].0 == 0, "two predefined types share an index");
        t[idx] = (h, parts as u8);
        i += 1;
    }
    t
};

/// The padded pairs `0x8c00000I`, indexed by `I`: (size, extent).
const PAIRS: [(usize, usize); 5] = [
    (8, 8),   // MPI_FLOAT_INT:       float, int
    (12, 16), // MPI_DOUBLE_INT:      double, int, 4 bytes of padding
    (12, 16), // MPI_LONG_INT:        long, int, padding
    (6, 8),   // MPI_SHORT_INT:       short, 2 bytes of padding, int
    (20, 32), // MPI_LONG_DOUBLE_INT: long double, int, padding
];

/// Decodes a datatype handle: `MPI_ERR_TYPE` unless it is a datatype of this library.
#[inline(always)]
pub(crate) fn lookup(datatype: MPI_Datatype) -> MpiResult<TypeInfo> {
    let h = datatype as u32;
    if h & BUILTIN_TAG_MASK == BUILTIN_TAG {
        let (owner, parts) = BY_INDEX[(h & 0xff) as usize];
        if owner == h && owner != 0 {
            let size = ((h >> 8) & 0xff) as usize;
            return Ok(TypeInfo {
                size,
                extent: size,
                parts: parts as usize,
                uniform: true,
            });
        }
    } else if h.wrapping_sub(PAIR_TAG) < PAIRS.len() as u32 {
        let (size, extent) = PAIRS[(h - PAIR_TAG) as usize];
        return Ok(TypeInfo {
            size,
            extent,
            parts: 2,
            uniform: false,
        });
    }
    Err(invalid_type(datatype))
}

#[cold]
fn invalid_type(datatype: MPI_Datatype) -> MpiError {
    let detail = if datatype == MPI_DATATYPE_NULL {
        "the datatype is MPI_DATATYPE_NULL".to_string()
    } else {
        format!("0x{datatype:08x} is not a datatype (this library has the predefined datatypes of mpi.h)")
    };
    MpiError::new(MPI_ERR_TYPE, detail)
}

/// The length in bytes of a message of `count` elements of `datatype`: `MPI_ERR_COUNT` for a
/// negative count, `MPI_ERR_TYPE` for an invalid type.
#[inline(always)]
pub(crate) fn message_bytes(count: c_int, datatype: MPI_Datatype) -> MpiResult<usize> {
    if count < 0 {
        return Err(negative_count(count));
    }
    Ok(count as usize * lookup(datatype)?.extent)
}

#[cold]
fn negative_count(count: c_int) -> MpiError {
    MpiError::new(
        MPI_ERR_COUNT,
        format!("the count is {count}; it must be 0 or more"),
    )
}

impl TypeInfo {
    /// How many whole elements `bytes` hold (`MPI_Get_count`), or `None` (`MPI_UNDEFINED`).
    // (`usize::is_multiple_of` is newer than the workspace's rust-version.)
    #[allow(clippy::manual_is_multiple_of)]
    pub fn count_in(&self, bytes: usize) -> Option<usize> {
        if self.extent == 0 {
            return (bytes == 0).then_some(0);
        }
        (bytes % self.extent == 0).then(|| bytes / self.extent)
    }

    /// How many basic elements `bytes` hold (`MPI_Get_elements`), or `None`.
    #[allow(clippy::manual_is_multiple_of)]
    pub fn elements_in(&self, bytes: usize) -> Option<usize> {
        if self.parts == 0 {
            return Some(0);
        }
        if let Some(n) = self.count_in(bytes) {
            return Some(n * self.parts);
        }
        let part = self.extent / self.parts;
        (self.uniform && bytes % part == 0).then(|| bytes / part)
    }
}

mpi_fn! {
    /// `MPI_Type_size`: bytes of data in one element of `datatype`.
    fn MPI_Type_size / PMPI_Type_size(datatype: MPI_Datatype, size: *mut c_int) |st| {
        st.runtime()?;
        let info = lookup(datatype)?;
        Out::new(size, "size")?.set(info.size as c_int);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Type_size_x`: `MPI_Type_size` as an `MPI_Count`.
    fn MPI_Type_size_x / PMPI_Type_size_x(datatype: MPI_Datatype, size: *mut MPI_Count) |st| {
        st.runtime()?;
        let info = lookup(datatype)?;
        Out::new(size, "size")?.set(info.size as MPI_Count);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_predefined_type_decodes_to_its_size() {
        for &(h, parts) in BUILTIN {
            let info = lookup(h).unwrap();
            assert_eq!(info.size, ((h as u32 >> 8) & 0xff) as usize, "0x{h:08x}");
            assert_eq!(info.parts, parts);
        }
        assert_eq!(lookup(MPI_INT).unwrap().size, 4);
        assert_eq!(lookup(MPI_LONG_DOUBLE).unwrap().size, 16);
        assert_eq!(lookup(MPI_C_LONG_DOUBLE_COMPLEX).unwrap().size, 32);
        let di = lookup(MPI_DOUBLE_INT).unwrap();
        assert_eq!((di.size, di.extent), (12, 16));
        assert_eq!(lookup(MPI_LONG_DOUBLE_INT).unwrap().extent, 32);
    }

    #[test]
    fn invalid_handles_are_refused() {
        for h in [
            MPI_DATATYPE_NULL,
            0,
            -1,
            0x4c00_0405 + 0x100,
            0x4c00_00ff,
            0x8c00_0005u32 as i32,
            MPI_COMM_WORLD,
        ] {
            assert_eq!(lookup(h).unwrap_err().class, MPI_ERR_TYPE, "0x{h:08x}");
        }
        assert_eq!(lookup(MPI_INTEGER16).unwrap_err().class, MPI_ERR_TYPE);
    }

    #[test]
    fn message_length_and_counts() {
        assert_eq!(message_bytes(3, MPI_DOUBLE).unwrap(), 24);
        assert_eq!(
            message_bytes(-1, MPI_DOUBLE).unwrap_err().class,
            MPI_ERR_COUNT
        );
        let int = lookup(MPI_INT).unwrap();
        assert_eq!(int.count_in(12), Some(3));
        assert_eq!(int.count_in(13), None);
        let two = lookup(MPI_2INT).unwrap();
        assert_eq!(two.count_in(12), None);
        assert_eq!(two.elements_in(12), Some(3));
        assert_eq!(two.elements_in(16), Some(4));
        let di = lookup(MPI_DOUBLE_INT).unwrap();
        assert_eq!(di.count_in(32), Some(2));
        assert_eq!(di.elements_in(32), Some(4));
        assert_eq!(di.elements_in(24), None);
        let lb = lookup(MPI_LB).unwrap();
        assert_eq!(
            (lb.count_in(0), lb.count_in(4), lb.elements_in(4)),
            (Some(0), None, Some(0))
        );
    }
}
