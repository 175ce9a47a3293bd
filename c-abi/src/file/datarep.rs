//! Data representations of file views (MPI 3.1 §13.5): how the data of a view looks in the
//! file, and its conversion to and from memory on every access.
//!
//! ```text
//!   set_view(datarep) ──lookup──▶ native | internal | external32 | registered name
//!        └─ Representation::layout: the etype and filetype in file bytes
//!   access (api::data) ──file_bytes / Conversion::new(datarep, memory type)──▶
//!        memory::with_data / with_room
//!       None          the memory's bytes, no conversion (native, internal, FN_NULL)
//!       InPlace       external32 of values that keep their size: converted in place
//!       Buffered      file bytes in a buffer of their own: external32 of values that change
//!                     size (MPI_LONG), or the program's conversion functions
//! ```
//!
//! **native, internal.** The memory's bytes; `internal` is `native` here, as in ROMIO.
//!
//! **external32.** Big-endian IEEE, the sizes of MPI 3.1 Table 13.2 (see
//! `datatype::external`). Every type this library has keeps its size in external32 except
//! `MPI_LONG` / `MPI_UNSIGNED_LONG` (and `MPI_LONG_INT`), 8 bytes in memory and 4 in the
//! file (MPICH's sizes).
//!
//! **Types that change size** (MPI 3.1 §13.5.1). A view is in file bytes: its displacement
//! as given, its etype and filetype laid out with every predefined type at its file extent
//! ([`Representation::layout`], which rebuilds the type from its contents when some value
//! changes size: `datatype::relayout`, where element strides scale and byte displacements
//! stay). An access of `count` elements of the memory type is, in the file, the file sizes
//! of its type signature times `count` ([`file_bytes`]: the whole-etypes check and the file
//! runs use it); its memory side is packed and converted into a buffer of file bytes for a
//! write (a `long` that does not fit in 4 bytes is `MPI_ERR_CONVERSION`, and nothing is
//! written), read into such a buffer and converted for a read. The status's count is in
//! memory bytes: a read cut by the end of the file counts its whole values
//! ([`Buffered::memory_bytes_of`]). Values that keep their size keep the memory layout and
//! the in-place path of before, and `native` none of this: its accesses are what they were.
//!
//! **Registered representations** (`MPI_Register_datarep`): a name, read and write
//! conversion functions, an extent function and the program's `extra_state`, kept for the
//! life of the process (a second registration of a name is `MPI_ERR_DUP_DATAREP`). A write
//! converts the caller's data into a buffer of file bytes with the write function before any
//! byte reaches the file ([`Conversion::new`] does it, so a failing conversion leaves the file
//! untouched and its error is the call's); a read reads the file bytes into a buffer and
//! converts them into the caller's buffer with the read function (a failure of that one
//! surfaces through the read step's error type, [`ConversionFailed`]: `MPI_ERR_IO` with the
//! function's code in the message). Either is called in pieces
//! of at most [`PIECE_BYTES`] bytes of file data, as MPI 3.1 §13.5.3 describes: `count` data
//! items (values of the predefined types of the memory type's type signature, a padded pair
//! such as `MPI_DOUBLE_INT` being one item) from item `position` of the caller's buffer with
//! the memory type tiled over it. `MPI_CONVERSION_FN_NULL` means the file holds the memory's
//! bytes (no conversion; so such a representation whose extents change a type's size is
//! `MPI_ERR_CONVERSION` on access). The extent function is asked once per predefined type
//! and its answer kept: a data item takes that many bytes in the file, and the conversion
//! functions are given buffers of them. The program's functions run inside the MPI call,
//! with the file table held: they may call MPI's datatype functions, not file functions of
//! the same process.

use crate::abi::*;
use crate::datatype::{
    external32_predefined_size, Datatype, External32, FileLayout, Message, TypeTable,
};
use crate::error::{MpiError, MpiResult};
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex, PoisonError};

/// At most this many bytes of file data go to one call of a conversion function.
pub(crate) const PIECE_BYTES: usize = 64 * 1024;

