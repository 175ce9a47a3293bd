! The specific procedure names of mpi_f08 (MPI 4.0 section 19.1.5, Table 19.1): the program
! calls MPI_Comm_rank_f08, MPI_Comm_size_f08, MPI_Send_f08ts, MPI_Recv_f08ts, MPI_Isend_f08ts,
! MPI_Wait_f08, MPI_Get_count_f08, MPI_Bcast_f08ts, MPI_Allreduce_f08ts, MPI_Barrier_f08 and
! MPI_Wtime_f08 by name, beside the generic names, and MPI_Pcontrol (no ierror). A profiling
! layer written in Fortran (the external procedures after the program) intercepts specific
! procedures and calls the PMPI_ ones: MPI_Comm_rank_f08 and MPI_Barrier_f08 as the standard's advice to users shows, and
! the choice-buffer procedures MPI_Send_f08ts and MPI_Send_c_f08ts with the BIND(C) label
! this library's module gives them (its choice buffers come as TS 29113 descriptors). The
! counts of the layer show which specific procedure each generic call resolved to: MPI_Send
! with an INTEGER(KIND=MPI_COUNT_KIND) count is MPI_Send_c_f08ts. A ring of checked data on
! any number of ranks (one: to itself). Rank 0 prints 'OK f08_specific'.
module f08_specific_counts
    implicit none
    integer :: rank_calls = 0, barrier_calls = 0, send_calls = 0, large_send_calls = 0
end module f08_specific_counts

