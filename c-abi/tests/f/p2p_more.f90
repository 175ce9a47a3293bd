! MPI 4.0 point-to-point from Fortran (`use mpi`): MPI_ISENDRECV around a ring,
! MPI_ISENDRECV_REPLACE, and a generalized request whose query, free and cancel procedures
! are Fortran subroutines (query sets the status with MPI_STATUS_SET_ELEMENTS, so it calls
! MPI from inside a completion call). Rank 0 prints 'OK p2p_more'.
module grequest_callbacks
    use mpi
    implicit none
    integer :: queries = 0, frees = 0, cancels = 0
    logical :: cancel_saw_complete = .false.
contains
    subroutine query_fn(extra_state, status, ierror)
        integer(kind=MPI_ADDRESS_KIND) :: extra_state
        integer :: status(MPI_STATUS_SIZE), ierror
        queries = queries + 1
        call MPI_Status_set_elements(status, MPI_INTEGER, int(extra_state), ierror)
        call MPI_Status_set_cancelled(status, .false., ierror)
        status(MPI_SOURCE) = 5
        status(MPI_TAG) = 6
        ierror = MPI_SUCCESS
    end subroutine query_fn

    subroutine free_fn(extra_state, ierror)
        integer(kind=MPI_ADDRESS_KIND) :: extra_state
        integer :: ierror
        frees = frees + 1
        ierror = MPI_SUCCESS
    end subroutine free_fn

    subroutine cancel_fn(extra_state, complete, ierror)
        integer(kind=MPI_ADDRESS_KIND) :: extra_state
        logical :: complete
        integer :: ierror
        cancels = cancels + 1
        cancel_saw_complete = complete
        ierror = MPI_SUCCESS
    end subroutine cancel_fn
end module grequest_callbacks

program p2p_more
    use mpi
    use grequest_callbacks
    implicit none
    integer :: ierr, rank, np, next, prev, i, n, req
    integer :: status(MPI_STATUS_SIZE)
    integer :: out(10), in(10), buf(10)
    integer(kind=MPI_ADDRESS_KIND) :: extra
    logical :: flag

    call MPI_Init(ierr)
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
    call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
    next = mod(rank + 1, np)
    prev = mod(rank + np - 1, np)

    do i = 1, 10
        out(i) = rank * 100 + i
        in(i) = -1
        buf(i) = rank * 1000 + i
    end do
    call MPI_Isendrecv(out, 10, MPI_INTEGER, next, 7, in, 10, MPI_INTEGER, prev, 7, &
                       MPI_COMM_WORLD, req, ierr)
    call check(ierr == MPI_SUCCESS, 'isendrecv')
    call MPI_Wait(req, status, ierr)
    call check(req == MPI_REQUEST_NULL, 'isendrecv request freed')
    call check(status(MPI_SOURCE) == prev .and. status(MPI_TAG) == 7, 'isendrecv status')
    do i = 1, 10
        call check(in(i) == prev * 100 + i, 'isendrecv data')
    end do

    call MPI_Isendrecv_replace(buf, 10, MPI_INTEGER, next, 8, prev, 8, MPI_COMM_WORLD, req, ierr)
    call MPI_Wait(req, status, ierr)
    do i = 1, 10
        call check(buf(i) == prev * 1000 + i, 'isendrecv_replace data')
    end do

    extra = 9
    call MPI_Grequest_start(query_fn, free_fn, cancel_fn, extra, req, ierr)
    call check(ierr == MPI_SUCCESS, 'grequest_start')
    call MPI_Test(req, flag, status, ierr)
    call check(.not. flag, 'grequest complete before MPI_Grequest_complete')
    call MPI_Cancel(req, ierr)
    call check(cancels == 1 .and. .not. cancel_saw_complete, 'cancel_fn (incomplete)')
    call MPI_Grequest_complete(req, ierr)
    call MPI_Cancel(req, ierr)
    call check(cancels == 2 .and. cancel_saw_complete, 'cancel_fn (complete)')
    call MPI_Wait(req, status, ierr)
    call check(ierr == MPI_SUCCESS .and. req == MPI_REQUEST_NULL, 'grequest wait')
    call check(queries == 1 .and. frees == 1, 'query_fn and free_fn once each')
    call MPI_Get_count(status, MPI_INTEGER, n, ierr)
    call check(n == 9, 'count set by query_fn')
    call check(status(MPI_SOURCE) == 5 .and. status(MPI_TAG) == 6, 'status set by query_fn')
    call MPI_Test_cancelled(status, flag, ierr)
    call check(.not. flag, 'not cancelled')

    call MPI_Barrier(MPI_COMM_WORLD, ierr)
    call MPI_Finalize(ierr)
    if (rank == 0) print '(A)', 'OK p2p_more'

contains

    subroutine check(cond, what)
        logical, intent(in) :: cond
        character(len=*), intent(in) :: what
        integer :: e
        if (.not. cond) then
            print '(A,A,A,I3)', 'FAIL p2p_more: ', what, ' rank', rank
            call MPI_Abort(MPI_COMM_WORLD, 1, e)
        end if
    end subroutine check
end program p2p_more
