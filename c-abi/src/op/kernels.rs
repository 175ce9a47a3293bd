//! The predefined operations as kernels: one tight loop per (operation, element type).
//!
//! ```text
//!   (MPI_SUM, MPI_DOUBLE) ──kernel()──▶ sum::<f64>   inout[i] = in[i] + inout[i], i < n
//!   (MPI_MAXLOC, MPI_DOUBLE_INT) ──▶ loc::<f64, i32, 16, 8, true>
//! ```
//!
//! **Monomorphized, never a call per element.** Each kernel is a generic function instantiated
//! for one element type; the operation on two elements is a trait method that inlines into the
//! loop, so `sum::<f64>` is a plain loop the compiler vectorizes (it checks at run time that
//! the two buffers do not overlap, then runs the SIMD body). Elements are read and written
//! unaligned: a buffer described by a derived datatype may place a `double` anywhere, and on
//! x86-64 an unaligned access costs nothing when the data happens to be aligned.
//!
//! **Element types.** The C and Fortran integers are Rust's integers (`char` is signed on
//! x86-64); `float`/`double` are `f32`/`f64`. The others need more:
//! * `long double` ([`F80`]): x87 80-bit extended precision, stored in 16 bytes. Rust has no
//!   such type, so its arithmetic and comparisons are a few x87 instructions (inline assembly)
//!   on the value in memory, with exactly the rounding C's `long double` has.
//! * Fortran `REAL*16` (`MPI_REAL16`, [`F128`]): IEEE binary128, as gfortran has it. Its `+`
//!   and `*` are the compiler runtime's soft-float routines (`__addtf3`, `__multf3`, which
//!   every Rust and C program links), called from a few instructions of inline assembly
//!   because Rust cannot yet pass a 128-bit float in an SSE register; its comparisons are done
//!   on the bits.
//! * `MPIX_C_FLOAT16` ([`F16`]): IEEE binary16, computed in `f32` and rounded back, which
//!   gives the correctly rounded result for `+` and `*` (`f32` has the `2*11+2` bits of
//!   significand that takes, so the double rounding is harmless), as C's `_Float16` does
//!   without hardware support.
//! * Complex numbers ([`Complex`]): pairs of reals; the product is the textbook formula, as
//!   MPICH computes it.
//!
//! **Semantics, as MPICH's.** `MPI_MAX`/`MPI_MIN` keep `inout` unless `in` is strictly
//! greater/smaller (so a NaN in `inout` stays). Integer `MPI_SUM`/`MPI_PROD` wrap. The logical
//! operations treat nonzero as true and produce 1 or 0 (Fortran `LOGICAL` and `_Bool`
//! included). `MPI_MAXLOC`/`MPI_MINLOC` take the pair with the larger/smaller value, and on
//! equal values the smaller index.

use std::arch::asm;

/// `inout[i] = in[i] (op) inout[i]` for `n` elements laid out one after another (for the
/// value-and-index pairs, one pair stride apart).
///
/// # Safety
/// `inp` is readable and `inout` readable and writable for `n` elements; they do not overlap.
pub(crate) type Kernel = unsafe fn(inp: *const u8, inout: *mut u8, n: usize);

/// The predefined operations that compute something (`MPI_REPLACE` and `MPI_NO_OP` only move
/// bytes, see the parent module).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Builtin {
    Max,
    Min,
    Sum,
    Prod,
    Land,
    Band,
    Lor,
    Bor,
    Lxor,
    Bxor,
    Minloc,
    Maxloc,
}

/// What a predefined datatype holds, as far as the operations are concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    F16,
    F32,
    F64,
    F80,
    F128,
    C32,
    C64,
    C80,
    /// `MPI_BYTE`: bitwise operations only.
    Byte,
    /// `MPI_C_BOOL`, `MPI_CXX_BOOL` (one byte): logical operations only.
    Bool,
    /// Fortran `LOGICAL` (a 4-byte integer): logical operations only.
    Logical,
    /// A value-and-index pair for `MPI_MINLOC`/`MPI_MAXLOC`.
    Pair(Pair),
}

/// The value-and-index pair types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pair {
    /// `MPI_2INT`, `MPI_2INTEGER`
    IntInt,
    /// `MPI_FLOAT_INT`
    FloatInt,
    /// `MPI_DOUBLE_INT`
    DoubleInt,
    /// `MPI_LONG_INT`
    LongInt,
    /// `MPI_SHORT_INT`
    ShortInt,
    /// `MPI_LONG_DOUBLE_INT`
    LongDoubleInt,
    /// `MPI_2REAL`
    RealReal,
    /// `MPI_2DOUBLE_PRECISION`
    DoubleDouble,
}

/// How a pair is laid out: as the C struct in a user's buffer, or packed (value then index,
/// no padding), as [`crate::datatype::Datatype::pack`] leaves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layout {
    Natural,
    Packed,
}

/// The kernel of `op` on elements of `kind` laid out as `layout` says, or `None` if the
/// operation is not defined on that type (the caller's `MPI_ERR_OP`).
pub(crate) fn kernel(op: Builtin, kind: Kind, layout: Layout) -> Option<Kernel> {
    match kind {
        Kind::I8 => integer::<i8>(op),
        Kind::I16 => integer::<i16>(op),
        Kind::I32 => integer::<i32>(op),
        Kind::I64 => integer::<i64>(op),
        Kind::U8 => integer::<u8>(op),
        Kind::U16 => integer::<u16>(op),
        Kind::U32 => integer::<u32>(op),
        Kind::U64 => integer::<u64>(op),
        Kind::F16 => floating::<F16>(op),
        Kind::F32 => floating::<f32>(op),
        Kind::F64 => floating::<f64>(op),
        Kind::F80 => match op {
            Builtin::Sum => Some(x87_in_place::<false>),
            Builtin::Prod => Some(x87_in_place::<true>),
            _ => floating::<F80>(op),
        },
        Kind::F128 => floating::<F128>(op),
        Kind::C32 => complex::<Complex<f32>>(op),
        Kind::C64 => complex::<Complex<f64>>(op),
        Kind::C80 => complex::<Complex<F80>>(op),
        Kind::Byte => bitwise::<u8>(op),
        Kind::Bool => logical::<u8>(op),
        Kind::Logical => logical::<i32>(op),
        Kind::Pair(p) => pair(op, p, layout),
    }
}

