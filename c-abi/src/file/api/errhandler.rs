//! File error handlers: `MPI_File_create_errhandler`, `MPI_File_set_errhandler`,
//! `MPI_File_get_errhandler`, `MPI_File_call_errhandler`. `MPI_FILE_NULL` has a handler too:
//! the one of errors raised with no open file (a failed `MPI_File_open`), and the one a newly
//! opened file starts with; both start as `MPI_ERRORS_RETURN`.

use super::file_fn;
use crate::abi::*;
use crate::comm::WORLD;
use crate::cptr::Out;
use crate::errhandler::{call_file_user, check_file_errhandler, fatal};
use crate::error::MpiError;
use crate::file::{files, MPI_FILE_NULL};
use std::ffi::c_int;

file_fn! {
    /// `MPI_File_create_errhandler`: a handler for files that calls the program's function.
    fn MPI_File_create_errhandler / PMPI_File_create_errhandler(
        file_errhandler_fn: MPI_File_errhandler_function,
        errhandler: *mut MPI_Errhandler,
    ) |rt, _route| {
        let out = Out::new(errhandler, "errhandler")?;
        let f = file_errhandler_fn.ok_or_else(|| MpiError::arg("the handler function is NULL"))?;
        out.set(rt.errhandlers.create_for_files(f)?);
        Ok(())
    }
}

file_fn! {
    /// `MPI_File_set_errhandler`: the handler of a file's errors (of `MPI_FILE_NULL`: of
    /// errors with no file, and the one files opened from now on start with).
    fn MPI_File_set_errhandler / PMPI_File_set_errhandler(file: MPI_File, errhandler: MPI_Errhandler) |rt, route| {
        *route = file;
        let h = check_file_errhandler(&rt.errhandlers, errhandler)?;
        let mut t = files();
        if file == MPI_FILE_NULL {
            t.null_errhandler = h;
        } else {
            let f = t.get(file)?;
            f.errhandler = h;
            rt.comms.get_mut(f.comm).errhandler = crate::file::request_errhandler(h);
        }
        Ok(())
    }
}

file_fn! {
    /// `MPI_File_get_errhandler`: the handler of a file (or of `MPI_FILE_NULL`).
    fn MPI_File_get_errhandler / PMPI_File_get_errhandler(file: MPI_File, errhandler: *mut MPI_Errhandler) |_rt, route| {
        *route = file;
        let out = Out::new(errhandler, "errhandler")?;
        let mut t = files();
        let h = if file == MPI_FILE_NULL { t.null_errhandler } else { t.get(file)?.errhandler };
        out.set(h);
        Ok(())
    }
}

file_fn! {
    /// `MPI_File_call_errhandler`: invokes the file's handler on `errorcode`; returns
    /// `MPI_SUCCESS` when the handler returns.
    fn MPI_File_call_errhandler / PMPI_File_call_errhandler(fh: MPI_File, errorcode: c_int) |rt, route| {
        *route = fh;
        let (handler, label) = {
            let mut t = files();
            if fh == MPI_FILE_NULL {
                (t.null_errhandler, "file MPI_FILE_NULL".to_string())
            } else {
                let f = t.get(fh)?;
                (f.errhandler, f.label())
            }
        };
        if handler == MPI_ERRORS_RETURN {
            return Ok(());
        }
        if let Some(f) = rt.errhandlers.file_function(handler) {
            call_file_user(f, fh, errorcode);
            return Ok(());
        }
        let class = crate::errhandler::codes::library_class(errorcode).unwrap_or(errorcode);
        let e = MpiError::new(class, "raised by the program with MPI_File_call_errhandler");
        fatal("MPI_File_call_errhandler", Some(rt.comms.get(WORLD).rank), Some((&label, handler)), &e)
    }
}
