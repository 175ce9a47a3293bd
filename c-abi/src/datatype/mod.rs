//! Datatypes: what a `(buffer, count, datatype)` triple means in bytes, the table behind
//! `MPI_Datatype`, and every `MPI_Type_*` call.
//!
//! ```text
//!   handle ──TypeTable::get──▶ Datatype { size, lb/ub, true bounds, runs, leaves, contents }
//!     0x4c00SSII predefined: mask + table load (the fast path of every send)
//!     0x8c00000I padded pairs (MPI_DOUBLE_INT, ...), I < 5
//!     0x8c000000 | index  derived types (index >= FIRST_DERIVED), MPICH's direct handles
//! ```
//!
//! **One representation for every type.** A [`Datatype`] is its type map flattened: the data of
//! one element as a list of contiguous [`Run`]s (offset from the element's address, length),
//! merged where they touch, in type-map order; and the same data as a list of *leaves* (runs of
//! one predefined type), which is what `MPI_Get_elements` and the reduction operations need.
//! Constructors ([`constructors`]) compose these lists ([`layout::Builder`]), so a message of a
//! derived type is packed or unpacked by walking runs: about one copy of its bytes, never a
//! call per basic element.
//!
//! **Decoding without a search.** A predefined datatype's handle is `0x4c00SSII` (MPICH's
//! encoding): `SS` its size in bytes, `II` an index unique among the predefined types. The
//! table below is indexed by `II` and holds the handle each index belongs to, so a handle is
//! validated and decoded with a mask, a load and a compare ([`TypeTable::message`], on the path
//! of every send and receive). The value-and-index pairs whose C struct has padding
//! (`MPI_DOUBLE_INT`, ...) are `0x8c00000I`: their runs hold only their data (12 bytes of an
//! `MPI_DOUBLE_INT`'s 16), so a message of them carries what MPICH's does.
//!
//! **Modules.** `layout` (runs, leaves, bounds: the [`layout::Builder`]), `constructors` (every
//! `MPI_Type_create_*` / MPI-1 constructor, `MPI_Type_commit`, `MPI_Type_free`), `queries`
//! (sizes, extents, envelopes, contents, names, addresses), `pack` (packing and unpacking, and
//! `MPI_Pack` / `MPI_Unpack` / `MPI_Pack_size`), `external` (the external32 representation, for
//! `MPI_Pack_external` & co and MPI-IO's data representations), `relayout` (a type's layout
//! in a file's data representation, rebuilt from its contents), `wire` (a type as bytes, for
//! the target of a one-sided operation), `f90` (the types of `MPI_Type_create_f90_*`).
//!
//! **Lifetime.** A derived type lives in the table while its handle is valid or another type's
//! contents (`MPI_Type_get_contents`) name it; the layout itself is shared (`Arc`) with the
//! pending operations that use it, so `MPI_Type_free` never pulls a layout from under a request
//! that still has to unpack into the user's buffer.
//!
//! **Owns** the datatype table ([`TypeTable`]). **Entry:** the table's lookups and messages
//! for the other subsystems, the constructors (`constructors`, `layout`) and packing (`pack`);
//! the C functions are in `api` (`api::constructors`, `api::queries`, `api::pack`).

mod api;
mod constructors;
mod external;
mod f90;
mod layout;
mod pack;
mod relayout;
mod wire;

pub(crate) use external::{predefined_size as external32_predefined_size, External32};
pub(crate) use f90::F90Kind;
pub(crate) use layout::Run;
pub(crate) use relayout::FileLayout;

use crate::abi::*;
use crate::error::{MpiError, MpiResult};
use crate::handle::{index_of, Kind, Table};
use layout::Leaf;
use std::ffi::c_int;
use std::sync::Arc;

/// How a type was made (`MPI_Type_get_envelope` / `MPI_Type_get_contents`).
///
/// The arguments are kept in the int form's layout (`ints`, `aints`) with the integers
/// widened, whichever form made the type; `large` says a large-count constructor (`_c`) did,
/// and [`Contents::large_layout`] then moves its count arguments to the large-count array
/// that `MPI_Type_get_contents_c` reports (MPI 4.0 §5.1.13).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Contents {
    pub combiner: c_int,
    pub ints: Vec<MPI_Count>,
    pub aints: Vec<MPI_Aint>,
    pub types: Vec<MPI_Datatype>,
    pub large: bool,
}

