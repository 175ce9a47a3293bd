//! MPI-IO (MPI 3.1 chapter 13) over POSIX files: files (`MPI_File`), views and data
//! representations, and every data access of the standard's table (explicit offsets,
//! individual and shared file pointers; blocking, nonblocking and split collective;
//! independent and collective), with data sieving for noncontiguous independent access and
//! two-phase collective buffering for collective access.
//!
//! ```text
//!   MPI_File_open(comm, name, amode, info) ──▶ api::manage: amode rules, the file's own
//!        communicator (a duplicate), CREATE by rank 0 then the others, every rank's outcome
//!        gathered: all get the file or all get the error
//!     └─▶ OpenFile in the table (this module), handle = a stable address (see below)
//!   MPI_File_set_view ──▶ view::View (displacement, etype size, the filetype's runs tiled)
//!                         + datarep::Representation (native, external32, registered)
//!   independent: read_at / write / iread / ... ──▶ api::data::access_call: memory side
//!        packed or unpacked (memory, converted by datarep); file side View::runs ──▶ access:
//!        one pread/pwrite per run, or data sieving (read a covering block, modify, write it
//!        back under a byte-range lock)
//!   shared pointer: write_shared / read_ordered / ... ──▶ api::shared + shared: the pointer
//!        in a hidden side file, moved under an fcntl lock (works across hosts)
//!   collective: write_all / iwrite_all / write_all_begin ... ──▶ api::collective::prepare
//!        ──▶ two_phase::Access, run by the progress engine: ranges exchanged, file domains
//!        per aggregator (one per host), data to the aggregators, one pwrite per piece
//! ```
//!
//! **Handles.** In MPICH's ABI an `MPI_File` is a pointer (`struct ADIOI_FileD *`), so a
//! handle here is an address: each open file gets a small boxed anchor whose address is its
//! handle. Nobody dereferences it; it only has to be non-null, stable and unique. Anchors are
//! never freed (8 bytes per file ever opened), so a closed file's handle is never given to
//! another file, and every incoming handle is looked up in the table of open files: a bad or
//! closed handle is `MPI_ERR_FILE`, never a crash. The Fortran handle of a file
//! (`MPI_File_c2f`) is its number in the order of opening, from 1 (0 is `MPI_FILE_NULL`).
//!
//! **Where the state lives.** The table is a process-wide `Mutex` of this module (the
//! runtime's lock is held by every entry point already, so a field of the runtime would do
//! as well; the table predates the file work's access to it): every entry point holds it
//! only for its own step, never while the program's error handler or a conversion of the
//! program's runs for another file call, and never from inside the progress engine (a
//! two-phase access takes what it needs when it starts).
//!
//! **Errors.** A file call's error goes to the file's error handler, `MPI_ERRORS_RETURN`
//! unless the program sets another; an error with no file (a failed open, a bad handle,
//! `MPI_File_delete`) to the handler of `MPI_FILE_NULL` (also `MPI_ERRORS_RETURN` by
//! default), as the standard says. The routing is `api::run`, beside the entry points. A
//! failed system call becomes the class the standard names for its `errno` (`sys::class_of`)
//! with the system's reason in the error string.
//!
//! **Collective calls.** Open, close, `set_size`, `preallocate`, `set_view`, `set_info`,
//! `sync`, `set_atomicity`, `seek_shared` and the ordered accesses exchange on the file's
//! own communicator with the small blocking exchanges of `comm::net`. The collective data
//! accesses (`_all`, `i..._all`, `..._begin`/`_end`) are two-phase I/O (`two_phase`: its
//! module doc gives the algorithm and the hints), an engine operation under a request: the
//! blocking calls wait for it, the nonblocking ones return it, a split begin keeps it for its
//! end (one split collective per file at a time). The independent nonblocking calls
//! (`iread`, `iwrite_at`, `iwrite_shared`, ...) do their access at the call and return a
//! request born complete (`api::nonblocking`).
//!
//! **Data sieving.** A noncontiguous access whose runs lie close together is done in blocks
//! of at most `ind_rd_buffer_size` (reads, 4 MiB) or `ind_wr_buffer_size` (writes, 512 KiB)
//! bytes: one read of the covering block, and for a write the block is modified in memory
//! and written back whole while an `fcntl` write lock holds its bytes, so two processes
//! sieving into interleaved parts of one block do not lose each other's bytes. `romio_ds_read`
//! / `romio_ds_write` = `disable` turn it off (a system call per run). A write-only file's
//! descriptor is opened for reading too when the system allows, as ROMIO does, so its writes
//! can be sieved (the access checks go by the access mode, not the descriptor). A write of
//! one run takes no lock, so one landing in the gap of another process's sieving block at the
//! same moment can be overwritten by that block's stale copy (as with ROMIO); atomic mode
//! rules it out. In atomic mode (`MPI_File_set_atomicity`) a write holds one exclusive lock
//! over its whole span and a read a shared one, so a read sees a concurrent write whole or
//! not at all.
//!
//! **Modules.** `amode` (access-mode rules), `view` (the view arithmetic, pure), `datarep`
//! (data representations and `MPI_Register_datarep`), `sys` (system calls and `errno`
//! classes: the module's `unsafe`), `access` (runs to system calls, data sieving), `memory`
//! (the caller's buffer as bytes), `shared` (the shared file pointer's side file),
//! `two_phase` (collective buffering), `hints` (info keys kept, the defaults reported and
//! the ones that act), `api` (the C entry points).

