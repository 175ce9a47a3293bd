! mpi_f08 point to point: MPI_Send/MPI_Recv with a TYPE(MPI_Status) (MPI_SOURCE, MPI_TAG,
! MPI_Get_count), MPI_ANY_SOURCE, MPI_STATUS_IGNORE, MPI_Sendrecv of a 2-D array and of a
! contiguous column section, MPI_Probe, nonblocking MPI_Isend/MPI_Irecv with an array of
! TYPE(MPI_Request) completed by MPI_Waitall with an array of statuses, MPI_Test on
! MPI_REQUEST_NULL, MPI_Waitall with MPI_STATUSES_IGNORE, MPI_Status_f2f08/f082f.
! Every rank talks to its ring neighbours (also on one rank, with itself).
! Rank 0 prints 'OK f08_p2p'.
program f08_p2p
    use mpi_f08
    implicit none
    integer, parameter :: n = 6
    integer :: rank, np, right, left, i, count, ierror
    integer :: sendbuf(n), recvbuf(n), fstatus(MPI_STATUS_SIZE)
    double precision :: matrix(4, 3), got(4, 3), column(4)
    integer, asynchronous :: ring_in(n, 2), ring_out(n, 2)
    type(MPI_Status) :: status, statuses(4), back
    type(MPI_Request) :: requests(4), none
    logical :: flag

    call MPI_Init()
    call MPI_Comm_rank(MPI_COMM_WORLD, rank)
    call MPI_Comm_size(MPI_COMM_WORLD, np)
    right = mod(rank + 1, np)
    left = mod(rank + np - 1, np)

    ! Blocking, with a status; any source.
    sendbuf = [(100 * rank + i, i = 1, n)]
    call MPI_Sendrecv(sendbuf, n, MPI_INTEGER, right, 7, recvbuf, n, MPI_INTEGER, &
                      MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, status, ierror)
    call check(ierror == MPI_SUCCESS, 'sendrecv ierror')
    call check(all(recvbuf == [(100 * left + i, i = 1, n)]), 'sendrecv data')
    call check(status%MPI_SOURCE == left .and. status%MPI_TAG == 7, 'status fields')
    call MPI_Get_count(status, MPI_INTEGER, count)
    call check(count == n, 'get_count')

    ! Status conversions to and from the INTEGER status of mpif.h.
    call MPI_Status_f082f(status, fstatus)
    call check(fstatus(MPI_SOURCE) == left .and. fstatus(MPI_TAG) == 7, 'f082f')
    call MPI_Status_f2f08(fstatus, back, ierror)
    call check(ierror == MPI_SUCCESS .and. back%MPI_SOURCE == left .and. back%MPI_TAG == 7, 'f2f08')

    ! A 2-D array, then a contiguous column section, with MPI_STATUS_IGNORE.
    matrix = reshape([(dble(rank * 100 + i), i = 1, 12)], [4, 3])
    call MPI_Sendrecv(matrix, 12, MPI_DOUBLE_PRECISION, right, 8, got, 12, &
                      MPI_DOUBLE_PRECISION, left, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
    call check(got(4, 3) == dble(left * 100 + 12), '2-d array')
    call MPI_Sendrecv(matrix(:, 2), 4, MPI_DOUBLE_PRECISION, right, 9, column, 4, &
                      MPI_DOUBLE_PRECISION, left, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
    call check(all(column == [(dble(left * 100 + i), i = 5, 8)]), 'column section')

    ! Probe then receive (the send is nonblocking: on one rank it goes to itself).
    call MPI_Isend(sendbuf, 3, MPI_INTEGER, right, 11, MPI_COMM_WORLD, requests(1))
    call MPI_Probe(left, 11, MPI_COMM_WORLD, status)
    call MPI_Get_count(status, MPI_INTEGER, count)
    call check(count == 3 .and. status%MPI_SOURCE == left, 'probe')
    call MPI_Recv(recvbuf, count, MPI_INTEGER, status%MPI_SOURCE, status%MPI_TAG, &
                  MPI_COMM_WORLD, MPI_STATUS_IGNORE)
    call check(all(recvbuf(1:3) == [(100 * left + i, i = 1, 3)]), 'probe data')
    call MPI_Wait(requests(1), MPI_STATUS_IGNORE)

    ! Nonblocking: two receives and two sends, Waitall with statuses.
    ring_out(:, 1) = [(1000 * rank + i, i = 1, n)]
    ring_out(:, 2) = -ring_out(:, 1)
    call MPI_Irecv(ring_in(:, 1), n, MPI_INTEGER, left, 1, MPI_COMM_WORLD, requests(1))
    call MPI_Irecv(ring_in(:, 2), n, MPI_INTEGER, right, 2, MPI_COMM_WORLD, requests(2))
    call MPI_Isend(ring_out(:, 1), n, MPI_INTEGER, right, 1, MPI_COMM_WORLD, requests(3))
    call MPI_Isend(ring_out(:, 2), n, MPI_INTEGER, left, 2, MPI_COMM_WORLD, requests(4), ierror)
    call check(ierror == MPI_SUCCESS, 'isend ierror')
    call MPI_Waitall(4, requests, statuses)
    call check(all(ring_in(:, 1) == [(1000 * left + i, i = 1, n)]), 'irecv 1')
    call check(all(ring_in(:, 2) == -[(1000 * right + i, i = 1, n)]), 'irecv 2')
    call check(statuses(1)%MPI_SOURCE == left .and. statuses(1)%MPI_TAG == 1, 'waitall status 1')
    call check(statuses(2)%MPI_SOURCE == right .and. statuses(2)%MPI_TAG == 2, 'waitall status 2')
    call check(all([(requests(i) == MPI_REQUEST_NULL, i = 1, 4)]), 'requests freed')

    ! Again, ignoring the statuses; then MPI_Test on a null request.
    call MPI_Irecv(ring_in, 2 * n, MPI_INTEGER, left, 3, MPI_COMM_WORLD, requests(1))
    call MPI_Isend(ring_out, 2 * n, MPI_INTEGER, right, 3, MPI_COMM_WORLD, requests(2))
    call MPI_Waitall(2, requests(1:2), MPI_STATUSES_IGNORE)
    call check(ring_in(n, 2) == -(1000 * left + n), 'waitall ignore')
    none = MPI_REQUEST_NULL
    call MPI_Test(none, flag, status)
    call check(flag .and. none == MPI_REQUEST_NULL, 'test null')

    call MPI_Finalize()
    if (rank == 0) print '(A)', 'OK f08_p2p'

contains

    subroutine check(cond, what)
        logical, intent(in) :: cond
        character(len=*), intent(in) :: what
        if (.not. cond) then
            print '(A,A,A,I3)', 'FAIL f08_p2p: ', what, ' rank', rank
            call MPI_Abort(MPI_COMM_WORLD, 1)
        end if
    end subroutine check
end program f08_p2p
