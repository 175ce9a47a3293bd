//! Opening, closing and managing files: `MPI_File_open`, `MPI_File_close`,
//! `MPI_File_delete`, `MPI_File_set_size`, `MPI_File_preallocate`, `MPI_File_get_size`,
//! `MPI_File_get_group`, `MPI_File_get_amode`, `MPI_File_set_info`, `MPI_File_get_info`,
//! `MPI_File_sync`, `MPI_File_set_atomicity`, `MPI_File_get_atomicity`, `MPI_File_c2f`,
//! `MPI_File_f2c`.
//!
//! **Open** is collective and all-or-nothing: the processes make the file's communicator (a
//! duplicate of theirs) and gather their access modes (all must be equal and valid: else
//! every process gets `MPI_ERR_NOT_SAME` or `MPI_ERR_AMODE`). With `MPI_MODE_CREATE`, rank 0
//! creates the file first (with `MPI_MODE_EXCL`, exclusively) and the others open what it
//! made; then every process's outcome is gathered, and if any failed, every process closes
//! what it opened and returns the class of the lowest failing rank, whose reason (the
//! system's) is in the error string.

use super::{agree, file_fn, gather, reaching, TAG_FILE};
use crate::abi::*;
use crate::comm::make::install;
use crate::comm::net::{as_bytes, as_bytes_mut, Net};
use crate::comm::CommIdx;
use crate::cptr::Out;
use crate::error::{MpiError, MpiResult};
use crate::file::amode::{self, open_options};
use crate::file::hints::in_force;
use crate::file::shared::SharedPointer;
use crate::file::sys::{self, io_error};
use crate::file::view::View;
use crate::file::{files, OpenFile, MPI_FILE_NULL};
use crate::info::{read_c_string, Hints};
use crate::runtime::export::mpi_fn;
use crate::runtime::thread::Reach;
use crate::runtime::Runtime;
use std::ffi::{c_char, c_int};
use std::io;

/// The longest file name accepted (bytes).
const NAME_MAX: usize = 4096;

/// An open outcome as a word for the exchange: 0, or the class and the `errno`.
fn outcome_word(r: &Result<std::fs::File, MpiError>, errno: i32) -> u64 {
    match r {
        Ok(_) => 0,
        Err(e) => e.class as u64 | (errno as u64) << 8,
    }
}

/// Opens `name` on this process: the file, or the error and its `errno`. A write-only file
/// is opened for reading too if the system allows (data sieving reads before it writes).
fn open_here(name: &str, amode: c_int, create: bool) -> (Result<std::fs::File, MpiError>, i32) {
    if amode & MPI_MODE_WRONLY != 0 {
        match open_options(amode, create, true).open(name) {
            Ok(f) => return (Ok(f), 0),
            Err(e) if !matches!(e.raw_os_error(), Some(libc::EACCES) | Some(libc::EPERM)) => {
                return failed_open(name, &e)
            }
            Err(_) => {} // not readable: write-only it is, without sieving
        }
    }
    match open_options(amode, create, false).open(name) {
        Ok(f) => (Ok(f), 0),
        Err(e) => failed_open(name, &e),
    }
}

fn failed_open(name: &str, e: &io::Error) -> (Result<std::fs::File, MpiError>, i32) {
    (
        Err(io_error(&format!("open({name:?})"), e)),
        e.raw_os_error().unwrap_or(0),
    )
}

