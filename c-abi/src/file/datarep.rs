//! Data representations of file views (MPI 3.1 §13.5): how the data of a view looks in the
//! file, and its conversion to and from memory on every access.
//!
//! ```text
//!   set_view(datarep) ──lookup──▶ native | internal | external32 | registered name
//!   access (api::data) ──Conversion::new(datarep, memory type)──▶ memory::with_data / with_room
//!       Native        the memory's bytes, no conversion (native, internal, FN_NULL)
//!       External32    packed data converted value by value, in place (datatype::External32)
//!       User          the program's conversion functions, called in pieces
//! ```
//!
//! **native, internal.** The memory's bytes; `internal` is `native` here, as in ROMIO.
//!
//! **external32.** Big-endian IEEE, the sizes of MPI 3.1 Table 13.2 (see
//! `datatype::external`). Every type this library has keeps its size in external32 except
//! `MPI_LONG` / `MPI_UNSIGNED_LONG` (and `MPI_LONG_INT`), 8 bytes in memory and 4 in the
//! file. A type whose file size differs from its memory size would make the file's byte
//! counts differ from the memory's, and the view arithmetic (`view::View`) counts one kind of
//! byte: such types are refused, in a view (`MPI_File_set_view`) and as the memory type of an
//! access, with `MPI_ERR_UNSUPPORTED_DATAREP` and a message that says why. So is a registered
//! representation whose extent function gives a predefined type a file extent other than its
//! size.
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
//! bytes (no conversion). The extent function is asked once per predefined type and its
//! answer kept. The program's functions run inside the MPI call, with the file table held:
//! they may call MPI's datatype functions, not file functions of the same process.

use crate::abi::*;
use crate::datatype::{external32_predefined_size, Datatype, External32, TypeTable};
use crate::error::{MpiError, MpiResult};
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex, PoisonError};

/// At most this many bytes of file data go to one call of a conversion function.
pub(crate) const PIECE_BYTES: usize = 64 * 1024;

/// A representation registered by the program.
pub(crate) struct UserRep {
    pub name: String,
    read: MPI_Datarep_conversion_function,
    write: MPI_Datarep_conversion_function,
    extent: MPI_Datarep_extent_function,
    /// The program's `extra_state` pointer, passed back to its functions (kept as an address:
    /// the library never dereferences it).
    extra_state: usize,
    /// File extents the extent function gave, by predefined type.
    extents: Mutex<HashMap<MPI_Datatype, MPI_Aint>>,
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
    read: MPI_Datarep_conversion_function,
    write: MPI_Datarep_conversion_function,
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
    fn predefined_extent(&self, ty: MPI_Datatype, unit: usize) -> MpiResult<usize> {
        match self {
            Representation::Native => Ok(unit),
            Representation::External32 => Ok(external32_predefined_size(ty).unwrap_or(unit)),
            Representation::User(r) => r.file_extent(ty, unit),
        }
    }