/// The size in bytes of one element of `kind` in `layout` (the stride of its kernel).
pub(crate) fn stride(kind: Kind, layout: Layout) -> usize {
    match kind {
        Kind::I8 | Kind::U8 | Kind::Byte | Kind::Bool => 1,
        Kind::I16 | Kind::U16 | Kind::F16 => 2,
        Kind::I32 | Kind::U32 | Kind::F32 | Kind::Logical => 4,
        Kind::I64 | Kind::U64 | Kind::F64 | Kind::C32 => 8,
        Kind::F80 | Kind::F128 | Kind::C64 => 16,
        Kind::C80 => 32,
        Kind::Pair(p) => {
            let (natural, packed) = match p {
                Pair::IntInt | Pair::FloatInt | Pair::RealReal => (8, 8),
                Pair::DoubleInt | Pair::LongInt => (16, 12),
                Pair::ShortInt => (8, 6),
                Pair::LongDoubleInt => (32, 20),
                Pair::DoubleDouble => (16, 16),
            };
            match layout {
                Layout::Natural => natural,
                Layout::Packed => packed,
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// What an element type can do.

/// `+` and `*` (wrapping for integers).
pub(crate) trait Arith: Copy {
    fn add(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
}

/// `>`, `<` and `==` as C computes them (false when a NaN is involved).
pub(crate) trait Ordered: Copy {
    fn gt(self, o: Self) -> bool;
    fn lt(self, o: Self) -> bool;
    fn eq(self, o: Self) -> bool;
}

/// Truth values: nonzero is true, true is 1.
pub(crate) trait Truth: Copy {
    fn truth(self) -> bool;
    fn from_truth(b: bool) -> Self;
}

/// `&`, `|`, `^`.
pub(crate) trait Bits: Copy {
    fn and(self, o: Self) -> Self;
    fn or(self, o: Self) -> Self;
    fn xor(self, o: Self) -> Self;
}

macro_rules! integer_element {
    ($($t:ty),*) => {$(
        impl Arith for $t {
            #[inline(always)]
            fn add(self, o: Self) -> Self { self.wrapping_add(o) }
            #[inline(always)]
            fn mul(self, o: Self) -> Self { self.wrapping_mul(o) }
        }
        impl Ordered for $t {
            #[inline(always)]
            fn gt(self, o: Self) -> bool { self > o }
            #[inline(always)]
            fn lt(self, o: Self) -> bool { self < o }
            #[inline(always)]
            fn eq(self, o: Self) -> bool { self == o }
        }
        impl Truth for $t {
            #[inline(always)]
            fn truth(self) -> bool { self != 0 }
            #[inline(always)]
            fn from_truth(b: bool) -> Self { b as $t }
        }
        impl Bits for $t {
            #[inline(always)]
            fn and(self, o: Self) -> Self { self & o }
            #[inline(always)]
            fn or(self, o: Self) -> Self { self | o }
            #[inline(always)]
            fn xor(self, o: Self) -> Self { self ^ o }
        }
    )*};
}
integer_element!(i8, i16, i32, i64, u8, u16, u32, u64);

macro_rules! float_element {
    ($($t:ty),*) => {$(
        impl Arith for $t {
            #[inline(always)]
            fn add(self, o: Self) -> Self { self + o }
            #[inline(always)]
            fn mul(self, o: Self) -> Self { self * o }
        }
        impl Ordered for $t {
            #[inline(always)]
            fn gt(self, o: Self) -> bool { self > o }
            #[inline(always)]
            fn lt(self, o: Self) -> bool { self < o }
            #[inline(always)]
            fn eq(self, o: Self) -> bool { self == o }
        }
        impl Truth for $t {
            #[inline(always)]
            fn truth(self) -> bool { self != 0.0 }
            #[inline(always)]
            fn from_truth(b: bool) -> Self { if b { 1.0 } else { 0.0 } }
        }
    )*};
}
float_element!(f32, f64);

// ---------------------------------------------------------------------------------------------
// The kernels.

/// Applies `f(in, inout)` element by element.
///
/// # Safety
/// As for [`Kernel`], with elements of type `T`.
#[inline(always)]
unsafe fn zip<T: Copy>(inp: *const u8, inout: *mut u8, n: usize, f: impl Fn(T, T) -> T) {
    let a = inp.cast::<T>();
    let b = inout.cast::<T>();
    for i in 0..n {
        // SAFETY: i < n, and both buffers hold n elements (the kernel's contract); unaligned
        // accesses are allowed for any address.
        unsafe {
            let x = a.add(i).read_unaligned();
            let y = b.add(i).read_unaligned();
            b.add(i).write_unaligned(f(x, y));
        }
    }
}

macro_rules! kernels {
    ($($name:ident<$bound:ident>: |$a:ident, $b:ident| $e:expr;)*) => {$(
        /// # Safety
        /// As for [`Kernel`].
        unsafe fn $name<T: $bound>(inp: *const u8, inout: *mut u8, n: usize) {
            // SAFETY: the kernel's contract is passed on.
            unsafe { zip::<T>(inp, inout, n, |$a, $b| $e) }
        }
    )*};
}

kernels! {
    max<Ordered>: |a, b| if a.gt(b) { a } else { b };
    min<Ordered>: |a, b| if a.lt(b) { a } else { b };
    sum<Arith>: |a, b| a.add(b);
    prod<Arith>: |a, b| a.mul(b);
    land<Truth>: |a, b| T::from_truth(a.truth() & b.truth());
    lor<Truth>: |a, b| T::from_truth(a.truth() | b.truth());
    lxor<Truth>: |a, b| T::from_truth(a.truth() ^ b.truth());
    band<Bits>: |a, b| a.and(b);
    bor<Bits>: |a, b| a.or(b);
    bxor<Bits>: |a, b| a.xor(b);
}

fn integer<T: Arith + Ordered + Truth + Bits>(op: Builtin) -> Option<Kernel> {
    match op {
        Builtin::Band => Some(band::<T>),
        Builtin::Bor => Some(bor::<T>),
        Builtin::Bxor => Some(bxor::<T>),
        _ => floating::<T>(op),
    }
}

fn floating<T: Arith + Ordered + Truth>(op: Builtin) -> Option<Kernel> {
    match op {
        Builtin::Max => Some(max::<T>),
        Builtin::Min => Some(min::<T>),
        _ => complex::<T>(op).or_else(|| logical::<T>(op)),
    }
}

fn complex<T: Arith>(op: Builtin) -> Option<Kernel> {
    match op {
        Builtin::Sum => Some(sum::<T>),
        Builtin::Prod => Some(prod::<T>),
        _ => None,
    }
}

fn logical<T: Truth>(op: Builtin) -> Option<Kernel> {
    match op {
        Builtin::Land => Some(land::<T>),
        Builtin::Lor => Some(lor::<T>),
        Builtin::Lxor => Some(lxor::<T>),
        _ => None,
    }
}

fn bitwise<T: Bits>(op: Builtin) -> Option<Kernel> {
    match op {
        Builtin::Band => Some(band::<T>),
        Builtin::Bor => Some(bor::<T>),
        Builtin::Bxor => Some(bxor::<T>),
        _ => None,
    }
}

/// `MPI_MAXLOC` (`MAX`) or `MPI_MINLOC` on pairs of a `V` at offset 0 and an `I` at `IDX`,
/// `STRIDE` bytes apart. Only the value and the index are written, never the padding.
///
/// # Safety
/// As for [`Kernel`], with elements of `STRIDE` bytes.
unsafe fn loc<V: Ordered, I: Ordered, const STRIDE: usize, const IDX: usize, const MAX: bool>(
    inp: *const u8,
    inout: *mut u8,
    n: usize,
) {
    for k in 0..n {
        // SAFETY: pair k lies within both buffers (k < n, the kernel's contract), its value at
        // offset 0 and its index at IDX; unaligned accesses are allowed for any address.
        unsafe {
            let a = inp.add(k * STRIDE);
            let b = inout.add(k * STRIDE);
            let (av, bv) = (
                a.cast::<V>().read_unaligned(),
                b.cast::<V>().read_unaligned(),
            );
            let ai = a.add(IDX).cast::<I>().read_unaligned();
            let bi = b.add(IDX).cast::<I>().read_unaligned();
            let better = if MAX { av.gt(bv) } else { av.lt(bv) };
            if better {
                b.cast::<V>().write_unaligned(av);
                b.add(IDX).cast::<I>().write_unaligned(ai);
            } else if av.eq(bv) && ai.lt(bi) {
                b.add(IDX).cast::<I>().write_unaligned(ai);
            }
        }
    }
}

/// `MPI_MAXLOC` and `MPI_MINLOC` on `V`-and-`I` pairs with the index at `IDX` and the given
/// strides of the two layouts.
fn loc_pair<V: Ordered, I: Ordered, const NAT: usize, const PACKED: usize, const IDX: usize>(
    op: Builtin,
    layout: Layout,
) -> Option<Kernel> {
    Some(match (op, layout) {
        (Builtin::Maxloc, Layout::Natural) => loc::<V, I, NAT, IDX, true>,
        (Builtin::Minloc, Layout::Natural) => loc::<V, I, NAT, IDX, false>,
        (Builtin::Maxloc, Layout::Packed) => loc::<V, I, PACKED, IDX, true>,
        (Builtin::Minloc, Layout::Packed) => loc::<V, I, PACKED, IDX, false>,
        _ => return None,
    })
}

fn pair(op: Builtin, p: Pair, layout: Layout) -> Option<Kernel> {
    match p {
        Pair::IntInt => loc_pair::<i32, i32, 8, 8, 4>(op, layout),
        Pair::FloatInt => loc_pair::<f32, i32, 8, 8, 4>(op, layout),
        Pair::DoubleInt => loc_pair::<f64, i32, 16, 12, 8>(op, layout),
        Pair::LongInt => loc_pair::<i64, i32, 16, 12, 8>(op, layout),
        // struct { short; int; }: the int is at 4 in memory, at 2 when packed.
        Pair::ShortInt => match layout {
            Layout::Natural => loc_pair::<i16, i32, 8, 8, 4>(op, layout),
            Layout::Packed => loc_pair::<i16, i32, 6, 6, 2>(op, layout),
        },
        Pair::LongDoubleInt => loc_pair::<F80, i32, 32, 20, 16>(op, layout),
        Pair::RealReal => loc_pair::<f32, f32, 8, 8, 4>(op, layout),
        Pair::DoubleDouble => loc_pair::<f64, f64, 16, 16, 8>(op, layout),
    }
}

// ---------------------------------------------------------------------------------------------
// Complex numbers.

/// A complex number as C and Fortran store it: real part, then imaginary part.
#[derive(Debug, Clone, Copy, PartialEq)]
#[repr(C)]
pub(crate) struct Complex<T> {
    pub re: T,
    pub im: T,
}

/// The real types complex numbers are made of: `Arith` plus subtraction.
pub(crate) trait Real: Arith {
    fn sub(self, o: Self) -> Self;
}

impl Real for f32 {
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        self - o
    }
}

impl Real for f64 {
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        self - o
    }
}

impl<T: Real> Arith for Complex<T> {
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        Complex {
            re: self.re.add(o.re),
            im: self.im.add(o.im),
        }
    }
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        Complex {
            re: self.re.mul(o.re).sub(self.im.mul(o.im)),
            im: self.re.mul(o.im).add(self.im.mul(o.re)),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// binary16.

/// An IEEE binary16 value (`MPIX_C_FLOAT16`, C's `_Float16`), by its bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(transparent)]
pub(crate) struct F16(pub u16);

impl F16 {
    /// The exact `f32` of the same value.
    #[inline(always)]
    pub fn to_f32(self) -> f32 {
        let h = self.0 as u32;
        let sign = (h & 0x8000) << 16;
        let exp = (h >> 10) & 0x1f;
        let man = h & 0x3ff;
        match exp {
            0 => {
                // Zero or subnormal: man * 2^-24, exact in f32.
                let v = man as f32 * f32::from_bits(0x3380_0000);
                f32::from_bits(v.to_bits() | sign)
            }
            31 => f32::from_bits(sign | 0x7f80_0000 | (man << 13)),
            _ => f32::from_bits(sign | ((exp + 112) << 23) | (man << 13)),
        }
    }

    /// `f` rounded to the nearest binary16 (ties to even); NaN stays NaN.
    #[inline(always)]
    pub fn from_f32(f: f32) -> F16 {
        let x = f.to_bits();
        let sign = ((x >> 16) & 0x8000) as u16;
        let exp = ((x >> 23) & 0xff) as i32;
        let man = x & 0x7f_ffff;
        if exp == 0xff {
            let nan = if man != 0 {
                0x200 | (man >> 13) as u16
            } else {
                0
            };
            return F16(sign | 0x7c00 | nan);
        }
        let e = exp - 127 + 15;
        if e >= 31 {
            return F16(sign | 0x7c00);
        }
        if e <= 0 {
            // A binary16 subnormal (or zero): units of 2^-24. The implicit bit is there unless
            // f is itself an f32 subnormal, far below binary16's range anyway.
            let m = if exp == 0 { man } else { man | 0x80_0000 };
            let shift = (14 - e) as u32;
            return F16(sign | round_shift(m, shift) as u16);
        }
        // Normal: drop 13 bits with rounding; a carry into the exponent (even up to infinity)
        // is the correctly rounded result.
        let h = ((e as u32) << 10) | (man >> 13);
        let rest = man & 0x1fff;
        let up = rest > 0x1000 || (rest == 0x1000 && h & 1 == 1);
        F16(sign | (h + up as u32) as u16)
    }
}

/// `m >> s`, rounded to nearest, ties to even.
#[inline(always)]
fn round_shift(m: u32, s: u32) -> u32 {
    if s >= 32 {
        return 0;
    }
    let q = m >> s;
    let rest = m & ((1 << s) - 1);
    let half = 1 << (s - 1);
    q + (rest > half || (rest == half && q & 1 == 1)) as u32
}

impl Arith for F16 {
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        F16::from_f32(self.to_f32() + o.to_f32())
    }
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        F16::from_f32(self.to_f32() * o.to_f32())
    }
}

impl Ordered for F16 {
    #[inline(always)]
    fn gt(self, o: Self) -> bool {
        self.to_f32() > o.to_f32()
    }
    #[inline(always)]
    fn lt(self, o: Self) -> bool {
        self.to_f32() < o.to_f32()
    }
    #[inline(always)]
    fn eq(self, o: Self) -> bool {
        self.to_f32() == o.to_f32()
    }
}

impl Truth for F16 {
    #[inline(always)]
    fn truth(self) -> bool {
        self.0 & 0x7fff != 0
    }
    #[inline(always)]
    fn from_truth(b: bool) -> Self {
        F16(if b { 0x3c00 } else { 0 })
    }
}

// ---------------------------------------------------------------------------------------------
// x87 extended precision.

/// A C `long double` on x86-64: an x87 80-bit value in the first 10 of 16 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C, align(16))]
pub(crate) struct F80(pub [u8; 16]);

/// Runs `$op` (an x87 instruction combining `st(1)` and `st(0)` into `st(1)` and popping) on
/// `a` and `b` and returns the result.
macro_rules! x87_binary {
    ($a:expr, $b:expr, $op:literal) => {{
        let mut r = F80([0; 16]);
        // SAFETY: loads two 10-byte values from live locals, stores one into `r`; the x87
        // stack is empty on entry (the ABI) and left empty, and all of it is declared clobbered.
        unsafe {
            asm!(
                "fld tbyte ptr [{a}]",
                "fld tbyte ptr [{b}]",
                $op,
                "fstp tbyte ptr [{r}]",
                a = in(reg) &$a.0,
                b = in(reg) &$b.0,
                r = in(reg) &mut r.0,
                out("st(0)") _, out("st(1)") _, out("st(2)") _, out("st(3)") _,
                out("st(4)") _, out("st(5)") _, out("st(6)") _, out("st(7)") _,
                options(nostack),
            );
        }
        r
    }};
}

/// `MPI_SUM` (`MUL` false) or `MPI_PROD` on `long double`s, straight from and to the buffers
/// (copying each value through a local first would stall store forwarding three times per
/// element).
///
/// # Safety
/// As for [`Kernel`], with 16-byte elements.
unsafe fn x87_in_place<const MUL: bool>(inp: *const u8, inout: *mut u8, n: usize) {
    for i in 0..n {
        // SAFETY: element i of both buffers (i < n, the kernel's contract): 10 bytes loaded from
        // each, 10 stored into the in-out one; the x87 stack is empty on entry and on exit, and
        // all of it is declared clobbered.
        unsafe {
            let (a, b) = (inp.add(16 * i), inout.add(16 * i));
            if MUL {
                asm!(
                    "fld tbyte ptr [{a}]",
                    "fld tbyte ptr [{b}]",
                    "fmulp st(1), st",
                    "fstp tbyte ptr [{b}]",
                    a = in(reg) a,
                    b = in(reg) b,
                    out("st(0)") _, out("st(1)") _, out("st(2)") _, out("st(3)") _,
                    out("st(4)") _, out("st(5)") _, out("st(6)") _, out("st(7)") _,
                    options(nostack),
                );
            } else {
                asm!(
                    "fld tbyte ptr [{a}]",
                    "fld tbyte ptr [{b}]",
                    "faddp st(1), st",
                    "fstp tbyte ptr [{b}]",
                    a = in(reg) a,
                    b = in(reg) b,
                    out("st(0)") _, out("st(1)") _, out("st(2)") _, out("st(3)") _,
                    out("st(4)") _, out("st(5)") _, out("st(6)") _, out("st(7)") _,
                    options(nostack),
                );
            }
        }
    }
}

impl F80 {
    /// 1.0
    pub const ONE: F80 = F80([0, 0, 0, 0, 0, 0, 0, 0x80, 0xff, 0x3f, 0, 0, 0, 0, 0, 0]);

    /// Whether `self > o` (`true` for `Gt`) or `self < o`, as x87's unordered compare says
    /// (false with a NaN).
    #[inline(always)]
    fn compare(self, o: F80) -> (bool, bool, bool) {
        let (above, below, equal): (u8, u8, u8);
        // SAFETY: loads two 10-byte values from live locals and pops both; the x87 stack is
        // empty on entry and on exit, and all of it is declared clobbered. `fucomip` sets
        // ZF, PF, CF as an unsigned compare of st(0) (self) with st(1) (o), all three when
        // unordered.
        unsafe {
            asm!(
                "fld tbyte ptr [{o}]",
                "fld tbyte ptr [{s}]",
                "fucomip st, st(1)",
                "fstp st(0)",
                "seta {above}",
                "setb {below}",
                "setnp {equal}",
                s = in(reg) &self.0,
                o = in(reg) &o.0,
                above = out(reg_byte) above,
                below = out(reg_byte) below,
                equal = out(reg_byte) equal,
                out("st(0)") _, out("st(1)") _, out("st(2)") _, out("st(3)") _,
                out("st(4)") _, out("st(5)") _, out("st(6)") _, out("st(7)") _,
                options(nostack),
            );
        }
        // below (CF) is also set when unordered, and then PF is set too.
        let ordered = equal != 0;
        (
            above != 0,
            below != 0 && ordered,
            ordered && above == 0 && below == 0,
        )
    }
}

impl Arith for F80 {
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        x87_binary!(self, o, "faddp st(1), st")
    }
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        x87_binary!(self, o, "fmulp st(1), st")
    }
}