impl Contents {
    /// The arguments as `MPI_Type_get_contents_c` reports them: (integers, addresses, large
    /// counts). A type an int constructor made has no large counts; one a `_c` constructor
    /// made has its counts, block lengths, displacements, sizes and bounds there, in
    /// argument order, and keeps only its other integers (`ndims`, `order`, ...) as integers.
    pub fn large_layout(&self) -> (Vec<MPI_Count>, Vec<MPI_Aint>, Vec<MPI_Count>) {
        if !self.large {
            return (self.ints.clone(), self.aints.clone(), Vec::new());
        }
        let (i, a) = (&self.ints, &self.aints);
        let all = || [i.clone(), a.clone()].concat();
        match self.combiner {
            MPI_COMBINER_SUBARRAY => {
                // ndims, sizes, subsizes, starts, order
                let n = i[0] as usize;
                (vec![i[0], i[1 + 3 * n]], vec![], i[1..1 + 3 * n].to_vec())
            }
            MPI_COMBINER_DARRAY => {
                // size, rank, ndims, gsizes, distribs, dargs, psizes, order
                let n = i[2] as usize;
                let ints = [&i[..3], &i[3 + n..]].concat();
                (ints, vec![], i[3..3 + n].to_vec())
            }
            MPI_COMBINER_CONTIGUOUS
            | MPI_COMBINER_VECTOR
            | MPI_COMBINER_HVECTOR
            | MPI_COMBINER_INDEXED
            | MPI_COMBINER_HINDEXED
            | MPI_COMBINER_INDEXED_BLOCK
            | MPI_COMBINER_HINDEXED_BLOCK
            | MPI_COMBINER_STRUCT
            | MPI_COMBINER_RESIZED => (vec![], vec![], all()),
            _ => (i.clone(), a.clone(), Vec::new()),
        }
    }
}

/// A datatype: its flattened type map, bounds and how it was made.
#[derive(Debug, Clone)]
pub(crate) struct Datatype {
    size: usize,
    lb: isize,
    ub: isize,
    true_lb: isize,
    true_ub: isize,
    /// Whether this is the `MPI_LB` / `MPI_UB` marker, which sets the bound of the struct it is
    /// placed in.
    lb_marked: bool,
    ub_marked: bool,
    /// The largest alignment of its predefined parts (pads `MPI_Type_create_struct`, as C does).
    align: usize,
    runs: Box<[Run]>,
    leaves: Box<[Leaf]>,
    committed: bool,
    pub(crate) contents: Contents,
    pub(crate) name: String,
}

impl Datatype {
    /// Bytes of data in one element (`MPI_Type_size`).
    #[inline]
    pub fn size(&self) -> usize {
        self.size
    }
    /// `ub - lb`.
    #[inline]
    pub fn extent(&self) -> isize {
        self.ub - self.lb
    }
    #[inline]
    pub fn lb(&self) -> isize {
        self.lb
    }
    #[inline]
    pub fn ub(&self) -> isize {
        self.ub
    }
    #[inline]
    pub fn true_lb(&self) -> isize {
        self.true_lb
    }
    #[inline]
    pub fn true_extent(&self) -> isize {
        self.true_ub - self.true_lb
    }
    /// Predefined types are committed.
    #[inline]
    pub fn is_committed(&self) -> bool {
        self.committed
    }
    /// Whether `count` elements' data are `count * size` bytes at `buf + true_lb`, in order.
    #[inline]
    pub fn is_contiguous(&self) -> bool {
        self.runs.len() <= 1 && (self.size == 0 || self.size as isize == self.extent())
    }
    /// Whether the data of `count` elements is one block of memory (at `buf + true_lb`).
    #[inline]
    pub fn is_one_block(&self, count: usize) -> bool {
        self.is_contiguous() || (count == 1 && self.runs.len() == 1)
    }
    /// One element's data as merged runs relative to the element's start, in type-map order.
    #[inline]
    pub fn runs(&self) -> &[Run] {
        &self.runs
    }
    /// The predefined type all of this type's data is made of, if it is made of one
    /// (`MPI_DOUBLE` for a vector of doubles; the pair type itself for `MPI_DOUBLE_INT`).
    pub fn basic(&self) -> Option<MPI_Datatype> {
        match &*self.leaves {
            [only] => Some(only.ty),
            _ => None,
        }
    }
    /// Basic elements in one element (`MPI_Get_elements`).
    fn elements(&self) -> usize {
        self.leaves.iter().map(|l| l.n * l.parts).sum()
    }

