! MPI_REGISTER_DATAREP from Fortran (`use mpi`): a representation 'fortran-plus' whose file
! integers are the memory's plus EXTRA_STATE (the conversion functions are Fortran
! subroutines, called with every argument by reference), and 'fortran-raw' registered with
! MPI_CONVERSION_FN_NULL (the file holds the memory's bytes). Each rank writes its integers
! (a block of the file) through a 'fortran-plus' view; every rank reads the whole file through
! a 'native' view (the stored values, shifted) and through 'fortran-plus' (the values again),
! writes through 'fortran-raw' and reads back natively. A second registration of a name is
! MPI_ERR_DUP_DATAREP. The extent function is asked for MPI_INTEGER.
! The file is made in $FILE_TEST_DIR. Rank 0 prints 'library: ...' and 'OK file_datarep'.
module datarep_calls
    implicit none
    ! How often each of the program's functions ran, and the extra state they saw.
    integer :: reads = 0, writes = 0, extents = 0
    integer(kind=8) :: seen_extra = 0
end module datarep_calls

program file_datarep
    use mpi
    use datarep_calls
    implicit none
    integer, parameter :: per_rank = 6
    integer(kind=MPI_ADDRESS_KIND), parameter :: shift = 1000
    integer :: ierr, ierr2, rank, np, fh, i, n, errclass, dirlen, total
    integer :: status(MPI_STATUS_SIZE)
    integer :: buf(per_rank)
    integer, allocatable :: whole(:)
    integer(kind=MPI_OFFSET_KIND) :: disp
    integer(kind=MPI_ADDRESS_KIND) :: extent
    character(len=512) :: dir
    character(len=600) :: path
    character(len=MPI_MAX_LIBRARY_VERSION_STRING) :: version
    external plus_read, plus_write, integer_extent

    call MPI_Init(ierr)
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
    call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
    total = per_rank * np
    call get_environment_variable('FILE_TEST_DIR', dir, dirlen)
    if (dirlen == 0) then
        dir = '.'
        dirlen = 1
    end if
    path = dir(1:dirlen) // '/fortran-datarep.dat'

    call MPI_Register_datarep('fortran-plus', plus_read, plus_write, integer_extent, &
                              shift, ierr)
    call check(ierr == MPI_SUCCESS, 'register fortran-plus')
    call MPI_Register_datarep('fortran-raw', MPI_CONVERSION_FN_NULL, &
                              MPI_CONVERSION_FN_NULL, integer_extent, 0_MPI_ADDRESS_KIND, ierr)
    call check(ierr == MPI_SUCCESS, 'register fortran-raw')
    call MPI_Register_datarep('fortran-plus', plus_read, plus_write, integer_extent, &
                              shift, ierr)
    call MPI_Error_class(ierr, errclass, ierr2)
    call check(errclass == MPI_ERR_DUP_DATAREP, 'second registration: MPI_ERR_DUP_DATAREP')

    call MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE + MPI_MODE_RDWR, &
                       MPI_INFO_NULL, fh, ierr)
    call check(ierr == MPI_SUCCESS, 'open')
    call MPI_File_set_size(fh, 0_MPI_OFFSET_KIND, ierr)

    ! Through 'fortran-plus': the file gets value + shift.
    disp = int(rank * per_rank * 4, MPI_OFFSET_KIND)
    call MPI_File_set_view(fh, disp, MPI_INTEGER, MPI_INTEGER, 'fortran-plus', &
                           MPI_INFO_NULL, ierr)
    call check(ierr == MPI_SUCCESS, 'set_view fortran-plus')
    call MPI_File_get_type_extent(fh, MPI_INTEGER, extent, ierr)
    call check(ierr == MPI_SUCCESS .and. extent == 4, 'get_type_extent')
    call check(extents >= 1, 'the extent function ran')
    do i = 1, per_rank
        buf(i) = rank * per_rank + i
    end do
    call MPI_File_write_at(fh, 0_MPI_OFFSET_KIND, buf, per_rank, MPI_INTEGER, status, ierr)
    call check(ierr == MPI_SUCCESS, 'write_at (converted)')
    call MPI_Get_count(status, MPI_INTEGER, n, ierr2)
    call check(n == per_rank, 'write_at count')
    call check(writes >= 1 .and. seen_extra == shift, 'write conversion ran with EXTRA_STATE')
    call check(buf(1) == rank * per_rank + 1, 'write conversion left the buffer alone')
    call MPI_File_sync(fh, ierr)
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
    call MPI_File_sync(fh, ierr)

    ! Natively: the stored values.
    allocate (whole(total))
    call MPI_File_set_view(fh, 0_MPI_OFFSET_KIND, MPI_INTEGER, MPI_INTEGER, 'native', &
                           MPI_INFO_NULL, ierr)
    whole = -1
    call MPI_File_read_at(fh, 0_MPI_OFFSET_KIND, whole, total, MPI_INTEGER, status, ierr)
    call check(ierr == MPI_SUCCESS, 'read_at native')
    do i = 1, total
        call check(whole(i) == i + shift, 'the file holds the converted values')
    end do

    ! Through 'fortran-plus': the values again.
    call MPI_File_set_view(fh, 0_MPI_OFFSET_KIND, MPI_INTEGER, MPI_INTEGER, 'fortran-plus', &
                           MPI_INFO_NULL, ierr)
    whole = -1
    call MPI_File_read_at(fh, 0_MPI_OFFSET_KIND, whole, total, MPI_INTEGER, status, ierr)
    call check(ierr == MPI_SUCCESS, 'read_at converted')
    call MPI_Get_count(status, MPI_INTEGER, n, ierr2)
    call check(n == total, 'read_at converted count')
    call check(reads >= 1, 'the read conversion ran')
    do i = 1, total
        call check(whole(i) == i, 'read conversion gave the values back')
    end do
    call MPI_Barrier(MPI_COMM_WORLD, ierr)

    ! Through 'fortran-raw' (MPI_CONVERSION_FN_NULL): the memory's bytes.
    call MPI_File_set_view(fh, disp, MPI_INTEGER, MPI_INTEGER, 'fortran-raw', &
                           MPI_INFO_NULL, ierr)
    call check(ierr == MPI_SUCCESS, 'set_view fortran-raw')
    buf = buf * 2
    n = writes
    call MPI_File_write_at(fh, 0_MPI_OFFSET_KIND, buf, per_rank, MPI_INTEGER, status, ierr)
    call check(ierr == MPI_SUCCESS .and. writes == n, 'write_at raw: no conversion')
    call MPI_File_sync(fh, ierr)
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
    call MPI_File_sync(fh, ierr)
    call MPI_File_set_view(fh, 0_MPI_OFFSET_KIND, MPI_INTEGER, MPI_INTEGER, 'native', &
                           MPI_INFO_NULL, ierr)
    whole = -1
    call MPI_File_read_at(fh, 0_MPI_OFFSET_KIND, whole, total, MPI_INTEGER, status, ierr)
    do i = 1, total
        call check(whole(i) == 2 * i, 'raw representation holds the memory bytes')
    end do
    deallocate (whole)

    call MPI_File_close(fh, ierr)
    call check(ierr == MPI_SUCCESS .and. fh == MPI_FILE_NULL, 'close')
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
    if (rank == 0) then
        call MPI_File_delete(path, MPI_INFO_NULL, ierr)
        call check(ierr == MPI_SUCCESS, 'delete')
    end if

    call MPI_Get_library_version(version, n, ierr)
    i = index(version(1:n), char(10))
    if (i == 0) i = n + 1
    if (rank == 0) print '(A,A)', 'library: ', version(1:i-1)
    call MPI_Finalize(ierr)
    if (rank == 0) print '(A)', 'OK file_datarep'

