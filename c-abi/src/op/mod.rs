//! Reduction operations: the predefined operations on every type MPI (and MPICH) allows them
//! on, user-defined operations, and `MPI_Reduce_local`; and for the collectives, [`check`],
//! [`is_commutative`] and [`reduce`].
//!
//! ```text
//!   reduce(op, dt, in, inout, count)
//!     ├─ user op (0x98000000|i) ─▶ its function, once for the whole buffer
//!     ├─ MPI_REPLACE / MPI_NO_OP ─▶ copy the data / nothing
//!     └─ predefined op ─▶ kernel(op, kind of dt's basic type)
//!          ├─ predefined dt ─▶ one call over `count` elements
//!          ├─ derived dt of one basic type ─▶ one call per run of data
//!          └─ derived dt of value-and-index pairs ─▶ gather, one call, scatter
//! ```
//!
//! **Handles.** The predefined operations are MPICH's `0x5800000N` (`MPI_MAX` = 1 to
//! `MPI_NO_OP` = 14); user operations are `0x98000000 | index` ([`user`]).
//!
//! **Which types.** Each predefined operation is defined on the datatypes MPICH 4.0 accepts
//! (checked against Debian's MPICH): `MPI_MAX`/`MPI_MIN` on C and Fortran integers (with
//! `MPI_CHAR`, `MPI_CHARACTER`, `MPI_AINT`, `MPI_OFFSET`, `MPI_COUNT`) and reals;
//! `MPI_SUM`/`MPI_PROD` on those and the complex types (not `MPI_COMPLEX32`, as MPICH);
//! `MPI_LAND`/`MPI_LOR`/`MPI_LXOR` on integers, reals and the logical types (`MPI_C_BOOL`,
//! `MPI_CXX_BOOL`, `MPI_LOGICAL`); `MPI_BAND`/`MPI_BOR`/`MPI_BXOR` on integers and `MPI_BYTE`;
//! `MPI_MAXLOC`/`MPI_MINLOC` on the nine pair types. A derived datatype qualifies when all of
//! its data is one such predefined type. `MPI_REAL16` is Fortran's `REAL*16` (binary128), as in
//! MPICH.
//! `MPI_REPLACE` and `MPI_NO_OP` exist for one-sided accumulation: [`reduce`] performs them,
//! but [`check`] refuses them with `MPI_ERR_OP`, as MPICH does in collectives and
//! `MPI_Reduce_local`. Anything else is `MPI_ERR_OP`, with a message naming the operation.
//!
//! **Speed.** A predefined operation on a predefined type is one call of a monomorphized,
//! vectorized loop ([`kernels`]): no function pointer call or branch per element.
//!
//! **Owns** the table of user operations ([`OpTable`]). **Entry:** [`check`],
//! [`is_commutative`], [`reduce`] and [`Reduction`] on the tables they are given; the C
//! functions are in `api`.

mod api;
mod kernels;
mod user;

pub(crate) use user::OpTable;

use crate::abi::*;
use crate::datatype::{Datatype, TypeTable};
use crate::error::{MpiError, MpiResult};
use kernels::{Builtin, Kind, Layout, Pair};
use std::ffi::{c_int, c_void};

/// MPICH's handle of the first predefined operation (`MPI_MAX`); `MPI_NO_OP` is the 14th.
const BUILTIN_BASE: u32 = 0x5800_0001;
const BUILTIN_COUNT: u32 = 14;

/// What a predefined operation does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Predefined {
    Compute(Builtin),
    Replace,
    NoOp,
}

/// The number (0 for `MPI_MAX` .. 13 for `MPI_NO_OP`) of a predefined operation.
#[inline(always)]
fn builtin_index(op: MPI_Op) -> Option<u32> {
    let i = (op as u32).wrapping_sub(BUILTIN_BASE);
    (i < BUILTIN_COUNT).then_some(i)
}

#[inline(always)]
fn predefined(op: MPI_Op) -> Option<Predefined> {
    use Builtin::*;
    const TABLE: [Builtin; 12] = [
        Max, Min, Sum, Prod, Land, Band, Lor, Bor, Lxor, Bxor, Minloc, Maxloc,
    ];
    Some(match builtin_index(op)? {
        12 => Predefined::Replace,
        13 => Predefined::NoOp,
        i => Predefined::Compute(TABLE[i as usize]),
    })
}

