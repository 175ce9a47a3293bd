//! The C entry points of reduction operations: `MPI_Op_create`, `MPI_Op_free`,
//! `MPI_Op_commutative`, `MPI_Reduce_local`, and the large-count `MPI_Op_create_c` and
//! `MPI_Reduce_local_c`.

use super::user::{UserFunction, UserOp};
use super::{bad_buffer, bad_op, check, is_commutative, kind_of, predefined, reduce};
use crate::abi::*;
use crate::cptr::Out;
use crate::error::MpiError;
use crate::runtime::export::mpi_fn;
use std::ffi::{c_int, c_void};

mpi_fn! {
    /// `MPI_Op_create`: makes an operation of `user_fn`; `commute` says whether it commutes
    /// (if not, reductions combine operands in rank order).
    fn MPI_Op_create / PMPI_Op_create(
        user_fn: MPI_User_function,
        commute: c_int,
        op: *mut MPI_Op,
    ) |st| {
        let rt = st.runtime()?;
        let out = Out::new(op, "op")?;
        let Some(func) = user_fn else {
            return Err(MpiError::arg("the user function is NULL; pass the function that combines two vectors"));
        };
        let handle = rt.ops.insert(UserOp { func: UserFunction::Int(func), commute: commute != 0 })?;
        out.set(handle);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Op_create_c`: `MPI_Op_create` of a large-count function (its length argument is
    /// an `MPI_Count`, so the library calls it once for any count).
    fn MPI_Op_create_c / PMPI_Op_create_c(
        user_fn: MPI_User_function_c,
        commute: c_int,
        op: *mut MPI_Op,
    ) |st| {
        let rt = st.runtime()?;
        let out = Out::new(op, "op")?;
        let Some(func) = user_fn else {
            return Err(MpiError::arg("the user function is NULL; pass the function that combines two vectors"));
        };
        let handle = rt.ops.insert(UserOp { func: UserFunction::Large(func), commute: commute != 0 })?;
        out.set(handle);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Op_free`: frees a user-defined operation and sets the handle to `MPI_OP_NULL`.
    fn MPI_Op_free / PMPI_Op_free(op: *mut MPI_Op) |st| {
        let rt = st.runtime()?;
        let inout = Out::new(op, "op")?;
        rt.ops.remove(inout.get())?;
        inout.set(MPI_OP_NULL);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Op_commutative`: whether `op` commutes (the predefined ones do, except
    /// `MPI_REPLACE` and `MPI_NO_OP`, as in MPICH).
    fn MPI_Op_commutative / PMPI_Op_commutative(op: MPI_Op, commute: *mut c_int) |st| {
        let rt = st.runtime()?;
        let c = is_commutative(&rt.ops, op)?;
        Out::new(commute, "commute")?.set(c as c_int);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Reduce_local`: `inoutbuf[i] = inbuf[i] (op) inoutbuf[i]` for `count` elements.
    fn MPI_Reduce_local / PMPI_Reduce_local, large MPI_Reduce_local_c / PMPI_Reduce_local_c
    where [Count = c_int | MPI_Count] (
        inbuf: *const c_void,
        inoutbuf: *mut c_void,
        count: Count,
        datatype: MPI_Datatype,
        op: MPI_Op,
    ) |st| {
        let rt = st.runtime()?;
        let count = MPI_Count::from(count);
        if predefined(op).is_none() && rt.ops.user(op).is_none() {
            return Err(bad_op(op));
        }
        if count < 0 {
            return Err(MpiError::new(MPI_ERR_COUNT, format!("the count is {count}; it must be 0 or more")));
        }
        check(&rt.ops, &rt.types, op, datatype)?;
        if count > 0 {
            if inbuf == MPI_IN_PLACE.cast_const() || inoutbuf == MPI_IN_PLACE {
                return Err(bad_buffer("MPI_IN_PLACE is not allowed in MPI_Reduce_local: pass two buffers"));
            }
            if inbuf == inoutbuf.cast_const() {
                return Err(bad_buffer("inbuf and inoutbuf are the same buffer; they must not overlap"));
            }
            if (inbuf.is_null() || inoutbuf.is_null()) && kind_of(datatype).is_some() {
                return Err(bad_buffer("a buffer is NULL but count is not 0"));
            }
        }
        // SAFETY: the buffers hold `count` elements of `datatype` (the caller's contract).
        unsafe { reduce(&rt.ops, &rt.types, op, datatype, inbuf.cast(), inoutbuf.cast(), count as usize) }
    }
}