contains

    subroutine check(cond, what)
        logical, intent(in) :: cond
        character(len=*), intent(in) :: what
        integer :: e
        if (.not. cond) then
            print '(A,A,A,I3)', 'FAIL file_datarep: ', what, ' rank', rank
            call MPI_Abort(MPI_COMM_WORLD, 1, e)
        end if
    end subroutine check
end program file_datarep

! Write conversion: file item i = memory item (position + i) + EXTRA_STATE.
subroutine plus_write(userbuf, datatype, count, filebuf, position, extra_state, ierror)
    use mpi
    use datarep_calls
    implicit none
    integer :: userbuf(*), filebuf(*), datatype, count, ierror
    integer(kind=MPI_OFFSET_KIND) :: position
    integer(kind=MPI_ADDRESS_KIND) :: extra_state
    integer :: i
    writes = writes + 1
    seen_extra = extra_state
    if (datatype /= MPI_INTEGER) then
        ierror = MPI_ERR_TYPE
        return
    end if
    do i = 1, count
        filebuf(i) = userbuf(position + i) + int(extra_state)
    end do
    ierror = MPI_SUCCESS
end subroutine plus_write

! Read conversion: memory item (position + i) = file item i - EXTRA_STATE.
subroutine plus_read(userbuf, datatype, count, filebuf, position, extra_state, ierror)
    use mpi
    use datarep_calls
    implicit none
    integer :: userbuf(*), filebuf(*), datatype, count, ierror
    integer(kind=MPI_OFFSET_KIND) :: position
    integer(kind=MPI_ADDRESS_KIND) :: extra_state
    integer :: i
    reads = reads + 1
    seen_extra = extra_state
    if (datatype /= MPI_INTEGER) then
        ierror = MPI_ERR_TYPE
        return
    end if
    do i = 1, count
        userbuf(position + i) = filebuf(i) - int(extra_state)
    end do
    ierror = MPI_SUCCESS
end subroutine plus_read

! The file extent of a type: its size (the representations change values, not sizes).
subroutine integer_extent(datatype, extent, extra_state, ierror)
    use mpi
    use datarep_calls
    implicit none
    integer :: datatype, ierror
    integer(kind=MPI_ADDRESS_KIND) :: extent, extra_state
    integer :: size
    extents = extents + 1
    call MPI_Type_size(datatype, size, ierror)
    extent = size
end subroutine integer_extent
