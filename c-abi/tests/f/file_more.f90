! The rest of MPI-IO's data access from Fortran (`use mpi`), every value checked:
! - nonblocking: IWRITE_AT, IREAD_AT and IREAD_AT_ALL completed by MPI_WAIT (request and
!   status arguments), and IWRITE/IREAD on the individual file pointer;
! - split collectives: WRITE_AT_ALL_BEGIN/END, READ_ALL_BEGIN/END (the END's status);
! - the shared file pointer: SEEK_SHARED, WRITE_ORDERED, GET_POSITION_SHARED, READ_ORDERED,
!   READ_SHARED (each rank gets a different integer).
! The file (MPI_BYTE view: positions in bytes) is made in $FILE_TEST_DIR.
! Rank 0 prints 'library: ...' and 'OK file_more'.
program file_more
    use mpi
    implicit none
    integer :: ierr, ierr2, rank, np, next, fh, req, i, n, got, total, expected, dirlen
    integer :: status(MPI_STATUS_SIZE)
    integer :: buf(4), rbuf(4), pair(2)
    integer(kind=MPI_OFFSET_KIND) :: pos, base
    character(len=512) :: dir
    character(len=600) :: path
    character(len=MPI_MAX_LIBRARY_VERSION_STRING) :: version

    call MPI_Init(ierr)
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
    call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
    next = mod(rank + 1, np)
    call get_environment_variable('FILE_TEST_DIR', dir, dirlen)
    if (dirlen == 0) then
        dir = '.'
        dirlen = 1
    end if
    path = dir(1:dirlen) // '/fortran-more.dat'

    call MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE + MPI_MODE_RDWR, &
                       MPI_INFO_NULL, fh, ierr)
    call check(ierr == MPI_SUCCESS, 'open')
    call MPI_File_set_size(fh, 0_MPI_OFFSET_KIND, ierr)

    ! ---- Nonblocking, explicit offsets: 4 integers per rank at byte rank*16 ----
    do i = 1, 4
        buf(i) = rank * 10 + i
    end do
    call MPI_File_iwrite_at(fh, int(rank * 16, MPI_OFFSET_KIND), buf, 4, MPI_INTEGER, &
                            req, ierr)
    call check(ierr == MPI_SUCCESS .and. req /= MPI_REQUEST_NULL, 'iwrite_at')
    call MPI_Wait(req, status, ierr)
    call check(ierr == MPI_SUCCESS .and. req == MPI_REQUEST_NULL, 'wait (iwrite_at)')
    call MPI_Get_count(status, MPI_INTEGER, n, ierr2)
    call check(n == 4, 'iwrite_at count')
    call MPI_File_sync(fh, ierr)
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
    call MPI_File_sync(fh, ierr)

    rbuf = -1
    call MPI_File_iread_at(fh, int(next * 16, MPI_OFFSET_KIND), rbuf, 4, MPI_INTEGER, &
                           req, ierr)
    call check(ierr == MPI_SUCCESS, 'iread_at')
    call MPI_Wait(req, status, ierr)
    call MPI_Get_count(status, MPI_INTEGER, n, ierr2)
    call check(ierr == MPI_SUCCESS .and. n == 4, 'iread_at count')
    do i = 1, 4
        call check(rbuf(i) == next * 10 + i, 'iread_at data')
    end do

    rbuf = -1
    call MPI_File_iread_at_all(fh, int(rank * 16, MPI_OFFSET_KIND), rbuf, 4, MPI_INTEGER, &
                               req, ierr)
    call check(ierr == MPI_SUCCESS, 'iread_at_all')
    call MPI_Wait(req, status, ierr)
    call MPI_Get_count(status, MPI_INTEGER, n, ierr2)
    call check(ierr == MPI_SUCCESS .and. n == 4, 'iread_at_all count')
    do i = 1, 4
        call check(rbuf(i) == buf(i), 'iread_at_all data')
    end do

    ! ---- Nonblocking, individual pointer: each rank's second block at np*16 + rank*16 ----
    base = int(np * 16, MPI_OFFSET_KIND)
    call MPI_File_seek(fh, base + rank * 16, MPI_SEEK_SET, ierr)
    call MPI_File_iwrite(fh, buf, 4, MPI_INTEGER, req, ierr)
    call MPI_Wait(req, status, ierr)
    call MPI_Get_count(status, MPI_INTEGER, n, ierr2)
    call check(ierr == MPI_SUCCESS .and. n == 4, 'iwrite')
    call MPI_File_get_position(fh, pos, ierr)
    call check(pos == base + rank * 16 + 16, 'iwrite moved the pointer')
    call MPI_File_seek(fh, -16_MPI_OFFSET_KIND, MPI_SEEK_CUR, ierr)
    rbuf = -1
    call MPI_File_iread(fh, rbuf, 4, MPI_INTEGER, req, ierr)
    call MPI_Wait(req, status, ierr)
    call MPI_Get_count(status, MPI_INTEGER, n, ierr2)
    call check(ierr == MPI_SUCCESS .and. n == 4, 'iread')
    do i = 1, 4
        call check(rbuf(i) == buf(i), 'iread data')
    end do

    ! ---- Split collectives: a third block per rank, then read back ----
    base = int(2 * np * 16, MPI_OFFSET_KIND)
    buf = buf + 500
    call MPI_File_write_at_all_begin(fh, base + rank * 16, buf, 4, MPI_INTEGER, ierr)
    call check(ierr == MPI_SUCCESS, 'write_at_all_begin')
    call MPI_File_write_at_all_end(fh, buf, status, ierr)
    call MPI_Get_count(status, MPI_INTEGER, n, ierr2)
    call check(ierr == MPI_SUCCESS .and. n == 4, 'write_at_all_end')
    call MPI_File_sync(fh, ierr)
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
    call MPI_File_sync(fh, ierr)
    call MPI_File_seek(fh, base + next * 16, MPI_SEEK_SET, ierr)
    rbuf = -1
    call MPI_File_read_all_begin(fh, rbuf, 4, MPI_INTEGER, ierr)
    call check(ierr == MPI_SUCCESS, 'read_all_begin')
    call MPI_File_read_all_end(fh, rbuf, status, ierr)
    call MPI_Get_count(status, MPI_INTEGER, n, ierr2)
    call check(ierr == MPI_SUCCESS .and. n == 4, 'read_all_end')
    do i = 1, 4
        call check(rbuf(i) == next * 10 + i + 500, 'read_all_begin/end data')
    end do

    ! ---- The shared file pointer ----
    call MPI_File_seek_shared(fh, 0_MPI_OFFSET_KIND, MPI_SEEK_SET, ierr)
    call check(ierr == MPI_SUCCESS, 'seek_shared')
    pair(1) = 100 * rank + 1
    pair(2) = 100 * rank + 2
    call MPI_File_write_ordered(fh, pair, 2, MPI_INTEGER, status, ierr)
    call MPI_Get_count(status, MPI_INTEGER, n, ierr2)
    call check(ierr == MPI_SUCCESS .and. n == 2, 'write_ordered')
    call MPI_File_get_position_shared(fh, pos, ierr)
    call check(ierr == MPI_SUCCESS .and. pos == 8 * np, 'get_position_shared')
    call MPI_File_sync(fh, ierr)
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
    call MPI_File_sync(fh, ierr)
    call MPI_File_seek_shared(fh, 0_MPI_OFFSET_KIND, MPI_SEEK_SET, ierr)
    pair = -1
    call MPI_File_read_ordered(fh, pair, 2, MPI_INTEGER, status, ierr)
    call MPI_Get_count(status, MPI_INTEGER, n, ierr2)
    call check(ierr == MPI_SUCCESS .and. n == 2, 'read_ordered')
    call check(pair(1) == 100 * rank + 1 .and. pair(2) == 100 * rank + 2, &
               'read_ordered data')

    ! One integer each from the shared pointer: together, the file's first np integers.
    call MPI_File_seek_shared(fh, 0_MPI_OFFSET_KIND, MPI_SEEK_SET, ierr)
    got = -1
    call MPI_File_read_shared(fh, got, 1, MPI_INTEGER, status, ierr)
    call MPI_Get_count(status, MPI_INTEGER, n, ierr2)
    call check(ierr == MPI_SUCCESS .and. n == 1, 'read_shared')
    call MPI_Allreduce(got, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    expected = 0
    do i = 0, np - 1
        expected = expected + 100 * (i / 2) + mod(i, 2) + 1
    end do
    call check(total == expected, 'read_shared: each rank a different integer')
    call MPI_File_get_position_shared(fh, pos, ierr)
    call check(pos == 4 * np, 'shared pointer after read_shared')

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
    if (rank == 0) print '(A)', 'OK file_more'

contains

    subroutine check(cond, what)
        logical, intent(in) :: cond
        character(len=*), intent(in) :: what
        integer :: e
        if (.not. cond) then
            print '(A,A,A,I3)', 'FAIL file_more: ', what, ' rank', rank
            call MPI_Abort(MPI_COMM_WORLD, 1, e)
        end if
    end subroutine check
end program file_more
