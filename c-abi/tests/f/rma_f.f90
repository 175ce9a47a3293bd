! One-sided communication from Fortran 90 with `use mpi`:
!  - MPI_WIN_CREATE over an INTEGER array (size as INTEGER(KIND=MPI_ADDRESS_KIND), unit from
!    MPI_TYPE_SIZE), its MPI_WIN_SIZE and MPI_WIN_DISP_UNIT attributes read back;
!  - fence epochs: MPI_PUT to the right neighbour, MPI_GET from it at a displacement,
!    MPI_ACCUMULATE (MPI_SUM) from every rank into every rank;
!  - passive target: MPI_WIN_LOCK exclusive / MPI_WIN_UNLOCK, then a shared lock on itself to
!    read its own window;
!  - MPI_WIN_ALLOCATE of DOUBLE PRECISION memory (baseptr an INTEGER(KIND=MPI_ADDRESS_KIND),
!    turned into a Fortran pointer with C_F_POINTER), Put and Get through it;
!  - MPI_WIN_FREE leaves MPI_WIN_NULL.
! Every value is checked. The window memory lives in a module, so that the compiler reloads it
! after each MPI call (MPI 4.0 19.1.17: module data is one of the ways to keep window memory
! out of registers). Rank 0 prints 'OK rma_f'.
module rma_f_data
    use, intrinsic :: iso_c_binding
    implicit none
    integer, parameter :: n = 20
    integer, target :: buf(n)
    double precision, pointer :: dwin(:)
    integer :: rank
end module rma_f_data

