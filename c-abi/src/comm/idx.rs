//! The index of a communicator in the communicator table, and the indices of the two
//! predefined communicators.
//!
//! It lives apart from the table so that the lowest layers (errors, which name the
//! communicator whose handler must deal with them) can name a communicator without depending
//! on the table.

/// The index of a communicator in the communicator table.
pub(crate) type CommIdx = u32;
/// `MPI_COMM_WORLD`'s index.
pub(crate) const WORLD: CommIdx = 0;
/// `MPI_COMM_SELF`'s index.
pub(crate) const SELF: CommIdx = 1;
