//! User-defined operations: the table behind their handles (`MPI_Op_create`, `MPI_Op_free`).
//!
//! A user operation is its function and whether it commutes. Its handle is
//! `0x98000000 | index` (MPICH's direct operation handles), the index of its slot in
//! [`OpTable`].
//!
//! **Freeing.** MPI lets a program free an operation that a pending nonblocking collective
//! still has to apply (`MPI_Op_free` only marks it for deallocation). So a freed operation is
//! retired in the handle table and its slot is never reused: the handle is refused by every
//! MPI call from then on ([`OpTable::user`], `MPI_ERR_OP`), but whatever checked it while it
//! was valid still reaches it ([`OpTable::user_or_freed`]), and can never reach another
//! operation that took its place. A slot is a few words, so even a program that creates and
//! frees operations in a loop costs little. Fortran operations need nothing special: a Fortran `SUBROUTINE f(invec, inoutvec,
//! len, datatype)` is called with every argument by reference, which is exactly
//! `MPI_User_function`'s C calling convention (and a Fortran datatype handle is the C one).

use super::{bad_op, builtin_index};
use crate::abi::*;
use crate::error::{MpiError, MpiResult};
use crate::handle::{index_of, Kind, Table};
use std::ffi::{c_int, c_void};

/// The C function of a user operation (`MPI_User_function *`, never NULL here).
pub(crate) type UserFn =
    unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_int, *mut MPI_Datatype);

/// The C function of a large-count user operation (`MPI_User_function_c *`,
/// `MPI_Op_create_c`): its length argument is an `MPI_Count`.
pub(crate) type LargeUserFn =
    unsafe extern "C" fn(*mut c_void, *mut c_void, *mut MPI_Count, *mut MPI_Datatype);

/// A user operation's function, of either form.
#[derive(Clone, Copy)]
pub(crate) enum UserFunction {
    Int(UserFn),
    Large(LargeUserFn),
}

/// One user-defined operation.
#[derive(Clone, Copy)]
pub(crate) struct UserOp {
    pub func: UserFunction,
    pub commute: bool,
}

/// Every user-defined operation of the process.
pub(crate) struct OpTable {
    table: Table<UserOp>,
}

impl OpTable {
    pub fn new() -> OpTable {
        OpTable {
            table: Table::new(Kind::Op),
        }
    }

    /// The user operation behind `op`, or `None` if `op` is not a valid user handle (never
    /// made, or freed).
    #[inline]
    pub fn user(&self, op: MPI_Op) -> Option<&UserOp> {
        self.table.get(op)
    }

    /// The user operation behind `op` even if it was freed since: for an operation in
    /// progress that was checked while `op` was valid.
    #[inline]
    pub fn user_or_freed(&self, op: MPI_Op) -> Option<&UserOp> {
        self.table.at(index_of(Kind::Op, op)?)
    }

    pub(crate) fn insert(&mut self, op: UserOp) -> MpiResult<MPI_Op> {
        self.table.insert(op).map(|(_, h)| h).ok_or_else(|| {
            MpiError::new(MPI_ERR_NO_MEM, "the process has made 2^26 user-defined operations, the most MPICH's handles can name")
        })
    }

    pub(crate) fn remove(&mut self, op: MPI_Op) -> MpiResult<()> {
        self.table
            .retire(op)
            .map(drop)
            .ok_or_else(|| not_freeable(op))
    }
}

#[cold]
fn not_freeable(op: MPI_Op) -> MpiError {
    if builtin_index(op).is_some() {
        MpiError::new(
            MPI_ERR_OP,
            format!("0x{op:08x} is a predefined operation, which cannot be freed; only operations made by MPI_Op_create can"),
        )
    } else {
        bad_op(op)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    unsafe extern "C" fn nothing(
        _: *mut c_void,
        _: *mut c_void,
        _: *mut c_int,
        _: *mut MPI_Datatype,
    ) {
    }

    #[test]
    fn handles_are_mpich_direct_handles_and_freed_ones_stay_reachable_inside() {
        let mut t = OpTable::new();
        let u = UserOp {
            func: UserFunction::Int(nothing),
            commute: true,
        };
        let a = t.insert(u).unwrap();
        let b = t
            .insert(UserOp {
                commute: false,
                ..u
            })
            .unwrap();
        assert_eq!((a as u32, b as u32), (0x9800_0000, 0x9800_0001));
        assert!(t.user(a).unwrap().commute);
        assert!(!t.user(b).unwrap().commute);
        t.remove(a).unwrap();
        assert!(t.user(a).is_none(), "a freed handle is invalid");
        assert!(
            t.user_or_freed(a).unwrap().commute,
            "but pending operations reach it"
        );
        assert_eq!(t.remove(a).unwrap_err().class, MPI_ERR_OP, "freed twice");
        assert_ne!(t.insert(u).unwrap(), a, "a freed slot is not reused");
        assert_eq!(t.remove(MPI_SUM).unwrap_err().class, MPI_ERR_OP);
        assert_eq!(t.remove(MPI_OP_NULL).unwrap_err().class, MPI_ERR_OP);
        assert!(t.user_or_freed(0x9800_0007u32 as MPI_Op).is_none());
        assert!(t.user(MPI_COMM_WORLD).is_none());
    }
}