impl Real for F80 {
    /// `self + (-o)`: negation flips the sign bit, exactly.
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        let mut neg = o;
        neg.0[9] ^= 0x80;
        self.add(neg)
    }
}

impl Ordered for F80 {
    #[inline(always)]
    fn gt(self, o: Self) -> bool {
        self.compare(o).0
    }
    #[inline(always)]
    fn lt(self, o: Self) -> bool {
        self.compare(o).1
    }
    #[inline(always)]
    fn eq(self, o: Self) -> bool {
        self.compare(o).2
    }
}

impl Truth for F80 {
    #[inline(always)]
    fn truth(self) -> bool {
        self.0[..9].iter().any(|&b| b != 0) || self.0[9] & 0x7f != 0
    }
    #[inline(always)]
    fn from_truth(b: bool) -> Self {
        if b {
            F80::ONE
        } else {
            F80([0; 16])
        }
    }
}

// ---------------------------------------------------------------------------------------------
// binary128.

/// An IEEE binary128 value (Fortran `REAL*16`, C's `__float128`), by its bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(transparent)]
pub(crate) struct F128(pub u128);

extern "C" {
    // The compiler runtime's binary128 arithmetic (libgcc / compiler-builtins): arguments in
    // xmm0 and xmm1, result in xmm0. Declared without a signature: only called from `soft`.
    fn __addtf3();
    fn __multf3();
}