    /// How many whole elements `bytes` of data hold (`MPI_Get_count`), or `None`
    /// (`MPI_UNDEFINED`).
    #[allow(clippy::manual_is_multiple_of)]
    pub fn count_in(&self, bytes: usize) -> Option<usize> {
        if self.size == 0 {
            return (bytes == 0).then_some(0);
        }
        (bytes % self.size == 0).then(|| bytes / self.size)
    }

    /// How many basic elements `bytes` of data hold (`MPI_Get_elements`), or `None`.
    #[allow(clippy::manual_is_multiple_of)]
    pub fn elements_in(&self, bytes: usize) -> Option<usize> {
        if self.size == 0 {
            return Some(0);
        }
        let mut n = bytes / self.size * self.elements();
        let mut rest = bytes % self.size;
        for leaf in self.leaves.iter() {
            if rest == 0 {
                break;
            }
            let whole = (rest / leaf.unit).min(leaf.n);
            n += whole * leaf.parts;
            rest -= whole * leaf.unit;
            if whole < leaf.n {
                // A partial unit: countable only if its parts all have one size (MPI_2INT).
                if rest > 0 {
                    let part = leaf.unit / leaf.parts;
                    if !leaf.uniform || rest % part != 0 {
                        return None;
                    }
                    n += rest / part;
                    rest = 0;
                }
                break;
            }
        }
        (rest == 0).then_some(n)
    }
}

/// The predefined types of the form `0x4c00SSII`: handle, basic elements, name.
macro_rules! builtin {
    ($(($t:ident, $parts:expr)),* $(,)?) => {
        const BUILTIN: &[(MPI_Datatype, usize, &str)] = &[$(($t, $parts, stringify!($t))),*];
    };
}
builtin![
    (MPI_CHAR, 1),
    (MPI_SIGNED_CHAR, 1),
    (MPI_UNSIGNED_CHAR, 1),
    (MPI_BYTE, 1),
    (MPI_WCHAR, 1),
    (MPI_SHORT, 1),
    (MPI_UNSIGNED_SHORT, 1),
    (MPI_INT, 1),
    (MPI_UNSIGNED, 1),
    (MPI_LONG, 1),
    (MPI_UNSIGNED_LONG, 1),
    (MPI_LONG_LONG_INT, 1),
    (MPI_UNSIGNED_LONG_LONG, 1),
    (MPI_FLOAT, 1),
    (MPI_DOUBLE, 1),
    (MPI_LONG_DOUBLE, 1),
    (MPI_PACKED, 1),
    (MPI_LB, 0),
    (MPI_UB, 0),
    (MPI_2INT, 2),
    (MPI_INT8_T, 1),
    (MPI_INT16_T, 1),
    (MPI_INT32_T, 1),
    (MPI_INT64_T, 1),
    (MPI_UINT8_T, 1),
    (MPI_UINT16_T, 1),
    (MPI_UINT32_T, 1),
    (MPI_UINT64_T, 1),
    (MPI_C_BOOL, 1),
    // MPI_C_FLOAT_COMPLEX's handle, under the name MPICH reports for it (MPI 3.1 §3.2.2 lists
    // MPI_C_COMPLEX first; the two names are one type).
    (MPI_C_COMPLEX, 1),
    (MPI_C_DOUBLE_COMPLEX, 1),
    (MPI_C_LONG_DOUBLE_COMPLEX, 1),
    (MPIX_C_FLOAT16, 1),
    (MPI_AINT, 1),
    (MPI_OFFSET, 1),
    (MPI_COUNT, 1),
    (MPI_CXX_BOOL, 1),
    (MPI_CXX_FLOAT_COMPLEX, 1),
    (MPI_CXX_DOUBLE_COMPLEX, 1),
    (MPI_CXX_LONG_DOUBLE_COMPLEX, 1),
    (MPI_CHARACTER, 1),
    (MPI_LOGICAL, 1),
    (MPI_INTEGER, 1),
    (MPI_REAL, 1),
    (MPI_DOUBLE_PRECISION, 1),
    (MPI_COMPLEX, 1),
    (MPI_DOUBLE_COMPLEX, 1),
    (MPI_2INTEGER, 2),
    (MPI_2REAL, 2),
    (MPI_2DOUBLE_PRECISION, 2),
    (MPI_INTEGER1, 1),
    (MPI_INTEGER2, 1),
    (MPI_INTEGER4, 1),
    (MPI_INTEGER8, 1),
    (MPI_REAL4, 1),
    (MPI_REAL8, 1),
    (MPI_REAL16, 1),
    (MPI_COMPLEX8, 1),
    (MPI_COMPLEX16, 1),
    (MPI_COMPLEX32, 1),
];

