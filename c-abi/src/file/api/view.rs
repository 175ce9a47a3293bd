//! Views and file pointers: `MPI_File_set_view`, `MPI_File_get_view`,
//! `MPI_File_get_type_extent`, `MPI_File_get_byte_offset`, `MPI_File_seek`,
//! `MPI_File_get_position`.
//!
//! Data representations (`file::datarep`): `native` and `internal` (the same here: the
//! memory's bytes), `external32`, and the names the program registers with
//! `MPI_Register_datarep` (also here); another name is `MPI_ERR_UNSUPPORTED_DATAREP`. The
//! view is in file bytes of its representation (MPI 3.1 §13.5.1): the displacement is taken
//! as is, and where the etype or filetype holds a type of another size in the file than in
//! memory (`MPI_LONG` in external32, a registered representation's extents) their layout is
//! rebuilt with the file's sizes (`datatype::relayout`: element strides scale, byte
//! displacements stay). Positions (`MPI_File_get_byte_offset`, seek, the file pointers,
//! `MPI_SEEK_END`) count the view's etypes in file bytes. `MPI_File_get_type_extent`
//! answers in the file's representation.
//!
//! The view holds its etype and filetype (`TypeTable::hold`), so the program may free its
//! handles after `MPI_File_set_view`; `MPI_File_get_view` hands out new copies of derived
//! ones, which the program frees (predefined ones as they are), as MPI 3.1 §13.3 says.
//!
//! `MPI_DISPLACEMENT_CURRENT` (only on a file opened with `MPI_MODE_SEQUENTIAL`, where it is
//! the only displacement allowed: `MPI_ERR_ARG` otherwise, as in MPICH) puts the view's
//! start at the shared file pointer's byte.

use super::manage::merge_hints;
use super::{agree, file_fn};
use crate::abi::*;
use crate::cptr::{write_c_string, Out};
use crate::error::{MpiError, MpiResult};
use crate::file::amode;
use crate::file::datarep::{self, ConversionArg, Representation};
use crate::file::sys::io_error;
use crate::file::view::{BadView, View};
use crate::file::{files, MPI_FILE_NULL};
use crate::info::read_c_string;
use crate::runtime::Runtime;
use std::ffi::{c_char, c_int, c_void};

/// The view a `set_view` call describes, in file bytes of the representation `rep`: the
/// etype's size and the filetype's runs and extent as they are in the file
/// (`Representation::layout`).
fn make_view(
    rt: &Runtime,
    rep: &Representation,
    disp: MPI_Offset,
    etype: MPI_Datatype,
    filetype: MPI_Datatype,
) -> MpiResult<View> {
    let disp = u64::try_from(disp)
        .map_err(|_| MpiError::arg(format!("the displacement is {disp}; it must be 0 or more")))?;
    rt.types.committed(etype)?;
    rt.types.committed(filetype)?;
    let e = rep.layout(&rt.types, etype)?;
    let ft = rep.layout(&rt.types, filetype)?;
    let runs: Vec<(isize, usize)> = ft.runs.iter().map(|r| (r.offset, r.len)).collect();
    View::new(disp, e.size, &runs, ft.extent).map_err(|b| {
        let why = match b {
            BadView::EmptyEtype => "the etype has no data".to_string(),
            BadView::NotEtypes { tile_size, etype_size } => format!(
                "the filetype holds {tile_size} bytes of data, not a whole number of etypes of {etype_size} bytes"
            ),
            BadView::Disorder => "the filetype's displacements must be nonnegative and increasing, within its extent".to_string(),
        };
        MpiError::new(MPI_ERR_TYPE, why)
    })
}