    /// `MPI_ERR_UNSUPPORTED_DATAREP` unless every value of `t` has the same size in the file
    /// as in memory (see the module documentation); `what` names the type in the message.
    pub fn check_same_size(&self, name: &str, t: &Datatype, what: &str) -> MpiResult<()> {
        if let Representation::Native = self {
            return Ok(());
        }
        for (ty, unit, _) in t.signature() {
            let file = self.predefined_extent(ty, unit)?;
            if file != unit {
                return Err(MpiError::new(
                    MPI_ERR_UNSUPPORTED_DATAREP,
                    format!(
                        "{what} holds a predefined type (0x{ty:08x}) of {unit} bytes in memory \
                         and {file} in the data representation {name:?}; this library does not \
                         support representations that change a type's size (use types of the \
                         same size in both, e.g. MPI_INT or MPI_LONG_LONG for MPI_LONG)"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// `MPI_File_get_type_extent`: the extent of `t` (handle `handle`) in the file.
    pub fn type_extent(
        &self,
        name: &str,
        t: &Datatype,
        handle: MPI_Datatype,
    ) -> MpiResult<MPI_Aint> {
        if TypeTable::is_predefined(handle) {
            if let [(ty, unit, 1)] = t.signature()[..] {
                if t.extent() == unit as isize {
                    return Ok(self.predefined_extent(ty, unit)? as MPI_Aint);
                }
            }
        }
        self.check_same_size(name, t, "the datatype")?;
        Ok(t.extent() as MPI_Aint)
    }
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
    External32(External32),
    /// A registered representation with conversion functions.
    User {
        rep: Arc<UserRep>,
        datatype: MPI_Datatype,
        /// The memory type's signature (see [`Datatype::signature`]).
        signature: Vec<(MPI_Datatype, usize, usize)>,
        /// A write's data, already converted to file bytes.
        converted: Option<Vec<u8>>,
    },
}

impl Conversion {
    /// The conversion for `count` elements of `datatype` at `buf` (`m` their message) in a
    /// file whose view says `datarep`. For a write (`write`) with a registered
    /// representation, the program's write function converts the data here, so its failure
    /// is this call's error.
    pub fn new(
        datarep: &str,
        types: &TypeTable,
        datatype: MPI_Datatype,
        buf: *const c_void,
        count: usize,
        write: bool,
    ) -> MpiResult<Conversion> {
        if datarep == "native" || datarep == "internal" {
            return Ok(Conversion::None);
        }
        let rep = Representation::lookup(datarep)?;
        let t = types.get(datatype)?;
        rep.check_same_size(datarep, t, "the memory datatype of the access")?;
        match rep {
            Representation::Native => Ok(Conversion::None),
            Representation::External32 => Ok(Conversion::External32(t.external32()?)),
            Representation::User(r) => {
                let f = if write { r.write } else { r.read };
                if f.is_none() {
                    return Ok(Conversion::None);
                }
                let mut conv = Conversion::User {
                    rep: r,
                    datatype,
                    signature: t.signature(),
                    converted: None,
                };
                if write {
                    // The access's message was made first: count * size fits.
                    let mut file = vec![0u8; count * t.size()];
                    conv.call_user(buf.cast_mut(), &mut file, true)?;
                    if let Conversion::User { converted, .. } = &mut conv {
                        *converted = Some(file);
                    }
                }
                Ok(conv)
            }
        }
    }

    /// Converts file bytes to memory: `data` is packed data in the file's representation as
    /// far as it goes (whole values are converted). For `External32` in place; for `User`
    /// straight into the caller's buffer `buf` (the return says so: nothing left to unpack).
    pub(crate) fn file_to_memory(
        &self,
        data: &mut [u8],
        buf: *mut c_void,
    ) -> Result<bool, ConversionFailed> {
        match self {
            Conversion::None => Ok(false),
            Conversion::External32(e) => {
                e.decode_in_place(data);
                Ok(false)
            }
            Conversion::User { .. } => {
                self.call_user(buf, data, false).map_err(ConversionFailed)?;
                Ok(true)
            }
        }
    }

    /// Converts packed memory data to the file's representation, in place (`External32`).
    pub(crate) fn memory_to_file_in_place(&self, data: &mut [u8]) {
        if let Conversion::External32(e) = self {
            e.encode_in_place(data);
        }
    }

    /// A write's data converted by the program's function, if this is such a conversion.
    pub(crate) fn converted(&self) -> Option<&[u8]> {
        match self {
            Conversion::User { converted, .. } => converted.as_deref(),
            _ => None,
        }
    }

    /// Whether memory and file bytes are the same.
    pub(crate) fn is_none(&self) -> bool {
        matches!(self, Conversion::None)
    }

    /// Calls the program's read (`write` false) or write function on the whole items of
    /// `file` (file bytes), in pieces of at most [`PIECE_BYTES`].
    fn call_user(&self, userbuf: *mut c_void, file: &mut [u8], write: bool) -> MpiResult<()> {
        let Conversion::User {
            rep,
            datatype,
            signature,
            ..
        } = self
        else {
            return Ok(());
        };
        let Some(f) = (if write { rep.write } else { rep.read }) else {
            return Ok(());
        };
        let element: usize = signature.iter().map(|&(_, unit, n)| unit * n).sum();
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
            // SAFETY: the program registered `f` as an MPI_Datarep_conversion_function. It
            // gets the caller's buffer (holding the access's elements of `datatype`, the MPI
            // call's contract), `count` items of file data at `file[from..to]` (ours, that
            // long), the position of the first item, and its own extra_state.
            let rc = unsafe {
                f(
                    userbuf,
                    *datatype,
                    count,
                    file[from..to].as_mut_ptr().cast(),
                    first as MPI_Offset,
                    rep.extra_state as *mut c_void,
                )
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
            for &(_, unit, n) in signature {
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

/// The view's types in a representation: `MPI_ERR_UNSUPPORTED_DATAREP` if one changes size.
pub(crate) fn check_view_types(
    datarep: &str,
    etype: &Datatype,
    filetype: &Datatype,
) -> MpiResult<()> {
    let rep = Representation::lookup(datarep)?;
    rep.check_same_size(datarep, etype, "the etype")?;
    rep.check_same_size(datarep, filetype, "the filetype")
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
    fn types_that_change_size_are_refused_and_extents_asked_once() {
        let types = TypeTable::new();
        let long = types.get(MPI_LONG).unwrap();
        let e = Representation::External32
            .check_same_size("external32", long, "the etype")
            .unwrap_err();
        assert_eq!(e.class, MPI_ERR_UNSUPPORTED_DATAREP);
        assert_eq!(
            Representation::External32
                .type_extent("external32", long, MPI_LONG)
                .unwrap(),
            4
        );
        register(
            "unit-test-wide",
            None,
            None,
            Some(extent_8),
            std::ptr::null_mut(),
        )
        .unwrap();
        let wide = Representation::lookup("unit-test-wide").unwrap();
        let int = types.get(MPI_INT).unwrap();
        assert_eq!(wide.type_extent("w", int, MPI_INT).unwrap(), 8);
        assert!(wide.check_same_size("w", int, "the etype").is_err());
        assert_eq!(
            EXTENT_CALLS.load(Ordering::Relaxed),
            1,
            "the answer is kept"
        );
    }

    #[test]
    fn a_write_conversion_is_called_in_pieces_covering_every_item() {
        register(
            "unit-test-plus",
            None,
            Some(plus_one),
            None,
            std::ptr::null_mut(),
        )
        .unwrap();
        let types = TypeTable::new();
        let n = 3 * PIECE_BYTES / 4 + 5; // ints: three full pieces and a few
        let data: Vec<i32> = (0..n as i32).collect();
        let conv = Conversion::new(
            "unit-test-plus",
            &types,
            MPI_INT,
            data.as_ptr().cast(),
            n,
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
            false,
        )
        .unwrap();
        assert!(read.is_none());
    }
}
