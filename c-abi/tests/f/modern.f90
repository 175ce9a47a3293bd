! Fortran 90 with `use mpi`: a ring exchange with SENDRECV, an ALLREDUCE, and a CHARACTER
! output (MPI_GET_LIBRARY_VERSION). Rank 0 prints 'OK modern'.
program modern
    use mpi
    implicit none
    integer :: ierr, rank, np, next, prev, got, total, n
    integer :: status(MPI_STATUS_SIZE)
    character(len=MPI_MAX_LIBRARY_VERSION_STRING) :: version
    real(kind=8) :: t

    call MPI_Init(ierr)
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
    call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
    next = mod(rank + 1, np)
    prev = mod(rank + np - 1, np)
    t = MPI_Wtime()

    call MPI_Sendrecv(rank, 1, MPI_INTEGER, next, 4, got, 1, MPI_INTEGER, prev, 4, &
                      MPI_COMM_WORLD, status, ierr)
    call check(ierr == MPI_SUCCESS .and. got == prev, 'sendrecv')
    call check(status(MPI_SOURCE) == prev .and. status(MPI_TAG) == 4, 'status')

    call MPI_Allreduce(rank, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    call check(total == np * (np - 1) / 2, 'allreduce')

    call MPI_Get_library_version(version, n, ierr)
    call check(n > 0 .and. len_trim(version) == n, 'library version')

    call MPI_Finalize(ierr)
    if (rank == 0) print '(A)', 'OK modern'

contains

    subroutine check(cond, what)
        logical, intent(in) :: cond
        character(len=*), intent(in) :: what
        integer :: e
        if (.not. cond) then
            print '(A,A,A,I3)', 'FAIL modern: ', what, ' rank', rank
            call MPI_Abort(MPI_COMM_WORLD, 1, e)
        end if
    end subroutine check
end program modern