/// The name of a predefined operation, for messages.
fn op_name(op: MPI_Op) -> &'static str {
    const NAMES: [&str; BUILTIN_COUNT as usize] = [
        "MPI_MAX",
        "MPI_MIN",
        "MPI_SUM",
        "MPI_PROD",
        "MPI_LAND",
        "MPI_BAND",
        "MPI_LOR",
        "MPI_BOR",
        "MPI_LXOR",
        "MPI_BXOR",
        "MPI_MINLOC",
        "MPI_MAXLOC",
        "MPI_REPLACE",
        "MPI_NO_OP",
    ];
    builtin_index(op).map_or("the operation", |i| NAMES[i as usize])
}

/// What a predefined datatype holds, for the predefined operations (`None`: no operation
/// other than `MPI_REPLACE`/`MPI_NO_OP` applies).
fn kind_of(dt: MPI_Datatype) -> Option<Kind> {
    Some(match dt {
        MPI_CHAR | MPI_SIGNED_CHAR | MPI_INT8_T | MPI_INTEGER1 | MPI_CHARACTER => Kind::I8,
        MPI_UNSIGNED_CHAR | MPI_UINT8_T => Kind::U8,
        MPI_BYTE => Kind::Byte,
        MPI_SHORT | MPI_INT16_T | MPI_INTEGER2 => Kind::I16,
        MPI_UNSIGNED_SHORT | MPI_UINT16_T => Kind::U16,
        MPI_INT | MPI_INT32_T | MPI_INTEGER | MPI_INTEGER4 => Kind::I32,
        MPI_UNSIGNED | MPI_UINT32_T => Kind::U32,
        MPI_LONG | MPI_LONG_LONG_INT | MPI_INT64_T | MPI_INTEGER8 | MPI_AINT | MPI_OFFSET
        | MPI_COUNT => Kind::I64,
        MPI_UNSIGNED_LONG | MPI_UNSIGNED_LONG_LONG | MPI_UINT64_T => Kind::U64,
        MPIX_C_FLOAT16 => Kind::F16,
        MPI_FLOAT | MPI_REAL | MPI_REAL4 => Kind::F32,
        MPI_DOUBLE | MPI_DOUBLE_PRECISION | MPI_REAL8 => Kind::F64,
        MPI_LONG_DOUBLE => Kind::F80,
        MPI_REAL16 => Kind::F128,
        MPI_C_FLOAT_COMPLEX | MPI_CXX_FLOAT_COMPLEX | MPI_COMPLEX | MPI_COMPLEX8 => Kind::C32,
        MPI_C_DOUBLE_COMPLEX | MPI_CXX_DOUBLE_COMPLEX | MPI_DOUBLE_COMPLEX | MPI_COMPLEX16 => {
            Kind::C64
        }
        MPI_C_LONG_DOUBLE_COMPLEX | MPI_CXX_LONG_DOUBLE_COMPLEX => Kind::C80,
        MPI_C_BOOL | MPI_CXX_BOOL => Kind::Bool,
        MPI_LOGICAL => Kind::Logical,
        MPI_2INT | MPI_2INTEGER => Kind::Pair(Pair::IntInt),
        MPI_FLOAT_INT => Kind::Pair(Pair::FloatInt),
        MPI_DOUBLE_INT => Kind::Pair(Pair::DoubleInt),
        MPI_LONG_INT => Kind::Pair(Pair::LongInt),
        MPI_SHORT_INT => Kind::Pair(Pair::ShortInt),
        MPI_LONG_DOUBLE_INT => Kind::Pair(Pair::LongDoubleInt),
        MPI_2REAL => Kind::Pair(Pair::RealReal),
        MPI_2DOUBLE_PRECISION => Kind::Pair(Pair::DoubleDouble),
        _ => return None,
    })
}

#[cold]
fn bad_op(op: MPI_Op) -> MpiError {
    let detail = if op == MPI_OP_NULL {
        "the operation is MPI_OP_NULL".to_string()
    } else {
        format!("0x{op:08x} is not an operation (use a predefined one such as MPI_SUM, or one made by MPI_Op_create and not freed)")
    };
    MpiError::new(MPI_ERR_OP, detail)
}