mod access;
mod amode;
mod api;
mod datarep;
mod hints;
mod memory;
mod shared;
mod sys;
mod two_phase;
mod view;

pub(crate) use api::raise_on_file;

use crate::abi::*;
use crate::comm::CommIdx;
use crate::datatype::{Message, TypeTable};
use crate::error::{MpiError, MpiResult};
use crate::info::Hints;
use std::collections::BTreeMap;
use std::ffi::c_int;
use std::sync::{Mutex, MutexGuard, PoisonError};
use view::View;

/// `MPI_FILE_NULL` (a pointer-valued macro of `mpi.h`, which bindgen leaves out).
pub(crate) const MPI_FILE_NULL: MPI_File = std::ptr::null_mut();

/// Which way the data of an access goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dir {
    Read,
    Write,
}

/// An open file of this process.
#[derive(Debug)]
pub(crate) struct OpenFile {
    pub file: std::fs::File,
    /// The name it was opened by (for messages and `MPI_MODE_DELETE_ON_CLOSE`).
    pub path: String,
    pub amode: c_int,
    /// The file's own communicator: a duplicate of the one it was opened on.
    pub comm: CommIdx,
    pub hints: Hints,
    pub view: View,
    /// The handles `MPI_File_set_view` was given, for `MPI_File_get_view`.
    pub etype: MPI_Datatype,
    pub filetype: MPI_Datatype,
    pub datarep: String,
    /// The individual file pointer, in etypes of the view.
    pub pointer: u64,
    pub atomic: bool,
    /// Whether the descriptor can read (a write-only file's is opened for reading too when
    /// the system allows; without it, writes are not sieved).
    pub can_read: bool,
    pub errhandler: MPI_Errhandler,
    /// Its Fortran handle.
    pub fint: MPI_Fint,
    /// The host of each process of the file's communicator (`comm::create::host_color`,
    /// gathered at open): where two-phase I/O places its aggregators.
    pub hosts: Vec<c_int>,
    /// The shared file pointer (`shared`: a side file made on first use).
    pub shared: shared::SharedPointer,
    /// The split collective begun on the file and not yet ended (at most one at a time).
    pub split: Option<SplitCollective>,
    /// The nonblocking collective accesses started on the file (`MPI_File_iwrite_all`, ...)
    /// that may still run: `MPI_File_close` lets them finish before it frees the file's
    /// communicator. Pruned of finished ones as new ones start.
    pub running: Vec<mpich_channel::ReqId>,
}

/// A split collective access begun (`MPI_File_..._begin`) and not ended yet: one per file
/// at a time, whatever its kind (`api::collective::end` ends them all).
#[derive(Debug, Clone, Copy)]
pub(crate) struct SplitCollective {
    /// The name of the end call that belongs to it.
    pub end: &'static str,
    pub progress: SplitProgress,
}

/// How far a split collective is when its begin call returns.
#[derive(Debug, Clone, Copy)]
pub(crate) enum SplitProgress {
    /// Done in the begin call (the ordered forms): the bytes it moved.
    Done { bytes: usize },
    /// Running in the progress engine (the `_all` forms, two-phase): its request.
    Running(mpich_channel::ReqId),
}

impl OpenFile {
    /// How messages name the file.
    pub fn label(&self) -> String {
        format!("file {:?}", self.path)
    }

    /// The checks every data access `call` of `count` elements of `datatype` in direction
    /// `dir` makes first, and its size: the access mode allows it (explicit offsets and
    /// individual pointers are refused on a `SEQUENTIAL` file unless `sequential_ok`: the
    /// shared-pointer routines), the type is valid and committed, the data is a whole number
    /// of etypes of the view in the file (where the representation may give a value another
    /// size than in memory: `datarep::file_bytes`).
    pub fn check_access(
        &self,
        types: &TypeTable,
        call: &str,
        dir: Dir,
        count: MPI_Count,
        datatype: MPI_Datatype,
        sequential_ok: bool,
    ) -> MpiResult<AccessSize> {
        if !sequential_ok {
            amode::not_sequential(self.amode, call)?;
        }
        match dir {
            Dir::Read => amode::readable(self.amode)?,
            Dir::Write => amode::writable(self.amode)?,
        }
        let message = types.message(count, datatype)?;
        let file_bytes = datarep::file_bytes(
            &self.datarep,
            types,
            datatype,
            count as usize,
            message.bytes,
        )?;
        let etype = self.view.etype_size;
        if !file_bytes.is_multiple_of(etype) {
            return Err(MpiError::new(
                MPI_ERR_TYPE,
                format!(
                    "{call} moves {file_bytes} bytes in the file, not a whole number of the view's etypes ({etype} bytes)"
                ),
            ));
        }
        Ok(AccessSize {
            message,
            file_bytes,
        })
    }

