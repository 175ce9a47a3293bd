! mpi_f08 error handling. With MPI_ERRORS_RETURN on MPI_COMM_WORLD: a send to a rank that
! does not exist returns MPI_ERR_RANK in ierror, and the same call without ierror returns
! too (the error is only lost); MPI_Error_class and MPI_Error_string. A communicator error
! handler written against the f08 MPI_Comm_errhandler_function interface is called with the
! communicator and the code. Where MPI_SUBARRAYS_SUPPORTED is .false. (this library), a
! non-contiguous array section as a buffer is MPI_ERR_BUFFER and changes nothing, and a
! contiguous section works. Then, unless F08_ERRORS_MODE=fatal is in the environment, rank 0
! prints 'OK f08_errors'; with it, MPI_ERRORS_ARE_FATAL is set back and the bad send is made
! without ierror: the job must end with an error (the test checks the exit status).
module f08_errors_handler
    use mpi_f08
    implicit none
    integer :: calls = 0, last_code = MPI_SUCCESS
    type(MPI_Comm) :: last_comm
contains
    subroutine remember(comm, error_code)
        type(MPI_Comm) :: comm
        integer :: error_code
        calls = calls + 1
        last_code = error_code
        last_comm = comm
    end subroutine remember
end module f08_errors_handler

program f08_errors
    use mpi_f08
    use f08_errors_handler
    implicit none
    integer :: rank, np, ierror, class, n
    character(len=MPI_MAX_ERROR_STRING) :: text
    character(len=16) :: mode
    type(MPI_Errhandler) :: handler, current
    type(MPI_Comm) :: dup
    integer :: v(10), i

    call MPI_Init()
    call MPI_Comm_rank(MPI_COMM_WORLD, rank)
    call MPI_Comm_size(MPI_COMM_WORLD, np)
    call get_environment_variable('F08_ERRORS_MODE', mode)

    call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN)
    call MPI_Comm_get_errhandler(MPI_COMM_WORLD, current)
    call check(current == MPI_ERRORS_RETURN, 'get_errhandler')
    call MPI_Send(rank, 1, MPI_INTEGER, np + 5, 0, MPI_COMM_WORLD, ierror)
    call check(ierror /= MPI_SUCCESS, 'bad rank returns an error')
    call MPI_Error_class(ierror, class)
    call check(class == MPI_ERR_RANK, 'MPI_ERR_RANK')
    call MPI_Error_string(ierror, text, n)
    call check(n > 0 .and. len_trim(text) == n, 'error string')
    ! Without ierror the call still returns under MPI_ERRORS_RETURN.
    call MPI_Send(rank, 1, MPI_INTEGER, np + 5, 0, MPI_COMM_WORLD)

    ! Array sections as buffers.
    do i = 1, 10
        v(i) = 100 * rank + i
    end do
    if (.not. MPI_SUBARRAYS_SUPPORTED) then
        call MPI_Bcast(v(1:10:2), 5, MPI_INTEGER, 0, MPI_COMM_WORLD, ierror)
        call MPI_Error_class(ierror, class)
        call check(class == MPI_ERR_BUFFER, 'a strided section is MPI_ERR_BUFFER')
        call check(all(v == [(100 * rank + i, i = 1, 10)]), 'the refused call changed nothing')
    end if
    call MPI_Bcast(v(3:7), 5, MPI_INTEGER, 0, MPI_COMM_WORLD, ierror)
    call check(ierror == MPI_SUCCESS, 'a contiguous section works')
    call check(all(v(3:7) == [(i, i = 3, 7)]), 'the contiguous section got rank 0''s values')

    ! A handler procedure of the f08 interface.
    call MPI_Comm_dup(MPI_COMM_WORLD, dup)
    call MPI_Comm_create_errhandler(remember, handler)
    call MPI_Comm_set_errhandler(dup, handler)
    call MPI_Send(rank, 1, MPI_INTEGER, -7, 0, dup, ierror)
    call check(calls == 1 .and. last_comm == dup, 'handler called with the communicator')
    call MPI_Error_class(last_code, class)
    call check(class == MPI_ERR_RANK .and. ierror == last_code, 'handler got the code')
    call MPI_Comm_call_errhandler(dup, MPI_ERR_OTHER)
    call check(calls == 2 .and. last_code == MPI_ERR_OTHER, 'call_errhandler')
    call MPI_Errhandler_free(handler)
    call check(handler == MPI_ERRHANDLER_NULL, 'errhandler_free')
    call MPI_Comm_free(dup)

    if (trim(mode) == 'fatal') then
        call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL)
        if (rank == 0) call MPI_Send(rank, 1, MPI_INTEGER, np + 5, 0, MPI_COMM_WORLD)
        call MPI_Barrier(MPI_COMM_WORLD)
        print '(A)', 'FAIL f08_errors: the fatal error returned'
    end if
    call MPI_Finalize()
    if (rank == 0) print '(A)', 'OK f08_errors'

contains

    subroutine check(cond, what)
        logical, intent(in) :: cond
        character(len=*), intent(in) :: what
        if (.not. cond) then
            print '(A,A,A,I3)', 'FAIL f08_errors: ', what, ' rank', rank
            call MPI_Abort(MPI_COMM_WORLD, 1)
        end if
    end subroutine check
end program f08_errors
