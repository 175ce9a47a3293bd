//! The C entry points of datatypes: [`constructors`] (making, committing and freeing types),
//! [`queries`] (sizes, extents, envelopes, names, addresses), [`pack`] (packing).

mod constructors;
mod pack;
mod queries;
