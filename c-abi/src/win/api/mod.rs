//! The C entry points of windows: making and freeing them (`create`), the operations
//! (`rma`), synchronization (`sync`), and attributes, names, groups and info (`attrs`).
//! The window error-handler calls are with the others, in `errhandler::api`.

mod attrs;
mod create;
mod rma;
mod sync;