impl F128 {
    const SIGN: u128 = 1 << 127;

    /// `f(self, o)` for a runtime routine `f` taking and returning binary128 values.
    #[inline(always)]
    fn soft(self, o: F128, f: unsafe extern "C" fn()) -> F128 {
        let mut r = F128(0);
        // SAFETY: calls a C routine of the binary128 ABI (both operands in xmm0/xmm1, result in
        // xmm0) with two live values; `r12` (callee-saved) holds the result's address across
        // the call, every register the C ABI lets the routine change is declared clobbered,
        // and Rust aligns the stack for calls from assembly without `nostack`.
        unsafe {
            asm!(
                "movups xmm0, [{a}]",
                "movups xmm1, [{b}]",
                "call {f}",
                "movups [r12], xmm0",
                a = in(reg) &self.0,
                b = in(reg) &o.0,
                f = in(reg) f,
                in("r12") &mut r.0,
                clobber_abi("C"),
            );
        }
        r
    }

    fn is_nan(self) -> bool {
        self.0 & !Self::SIGN > 0x7fff_u128 << 112
    }

    /// A key that orders the non-NaN values as the reals they are (both zeros alike).
    fn key(self) -> i128 {
        let magnitude = (self.0 & !Self::SIGN) as i128;
        if self.0 & Self::SIGN != 0 {
            -magnitude
        } else {
            magnitude
        }
    }
}

