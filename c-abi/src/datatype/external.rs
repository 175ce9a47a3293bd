//! The `external32` data representation (MPI 3.1 §13.5.2): a type's packed data converted
//! between this machine's representation and the portable one, for `MPI_Pack_external` /
//! `MPI_Unpack_external` and for files whose view says `"external32"`.
//!
//! ```text
//!   Datatype ──leaves──▶ External32 { one element's basic parts, in type-map order }
//!   native packed data (Datatype::pack) ◀──encode / decode──▶ external32 bytes
//! ```
//!
//! **The format.** Every basic value big-endian, with no padding and no header; integers two's
//! complement, floating point IEEE. The sizes are those of MPI 3.1 Table 13.2, checked against
//! what MPICH 4.0.2 (`MPI_Pack_external_size`, `MPI_Pack_external`) produces:
//!
//! - most types keep their size and are only byte-swapped (`MPI_INT` 4, `MPI_DOUBLE` 8, the
//!   complex types as two parts, `MPI_AINT` / `MPI_OFFSET` / `MPI_COUNT` 8, `MPI_C_BOOL` 1,
//!   `MPI_WCHAR` 4 (MPICH reports 2 for it but fails an internal assertion when it packs one,
//!   so no data of MPICH's can disagree); the padded pairs (`MPI_DOUBLE_INT`, ...) are their
//!   two parts, each converted (MPICH reports size 0 for them and aborts when packing them);
//! - `MPI_LONG` and `MPI_UNSIGNED_LONG` are 4 bytes in external32 but 8 in memory here: packing
//!   narrows them (a value that does not fit is `MPI_ERR_CONVERSION`, where MPICH silently
//!   keeps the low 4 bytes), unpacking sign- or zero-extends them, as MPICH does;
//! - `MPI_LONG_DOUBLE` (and the long double complex types) is the x87 80-bit format padded
//!   to 16 bytes in memory and IEEE binary128 (16 bytes) in external32, as MPICH converts it;
//!   from binary128 back to x87 the fraction is truncated to 63 bits (rounded toward zero).
//!   `MPI_REAL16` and `MPI_COMPLEX32` are binary128 in memory already (gfortran's `REAL(16)`).
//!
//! Conversions walk [`External32`]'s list of parts, one per basic value, element after
//! element. A type whose external32 size equals its native size (everything but the longs)
//! can be converted in place ([`External32::encode_in_place`]), which is what the file data
//! path does with the buffer it reads into or writes from.

use super::Datatype;
use crate::abi::*;
use crate::error::{MpiError, MpiResult};

/// One basic value of the data, as the conversion sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    /// `n` bytes, big-endian in external32 (1: as is).
    Swap(usize),
    /// A C `long` or `unsigned long`: 8 bytes in memory, 4 in external32.
    Narrow { signed: bool },
    /// A `long double`: x87 extended precision in 16 bytes in memory, binary128 in
    /// external32.
    Extended,
}

impl Part {
    fn native(self) -> usize {
        match self {
            Part::Swap(n) => n,
            Part::Narrow { .. } => 8,
            Part::Extended => 16,
        }
    }

    fn external(self) -> usize {
        match self {
            Part::Swap(n) => n,
            Part::Narrow { .. } => 4,
            Part::Extended => 16,
        }
    }
}

