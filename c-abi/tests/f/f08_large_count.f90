! mpi_f08's large-count overloads (MPI 4.0 19.1.2): the generic MPI_Send with an
! INTEGER(KIND=MPI_COUNT_KIND) count resolves to MPI_Send_c_f08ts, and likewise MPI_Recv,
! MPI_Isend/MPI_Irecv, MPI_Get_count (an MPI_Count result), MPI_Bcast, MPI_Allreduce,
! MPI_Type_size and MPI_Type_contiguous (a type of 3 GiB whose INTEGER size is
! MPI_UNDEFINED); the int forms still resolve to the int procedures. Every rank talks to its
! ring neighbours (also on one rank, with itself). Rank 0 prints 'OK f08_large_count'.
program f08_large_count
    use mpi_f08
    implicit none
    integer, parameter :: n = 6
    integer(kind=MPI_COUNT_KIND) :: nc, got, size_c
    integer :: rank, np, right, left, i, isize
    integer :: sendbuf(n), recvbuf(n), total(n)
    type(MPI_Status) :: status
    type(MPI_Request) :: requests(2)
    type(MPI_Datatype) :: huge

    call MPI_Init()
    call MPI_Comm_rank(MPI_COMM_WORLD, rank)
    call MPI_Comm_size(MPI_COMM_WORLD, np)
    right = mod(rank + 1, np)
    left = mod(rank + np - 1, np)
    nc = n

    ! Blocking: MPI_Irecv then MPI_Send with an MPI_Count count, MPI_Get_count into one.
    sendbuf = [(100 * rank + i, i = 1, n)]
    recvbuf = 0
    call MPI_Irecv(recvbuf, nc, MPI_INTEGER, left, 1, MPI_COMM_WORLD, requests(1))
    call MPI_Send(sendbuf, nc, MPI_INTEGER, right, 1, MPI_COMM_WORLD)
    call MPI_Wait(requests(1), status)
    call check(all(recvbuf == [(100 * left + i, i = 1, n)]), 'send_c data')
    got = -1
    call MPI_Get_count(status, MPI_INTEGER, got)
    call check(got == nc, 'get_count_c')

    ! Nonblocking both ways, and MPI_Recv with an MPI_Count count.
    recvbuf = 0
    call MPI_Isend(sendbuf, nc, MPI_INTEGER, right, 2, MPI_COMM_WORLD, requests(2))
    call MPI_Recv(recvbuf, nc, MPI_INTEGER, left, 2, MPI_COMM_WORLD, status)
    call MPI_Wait(requests(2), MPI_STATUS_IGNORE)
    call check(all(recvbuf == [(100 * left + i, i = 1, n)]), 'recv_c data')

    ! Collectives.
    if (rank == 0) then
        recvbuf = [(7 * i, i = 1, n)]
    else
        recvbuf = 0
    end if
    call MPI_Bcast(recvbuf, nc, MPI_INTEGER, 0, MPI_COMM_WORLD)
    call check(all(recvbuf == [(7 * i, i = 1, n)]), 'bcast_c')
    call MPI_Allreduce(sendbuf, total, nc, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
    call check(all(total == [(100 * (np * (np - 1) / 2) + np * i, i = 1, n)]), 'allreduce_c')

    ! A type of 3 GiB: its size as an MPI_Count, MPI_UNDEFINED as an INTEGER.
    call MPI_Type_contiguous(3_MPI_COUNT_KIND * 1024 * 1024 * 1024, MPI_BYTE, huge)
    call MPI_Type_size(huge, size_c)
    call check(size_c == 3_MPI_COUNT_KIND * 1024 * 1024 * 1024, 'type_size_c')
    call MPI_Type_size(huge, isize)
    call check(isize == MPI_UNDEFINED, 'type_size of 3 GiB')
    call MPI_Type_free(huge)

    call MPI_Finalize()
    if (rank == 0) print '(A)', 'OK f08_large_count'

contains

    subroutine check(cond, what)
        logical, intent(in) :: cond
        character(len=*), intent(in) :: what
        if (.not. cond) then
            print '(A,A,A,I3)', 'FAIL f08_large_count: ', what, ' rank', rank
            call MPI_Abort(MPI_COMM_WORLD, 1)
        end if
    end subroutine check
end program f08_large_count
