//! The C entry points of matched probes: `MPI_Mprobe`, `MPI_Improbe`, `MPI_Mrecv`,
//! `MPI_Imrecv`.

use crate::abi::*;
use crate::cptr::Out;
use crate::error::MpiError;
use crate::p2p::args;
use crate::p2p::mprobe::{deliver, hold, probe_now, take, take_found, Named};
use crate::p2p::status::{Completion, StatusOut};
use crate::runtime::export::mpi_fn;
use std::ffi::{c_int, c_void};

mpi_fn! {
    /// `MPI_Mprobe`: waits for a matching message and takes it out of matching; `*message`
    /// names it for `MPI_Mrecv`.
    fn MPI_Mprobe / PMPI_Mprobe(
        source: c_int,
        tag: c_int,
        comm: MPI_Comm,
        message: *mut MPI_Message,
        status: *mut MPI_Status,
    ) waits |call| {
        let releases = call.releases();
        let rt = call.state().runtime()?;
        let op = args::probe_op(&rt.comms, source, tag, comm)?;
        let cx = &mut rt.p2p_on(op.ctx, op.tag);
        let message = Out::new(message, "message").map_err(|e| e.on(op.comm))?;
        let status = StatusOut::new(status).map_err(|e| e.on(op.comm))?;
        let Some(src) = op.source else {
            message.set(MPI_MESSAGE_NO_PROC);
            status.set(&Completion::PROC_NULL);
            return Ok(());
        };
        if releases {
            // Under MPI_THREAD_MULTIPLE: MPI_Improbe's look until it finds, the lock let go
            // in between; the message found is taken in the same look (under the lock), so
            // no other thread's probe or receive can take it first.
            let taken = call.wait_until(|st| {
                let cx = &mut st.runtime()?.p2p_on(op.ctx, op.tag);
                match probe_now(cx, src, &op)? {
                    None => Ok(None),
                    Some(found) => take_found(cx, &op, &found).map(Some),
                }
            })?;
            status.set(&taken.completion);
            message.set(hold(taken));
            return Ok(());
        }
        let found = cx.engine.probe(src, op.tag, op.ctx).map_err(|e| MpiError::from(e).on(op.comm))?;
        let taken = take_found(cx, &op, &found)?;
        status.set(&taken.completion);
        message.set(hold(taken));
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Improbe`: like `MPI_Mprobe` if a matching message is there (`*flag` true), else
    /// returns at once with `*flag` false.
    fn MPI_Improbe / PMPI_Improbe(
        source: c_int,
        tag: c_int,
        comm: MPI_Comm,
        flag: *mut c_int,
        message: *mut MPI_Message,
        status: *mut MPI_Status,
    ) |st| {
        let rt = st.runtime()?;
        let op = args::probe_op(&rt.comms, source, tag, comm)?;
        let cx = &mut rt.p2p_on(op.ctx, op.tag);
        let flag = Out::new(flag, "flag").map_err(|e| e.on(op.comm))?;
        let message = Out::new(message, "message").map_err(|e| e.on(op.comm))?;
        let status = StatusOut::new(status).map_err(|e| e.on(op.comm))?;
        let Some(src) = op.source else {
            flag.set(1);
            message.set(MPI_MESSAGE_NO_PROC);
            status.set(&Completion::PROC_NULL);
            return Ok(());
        };
        match probe_now(cx, src, &op)? {
            None => flag.set(0),
            Some(found) => {
                let taken = take_found(cx, &op, &found)?;
                flag.set(1);
                status.set(&taken.completion);
                message.set(hold(taken));
            }
        }
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Mrecv`: receives the message a matched probe took; `*message` becomes
    /// `MPI_MESSAGE_NULL`.
    fn MPI_Mrecv / PMPI_Mrecv, large MPI_Mrecv_c / PMPI_Mrecv_c
    where [Count = c_int | MPI_Count] (
        buf: *mut c_void,
        count: Count,
        datatype: MPI_Datatype,
        message: *mut MPI_Message,
        status: *mut MPI_Status,
    ) |st| {
        let cx = &mut st.runtime()?.p2p();
        let handle = Out::new(message, "message")?;
        let status = StatusOut::new(status)?;
        let (comm, c) = match take(handle.get())? {
            Named::NoProc => (crate::comm::SELF, Completion::PROC_NULL),
            Named::Held(m) => {
                let comm = m.comm;
                (comm, deliver(cx, m, buf, MPI_Count::from(count), datatype).map_err(|e| e.on(comm))?)
            }
        };
        handle.set(MPI_MESSAGE_NULL);
        status.set(&c);
        c.check().map_err(|e| e.on(comm))
    }
}

mpi_fn! {
    /// `MPI_Imrecv`: `MPI_Mrecv` as a request; the data is delivered at once, so the request
    /// is complete already.
    fn MPI_Imrecv / PMPI_Imrecv, large MPI_Imrecv_c / PMPI_Imrecv_c
    where [Count = c_int | MPI_Count] (
        buf: *mut c_void,
        count: Count,
        datatype: MPI_Datatype,
        message: *mut MPI_Message,
        request: *mut MPI_Request,
    ) |st| {
        let cx = &mut st.runtime()?.p2p();
        let handle = Out::new(message, "message")?;
        let request = Out::new(request, "request")?;
        let (comm, c, source) = match take(handle.get())? {
            Named::NoProc => (crate::comm::SELF, Completion::PROC_NULL, MPI_PROC_NULL),
            Named::Held(m) => {
                let (comm, source) = (m.comm, m.global_source);
                (comm, deliver(cx, m, buf, MPI_Count::from(count), datatype).map_err(|e| e.on(comm))?, source)
            }
        };
        let status = mpich_channel::Status { source, tag: c.tag, len: c.bytes, truncated: c.error == MPI_ERR_TRUNCATE, ..Default::default() };
        let id = cx.engine.p2p().completed(status, comm).map_err(|e| MpiError::from(e).on(comm))?;
        handle.set(MPI_MESSAGE_NULL);
        request.set(crate::p2p::request::handle(cx.engine, id));
        Ok(())
    }
}