    /// Where a data access goes ([`OpenFile::check_access`]'s arguments): from etype
    /// position `offset` of the view (`None`: the individual file pointer; a negative
    /// offset is `MPI_ERR_ARG`), the file byte runs it covers.
    #[allow(clippy::too_many_arguments)]
    pub fn place(
        &self,
        types: &TypeTable,
        call: &str,
        dir: Dir,
        offset: Option<MPI_Offset>,
        count: MPI_Count,
        datatype: MPI_Datatype,
        sequential_ok: bool,
    ) -> MpiResult<Placed> {
        let AccessSize {
            message,
            file_bytes,
        } = self.check_access(types, call, dir, count, datatype, sequential_ok)?;
        let pos = match offset {
            Some(o) => u64::try_from(o)
                .map_err(|_| MpiError::arg(format!("the offset is {o}; it must be 0 or more")))?,
            None => self.pointer,
        };
        let runs = self
            .view
            .runs(pos * self.view.etype_size as u64, file_bytes);
        Ok(Placed {
            message,
            file_bytes,
            pos,
            runs,
        })
    }
}

/// The size of a data access ([`OpenFile::check_access`]).
pub(crate) struct AccessSize {
    /// The memory side.
    pub message: Message,
    /// Bytes of its data in the file.
    pub file_bytes: usize,
}

/// An access placed in the file ([`OpenFile::place`]).
pub(crate) struct Placed {
    /// The memory side.
    pub message: Message,
    /// Bytes of its data in the file (`message.bytes` unless the view's representation
    /// changes a value's size).
    pub file_bytes: usize,
    /// The first etype position of the view it covers.
    pub pos: u64,
    /// The file's byte runs it covers, in order (`file_bytes` long).
    pub runs: Vec<view::Extent>,
}

impl Placed {
    /// The individual file pointer after the access, if it moved `file_bytes` (whole etypes).
    pub fn pointer_after(&self, file_bytes: usize, etype_size: usize) -> u64 {
        self.pos + (file_bytes / etype_size) as u64
    }
}

/// Every open file of the process, and the error handler of `MPI_FILE_NULL`.
pub(crate) struct FileTable {
    /// Open files by handle (address of their anchor).
    open: BTreeMap<usize, OpenFile>,
    /// The anchors whose addresses are handles; kept for ever, so no address is reused.
    /// (Boxed on purpose: a box's address stays put when the vector grows.)
    #[allow(clippy::vec_box)]
    anchors: Vec<Box<u64>>,
    /// Fortran handle `i + 1` names the file of handle `fortran[i]` (0 once closed).
    fortran: Vec<usize>,
    /// The handler of errors raised with no file (`MPI_File_set_errhandler(MPI_FILE_NULL)`).
    pub null_errhandler: MPI_Errhandler,
}

static FILES: Mutex<FileTable> = Mutex::new(FileTable {
    open: BTreeMap::new(),
    anchors: Vec::new(),
    fortran: Vec::new(),
    null_errhandler: MPI_ERRORS_RETURN,
});

/// The process's file table, held until the guard is dropped.
pub(crate) fn files() -> MutexGuard<'static, FileTable> {
    // A panic while the table was held leaves it usable (each change is one insert or remove).
    FILES.lock().unwrap_or_else(PoisonError::into_inner)
}

impl FileTable {
    /// The open file `h` names, or `MPI_ERR_FILE`.
    pub fn get(&mut self, h: MPI_File) -> MpiResult<&mut OpenFile> {
        self.open
            .get_mut(&(h as usize))
            .ok_or_else(|| invalid_file(h))
    }

    /// Registers an opened file; its handle.
    pub fn insert(&mut self, mut f: OpenFile) -> MPI_File {
        let fint = self.fortran.len() as MPI_Fint + 1;
        let anchor = Box::new(fint as u64);
        let h = &*anchor as *const u64 as usize;
        self.anchors.push(anchor);
        self.fortran.push(h);
        f.fint = fint;
        self.open.insert(h, f);
        h as MPI_File
    }