const S1: &[Part] = &[Part::Swap(1)];
const S2: &[Part] = &[Part::Swap(2)];
const S4: &[Part] = &[Part::Swap(4)];
const S8: &[Part] = &[Part::Swap(8)];
const S16: &[Part] = &[Part::Swap(16)];
const S4_S4: &[Part] = &[Part::Swap(4), Part::Swap(4)];
const S8_S8: &[Part] = &[Part::Swap(8), Part::Swap(8)];
const S16_S16: &[Part] = &[Part::Swap(16), Part::Swap(16)];
const LONG: &[Part] = &[Part::Narrow { signed: true }];
const ULONG: &[Part] = &[Part::Narrow { signed: false }];
#[cfg(target_arch = "x86_64")]
const LDOUBLE: &[Part] = &[Part::Extended];
#[cfg(target_arch = "x86_64")]
const LDOUBLE_2: &[Part] = &[Part::Extended, Part::Extended];
// Elsewhere (aarch64, ...) `long double` is binary128 already.
#[cfg(not(target_arch = "x86_64"))]
const LDOUBLE: &[Part] = S16;
#[cfg(not(target_arch = "x86_64"))]
const LDOUBLE_2: &[Part] = S16_S16;

/// The parts of one value of a predefined type (the types of the leaves).
fn parts_of(ty: MPI_Datatype) -> Option<&'static [Part]> {
    Some(match ty {
        MPI_CHAR | MPI_SIGNED_CHAR | MPI_UNSIGNED_CHAR | MPI_BYTE | MPI_PACKED | MPI_INT8_T
        | MPI_UINT8_T | MPI_C_BOOL | MPI_CXX_BOOL | MPI_CHARACTER | MPI_INTEGER1 => S1,
        MPI_SHORT | MPI_UNSIGNED_SHORT | MPI_INT16_T | MPI_UINT16_T | MPI_INTEGER2
        | MPIX_C_FLOAT16 => S2,
        MPI_WCHAR | MPI_INT | MPI_UNSIGNED | MPI_INT32_T | MPI_UINT32_T | MPI_FLOAT
        | MPI_LOGICAL | MPI_INTEGER | MPI_REAL | MPI_INTEGER4 | MPI_REAL4 => S4,
        MPI_LONG_LONG_INT
        | MPI_UNSIGNED_LONG_LONG
        | MPI_DOUBLE
        | MPI_INT64_T
        | MPI_UINT64_T
        | MPI_AINT
        | MPI_OFFSET
        | MPI_COUNT
        | MPI_DOUBLE_PRECISION
        | MPI_INTEGER8
        | MPI_REAL8 => S8,
        MPI_REAL16 => S16,
        MPI_LONG => LONG,
        MPI_UNSIGNED_LONG => ULONG,
        MPI_LONG_DOUBLE => LDOUBLE,
        MPI_C_FLOAT_COMPLEX | MPI_CXX_FLOAT_COMPLEX | MPI_COMPLEX | MPI_COMPLEX8 => S4_S4,
        MPI_C_DOUBLE_COMPLEX | MPI_CXX_DOUBLE_COMPLEX | MPI_DOUBLE_COMPLEX | MPI_COMPLEX16 => S8_S8,
        MPI_C_LONG_DOUBLE_COMPLEX | MPI_CXX_LONG_DOUBLE_COMPLEX => LDOUBLE_2,
        MPI_COMPLEX32 => S16_S16,
        MPI_2INT | MPI_FLOAT_INT | MPI_2INTEGER | MPI_2REAL => S4_S4,
        MPI_2DOUBLE_PRECISION => S8_S8,
        MPI_DOUBLE_INT => &[Part::Swap(8), Part::Swap(4)],
        MPI_LONG_INT => &[Part::Narrow { signed: true }, Part::Swap(4)],
        MPI_SHORT_INT => &[Part::Swap(2), Part::Swap(4)],
        MPI_LONG_DOUBLE_INT => {
            #[cfg(target_arch = "x86_64")]
            {
                &[Part::Extended, Part::Swap(4)]
            }
            #[cfg(not(target_arch = "x86_64"))]
            {
                &[Part::Swap(16), Part::Swap(4)]
            }
        }
        _ => return None,
    })
}

/// The external32 size of one value of a predefined type (`None`: not a type with data).
pub(crate) fn predefined_size(ty: MPI_Datatype) -> Option<usize> {
    parts_of(ty).map(|ps| ps.iter().map(|p| p.external()).sum())
}