program f08_specific
    use mpi_f08
    use pmpi_f08, only: PMPI_Pcontrol
    use f08_specific_counts
    implicit none
    integer, parameter :: n = 300
    integer :: rank, rank2, np, right, left, i, count
    integer :: out(n), in(n), sums(n)
    integer(kind=MPI_COUNT_KIND) :: nc
    double precision :: t0
    type(MPI_Status) :: status
    type(MPI_Request) :: request

    call MPI_Init()
    t0 = MPI_Wtime_f08()
    ! Through the generic and the specific name: both reach the layer's MPI_Comm_rank_f08.
    call MPI_Comm_rank(MPI_COMM_WORLD, rank)
    call MPI_Comm_rank_f08(MPI_COMM_WORLD, rank2)
    call check(rank == rank2 .and. rank_calls == 2, 'MPI_Comm_rank_f08 intercepted twice')
    call MPI_Comm_size_f08(MPI_COMM_WORLD, np)
    right = mod(rank + 1, np)
    left = mod(rank + np - 1, np)

    ! A ring by specific names: MPI_Isend_f08ts, MPI_Recv_f08ts, MPI_Wait_f08.
    out = [(rank * 1000 + i, i = 1, n)]
    in = -1
    call MPI_Isend_f08ts(out, n, MPI_INTEGER, right, 1, MPI_COMM_WORLD, request)
    call MPI_Recv_f08ts(in, n, MPI_INTEGER, left, 1, MPI_COMM_WORLD, status)
    call MPI_Wait_f08(request, MPI_STATUS_IGNORE)
    call check(all(in == [(left * 1000 + i, i = 1, n)]), 'ring by specific names')
    call MPI_Get_count_f08(status, MPI_INTEGER, count)
    call check(count == n .and. status%MPI_SOURCE == left, 'MPI_Get_count_f08')

    ! MPI_Send_f08ts by name and MPI_Send by its generic name: the layer's MPI_Send_f08ts
    ! (the receives are posted first: one rank sends to itself).
    in = -1
    call MPI_Irecv(in, n, MPI_INTEGER, left, 2, MPI_COMM_WORLD, request)
    call MPI_Send_f08ts(out, n, MPI_INTEGER, right, 2, MPI_COMM_WORLD)
    call MPI_Wait(request, MPI_STATUS_IGNORE)
    call check(all(in == [(left * 1000 + i, i = 1, n)]), 'MPI_Send_f08ts data')
    in = -1
    call MPI_Irecv(in, n, MPI_INTEGER, left, 3, MPI_COMM_WORLD, request)
    call MPI_Send(out, n, MPI_INTEGER, right, 3, MPI_COMM_WORLD)
    call MPI_Wait(request, MPI_STATUS_IGNORE)
    call check(all(in == [(left * 1000 + i, i = 1, n)]), 'MPI_Send data')
    call check(send_calls == 2 .and. large_send_calls == 0, 'MPI_Send_f08ts intercepted twice')

    ! The generic MPI_Send with an INTEGER(KIND=MPI_COUNT_KIND) count: MPI_Send_c_f08ts.
    nc = n
    in = -1
    call MPI_Irecv(in, nc, MPI_INTEGER, left, 4, MPI_COMM_WORLD, request)
    call MPI_Send(out, nc, MPI_INTEGER, right, 4, MPI_COMM_WORLD)
    call MPI_Wait(request, status)
    call check(all(in == [(left * 1000 + i, i = 1, n)]), 'MPI_Send_c_f08ts data')
    call check(send_calls == 2 .and. large_send_calls == 1, &
        'the MPI_COUNT_KIND count resolved to MPI_Send_c_f08ts')

    ! Collectives by specific names.
    if (rank == 0) then
        in = [(3 * i, i = 1, n)]
    else
        in = 0
    end if
    call MPI_Bcast_f08ts(in, n, MPI_INTEGER, 0, MPI_COMM_WORLD)
    call check(all(in == [(3 * i, i = 1, n)]), 'MPI_Bcast_f08ts')
    call MPI_Allreduce_f08ts(out, sums, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
    call check(all(sums == [(1000 * (np * (np - 1) / 2) + np * i, i = 1, n)]), &
        'MPI_Allreduce_f08ts')

    ! MPI_Pcontrol has no ierror in mpi_f08 (nothing may be written after its one argument).
    call MPI_Pcontrol(1)
    call PMPI_Pcontrol(0)
    call MPI_Barrier(MPI_COMM_WORLD)
    call MPI_Barrier_f08(MPI_COMM_WORLD)
    call check(barrier_calls == 2, 'MPI_Barrier_f08 intercepted twice')
    call check(MPI_Wtime_f08() >= t0, 'MPI_Wtime_f08')
    if (rank == 0) print '(A)', 'OK f08_specific'
    call MPI_Finalize()

contains

    subroutine check(cond, what)
        logical, intent(in) :: cond
        character(len=*), intent(in) :: what
        if (.not. cond) then
            print '(A,A,A,I3)', 'FAIL f08_specific: ', what, ' rank', rank
            call MPI_Abort(MPI_COMM_WORLD, 1)
        end if
    end subroutine check
end program f08_specific

! ---- The profiling layer: external procedures with the specific names ----------------------

! As in the standard's advice to users: the module's own interface of the name is renamed away.
subroutine MPI_Comm_rank_f08(comm, rank, ierror)
    use mpi_f08, my_noname => MPI_Comm_rank_f08
    use pmpi_f08, only: PMPI_Comm_rank
    use f08_specific_counts
    implicit none
    type(MPI_Comm), intent(in) :: comm
    integer, intent(out) :: rank
    integer, optional, intent(out) :: ierror
    rank_calls = rank_calls + 1
    call PMPI_Comm_rank(comm, rank, ierror)
end subroutine MPI_Comm_rank_f08

subroutine MPI_Barrier_f08(comm, ierror)
    use mpi_f08, my_noname => MPI_Barrier_f08
    use pmpi_f08, only: PMPI_Barrier
    use f08_specific_counts
    implicit none
    type(MPI_Comm), intent(in) :: comm
    integer, optional, intent(out) :: ierror
    barrier_calls = barrier_calls + 1
    call PMPI_Barrier(comm, ierror)
end subroutine MPI_Barrier_f08

! Choice buffers: this library's MPI_Send_f08ts receives a C descriptor, so the layer's
! procedure has the module's BIND(C) label.
subroutine MPI_Send_f08ts(buf, count, datatype, dest, tag, comm, ierror) &
        bind(C, name="mpi_send_f08ts_")
    use mpi_f08, only: MPI_Datatype, MPI_Comm
    use pmpi_f08, only: PMPI_Send
    use f08_specific_counts
    implicit none
    type(*), dimension(..), intent(in) :: buf
    integer, intent(in) :: count, dest, tag
    type(MPI_Datatype), intent(in) :: datatype
    type(MPI_Comm), intent(in) :: comm
    integer, optional, intent(out) :: ierror
    send_calls = send_calls + 1
    call PMPI_Send(buf, count, datatype, dest, tag, comm, ierror)
end subroutine MPI_Send_f08ts

subroutine MPI_Send_c_f08ts(buf, count, datatype, dest, tag, comm, ierror) &
        bind(C, name="mpi_send_c_f08ts_")
    use mpi_f08, only: MPI_Datatype, MPI_Comm, MPI_COUNT_KIND
    use pmpi_f08, only: PMPI_Send
    use f08_specific_counts
    implicit none
    type(*), dimension(..), intent(in) :: buf
    integer(kind=MPI_COUNT_KIND), intent(in) :: count
    integer, intent(in) :: dest, tag
    type(MPI_Datatype), intent(in) :: datatype
    type(MPI_Comm), intent(in) :: comm
    integer, optional, intent(out) :: ierror
    large_send_calls = large_send_calls + 1
    call PMPI_Send(buf, count, datatype, dest, tag, comm, ierror)
end subroutine MPI_Send_c_f08ts
