//! MPI errors: the error type of the library's internals, and the table of error classes.
//!
//! Every internal function returns [`MpiResult`]. An [`MpiError`] carries the MPI error class,
//! a sentence for the person reading the fatal-error message or `MPI_Error_string`, and the
//! communicator whose error handler must deal with it. (The code the C caller sees is made
//! from the class and the sentence by `errhandler`.) Building one is the cold path: the
//! detail is formatted only when something went wrong.

use crate::abi::*;
use crate::comm::idx::CommIdx;
use mpich_channel::AdiError;
use std::ffi::c_int;

/// The result of every internal step of an MPI call.
pub(crate) type MpiResult<T> = Result<T, MpiError>;

/// A failed MPI call, on its way to the communicator's error handler.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MpiError {
    /// The MPI error class (`MPI_ERR_RANK`, ...); the returned error code is of this class.
    pub class: c_int,
    /// What exactly was wrong and, where it helps, what to do about it.
    pub detail: String,
    /// The communicator whose error handler is invoked (`None`: `MPI_COMM_WORLD`'s).
    pub comm: Option<CommIdx>,
    /// The window whose error handler is invoked instead, for an error of a window call.
    pub win: Option<MPI_Win>,
    /// The session whose error handler is invoked instead, for an error of a session call.
    pub session: Option<MPI_Session>,
}

impl MpiError {
    #[cold]
    pub fn new(class: c_int, detail: impl Into<String>) -> MpiError {
        MpiError {
            class,
            detail: detail.into(),
            comm: None,
            win: None,
            session: None,
        }
    }

    /// Routes the error to `comm`'s error handler.
    pub fn on(mut self, comm: CommIdx) -> MpiError {
        self.comm = Some(comm);
        self
    }

    /// Routes the error to session `session`'s error handler.
    pub fn on_session(mut self, session: MPI_Session) -> MpiError {
        self.session = Some(session);
        self
    }

    /// Routes the error to window `win`'s error handler.
    pub fn on_win(mut self, win: MPI_Win) -> MpiError {
        self.win = Some(win);
        self
    }

    #[cold]
    pub fn arg(detail: impl Into<String>) -> MpiError {
        MpiError::new(MPI_ERR_ARG, detail)
    }

    /// A call that needs MPI running, made before `MPI_Init` or after `MPI_Finalize`.
    #[cold]
    pub fn not_running(finalized: bool) -> MpiError {
        let detail = if finalized {
            "MPI_Finalize was called already; after it only MPI_Initialized, MPI_Finalized, MPI_Get_version, MPI_Get_library_version, MPI_Error_string and MPI_Error_class may be called"
        } else {
            "MPI_Init has not been called; call it before any other MPI function (except MPI_Initialized, MPI_Finalized, MPI_Get_version, MPI_Get_library_version, MPI_Error_string and MPI_Error_class)"
        };
        MpiError::new(MPI_ERR_OTHER, detail)
    }

    #[cold]
    pub fn internal(detail: impl Into<String>) -> MpiError {
        MpiError::new(MPI_ERR_INTERN, detail)
    }

    /// The library could not allocate `bytes` bytes for `what` (`MPI_ERR_NO_MEM`).
    #[cold]
    pub fn no_mem(bytes: usize, what: &str) -> MpiError {
        MpiError::new(
            MPI_ERR_NO_MEM,
            format!("cannot allocate {bytes} bytes for {what}: the system refused the memory"),
        )
    }
}

/// Grows `v` to `len` elements, the new ones `T::default()`, or `MPI_ERR_NO_MEM` (for `what`)
/// if the memory cannot be had: the library's large temporaries are allocated this way, so a
/// request too large for the machine is an error the program sees instead of the process
/// being killed.
pub(crate) fn grow<T: Clone + Default>(v: &mut Vec<T>, len: usize, what: &str) -> MpiResult<()> {
    if len > v.len() && v.try_reserve_exact(len - v.len()).is_err() {
        return Err(MpiError::no_mem(
            len.saturating_mul(std::mem::size_of::<T>()),
            what,
        ));
    }
    v.resize(len, T::default());
    Ok(())
}

