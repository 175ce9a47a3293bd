! The `mpi` module of Fortran 90: the constants of mpif.h and, from mpi_interfaces.h (generated
! by c-abi/fortran/generate_f08.rs), explicit interfaces of the procedures without choice
! buffers, so that the compiler checks their arguments. Procedures with choice buffers stay
! external (no explicit interface), so any buffer type is accepted, as with mpif.h. Compiled by
! c-abi/build.rs into mpi.mod beside the generated mpif.h.
module mpi
    implicit none
    include 'mpif.h'
    include 'mpi_interfaces.h'
end module mpi