/// The displacement `disp` of a new view of `fh` stands for: `MPI_DISPLACEMENT_CURRENT` is
/// the shared file pointer's byte, and the only one a sequential file takes.
fn displacement(fh: MPI_File, disp: MPI_Offset) -> MpiResult<MPI_Offset> {
    let mut t = files();
    let f = t.get(fh)?;
    let sequential = f.amode & MPI_MODE_SEQUENTIAL != 0;
    let current = disp == MPI_DISPLACEMENT_CURRENT as MPI_Offset;
    match (sequential, current) {
        (false, false) => Ok(disp),
        (true, true) => {
            let pos = f.shared.get().map_err(|e| {
                io_error(&format!("reading the shared file pointer of {:?}", f.path), &e)
            })?;
            Ok(f.view.file_byte(pos * f.view.etype_size as u64) as MPI_Offset)
        }
        (true, false) => Err(MpiError::arg(format!(
            "the displacement is {disp}; a file opened with MPI_MODE_SEQUENTIAL takes only MPI_DISPLACEMENT_CURRENT"
        ))),
        (false, true) => Err(MpiError::arg(
            "MPI_DISPLACEMENT_CURRENT is only for files opened with MPI_MODE_SEQUENTIAL",
        )),
    }
}

file_fn! {
    /// `MPI_File_set_view`: the part of the file this process sees, and in what units
    /// (collective); resets the individual file pointer to 0.
    fn MPI_File_set_view / PMPI_File_set_view(
        fh: MPI_File,
        disp: MPI_Offset,
        etype: MPI_Datatype,
        filetype: MPI_Datatype,
        datarep: *const c_char,
        info: MPI_Info,
    ) waits |call, route| {
        *route = fh;
        let comm = files().get(fh)?.comm;
        let made = (|| {
            let rt = call.state().runtime()?;
            let rep = read_c_string(datarep, MPI_MAX_DATAREP_STRING as usize, "datarep")?;
            let representation = Representation::lookup(&rep)?;
            let disp = displacement(fh, disp)?;
            let view = make_view(rt, &representation, disp, etype, filetype)?;
            rt.infos.hints(info)?;
            Ok((rep, view))
        })();
        let mine = made.as_ref().map(drop).map_err(Clone::clone);
        // Under MPI_THREAD_MULTIPLE the exchanges wait with the lock let go.
        let releases = call.releases();
        if releases {
            agree(call, comm, mine, "MPI_File_set_view")?;
        } else {
            agree(call.state().runtime()?, comm, mine, "MPI_File_set_view")?;
        }
        let (rep, view) = made.expect("agreed: it succeeded everywhere");
        let rt = call.state().runtime()?;
        let mut t = files();
        let f = t.get(fh)?;
        merge_hints(rt, &mut f.hints, info)?;
        f.view = view;
        f.datarep = rep;
        // The view's types are the file's now: the program may free its handles.
        rt.types.hold(etype);
        rt.types.hold(filetype);
        rt.types.let_go(std::mem::replace(&mut f.etype, etype));
        rt.types.let_go(std::mem::replace(&mut f.filetype, filetype));
        f.pointer = 0;
        drop(t);
        if releases {
            super::shared::reset(call, fh) // the shared file pointer back to 0 too
        } else {
            super::shared::reset(rt, fh)
        }
    }
}

file_fn! {
    /// `MPI_File_get_view`: the view's displacement, etype, filetype and representation.
    fn MPI_File_get_view / PMPI_File_get_view(
        fh: MPI_File,
        disp: *mut MPI_Offset,
        etype: *mut MPI_Datatype,
        filetype: *mut MPI_Datatype,
        datarep: *mut c_char,
    ) |rt, route| {
        *route = fh;
        let (d, e, ft) = (Out::new(disp, "disp")?, Out::new(etype, "etype")?, Out::new(filetype, "filetype")?);
        let mut t = files();
        let f = t.get(fh)?;
        write_c_string(datarep, MPI_MAX_DATAREP_STRING as usize, &f.datarep, "datarep")?;
        d.set(f.view.disp as MPI_Offset);
        e.set(rt.types.dup_unless_predefined(f.etype)?);
        ft.set(rt.types.dup_unless_predefined(f.filetype)?);
        Ok(())
    }
}

file_fn! {
    /// `MPI_File_get_type_extent`: the extent of a type in the file's data representation
    /// (for a predefined type, its size there: 4 for `MPI_LONG` in external32; for a derived
    /// type, its extent laid out with those sizes: `Representation::layout`).
    fn MPI_File_get_type_extent / PMPI_File_get_type_extent, large MPI_File_get_type_extent_c / PMPI_File_get_type_extent_c
    where [Extent = MPI_Aint | MPI_Count] (
        fh: MPI_File,
        datatype: MPI_Datatype,
        extent: *mut Extent,
    ) |rt, route| {
        *route = fh;
        let out = Out::new(extent, "extent")?;
        let name = files().get(fh)?.datarep.clone();
        out.set(Representation::lookup(&name)?.layout(&rt.types, datatype)?.extent as Extent);
        Ok(())
    }
}

