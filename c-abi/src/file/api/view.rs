//! Views and file pointers: `MPI_File_set_view`, `MPI_File_get_view`,
//! `MPI_File_get_type_extent`, `MPI_File_get_byte_offset`, `MPI_File_seek`,
//! `MPI_File_get_position`.
//!
//! Data representations: `native` and `internal` (the same here: the memory's bytes);
//! `external32` and names of the program's (`MPI_Register_datarep` does not exist yet) are
//! `MPI_ERR_UNSUPPORTED_DATAREP`.
//!
//! `MPI_File_get_view` gives back the etype and filetype handles `MPI_File_set_view` was
//! given, not new copies (the datatype module offers the file module no way to make one
//! yet): the view itself does not depend on them (it keeps the filetype's layout), but a
//! program that frees what `get_view` returned frees its own type.

use super::manage::merge_hints;
use super::{agree, file_fn};
use crate::abi::*;
use crate::cptr::{write_c_string, Out};
use crate::error::{MpiError, MpiResult};
use crate::file::amode;
use crate::file::files;
use crate::file::sys::io_error;
use crate::file::view::{BadView, View};
use crate::info::read_c_string;
use crate::runtime::Runtime;
use std::ffi::{c_char, c_int};

/// A data representation name this library can do.
fn check_datarep(name: &str) -> MpiResult<&'static str> {
    match name {
        "native" => Ok("native"),
        "internal" => Ok("internal"),
        "external32" => Err(MpiError::new(
            MPI_ERR_UNSUPPORTED_DATAREP,
            "the data representation \"external32\" is not supported yet (use \"native\")",
        )),
        _ => Err(MpiError::new(
            MPI_ERR_UNSUPPORTED_DATAREP,
            format!("{name:?} is not a data representation this library knows (\"native\", \"internal\")"),
        )),
    }
}

/// The view a `set_view` call describes.
fn make_view(
    rt: &Runtime,
    disp: MPI_Offset,
    etype: MPI_Datatype,
    filetype: MPI_Datatype,
) -> MpiResult<View> {
    if disp == MPI_DISPLACEMENT_CURRENT as MPI_Offset {
        return Err(MpiError::new(
            MPI_ERR_UNSUPPORTED_OPERATION,
            "MPI_DISPLACEMENT_CURRENT needs shared file pointers, which are not supported yet",
        ));
    }
    let disp = u64::try_from(disp)
        .map_err(|_| MpiError::arg(format!("the displacement is {disp}; it must be 0 or more")))?;
    let e = rt.types.committed(etype)?;
    let ft = rt.types.committed(filetype)?;
    let runs: Vec<(isize, usize)> = ft.runs().iter().map(|r| (r.offset, r.len)).collect();
    View::new(disp, e.size(), &runs, ft.extent()).map_err(|b| {
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
    ) |rt, route| {
        *route = fh;
        let comm = files().get(fh)?.comm;
        let made = (|| {
            let rep = read_c_string(datarep, MPI_MAX_DATAREP_STRING as usize, "datarep")?;
            let rep = check_datarep(&rep)?;
            let view = make_view(rt, disp, etype, filetype)?;
            rt.infos.hints(info)?;
            Ok((rep, view))
        })();
        let mine = made.as_ref().map(drop).map_err(Clone::clone);
        agree(rt, comm, mine, "MPI_File_set_view")?;
        let (rep, view) = made.expect("agreed: it succeeded everywhere");
        let mut t = files();
        let f = t.get(fh)?;
        merge_hints(rt, &mut f.hints, info)?;
        f.view = view;
        f.datarep = rep.to_string();
        f.etype = etype;
        f.filetype = filetype;
        f.pointer = 0;
        Ok(())
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
    ) |_rt, route| {
        *route = fh;
        let (d, e, ft) = (Out::new(disp, "disp")?, Out::new(etype, "etype")?, Out::new(filetype, "filetype")?);
        let mut t = files();
        let f = t.get(fh)?;
        write_c_string(datarep, MPI_MAX_DATAREP_STRING as usize, &f.datarep, "datarep")?;
        d.set(f.view.disp as MPI_Offset);
        e.set(f.etype);
        ft.set(f.filetype);
        Ok(())
    }
}

file_fn! {
    /// `MPI_File_get_type_extent`: the extent of a type in the file (its memory extent: the
    /// representations here are the memory's).
    fn MPI_File_get_type_extent / PMPI_File_get_type_extent(
        fh: MPI_File,
        datatype: MPI_Datatype,
        extent: *mut MPI_Aint,
    ) |rt, route| {
        *route = fh;
        let out = Out::new(extent, "extent")?;
        files().get(fh)?;
        out.set(rt.types.get(datatype)?.extent() as MPI_Aint);
        Ok(())
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