/// Complex types, whose alignment is that of one component.
const COMPLEX: &[MPI_Datatype] = &[
    MPI_C_FLOAT_COMPLEX,
    MPI_C_DOUBLE_COMPLEX,
    MPI_C_LONG_DOUBLE_COMPLEX,
    MPI_CXX_FLOAT_COMPLEX,
    MPI_CXX_DOUBLE_COMPLEX,
    MPI_CXX_LONG_DOUBLE_COMPLEX,
    MPI_COMPLEX,
    MPI_DOUBLE_COMPLEX,
    MPI_COMPLEX8,
    MPI_COMPLEX16,
    MPI_COMPLEX32,
];

/// Handle bits shared by every type of [`BUILTIN`].
const BUILTIN_TAG: u32 = 0x4c00_0000;
const BUILTIN_TAG_MASK: u32 = 0xffff_0000;
/// Handle bits of MPICH's direct datatype handles: the padded pairs and derived types.
const DIRECT_TAG: u32 = crate::handle::direct(Kind::Datatype, 0) as u32;
/// The first index of a derived type in the handle table (0-4 are the pairs, as in MPICH;
/// 5-7 stay unused).
const FIRST_DERIVED: u32 = 8;

/// Per index `II`: the handle that index belongs to (0 = no type).
const BY_INDEX: [u32; 256] = {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < BUILTIN.len() {
        let h = BUILTIN[i].0 as u32;
        assert!(
            h & BUILTIN_TAG_MASK == BUILTIN_TAG,
            "a predefined type outside 0x4c00xxxx"
        );
        let idx = (h & 0xff) as usize;
        assert!(t[idx] == 0, "two predefined types share an index");
        t[idx] = h;
        i += 1;
    }
    t
};

/// A padded pair: name, runs of data (offset, length), extent, alignment, whether both parts
/// have one size.
type PairLayout = (&'static str, &'static [(isize, usize)], isize, usize, bool);

/// The padded pairs `0x8c00000I`, indexed by `I`.
const PAIRS: [PairLayout; 5] = [
    ("MPI_FLOAT_INT", &[(0, 8)], 8, 4, true),
    ("MPI_DOUBLE_INT", &[(0, 12)], 16, 8, false),
    ("MPI_LONG_INT", &[(0, 12)], 16, 8, false),
    ("MPI_SHORT_INT", &[(0, 2), (4, 4)], 8, 4, false),
    ("MPI_LONG_DOUBLE_INT", &[(0, 20)], 32, 16, false),
];

/// The size of a valid `0x4c00SSII` handle, decoded with a mask, a load and a compare.
#[inline(always)]
fn builtin_size(h: u32) -> Option<usize> {
    (h & BUILTIN_TAG_MASK == BUILTIN_TAG && BY_INDEX[(h & 0xff) as usize] == h && h != 0)
        .then_some(((h >> 8) & 0xff) as usize)
}