/// How one element of a type converts: its basic values in type-map order.
#[derive(Debug, Clone)]
pub(crate) struct External32 {
    /// Runs of `n` values of one predefined type: (its parts, n).
    seq: Vec<(&'static [Part], usize)>,
    /// Bytes of one element's data in memory (packed) and in external32.
    native: usize,
    external: usize,
}

impl Datatype {
    /// How this type's data converts to and from external32: `MPI_ERR_TYPE` for a type with
    /// a basic type external32 has no format for (none of the predefined types today).
    pub(crate) fn external32(&self) -> MpiResult<External32> {
        let mut seq = Vec::with_capacity(self.leaves.len());
        let (mut native, mut external) = (0usize, 0usize);
        for leaf in self.leaves.iter() {
            let parts = parts_of(leaf.ty).ok_or_else(|| {
                MpiError::new(
                    MPI_ERR_TYPE,
                    format!(
                        "the datatype {:?} (0x{:08x}) has no external32 representation",
                        self.name, leaf.ty
                    ),
                )
            })?;
            let one_native: usize = parts.iter().map(|p| p.native()).sum();
            debug_assert_eq!(one_native, leaf.unit, "the parts cover the leaf's data");
            native += leaf.n * one_native;
            external += leaf.n * parts.iter().map(|p| p.external()).sum::<usize>();
            seq.push((parts, leaf.n));
        }
        Ok(External32 {
            seq,
            native,
            external,
        })
    }

    /// The sequence of predefined types of one element's data: (type, bytes of one value in
    /// memory, how many in a row), in type-map order (the "data items" of a user data
    /// representation's conversion functions).
    pub(crate) fn signature(&self) -> Vec<(MPI_Datatype, usize, usize)> {
        self.leaves.iter().map(|l| (l.ty, l.unit, l.n)).collect()
    }
}

/// Why a value cannot be converted.
#[cold]
fn does_not_fit(value: i128, signed: bool) -> MpiError {
    let ty = if signed {
        "MPI_LONG"
    } else {
        "MPI_UNSIGNED_LONG"
    };
    MpiError::new(
        MPI_ERR_CONVERSION,
        format!("the {ty} value {value} does not fit in the 4 bytes external32 gives it"),
    )
}

/// One value from memory to external32: `src` has `p.native()` bytes, `dst` `p.external()`.
fn encode_part(p: Part, src: &[u8], dst: &mut [u8]) -> MpiResult<()> {
    match p {
        Part::Swap(n) => {
            dst[..n].copy_from_slice(&src[..n]);
            if cfg!(target_endian = "little") {
                dst[..n].reverse();
            }
        }
        Part::Narrow { signed } => {
            let raw: [u8; 8] = src[..8].try_into().expect("8 bytes");
            let bytes = if signed {
                let v = i64::from_ne_bytes(raw);
                i32::try_from(v)
                    .map_err(|_| does_not_fit(v as i128, true))?
                    .to_be_bytes()
            } else {
                let v = u64::from_ne_bytes(raw);
                u32::try_from(v)
                    .map_err(|_| does_not_fit(v as i128, false))?
                    .to_be_bytes()
            };
            dst[..4].copy_from_slice(&bytes);
        }
        Part::Extended => {
            // x87: a 64-bit significand with an explicit integer bit, then sign and 15-bit
            // exponent (little-endian), then 6 bytes of padding. binary128: sign and the same
            // 15-bit exponent (same bias), then a 112-bit fraction without the integer bit.
            let significand = u64::from_le_bytes(src[..8].try_into().expect("8 bytes"));
            let sign_exp = u16::from_le_bytes(src[8..10].try_into().expect("2 bytes"));
            let fraction = (significand & (u64::MAX >> 1)) as u128;
            let quad = ((sign_exp as u128) << 112) | (fraction << 49);
            dst[..16].copy_from_slice(&quad.to_be_bytes());
        }
    }
    Ok(())
}

/// One value from external32 to memory: `src` has `p.external()` bytes, `dst` `p.native()`.
fn decode_part(p: Part, src: &[u8], dst: &mut [u8]) {
    match p {
        Part::Swap(n) => {
            dst[..n].copy_from_slice(&src[..n]);
            if cfg!(target_endian = "little") {
                dst[..n].reverse();
            }
        }
        Part::Narrow { signed } => {
            let raw: [u8; 4] = src[..4].try_into().expect("4 bytes");
            let wide = if signed {
                (i32::from_be_bytes(raw) as i64).to_ne_bytes()
            } else {
                (u32::from_be_bytes(raw) as u64).to_ne_bytes()
            };
            dst[..8].copy_from_slice(&wide);
        }
        Part::Extended => {
            let quad = u128::from_be_bytes(src[..16].try_into().expect("16 bytes"));
            let sign_exp = (quad >> 112) as u16;
            let fraction = ((quad >> 49) as u64) & (u64::MAX >> 1);
            // The integer bit is explicit in x87: 1 for every number but zero and subnormals.
            let integer = if sign_exp & 0x7fff != 0 {
                1u64 << 63
            } else {
                0
            };
            dst[..8].copy_from_slice(&(fraction | integer).to_le_bytes());
            dst[8..10].copy_from_slice(&sign_exp.to_le_bytes());
            dst[10..16].fill(0);
        }
    }
}

impl External32 {
    /// Bytes of one element's data in external32 (`MPI_Pack_external_size` of one).
    pub fn size(&self) -> usize {
        self.external
    }

