! The `mpi` module of Fortran 90: the constants of mpif.h, as MPICH's minimal module has them.
! The MPI procedures are external (no explicit interfaces), so any buffer type is accepted,
! as with mpif.h. Compiled by c-abi/build.rs into mpi.mod beside the generated mpif.h.
module mpi
    implicit none
    include 'mpif.h'
end module mpi
