//! Info objects: ordered `key -> value` string maps (`MPI_Info_create`, `MPI_Info_set`,
//! `MPI_Info_get`, `MPI_Info_get_string`, `MPI_Info_get_valuelen`, `MPI_Info_get_nkeys`,
//! `MPI_Info_get_nthkey`, `MPI_Info_delete`, `MPI_Info_dup`, `MPI_Info_free`), and
//! `MPI_INFO_ENV` (`MPI_Info_create_env` copies it).
//!
//! Handles are MPICH's: `0x9c000000 | slot` for created objects, `0x5c000001` for
//! `MPI_INFO_ENV`, which describes how the process was started (`command`, `argv`,
//! `maxprocs`, `host`, `wdir`). Keys keep the order they were first set in, as `get_nthkey`
//! must be stable. Keys are at most `MPI_MAX_INFO_KEY` bytes (else `MPI_ERR_INFO_KEY`), values
//! at most `MPI_MAX_INFO_VAL` (else `MPI_ERR_INFO_VALUE`). The library acts on no hint: it
//! stores what it is given (communicators keep theirs for `MPI_Comm_get_info`).

use crate::abi::*;
use crate::handle::{Kind, Table};
use crate::cptr::{write_c_string, Out};
use crate::error::{MpiError, MpiResult};
use crate::runtime::export::mpi_fn;
use std::ffi::{c_char, c_int, CStr};

/// The contents of one info object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Hints {
    entries: Vec<(String, String)>,
}

impl Hints {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    pub fn set(&mut self, key: String, value: String) {
        match self.entries.iter_mut().find(|(k, _)| *k == key) {
            Some(entry) => entry.1 = value,
            None => self.entries.push((key, value)),
        }
    }

    fn delete(&mut self, key: &str) -> bool {
        let before = self.entries.len();
        self.entries.retain(|(k, _)| k != key);
        self.entries.len() != before
    }
}

/// Every info object of the process.
pub(crate) struct InfoTable {
    table: Table<Hints>,
    env: Hints,
}

impl InfoTable {
    /// The table, with `MPI_INFO_ENV` for a job of `size` processes.
    pub fn new(size: usize) -> InfoTable {
        InfoTable { table: Table::new(Kind::Info), env: environment(size) }
    }

    /// The object a handle names: `MPI_ERR_INFO` unless it is live.
    pub fn get(&self, handle: MPI_Info) -> MpiResult<&Hints> {
        if handle == MPI_INFO_ENV {
            return Ok(&self.env);
        }
        self.table.get(handle).ok_or_else(|| invalid_info(handle))
    }

    fn get_mut(&mut self, handle: MPI_Info) -> MpiResult<&mut Hints> {
        if handle == MPI_INFO_ENV {
            return Ok(&mut self.env);
        }
        self.table.get_mut(handle).ok_or_else(|| invalid_info(handle))
    }

    /// The hints of an info argument that may be `MPI_INFO_NULL` (no hints).
    pub fn hints(&self, handle: MPI_Info) -> MpiResult<Hints> {
        if handle == MPI_INFO_NULL {
            return Ok(Hints::default());
        }
        self.get(handle).cloned()
    }

    /// A new handle for `hints`.
    pub fn insert(&mut self, hints: Hints) -> MpiResult<MPI_Info> {
        self.table.insert(hints).map(|(_, h)| h).ok_or_else(|| MpiError::new(MPI_ERR_INTERN, "too many info objects exist at once; free some with MPI_Info_free"))
    }

    fn free(&mut self, handle: MPI_Info) -> MpiResult<()> {
        self.get(handle)?;
        if handle == MPI_INFO_ENV {
            return Err(MpiError::new(
                MPI_ERR_INFO,
                "MPI_INFO_ENV is predefined and cannot be freed",
            ));
        }
        self.table.remove(handle);
        Ok(())
    }
}

#[cold]
fn invalid_info(handle: MPI_Info) -> MpiError {
    let detail = if handle == MPI_INFO_NULL {
        "the info object is MPI_INFO_NULL; create one with MPI_Info_create".to_string()
    } else {
        format!("0x{handle:08x} is not an info object (or it was freed)")
    };
    MpiError::new(MPI_ERR_INFO, detail)
}

/// `MPI_INFO_ENV`: how this process was started.
fn environment(size: usize) -> Hints {
    let mut env = Hints::default();
    let args: Vec<String> = std::env::args().collect();
    if let Some(command) = args.first() {
        env.set("command".into(), command.clone());
    }
    if args.len() > 1 {
        env.set("argv".into(), args[1..].join(" "));
    }
    env.set("maxprocs".into(), size.to_string());
    let mut name = [0u8; 256];
    // SAFETY: gethostname writes at most name.len() bytes into our buffer.
    if unsafe { libc::gethostname(name.as_mut_ptr().cast(), name.len()) } == 0 {
        let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
        env.set(
            "host".into(),
            String::from_utf8_lossy(&name[..end]).into_owned(),
        );
    }
    if let Ok(dir) = std::env::current_dir() {
        env.set("wdir".into(), dir.display().to_string());
    }
    env
}

/// Reads a C string argument (NULL is `MPI_ERR_ARG`), truncated to `max` bytes.
pub(crate) fn read_c_string(p: *const c_char, max: usize, what: &str) -> MpiResult<String> {
    if p.is_null() {
        return Err(MpiError::arg(format!(
            "the {what} argument is NULL; pass a NUL-terminated string"
        )));
    }
    // SAFETY: a string argument of an MPI call is NUL-terminated (the caller's contract).
    let bytes = unsafe { CStr::from_ptr(p) }.to_bytes();
    Ok(String::from_utf8_lossy(&bytes[..bytes.len().min(max)]).into_owned())
}

