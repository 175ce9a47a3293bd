! mpi_f08 collectives: MPI_Bcast, MPI_Reduce, MPI_Allreduce with MPI_IN_PLACE, MPI_Gather
! with MPI_IN_PLACE at the root, MPI_Allgather, MPI_Alltoall, MPI_Scan, MPI_Barrier, a user
! operation (MPI_Op_create with an f08 MPI_User_function: TYPE(C_PTR) vectors), nonblocking
! MPI_Ibcast/MPI_Iallreduce completed by MPI_Wait. Rank 0 prints 'OK f08_coll'.
module f08_coll_ops
    use, intrinsic :: iso_c_binding
    use mpi_f08
    implicit none
contains
    ! inoutvec(i) = max(|invec(i)|, |inoutvec(i)|) on INTEGERs.
    subroutine abs_max(invec, inoutvec, len, datatype)
        type(c_ptr), value :: invec, inoutvec
        integer :: len
        type(MPI_Datatype) :: datatype
        integer, pointer :: a(:), b(:)
        if (datatype /= MPI_INTEGER) return
        call c_f_pointer(invec, a, [len])
        call c_f_pointer(inoutvec, b, [len])
        b = max(abs(a), abs(b))
    end subroutine abs_max
end module f08_coll_ops

program f08_coll
    use mpi_f08
    use f08_coll_ops
    implicit none
    integer :: rank, np, i, ierror, root
    integer :: value, total, prefix, three(3)
    integer, allocatable :: all_ranks(:), pairs(:), got(:), a2a_in(:), a2a_out(:)
    integer, asynchronous :: nb(4)
    type(MPI_Op) :: op
    type(MPI_Request) :: request
    logical :: commutative

    call MPI_Init()
    call MPI_Comm_rank(MPI_COMM_WORLD, rank)
    call MPI_Comm_size(MPI_COMM_WORLD, np)
    allocate(all_ranks(np), pairs(2 * np), got(np), a2a_in(np), a2a_out(np))
    root = np - 1

    three = 0
    if (rank == root) three = [7, 8, 9]
    call MPI_Bcast(three, 3, MPI_INTEGER, root, MPI_COMM_WORLD, ierror)
    call check(ierror == MPI_SUCCESS .and. all(three == [7, 8, 9]), 'bcast')

    value = rank + 1
    call MPI_Reduce(value, total, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD)
    if (rank == 0) call check(total == np * (np + 1) / 2, 'reduce')

    ! In place: the result replaces the input.
    three = [rank, 1, -rank]
    call MPI_Allreduce(MPI_IN_PLACE, three, 3, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD)
    call check(all(three == [np - 1, 1, 0]), 'allreduce in place')

    ! Gather in place at the root: its own element is already in place.
    all_ranks = -1
    if (rank == root) then
        all_ranks(root + 1) = 10 * root
        call MPI_Gather(MPI_IN_PLACE, 1, MPI_INTEGER, all_ranks, 1, MPI_INTEGER, root, &
                        MPI_COMM_WORLD)
        call check(all(all_ranks == [(10 * i, i = 0, np - 1)]), 'gather in place')
    else
        call MPI_Gather(10 * rank, 1, MPI_INTEGER, all_ranks, 1, MPI_INTEGER, root, &
                        MPI_COMM_WORLD)
    end if

    call MPI_Allgather([rank, -rank], 2, MPI_INTEGER, pairs, 2, MPI_INTEGER, MPI_COMM_WORLD)
    call check(all(pairs(1::2) == [(i, i = 0, np - 1)]) .and. &
               all(pairs(2::2) == [(-i, i = 0, np - 1)]), 'allgather')

    a2a_in = [(100 * rank + i, i = 0, np - 1)]
    call MPI_Alltoall(a2a_in, 1, MPI_INTEGER, a2a_out, 1, MPI_INTEGER, MPI_COMM_WORLD)
    call check(all(a2a_out == [(100 * i + rank, i = 0, np - 1)]), 'alltoall')

    call MPI_Scan(1, prefix, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
    call check(prefix == rank + 1, 'scan')
    call MPI_Barrier(MPI_COMM_WORLD)

    ! A user operation written against the f08 MPI_User_function interface.
    call MPI_Op_create(abs_max, .true., op)
    call MPI_Op_commutative(op, commutative)
    call check(commutative, 'op commutative')
    three = [-rank, rank, 3]
    call MPI_Allreduce(MPI_IN_PLACE, three, 3, MPI_INTEGER, op, MPI_COMM_WORLD)
    call check(all(three == [np - 1, np - 1, 3]), 'user op')
    call MPI_Op_free(op)
    call check(op == MPI_OP_NULL, 'op_free')

    ! Nonblocking collectives.
    nb = 0
    if (rank == 0) nb = [1, 2, 3, 4]
    call MPI_Ibcast(nb, 4, MPI_INTEGER, 0, MPI_COMM_WORLD, request)
    call MPI_Wait(request, MPI_STATUS_IGNORE)
    call check(all(nb == [1, 2, 3, 4]) .and. request == MPI_REQUEST_NULL, 'ibcast')
    call MPI_Iallreduce(MPI_IN_PLACE, nb, 4, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, request)
    call MPI_Wait(request, MPI_STATUS_IGNORE, ierror)
    call check(ierror == MPI_SUCCESS .and. all(nb == np * [1, 2, 3, 4]), 'iallreduce')

    call MPI_Finalize()
    if (rank == 0) print '(A)', 'OK f08_coll'

contains

    subroutine check(cond, what)
        logical, intent(in) :: cond
        character(len=*), intent(in) :: what
        if (.not. cond) then
            print '(A,A,A,I3)', 'FAIL f08_coll: ', what, ' rank', rank
            call MPI_Abort(MPI_COMM_WORLD, 1)
        end if
    end subroutine check
end program f08_coll
