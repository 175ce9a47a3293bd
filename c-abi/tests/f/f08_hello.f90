! mpi_f08 hello: MPI_Init without ierror, rank/size, the processor name and library version
! (CHARACTER outputs), MPI_Wtime, MPI_Initialized (LOGICAL), handle comparisons with == and
! /= on predefined handles, MPI_Finalize. Rank 0 prints 'OK f08_hello'.
program f08_hello
    use mpi_f08
    implicit none
    integer :: rank, np, n, ierror, sum_ranks, version, subversion
    character(len=MPI_MAX_PROCESSOR_NAME) :: host
    character(len=MPI_MAX_LIBRARY_VERSION_STRING) :: library
    logical :: flag
    double precision :: t0, t1
    type(MPI_Comm) :: comm

    call MPI_Init()
    call MPI_Initialized(flag)
    call MPI_Comm_rank(MPI_COMM_WORLD, rank)
    call MPI_Comm_size(MPI_COMM_WORLD, np, ierror)
    call check(flag .and. ierror == MPI_SUCCESS, 'initialized')
    call check(rank >= 0 .and. rank < np, 'rank')
    call MPI_Get_processor_name(host, n)
    call check(n > 0 .and. len_trim(host) == n, 'processor name')
    call MPI_Get_library_version(library, n, ierror)
    call check(ierror == MPI_SUCCESS .and. n > 0, 'library version')
    call MPI_Get_version(version, subversion)
    call check(version == MPI_VERSION .and. subversion == MPI_SUBVERSION, 'version')
    t0 = MPI_Wtime()
    t1 = MPI_Wtime()
    call check(t1 >= t0 .and. MPI_Wtick() > 0, 'wtime')

    comm = MPI_COMM_WORLD
    call check(comm == MPI_COMM_WORLD, 'comm ==')
    call check(comm /= MPI_COMM_SELF .and. .not. (comm == MPI_COMM_NULL), 'comm /=')
    call check(MPI_INTEGER /= MPI_REAL .and. MPI_SUM == MPI_SUM, 'datatype and op ==')
    call check(MPI_COMM_WORLD%MPI_VAL /= MPI_COMM_NULL%MPI_VAL, 'MPI_VAL')

    call MPI_Allreduce(rank, sum_ranks, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
    call check(sum_ranks == np * (np - 1) / 2, 'allreduce')
    call MPI_Finalize(ierror)
    call check(ierror == MPI_SUCCESS, 'finalize')
    if (rank == 0) print '(A)', 'OK f08_hello'

contains

    subroutine check(cond, what)
        logical, intent(in) :: cond
        character(len=*), intent(in) :: what
        if (.not. cond) then
            print '(A,A,A,I3)', 'FAIL f08_hello: ', what, ' rank', rank
            call MPI_Abort(MPI_COMM_WORLD, 1)
        end if
    end subroutine check
end program f08_hello
