! The large-count callbacks from Fortran 2008 (use mpi_f08):
! - MPI_Op_create_c with a user function of the MPI_User_function_c interface (its LEN an
!   INTEGER(KIND=MPI_COUNT_KIND)): an allreduce of 1000 integers with a default INTEGER count
!   and with an MPI_COUNT_KIND one (the _c form), each checked, the LEN the function saw too;
! - MPI_Register_datarep_c with conversion functions of the MPI_Datarep_conversion_function_c
!   interface ('f08-plus-c': file integers are the memory's plus EXTRA_STATE) and
!   MPI_CONVERSION_FN_NULL_C ('f08-raw-c'), and MPI_Register_datarep (the int form,
!   'f08-plus'): each rank writes its block through a converting view, everyone reads the
!   whole file natively (the shifted values) and through the view (the values again).
! The file is made in $FILE_TEST_DIR. Rank 0 prints 'OK f08_large_callbacks'.
module f08_callbacks
    use, intrinsic :: iso_c_binding, only: c_ptr, c_f_pointer
    use mpi_f08
    implicit none
    integer(kind=MPI_COUNT_KIND) :: longest_len = 0
    integer :: reads = 0, writes = 0, int_writes = 0
contains

    ! inoutvec = invec + inoutvec + 1: not the predefined sum, so the result shows it ran
    ! (associative and commutative: np values fold to their sum + np - 1).
    subroutine plus_one_sum_c(invec, inoutvec, len, datatype)
        type(c_ptr), value :: invec, inoutvec
        integer(kind=MPI_COUNT_KIND) :: len
        type(MPI_Datatype) :: datatype
        integer, pointer :: a(:), b(:)
        if (datatype /= MPI_INTEGER) return
        call c_f_pointer(invec, a, [len])
        call c_f_pointer(inoutvec, b, [len])
        b = a + b + 1
        longest_len = max(longest_len, len)
    end subroutine

    subroutine plus_write_c(userbuf, datatype, count, filebuf, position, extra_state, ierror)
        type(c_ptr), value :: userbuf, filebuf
        type(MPI_Datatype) :: datatype
        integer(kind=MPI_COUNT_KIND) :: count
        integer :: ierror
        integer(kind=MPI_OFFSET_KIND) :: position
        integer(kind=MPI_ADDRESS_KIND) :: extra_state
        integer, pointer :: u(:), f(:)
        writes = writes + 1
        ierror = MPI_ERR_TYPE
        if (datatype /= MPI_INTEGER) return
        call c_f_pointer(userbuf, u, [position + count])
        call c_f_pointer(filebuf, f, [count])
        f = u(position + 1:position + count) + int(extra_state)
        ierror = MPI_SUCCESS
    end subroutine

    subroutine plus_read_c(userbuf, datatype, count, filebuf, position, extra_state, ierror)
        type(c_ptr), value :: userbuf, filebuf
        type(MPI_Datatype) :: datatype
        integer(kind=MPI_COUNT_KIND) :: count
        integer :: ierror
        integer(kind=MPI_OFFSET_KIND) :: position
        integer(kind=MPI_ADDRESS_KIND) :: extra_state
        integer, pointer :: u(:), f(:)
        reads = reads + 1
        ierror = MPI_ERR_TYPE
        if (datatype /= MPI_INTEGER) return
        call c_f_pointer(userbuf, u, [position + count])
        call c_f_pointer(filebuf, f, [count])
        u(position + 1:position + count) = f - int(extra_state)
        ierror = MPI_SUCCESS
    end subroutine

    ! The int form's write conversion (MPI_Register_datarep): a default INTEGER count.
    subroutine plus_write(userbuf, datatype, count, filebuf, position, extra_state, ierror)
        type(c_ptr), value :: userbuf, filebuf
        type(MPI_Datatype) :: datatype
        integer :: count, ierror
        integer(kind=MPI_OFFSET_KIND) :: position
        integer(kind=MPI_ADDRESS_KIND) :: extra_state
        integer, pointer :: u(:), f(:)
        int_writes = int_writes + 1
        ierror = MPI_ERR_TYPE
        if (datatype /= MPI_INTEGER) return
        call c_f_pointer(userbuf, u, [position + count])
        call c_f_pointer(filebuf, f, [count])
        f = u(position + 1:position + count) + int(extra_state)
        ierror = MPI_SUCCESS
    end subroutine

    subroutine plus_read(userbuf, datatype, count, filebuf, position, extra_state, ierror)
        type(c_ptr), value :: userbuf, filebuf
        type(MPI_Datatype) :: datatype
        integer :: count, ierror
        integer(kind=MPI_OFFSET_KIND) :: position
        integer(kind=MPI_ADDRESS_KIND) :: extra_state
        integer, pointer :: u(:), f(:)
        ierror = MPI_ERR_TYPE
        if (datatype /= MPI_INTEGER) return
        call c_f_pointer(userbuf, u, [position + count])
        call c_f_pointer(filebuf, f, [count])
        u(position + 1:position + count) = f - int(extra_state)
        ierror = MPI_SUCCESS
    end subroutine

    subroutine integer_extent(datatype, extent, extra_state, ierror)
        type(MPI_Datatype) :: datatype
        integer(kind=MPI_ADDRESS_KIND) :: extent, extra_state
        integer :: ierror, size
        call MPI_Type_size(datatype, size, ierror)
        extent = size
        if (extra_state < 0) ierror = MPI_ERR_ARG
    end subroutine
end module f08_callbacks

program f08_large_callbacks
    use mpi_f08
    use f08_callbacks
    implicit none
    integer, parameter :: n = 1000, per_rank = 8
    integer(kind=MPI_ADDRESS_KIND), parameter :: shift = 5000
    integer :: rank, np, i, ierror, dirlen, total
    integer :: mine(n), result(n), expected(n), buf(per_rank)
    integer, allocatable :: whole(:)
    integer(kind=MPI_COUNT_KIND) :: big_n
    type(MPI_Op) :: op
    type(MPI_File) :: fh
    type(MPI_Status) :: status
    character(len=512) :: dir
    character(len=600) :: path

    call MPI_Init()
    call MPI_Comm_rank(MPI_COMM_WORLD, rank)
    call MPI_Comm_size(MPI_COMM_WORLD, np)

    ! MPI_Op_create_c.
    call MPI_Op_create_c(plus_one_sum_c, .true., op, ierror)
    call check(ierror == MPI_SUCCESS, 'Op_create_c')
    mine = [(rank * 10 + i, i = 1, n)]
    expected = folded()
    result = -1
    call MPI_Allreduce(mine, result, n, MPI_INTEGER, op, MPI_COMM_WORLD)
    call check(all(result == expected), 'allreduce with the _c user function')
    big_n = n
    result = -1
    call MPI_Allreduce(mine, result, big_n, MPI_INTEGER, op, MPI_COMM_WORLD)
    call check(all(result == expected), 'allreduce_c with the _c user function')
    if (np > 1) call check(longest_len > 0 .and. longest_len <= n, 'LEN the function saw')
    call MPI_Op_free(op)
    call check(op == MPI_OP_NULL, 'Op_free')

    ! MPI_Register_datarep_c, MPI_CONVERSION_FN_NULL_C and MPI_Register_datarep.
    call MPI_Register_datarep_c('f08-plus-c', plus_read_c, plus_write_c, integer_extent, &
        shift, ierror)
    call check(ierror == MPI_SUCCESS, 'Register_datarep_c')
    call MPI_Register_datarep_c('f08-raw-c', MPI_CONVERSION_FN_NULL_C, &
        MPI_CONVERSION_FN_NULL_C, integer_extent, 0_MPI_ADDRESS_KIND, ierror)
    call check(ierror == MPI_SUCCESS, 'Register_datarep_c raw')
    call MPI_Register_datarep('f08-plus', plus_read, plus_write, integer_extent, 2 * shift, &
        ierror)
    call check(ierror == MPI_SUCCESS, 'Register_datarep')

    call get_environment_variable('FILE_TEST_DIR', dir, dirlen)
    if (dirlen == 0) then
        dir = '.'
        dirlen = 1
    end if
    path = dir(1:dirlen) // '/f08-large-callbacks.dat'
    total = per_rank * np
    allocate (whole(total))
    call MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE + MPI_MODE_RDWR, MPI_INFO_NULL, fh)
    buf = [(rank * per_rank + i, i = 1, per_rank)]

    call through('f08-plus-c', int(shift))
    call check(writes >= 1 .and. reads >= 1, 'the _c conversions ran')
    call through('f08-plus', 2 * int(shift))
    call check(int_writes >= 1, 'the int-form conversion ran')
    i = writes
    call through('f08-raw-c', 0)
    call check(writes == i, 'MPI_CONVERSION_FN_NULL_C converts nothing')

    call MPI_File_close(fh)
    call MPI_Barrier(MPI_COMM_WORLD)
    if (rank == 0) call MPI_File_delete(path, MPI_INFO_NULL)
    deallocate (whole)
    call MPI_Finalize()
    if (rank == 0) print '(A)', 'OK f08_large_callbacks'

