! Persistent and neighbourhood collectives through the Fortran binding (`use mpi`):
! MPI_ALLREDUCE_INIT started three times with new data (MPI_START, MPI_WAIT), then freed;
! MPI_NEIGHBOR_ALLTOALL, MPI_INEIGHBOR_ALLGATHER and MPI_NEIGHBOR_ALLGATHER_INIT on a
! periodic ring (MPI_CART_CREATE). Rank 0 prints 'OK persistent_coll'.
program persistent_coll
    use mpi
    implicit none
    integer :: ierr, rank, np, run, req, ring, prev, next
    integer :: x(2), total(2), sendb(2), recvb(2), status(MPI_STATUS_SIZE)
    integer :: dims(1)
    logical :: periods(1)

    call MPI_Init(ierr)
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
    call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)

    call MPI_Allreduce_init(x, total, 2, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, &
                            MPI_INFO_NULL, req, ierr)
    call check(ierr == MPI_SUCCESS .and. req /= MPI_REQUEST_NULL, 'allreduce_init')
    do run = 1, 3
        x(1) = rank + run
        x(2) = 10 * run
        call MPI_Start(req, ierr)
        call MPI_Wait(req, status, ierr)
        call check(ierr == MPI_SUCCESS, 'wait')
        call check(total(1) == np * (np - 1) / 2 + np * run, 'allreduce_init sum')
        call check(total(2) == 10 * run * np, 'allreduce_init second element')
    end do
    call MPI_Request_free(req, ierr)
    call check(req == MPI_REQUEST_NULL, 'request_free')

    dims(1) = np
    periods(1) = .true.
    call MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, .false., ring, ierr)
    call MPI_Cart_shift(ring, 0, 1, prev, next, ierr)
    ! Block 1 goes to the previous rank (lands in its block 2), block 2 to the next.
    sendb(1) = 100 * rank + 1
    sendb(2) = 100 * rank + 2
    call MPI_Neighbor_alltoall(sendb, 1, MPI_INTEGER, recvb, 1, MPI_INTEGER, ring, ierr)
    call check(ierr == MPI_SUCCESS, 'neighbor_alltoall')
    call check(recvb(1) == 100 * prev + 2 .and. recvb(2) == 100 * next + 1, 'neighbor_alltoall data')

    call MPI_Ineighbor_allgather(rank, 1, MPI_INTEGER, recvb, 1, MPI_INTEGER, ring, req, ierr)
    call MPI_Wait(req, status, ierr)
    call check(recvb(1) == prev .and. recvb(2) == next, 'ineighbor_allgather')

    call MPI_Neighbor_allgather_init(x, 1, MPI_INTEGER, recvb, 1, MPI_INTEGER, ring, &
                                     MPI_INFO_NULL, req, ierr)
    do run = 1, 2
        x(1) = rank * 7 + run
        call MPI_Start(req, ierr)
        call MPI_Wait(req, status, ierr)
        call check(recvb(1) == prev * 7 + run .and. recvb(2) == next * 7 + run, &
                   'neighbor_allgather_init')
    end do
    call MPI_Request_free(req, ierr)
    call MPI_Comm_free(ring, ierr)

    call MPI_Finalize(ierr)
    if (rank == 0) print '(A)', 'OK persistent_coll'

contains

    subroutine check(cond, what)
        logical, intent(in) :: cond
        character(len=*), intent(in) :: what
        integer :: e
        if (.not. cond) then
            print '(A,A,A,I3)', 'FAIL persistent_coll: ', what, ' rank', rank
            call MPI_Abort(MPI_COMM_WORLD, 1, e)
        end if
    end subroutine check
end program persistent_coll
