//! The C entry points of the buffered-send buffer: `MPI_Buffer_attach`, `MPI_Buffer_detach`,
//! `MPI_Buffer_flush`, `MPI_Buffer_iflush`.

use crate::abi::*;
use crate::count::CountOut;
use crate::cptr::Out;
use crate::error::MpiError;
use crate::runtime::export::mpi_fn;
use std::ffi::{c_int, c_void};

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
    where [Count = c_int | MPI_Count] (buffer_addr: *mut c_void, size: *mut Count) |st| {
        let rt = st.runtime()?;
        let addr_out = Out::new(buffer_addr.cast::<*mut c_void>(), "buffer_addr")?;
        let size_out = Out::new(size, "size")?;
        let (base, len) = rt.bsend.detach(&mut rt.engine)?.unwrap_or((std::ptr::null_mut(), 0));
        addr_out.set(base.cast());
        size_out.set(Count::from_count(len as MPI_Count));
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Buffer_flush` (MPI 4.1): waits until every buffered send has left the attached
    /// buffer; the buffer stays attached. With no buffer attached, returns at once.
    fn MPI_Buffer_flush / PMPI_Buffer_flush() |st| {
        let rt = st.runtime()?;
        rt.bsend.drain(&mut rt.engine)
    }
}

mpi_fn! {
    /// `MPI_Buffer_iflush` (MPI 4.1): a request that completes when every buffered send in
    /// flight now has left the attached buffer.
    fn MPI_Buffer_iflush / PMPI_Buffer_iflush(request: *mut MPI_Request) |st| {
        let rt = st.runtime()?;
        let out = Out::new(request, "request")?;
        let id = rt.bsend.iflush(&mut rt.engine)?;
        out.set(crate::p2p::request::handle(&rt.engine, id));
        Ok(())
    }
}