    /// Whether the data has the same size in both representations (conversion in place).
    pub fn same_size(&self) -> bool {
        self.native == self.external
    }

    /// Calls `f` on the parts of the data, element after element, until it returns false
    /// (or at once if the type has no data).
    fn walk(&self, mut f: impl FnMut(Part) -> bool) {
        if self.native == 0 {
            return;
        }
        loop {
            for &(parts, n) in &self.seq {
                for _ in 0..n {
                    for &p in parts {
                        if !f(p) {
                            return;
                        }
                    }
                }
            }
        }
    }

    /// Converts the packed data of whole elements from memory (`native`) to external32
    /// (`out`, `native.len() / native_size() * size()` bytes).
    pub fn encode(&self, native: &[u8], out: &mut [u8]) -> MpiResult<()> {
        let (mut at, mut to, mut failed) = (0usize, 0usize, Ok(()));
        self.walk(|p| {
            if at + p.native() > native.len() {
                return false;
            }
            if let Err(e) = encode_part(p, &native[at..], &mut out[to..]) {
                failed = Err(e);
                return false;
            }
            at += p.native();
            to += p.external();
            true
        });
        failed
    }

    /// Converts external32 data of whole elements (`ext`) to packed data in memory (`out`,
    /// `ext.len() / size() * native_size()` bytes).
    pub fn decode(&self, ext: &[u8], out: &mut [u8]) {
        let (mut at, mut to) = (0usize, 0usize);
        self.walk(|p| {
            if at + p.external() > ext.len() {
                return false;
            }
            decode_part(p, &ext[at..], &mut out[to..]);
            at += p.external();
            to += p.native();
            true
        });
    }

    /// Converts packed data in memory to external32 where it lies, value by value as far as
    /// whole values go. Only for a type of [`External32::same_size`].
    pub fn encode_in_place(&self, data: &mut [u8]) {
        self.convert_in_place(data, |p, value, out| {
            encode_part(p, value, out).expect("only the narrowed longs fail, and they change size")
        });
    }

    /// Converts external32 data to packed data in memory where it lies, as far as whole
    /// values go. Only for a type of [`External32::same_size`].
    pub fn decode_in_place(&self, data: &mut [u8]) {
        self.convert_in_place(data, decode_part);
    }