/// What a `(buffer, count, datatype)` triple is as a message.
#[derive(Debug, Clone)]
pub(crate) struct Message {
    /// Bytes of data (`count * size`).
    pub bytes: usize,
    /// Where the data starts relative to the buffer, when it is one block.
    pub offset: isize,
    /// The type, when the data is not one block and must be packed / unpacked.
    pub scattered: Option<Arc<Datatype>>,
    /// Whether the type is derived (its data may be at absolute addresses, from `MPI_BOTTOM`).
    pub derived: bool,
}

/// A slot of a derived type: the type, and how many references keep it (its handle, and the
/// contents of the types built on it).
struct Slot {
    ty: Arc<Datatype>,
    refs: u32,
}

/// Every datatype of the process: the predefined ones, and the pairs and derived ones in the
/// handle table (the pairs at indices 0-4, never freed; derived ones from 8 up).
pub(crate) struct TypeTable {
    builtin: Vec<Option<Arc<Datatype>>>,
    direct: Table<Slot>,
    /// The types `MPI_Type_create_f90_*` made, by their arguments (`f90`).
    f90: f90::F90Types,
}

impl TypeTable {
    pub fn new() -> TypeTable {
        let mut builtin = vec![None; 256];
        for &(h, parts, name) in BUILTIN {
            builtin[(h as u32 & 0xff) as usize] = Some(Arc::new(predefined(h, parts, name)));
        }
        let mut direct = Table::new(Kind::Datatype);
        for (i, p) in PAIRS.iter().enumerate() {
            let ty = Arc::new(pair((DIRECT_TAG + i as u32) as MPI_Datatype, p));
            direct
                .insert(Slot { ty, refs: 1 })
                .expect("room for the predefined pairs");
        }
        // Indices 5-7 are nobody's: placeholders that are never released.
        for _ in PAIRS.len() as u32..FIRST_DERIVED {
            let (_, h) = direct
                .insert(Slot {
                    ty: Arc::new(predefined(MPI_DATATYPE_NULL, 0, "")),
                    refs: 1,
                })
                .expect("room");
            direct.retire(h);
        }
        TypeTable {
            builtin,
            direct,
            f90: Default::default(),
        }
    }

    /// Any datatype handle, predefined or derived: `MPI_ERR_TYPE` if invalid.
    #[inline]
    pub fn get(&self, dt: MPI_Datatype) -> MpiResult<&Datatype> {
        self.arc(dt).map(|a| &**a)
    }

    /// The shared type behind a handle (for operations that outlive the call).
    pub fn arc(&self, dt: MPI_Datatype) -> MpiResult<&Arc<Datatype>> {
        let h = dt as u32;
        let found = if h & BUILTIN_TAG_MASK == BUILTIN_TAG {
            (BY_INDEX[(h & 0xff) as usize] == h)
                .then(|| self.builtin[(h & 0xff) as usize].as_ref())
                .flatten()
        } else if index_of(Kind::Datatype, dt).is_some() {
            self.direct.get(dt).map(|s| &s.ty)
        } else {
            None
        };
        found.ok_or_else(|| invalid_type(dt))
    }

    /// A committed type for communication: `MPI_ERR_TYPE` if invalid or not committed.
    pub fn committed(&self, dt: MPI_Datatype) -> MpiResult<&Arc<Datatype>> {
        let t = self.arc(dt)?;
        if !t.committed {
            return Err(uncommitted(dt));
        }
        Ok(t)
    }

    /// What `count` elements of `dt` are as a message: `MPI_ERR_COUNT` for a negative count,
    /// `MPI_ERR_TYPE` for an invalid or uncommitted type. Predefined types decode without a
    /// table search or a reference count.
    #[inline(always)]
    /// The count is an `MPI_Count` for the int and the large-count (`_c`) functions alike.
    pub fn message(&self, count: MPI_Count, dt: MPI_Datatype) -> MpiResult<Message> {
        if count < 0 {
            return Err(negative_count(count));
        }
        if let Some(size) = builtin_size(dt as u32) {
            let bytes = (count as usize)
                .checked_mul(size)
                .ok_or_else(|| too_big(count as usize))?;
            return Ok(Message {
                bytes,
                offset: 0,
                scattered: None,
                derived: false,
            });
        }
        self.derived_message(count as usize, dt)
    }

