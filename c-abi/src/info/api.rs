//! The C entry points of info objects: `MPI_Info_create`, `MPI_Info_create_env`,
//! `MPI_Info_set`, `MPI_Info_get`, `MPI_Info_get_string`, `MPI_Info_get_valuelen`,
//! `MPI_Info_get_nkeys`, `MPI_Info_get_nthkey`, `MPI_Info_delete`, `MPI_Info_dup`,
//! `MPI_Info_free`.

use super::{read_c_string, read_key, Hints};
use crate::abi::*;
use crate::cptr::{write_c_string, Out};
use crate::error::MpiError;
use crate::runtime::export::mpi_fn;
use std::ffi::{c_char, c_int};

mpi_fn! {
    /// `MPI_Info_create`: a new, empty info object.
    fn MPI_Info_create / PMPI_Info_create(info: *mut MPI_Info) |st| {
        let infos = st.infos();
        let out = Out::new(info, "info")?;
        out.set(infos.insert(Hints::default())?);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Info_create_env`: a new info object describing how the process was started (the
    /// contents of `MPI_INFO_ENV`; `argc` and `argv` are not needed here).
    fn MPI_Info_create_env / PMPI_Info_create_env(_argc: c_int, _argv: *mut *mut c_char, info: *mut MPI_Info) |st| {
        let infos = st.infos();
        let out = Out::new(info, "info")?;
        let env = infos.get(MPI_INFO_ENV)?.clone();
        out.set(infos.insert(env)?);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Info_set`: sets (or replaces) `key`.
    fn MPI_Info_set / PMPI_Info_set(info: MPI_Info, key: *const c_char, value: *const c_char) |st| {
        let infos = st.infos();
        infos.get(info)?;
        let k = read_key(key)?;
        if value.is_null() {
            return Err(MpiError::new(MPI_ERR_INFO_VALUE, "the value is NULL"));
        }
        let v = read_c_string(value, usize::MAX, "value")?;
        if v.len() > MPI_MAX_INFO_VAL as usize {
            return Err(MpiError::new(MPI_ERR_INFO_VALUE, format!("the value is {} bytes long; at most MPI_MAX_INFO_VAL ({MPI_MAX_INFO_VAL}) are allowed", v.len())));
        }
        infos.get_mut(info)?.set(k, v);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Info_get`: the value of `key` (at most `valuelen` bytes of it, then a NUL).
    fn MPI_Info_get / PMPI_Info_get(info: MPI_Info, key: *const c_char, valuelen: c_int, value: *mut c_char, flag: *mut c_int) |st| {
        let infos = st.infos();
        let i = infos.get(info)?;
        let k = read_key(key)?;
        let flag = Out::new(flag, "flag")?;
        if valuelen < 0 {
            return Err(MpiError::arg(format!("valuelen is {valuelen}; it must be >= 0")));
        }
        match i.get(&k) {
            Some(v) => {
                write_c_string(value, valuelen as usize + 1, v, "value")?;
                flag.set(1);
            }
            None => flag.set(0),
        }
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Info_get_string`: the value of `key` in a `*buflen`-byte buffer; `*buflen` becomes
    /// the length the whole value needs, NUL included.
    fn MPI_Info_get_string / PMPI_Info_get_string(info: MPI_Info, key: *const c_char, buflen: *mut c_int, value: *mut c_char, flag: *mut c_int) |st| {
        let infos = st.infos();
        let i = infos.get(info)?;
        let k = read_key(key)?;
        let len = Out::new(buflen, "buflen")?;
        let flag = Out::new(flag, "flag")?;
        match i.get(&k) {
            Some(v) => {
                let cap = len.get();
                if cap > 0 {
                    write_c_string(value, cap as usize, v, "value")?;
                }
                len.set(v.len() as c_int + 1);
                flag.set(1);
            }
            None => flag.set(0),
        }
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Info_get_valuelen`: the length of `key`'s value (without the NUL).
    fn MPI_Info_get_valuelen / PMPI_Info_get_valuelen(info: MPI_Info, key: *const c_char, valuelen: *mut c_int, flag: *mut c_int) |st| {
        let infos = st.infos();
        let i = infos.get(info)?;
        let k = read_key(key)?;
        let len = Out::new(valuelen, "valuelen")?;
        let flag = Out::new(flag, "flag")?;
        match i.get(&k) {
            Some(v) => {
                len.set(v.len() as c_int);
                flag.set(1);
            }
            None => flag.set(0),
        }
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Info_get_nkeys`: how many keys are set.
    fn MPI_Info_get_nkeys / PMPI_Info_get_nkeys(info: MPI_Info, nkeys: *mut c_int) |st| {
        let infos = st.infos();
        let i = infos.get(info)?;
        Out::new(nkeys, "nkeys")?.set(i.entries.len() as c_int);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Info_get_nthkey`: the `n`-th key (0-based, in the order keys were first set).
    fn MPI_Info_get_nthkey / PMPI_Info_get_nthkey(info: MPI_Info, n: c_int, key: *mut c_char) |st| {
        let infos = st.infos();
        let i = infos.get(info)?;
        let Some((k, _)) = usize::try_from(n).ok().and_then(|n| i.entries.get(n)) else {
            return Err(MpiError::arg(format!("n is {n}; the info object has keys 0..{}", i.entries.len())));
        };
        write_c_string(key, MPI_MAX_INFO_KEY as usize + 1, k, "key")?;
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Info_delete`: removes `key` (`MPI_ERR_INFO_NOKEY` if it is not set).
    fn MPI_Info_delete / PMPI_Info_delete(info: MPI_Info, key: *const c_char) |st| {
        let infos = st.infos();
        infos.get(info)?;
        let k = read_key(key)?;
        if !infos.get_mut(info)?.delete(&k) {
            return Err(MpiError::new(MPI_ERR_INFO_NOKEY, format!("the key \"{k}\" is not set")));
        }
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Info_dup`: a new info object with the same keys and values.
    fn MPI_Info_dup / PMPI_Info_dup(info: MPI_Info, newinfo: *mut MPI_Info) |st| {
        let infos = st.infos();
        let copy = infos.get(info)?.clone();
        let out = Out::new(newinfo, "newinfo")?;
        out.set(infos.insert(copy)?);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Info_free`: frees `*info` and sets it to `MPI_INFO_NULL`.
    fn MPI_Info_free / PMPI_Info_free(info: *mut MPI_Info) |st| {
        let infos = st.infos();
        let h = Out::new(info, "info")?;
        infos.free(h.get())?;
        h.set(MPI_INFO_NULL);
        Ok(())
    }
}