#[cold]
fn not_for_collectives(op: MPI_Op) -> MpiError {
    MpiError::new(
        MPI_ERR_OP,
        format!(
            "{} is only for one-sided accumulation (MPI_Accumulate); it cannot be used in reductions",
            op_name(op)
        ),
    )
}

#[cold]
fn undefined_on(op: MPI_Op, dt: MPI_Datatype, t: &Datatype) -> MpiError {
    let what = match t.basic() {
        Some(b) if b != dt => format!("0x{dt:08x} (made of 0x{b:08x})"),
        Some(_) => format!("0x{dt:08x}"),
        None => format!("0x{dt:08x}, whose data is of several predefined types,"),
    };
    let hint = match builtin_index(op) {
        Some(10 | 11) => "MPI_MINLOC and MPI_MAXLOC take the value-and-index pairs (MPI_2INT, MPI_DOUBLE_INT, ...)",
        Some(5 | 7 | 9) => "the bitwise operations take integers and MPI_BYTE",
        Some(4 | 6 | 8) => "the logical operations take integers, reals and MPI_C_BOOL/MPI_LOGICAL",
        Some(2 | 3) => "MPI_SUM and MPI_PROD take integers, reals and complex numbers",
        _ => "MPI_MAX and MPI_MIN take integers and reals",
    };
    MpiError::new(
        MPI_ERR_OP,
        format!("{} is not defined on datatype {what}: {hint}", op_name(op)),
    )
}

#[cold]
fn uncommitted(dt: MPI_Datatype) -> MpiError {
    MpiError::new(
        MPI_ERR_TYPE,
        format!("datatype 0x{dt:08x} is not committed; call MPI_Type_commit on it first"),
    )
}

/// The committed datatype behind `dt`: `MPI_ERR_TYPE` if invalid or not committed.
fn committed(types: &TypeTable, dt: MPI_Datatype) -> MpiResult<&Datatype> {
    let t = types.get(dt)?;
    if !t.is_committed() {
        return Err(uncommitted(dt));
    }
    Ok(t)
}

/// The element kind a predefined operation works on for `dt`: `dt` itself if predefined,
/// else the basic type all of its data is made of.
fn element_kind(t: &Datatype, dt: MPI_Datatype) -> Option<Kind> {
    kind_of(dt).or_else(|| t.basic().and_then(kind_of))
}

/// `MPI_ERR_OP` unless `op` is valid and defined for `dt` (`MPI_ERR_TYPE` if `dt` is not a
/// committed datatype). `MPI_REPLACE` and `MPI_NO_OP` are refused, as MPICH refuses them in
/// collectives.
pub(crate) fn check(
    ops: &OpTable,
    types: &TypeTable,
    op: MPI_Op,
    dt: MPI_Datatype,
) -> MpiResult<()> {
    let action = match predefined(op) {
        Some(p) => p,
        None if ops.user(op).is_some() => return committed(types, dt).map(|_| ()),
        None => return Err(bad_op(op)),
    };
    let t = committed(types, dt)?;
    match action {
        Predefined::Replace | Predefined::NoOp => Err(not_for_collectives(op)),
        Predefined::Compute(b) => match element_kind(t, dt) {
            Some(k) if kernels::kernel(b, k, Layout::Natural).is_some() => Ok(()),
            _ => Err(undefined_on(op, dt, t)),
        },
    }
}

/// Whether `op` commutes: the predefined operations do, except `MPI_REPLACE` and `MPI_NO_OP`
/// (as MPICH says); a user operation as created. `MPI_ERR_OP` for an invalid handle.
pub(crate) fn is_commutative(ops: &OpTable, op: MPI_Op) -> MpiResult<bool> {
    match predefined(op) {
        Some(Predefined::Compute(_)) => Ok(true),
        Some(_) => Ok(false),
        None => ops.user(op).map(|u| u.commute).ok_or_else(|| bad_op(op)),
    }
}

