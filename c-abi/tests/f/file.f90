! MPI-IO from Fortran 90 (`use mpi`), every value checked:
! - MPI_FILE_OPEN (create), GET_AMODE, GET_GROUP; a second file on MPI_COMM_SELF open at the
!   same time with MPI_MODE_DELETE_ON_CLOSE (another Fortran handle; gone after its close);
! - SET_VIEW with a resized vector filetype (blocks of 2 integers dealt round-robin to the
!   ranks), GET_VIEW, WRITE_AT_ALL of two filetype tiles, READ_AT of part of them,
!   GET_BYTE_OFFSET (offsets are INTEGER(KIND=MPI_OFFSET_KIND));
! - an integer view: SEEK (SET, CUR, END) / READ / GET_POSITION, a read past the end of file
!   (MPI_GET_COUNT 0), GET_SIZE, SET_SIZE;
! - SET/GET_ATOMICITY (LOGICAL), SET/GET_INFO, GET_TYPE_EXTENT, PREALLOCATE;
! - errors returned: a missing file (class MPI_ERR_NO_SUCH_FILE, the handle stays
!   MPI_FILE_NULL), MPI_FILE_DELETE of a missing file, a handle that is no file (MPI_ERR_FILE);
! - a file error handler written in Fortran, called through MPI_FILE_CALL_ERRHANDLER on the
!   file and on MPI_FILE_NULL, and for a failing call (it receives the Fortran handle;
!   MPICH passes its C handle, tolerated under MPICH only);
! - CLOSE (the handle becomes MPI_FILE_NULL), reopen read-only and READ_ALL everything,
!   DELETE, then the file is missing.
! The files are made in $FILE_TEST_DIR (the current directory without it).
! Rank 0 prints the first line of the library's version ('library: ...') and 'OK file'.
program file
    use mpi
    implicit none
    integer, parameter :: blk = 2, nblk = 3, per_rank = 2 * blk * nblk
    integer :: ierr, ierr2, rank, np, fh, fh2, amode, group, gsize, i, j, n, errclass
    integer :: vector, filetype, etype, ftype, eh, eh2, dirlen, info, nkeys
    logical :: flag
    integer :: status(MPI_STATUS_SIZE)
    integer :: buf(per_rank), rbuf(per_rank)
    integer, allocatable :: whole(:)
    integer(kind=MPI_OFFSET_KIND) :: disp, size, pos, byte_offset
    integer(kind=MPI_ADDRESS_KIND) :: lb, extent
    character(len=MPI_MAX_DATAREP_STRING) :: datarep
    character(len=MPI_MAX_LIBRARY_VERSION_STRING) :: version
    character(len=512) :: dir
    character(len=600) :: path, path2, missing
    logical :: exists
    integer :: handler_calls, handler_file, handler_code
    common /fhandler/ handler_calls, handler_file, handler_code
    external file_error_handler

    call MPI_Init(ierr)
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
    call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
    handler_calls = 0

    call get_environment_variable('FILE_TEST_DIR', dir, dirlen)
    if (dirlen == 0) then
        dir = '.'
        dirlen = 1
    end if
    path = dir(1:dirlen) // '/fortran-file.dat'
    missing = dir(1:dirlen) // '/no-such-file.dat'
    write (path2, '(A,A,I0,A)') dir(1:dirlen), '/fortran-self-', rank, '.dat'

    ! ---- Open (create), amode, group ----
    fh = MPI_FILE_NULL
    call MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE + MPI_MODE_RDWR, &
                       MPI_INFO_NULL, fh, ierr)
    call check(ierr == MPI_SUCCESS, 'open (create)')
    call check(fh /= MPI_FILE_NULL, 'open gave a handle')
    ! Empty, whatever an earlier run left.
    call MPI_File_set_size(fh, 0_MPI_OFFSET_KIND, ierr)
    call check(ierr == MPI_SUCCESS, 'set_size 0')
    call MPI_File_get_amode(fh, amode, ierr)
    call check(ierr == MPI_SUCCESS .and. amode == MPI_MODE_CREATE + MPI_MODE_RDWR, &
               'get_amode')
    call MPI_File_get_group(fh, group, ierr)
    call MPI_Group_size(group, gsize, ierr)
    call check(ierr == MPI_SUCCESS .and. gsize == np, 'get_group')
    call MPI_Group_free(group, ierr)

    ! A second file, open at the same time: another handle, gone after its close.
    call MPI_File_open(MPI_COMM_SELF, path2, &
                       MPI_MODE_CREATE + MPI_MODE_WRONLY + MPI_MODE_DELETE_ON_CLOSE, &
                       MPI_INFO_NULL, fh2, ierr)
    call check(ierr == MPI_SUCCESS .and. fh2 /= MPI_FILE_NULL .and. fh2 /= fh, &
               'second open')
    call MPI_File_write_at(fh2, 0_MPI_OFFSET_KIND, rank, 1, MPI_INTEGER, status, ierr)
    call check(ierr == MPI_SUCCESS, 'second file write_at')
    call MPI_File_get_size(fh2, size, ierr)
    call check(ierr == MPI_SUCCESS .and. size == 4, 'second file get_size')
    call MPI_File_close(fh2, ierr)
    call check(ierr == MPI_SUCCESS .and. fh2 == MPI_FILE_NULL, 'second close')
    inquire (file=path2, exist=exists)
    call check(.not. exists, 'DELETE_ON_CLOSE removed the file')

    ! ---- A vector view: blocks of blk integers, round-robin over the ranks ----
    call MPI_Type_vector(nblk, blk, blk * np, MPI_INTEGER, vector, ierr)
    lb = 0
    extent = int(blk * nblk * np * 4, MPI_ADDRESS_KIND)
    call MPI_Type_create_resized(vector, lb, extent, filetype, ierr)
    call MPI_Type_commit(filetype, ierr)
    disp = int(rank * blk * 4, MPI_OFFSET_KIND)
    call MPI_File_set_view(fh, disp, MPI_INTEGER, filetype, 'native', MPI_INFO_NULL, ierr)
    call check(ierr == MPI_SUCCESS, 'set_view (vector)')
    call MPI_File_get_view(fh, disp, etype, ftype, datarep, ierr)
    call check(ierr == MPI_SUCCESS .and. disp == rank * blk * 4, 'get_view disp')
    call check(etype == MPI_INTEGER, 'get_view etype')
    call check(datarep == 'native', 'get_view datarep')
    if (ftype /= filetype) call MPI_Type_free(ftype, ierr)

    ! Rank r's j-th integer (from 0) lands at integer index g of the file; it holds g.
    do j = 0, per_rank - 1
        buf(j + 1) = ((j / blk) * np + rank) * blk + mod(j, blk)
    end do
    call MPI_File_write_at_all(fh, 0_MPI_OFFSET_KIND, buf, per_rank, MPI_INTEGER, &
                               status, ierr)
    call check(ierr == MPI_SUCCESS, 'write_at_all')
    call MPI_Get_count(status, MPI_INTEGER, n, ierr)
    call check(n == per_rank, 'write_at_all count')
    call MPI_File_sync(fh, ierr)
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
    call MPI_File_sync(fh, ierr)
    call check(ierr == MPI_SUCCESS, 'sync')

    ! Four of this rank's own integers, from its fourth (offset 3 in etypes).
    rbuf = -1
    call MPI_File_read_at(fh, 3_MPI_OFFSET_KIND, rbuf, 4, MPI_INTEGER, status, ierr)
    call check(ierr == MPI_SUCCESS, 'read_at')
    call MPI_Get_count(status, MPI_INTEGER, n, ierr)
    call check(n == 4, 'read_at count')
    do i = 1, 4
        call check(rbuf(i) == buf(3 + i), 'read_at data')
    end do
    call check(rbuf(5) == -1, 'read_at wrote past its count')

    ! The third integer of this rank's view: the first of its second block.
    call MPI_File_get_byte_offset(fh, 2_MPI_OFFSET_KIND, byte_offset, ierr)
    call check(ierr == MPI_SUCCESS .and. byte_offset == (np + rank) * blk * 4, &
               'get_byte_offset')

    call MPI_File_get_size(fh, size, ierr)
    call check(ierr == MPI_SUCCESS .and. size == per_rank * np * 4, 'get_size')

    ! ---- An integer view: seek, read, position ----
    call MPI_File_set_view(fh, 0_MPI_OFFSET_KIND, MPI_INTEGER, MPI_INTEGER, 'native', &
                           MPI_INFO_NULL, ierr)
    call check(ierr == MPI_SUCCESS, 'set_view (integers)')
    call MPI_File_seek(fh, 5_MPI_OFFSET_KIND, MPI_SEEK_SET, ierr)
    call check(ierr == MPI_SUCCESS, 'seek set')
    rbuf = -1
    call MPI_File_read(fh, rbuf, 3, MPI_INTEGER, status, ierr)
    call MPI_Get_count(status, MPI_INTEGER, n, ierr)
    call check(ierr == MPI_SUCCESS .and. n == 3, 'read after seek')
    call check(rbuf(1) == 5 .and. rbuf(2) == 6 .and. rbuf(3) == 7, 'read data')
    call MPI_File_get_position(fh, pos, ierr)
    call check(ierr == MPI_SUCCESS .and. pos == 8, 'get_position after read')
    call MPI_File_seek(fh, -2_MPI_OFFSET_KIND, MPI_SEEK_CUR, ierr)
    call MPI_File_get_position(fh, pos, ierr)
    call check(ierr == MPI_SUCCESS .and. pos == 6, 'seek cur')
    call MPI_File_seek(fh, -1_MPI_OFFSET_KIND, MPI_SEEK_END, ierr)
    call MPI_File_get_position(fh, pos, ierr)
    call check(ierr == MPI_SUCCESS .and. pos == per_rank * np - 1, 'seek end')
    rbuf = -1
    call MPI_File_read(fh, rbuf, 3, MPI_INTEGER, status, ierr)
    call MPI_Get_count(status, MPI_INTEGER, n, ierr)
    call check(ierr == MPI_SUCCESS .and. n == 1, 'read at the end: count 1')
    call check(rbuf(1) == per_rank * np - 1 .and. rbuf(2) == -1, 'read at the end: data')
    call MPI_File_get_position(fh, pos, ierr)
    call check(pos == per_rank * np, 'position at the end')

    ! Past the end of file: nothing read, count 0, no error.
    call MPI_File_read_at(fh, int(per_rank * np + 5, MPI_OFFSET_KIND), rbuf, 2, &
                          MPI_INTEGER, status, ierr)
    call check(ierr == MPI_SUCCESS, 'read past the end: no error')
    call MPI_Get_count(status, MPI_INTEGER, n, ierr)
    call check(n == 0, 'read past the end: count 0')

    ! ---- Errors returned (MPI_ERRORS_RETURN is the default for files) ----
    fh2 = fh
    call MPI_File_open(MPI_COMM_WORLD, missing, MPI_MODE_RDONLY, MPI_INFO_NULL, fh2, ierr)
    call check(ierr /= MPI_SUCCESS, 'open of a missing file failed')
    call MPI_Error_class(ierr, errclass, ierr2)
    call check(errclass == MPI_ERR_NO_SUCH_FILE, 'missing file: MPI_ERR_NO_SUCH_FILE')
    call check(fh2 == MPI_FILE_NULL, 'failed open leaves MPI_FILE_NULL')
    call MPI_File_delete(missing, MPI_INFO_NULL, ierr)
    call check(ierr /= MPI_SUCCESS, 'delete of a missing file failed')
    call MPI_Error_class(ierr, errclass, ierr2)
    call check(errclass == MPI_ERR_NO_SUCH_FILE, 'delete: MPI_ERR_NO_SUCH_FILE')
    call MPI_File_get_size(fh + 1000, size, ierr)
    call check(ierr /= MPI_SUCCESS, 'a handle that is no file')
    call MPI_Error_class(ierr, errclass, ierr2)
    call check(errclass == MPI_ERR_FILE, 'no file: MPI_ERR_FILE')

    ! ---- A file error handler in Fortran: it gets the Fortran handle ----
    call MPI_File_create_errhandler(file_error_handler, eh, ierr)
    call check(ierr == MPI_SUCCESS, 'create_errhandler')
    call MPI_File_set_errhandler(fh, eh, ierr)
    call check(ierr == MPI_SUCCESS, 'set_errhandler')
    call MPI_File_call_errhandler(fh, MPI_ERR_IO, ierr)
    call check(handler_calls == 1, 'handler called on the file')
    ! MPICH 4.0.2 (the reference) passes its C handle here: only this library is held to it.
    call check(handler_file == fh .or. under_mpich(), 'handler got the Fortran handle')
    call check(handler_code == MPI_ERR_IO, 'handler got the error code')
    call MPI_File_get_errhandler(fh, eh2, ierr)
    call check(ierr == MPI_SUCCESS .and. eh2 == eh, 'get_errhandler')
    if (eh2 /= eh) call MPI_Errhandler_free(eh2, ierr)
    ! A call that fails (a negative position): the handler gets its error, which it returns.
    call MPI_File_seek(fh, -1_MPI_OFFSET_KIND, MPI_SEEK_SET, ierr)
    call check(ierr /= MPI_SUCCESS, 'seek to -1 failed')
    call check(handler_calls == 2, 'handler called for the failed call')
    call check(handler_file == fh .or. under_mpich(), 'handler got the Fortran handle (2)')
    call check(handler_code == ierr, 'handler got the error of the call')
    call MPI_File_set_errhandler(MPI_FILE_NULL, eh, ierr)
    call MPI_File_call_errhandler(MPI_FILE_NULL, MPI_ERR_ACCESS, ierr)
    call check(handler_calls == 3 .and. handler_code == MPI_ERR_ACCESS, &
               'handler called on MPI_FILE_NULL')
    call check(handler_file == MPI_FILE_NULL, 'handler got MPI_FILE_NULL')
    call MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN, ierr)
    call MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN, ierr)
    call MPI_Errhandler_free(eh, ierr)

    ! ---- Atomicity (a LOGICAL each way), info, type extent, preallocate ----
    call MPI_File_set_atomicity(fh, .true., ierr)
    call check(ierr == MPI_SUCCESS, 'set_atomicity')
    flag = .false.
    call MPI_File_get_atomicity(fh, flag, ierr)
    call check(ierr == MPI_SUCCESS .and. flag, 'get_atomicity (true)')
    call MPI_File_set_atomicity(fh, .false., ierr)
    call MPI_File_get_atomicity(fh, flag, ierr)
    call check(ierr == MPI_SUCCESS .and. .not. flag, 'get_atomicity (false)')
    call MPI_Info_create(info, ierr)
    call MPI_Info_set(info, 'fortran_test_key', 'some value', ierr)
    call MPI_File_set_info(fh, info, ierr)
    call check(ierr == MPI_SUCCESS, 'set_info')
    call MPI_Info_free(info, ierr)
    info = MPI_INFO_NULL
    call MPI_File_get_info(fh, info, ierr)
    call check(ierr == MPI_SUCCESS .and. info /= MPI_INFO_NULL, 'get_info')
    call MPI_Info_get_nkeys(info, nkeys, ierr)
    call check(ierr == MPI_SUCCESS .and. nkeys >= 0, 'get_info nkeys')
    call MPI_Info_free(info, ierr)
    call MPI_File_get_type_extent(fh, MPI_INTEGER, extent, ierr)
    call check(ierr == MPI_SUCCESS .and. extent == 4, 'get_type_extent')
    call MPI_File_preallocate(fh, int(per_rank * np * 4, MPI_OFFSET_KIND), ierr)
    call check(ierr == MPI_SUCCESS, 'preallocate')
    call MPI_File_get_size(fh, size, ierr)
    call check(size == per_rank * np * 4, 'preallocate keeps a larger size')

    ! ---- set_size, close ----
    call MPI_File_set_size(fh, int(per_rank * np * 4 + 40, MPI_OFFSET_KIND), ierr)
    call check(ierr == MPI_SUCCESS, 'set_size')
    call MPI_File_get_size(fh, size, ierr)
    call check(size == per_rank * np * 4 + 40, 'get_size after set_size')
    call MPI_File_close(fh, ierr)
    call check(ierr == MPI_SUCCESS, 'close')
    call check(fh == MPI_FILE_NULL, 'close sets MPI_FILE_NULL')
    call MPI_Type_free(filetype, ierr)
    call MPI_Type_free(vector, ierr)

    ! ---- Reopen read-only, every integer checked ----
    call MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, fh, ierr)
    call check(ierr == MPI_SUCCESS, 'reopen')
    n = per_rank * np + 10
    allocate (whole(n + 1))
    whole = -1
    ! Exactly the file's length: ROMIO's collective read past the end of file reports the
    ! count asked for (the independent read past the end is checked above).
    call MPI_File_read_all(fh, whole, n, MPI_INTEGER, status, ierr)
    call check(ierr == MPI_SUCCESS, 'read_all')
    call MPI_Get_count(status, MPI_INTEGER, i, ierr)
    call check(i == n, 'read_all count')
    do i = 1, per_rank * np
        call check(whole(i) == i - 1, 'file contents')
    end do
    do i = per_rank * np + 1, n
        call check(whole(i) == 0, 'set_size extended with zeros')
    end do
    call check(whole(n + 1) == -1, 'read_all wrote past its count')
    deallocate (whole)
    call MPI_File_close(fh, ierr)
    call check(ierr == MPI_SUCCESS .and. fh == MPI_FILE_NULL, 'close (read-only)')

    ! ---- Delete; then the file is missing ----
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
    if (rank == 0) then
        call MPI_File_delete(path, MPI_INFO_NULL, ierr)
        call check(ierr == MPI_SUCCESS, 'delete')
    end if
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
    call MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, fh, ierr)
    call MPI_Error_class(ierr, errclass, ierr2)
    call check(errclass == MPI_ERR_NO_SUCH_FILE, 'deleted file is missing')

    ! Which library ran the program (the first line of its version).
    call MPI_Get_library_version(version, n, ierr)
    i = index(version(1:n), char(10))
    if (i == 0) i = n + 1
    if (rank == 0) print '(A,A)', 'library: ', version(1:i-1)

    call MPI_Finalize(ierr)
    if (rank == 0) print '(A)', 'OK file'

contains

    ! Whether the library is MPICH's own (when the program is checked against MPICH).
    logical function under_mpich()
        character(len=MPI_MAX_LIBRARY_VERSION_STRING) :: version
        integer :: length, e
        call MPI_Get_library_version(version, length, e)
        under_mpich = version(1:5) == 'MPICH'
    end function under_mpich

    subroutine check(cond, what)
        logical, intent(in) :: cond
        character(len=*), intent(in) :: what
        integer :: e
        if (.not. cond) then
            print '(A,A,A,I3)', 'FAIL file: ', what, ' rank', rank
            call MPI_Abort(MPI_COMM_WORLD, 1, e)
        end if
    end subroutine check
end program file

! A file error handler: counts its calls and keeps its arguments.
subroutine file_error_handler(file, code)
    implicit none
    integer :: file, code
    integer :: handler_calls, handler_file, handler_code
    common /fhandler/ handler_calls, handler_file, handler_code
    handler_calls = handler_calls + 1
    handler_file = file
    handler_code = code
end subroutine file_error_handler