/// A representation registered by the program.
pub(crate) struct UserRep {
    pub name: String,
    read: Option<ConversionFn>,
    write: Option<ConversionFn>,
    extent: MPI_Datarep_extent_function,
    /// The program's `extra_state` pointer, passed back to its functions (kept as an address:
    /// the library never dereferences it).
    extra_state: usize,
    /// File extents the extent function gave, by predefined type.
    extents: Mutex<HashMap<MPI_Datatype, MPI_Aint>>,
}

/// A conversion function of the program: `MPI_Register_datarep`'s (an `int` count) or
/// `MPI_Register_datarep_c`'s (an `MPI_Count`).
#[derive(Clone, Copy)]
pub(crate) enum ConversionFn {
    Int(
        unsafe extern "C" fn(
            *mut c_void,
            MPI_Datatype,
            std::ffi::c_int,
            *mut c_void,
            MPI_Offset,
            *mut c_void,
        ) -> std::ffi::c_int,
    ),
    Large(
        unsafe extern "C" fn(
            *mut c_void,
            MPI_Datatype,
            MPI_Count,
            *mut c_void,
            MPI_Offset,
            *mut c_void,
        ) -> std::ffi::c_int,
    ),
}

/// A conversion function argument of either form, as the library keeps it.
pub(crate) trait ConversionArg {
    fn conversion(self) -> Option<ConversionFn>;
}

impl ConversionArg for MPI_Datarep_conversion_function {
    fn conversion(self) -> Option<ConversionFn> {
        self.map(ConversionFn::Int)
    }
}

impl ConversionArg for MPI_Datarep_conversion_function_c {
    fn conversion(self) -> Option<ConversionFn> {
        self.map(ConversionFn::Large)
    }
}

/// Every registered representation, in order of registration.
static REGISTERED: Mutex<Vec<Arc<UserRep>>> = Mutex::new(Vec::new());

fn registered() -> std::sync::MutexGuard<'static, Vec<Arc<UserRep>>> {
    REGISTERED.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `MPI_Register_datarep`'s work: `MPI_ERR_DUP_DATAREP` if the name is taken (by a
/// predefined representation or an earlier registration).
pub(crate) fn register(
    name: &str,
    read: Option<ConversionFn>,
    write: Option<ConversionFn>,
    extent: MPI_Datarep_extent_function,
    extra_state: *mut c_void,
) -> MpiResult<()> {
    if name.is_empty() {
        return Err(MpiError::arg("the data representation name is empty"));
    }
    let mut all = registered();
    if matches!(name, "native" | "internal" | "external32") || all.iter().any(|r| r.name == name) {
        return Err(MpiError::new(
            MPI_ERR_DUP_DATAREP,
            format!("the data representation {name:?} is already defined"),
        ));
    }
    all.push(Arc::new(UserRep {
        name: name.to_string(),
        read,
        write,
        extent,
        extra_state: extra_state as usize,
        extents: Mutex::new(HashMap::new()),
    }));
    Ok(())
}

/// A data representation, as a view names it.
#[derive(Clone)]
pub(crate) enum Representation {
    Native,
    External32,
    User(Arc<UserRep>),
}

impl Representation {
    /// The representation of a name: `MPI_ERR_UNSUPPORTED_DATAREP` if it names none.
    pub fn lookup(name: &str) -> MpiResult<Representation> {
        match name {
            "native" | "internal" => Ok(Representation::Native),
            "external32" => Ok(Representation::External32),
            _ => registered()
                .iter()
                .find(|r| r.name == name)
                .map(|r| Representation::User(Arc::clone(r)))
                .ok_or_else(|| {
                    MpiError::new(
                        MPI_ERR_UNSUPPORTED_DATAREP,
                        format!(
                            "{name:?} is not a data representation (\"native\", \"internal\", \
                             \"external32\" or one registered with MPI_Register_datarep)"
                        ),
                    )
                }),
        }
    }