/// `inout[i] = in[i] (op) inout[i]` for `count` elements of `dt`, both buffers in the type's
/// memory layout starting at the element base (the address a user would pass). `in` is the
/// left operand (the lower rank). Performs `MPI_REPLACE` and `MPI_NO_OP` too, and applies a
/// user operation freed since the caller checked it (see [`user`]); otherwise fails as
/// [`check`] does.
///
/// # Safety
/// `inbuf` holds `count` readable elements of `dt` and `inoutbuf` `count` readable and
/// writable ones; their data do not overlap.
pub(crate) unsafe fn reduce(
    ops: &OpTable,
    types: &TypeTable,
    op: MPI_Op,
    dt: MPI_Datatype,
    inbuf: *const u8,
    inoutbuf: *mut u8,
    count: usize,
) -> MpiResult<()> {
    // SAFETY: the caller's contract is passed on.
    unsafe { Reduction::new(ops, types, op, dt)?.apply(inbuf, inoutbuf, count) }
}

/// An operation resolved for a datatype: what a collective applies at each of its steps,
/// holding all it needs (the type's layout, a user operation's function), so that a schedule
/// running in the progress engine reaches no table, and an operation or type freed meanwhile
/// (MPI allows it) still applies.
#[derive(Clone)]
pub(crate) struct Reduction {
    op: MPI_Op,
    dt: MPI_Datatype,
    ty: std::sync::Arc<Datatype>,
    /// A user operation's function (including one freed since it was resolved).
    user: Option<user::UserOp>,
}

impl std::fmt::Debug for Reduction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Reduction({:#x} on {:#x})", self.op, self.dt)
    }
}

/// How a one-sided accumulate combines origin elements into target elements of one dense
/// predefined type, in place (the one-host fast path: a fetch-and-op on a counter).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Combine {
    /// `target[i] = origin[i] (op) target[i]`, by the operation's kernel for the type.
    Compute(kernels::Kernel),
    /// `MPI_REPLACE`: the origin's bytes.
    Replace,
    /// `MPI_NO_OP`: nothing changes.
    Nothing,
}

impl Combine {
    /// `op` on elements of the dense predefined type `dt`; `None` if the operation is not a
    /// predefined one or not defined on the type (the general path then reports the error).
    #[inline]
    pub fn of(op: MPI_Op, dt: MPI_Datatype) -> Option<Combine> {
        Some(match predefined(op)? {
            Predefined::Replace => Combine::Replace,
            Predefined::NoOp => Combine::Nothing,
            Predefined::Compute(b) => {
                Combine::Compute(kernels::kernel(b, kind_of(dt)?, Layout::Natural)?)
            }
        })
    }
}

impl Reduction {
    /// Resolves `op` on `dt`: `MPI_ERR_OP` for an invalid operation, `MPI_ERR_TYPE` for a
    /// type that is not committed.
    pub fn new(
        ops: &OpTable,
        types: &TypeTable,
        op: MPI_Op,
        dt: MPI_Datatype,
    ) -> MpiResult<Reduction> {
        let user = match predefined(op) {
            Some(_) => None,
            // A nonblocking collective may apply an operation freed since it checked it.
            None => Some(*ops.user_or_freed(op).ok_or_else(|| bad_op(op))?),
        };
        let ty = types.committed(dt)?.clone();
        Ok(Reduction { op, dt, ty, user })
    }

    /// Resolves the predefined operation `op` (including `MPI_REPLACE` and `MPI_NO_OP`) on a
    /// type that has no handle here: one a peer shipped (the target datatype of a one-sided
    /// accumulate). `MPI_ERR_OP` for any other operation, or one not defined on the type.
    pub fn shipped(op: MPI_Op, ty: std::sync::Arc<Datatype>) -> MpiResult<Reduction> {
        let action = predefined(op).ok_or_else(|| bad_op(op))?;
        // The handle of its one basic type stands for the type where the kernels need one.
        let dt = ty.basic().unwrap_or(MPI_DATATYPE_NULL);
        if let Predefined::Compute(b) = action {
            let defined = element_kind(&ty, dt).is_some_and(|k| {
                let layout = match k {
                    Kind::Pair(_) => Layout::Packed,
                    _ => Layout::Natural,
                };
                kernels::kernel(b, k, layout).is_some()
            });
            if !defined {
                return Err(undefined_on(op, dt, &ty));
            }
        }
        // A shipped type that is one predefined element takes the kernels' fast path.
        let dt = ty.single_basic().unwrap_or(MPI_DATATYPE_NULL);
        Ok(Reduction {
            op,
            dt,
            ty,
            user: None,
        })
    }