program rma_f
    use mpi
    use rma_f_data
    implicit none
    integer :: ierr, np, right, left, win, dwin_handle, j, isize, dsize
    integer :: vals(n), got(5), mine, marker
    integer(kind=MPI_ADDRESS_KIND) :: wsize, disp, attr, baseptr
    logical :: flag
    double precision :: dvals(n), dgot(n)
    type(c_ptr) :: cbase

    call MPI_Init(ierr)
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
    call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
    right = mod(rank + 1, np)
    left = mod(rank + np - 1, np)

    ! --- MPI_WIN_CREATE over an INTEGER array
    call MPI_Type_size(MPI_INTEGER, isize, ierr)
    wsize = int(n, MPI_ADDRESS_KIND) * isize
    buf = -1
    call MPI_Win_create(buf, wsize, isize, MPI_INFO_NULL, MPI_COMM_WORLD, win, ierr)
    call check(ierr == MPI_SUCCESS .and. win /= MPI_WIN_NULL, 'MPI_Win_create')
    call MPI_Win_get_attr(win, MPI_WIN_SIZE, attr, flag, ierr)
    call check(flag .and. attr == wsize, 'MPI_WIN_SIZE attribute')
    call MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, attr, flag, ierr)
    call check(flag .and. attr == isize, 'MPI_WIN_DISP_UNIT attribute')

    ! Put into the right neighbour's whole window.
    do j = 1, n
        vals(j) = rank * 100 + j
    end do
    call MPI_Win_fence(0, win, ierr)
    disp = 0
    call MPI_Put(vals, n, MPI_INTEGER, right, disp, n, MPI_INTEGER, win, ierr)
    call check(ierr == MPI_SUCCESS, 'MPI_Put')
    call MPI_Win_fence(0, win, ierr)
    do j = 1, n
        call check(buf(j) == left * 100 + j, 'fence Put data')
    end do

    ! Get elements 6..10 of the right neighbour (displacement 5 units): this rank's values.
    got = -1
    disp = 5
    call MPI_Get(got, 5, MPI_INTEGER, right, disp, 5, MPI_INTEGER, win, ierr)
    call check(ierr == MPI_SUCCESS, 'MPI_Get')
    call MPI_Win_fence(0, win, ierr)
    do j = 1, 5
        call check(got(j) == rank * 100 + 5 + j, 'fence Get data')
    end do

    ! Every rank adds rank + 1 to the last element of every rank.
    ! (Origin buffers are variables: an expression's temporary could be gone before the fence.)
    mine = rank + 1
    disp = n - 1
    do j = 0, np - 1
        call MPI_Accumulate(mine, 1, MPI_INTEGER, j, disp, 1, MPI_INTEGER, MPI_SUM, &
                            win, ierr)
        call check(ierr == MPI_SUCCESS, 'MPI_Accumulate')
    end do
    call MPI_Win_fence(MPI_MODE_NOSUCCEED, win, ierr)
    call check(buf(n) == left * 100 + n + np * (np + 1) / 2, 'fence Accumulate data')
    call check(buf(1) == left * 100 + 1, 'Accumulate touched another element')

    ! Passive target: exclusive lock on the right neighbour, write element 1.
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
    disp = 0
    call MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win, ierr)
    call check(ierr == MPI_SUCCESS, 'MPI_Win_lock')
    marker = -rank - 7
    call MPI_Put(marker, 1, MPI_INTEGER, right, disp, 1, MPI_INTEGER, win, ierr)
    call MPI_Win_unlock(right, win, ierr)
    call check(ierr == MPI_SUCCESS, 'MPI_Win_unlock')
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
    call MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win, ierr)
    call check(buf(1) == -left - 7, 'locked Put data')
    call MPI_Win_unlock(rank, win, ierr)
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
    call MPI_Win_free(win, ierr)
    call check(ierr == MPI_SUCCESS .and. win == MPI_WIN_NULL, 'MPI_Win_free')

    ! --- MPI_WIN_ALLOCATE of DOUBLE PRECISION memory
    call MPI_Type_size(MPI_DOUBLE_PRECISION, dsize, ierr)
    wsize = int(n, MPI_ADDRESS_KIND) * dsize
    call MPI_Win_allocate(wsize, dsize, MPI_INFO_NULL, MPI_COMM_WORLD, baseptr, dwin_handle, &
                          ierr)
    call check(ierr == MPI_SUCCESS .and. baseptr /= 0, 'MPI_Win_allocate')
    cbase = transfer(baseptr, cbase)
    call c_f_pointer(cbase, dwin, [n])
    dwin = 0.0d0
    do j = 1, n
        dvals(j) = rank + j * 0.25d0
    end do
    call MPI_Win_fence(0, dwin_handle, ierr)
    disp = 0
    call MPI_Put(dvals, n, MPI_DOUBLE_PRECISION, right, disp, n, MPI_DOUBLE_PRECISION, &
                 dwin_handle, ierr)
    call MPI_Win_fence(0, dwin_handle, ierr)
    do j = 1, n
        call check(dwin(j) == left + j * 0.25d0, 'Put into allocated memory')
    end do
    dgot = -1.0d0
    call MPI_Get(dgot, n, MPI_DOUBLE_PRECISION, right, disp, n, MPI_DOUBLE_PRECISION, &
                 dwin_handle, ierr)
    call MPI_Win_fence(MPI_MODE_NOSUCCEED, dwin_handle, ierr)
    do j = 1, n
        call check(dgot(j) == dvals(j), 'Get from allocated memory')
    end do
    call MPI_Win_free(dwin_handle, ierr)
    call check(ierr == MPI_SUCCESS .and. dwin_handle == MPI_WIN_NULL, 'MPI_Win_free (allocate)')

    call MPI_Barrier(MPI_COMM_WORLD, ierr)
    call MPI_Finalize(ierr)
    if (rank == 0) print '(A)', 'OK rma_f'

contains

    subroutine check(cond, what)
        logical, intent(in) :: cond
        character(len=*), intent(in) :: what
        integer :: e
        if (.not. cond) then
            print '(A,A,A,I3)', 'FAIL rma_f: ', what, ' rank', rank
            call MPI_Abort(MPI_COMM_WORLD, 1, e)
        end if
    end subroutine check
end program rma_f