fn open(
    a: &mut impl Reach,
    comm: MPI_Comm,
    filename: *const c_char,
    amode_arg: c_int,
    info: MPI_Info,
    fh: *mut MPI_File,
) -> MpiResult<()> {
    let out = Out::new(fh, "fh")?;
    let (parent, name, hints, group) = a.rt(|rt| {
        let (parent, c) = rt.comms.lookup(comm)?;
        crate::comm::require_intra(c, "a file")?;
        let name = read_c_string(filename, NAME_MAX, "filename")?;
        let hints = rt.infos.hints(info)?;
        Ok((parent, name, hints, rt.comms.get(parent).group()))
    })?;
    // The file's own communicator (`comm::create::create_from`, every member in it).
    let ctxs = a.agree(parent, true)?;
    let idx = a.rt(|rt| Ok(install(&mut rt.comm(), parent, ctxs, group).0))?;
    match open_collectively(a, idx, &name, amode_arg) {
        Ok(file) => {
            // One exchange: where each process runs (two-phase places its aggregators by
            // host) and rank 0's start of the shared file pointer. If it fails, the file's
            // communicator goes too.
            let net = a.rt(|rt| Ok(Net::local(rt.comms.get(idx))))?;
            let first = if net.me == 0 {
                super::shared::first_pointer(&file, amode_arg)
            } else {
                [0, 0]
            };
            let mine = [crate::comm::create::host_color() as u64, first[0], first[1]];
            let mut all = vec![0u64; 3 * net.size()];
            let exchanged = net.allgather(a, as_bytes(&mine), as_bytes_mut(&mut all), TAG_FILE);
            if let Err(e) = exchanged {
                a.rt(|rt| crate::comm::create::free(&mut rt.comm(), idx))?;
                return Err(e);
            }
            let hosts: Vec<c_int> = all.chunks_exact(3).map(|w| w[0] as c_int).collect();
            let shared = SharedPointer::new(&name, all[1], all[2]);
            let pointer = if amode_arg & MPI_MODE_APPEND != 0 {
                file.metadata().map_err(|e| io_error("fstat", &e))?.len()
            } else {
                0
            };
            a.rt(|rt| {
                let errhandler = files().null_errhandler;
                rt.comms.get_mut(idx).errhandler = crate::file::request_errhandler(errhandler);
                let h = files().insert(OpenFile {
                    can_read: sys::can_read(&file),
                    file,
                    path: name,
                    amode: amode_arg,
                    comm: idx,
                    hints,
                    view: View::bytes(),
                    etype: MPI_BYTE,
                    filetype: MPI_BYTE,
                    datarep: "native".into(),
                    pointer,
                    atomic: false,
                    errhandler,
                    fint: 0,
                    hosts,
                    shared,
                    split: None,
                    running: Vec::new(),
                });
                out.set(h);
                Ok(())
            })
        }
        Err(e) => {
            a.rt(|rt| crate::comm::create::free(&mut rt.comm(), idx))?;
            Err(e)
        }
    }
}

/// The collective part of open on the file's communicator `idx`.
fn open_collectively(
    a: &mut impl Reach,
    idx: CommIdx,
    name: &str,
    amode_arg: c_int,
) -> MpiResult<std::fs::File> {
    let me = a.rt(|rt| Ok(rt.comms.get(idx).rank))?;
    let modes = gather(a, idx, amode_arg as u32 as u64)?;
    if modes.iter().any(|&m| m != modes[0]) {
        return Err(MpiError::new(
            MPI_ERR_NOT_SAME,
            format!("the processes opening {name:?} gave different access modes: {modes:x?}"),
        ));
    }
    amode::check(amode_arg)?;
    let create = amode_arg & MPI_MODE_CREATE != 0;
    let (mut mine, mut errno) = (Err(MpiError::new(MPI_ERR_IO, "not opened")), 0);
    if create {
        if me == 0 {
            (mine, errno) = open_here(name, amode_arg, true);
        }
        let first = gather(
            a,
            idx,
            if me == 0 {
                outcome_word(&mine, errno)
            } else {
                0
            },
        )?;
        if first[0] != 0 {
            return Err(failure(
                name,
                0,
                first[0],
                if me == 0 { mine.err() } else { None },
            ));
        }
        if me != 0 {
            (mine, errno) = open_here(name, amode_arg, false);
        }
    } else {
        (mine, errno) = open_here(name, amode_arg, false);
    }
    let all = gather(a, idx, outcome_word(&mine, errno))?;
    match all.iter().position(|&w| w != 0) {
        None => mine,
        Some(r) => Err(failure(
            name,
            r,
            all[r],
            if r == me { mine.err() } else { None },
        )),
    }
}

