//! Error codes that carry their detail: what a failed call returns (or hands to the program's
//! error handler) when it has more to say than its class, as MPICH's codes do.
//!
//! The numbers an error code may have (the library's own all at most `MPI_ERR_LASTCODE`,
//! `0x3fffffff`):
//!
//! ```text
//!   0 ..= 78                     the predefined classes (a class is also a code of itself)
//!   0x20000000 ..= 0x3fffffff    instances: 0x20000000 | serial << 7 | class
//!   0x40000000 ..= 0x7fffffff    the classes and codes the program adds (FIRST_ADDED up)
//! ```
//!
//! An instance is one error the library raised: bit 29 marks it, bits 7..29 are its serial
//! number (counting modulo 2^22) and bits 0..7 its predefined class, so `MPI_Error_class`
//! needs no lookup and works for every instance, however old. The detail of the last
//! [`KEPT`] instances is kept in a ring, and `MPI_Error_string` gives
//! `"MPI_ERR_RANK: invalid rank: rank 7 is not in MPI_COMM_WORLD (...)"`; an older instance
//! (its slot reused) is described by its class alone. The ring is process-wide, so the codes
//! stay describable after `MPI_Finalize`.
//!
//! An error without detail, and `MPI_ERR_IN_STATUS` (the standard says such calls return the
//! code `MPI_ERR_IN_STATUS`; the statuses say what failed), stay bare classes.

use crate::abi::*;
use crate::error::{class_info, error_string, MpiError};
use std::ffi::c_int;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// The bit that marks an instance.
pub(super) const INSTANCE: c_int = 0x2000_0000;
/// How many low bits hold an instance's class.
const CLASS_BITS: u32 = 7;
const CLASS_MASK: c_int = (1 << CLASS_BITS) - 1;
/// The serial numbers of instances count modulo `SERIAL_MASK + 1`.
const SERIAL_MASK: u32 = (INSTANCE as u32 >> CLASS_BITS) - 1;
/// How many instances keep their detail.
pub(super) const KEPT: usize = 1024;

const _: () = assert!(
    MPI_T_ERR_NOT_SUPPORTED <= CLASS_MASK,
    "a class must fit its bits"
);
const _: () = assert!(
    INSTANCE | (SERIAL_MASK << CLASS_BITS) as c_int | CLASS_MASK == MPI_ERR_LASTCODE,
    "instances fill the numbers up to MPI_ERR_LASTCODE"
);
const _: () = assert!(
    (SERIAL_MASK as usize + 1).is_multiple_of(KEPT),
    "the ring's slots follow serials"
);

/// The details of the last [`KEPT`] instances.
struct Recent {
    /// The serial number of the next instance.
    next: u32,
    /// Slot `serial % KEPT`: the instance's code and its detail.
    kept: Vec<(c_int, String)>,
}

static RECENT: Mutex<Recent> = Mutex::new(Recent {
    next: 0,
    kept: Vec::new(),
});

fn recent() -> MutexGuard<'static, Recent> {
    // A panic while the ring was held leaves it consistent (each step is one assignment).
    RECENT.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The code to give the program for `e`: a new instance that carries its detail, or its bare
/// class.
pub(super) fn code_of(e: &MpiError) -> c_int {
    let bare = e.detail.is_empty()
        || e.class == MPI_SUCCESS
        || e.class == MPI_ERR_IN_STATUS
        || e.class & !CLASS_MASK != 0
        || class_info(e.class).is_none();
    if bare {
        return e.class;
    }
    let detail = within(&e.detail, MPI_MAX_ERROR_STRING as usize - 1).to_string();
    let mut r = recent();
    let serial = r.next;
    r.next = (serial + 1) & SERIAL_MASK;
    let code = INSTANCE | (serial << CLASS_BITS) as c_int | e.class;
    let slot = serial as usize % KEPT;
    match r.kept.get_mut(slot) {
        Some(s) => *s = (code, detail),
        None => r.kept.push((code, detail)),
    }
    code
}

/// The class of a code the library itself makes (a predefined class, or an instance of one),
/// whether MPI runs or not; `None` for any other number (the program's added codes included).
pub(crate) fn library_class(code: c_int) -> Option<c_int> {
    if class_info(code).is_some() {
        return Some(code);
    }
    class_of_instance(code)
}