file_fn! {
    /// `MPI_Register_datarep`: a data representation of the program's (see
    /// `file::datarep`); `MPI_ERR_DUP_DATAREP` for a name already defined. Not collective;
    /// errors go to `MPI_FILE_NULL`'s handler.
    fn MPI_Register_datarep / PMPI_Register_datarep, large MPI_Register_datarep_c / PMPI_Register_datarep_c
    where [Conversion = MPI_Datarep_conversion_function | MPI_Datarep_conversion_function_c] (
        datarep: *const c_char,
        read_conversion_fn: Conversion,
        write_conversion_fn: Conversion,
        dtype_file_extent_fn: MPI_Datarep_extent_function,
        extra_state: *mut c_void,
    ) |_rt, route| {
        *route = MPI_FILE_NULL;
        let name = read_c_string(datarep, usize::MAX, "datarep")?;
        if name.len() >= MPI_MAX_DATAREP_STRING as usize {
            return Err(MpiError::arg(format!(
                "the data representation name has {} bytes; at most {} fit",
                name.len(),
                MPI_MAX_DATAREP_STRING - 1
            )));
        }
        datarep::register(&name, read_conversion_fn.conversion(), write_conversion_fn.conversion(), dtype_file_extent_fn, extra_state)
    }
}

/// A position argument in etypes: not negative.
fn position(offset: MPI_Offset) -> MpiResult<u64> {
    u64::try_from(offset)
        .map_err(|_| MpiError::arg(format!("the offset is {offset}; it must be 0 or more")))
}

file_fn! {
    /// `MPI_File_get_byte_offset`: the file byte of a position of the view.
    fn MPI_File_get_byte_offset / PMPI_File_get_byte_offset(
        fh: MPI_File,
        offset: MPI_Offset,
        disp: *mut MPI_Offset,
    ) |_rt, route| {
        *route = fh;
        let out = Out::new(disp, "disp")?;
        let mut t = files();
        let f = t.get(fh)?;
        let pos = position(offset)?;
        out.set(f.view.file_byte(pos * f.view.etype_size as u64) as MPI_Offset);
        Ok(())
    }
}

file_fn! {
    /// `MPI_File_seek`: moves the individual file pointer (`MPI_SEEK_SET`, `MPI_SEEK_CUR`,
    /// `MPI_SEEK_END`: from the view's end of the file's data), in etypes.
    fn MPI_File_seek / PMPI_File_seek(fh: MPI_File, offset: MPI_Offset, whence: c_int) |_rt, route| {
        *route = fh;
        let mut t = files();
        let f = t.get(fh)?;
        amode::not_sequential(f.amode, "MPI_File_seek")?;
        let base: i128 = match whence {
            MPI_SEEK_SET => 0,
            MPI_SEEK_CUR => f.pointer as i128,
            MPI_SEEK_END => {
                let size = f.file.metadata().map_err(|e| io_error(&format!("fstat of {:?}", f.path), &e))?.len();
                f.view.data_before(size).div_ceil(f.view.etype_size as u64) as i128
            }
            _ => return Err(MpiError::arg(format!("whence is {whence}; it must be MPI_SEEK_SET, MPI_SEEK_CUR or MPI_SEEK_END"))),
        };
        let to = base + offset as i128;
        if to < 0 {
            return Err(MpiError::arg(format!("the seek would move the file pointer to {to}, before the start of the view")));
        }
        f.pointer = to as u64;
        Ok(())
    }
}

file_fn! {
    /// `MPI_File_get_position`: the individual file pointer, in etypes of the view.
    fn MPI_File_get_position / PMPI_File_get_position(fh: MPI_File, offset: *mut MPI_Offset) |_rt, route| {
        *route = fh;
        let out = Out::new(offset, "offset")?;
        let mut t = files();
        let f = t.get(fh)?;
        amode::not_sequential(f.amode, "MPI_File_get_position")?;
        out.set(f.pointer as MPI_Offset);
        Ok(())
    }
}