/// The error of rank `rank`'s failed open (`word` from [`outcome_word`]): its own if this is
/// that rank, else one naming it with the system's reason.
fn failure(name: &str, rank: usize, word: u64, own: Option<MpiError>) -> MpiError {
    if let Some(e) = own {
        return e;
    }
    let (class, errno) = ((word & 0xff) as c_int, (word >> 8) as i32);
    MpiError::new(
        class,
        format!(
            "open({name:?}) failed on rank {rank} of the communicator: {}",
            io::Error::from_raw_os_error(errno)
        ),
    )
}

file_fn! {
    /// `MPI_File_open`: opens a file on every process of `comm` (collective).
    fn MPI_File_open / PMPI_File_open(
        comm: MPI_Comm,
        filename: *const c_char,
        amode: c_int,
        info: MPI_Info,
        fh: *mut MPI_File,
    ) waits |call, _route| {
        if call.releases() {
            open(call, comm, filename, amode, info, fh)
        } else {
            open(call.state().runtime()?, comm, filename, amode, info, fh)
        }
    }
}

/// Waits until every process of the file's communicator got here.
fn barrier(a: &mut impl Reach, comm: CommIdx) -> MpiResult<()> {
    gather(a, comm, 0).map(drop)
}

/// Waits until the accesses `running` started on the file's communicator `comm` are done
/// (ids whose request is gone or belongs to another communicator are skipped).
fn finish_running(
    a: &mut impl Reach,
    comm: CommIdx,
    running: &[mpich_channel::ReqId],
) -> MpiResult<()> {
    for &id in running {
        a.wait_for(|e| {
            let p = e.p2p_ref();
            let runs = p.owner(id) == Some(comm) && p.is_pending(id);
            Ok::<_, MpiError>((!runs).then_some(()))
        })?;
    }
    Ok(())
}

/// `MPI_File_close` of `*fh` (errors routed through `route`).
fn close(a: &mut impl Reach, fh: *mut MPI_File, route: &mut MPI_File) -> MpiResult<()> {
    let out = Out::new(fh, "fh")?;
    let h = out.get();
    *route = h;
    let (comm, running) = {
        let mut t = files();
        let f = t.get(h)?;
        if let Some(s) = f.split {
            // Every process began it (collective), so every process fails here alike.
            return Err(MpiError::new(
                MPI_ERR_IO,
                format!(
                    "MPI_File_close: a split collective is begun on the file; end it with {} first",
                    s.end
                ),
            ));
        }
        (f.comm, std::mem::take(&mut f.running))
    };
    // Closing with a nonblocking collective access still running is erroneous (MPI 3.1
    // §13.2.2); rather than free the communicator under it, let it finish (every process
    // started it and is here, so it will). Its request stays valid for MPI_Wait/MPI_Test.
    finish_running(a, comm, &running)?;
    barrier(a, comm)?;
    let me = a.rt(|rt| Ok(rt.comms.get(comm).rank))?;
    let _ = files().get(h)?.shared.discard(me == 0); // side file gone
    let f = files().remove(h).expect("checked open above");
    a.rt(|rt| {
        rt.types.let_go(f.etype); // the view's types (held since MPI_File_set_view)
        rt.types.let_go(f.filetype);
        Ok(())
    })?;
    *route = MPI_FILE_NULL;
    let (path, amode) = (f.path.clone(), f.amode);
    drop(f); // closes the descriptor
    let mut result = Ok(());
    if amode & MPI_MODE_DELETE_ON_CLOSE != 0 {
        barrier(a, comm)?; // every process has closed it
        let mine = if me == 0 {
            std::fs::remove_file(&path).map_err(|e| io_error(&format!("unlink({path:?})"), &e))
        } else {
            Ok(())
        };
        result = agree(a, comm, mine, "deleting the file");
    }
    a.rt(|rt| crate::comm::create::free(&mut rt.comm(), comm))?;
    out.set(MPI_FILE_NULL);
    result
}