/// The class of `code` if it is an instance (made now or earlier, kept or not).
pub(super) fn class_of_instance(code: c_int) -> Option<c_int> {
    let class = code & CLASS_MASK;
    let well_formed = code & !MPI_ERR_LASTCODE == 0 && code & INSTANCE != 0;
    (well_formed && class != MPI_SUCCESS && class_info(class).is_some()).then_some(class)
}

/// The detail of instance `code`, if it is still kept.
pub(super) fn detail_of(code: c_int) -> Option<String> {
    class_of_instance(code)?;
    let serial = (code >> CLASS_BITS) as u32 & SERIAL_MASK;
    let r = recent();
    r.kept
        .get(serial as usize % KEPT)
        .filter(|(kept, _)| *kept == code)
        .map(|(_, detail)| detail.clone())
}

/// What `MPI_Error_string` gives for instance `code`: its class's name and text, then its
/// detail if it is still kept; at most `MPI_MAX_ERROR_STRING - 1` bytes.
pub(super) fn describe(code: c_int) -> Option<String> {
    let class = class_of_instance(code)?;
    let text = match detail_of(code) {
        Some(detail) => format!("{}: {detail}", error_string(class)),
        None => error_string(class),
    };
    Some(within(&text, MPI_MAX_ERROR_STRING as usize - 1).to_string())
}

/// The longest start of `s` of at most `max` bytes that ends on a character boundary.
fn within(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tests that count on the ring's contents run one at a time (one may fill it).
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

    fn alone() -> MutexGuard<'static, ()> {
        ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner)
    }

    #[test]
    fn an_instance_has_its_class_and_its_detail() {
        let _alone = alone();
        let e = MpiError::new(MPI_ERR_RANK, "rank 7 is not in MPI_COMM_WORLD");
        let code = code_of(&e);
        assert!((INSTANCE..=MPI_ERR_LASTCODE).contains(&code), "{code:#x}");
        assert_eq!(class_of_instance(code), Some(MPI_ERR_RANK));
        assert_eq!(
            describe(code).unwrap(),
            "MPI_ERR_RANK: invalid rank: rank 7 is not in MPI_COMM_WORLD"
        );
        assert_ne!(code_of(&e), code, "each error is its own instance");
    }

    #[test]
    fn errors_without_detail_and_in_status_stay_classes() {
        assert_eq!(code_of(&MpiError::new(MPI_ERR_TAG, "")), MPI_ERR_TAG);
        let in_status = MpiError::new(MPI_ERR_IN_STATUS, "request 1: truncated");
        assert_eq!(code_of(&in_status), MPI_ERR_IN_STATUS);
        assert_eq!(code_of(&MpiError::new(0x105, "an added class")), 0x105);
    }

    #[test]
    fn classes_and_added_codes_are_not_instances() {
        for code in [
            0,
            MPI_ERR_RANK,
            MPI_T_ERR_NOT_SUPPORTED,
            0x100,
            INSTANCE - 1,
            -1,
        ] {
            assert_eq!(class_of_instance(code), None, "{code:#x}");
        }
        assert_eq!(class_of_instance(INSTANCE), None, "class MPI_SUCCESS");
        assert_eq!(class_of_instance(INSTANCE | 54), None, "no class 54");
        assert_eq!(class_of_instance(MPI_ERR_LASTCODE + 1), None);
    }

    #[test]
    fn an_evicted_instance_falls_back_to_its_class_text() {
        let _alone = alone();
        let first = code_of(&MpiError::new(MPI_ERR_COUNT, "the count is -1"));
        let mut last = first;
        for i in 0..KEPT {
            last = code_of(&MpiError::new(MPI_ERR_TYPE, format!("type {i}")));
        }
        assert_eq!(class_of_instance(first), Some(MPI_ERR_COUNT));
        assert_eq!(describe(first).unwrap(), error_string(MPI_ERR_COUNT));
        assert!(describe(last)
            .unwrap()
            .starts_with("MPI_ERR_TYPE: invalid datatype: type "));
    }

    #[test]
    fn a_long_detail_is_cut_on_a_character_boundary() {
        let _alone = alone();
        let code = code_of(&MpiError::new(
            MPI_ERR_ARG,
            "é".repeat(MPI_MAX_ERROR_STRING as usize),
        ));
        let text = describe(code).unwrap();
        assert!(text.len() < MPI_MAX_ERROR_STRING as usize && text.ends_with('é'));
    }
}