    /// Takes a file out of the table (it is being closed).
    pub fn remove(&mut self, h: MPI_File) -> Option<OpenFile> {
        let f = self.open.remove(&(h as usize))?;
        if let Some(slot) = self.fortran.get_mut(f.fint as usize - 1) {
            *slot = 0;
        }
        Some(f)
    }

    /// The handler errors of calls on `h` go to, and how messages name the file: the file's,
    /// or `MPI_FILE_NULL`'s when `h` is not an open file.
    pub fn errhandler_of(&self, h: MPI_File) -> (MPI_Errhandler, String) {
        match self.open.get(&(h as usize)) {
            Some(f) => (f.errhandler, f.label()),
            None => (self.null_errhandler, "file MPI_FILE_NULL".to_string()),
        }
    }

    /// The open file whose communicator is `comm`, its handler and label.
    pub fn of_comm(&self, comm: CommIdx) -> Option<(MPI_File, MPI_Errhandler, String)> {
        self.open
            .iter()
            .find(|(_, f)| f.comm == comm)
            .map(|(&h, f)| (h as MPI_File, f.errhandler, f.label()))
    }

    /// `MPI_File_c2f`: the Fortran handle of `h` (0 for `MPI_FILE_NULL` and unknown handles).
    pub fn c2f(&self, h: MPI_File) -> MPI_Fint {
        self.open.get(&(h as usize)).map_or(0, |f| f.fint)
    }

    /// `MPI_File_f2c`: the file of a Fortran handle (`MPI_FILE_NULL` if none is open).
    pub fn f2c(&self, fint: MPI_Fint) -> MPI_File {
        let h = usize::try_from(fint)
            .ok()
            .and_then(|i| i.checked_sub(1))
            .and_then(|i| self.fortran.get(i).copied())
            .unwrap_or(0);
        if self.open.contains_key(&h) {
            h as MPI_File
        } else {
            MPI_FILE_NULL
        }
    }
}

/// The handler of the file's own communicator: the file's handler when it is predefined,
/// else `MPI_ERRORS_RETURN`. Errors that `MPI_Wait`/`MPI_Test` report for the file's requests
/// (a nonblocking collective access) go to the file's handler, function or not
/// (`api::raise_on_file`); this one only serves when the file is closed by then.
pub(crate) fn request_errhandler(file_handler: MPI_Errhandler) -> MPI_Errhandler {
    match file_handler {
        MPI_ERRORS_ARE_FATAL | MPI_ERRORS_ABORT => file_handler,
        _ => MPI_ERRORS_RETURN,
    }
}

#[cold]
fn invalid_file(h: MPI_File) -> MpiError {
    let detail = if h.is_null() {
        "the file is MPI_FILE_NULL".to_string()
    } else {
        format!("{h:p} is not an open file (closed, or never opened)")
    };
    MpiError::new(MPI_ERR_FILE, detail)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dummy(path: &str) -> OpenFile {
        OpenFile {
            file: std::fs::File::open("/dev/null").unwrap(),
            path: path.into(),
            amode: MPI_MODE_RDONLY,
            comm: crate::comm::SELF,
            hints: Hints::default(),
            view: View::bytes(),
            etype: MPI_BYTE,
            filetype: MPI_BYTE,
            datarep: "native".into(),
            pointer: 0,
            atomic: false,
            can_read: true,
            errhandler: MPI_ERRORS_RETURN,
            fint: 0,
            hosts: vec![0],
            shared: shared::SharedPointer::new(path, 0, 0),
            split: None,
            running: Vec::new(),
        }
    }

    #[test]
    fn handles_are_unique_checked_and_convert_to_fortran() {
        let mut t = FileTable {
            open: BTreeMap::new(),
            anchors: Vec::new(),
            fortran: Vec::new(),
            null_errhandler: MPI_ERRORS_RETURN,
        };
        let a = t.insert(dummy("a"));
        let b = t.insert(dummy("b"));
        assert!(!a.is_null() && a != b);
        assert_eq!(t.get(a).unwrap().path, "a");
        assert_eq!((t.c2f(a), t.c2f(b)), (1, 2));
        assert_eq!(t.f2c(2), b);
        assert!(t.remove(a).is_some());
        assert_eq!(t.get(a).unwrap_err().class, MPI_ERR_FILE);
        assert_eq!(t.get(MPI_FILE_NULL).unwrap_err().class, MPI_ERR_FILE);
        assert_eq!(t.f2c(1), MPI_FILE_NULL);
        assert_eq!(
            (t.f2c(0), t.f2c(-3), t.f2c(99)),
            (MPI_FILE_NULL, MPI_FILE_NULL, MPI_FILE_NULL)
        );
        let c = t.insert(dummy("c"));
        assert!(c != a, "a closed file's handle is not reused");
        assert_eq!(t.errhandler_of(a).1, "file MPI_FILE_NULL");
    }
}