impl From<AdiError> for MpiError {
    #[cold]
    fn from(e: AdiError) -> MpiError {
        let class = match e {
            AdiError::BadRank(..) => MPI_ERR_RANK,
            AdiError::BadRequest(_) => MPI_ERR_REQUEST,
            _ => MPI_ERR_OTHER,
        };
        MpiError::new(class, format!("the communication engine failed: {e}"))
    }
}

/// `(name, description)` of every error class of `mpi.h`, indexed by class.
const CLASSES: [Option<(&str, &str)>; MPI_T_ERR_NOT_SUPPORTED as usize + 1] = {
    let mut t: [Option<(&str, &str)>; MPI_T_ERR_NOT_SUPPORTED as usize + 1] =
        [None; MPI_T_ERR_NOT_SUPPORTED as usize + 1];
    macro_rules! class {
        ($c:ident, $text:expr) => {
            t[$c as usize] = Some((stringify!($c), $text));
        };
    }
    class!(MPI_SUCCESS, "no error");
    class!(MPI_ERR_BUFFER, "invalid buffer");
    class!(MPI_ERR_COUNT, "invalid count");
    class!(MPI_ERR_TYPE, "invalid datatype");
    class!(MPI_ERR_TAG, "invalid tag");
    class!(MPI_ERR_COMM, "invalid communicator");
    class!(MPI_ERR_RANK, "invalid rank");
    class!(MPI_ERR_ROOT, "invalid root");
    class!(MPI_ERR_GROUP, "invalid group");
    class!(MPI_ERR_OP, "invalid reduction operation");
    class!(MPI_ERR_TOPOLOGY, "invalid topology");
    class!(MPI_ERR_DIMS, "invalid dimensions");
    class!(MPI_ERR_ARG, "invalid argument");
    class!(MPI_ERR_UNKNOWN, "unknown error");
    class!(
        MPI_ERR_TRUNCATE,
        "message truncated: it was longer than the receive buffer"
    );
    class!(MPI_ERR_OTHER, "other error");
    class!(MPI_ERR_INTERN, "internal error of the MPI library");
    class!(
        MPI_ERR_IN_STATUS,
        "error in one or more statuses: see their MPI_ERROR fields"
    );
    class!(
        MPI_ERR_PENDING,
        "operation neither completed nor failed yet"
    );
    class!(MPI_ERR_REQUEST, "invalid request");
    class!(MPI_ERR_ACCESS, "file access denied");
    class!(MPI_ERR_AMODE, "invalid file access mode");
    class!(MPI_ERR_BAD_FILE, "invalid file name");
    class!(MPI_ERR_CONVERSION, "data conversion failed");
    class!(MPI_ERR_DUP_DATAREP, "data representation already defined");
    class!(MPI_ERR_FILE_EXISTS, "file exists");
    class!(MPI_ERR_FILE_IN_USE, "file in use");
    class!(MPI_ERR_FILE, "invalid file handle");
    class!(MPI_ERR_INFO, "invalid info object");
    class!(MPI_ERR_INFO_KEY, "invalid info key");
    class!(MPI_ERR_INFO_VALUE, "invalid info value");
    class!(MPI_ERR_INFO_NOKEY, "no such info key");
    class!(MPI_ERR_IO, "I/O error");
    class!(MPI_ERR_NAME, "invalid service name");
    class!(MPI_ERR_NO_MEM, "out of memory");
    class!(
        MPI_ERR_NOT_SAME,
        "arguments differ between processes of a collective call"
    );
    class!(MPI_ERR_NO_SPACE, "no space left");
    class!(MPI_ERR_NO_SUCH_FILE, "no such file");
    class!(MPI_ERR_PORT, "invalid port name");
    class!(MPI_ERR_QUOTA, "quota exceeded");
    class!(MPI_ERR_READ_ONLY, "file is read-only");
    class!(MPI_ERR_SERVICE, "invalid service");
    class!(MPI_ERR_SPAWN, "could not spawn processes");
    class!(
        MPI_ERR_UNSUPPORTED_DATAREP,
        "unsupported data representation"
    );
    class!(MPI_ERR_UNSUPPORTED_OPERATION, "unsupported operation");
    class!(MPI_ERR_WIN, "invalid window");
    class!(MPI_ERR_BASE, "invalid base address");
    class!(MPI_ERR_LOCKTYPE, "invalid lock type");
    class!(MPI_ERR_KEYVAL, "invalid attribute key");
    class!(MPI_ERR_RMA_CONFLICT, "conflicting one-sided accesses");
    class!(MPI_ERR_RMA_SYNC, "wrong synchronization of one-sided calls");
    class!(MPI_ERR_SIZE, "invalid size");
    class!(MPI_ERR_DISP, "invalid displacement");
    class!(MPI_ERR_ASSERT, "invalid assertion");
    class!(MPI_ERR_RMA_RANGE, "one-sided access outside the window");
    class!(
        MPI_ERR_RMA_ATTACH,
        "memory cannot be attached to the window"
    );
    class!(MPI_ERR_RMA_SHARED, "memory cannot be shared");
    class!(MPI_ERR_RMA_FLAVOR, "wrong window flavor");
    class!(MPI_T_ERR_MEMORY, "tool interface: out of memory");
    class!(MPI_T_ERR_NOT_INITIALIZED, "tool interface not initialized");
    class!(
        MPI_T_ERR_CANNOT_INIT,
        "tool interface cannot be initialized now"
    );
    class!(MPI_T_ERR_INVALID_INDEX, "tool interface: invalid index");
    class!(MPI_T_ERR_INVALID_ITEM, "tool interface: invalid item");
    class!(MPI_T_ERR_INVALID_HANDLE, "tool interface: invalid handle");
    class!(MPI_T_ERR_OUT_OF_HANDLES, "tool interface: out of handles");
    class!(MPI_T_ERR_OUT_OF_SESSIONS, "tool interface: out of sessions");
    class!(MPI_T_ERR_INVALID_SESSION, "tool interface: invalid session");
    class!(
        MPI_T_ERR_CVAR_SET_NOT_NOW,
        "tool interface: variable cannot be set now"
    );
    class!(
        MPI_T_ERR_CVAR_SET_NEVER,
        "tool interface: variable cannot be set"
    );
    class!(
        MPI_T_ERR_PVAR_NO_STARTSTOP,
        "tool interface: variable cannot be started or stopped"
    );
    class!(
        MPI_T_ERR_PVAR_NO_WRITE,
        "tool interface: variable cannot be written or reset"
    );
    class!(
        MPI_T_ERR_PVAR_NO_ATOMIC,
        "tool interface: variable cannot be read and written atomically"
    );
    class!(MPI_T_ERR_INVALID_NAME, "tool interface: invalid name");
    class!(MPI_T_ERR_INVALID, "tool interface: invalid use");
    class!(MPI_ERR_SESSION, "invalid session");
    class!(
        MPI_ERR_PROC_ABORTED,
        "communication with an aborted process"
    );
    class!(MPI_ERR_VALUE_TOO_LARGE, "value too large to store");
    class!(MPI_T_ERR_NOT_SUPPORTED, "tool interface: not supported");
    t
};