    /// What `Reduction::shipped(op, ty)` then `apply` do, without taking a share of the type
    /// for the common case of a predefined operation on one predefined element type (a
    /// one-sided fetch-and-op: one kernel call).
    ///
    /// # Safety
    /// As for [`reduce`].
    pub unsafe fn apply_shipped(
        op: MPI_Op,
        ty: &std::sync::Arc<Datatype>,
        inbuf: *const u8,
        inoutbuf: *mut u8,
        count: usize,
    ) -> MpiResult<()> {
        if let (Some(Predefined::Compute(b)), Some(kind)) =
            (predefined(op), ty.single_basic().and_then(kind_of))
        {
            if let Some(kernel) = kernels::kernel(b, kind, Layout::Natural) {
                // SAFETY: the caller's contract: `count` elements of the predefined type.
                unsafe { kernel(inbuf, inoutbuf, count) };
                return Ok(());
            }
        }
        // SAFETY: the caller's contract is passed on.
        unsafe { Reduction::shipped(op, ty.clone())?.apply(inbuf, inoutbuf, count) }
    }

    /// `inout[i] = in[i] (op) inout[i]` for `count` elements (see [`reduce`]).
    ///
    /// # Safety
    /// As for [`reduce`].
    pub unsafe fn apply(&self, inbuf: *const u8, inoutbuf: *mut u8, count: usize) -> MpiResult<()> {
        let (op, dt, t) = (self.op, self.dt, &*self.ty);
        if let Some(u) = self.user {
            // SAFETY: the caller's contract is passed on.
            unsafe { call_user(u.func, t.extent(), dt, inbuf, inoutbuf, count) };
            return Ok(());
        }
        let action = predefined(op).ok_or_else(|| bad_op(op))?;
        if let (Predefined::Compute(b), Some(kind)) = (action, kind_of(dt)) {
            // The fast path: a predefined operation on a predefined type, one block of elements.
            let kernel =
                kernels::kernel(b, kind, Layout::Natural).ok_or_else(|| undefined_on(op, dt, t))?;
            // SAFETY: a predefined type's elements lie one after another from the buffer's
            // start, one kernel stride each; the caller's contract covers `count` of them.
            unsafe { kernel(inbuf, inoutbuf, count) };
            return Ok(());
        }
        match action {
            Predefined::NoOp => Ok(()),
            // SAFETY: the caller's contract is passed on.
            Predefined::Replace => unsafe {
                for_each_run(t, count, |off, len| {
                    std::ptr::copy_nonoverlapping(inbuf.offset(off), inoutbuf.offset(off), len)
                });
                Ok(())
            },
            Predefined::Compute(b) => {
                let kind = element_kind(t, dt).ok_or_else(|| undefined_on(op, dt, t))?;
                let layout = match kind {
                    Kind::Pair(_) => Layout::Packed,
                    _ => Layout::Natural,
                };
                let kernel =
                    kernels::kernel(b, kind, layout).ok_or_else(|| undefined_on(op, dt, t))?;
                let stride = kernels::stride(kind, layout);
                // SAFETY: the caller's contract is passed on.
                unsafe {
                    if layout == Layout::Packed {
                        reduce_gathered(t, kernel, stride, inbuf, inoutbuf, count)
                    } else {
                        reduce_runs(t, kernel, stride, inbuf, inoutbuf, count)
                    }
                };
                Ok(())
            }
        }
    }
}

/// Calls `f(offset, len)` for every run of data of `count` elements of `t`, in order, with
/// offsets from the buffer's address.
fn for_each_run(t: &Datatype, count: usize, mut f: impl FnMut(isize, usize)) {
    let extent = t.extent();
    if t.is_contiguous() {
        if count > 0 && t.size() > 0 {
            f(t.true_lb(), count * t.size());
        }
        return;
    }
    for e in 0..count {
        let base = e as isize * extent;
        for r in t.runs() {
            f(base + r.offset, r.len);
        }
    }
}

