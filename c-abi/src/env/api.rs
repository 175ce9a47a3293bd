//! The C entry points of the environment: `MPI_Wtime`, `MPI_Wtick`,
//! `MPI_Get_processor_name`, `MPI_Get_version`, `MPI_Get_library_version`, `MPI_Pcontrol`,
//! `MPI_Alloc_mem`, `MPI_Free_mem`.

use super::{host_name, monotonic};
use crate::abi::*;
use crate::cptr::{write_c_string, Out};
use crate::error::MpiError;
use crate::runtime::export::mpi_fn;
use std::ffi::{c_char, c_int, c_void};

mpi_fn! {
    /// `MPI_Wtime`: seconds on the monotonic clock (since an arbitrary origin; each host has
    /// its own, see `MPI_WTIME_IS_GLOBAL`).
    raw fn MPI_Wtime / PMPI_Wtime() -> f64 {
        monotonic(false)
    }
}

mpi_fn! {
    /// `MPI_Wtick`: the resolution of `MPI_Wtime` in seconds.
    raw fn MPI_Wtick / PMPI_Wtick() -> f64 {
        let tick = monotonic(true);
        if tick > 0.0 { tick } else { 1e-9 }
    }
}

mpi_fn! {
    /// `MPI_Get_processor_name`: the host name (at most `MPI_MAX_PROCESSOR_NAME - 1` bytes).
    fn MPI_Get_processor_name / PMPI_Get_processor_name(
        name: *mut c_char,
        resultlen: *mut c_int,
    ) |_st| {
        let len_out = Out::new(resultlen, "resultlen")?;
        let len = write_c_string(name, MPI_MAX_PROCESSOR_NAME as usize, &host_name(), "name")?;
        len_out.set(len);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Get_version`: the MPI standard version of this library's interface (may be called
    /// at any time).
    fn MPI_Get_version / PMPI_Get_version(version: *mut c_int, subversion: *mut c_int) |_st| {
        let v = Out::new(version, "version")?;
        let s = Out::new(subversion, "subversion")?;
        v.set(MPI_VERSION);
        s.set(MPI_SUBVERSION);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Get_library_version`: which library this is (may be called at any time).
    fn MPI_Get_library_version / PMPI_Get_library_version(
        version: *mut c_char,
        resultlen: *mut c_int,
    ) |st| {
        let len_out = Out::new(resultlen, "resultlen")?;
        let channel = match st.runtime_ref() {
            Some(rt) => format!(", channel {}", rt.engine.p2p_ref().channel_name()),
            None => String::new(),
        };
        let text = format!(
            "c-abi MPI {} (MPI {MPI_VERSION}.{MPI_SUBVERSION}, MPICH ABI): MPICH-style channel device over BIP and FM{channel}",
            env!("CARGO_PKG_VERSION"),
        );
        let len = write_c_string(version, MPI_MAX_LIBRARY_VERSION_STRING as usize, &text, "version")?;
        len_out.set(len);
        Ok(())
    }
}

/// `MPI_Pcontrol`: profiling control, for tools that replace it; the library itself does
/// nothing with it.
///
/// In C it is variadic (`int MPI_Pcontrol(const int level, ...)`). Stable Rust cannot define a
/// variadic function, but on the System V x86-64 and AArch64 Linux calling conventions a
/// variadic call passes its fixed arguments exactly as a non-variadic one does and the extra
/// ones where this function never looks, so this definition is compatible with every call.
#[no_mangle]
pub extern "C" fn PMPI_Pcontrol(level: c_int) -> c_int {
    let _ = level;
    MPI_SUCCESS
}

/// `MPI_Pcontrol`: the same function as [`PMPI_Pcontrol`], under its replaceable name.
#[no_mangle]
pub extern "C" fn MPI_Pcontrol(level: c_int) -> c_int {
    PMPI_Pcontrol(level)
}

mpi_fn! {
    /// `MPI_Alloc_mem`: `size` bytes, aligned to 64; `baseptr` is really a `void **`.
    fn MPI_Alloc_mem / PMPI_Alloc_mem(size: MPI_Aint, info: MPI_Info, baseptr: *mut c_void) |st| {
        let rt = st.runtime()?;
        let out = Out::new(baseptr.cast::<*mut c_void>(), "baseptr")?;
        let size = usize::try_from(size)
            .map_err(|_| MpiError::arg(format!("size is {size}; it must be >= 0")))?;
        rt.infos.hints(info)?;
        out.set(rt.allocs.alloc(size)?);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Free_mem`: frees a block from `MPI_Alloc_mem`.
    fn MPI_Free_mem / PMPI_Free_mem(base: *mut c_void) |st| {
        let rt = st.runtime()?;
        rt.allocs.free(base)
    }
}
