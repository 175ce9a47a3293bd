//! Info objects: ordered `key -> value` string maps (their calls, in `api`: `MPI_Info_create`, `MPI_Info_set`,
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
//!
//! **Owns** the info table ([`InfoTable`]) and the hints a communicator keeps ([`Hints`]).
//! **Entry:** the table; the C functions are in `api`.

mod api;

use crate::abi::*;
use crate::error::{MpiError, MpiResult};
use crate::handle::{Kind, Table};
use std::ffi::{c_char, CStr};

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

    /// Every (key, value), in the order they were set.
    pub fn pairs(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v.as_str()))
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
        InfoTable {
            table: Table::new(Kind::Info),
            env: environment(size),
        }
    }

    /// The same objects, with `MPI_INFO_ENV` for a job of `size` processes (at `MPI_Init`,
    /// for the objects made before it).
    pub fn for_job(mut self, size: usize) -> InfoTable {
        self.env = environment(size);
        self
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
        self.table
            .get_mut(handle)
            .ok_or_else(|| invalid_info(handle))
    }

    /// Sets `key` to `value` in the info object `handle` (a call's answer written into its
    /// info argument, as `MPI_Comm_split_type` does with the resource type it used).
    pub fn set_key(&mut self, handle: MPI_Info, key: &str, value: &str) -> MpiResult<()> {
        self.get_mut(handle)?
            .set(key.to_string(), value.to_string());
        Ok(())
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
        self.table.insert(hints).map(|(_, h)| h).ok_or_else(|| {
            MpiError::new(
                MPI_ERR_INTERN,
                "too many info objects exist at once; free some with MPI_Info_free",
            )
        })
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
