//! The C entry points of point-to-point communication, in groups: [`blocking`] (sends,
//! receives and probes that wait), [`nonblocking`] (nonblocking and persistent starts),
//! [`completion`] (wait, test, free, cancel), [`mprobe`] (matched probes), [`status`]
//! (reading and setting statuses), [`bsend`] (the attached buffer), [`grequest`]
//! (generalized requests). Each builds the point-to-point context
//! ([`super::Cx`]) from the running state, checks its arguments and calls the Rust API.

mod blocking;
mod bsend;
mod completion;
mod grequest;
mod mprobe;
mod nonblocking;
mod status;
