//! The C entry points of the buffered-send buffer: `MPI_Buffer_attach`, `MPI_Buffer_detach`,
//! `MPI_Buffer_flush`, `MPI_Buffer_iflush`.
//!
//! `MPI_Buffer_detach` and `MPI_Buffer_flush` wait for the buffered sends in flight: under
//! `MPI_THREAD_MULTIPLE` (when the call's waits let the lock go, [`crate::runtime::thread`])
//! each look is one turn of the engine and a look at the buffer ([`drained`]), the lock let
//! go between looks, so that another thread can receive what frees it meanwhile.

use crate::abi::*;
use crate::count::CountOut;
use crate::cptr::Out;
use crate::error::MpiError;
use crate::error::MpiResult;
use crate::runtime::export::mpi_fn;
use crate::runtime::thread::Calling;
use std::ffi::{c_int, c_void};

/// Waits until every buffered send has left the attached buffer: in the engine's loop holding
/// the state, or (when the call's waits let the lock go) in looks between which it is let go.
fn drained(call: &mut Calling) -> MpiResult<()> {
    if !call.releases() {
        let (bsend, mut engines) = call.state().runtime()?.bsend_and_lanes();
        return bsend.drain(&mut engines);
    }
    call.wait_until(|st| {
        let rt = st.runtime()?;
        let (bsend, mut engines) = rt.bsend_and_lanes();
        if bsend.settled(&mut engines)? {
            return Ok(Some(()));
        }
        // Lane 0 here; the other lanes are turned by the look itself (`Calling`).
        rt.engine.poke()?;
        Ok(None)
    })
}

mpi_fn! {
    /// `MPI_Buffer_attach`: gives the library `size` bytes at `buffer` for buffered sends.
    fn MPI_Buffer_attach / PMPI_Buffer_attach, large MPI_Buffer_attach_c / PMPI_Buffer_attach_c
    where [Count = c_int | MPI_Count] (buffer: *mut c_void, size: Count) |st| {
        let rt = st.runtime()?;
        let size = usize::try_from(MPI_Count::from(size))
            .map_err(|_| MpiError::arg(format!("the size is {size}; it must be 0 or more")))?;
        rt.bsend.attach(buffer.cast(), size)
    }
}

mpi_fn! {
    /// `MPI_Buffer_detach`: waits for the buffered sends, then returns the buffer's address
    /// (in `*(void **)buffer_addr`) and size. With no buffer attached, NULL and 0.
    fn MPI_Buffer_detach / PMPI_Buffer_detach, large MPI_Buffer_detach_c / PMPI_Buffer_detach_c
    where [Count = c_int | MPI_Count] (buffer_addr: *mut c_void, size: *mut Count) waits |call| {
        let addr_out = Out::new(buffer_addr.cast::<*mut c_void>(), "buffer_addr")?;
        let size_out = Out::new(size, "size")?;
        drained(call)?;
        let rt = call.state().runtime()?;
        let (bsend, mut engines) = rt.bsend_and_lanes();
        let (base, len) = bsend.detach(&mut engines)?.unwrap_or((std::ptr::null_mut(), 0));
        addr_out.set(base.cast());
        size_out.set(Count::from_count(len as MPI_Count));
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Buffer_flush` (MPI 4.1): waits until every buffered send has left the attached
    /// buffer; the buffer stays attached. With no buffer attached, returns at once.
    fn MPI_Buffer_flush / PMPI_Buffer_flush() waits |call| {
        drained(call)
    }
}

mpi_fn! {
    /// `MPI_Buffer_iflush` (MPI 4.1): a request that completes when every buffered send in
    /// flight now has left the attached buffer.
    fn MPI_Buffer_iflush / PMPI_Buffer_iflush(request: *mut MPI_Request) |st| {
        let rt = st.runtime()?;
        let out = Out::new(request, "request")?;
        let (bsend, mut engines) = rt.bsend_and_lanes();
        let id = bsend.iflush(&mut engines)?;
        out.set(crate::p2p::request::handle(&rt.engine, id));
        Ok(())
    }
}
