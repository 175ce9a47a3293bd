! mpi_f08 generalized requests: MPI_Grequest_start with query/free/cancel procedures written
! against the f08 abstract interfaces (the query procedure fills a TYPE(MPI_Status) with
! MPI_Status_set_elements/_set_cancelled and its fields), MPI_Grequest_complete, MPI_Wait
! returning that status (MPI_Get_count), the free procedure called once with the extra state.
! Rank 0 prints 'OK f08_grequest'.
module f08_grequest_callbacks
    use mpi_f08
    implicit none
    integer :: released = 0
contains
    subroutine query(extra_state, status, ierror)
        integer(kind=MPI_ADDRESS_KIND) :: extra_state
        type(MPI_Status) :: status
        integer :: ierror
        call MPI_Status_set_elements(status, MPI_INTEGER, int(extra_state))
        call MPI_Status_set_cancelled(status, .false.)
        status%MPI_SOURCE = MPI_UNDEFINED
        status%MPI_TAG = 77
        ierror = MPI_SUCCESS
    end subroutine query

    subroutine release(extra_state, ierror)
        integer(kind=MPI_ADDRESS_KIND) :: extra_state
        integer :: ierror
        released = released + int(extra_state)
        ierror = MPI_SUCCESS
    end subroutine release

    subroutine cancel(extra_state, complete, ierror)
        integer(kind=MPI_ADDRESS_KIND) :: extra_state
        logical :: complete
        integer :: ierror
        if (complete .or. extra_state < 0) released = -1000
        ierror = MPI_SUCCESS
    end subroutine cancel
end module f08_grequest_callbacks

program f08_grequest
    use mpi_f08
    use f08_grequest_callbacks
    implicit none
    type(MPI_Request) :: request
    type(MPI_Status) :: status
    integer :: rank, count
    integer(kind=MPI_ADDRESS_KIND) :: state
    logical :: cancelled

    call MPI_Init()
    call MPI_Comm_rank(MPI_COMM_WORLD, rank)
    ! A variable, not an expression: MPICH keeps the extra state's address (this library its
    ! value).
    state = rank + 3
    call MPI_Grequest_start(query, release, cancel, state, request)
    call check(request /= MPI_REQUEST_NULL, 'grequest_start')
    call MPI_Grequest_complete(request)
    call MPI_Wait(request, status)
    call check(request == MPI_REQUEST_NULL, 'wait frees the request')
    call MPI_Get_count(status, MPI_INTEGER, count)
    call check(count == rank + 3 .and. status%MPI_TAG == 77, 'status from the query procedure')
    call MPI_Test_cancelled(status, cancelled)
    call check(.not. cancelled, 'not cancelled')
    call check(released == rank + 3, 'free procedure called once')
    call MPI_Finalize()
    if (rank == 0) print '(A)', 'OK f08_grequest'

contains

    subroutine check(cond, what)
        logical, intent(in) :: cond
        character(len=*), intent(in) :: what
        if (.not. cond) then
            print '(A,A,A,I3)', 'FAIL f08_grequest: ', what, ' rank', rank
            call MPI_Abort(MPI_COMM_WORLD, 1)
        end if
    end subroutine check
end program f08_grequest
