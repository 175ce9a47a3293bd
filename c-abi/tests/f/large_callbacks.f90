! The large-count callbacks with `use mpi`: MPI_OP_CREATE_C with a user function whose LEN is
! INTEGER(KIND=MPI_COUNT_KIND) (an allreduce of 1000 integers checked), and
! MPI_REGISTER_DATAREP_C with conversion functions whose COUNT is of that kind ('mpi-plus-c':
! file integers are the memory's plus EXTRA_STATE) and MPI_CONVERSION_FN_NULL_C: each rank
! writes its block through the converting view, everyone reads the file natively (shifted
! values) and through the view (the values). Rank 0 prints 'OK large_callbacks'.
module large_calls
    implicit none
    integer :: reads = 0, writes = 0
    integer(kind=8) :: longest_len = 0
end module large_calls

program large_callbacks
    use mpi
    use large_calls
    implicit none
    integer, parameter :: n = 1000, per_rank = 8
    integer(kind=MPI_ADDRESS_KIND), parameter :: shift = 700
    integer :: ierr, rank, np, op, i, k, fh, dirlen, total
    integer :: mine(n), result(n), expected(n), buf(per_rank)
    integer :: status(MPI_STATUS_SIZE)
    integer, allocatable :: whole(:)
    integer(kind=MPI_OFFSET_KIND) :: disp
    character(len=512) :: dir
    character(len=600) :: path
    external plus_one_sum_c, plus_read_c, plus_write_c, integer_extent

    call MPI_INIT(ierr)
    call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
    call MPI_COMM_SIZE(MPI_COMM_WORLD, np, ierr)

    call MPI_OP_CREATE_C(plus_one_sum_c, .true., op, ierr)
    call check(ierr == MPI_SUCCESS, 'MPI_OP_CREATE_C')
    mine = [(rank * 10 + i, i = 1, n)]
    expected = np - 1
    do k = 0, np - 1
        expected = expected + [(k * 10 + i, i = 1, n)]
    end do
    call MPI_ALLREDUCE(mine, result, n, MPI_INTEGER, op, MPI_COMM_WORLD, ierr)
    call check(ierr == MPI_SUCCESS .and. all(result == expected), 'allreduce with the _c op')
    if (np > 1) call check(longest_len > 0 .and. longest_len <= n, 'LEN the function saw')
    call MPI_OP_FREE(op, ierr)

    call MPI_REGISTER_DATAREP_C('mpi-plus-c', plus_read_c, plus_write_c, integer_extent, &
        shift, ierr)
    call check(ierr == MPI_SUCCESS, 'MPI_REGISTER_DATAREP_C')
    call MPI_REGISTER_DATAREP_C('mpi-raw-c', MPI_CONVERSION_FN_NULL_C, &
        MPI_CONVERSION_FN_NULL_C, integer_extent, 0_MPI_ADDRESS_KIND, ierr)
    call check(ierr == MPI_SUCCESS, 'MPI_REGISTER_DATAREP_C raw')

    call get_environment_variable('FILE_TEST_DIR', dir, dirlen)
    if (dirlen == 0) then
        dir = '.'
        dirlen = 1
    end if
    path = dir(1:dirlen) // '/large-callbacks.dat'
    total = per_rank * np
    allocate (whole(total))
    call MPI_FILE_OPEN(MPI_COMM_WORLD, path, MPI_MODE_CREATE + MPI_MODE_RDWR, MPI_INFO_NULL, &
        fh, ierr)
    call check(ierr == MPI_SUCCESS, 'open')
    buf = [(rank * per_rank + i, i = 1, per_rank)]
    disp = int(rank * per_rank * 4, MPI_OFFSET_KIND)

    call MPI_FILE_SET_VIEW(fh, disp, MPI_INTEGER, MPI_INTEGER, 'mpi-plus-c', MPI_INFO_NULL, ierr)
    call check(ierr == MPI_SUCCESS, 'set_view mpi-plus-c')
    call MPI_FILE_WRITE_AT(fh, 0_MPI_OFFSET_KIND, buf, per_rank, MPI_INTEGER, status, ierr)
    call check(ierr == MPI_SUCCESS .and. writes >= 1, 'converted write')
    call settle()
    call read_all('native', int(shift))
    call read_all('mpi-plus-c', 0)
    call check(reads >= 1, 'converted read')

    k = writes
    call MPI_FILE_SET_VIEW(fh, disp, MPI_INTEGER, MPI_INTEGER, 'mpi-raw-c', MPI_INFO_NULL, ierr)
    call MPI_FILE_WRITE_AT(fh, 0_MPI_OFFSET_KIND, buf, per_rank, MPI_INTEGER, status, ierr)
    call check(ierr == MPI_SUCCESS .and. writes == k, 'raw write converts nothing')
    call settle()
    call read_all('native', 0)

    call MPI_FILE_CLOSE(fh, ierr)
    call MPI_BARRIER(MPI_COMM_WORLD, ierr)
    if (rank == 0) call MPI_FILE_DELETE(path, MPI_INFO_NULL, ierr)
    call MPI_FINALIZE(ierr)
    if (rank == 0) print '(A)', 'OK large_callbacks'

contains

    subroutine settle()
        call MPI_FILE_SYNC(fh, ierr)
        call MPI_BARRIER(MPI_COMM_WORLD, ierr)
        call MPI_FILE_SYNC(fh, ierr)
    end subroutine

    ! Reads the whole file through `rep`: item i must be i + add.
    subroutine read_all(rep, add)
        character(len=*), intent(in) :: rep
        integer, intent(in) :: add
        call MPI_FILE_SET_VIEW(fh, 0_MPI_OFFSET_KIND, MPI_INTEGER, MPI_INTEGER, rep, &
            MPI_INFO_NULL, ierr)
        whole = -1
        call MPI_FILE_READ_AT(fh, 0_MPI_OFFSET_KIND, whole, total, MPI_INTEGER, status, ierr)
        call check(ierr == MPI_SUCCESS, 'read_at ' // rep)
        call check(all(whole == [(i + add, i = 1, total)]), 'values through ' // rep)
        call MPI_BARRIER(MPI_COMM_WORLD, ierr)
    end subroutine

    subroutine check(cond, what)
        logical, intent(in) :: cond
        character(len=*), intent(in) :: what
        integer :: e
        if (.not. cond) then
            print '(A,A,A,I3)', 'FAIL large_callbacks: ', what, ' rank', rank
            call MPI_ABORT(MPI_COMM_WORLD, 1, e)
        end if
    end subroutine
end program large_callbacks

subroutine plus_one_sum_c(invec, inoutvec, len, datatype)
    use mpi
    use large_calls
    implicit none
    integer(kind=MPI_COUNT_KIND) :: len
    integer :: invec(len), inoutvec(len), datatype
    if (datatype /= MPI_INTEGER) return
    inoutvec = invec + inoutvec + 1
    longest_len = max(longest_len, len)
end subroutine

subroutine plus_write_c(userbuf, datatype, count, filebuf, position, extra_state, ierror)
    use mpi
    use large_calls
    implicit none
    integer :: userbuf(*), filebuf(*), datatype, ierror
    integer(kind=MPI_COUNT_KIND) :: count, i
    integer(kind=MPI_OFFSET_KIND) :: position
    integer(kind=MPI_ADDRESS_KIND) :: extra_state
    writes = writes + 1
    ierror = MPI_ERR_TYPE
    if (datatype /= MPI_INTEGER) return
    do i = 1, count
        filebuf(i) = userbuf(position + i) + int(extra_state)
    end do
    ierror = MPI_SUCCESS
end subroutine

subroutine plus_read_c(userbuf, datatype, count, filebuf, position, extra_state, ierror)
    use mpi
    use large_calls
    implicit none
    integer :: userbuf(*), filebuf(*), datatype, ierror
    integer(kind=MPI_COUNT_KIND) :: count, i
    integer(kind=MPI_OFFSET_KIND) :: position
    integer(kind=MPI_ADDRESS_KIND) :: extra_state
    reads = reads + 1
    ierror = MPI_ERR_TYPE
    if (datatype /= MPI_INTEGER) return
    do i = 1, count
        userbuf(position + i) = filebuf(i) - int(extra_state)
    end do
    ierror = MPI_SUCCESS
end subroutine

subroutine integer_extent(datatype, extent, extra_state, ierror)
    use mpi
    implicit none
    integer :: datatype, ierror, size
    integer(kind=MPI_ADDRESS_KIND) :: extent, extra_state
    call MPI_TYPE_SIZE(datatype, size, ierror)
    extent = size
    if (extra_state < 0) ierror = MPI_ERR_ARG
end subroutine
