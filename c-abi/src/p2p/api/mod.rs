//! The C entry points of point-to-point communication, in groups: [`bsend`] (the attached
//! buffer), [`status`] (reading statuses).

mod bsend;
mod status;