/// The name and description of an error class, or `None` if `code` is not one.
pub(crate) fn class_info(code: c_int) -> Option<(&'static str, &'static str)> {
    usize::try_from(code)
        .ok()
        .and_then(|i| CLASSES.get(i).copied().flatten())
}

/// The text `MPI_Error_string` gives for `code`: `"MPI_ERR_RANK: invalid rank"`.
pub(crate) fn error_string(code: c_int) -> String {
    match class_info(code) {
        Some((name, text)) => format!("{name}: {text}"),
        None => format!("MPI_ERR_UNKNOWN: {code} is not an MPI error code"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_class_up_to_the_last_has_a_text_except_the_gap() {
        for code in 0..=MPI_T_ERR_NOT_SUPPORTED {
            assert_eq!(class_info(code).is_some(), code != 54, "class {code}");
        }
        assert!(class_info(-1).is_none());
        assert!(class_info(MPI_T_ERR_NOT_SUPPORTED + 1).is_none());
        assert_eq!(error_string(MPI_ERR_RANK), "MPI_ERR_RANK: invalid rank");
        assert!(error_string(999).contains("999"));
    }

    #[test]
    fn engine_errors_map_to_classes() {
        assert_eq!(MpiError::from(AdiError::BadRank(9, 2)).class, MPI_ERR_RANK);
        assert_eq!(
            MpiError::from(AdiError::Channel("x".into())).class,
            MPI_ERR_OTHER
        );
    }
}