    /// The file extent of one value of the predefined type `ty` (`unit` bytes in memory).
    pub fn predefined_extent(&self, ty: MPI_Datatype, unit: usize) -> MpiResult<usize> {
        match self {
            Representation::Native => Ok(unit),
            Representation::External32 => Ok(external32_predefined_size(ty).unwrap_or(unit)),
            Representation::User(r) => r.file_extent(ty, unit),
        }
    }

    /// Whether some value of `t` has another size in the file than in memory (then its
    /// layout in the file is not its memory layout: [`Representation::layout`]).
    pub fn changes_size(&self, t: &Datatype) -> MpiResult<bool> {
        if let Representation::Native = self {
            return Ok(false);
        }
        for (ty, unit, _) in t.signature() {
            if self.predefined_extent(ty, unit)? != unit {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// One element's predefined values: (bytes in memory, bytes in the file, how many in a
    /// row), in type-map order.
    fn units(&self, t: &Datatype) -> MpiResult<Vec<(usize, usize, usize)>> {
        t.signature()
            .into_iter()
            .map(|(ty, unit, n)| Ok((unit, self.predefined_extent(ty, unit)?, n)))
            .collect()
    }

    /// The layout of type `dt` in the file (MPI 3.1 §13.5.1): its memory layout when every
    /// value keeps its size, else rebuilt with the file's extents (`TypeTable::layout_in`).
    pub fn layout(&self, types: &TypeTable, dt: MPI_Datatype) -> MpiResult<FileLayout> {
        let t = types.get(dt)?;
        if !self.changes_size(t)? {
            return Ok(FileLayout {
                runs: t.runs().to_vec(),
                lb: t.lb(),
                extent: t.extent(),
                size: t.size(),
            });
        }
        types.layout_in(dt, &|ty| self.predefined_extent(ty, types.get(ty)?.size()))
    }
}

/// The bytes in the file of `count` elements of `datatype` (`memory_bytes` of data in
/// memory) in the representation `datarep`: `memory_bytes` unless a value changes size.
pub(crate) fn file_bytes(
    datarep: &str,
    types: &TypeTable,
    datatype: MPI_Datatype,
    count: usize,
    memory_bytes: usize,
) -> MpiResult<usize> {
    if is_native(datarep) || memory_bytes == 0 {
        return Ok(memory_bytes);
    }
    let rep = Representation::lookup(datarep)?;
    let t = types.get(datatype)?;
    if !rep.changes_size(t)? {
        return Ok(memory_bytes);
    }
    let one: usize = rep.units(t)?.iter().map(|&(_, file, n)| file * n).sum();
    count.checked_mul(one).ok_or_else(|| {
        MpiError::new(
            MPI_ERR_COUNT,
            format!("{count} elements of this datatype are more bytes than a file holds"),
        )
    })
}

/// Whether a representation's name is one of those that hold the memory's bytes.
fn is_native(datarep: &str) -> bool {
    datarep == "native" || datarep == "internal"
}

impl UserRep {
    /// The file extent of a predefined type, from the program's extent function (once).
    fn file_extent(&self, ty: MPI_Datatype, unit: usize) -> MpiResult<usize> {
        let Some(f) = self.extent else {
            return Ok(unit);
        };
        if let Some(&e) = self
            .extents
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&ty)
        {
            return Ok(e as usize);
        }
        let mut extent: MPI_Aint = 0;
        // SAFETY: the program registered `f` as an MPI_Datarep_extent_function; it gets a
        // datatype, a pointer to a variable of ours and its own extra_state back.
        let rc = unsafe { f(ty, &mut extent, self.extra_state as *mut c_void) };
        if rc != MPI_SUCCESS {
            return Err(self.failed("extent", rc));
        }
        if extent < 0 {
            return Err(MpiError::new(
                MPI_ERR_CONVERSION,
                format!(
                    "the extent function of data representation {:?} gave {extent} for type 0x{ty:08x}",
                    self.name
                ),
            ));
        }
        self.extents
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(ty, extent);
        Ok(extent as usize)
    }

    #[cold]
    fn failed(&self, which: &str, rc: i32) -> MpiError {
        let class = if (1..=MPI_ERR_LASTCODE).contains(&rc) {
            rc
        } else {
            MPI_ERR_CONVERSION
        };
        MpiError::new(
            class,
            format!(
                "the {which} function of data representation {:?} returned error {rc}",
                self.name
            ),
        )
    }
}

/// A conversion function of the program that failed during a read: what it returned. Turns
/// into the error type of the read step (`memory::with_room`'s closure).
#[derive(Debug)]
pub(crate) struct ConversionFailed(pub MpiError);

impl From<ConversionFailed> for std::io::Error {
    fn from(e: ConversionFailed) -> std::io::Error {
        std::io::Error::other(e.0.detail)
    }
}

impl From<ConversionFailed> for MpiError {
    fn from(e: ConversionFailed) -> MpiError {
        e.0
    }
}

impl From<ConversionFailed> for () {
    fn from(_: ConversionFailed) {}
}

/// The conversion of one access: how the memory's packed data becomes the file's and back.
pub(crate) enum Conversion {
    /// The file holds the memory's bytes.
    None,
    /// external32 of data that keeps its size: converted where it lies.
    InPlace(External32),
    /// The file's data in a buffer of its own: external32 of data that changes size, or a
    /// registered representation's functions.
    Buffered(Buffered),
}

/// A conversion whose file data is a buffer of the access's own.
pub(crate) struct Buffered {
    how: How,
    /// One element's predefined values: (bytes in memory, bytes in the file, how many).
    units: Vec<(usize, usize, usize)>,
    /// Bytes of the access's data in the file.
    file_bytes: usize,
    /// A write's data, already converted to file bytes.
    converted: Option<Vec<u8>>,
}

enum How {
    External32(External32),
    /// The program's functions, for data of `datatype`.
    User {
        rep: Arc<UserRep>,
        datatype: MPI_Datatype,
    },
}

impl Conversion {
    /// The conversion for `count` elements of `datatype` at `buf` (`m` their message) in a
    /// file whose view says `datarep`. A write's data that does not convert in place is
    /// converted here (packed, then external32's narrowing or the program's write function),
    /// so a value that does not fit or a failing function is this call's error and leaves
    /// the file untouched.
    pub fn new(
        datarep: &str,
        types: &TypeTable,
        datatype: MPI_Datatype,
        buf: *const c_void,
        count: usize,
        m: &Message,
        write: bool,
    ) -> MpiResult<Conversion> {
        if is_native(datarep) {
            return Ok(Conversion::None);
        }
        let rep = Representation::lookup(datarep)?;
        let t = types.get(datatype)?;
        let how = match &rep {
            Representation::Native => return Ok(Conversion::None),
            Representation::External32 => {
                let e = t.external32()?;
                if e.same_size() {
                    return Ok(Conversion::InPlace(e));
                }
                How::External32(e)
            }
            Representation::User(r) => {
                if (if write { r.write } else { r.read }).is_none() {
                    if rep.changes_size(t)? {
                        return Err(MpiError::new(
                            MPI_ERR_CONVERSION,
                            format!(
                                "the data representation {datarep:?} gives a type of the access another size in the file, but its {} conversion function is MPI_CONVERSION_FN_NULL",
                                if write { "write" } else { "read" }
                            ),
                        ));
                    }
                    return Ok(Conversion::None);
                }
                How::User {
                    rep: Arc::clone(r),
                    datatype,
                }
            }
        };
        let units = rep.units(t)?;
        let one: usize = units.iter().map(|&(_, file, n)| file * n).sum();
        // The access's checks computed the same product (`file_bytes`): it fits.
        let mut b = Buffered {
            how,
            units,
            file_bytes: count * one,
            converted: None,
        };
        if write {
            let mut file = vec![0u8; b.file_bytes];
            match &b.how {
                How::External32(e) => {
                    // SAFETY: `buf` holds `count` elements of the type `m` describes (the
                    // MPI call's contract); the data is only read.
                    let packed = unsafe { m.packed(buf, count) };
                    e.encode(&packed, &mut file)?;
                }
                How::User { .. } => b.call_user(buf.cast_mut(), &mut file, true)?,
            }
            b.converted = Some(file);
        }
        Ok(Conversion::Buffered(b))
    }

    /// A write's data converted to file bytes, if this conversion does it in a buffer.
    pub(crate) fn converted(&self) -> Option<&[u8]> {
        match self {
            Conversion::Buffered(b) => b.converted.as_deref(),
            _ => None,
        }
    }

    /// A write's converted data, taken out of the conversion (no copy).
    pub(crate) fn take_converted(&mut self) -> Option<Vec<u8>> {
        match self {
            Conversion::Buffered(b) => b.converted.take(),
            _ => None,
        }
    }

    /// Whether memory and file bytes are the same.
    pub(crate) fn is_none(&self) -> bool {
        matches!(self, Conversion::None)
    }
}

impl Buffered {
    /// Bytes of the access's data in the file.
    pub(crate) fn file_bytes(&self) -> usize {
        self.file_bytes
    }

    /// The memory bytes of the whole values in the first `file` bytes of the access's file
    /// data (a value cut by the end of the file counts nothing).
    pub(crate) fn memory_bytes_of(&self, file: usize) -> usize {
        let (mem_one, file_one) = self
            .units
            .iter()
            .fold((0, 0), |(m, f), &(mu, fu, n)| (m + mu * n, f + fu * n));
        if file_one == 0 {
            return 0;
        }
        let mut memory = file / file_one * mem_one;
        let mut rest = file % file_one;
        for &(mu, fu, n) in &self.units {
            let k = rest.checked_div(fu).map_or(n, |k| k.min(n));
            memory += k * mu;
            rest -= k * fu;
            if k < n {
                break;
            }
        }
        memory
    }

    /// Converts the whole values of `file` (file data from the access's start) to memory:
    /// external32 into `packed` (packed data in memory, as far as whole values go); the
    /// program's read function straight into the caller's buffer `buf` (the return says so:
    /// nothing to unpack).
    pub(crate) fn file_to_memory(
        &self,
        file: &mut [u8],
        packed: &mut [u8],
        buf: *mut c_void,
    ) -> Result<bool, ConversionFailed> {
        match &self.how {
            How::External32(e) => {
                e.decode(file, packed);
                Ok(false)
            }
            How::User { .. } => {
                self.call_user(buf, file, false).map_err(ConversionFailed)?;
                Ok(true)
            }
        }
    }

    /// Calls the program's read (`write` false) or write function on the whole items of
    /// `file` (file bytes), in pieces of at most [`PIECE_BYTES`].
    fn call_user(&self, userbuf: *mut c_void, file: &mut [u8], write: bool) -> MpiResult<()> {
        let How::User { rep, datatype } = &self.how else {
            return Ok(());
        };
        let Some(f) = (if write { rep.write } else { rep.read }) else {
            return Ok(());
        };
        let element: usize = self.units.iter().map(|&(_, unit, n)| unit * n).sum();
        if element == 0 {
            return Ok(());
        }
        // Walk the items, cutting pieces: (first item, items, first byte, bytes).
        let (mut item, mut at) = (0u64, 0usize);
        let (mut piece_item, mut piece_at, mut piece_items) = (0u64, 0usize, 0usize);
        let flush = |first: u64, n: usize, from: usize, to: usize, file: &mut [u8]| {
            if n == 0 {
                return Ok(());
            }
            let count = i32::try_from(n).expect("a piece has at most PIECE_BYTES items");
            let (buf, pos, extra) = (
                file[from..to].as_mut_ptr().cast(),
                first as MPI_Offset,
                rep.extra_state as *mut c_void,
            );
            // SAFETY: the program registered `f` as an MPI_Datarep_conversion_function. It
            // gets the caller's buffer (holding the access's elements of `datatype`, the MPI
            // call's contract), `count` items of file data at `file[from..to]` (ours, that
            // long), the position of the first item, and its own extra_state.
            let rc = unsafe {
                match f {
                    ConversionFn::Int(f) => f(userbuf, *datatype, count, buf, pos, extra),
                    ConversionFn::Large(f) => f(userbuf, *datatype, count.into(), buf, pos, extra),
                }
            };
            if rc != MPI_SUCCESS {
                return Err(rep.failed(
                    if write {
                        "write conversion"
                    } else {
                        "read conversion"
                    },
                    rc,
                ));
            }
            Ok(())
        };
        'items: loop {
            for &(_, unit, n) in &self.units {
                for _ in 0..n {
                    if at + unit > file.len() {
                        break 'items;
                    }
                    if at + unit - piece_at > PIECE_BYTES && piece_items > 0 {
                        flush(piece_item, piece_items, piece_at, at, file)?;
                        (piece_item, piece_at, piece_items) = (item, at, 0);
                    }
                    at += unit;
                    item += 1;
                    piece_items += 1;
                }
            }
        }
        flush(piece_item, piece_items, piece_at, at, file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// (position, count) of every call of `record`, for the one test that uses it.
    static CALLS: Mutex<Vec<(i64, i32)>> = Mutex::new(Vec::new());
    static EXTENT_CALLS: AtomicUsize = AtomicUsize::new(0);

    /// A write conversion: the file int is the memory int plus 1.
    unsafe extern "C" fn plus_one(
        userbuf: *mut c_void,
        _datatype: MPI_Datatype,
        count: i32,
        filebuf: *mut c_void,
        position: MPI_Offset,
        _extra: *mut c_void,
    ) -> i32 {
        CALLS.lock().unwrap().push((position, count));
        for i in 0..count as usize {
            // SAFETY: the test's buffers: userbuf has every item from `position`, filebuf
            // `count` ints.
            unsafe {
                let v = userbuf.cast::<i32>().add(position as usize + i).read();
                filebuf.cast::<i32>().add(i).write_unaligned(v + 1);
            }
        }
        MPI_SUCCESS
    }

    unsafe extern "C" fn extent_8(_ty: MPI_Datatype, e: *mut MPI_Aint, _x: *mut c_void) -> i32 {
        EXTENT_CALLS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the library passes a pointer to its variable.
        unsafe { e.write(8) };
        MPI_SUCCESS
    }

    #[test]
    fn names_register_once_and_look_up() {
        assert!(matches!(
            Representation::lookup("internal"),
            Ok(Representation::Native)
        ));
        assert!(matches!(
            Representation::lookup("external32"),
            Ok(Representation::External32)
        ));
        let e = Representation::lookup("unit-test-missing").err().unwrap();
        assert_eq!(e.class, MPI_ERR_UNSUPPORTED_DATAREP);
        register("unit-test-rep", None, None, None, std::ptr::null_mut()).unwrap();
        assert!(matches!(
            Representation::lookup("unit-test-rep"),
            Ok(Representation::User(_))
        ));
        for taken in ["unit-test-rep", "native", "external32"] {
            let e = register(taken, None, None, None, std::ptr::null_mut()).unwrap_err();
            assert_eq!(e.class, MPI_ERR_DUP_DATAREP, "{taken}");
        }
    }

    #[test]
    fn types_that_change_size_are_laid_out_in_file_bytes_and_extents_asked_once() {
        let types = TypeTable::new();
        let ext32 = Representation::External32;
        assert!(ext32.changes_size(types.get(MPI_LONG).unwrap()).unwrap());
        assert!(!ext32.changes_size(types.get(MPI_INT).unwrap()).unwrap());
        assert!(!Representation::Native
            .changes_size(types.get(MPI_LONG).unwrap())
            .unwrap());
        assert_eq!(ext32.layout(&types, MPI_LONG).unwrap().extent, 4);
        assert_eq!(ext32.layout(&types, MPI_LONG_INT).unwrap().extent, 8);
        // A pair that keeps its size keeps its memory layout (12 bytes of data, extent 16).
        let di = ext32.layout(&types, MPI_DOUBLE_INT).unwrap();
        assert_eq!((di.size, di.extent), (12, 16));
        assert_eq!(
            file_bytes("external32", &types, MPI_LONG, 10, 80).unwrap(),
            40
        );
        assert_eq!(
            file_bytes("external32", &types, MPI_LONG_INT, 3, 36).unwrap(),
            24
        );
        assert_eq!(
            file_bytes("external32", &types, MPI_INT, 10, 40).unwrap(),
            40
        );
        assert_eq!(file_bytes("native", &types, MPI_LONG, 10, 80).unwrap(), 80);
        register(
            "unit-test-wide",
            None,
            None,
            Some(extent_8),
            std::ptr::null_mut(),
        )
        .unwrap();
        let wide = Representation::lookup("unit-test-wide").unwrap();
        assert_eq!(wide.layout(&types, MPI_INT).unwrap().extent, 8);
        assert!(wide.changes_size(types.get(MPI_INT).unwrap()).unwrap());
        assert_eq!(
            file_bytes("unit-test-wide", &types, MPI_INT, 5, 20).unwrap(),
            40
        );
        assert_eq!(
            EXTENT_CALLS.load(Ordering::Relaxed),
            1,
            "the answer is kept"
        );
        // Without conversion functions the file would hold the memory's bytes: refused.
        let m = types.message(5, MPI_INT).unwrap();
        let e = Conversion::new(
            "unit-test-wide",
            &types,
            MPI_INT,
            std::ptr::null(),
            5,
            &m,
            true,
        )
        .err()
        .unwrap();
        assert_eq!(e.class, MPI_ERR_CONVERSION);
    }

    #[test]
    fn a_read_of_values_that_change_size_counts_whole_values() {
        let types = TypeTable::new();
        let m = types.message(4, MPI_LONG_INT).unwrap();
        let Conversion::Buffered(b) = Conversion::new(
            "external32",
            &types,
            MPI_LONG_INT,
            std::ptr::null(),
            4,
            &m,
            false,
        )
        .unwrap() else {
            panic!("MPI_LONG_INT changes size in external32");
        };
        assert_eq!(b.file_bytes(), 32);
        // 8 file bytes per value (4 + 4), 12 in memory; a cut value counts nothing.
        for (file, memory) in [(0, 0), (7, 0), (8, 12), (12, 12), (31, 36), (32, 48)] {
            assert_eq!(b.memory_bytes_of(file), memory, "{file} file bytes");
        }
    }

    #[test]
    fn a_write_conversion_is_called_in_pieces_covering_every_item() {
        register(
            "unit-test-plus",
            None,
            Some(ConversionFn::Int(plus_one)),
            None,
            std::ptr::null_mut(),
        )
        .unwrap();
        let types = TypeTable::new();
        let n = 3 * PIECE_BYTES / 4 + 5; // ints: three full pieces and a few
        let data: Vec<i32> = (0..n as i32).collect();
        let m = types.message(n as MPI_Count, MPI_INT).unwrap();
        let conv = Conversion::new(
            "unit-test-plus",
            &types,
            MPI_INT,
            data.as_ptr().cast(),
            n,
            &m,
            true,
        )
        .unwrap();
        let file = conv.converted().expect("converted at once");
        assert_eq!(file.len(), n * 4);
        for (i, chunk) in file.chunks_exact(4).enumerate() {
            assert_eq!(i32::from_ne_bytes(chunk.try_into().unwrap()), i as i32 + 1);
        }
        let calls = CALLS.lock().unwrap().clone();
        let per_piece = (PIECE_BYTES / 4) as i32;
        assert_eq!(
            calls,
            vec![
                (0, per_piece),
                (per_piece as i64, per_piece),
                (2 * per_piece as i64, per_piece),
                (3 * per_piece as i64, 5)
            ]
        );
        // Its read function is MPI_CONVERSION_FN_NULL: reads are the memory's bytes.
        let read = Conversion::new(
            "unit-test-plus",
            &types,
            MPI_INT,
            std::ptr::null(),
            n,
            &m,
            false,
        )
        .unwrap();
        assert!(read.is_none());
    }
}