impl Arith for F128 {
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        self.soft(o, __addtf3)
    }
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        self.soft(o, __multf3)
    }
}

impl Ordered for F128 {
    fn gt(self, o: Self) -> bool {
        !self.is_nan() && !o.is_nan() && self.key() > o.key()
    }
    fn lt(self, o: Self) -> bool {
        !self.is_nan() && !o.is_nan() && self.key() < o.key()
    }
    fn eq(self, o: Self) -> bool {
        !self.is_nan() && !o.is_nan() && self.key() == o.key()
    }
}

impl Truth for F128 {
    fn truth(self) -> bool {
        self.0 & !Self::SIGN != 0
    }
    fn from_truth(b: bool) -> Self {
        F128(if b { 0x3fff_u128 << 112 } else { 0 })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `op` on `a` (in) and `b` (in-out) of kind `kind`, natural layout.
    fn run<T: Copy>(op: Builtin, kind: Kind, a: &[T], b: &mut [T]) {
        assert_eq!(a.len(), b.len());
        let k = kernel(op, kind, Layout::Natural).expect("the kernel exists");
        assert_eq!(stride(kind, Layout::Natural), std::mem::size_of::<T>());
        // SAFETY: two distinct slices of a.len() elements of the kernel's type.
        unsafe { k(a.as_ptr().cast(), b.as_mut_ptr().cast(), a.len()) };
    }

    fn apply<T: Copy>(op: Builtin, kind: Kind, a: &[T], b: &[T]) -> Vec<T> {
        let mut out = b.to_vec();
        run(op, kind, a, &mut out);
        out
    }

    #[test]
    fn integer_kernels() {
        let a = [5i32, -3, 0, i32::MAX, 6];
        let b = [2i32, 7, 0, 1, 3];
        assert_eq!(
            apply(Builtin::Max, Kind::I32, &a, &b),
            [5, 7, 0, i32::MAX, 6]
        );
        assert_eq!(apply(Builtin::Min, Kind::I32, &a, &b), [2, -3, 0, 1, 3]);
        assert_eq!(
            apply(Builtin::Sum, Kind::I32, &a, &b),
            [7, 4, 0, i32::MIN, 9],
            "wraps"
        );
        assert_eq!(
            apply(Builtin::Prod, Kind::I32, &a, &b),
            [10, -21, 0, i32::MAX, 18]
        );
        assert_eq!(apply(Builtin::Land, Kind::I32, &a, &b), [1, 1, 0, 1, 1]);
        assert_eq!(
            apply(Builtin::Lor, Kind::I32, &a, &[0, 0, 0, 0, 0]),
            [1, 1, 0, 1, 1]
        );
        assert_eq!(
            apply(Builtin::Lxor, Kind::I32, &a, &[1, 0, 0, 0, 9]),
            [0, 1, 0, 1, 0]
        );
        assert_eq!(apply(Builtin::Band, Kind::I32, &a, &b), [0, 5, 0, 1, 2]);
        assert_eq!(
            apply(Builtin::Bor, Kind::I32, &a, &b),
            [7, -1, 0, i32::MAX, 7]
        );
        assert_eq!(
            apply(Builtin::Bxor, Kind::I32, &a, &b),
            [7, -6, 0, i32::MAX - 1, 5]
        );
        // Unsigned and narrow types compare and wrap as their own type.
        assert_eq!(
            apply(Builtin::Max, Kind::U8, &[200u8, 1], &[100, 2]),
            [200, 2]
        );
        assert_eq!(
            apply(Builtin::Max, Kind::I8, &[-56i8, 1], &[100, 2]),
            [100, 2]
        );
        assert_eq!(apply(Builtin::Sum, Kind::U16, &[65535u16], &[2]), [1]);
        assert_eq!(
            apply(Builtin::Min, Kind::U64, &[u64::MAX, 3], &[7, 4]),
            [7, 3]
        );
        assert_eq!(
            apply(Builtin::Bxor, Kind::Byte, &[0xf0u8], &[0xffu8]),
            [0x0f]
        );
        // A long vector (the vectorized body plus its remainder) against a scalar loop.
        let a: Vec<i64> = (0..1003).map(|i| i * 7 - 500).collect();
        let b: Vec<i64> = (0..1003).map(|i| 3000 - i * 5).collect();
        let want: Vec<i64> = a.iter().zip(&b).map(|(x, y)| *x.max(y)).collect();
        assert_eq!(apply(Builtin::Max, Kind::I64, &a, &b), want);
    }

    #[test]
    fn which_operations_each_kind_has() {
        use Builtin::*;
        let all = [
            Max, Min, Sum, Prod, Land, Band, Lor, Bor, Lxor, Bxor, Minloc, Maxloc,
        ];
        let has = |kind| -> Vec<Builtin> {
            all.iter()
                .copied()
                .filter(|&op| kernel(op, kind, Layout::Natural).is_some())
                .collect()
        };
        assert_eq!(
            has(Kind::I16),
            [Max, Min, Sum, Prod, Land, Band, Lor, Bor, Lxor, Bxor]
        );
        assert_eq!(has(Kind::F64), [Max, Min, Sum, Prod, Land, Lor, Lxor]);
        assert_eq!(has(Kind::F80), [Max, Min, Sum, Prod, Land, Lor, Lxor]);
        assert_eq!(has(Kind::F16), [Max, Min, Sum, Prod, Land, Lor, Lxor]);
        assert_eq!(has(Kind::C64), [Sum, Prod]);
        assert_eq!(has(Kind::C80), [Sum, Prod]);
        assert_eq!(has(Kind::Byte), [Band, Bor, Bxor]);
        assert_eq!(has(Kind::Bool), [Land, Lor, Lxor]);
        assert_eq!(has(Kind::Logical), [Land, Lor, Lxor]);
        assert_eq!(has(Kind::Pair(Pair::DoubleInt)), [Minloc, Maxloc]);
    }

    #[test]
    fn floating_kernels_follow_c() {
        let nan = f64::NAN;
        let r = apply(
            Builtin::Max,
            Kind::F64,
            &[1.0, nan, 3.0, -0.0],
            &[2.0, 5.0, nan, 0.0],
        );
        assert_eq!(r[0], 2.0);
        assert_eq!(r[1], 5.0, "in is NaN: inout stays");
        assert!(r[2].is_nan(), "inout is NaN: it stays");
        assert_eq!(r[3].to_bits(), 0.0f64.to_bits(), "equal: inout stays");
        let r = apply(Builtin::Prod, Kind::F32, &[1.5f32, -2.0], &[4.0, 0.25]);
        assert_eq!(r, [6.0, -0.5]);
        let r = apply(Builtin::Land, Kind::F64, &[0.5, 0.0, nan], &[2.0, 1.0, 1.0]);
        assert_eq!(r, [1.0, 0.0, 1.0]);
    }

    #[test]
    fn complex_product_is_the_textbook_formula() {
        let a = [
            Complex {
                re: 1.0f64,
                im: 2.0,
            },
            Complex { re: 0.5, im: -1.0 },
        ];
        let b = [
            Complex {
                re: 3.0f64,
                im: -1.0,
            },
            Complex { re: 2.0, im: 4.0 },
        ];
        let r = apply(Builtin::Prod, Kind::C64, &a, &b);
        assert_eq!(
            r,
            [Complex { re: 5.0, im: 5.0 }, Complex { re: 5.0, im: 0.0 }]
        );
        let r = apply(
            Builtin::Sum,
            Kind::C32,
            &[Complex {
                re: 1.0f32,
                im: 2.0,
            }],
            &[Complex { re: 3.0, im: 4.0 }],
        );
        assert_eq!(r, [Complex { re: 4.0, im: 6.0 }]);
    }

    #[test]
    fn binary16_conversions_round_trip_and_round_to_nearest_even() {
        for h in 0..=u16::MAX {
            let f = F16(h).to_f32();
            if f.is_nan() {
                assert!(F16::from_f32(f).to_f32().is_nan());
            } else {
                assert_eq!(F16::from_f32(f), F16(h), "0x{h:04x} -> {f}");
            }
        }
        let h = |f: f32| F16::from_f32(f).0;
        assert_eq!(h(1.0), 0x3c00);
        assert_eq!(h(65504.0), 0x7bff);
        assert_eq!(h(65519.0), 0x7bff);
        assert_eq!(
            h(65520.0),
            0x7c00,
            "the tie above the largest finite rounds to infinity"
        );
        assert_eq!(h(1.0 + 1.0 / 2048.0), 0x3c00, "a tie rounds to even (down)");
        assert_eq!(h(1.0 + 3.0 / 2048.0), 0x3c02, "a tie rounds to even (up)");
        let tiny = 2f32.powi(-24);
        assert_eq!(h(tiny * 0.5), 0, "half the smallest subnormal ties to zero");
        assert_eq!(h(tiny * 0.75), 1);
        assert_eq!(h(tiny * 1.5), 2, "a subnormal tie rounds to even");
        assert_eq!(h(-2.0), 0xc000);
        let r = apply(
            Builtin::Sum,
            Kind::F16,
            &[F16(0x3c00), F16(0x7bff)],
            &[F16(0x4000), F16(0x7bff)],
        );
        assert_eq!(
            r,
            [F16(0x4200), F16(0x7c00)],
            "1 + 2 = 3; MAX + MAX overflows"
        );
        let r = apply(
            Builtin::Max,
            Kind::F16,
            &[F16(0xc000), F16(0x3c00)],
            &[F16(0x3c00), F16(0x4000)],
        );
        assert_eq!(r, [F16(0x3c00), F16(0x4000)]);
    }

    /// An `f64` as an x87 extended value (exact).
    fn f80(x: f64) -> F80 {
        let mut r = F80([0; 16]);
        // SAFETY: loads 8 bytes from a live local, stores 10 into `r`; the x87 stack is left
        // empty and declared clobbered.
        unsafe {
            asm!(
                "fld qword ptr [{x}]",
                "fstp tbyte ptr [{r}]",
                x = in(reg) &x,
                r = in(reg) &mut r.0,
                out("st(0)") _, out("st(1)") _, out("st(2)") _, out("st(3)") _,
                out("st(4)") _, out("st(5)") _, out("st(6)") _, out("st(7)") _,
                options(nostack),
            );
        }
        r
    }

    #[test]
    fn long_double_has_x87_range_and_precision() {
        assert_eq!(f80(1.0), F80::ONE);
        let r = apply(Builtin::Prod, Kind::F80, &[f80(1e300)], &[f80(1e300)]);
        assert!(
            r[0].gt(f80(f64::MAX)),
            "1e600 does not overflow in long double"
        );
        let tiny = 2f64.powi(-60);
        let sum = f80(1.0).add(f80(tiny));
        assert_eq!(sum.sub(f80(1.0)), f80(tiny), "64 bits of significand");
        assert_eq!(
            apply(Builtin::Sum, Kind::F80, &[f80(2.5)], &[f80(-1.0)]),
            [f80(1.5)]
        );
        assert_eq!(
            apply(
                Builtin::Max,
                Kind::F80,
                &[f80(2.5), f80(-3.0)],
                &[f80(-1.0), f80(7.0)]
            ),
            [f80(2.5), f80(7.0)]
        );
        assert_eq!(
            apply(
                Builtin::Min,
                Kind::F80,
                &[f80(2.5), f80(-3.0)],
                &[f80(-1.0), f80(7.0)]
            ),
            [f80(-1.0), f80(-3.0)]
        );
        let nan = f80(f64::NAN);
        assert!(!nan.gt(F80::ONE) && !nan.lt(F80::ONE) && !nan.eq(nan));
        assert!(f80(0.0).eq(f80(-0.0)));
        assert_eq!(
            apply(
                Builtin::Lor,
                Kind::F80,
                &[f80(-0.0), f80(0.0)],
                &[f80(0.0), f80(3.0)]
            ),
            [f80(0.0), F80::ONE]
        );
        let c = |re, im| Complex {
            re: f80(re),
            im: f80(im),
        };
        assert_eq!(
            apply(Builtin::Prod, Kind::C80, &[c(1.0, 2.0)], &[c(3.0, -1.0)]),
            [c(5.0, 5.0)]
        );
    }

    #[test]
    fn binary128_arithmetic_and_order() {
        let q = |x: f64| {
            // Exact for these small integers: sign, exponent rebiased, 52 bits of fraction.
            let b = x.to_bits() as u128;
            let exp = (b >> 52) & 0x7ff;
            let bits = if x == 0.0 {
                0
            } else {
                ((exp + 16383 - 1023) << 112) | ((b & ((1 << 52) - 1)) << 60)
            };
            F128(bits | ((b >> 63) << 127))
        };
        assert_eq!(q(1.0).add(q(2.0)), q(3.0));
        assert_eq!(q(-3.0).mul(q(4.0)), q(-12.0));
        let r = apply(
            Builtin::Max,
            Kind::F128,
            &[q(1.0), q(-5.0), q(-0.0)],
            &[q(-2.0), q(-4.0), q(0.0)],
        );
        assert_eq!(r, [q(1.0), q(-4.0), q(0.0)]);
        let r = apply(
            Builtin::Sum,
            Kind::F128,
            &[q(1.5), q(-5.0)],
            &[q(-2.0), q(4.0)],
        );
        assert_eq!(r, [q(-0.5), q(-1.0)]);
        let nan = F128(0x7fff_8000_u128 << 96);
        assert!(!nan.gt(q(1.0)) && !nan.lt(q(1.0)) && !nan.eq(nan));
        // 1 + 2^-100 is not 1 in binary128.
        let tiny = F128((16383 - 100) << 112);
        assert_ne!(q(1.0).add(tiny), q(1.0));
    }

    #[test]
    fn maxloc_minloc_take_the_smaller_index_on_ties() {
        #[derive(Clone, Copy, Debug, PartialEq)]
        #[repr(C)]
        struct DoubleInt(f64, i32);
        let a = [
            DoubleInt(1.0, 5),
            DoubleInt(2.0, 9),
            DoubleInt(3.0, 1),
            DoubleInt(4.0, 2),
        ];
        let b = [
            DoubleInt(1.0, 3),
            DoubleInt(2.0, 4),
            DoubleInt(5.0, 0),
            DoubleInt(0.0, 7),
        ];
        let kind = Kind::Pair(Pair::DoubleInt);
        let r = apply(Builtin::Maxloc, kind, &a, &b);
        assert_eq!(
            r,
            [
                DoubleInt(1.0, 3),
                DoubleInt(2.0, 4),
                DoubleInt(5.0, 0),
                DoubleInt(4.0, 2)
            ]
        );
        let a2 = [DoubleInt(1.0, 1), DoubleInt(2.0, 9)];
        let r = apply(Builtin::Minloc, kind, &a2, &b[..2]);
        assert_eq!(r, [DoubleInt(1.0, 1), DoubleInt(2.0, 4)]);

        #[derive(Clone, Copy, Debug, PartialEq)]
        #[repr(C)]
        struct ShortInt(i16, i32);
        let r = apply(
            Builtin::Minloc,
            Kind::Pair(Pair::ShortInt),
            &[ShortInt(-4, 8), ShortInt(3, 1)],
            &[ShortInt(2, 0), ShortInt(3, 2)],
        );
        assert_eq!(r, [ShortInt(-4, 8), ShortInt(3, 1)]);

        // Packed: value then index, no padding (6 bytes per MPI_SHORT_INT).
        let packed = |v: i16, i: i32| [v.to_ne_bytes().as_slice(), &i.to_ne_bytes()].concat();
        let a = [packed(5, 3), packed(5, 9)].concat();
        let mut b = [packed(5, 4), packed(6, 0)].concat();
        let k = kernel(Builtin::Maxloc, Kind::Pair(Pair::ShortInt), Layout::Packed).unwrap();
        assert_eq!(stride(Kind::Pair(Pair::ShortInt), Layout::Packed), 6);
        // SAFETY: two distinct buffers of 2 packed pairs.
        unsafe { k(a.as_ptr(), b.as_mut_ptr(), 2) };
        assert_eq!(b, [packed(5, 3), packed(6, 0)].concat());

        #[derive(Clone, Copy, Debug, PartialEq)]
        #[repr(C)]
        struct RealReal(f32, f32);
        let r = apply(
            Builtin::Maxloc,
            Kind::Pair(Pair::RealReal),
            &[RealReal(2.0, 7.0)],
            &[RealReal(2.0, 6.5)],
        );
        assert_eq!(r, [RealReal(2.0, 6.5)]);
    }

    #[test]
    fn long_double_int_pairs() {
        #[derive(Clone, Copy, Debug, PartialEq)]
        #[repr(C)]
        struct LongDoubleInt(F80, i32);
        assert_eq!(std::mem::size_of::<LongDoubleInt>(), 32);
        let a = [LongDoubleInt(f80(2.0), 4), LongDoubleInt(f80(-1.0), 2)];
        let b = [LongDoubleInt(f80(2.0), 3), LongDoubleInt(f80(1.0), 0)];
        let r = apply(Builtin::Minloc, Kind::Pair(Pair::LongDoubleInt), &a, &b);
        assert_eq!(r[0].1, 3);
        assert_eq!(r[1], LongDoubleInt(f80(-1.0), 2));
    }

    #[test]
    fn logical_types_produce_one_and_zero() {
        assert_eq!(
            apply(Builtin::Land, Kind::Bool, &[1u8, 2, 0], &[1, 1, 1]),
            [1, 1, 0]
        );
        assert_eq!(
            apply(Builtin::Lxor, Kind::Logical, &[1i32, -1, 0], &[1, 0, 0]),
            [0, 1, 0]
        );
    }
}