contains

    ! The allreduce's expected result: the ranks' values summed, plus np - 1.
    function folded() result(r)
        integer :: r(n), k, j
        r = np - 1
        do k = 0, np - 1
            r = r + [(10 * k + j, j = 1, n)]
        end do
    end function

    ! Each rank writes `buf` through representation `rep`; everyone reads the file natively
    ! (the values + add) and through `rep` (the values).
    subroutine through(rep, add)
        character(len=*), intent(in) :: rep
        integer, intent(in) :: add
        integer(kind=MPI_OFFSET_KIND) :: disp
        call MPI_File_set_size(fh, 0_MPI_OFFSET_KIND)
        disp = int(rank * per_rank * 4, MPI_OFFSET_KIND)
        call MPI_File_set_view(fh, disp, MPI_INTEGER, MPI_INTEGER, rep, MPI_INFO_NULL, ierror)
        call check(ierror == MPI_SUCCESS, 'set_view ' // rep)
        call MPI_File_write_at(fh, 0_MPI_OFFSET_KIND, buf, per_rank, MPI_INTEGER, status, ierror)
        call check(ierror == MPI_SUCCESS, 'write_at ' // rep)
        call MPI_File_sync(fh)
        call MPI_Barrier(MPI_COMM_WORLD)
        call MPI_File_sync(fh)
        call MPI_File_set_view(fh, 0_MPI_OFFSET_KIND, MPI_INTEGER, MPI_INTEGER, 'native', &
            MPI_INFO_NULL)
        whole = -1
        call MPI_File_read_at(fh, 0_MPI_OFFSET_KIND, whole, total, MPI_INTEGER, status)
        call check(all(whole == [(i + add, i = 1, total)]), 'stored values of ' // rep)
        call MPI_File_set_view(fh, 0_MPI_OFFSET_KIND, MPI_INTEGER, MPI_INTEGER, rep, &
            MPI_INFO_NULL)
        whole = -1
        call MPI_File_read_at(fh, 0_MPI_OFFSET_KIND, whole, total, MPI_INTEGER, status)
        call check(all(whole == [(i, i = 1, total)]), 'values read back through ' // rep)
        call MPI_Barrier(MPI_COMM_WORLD)
    end subroutine

    subroutine check(cond, what)
        logical, intent(in) :: cond
        character(len=*), intent(in) :: what
        if (.not. cond) then
            print '(A,A,A,I3)', 'FAIL f08_large_callbacks: ', what, ' rank', rank
            call MPI_Abort(MPI_COMM_WORLD, 1)
        end if
    end subroutine

end program f08_large_callbacks