file_fn! {
    /// `MPI_File_close`: closes the file on every process (collective); deletes it after if
    /// it was opened `MPI_MODE_DELETE_ON_CLOSE`. `*fh` becomes `MPI_FILE_NULL`.
    fn MPI_File_close / PMPI_File_close(fh: *mut MPI_File) waits |call, route| {
        if call.releases() {
            close(call, fh, route)
        } else {
            close(call.state().runtime()?, fh, route)
        }
    }
}

file_fn! {
    /// `MPI_File_delete`: deletes a file (`MPI_ERR_NO_SUCH_FILE` if there is none).
    fn MPI_File_delete / PMPI_File_delete(filename: *const c_char, info: MPI_Info) |rt, _route| {
        let name = read_c_string(filename, NAME_MAX, "filename")?;
        rt.infos.hints(info)?;
        std::fs::remove_file(&name).map_err(|e| io_error(&format!("unlink({name:?})"), &e))?;
        let _ = crate::file::shared::remove_side_files(&name); // of jobs that died (file::shared)
        Ok(())
    }
}

/// A size or offset argument: not negative.
fn non_negative(v: MPI_Offset, what: &str) -> MpiResult<u64> {
    u64::try_from(v).map_err(|_| MpiError::arg(format!("the {what} is {v}; it must be 0 or more")))
}

/// Rank 0 of the file's communicator does `step` on the file once every process has come
/// (so no process still looks at the size an earlier call set); every process gets its
/// outcome.
fn on_rank_zero(
    a: &mut impl Reach,
    fh: MPI_File,
    what: &str,
    step: impl FnOnce(&std::fs::File) -> io::Result<()>,
) -> MpiResult<()> {
    let comm = files().get(fh)?.comm;
    barrier(a, comm)?;
    let mine = if a.rt(|rt| Ok(rt.comms.get(comm).rank == 0))? {
        let mut t = files();
        let f = t.get(fh)?;
        step(&f.file).map_err(|e| io_error(&format!("{what} of {:?}", f.path), &e))
    } else {
        Ok(())
    };
    agree(a, comm, mine, what)
}

file_fn! {
    /// `MPI_File_set_size`: truncates or extends the file to `size` bytes (collective).
    fn MPI_File_set_size / PMPI_File_set_size(fh: MPI_File, size: MPI_Offset) waits |call, route| {
        *route = fh;
        let size = non_negative(size, "size")?;
        amode::writable(files().get(fh)?.amode)?;
        reaching!(call, |a| on_rank_zero(a, fh, "ftruncate", |f| f.set_len(size)))
    }
}

file_fn! {
    /// `MPI_File_preallocate`: reserves storage for the first `size` bytes; the file grows to
    /// `size` if smaller (collective).
    fn MPI_File_preallocate / PMPI_File_preallocate(fh: MPI_File, size: MPI_Offset) waits |call, route| {
        *route = fh;
        let size = non_negative(size, "size")?;
        amode::writable(files().get(fh)?.amode)?;
        reaching!(call, |a| on_rank_zero(a, fh, "posix_fallocate", |f| sys::preallocate(f, size)))
    }
}

file_fn! {
    /// `MPI_File_get_size`: the file's size in bytes.
    fn MPI_File_get_size / PMPI_File_get_size(fh: MPI_File, size: *mut MPI_Offset) |_rt, route| {
        *route = fh;
        let out = Out::new(size, "size")?;
        let mut t = files();
        let f = t.get(fh)?;
        let len = f.file.metadata().map_err(|e| io_error(&format!("fstat of {:?}", f.path), &e))?.len();
        out.set(len as MPI_Offset);
        Ok(())
    }
}

file_fn! {
    /// `MPI_File_get_group`: a new group of the processes that opened the file.
    fn MPI_File_get_group / PMPI_File_get_group(fh: MPI_File, group: *mut MPI_Group) |rt, route| {
        *route = fh;
        let out = Out::new(group, "group")?;
        let comm = files().get(fh)?.comm;
        let g = rt.comms.get(comm).group();
        out.set(rt.groups.insert(g)?);
        Ok(())
    }
}

