//! The C entry points of datatypes: [`constructors`] (making, committing and freeing types),
//! [`queries`] (sizes, extents, envelopes, names, addresses), [`pack`] (packing), [`external`] (packing in external32), [`f90`] (`MPI_Type_create_f90_*`).

mod constructors;
mod external;
mod f90;
mod pack;
mod queries;
