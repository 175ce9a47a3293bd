! mpi_f08 one-sided communication: MPI_Win_create over an INTEGER array in a module
! (ASYNCHRONOUS), fence epochs with MPI_Put to the right neighbour, MPI_Get from it and
! MPI_Accumulate (MPI_SUM) into every rank, a passive-target epoch (MPI_Win_lock/unlock),
! the MPI_WIN_SIZE attribute, MPI_Win_allocate returning a TYPE(C_PTR) turned into a Fortran
! pointer with C_F_POINTER, MPI_Win_free leaving MPI_WIN_NULL. Rank 0 prints 'OK f08_rma'.
module f08_rma_data
    implicit none
    integer, parameter :: n = 8
    integer, target, asynchronous :: window_memory(n)
    double precision, pointer, asynchronous :: allocated(:)
end module f08_rma_data

program f08_rma
    use, intrinsic :: iso_c_binding
    use mpi_f08
    use f08_rma_data
    implicit none
    integer :: rank, np, right, left, i, ierror
    integer, asynchronous :: marker
    integer, asynchronous :: got(2), ones(n)
    integer(kind=MPI_ADDRESS_KIND) :: size, attr
    double precision :: from_right
    type(MPI_Win) :: win, awin
    type(c_ptr) :: base
    logical :: flag

    call MPI_Init()
    call MPI_Comm_rank(MPI_COMM_WORLD, rank)
    call MPI_Comm_size(MPI_COMM_WORLD, np)
    right = mod(rank + 1, np)
    left = mod(rank + np - 1, np)

    window_memory = -1
    size = n * 4
    call MPI_Win_create(window_memory, size, 4, MPI_INFO_NULL, MPI_COMM_WORLD, win, ierror)
    call check(ierror == MPI_SUCCESS .and. win /= MPI_WIN_NULL, 'win_create')
    call MPI_Win_get_attr(win, MPI_WIN_SIZE, attr, flag)
    call check(flag .and. attr == size, 'MPI_WIN_SIZE')

    ! Put my rank into element 1 of my right neighbour's window.
    call MPI_Win_fence(0, win)
    call MPI_Put(rank, 1, MPI_INTEGER, right, 0_MPI_ADDRESS_KIND, 1, MPI_INTEGER, win)
    call MPI_Win_fence(0, win)
    call check(window_memory(1) == left, 'put')

    ! Everyone adds 1 to elements 3..n of everyone; then get two elements from the right.
    ones = 1
    call MPI_Win_fence(0, win)
    do i = 0, np - 1
        call MPI_Accumulate(ones, n - 2, MPI_INTEGER, i, 2_MPI_ADDRESS_KIND, n - 2, &
                            MPI_INTEGER, MPI_SUM, win)
    end do
    call MPI_Win_fence(0, win)
    call check(all(window_memory(3:n) == np - 1), 'accumulate')
    call MPI_Get(got, 2, MPI_INTEGER, right, 0_MPI_ADDRESS_KIND, 2, MPI_INTEGER, win)
    call MPI_Win_fence(0, win)
    call check(got(1) == rank .and. got(2) == -1, 'get')

    ! Passive target: write element 2 of the right neighbour under an exclusive lock.
    call MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win)
    marker = 100 + rank
    call MPI_Put(marker, 1, MPI_INTEGER, right, 1_MPI_ADDRESS_KIND, 1, MPI_INTEGER, win)
    call MPI_Win_unlock(right, win)
    call MPI_Barrier(MPI_COMM_WORLD)
    call MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win)
    call check(window_memory(2) == 100 + left, 'lock/put/unlock')
    call MPI_Win_unlock(rank, win)
    call MPI_Win_free(win)
    call check(win == MPI_WIN_NULL, 'win_free')

    ! Memory allocated by the library, as a Fortran pointer.
    call MPI_Win_allocate(4_MPI_ADDRESS_KIND * 8, 8, MPI_INFO_NULL, MPI_COMM_WORLD, base, awin)
    call c_f_pointer(base, allocated, [4])
    allocated = rank + 0.25d0
    call MPI_Win_fence(0, awin)
    call MPI_Get(from_right, 1, MPI_DOUBLE_PRECISION, right, 3_MPI_ADDRESS_KIND, 1, &
                 MPI_DOUBLE_PRECISION, awin)
    call MPI_Win_fence(0, awin)
    call check(from_right == right + 0.25d0, 'win_allocate get')
    call MPI_Win_free(awin)

    call MPI_Finalize()
    if (rank == 0) print '(A)', 'OK f08_rma'

contains

    subroutine check(cond, what)
        logical, intent(in) :: cond
        character(len=*), intent(in) :: what
        if (.not. cond) then
            print '(A,A,A,I3)', 'FAIL f08_rma: ', what, ' rank', rank
            call MPI_Abort(MPI_COMM_WORLD, 1)
        end if
    end subroutine check
end program f08_rma
