! mpi_f08 MPI-IO: MPI_File_open (TYPE(MPI_File)) of a file in $FILE_TEST_DIR, a view
! (MPI_File_set_view with a displacement of KIND MPI_OFFSET_KIND and the 'native' string),
! MPI_File_write_at_all of one block per rank, MPI_File_get_size, MPI_File_read_at with a
! status and MPI_Get_count, a nonblocking MPI_File_iread_at with MPI_Wait, MPI_File_close
! leaving MPI_FILE_NULL, MPI_File_delete; an open of a missing file returns an error in
! ierror (files use MPI_ERRORS_RETURN by default). Rank 0 prints 'OK f08_file'.
program f08_file
    use mpi_f08
    implicit none
    integer, parameter :: block = 4
    integer :: rank, np, i, count, ierror, class
    integer :: mine(block), back(block)
    integer, asynchronous :: later(block)
    integer(kind=MPI_OFFSET_KIND) :: size, offset
    character(len=512) :: dir, path
    type(MPI_File) :: fh, missing
    type(MPI_Status) :: status
    type(MPI_Request) :: request

    call MPI_Init()
    call MPI_Comm_rank(MPI_COMM_WORLD, rank)
    call MPI_Comm_size(MPI_COMM_WORLD, np)
    call get_environment_variable('FILE_TEST_DIR', dir)
    if (len_trim(dir) == 0) dir = '.'
    path = trim(dir) // '/f08_file.dat'

    call MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE + MPI_MODE_RDWR, MPI_INFO_NULL, fh)
    call check(fh /= MPI_FILE_NULL, 'open')
    call MPI_File_set_view(fh, 0_MPI_OFFSET_KIND, MPI_INTEGER, MPI_INTEGER, 'native', &
                           MPI_INFO_NULL)
    mine = [(rank * 10 + i, i = 1, block)]
    offset = rank * block
    call MPI_File_write_at_all(fh, offset, mine, block, MPI_INTEGER, MPI_STATUS_IGNORE)
    call MPI_File_sync(fh)
    call MPI_Barrier(MPI_COMM_WORLD)
    call MPI_File_get_size(fh, size)
    call check(size == 4 * block * np, 'get_size')

    ! Read the block of the next rank, blocking then nonblocking.
    offset = mod(rank + 1, np) * block
    call MPI_File_read_at(fh, offset, back, block, MPI_INTEGER, status)
    call MPI_Get_count(status, MPI_INTEGER, count)
    call check(count == block, 'read count')
    call check(all(back == [(mod(rank + 1, np) * 10 + i, i = 1, block)]), 'read data')
    later = 0
    call MPI_File_iread_at(fh, offset, later, block, MPI_INTEGER, request)
    call MPI_Wait(request, status)
    call check(all(later == back), 'iread_at')

    call MPI_File_close(fh)
    call check(fh == MPI_FILE_NULL, 'close')
    call MPI_Barrier(MPI_COMM_WORLD)
    if (rank == 0) call MPI_File_delete(path, MPI_INFO_NULL)

    ! A missing file: the error comes back in ierror.
    call MPI_File_open(MPI_COMM_SELF, trim(dir) // '/no-such-file', MPI_MODE_RDONLY, &
                       MPI_INFO_NULL, missing, ierror)
    call check(ierror /= MPI_SUCCESS .and. missing == MPI_FILE_NULL, 'open missing')
    call MPI_Error_class(ierror, class)
    call check(class == MPI_ERR_NO_SUCH_FILE, 'MPI_ERR_NO_SUCH_FILE')

    call MPI_Finalize()
    if (rank == 0) print '(A)', 'OK f08_file'

contains

    subroutine check(cond, what)
        logical, intent(in) :: cond
        character(len=*), intent(in) :: what
        if (.not. cond) then
            print '(A,A,A,I3)', 'FAIL f08_file: ', what, ' rank', rank
            call MPI_Abort(MPI_COMM_WORLD, 1)
        end if
    end subroutine check
end program f08_file