/// A derived type made of one basic type that is not a pair: the kernel on each run.
///
/// # Safety
/// As for [`reduce`]; `kernel` works on elements of `stride` bytes, `t`'s basic type.
unsafe fn reduce_runs(
    t: &Datatype,
    kernel: kernels::Kernel,
    stride: usize,
    inbuf: *const u8,
    inoutbuf: *mut u8,
    count: usize,
) {
    for_each_run(t, count, |off, len| {
        // SAFETY: the run lies within both buffers (the caller's contract), and holds
        // len / stride whole elements of the basic type.
        unsafe { kernel(inbuf.offset(off), inoutbuf.offset(off), len / stride) }
    });
}

/// A derived type made of value-and-index pairs (whose runs split a pair around its padding):
/// gathers both operands' data into packed pairs, applies the kernel once, scatters back.
///
/// # Safety
/// As for [`reduce`]; `kernel` works on packed pairs of `stride` bytes.
unsafe fn reduce_gathered(
    t: &Datatype,
    kernel: kernels::Kernel,
    stride: usize,
    inbuf: *const u8,
    inoutbuf: *mut u8,
    count: usize,
) {
    let bytes = count * t.size();
    let mut a = Vec::with_capacity(bytes);
    let mut b = Vec::with_capacity(bytes);
    for_each_run(t, count, |off, len| {
        // SAFETY: each run lies within both buffers (the caller's contract).
        unsafe {
            a.extend_from_slice(std::slice::from_raw_parts(inbuf.offset(off), len));
            b.extend_from_slice(std::slice::from_raw_parts(inoutbuf.offset(off), len));
        }
    });
    // SAFETY: a and b hold bytes / stride packed pairs each, and are distinct.
    unsafe { kernel(a.as_ptr(), b.as_mut_ptr(), bytes / stride) };
    let mut at = 0;
    for_each_run(t, count, |off, len| {
        // SAFETY: the run lies within the in-out buffer; b holds its bytes at `at`.
        unsafe { std::ptr::copy_nonoverlapping(b.as_ptr().add(at), inoutbuf.offset(off), len) };
        at += len;
    });
}

/// Calls a user function on the whole buffer: a large-count one (`MPI_Op_create_c`) at once,
/// an int one in pieces of at most `INT_MAX` elements (its length argument is a C `int`).
///
/// # Safety
/// As for [`reduce`]; `extent` is `dt`'s.
unsafe fn call_user(
    func: user::UserFunction,
    extent: isize,
    dt: MPI_Datatype,
    inbuf: *const u8,
    inoutbuf: *mut u8,
    count: usize,
) {
    let piece = match func {
        user::UserFunction::Int(_) => c_int::MAX as usize,
        user::UserFunction::Large(_) => MPI_Count::MAX as usize,
    };
    let mut done = 0;
    while done < count {
        let n = (count - done).min(piece);
        let mut ty = dt;
        let off = done as isize * extent;
        let (a, b) = (
            inbuf.wrapping_offset(off).cast_mut().cast::<c_void>(),
            inoutbuf.wrapping_offset(off).cast::<c_void>(),
        );
        // SAFETY: elements done..done+n of both buffers (the caller's contract); the function
        // gets them as MPI_User_function(_c) says, and the length / ty are live locals.
        unsafe {
            match func {
                user::UserFunction::Int(f) => f(a, b, &mut (n as c_int), &mut ty),
                user::UserFunction::Large(f) => f(a, b, &mut (n as MPI_Count), &mut ty),
            }
        };
        done += n;
    }
}