    #[inline(never)]
    fn derived_message(&self, count: usize, dt: MPI_Datatype) -> MpiResult<Message> {
        let t = self.committed(dt)?;
        let bytes = count.checked_mul(t.size).ok_or_else(|| too_big(count))?;
        let derived = !TypeTable::is_predefined(dt);
        if t.is_one_block(count) || bytes == 0 {
            let offset = t.runs.first().map_or(0, |r| r.offset);
            return Ok(Message {
                bytes,
                offset,
                scattered: None,
                derived,
            });
        }
        Ok(Message {
            bytes,
            offset: 0,
            scattered: Some(Arc::clone(t)),
            derived,
        })
    }

    /// Stores a new derived type and returns its handle.
    fn insert(&mut self, ty: Datatype) -> MpiResult<MPI_Datatype> {
        for &child in &ty.contents.types {
            self.retain(child);
        }
        self.direct
            .insert(Slot {
                ty: Arc::new(ty),
                refs: 1,
            })
            .map(|(_, h)| h)
            .ok_or_else(|| {
                MpiError::new(
                    MPI_ERR_OTHER,
                    "too many derived datatypes exist; free some with MPI_Type_free",
                )
            })
    }

    /// Keeps type `dt` alive for a subsystem that holds it beyond the program's
    /// `MPI_Type_free` (a file's view); nothing for a predefined type. [`TypeTable::let_go`]
    /// undoes it.
    pub(crate) fn hold(&mut self, dt: MPI_Datatype) {
        self.retain(dt);
    }

    /// Lets go of a type [`TypeTable::hold`] kept.
    pub(crate) fn let_go(&mut self, dt: MPI_Datatype) {
        self.release(dt);
    }

    /// A new handle for a copy of `dt`: what `MPI_Type_dup` makes (committed if `dt` is).
    pub(crate) fn dup(&mut self, dt: MPI_Datatype) -> MpiResult<MPI_Datatype> {
        let old = self.get(dt)?;
        let copy = Datatype {
            contents: constructors::contents(MPI_COMBINER_DUP, vec![], vec![], vec![dt]),
            name: String::new(),
            ..old.clone()
        };
        self.insert(copy)
    }

    /// `dt` as a call hands a type to the program that the program then owns (and frees):
    /// a copy of a derived type, a predefined type as it is (`MPI_File_get_view`, MPI 3.1
    /// §13.3).
    pub(crate) fn dup_unless_predefined(&mut self, dt: MPI_Datatype) -> MpiResult<MPI_Datatype> {
        if TypeTable::is_predefined(dt) {
            self.get(dt)?;
            return Ok(dt);
        }
        self.dup(dt)
    }

    /// The derived slot of a handle, if it is one.
    fn slot_mut(&mut self, dt: MPI_Datatype) -> Option<&mut Slot> {
        if index_of(Kind::Datatype, dt)? < FIRST_DERIVED {
            return None;
        }
        self.direct.get_mut(dt)
    }

    /// Adds a reference to a derived type (no-op for predefined types).
    fn retain(&mut self, dt: MPI_Datatype) {
        if let Some(s) = self.slot_mut(dt) {
            s.refs += 1;
        }
    }

    /// Drops a reference to a derived type; the last one frees its slot and releases the types
    /// it was built from.
    fn release(&mut self, dt: MPI_Datatype) {
        let mut pending = vec![dt];
        while let Some(dt) = pending.pop() {
            let Some(s) = self.slot_mut(dt) else { continue };
            s.refs -= 1;
            if s.refs == 0 {
                let slot = self.direct.remove(dt).expect("a live slot");
                pending.extend(slot.ty.contents.types.iter().copied());
            }
        }
    }

    /// Whether a handle is a predefined type.
    /// The size of one element of a dense predefined type (`MPI_INT`, `MPI_BYTE`, ...: one
    /// block of `size` bytes from the buffer's start, always committed); `None` for every other
    /// handle (the padded pairs, derived types, invalid handles). A mask, a load, a compare.
    #[inline(always)]
    pub(crate) fn dense_predefined_size(dt: MPI_Datatype) -> Option<usize> {
        builtin_size(dt as u32)
    }

