//! The C entry points of generalized requests: `MPI_Grequest_start`, `MPI_Grequest_complete`
//! (see [`crate::p2p::grequest`]).

use crate::abi::*;
use crate::cptr::Out;
use crate::error::MpiError;
use crate::p2p::grequest::{self, Callbacks};
use crate::p2p::request;
use crate::runtime::export::mpi_fn;
use std::ffi::c_void;

mpi_fn! {
    /// `MPI_Grequest_start`: a request the program completes itself, with
    /// `MPI_Grequest_complete`; the completion calls ask `query_fn` for its status and call
    /// `free_fn` when it is freed, `MPI_Cancel` calls `cancel_fn`.
    fn MPI_Grequest_start / PMPI_Grequest_start(
        query_fn: MPI_Grequest_query_function,
        free_fn: MPI_Grequest_free_function,
        cancel_fn: MPI_Grequest_cancel_function,
        extra_state: *mut c_void,
        request: *mut MPI_Request,
    ) |st| {
        let rt = st.runtime()?;
        let out = Out::new(request, "request")?;
        let callbacks = Callbacks { query: query_fn, free: free_fn, cancel: cancel_fn, extra: extra_state };
        let id = grequest::start(&mut rt.engine, callbacks)?;
        out.set(request::handle(&rt.engine, id));
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Grequest_complete`: the generalized request's operation is over; a wait for it
    /// returns. (A request the program freed already is released now, and its `free_fn`
    /// called.)
    fn MPI_Grequest_complete / PMPI_Grequest_complete(request: MPI_Request) |st| {
        let rt = st.runtime()?;
        if request == MPI_REQUEST_NULL {
            return Err(MpiError::new(MPI_ERR_REQUEST, "the request is MPI_REQUEST_NULL; pass the generalized request MPI_Grequest_start gave"));
        }
        let id = request::lookup(&rt.engine, request)?;
        grequest::complete(&mut rt.engine, id)
    }
}