#[cold]
fn bad_buffer(what: &str) -> MpiError {
    MpiError::new(MPI_ERR_BUFFER, what.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tables() -> (OpTable, TypeTable) {
        (OpTable::new(), TypeTable::new())
    }

    #[test]
    fn check_follows_mpich_op_type_table() {
        let (ops, types) = tables();
        let ok = |op, dt| check(&ops, &types, op, dt).is_ok();
        let class = |op, dt| check(&ops, &types, op, dt).unwrap_err().class;
        for dt in [
            MPI_INT,
            MPI_CHAR,
            MPI_UINT64_T,
            MPI_AINT,
            MPI_INTEGER8,
            MPI_CHARACTER,
        ] {
            for op in [MPI_MAX, MPI_SUM, MPI_LAND, MPI_BXOR] {
                assert!(ok(op, dt), "{op:x} on {dt:x}");
            }
        }
        for dt in [MPI_DOUBLE, MPI_LONG_DOUBLE, MPI_REAL16, MPIX_C_FLOAT16] {
            assert!(ok(MPI_MIN, dt) && ok(MPI_PROD, dt) && ok(MPI_LXOR, dt));
            assert_eq!(class(MPI_BAND, dt), MPI_ERR_OP);
        }
        assert!(ok(MPI_SUM, MPI_C_LONG_DOUBLE_COMPLEX) && ok(MPI_PROD, MPI_COMPLEX16));
        assert_eq!(class(MPI_MAX, MPI_C_DOUBLE_COMPLEX), MPI_ERR_OP);
        assert_eq!(class(MPI_SUM, MPI_COMPLEX32), MPI_ERR_OP, "as MPICH");
        assert!(ok(MPI_BOR, MPI_BYTE));
        assert_eq!(class(MPI_SUM, MPI_BYTE), MPI_ERR_OP);
        assert!(ok(MPI_LOR, MPI_C_BOOL) && ok(MPI_LAND, MPI_LOGICAL));
        assert_eq!(class(MPI_SUM, MPI_C_BOOL), MPI_ERR_OP);
        for dt in [
            MPI_2INT,
            MPI_DOUBLE_INT,
            MPI_SHORT_INT,
            MPI_LONG_DOUBLE_INT,
            MPI_2DOUBLE_PRECISION,
        ] {
            assert!(ok(MPI_MAXLOC, dt) && ok(MPI_MINLOC, dt));
            assert_eq!(class(MPI_SUM, dt), MPI_ERR_OP);
        }
        assert_eq!(class(MPI_MAXLOC, MPI_INT), MPI_ERR_OP);
        assert_eq!(class(MPI_SUM, MPI_WCHAR), MPI_ERR_OP);
        assert_eq!(class(MPI_REPLACE, MPI_INT), MPI_ERR_OP);
        assert_eq!(class(MPI_NO_OP, MPI_INT), MPI_ERR_OP);
        assert_eq!(class(MPI_OP_NULL, MPI_INT), MPI_ERR_OP);
        assert_eq!(class(0x5800_000f, MPI_INT), MPI_ERR_OP);
        assert_eq!(class(MPI_SUM, MPI_DATATYPE_NULL), MPI_ERR_TYPE);
    }

    #[test]
    fn commutativity() {
        let ops = OpTable::new();
        assert!(is_commutative(&ops, MPI_SUM).unwrap());
        assert!(is_commutative(&ops, MPI_MAXLOC).unwrap());
        assert!(!is_commutative(&ops, MPI_REPLACE).unwrap());
        assert!(!is_commutative(&ops, MPI_NO_OP).unwrap());
        assert_eq!(
            is_commutative(&ops, MPI_OP_NULL).unwrap_err().class,
            MPI_ERR_OP
        );
    }

    #[test]
    fn reduce_on_predefined_types_and_replace() {
        let (ops, types) = tables();
        let a = [1.0f64, 2.0, 3.0];
        let mut b = [10.0f64, 20.0, 30.0];
        let red = |op, a: &[f64], b: &mut [f64]| {
            // SAFETY: two distinct arrays of a.len() doubles.
            unsafe {
                reduce(
                    &ops,
                    &types,
                    op,
                    MPI_DOUBLE,
                    a.as_ptr().cast(),
                    b.as_mut_ptr().cast(),
                    a.len(),
                )
            }
        };
        red(MPI_SUM, &a, &mut b).unwrap();
        assert_eq!(b, [11.0, 22.0, 33.0]);
        red(MPI_NO_OP, &a, &mut b).unwrap();
        assert_eq!(b, [11.0, 22.0, 33.0]);
        red(MPI_REPLACE, &a, &mut b).unwrap();
        assert_eq!(b, a);
        assert_eq!(red(MPI_BAND, &a, &mut b).unwrap_err().class, MPI_ERR_OP);
        assert_eq!(red(MPI_OP_NULL, &a, &mut b).unwrap_err().class, MPI_ERR_OP);
        assert_eq!(b, a, "failed reductions change nothing");
    }
}