    pub(crate) fn is_predefined(dt: MPI_Datatype) -> bool {
        let h = dt as u32;
        builtin_size(h).is_some() || h.wrapping_sub(DIRECT_TAG) < PAIRS.len() as u32
    }

    /// The type behind a handle, for changing it (commit, name). Shared copies held by pending
    /// operations keep what they had.
    fn get_mut(&mut self, dt: MPI_Datatype) -> MpiResult<&mut Datatype> {
        self.arc(dt)?;
        let h = dt as u32;
        let arc = if h & BUILTIN_TAG_MASK == BUILTIN_TAG {
            self.builtin[(h & 0xff) as usize].as_mut()
        } else {
            self.direct.get_mut(dt).map(|s| &mut s.ty)
        };
        Ok(Arc::make_mut(arc.expect("checked by arc()")))
    }
}

/// A predefined type of the `0x4c00SSII` form.
fn predefined(h: MPI_Datatype, parts: usize, name: &str) -> Datatype {
    let size = ((h as u32 >> 8) & 0xff) as usize;
    let align = if COMPLEX.contains(&h) || parts == 2 {
        size / 2
    } else {
        size
    }
    .clamp(1, 16);
    let runs: Box<[Run]> = if size > 0 {
        Box::new([Run {
            offset: 0,
            len: size,
        }])
    } else {
        Box::new([])
    };
    let leaves: Box<[Leaf]> = if size > 0 {
        Box::new([Leaf {
            ty: h,
            unit: size,
            parts,
            uniform: true,
            n: 1,
        }])
    } else {
        Box::new([])
    };
    Datatype {
        size,
        lb: 0,
        ub: size as isize,
        true_lb: 0,
        true_ub: size as isize,
        lb_marked: h == MPI_LB,
        ub_marked: h == MPI_UB,
        align,
        runs,
        leaves,
        committed: true,
        contents: named(),
        name: name.to_string(),
    }
}

/// A padded pair type.
fn pair(h: MPI_Datatype, p: &PairLayout) -> Datatype {
    let &(name, runs, extent, align, uniform) = p;
    let size: usize = runs.iter().map(|r| r.1).sum();
    let last = runs[runs.len() - 1];
    Datatype {
        size,
        lb: 0,
        ub: extent,
        true_lb: 0,
        true_ub: last.0 + last.1 as isize,
        lb_marked: false,
        ub_marked: false,
        align,
        runs: runs
            .iter()
            .map(|&(offset, len)| Run { offset, len })
            .collect(),
        leaves: Box::new([Leaf {
            ty: h,
            unit: size,
            parts: 2,
            uniform,
            n: 1,
        }]),
        committed: true,
        contents: named(),
        name: name.to_string(),
    }
}

fn named() -> Contents {
    Contents {
        combiner: MPI_COMBINER_NAMED,
        ..Contents::default()
    }
}

#[cold]
fn invalid_type(datatype: MPI_Datatype) -> MpiError {
    let detail = if datatype == MPI_DATATYPE_NULL {
        "the datatype is MPI_DATATYPE_NULL".to_string()
    } else {
        format!("0x{datatype:08x} is not a datatype (a predefined one of mpi.h, or a derived one not yet freed)")
    };
    MpiError::new(MPI_ERR_TYPE, detail)
}

#[cold]
fn uncommitted(datatype: MPI_Datatype) -> MpiError {
    MpiError::new(
        MPI_ERR_TYPE,
        format!("the datatype 0x{datatype:08x} is not committed; call MPI_Type_commit on it before using it in communication"),
    )
}

#[cold]
pub(crate) fn negative_count(count: MPI_Count) -> MpiError {
    MpiError::new(
        MPI_ERR_COUNT,
        format!("the count is {count}; it must be 0 or more"),
    )
}

#[cold]
fn too_big(count: usize) -> MpiError {
    MpiError::new(
        MPI_ERR_COUNT,
        format!("{count} elements of this datatype are more bytes than memory holds"),
    )
}

#[cfg(test)]
mod tests;
