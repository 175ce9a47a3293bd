//! The C entry points of datatypes: [`constructors`] (making, committing and freeing types),
//! [`queries`] (sizes, extents, envelopes, names, addresses), [`pack`] (packing), [`external`] (packing in external32).

mod constructors;
mod external;
mod pack;
mod queries;