/// An info key argument: `MPI_ERR_INFO_KEY` if NULL, empty or longer than `MPI_MAX_INFO_KEY`.
fn read_key(key: *const c_char) -> MpiResult<String> {
    let bad = |why: String| MpiError::new(MPI_ERR_INFO_KEY, why);
    if key.is_null() {
        return Err(bad("the key is NULL".into()));
    }
    let k = read_c_string(key, usize::MAX, "key")?;
    if k.is_empty() {
        return Err(bad("the key is empty".into()));
    }
    if k.len() > MPI_MAX_INFO_KEY as usize {
        return Err(bad(format!(
            "the key is {} bytes long; at most MPI_MAX_INFO_KEY ({MPI_MAX_INFO_KEY}) are allowed",
            k.len()
        )));
    }
    Ok(k)
}

mpi_fn! {
    /// `MPI_Info_create`: a new, empty info object.
    fn MPI_Info_create / PMPI_Info_create(info: *mut MPI_Info) |st| {
        let rt = st.runtime()?;
        let out = Out::new(info, "info")?;
        out.set(rt.infos.insert(Hints::default())?);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Info_create_env`: a new info object describing how the process was started (the
    /// contents of `MPI_INFO_ENV`; `argc` and `argv` are not needed here).
    fn MPI_Info_create_env / PMPI_Info_create_env(_argc: c_int, _argv: *mut *mut c_char, info: *mut MPI_Info) |st| {
        let rt = st.runtime()?;
        let out = Out::new(info, "info")?;
        let env = rt.infos.get(MPI_INFO_ENV)?.clone();
        out.set(rt.infos.insert(env)?);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Info_set`: sets (or replaces) `key`.
    fn MPI_Info_set / PMPI_Info_set(info: MPI_Info, key: *const c_char, value: *const c_char) |st| {
        let rt = st.runtime()?;
        rt.infos.get(info)?;
        let k = read_key(key)?;
        if value.is_null() {
            return Err(MpiError::new(MPI_ERR_INFO_VALUE, "the value is NULL"));
        }
        let v = read_c_string(value, usize::MAX, "value")?;
        if v.len() > MPI_MAX_INFO_VAL as usize {
            return Err(MpiError::new(MPI_ERR_INFO_VALUE, format!("the value is {} bytes long; at most MPI_MAX_INFO_VAL ({MPI_MAX_INFO_VAL}) are allowed", v.len())));
        }
        rt.infos.get_mut(info)?.set(k, v);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Info_get`: the value of `key` (at most `valuelen` bytes of it, then a NUL).
    fn MPI_Info_get / PMPI_Info_get(info: MPI_Info, key: *const c_char, valuelen: c_int, value: *mut c_char, flag: *mut c_int) |st| {
        let rt = st.runtime()?;
        let i = rt.infos.get(info)?;
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
        let rt = st.runtime()?;
        let i = rt.infos.get(info)?;
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
        let rt = st.runtime()?;
        let i = rt.infos.get(info)?;
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
        let rt = st.runtime()?;
        let i = rt.infos.get(info)?;
        Out::new(nkeys, "nkeys")?.set(i.entries.len() as c_int);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Info_get_nthkey`: the `n`-th key (0-based, in the order keys were first set).
    fn MPI_Info_get_nthkey / PMPI_Info_get_nthkey(info: MPI_Info, n: c_int, key: *mut c_char) |st| {
        let rt = st.runtime()?;
        let i = rt.infos.get(info)?;
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
        let rt = st.runtime()?;
        rt.infos.get(info)?;
        let k = read_key(key)?;
        if !rt.infos.get_mut(info)?.delete(&k) {
            return Err(MpiError::new(MPI_ERR_INFO_NOKEY, format!("the key \"{k}\" is not set")));
        }
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Info_dup`: a new info object with the same keys and values.
    fn MPI_Info_dup / PMPI_Info_dup(info: MPI_Info, newinfo: *mut MPI_Info) |st| {
        let rt = st.runtime()?;
        let copy = rt.infos.get(info)?.clone();
        let out = Out::new(newinfo, "newinfo")?;
        out.set(rt.infos.insert(copy)?);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Info_free`: frees `*info` and sets it to `MPI_INFO_NULL`.
    fn MPI_Info_free / PMPI_Info_free(info: *mut MPI_Info) |st| {
        let rt = st.runtime()?;
        let h = Out::new(info, "info")?;
        rt.infos.free(h.get())?;
        h.set(MPI_INFO_NULL);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_keep_their_order_and_handles_their_objects() {
        let mut t = InfoTable::new(4);
        let mut h = Hints::default();
        h.set("b".into(), "1".into());
        h.set("a".into(), "2".into());
        h.set("b".into(), "3".into());
        assert_eq!(
            h.entries,
            vec![("b".into(), "3".into()), ("a".into(), "2".into())]
        );
        let handle = t.insert(h.clone()).unwrap();
        assert_eq!(t.get(handle).unwrap(), &h);
        t.free(handle).unwrap();
        assert_eq!(t.get(handle).unwrap_err().class, MPI_ERR_INFO);
        assert_eq!(t.get(MPI_INFO_ENV).unwrap().get("maxprocs"), Some("4"));
        assert_eq!(t.free(MPI_INFO_ENV).unwrap_err().class, MPI_ERR_INFO);
    }
}