    /// Runs `convert` on each whole value of `data` in turn, from a copy of it back into its
    /// place (the same size both ways).
    fn convert_in_place(&self, data: &mut [u8], convert: impl Fn(Part, &[u8], &mut [u8])) {
        assert!(
            self.same_size(),
            "conversion in place of a type that changes size"
        );
        let mut at = 0usize;
        self.walk(|p| {
            let n = p.native();
            if at + n > data.len() {
                return false;
            }
            let mut value = [0u8; 16];
            value[..n].copy_from_slice(&data[at..at + n]);
            convert(p, &value[..n], &mut data[at..at + n]);
            at += n;
            true
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::TypeTable;

    fn ext(t: &TypeTable, ty: MPI_Datatype) -> External32 {
        t.get(ty).unwrap().external32().unwrap()
    }

    #[test]
    fn sizes_follow_table_13_2_and_mpich() {
        let t = TypeTable::new();
        for (ty, size) in [
            (MPI_CHAR, 1),
            (MPI_SHORT, 2),
            (MPI_INT, 4),
            (MPI_LONG, 4),
            (MPI_UNSIGNED_LONG, 4),
            (MPI_LONG_LONG_INT, 8),
            (MPI_DOUBLE, 8),
            (MPI_LONG_DOUBLE, 16),
            (MPI_C_DOUBLE_COMPLEX, 16),
            (MPI_AINT, 8),
            (MPI_DOUBLE_INT, 12),
            (MPI_LONG_INT, 8),
            (MPI_SHORT_INT, 6),
        ] {
            assert_eq!(ext(&t, ty).size(), size, "0x{ty:08x}");
            assert_eq!(predefined_size(ty), Some(size));
        }
        assert!(!ext(&t, MPI_LONG).same_size());
        assert!(ext(&t, MPI_DOUBLE_INT).same_size());
    }

    #[test]
    fn values_become_big_endian_and_come_back() {
        let t = TypeTable::new();
        let e = ext(&t, MPI_INT);
        let mut data = 0x0102_0304i32.to_ne_bytes();
        e.encode_in_place(&mut data);
        assert_eq!(data, [1, 2, 3, 4]);
        e.decode_in_place(&mut data);
        assert_eq!(i32::from_ne_bytes(data), 0x0102_0304);

        let l = ext(&t, MPI_LONG);
        let mut native = Vec::new();
        native.extend_from_slice(&(-2i64).to_ne_bytes());
        native.extend_from_slice(&0x1122_3344i64.to_ne_bytes());
        let mut out = [0u8; 8];
        l.encode(&native, &mut out).unwrap();
        assert_eq!(out, [0xff, 0xff, 0xff, 0xfe, 0x11, 0x22, 0x33, 0x44]);
        let mut back = [0u8; 16];
        l.decode(&out, &mut back);
        assert_eq!(back.to_vec(), native);
        let err = l.encode(&(1i64 << 40).to_ne_bytes(), &mut out).unwrap_err();
        assert_eq!(err.class, MPI_ERR_CONVERSION);
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn long_double_becomes_binary128() {
        let t = TypeTable::new();
        let e = ext(&t, MPI_LONG_DOUBLE);
        // 1.5 in x87: significand 0xC000..., exponent 0x3fff.
        let mut x87 = [0u8; 16];
        x87[..8].copy_from_slice(&0xC000_0000_0000_0000u64.to_le_bytes());
        x87[8..10].copy_from_slice(&0x3fffu16.to_le_bytes());
        let mut data = x87;
        e.encode_in_place(&mut data);
        let mut want = [0u8; 16];
        want[0] = 0x3f;
        want[1] = 0xff;
        want[2] = 0x80;
        assert_eq!(data, want, "what MPICH packs for 1.5L");
        e.decode_in_place(&mut data);
        assert_eq!(data, x87);
    }
}
