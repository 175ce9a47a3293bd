! Intercommunicator collectives through the generated Fortran binding (`use mpi`): an
! intercommunicator between the lower and upper halves of MPI_COMM_WORLD (MPI_COMM_SPLIT,
! MPI_INTERCOMM_CREATE); MPI_ALLREDUCE gives each group the other group's sum, MPI_BCAST
! from a root in group 0 (MPI_ROOT / MPI_PROC_NULL / its remote rank) reaches group 1, and
! MPI_IALLGATHER collects the other group's ranks. Rank 0 prints 'OK inter_coll'. Needs at
! least 2 ranks (on 1 it only says OK).
program inter_coll
    use mpi
    implicit none
    integer :: ierr, rank, np, k, group, local, inter, lrank, lsize, rsize, root, j, req
    integer :: mine(2), theirs(2), buf(3), everyone(64), status(MPI_STATUS_SIZE)

    call MPI_Init(ierr)
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
    call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
    if (np >= 2) then
        k = np / 2
        group = 0
        if (rank >= k) group = 1
        call MPI_Comm_split(MPI_COMM_WORLD, group, rank, local, ierr)
        if (group == 0) then
            call MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, k, 12, inter, ierr)
        else
            call MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, 0, 12, inter, ierr)
        end if
        call check(ierr == MPI_SUCCESS, 'intercomm_create')
        call MPI_Comm_rank(inter, lrank, ierr)
        call MPI_Comm_size(inter, lsize, ierr)
        call MPI_Comm_remote_size(inter, rsize, ierr)

        mine(1) = group + 1
        mine(2) = lrank
        call MPI_Allreduce(mine, theirs, 2, MPI_INTEGER, MPI_SUM, inter, ierr)
        call check(ierr == MPI_SUCCESS, 'allreduce')
        call check(theirs(1) == rsize * (2 - group), 'allreduce: the other group''s sum')
        call check(theirs(2) == rsize * (rsize - 1) / 2, 'allreduce: the other group''s ranks')

        ! Bcast from rank 0 of group 0.
        if (group == 0) then
            root = MPI_PROC_NULL
            if (lrank == 0) root = MPI_ROOT
            buf = (/ 7, 8, 9 /)
        else
            root = 0
            buf = -1
        end if
        call MPI_Bcast(buf, 3, MPI_INTEGER, root, inter, ierr)
        call check(ierr == MPI_SUCCESS, 'bcast')
        call check(all(buf == (/ 7, 8, 9 /)), 'bcast data')

        everyone = -1
        call MPI_Iallgather(lrank, 1, MPI_INTEGER, everyone, 1, MPI_INTEGER, inter, req, ierr)
        call MPI_Wait(req, status, ierr)
        call check(ierr == MPI_SUCCESS, 'iallgather')
        do j = 1, rsize
            call check(everyone(j) == j - 1, 'iallgather data')
        end do

        call MPI_Comm_free(inter, ierr)
        call MPI_Comm_free(local, ierr)
    end if
    if (rank == 0) print '(a)', 'OK inter_coll'
    call MPI_Finalize(ierr)

contains

    subroutine check(ok, what)
        logical, intent(in) :: ok
        character(len=*), intent(in) :: what
        integer :: e
        if (.not. ok) then
            print '(a,i0,2a)', 'FAIL inter_coll rank ', rank, ': ', what
            call MPI_Abort(MPI_COMM_WORLD, 1, e)
        end if
    end subroutine check
end program inter_coll