file_fn! {
    /// `MPI_File_get_amode`: the access mode the file was opened with.
    fn MPI_File_get_amode / PMPI_File_get_amode(fh: MPI_File, amode: *mut c_int) |_rt, route| {
        *route = fh;
        let out = Out::new(amode, "amode")?;
        out.set(files().get(fh)?.amode);
        Ok(())
    }
}

/// Adds the hints of `info` to `set`.
pub(super) fn merge_hints(rt: &Runtime, set: &mut Hints, info: MPI_Info) -> MpiResult<()> {
    for (k, v) in rt.infos.hints(info)?.pairs() {
        set.set(k.to_string(), v.to_string());
    }
    Ok(())
}

file_fn! {
    /// `MPI_File_set_info`: adds hints (collective); all are kept and reported back.
    fn MPI_File_set_info / PMPI_File_set_info(fh: MPI_File, info: MPI_Info) |rt, route| {
        *route = fh;
        let mut t = files();
        let f = t.get(fh)?;
        merge_hints(rt, &mut f.hints, info)
    }
}

file_fn! {
    /// `MPI_File_get_info`: a new info object with the hints in force (the program's, and
    /// ROMIO's defaults for the rest).
    fn MPI_File_get_info / PMPI_File_get_info(fh: MPI_File, info_used: *mut MPI_Info) |rt, route| {
        *route = fh;
        let out = Out::new(info_used, "info_used")?;
        let used = {
            let mut t = files();
            let f = t.get(fh)?;
            in_force(&f.hints, &f.hosts)
        };
        out.set(rt.infos.insert(used)?);
        Ok(())
    }
}

file_fn! {
    /// `MPI_File_sync`: writes this process's data to the storage device (`fsync`), then
    /// waits for the others (collective).
    fn MPI_File_sync / PMPI_File_sync(fh: MPI_File) waits |call, route| {
        *route = fh;
        let (mine, comm) = {
            let mut t = files();
            let f = t.get(fh)?;
            let r = f.file.sync_all().map_err(|e| io_error(&format!("fsync of {:?}", f.path), &e));
            (r, f.comm)
        };
        reaching!(call, |a| agree(a, comm, mine, "fsync"))
    }
}

file_fn! {
    /// `MPI_File_set_atomicity`: atomic mode on or off (collective; the same flag everywhere).
    fn MPI_File_set_atomicity / PMPI_File_set_atomicity(fh: MPI_File, flag: c_int) waits |call, route| {
        *route = fh;
        let comm = files().get(fh)?.comm;
        let all = reaching!(call, |a| gather(a, comm, (flag != 0) as u64))?;
        if all.iter().any(|&v| v != all[0]) {
            return Err(MpiError::new(MPI_ERR_NOT_SAME, "the processes gave different atomicity flags to MPI_File_set_atomicity"));
        }
        files().get(fh)?.atomic = flag != 0;
        Ok(())
    }
}

file_fn! {
    /// `MPI_File_get_atomicity`: whether atomic mode is on.
    fn MPI_File_get_atomicity / PMPI_File_get_atomicity(fh: MPI_File, flag: *mut c_int) |_rt, route| {
        *route = fh;
        let out = Out::new(flag, "flag")?;
        out.set(files().get(fh)?.atomic as c_int);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_File_c2f`: the Fortran handle of a file (0 for `MPI_FILE_NULL`).
    raw fn MPI_File_c2f / PMPI_File_c2f(file: MPI_File) -> MPI_Fint {
        files().c2f(file)
    }
}

mpi_fn! {
    /// `MPI_File_f2c`: the file of a Fortran handle (`MPI_FILE_NULL` for 0 or a closed file).
    raw fn MPI_File_f2c / PMPI_File_f2c(file: MPI_Fint) -> MPI_File {
        files().f2c(file)
    }
}
