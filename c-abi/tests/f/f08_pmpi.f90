! pmpi_f08: the profiling names of the Fortran 2008 binding (MPI 4.0 section 19.1.5), as a
! tool uses them. The program's own wrappers (tool_send, tool_recv, tool_allreduce) count
! calls and bytes and forward to PMPI_Send, PMPI_Recv, PMPI_Allreduce (choice buffers: the
! descriptor entry points; PMPI_Allreduce with an MPI_COUNT_KIND count resolves to
! PMPI_Allreduce_c_f08ts); the rest goes through PMPI_ names too: PMPI_Init, PMPI_Comm_rank,
! PMPI_Comm_size (optional ierror), PMPI_Comm_dup / PMPI_Comm_free, PMPI_Get_count,
! PMPI_Wtime, PMPI_Buffer_attach / PMPI_Buffer_detach (TYPE(C_PTR)), PMPI_Status_f2f08 and
! PMPI_Finalize; and the MPI_ names still work beside them. A ring of 500 integers checks
! the data. Rank 0 prints 'OK f08_pmpi'.
module tool
    use mpi_f08
    use pmpi_f08
    implicit none
    integer :: sends = 0, recvs = 0, reductions = 0
    integer(kind=MPI_COUNT_KIND) :: bytes_sent = 0
contains
    subroutine tool_send(buf, count, datatype, dest, tag, comm, ierror)
        integer, intent(in) :: buf(*)
        integer, intent(in) :: count, dest, tag
        type(MPI_Datatype), intent(in) :: datatype
        type(MPI_Comm), intent(in) :: comm
        integer, optional, intent(out) :: ierror
        integer :: size
        sends = sends + 1
        call PMPI_Type_size(datatype, size)
        bytes_sent = bytes_sent + count * size
        call PMPI_Send(buf(1:count), count, datatype, dest, tag, comm, ierror)
    end subroutine

    subroutine tool_recv(buf, count, datatype, source, tag, comm, status, ierror)
        integer, intent(inout) :: buf(*)
        integer, intent(in) :: count, source, tag
        type(MPI_Datatype), intent(in) :: datatype
        type(MPI_Comm), intent(in) :: comm
        type(MPI_Status), intent(out) :: status
        integer, optional, intent(out) :: ierror
        recvs = recvs + 1
        call PMPI_Recv(buf(1:count), count, datatype, source, tag, comm, status, ierror)
    end subroutine

    subroutine tool_allreduce(sendbuf, recvbuf, count, op, comm)
        integer, intent(in) :: sendbuf(:)
        integer, intent(inout) :: recvbuf(:)
        integer(kind=MPI_COUNT_KIND), intent(in) :: count
        type(MPI_Op), intent(in) :: op
        type(MPI_Comm), intent(in) :: comm
        reductions = reductions + 1
        call PMPI_Allreduce(sendbuf, recvbuf, count, MPI_INTEGER, op, comm)
    end subroutine
end module tool

program f08_pmpi
    use, intrinsic :: iso_c_binding, only: c_ptr, c_loc, c_intptr_t
    use mpi_f08
    use pmpi_f08
    use tool
    implicit none
    integer, parameter :: n = 500
    integer :: rank, np, ierror, right, left, i, count, detached_size
    integer :: out(n), in(n), sums(n), fstatus(MPI_STATUS_SIZE)
    integer(kind=MPI_COUNT_KIND) :: big_n
    integer, target :: attached(2000)
    type(c_ptr) :: detached
    type(MPI_Comm) :: comm
    type(MPI_Status) :: status, converted
    double precision :: t0

    call PMPI_Init(ierror)
    call check(ierror == MPI_SUCCESS, 'PMPI_Init')
    t0 = PMPI_Wtime()
    call PMPI_Comm_rank(MPI_COMM_WORLD, rank)
    call PMPI_Comm_size(MPI_COMM_WORLD, np, ierror)
    call PMPI_Comm_dup(MPI_COMM_WORLD, comm)
    right = mod(rank + 1, np)
    left = mod(rank + np - 1, np)

    ! A ring through the tool's wrappers (even ranks send first).
    out = [(rank * 1000 + i, i = 1, n)]
    in = -1
    if (mod(rank, 2) == 0) then
        call tool_send(out, n, MPI_INTEGER, right, 3, comm)
        call tool_recv(in, n, MPI_INTEGER, left, 3, comm, status)
    else
        call tool_recv(in, n, MPI_INTEGER, left, 3, comm, status)
        call tool_send(out, n, MPI_INTEGER, right, 3, comm)
    end if
    call check(all(in == [(left * 1000 + i, i = 1, n)]), 'ring data through PMPI_Send/Recv')
    call check(status%MPI_SOURCE == left .and. status%MPI_TAG == 3, 'ring status')
    call PMPI_Get_count(status, MPI_INTEGER, count)
    call check(count == n, 'PMPI_Get_count')
    call check(sends == 1 .and. recvs == 1 .and. bytes_sent == 4 * n, 'the tool counted')

    ! PMPI_Allreduce with an MPI_COUNT_KIND count (PMPI_Allreduce_c_f08ts), and MPI_Allreduce.
    big_n = n
    call tool_allreduce(out, sums, big_n, MPI_SUM, comm)
    call check(all(sums == [(1000 * np * (np - 1) / 2 + np * i, i = 1, n)]), 'PMPI_Allreduce_c')
    sums = -1
    call MPI_Allreduce(out, sums, n, MPI_INTEGER, MPI_SUM, comm)
    call check(all(sums == [(1000 * np * (np - 1) / 2 + np * i, i = 1, n)]), 'MPI_Allreduce')
    call check(reductions == 1, 'the tool counted the reduction')

    ! PMPI_Buffer_attach / PMPI_Buffer_detach (the address comes back as a TYPE(C_PTR)).
    call PMPI_Buffer_attach(attached, 4 * size_of_buffer())
    call PMPI_Buffer_detach(detached, detached_size)
    ! (Addresses compared as integers: gfortran -O1 folds C_ASSOCIATED of these two to false.)
    call check(transfer(detached, 0_c_intptr_t) == transfer(c_loc(attached), 0_c_intptr_t) &
        .and. detached_size == 4 * size_of_buffer(), 'PMPI_Buffer_detach')

    ! PMPI_Status_f2f08.
    fstatus = [0, 0, 7, 8, 9]
    call PMPI_Status_f2f08(fstatus, converted)
    call check(converted%MPI_SOURCE == 7 .and. converted%MPI_TAG == 8, 'PMPI_Status_f2f08')

    call PMPI_Comm_free(comm)
    call check(comm == MPI_COMM_NULL, 'PMPI_Comm_free')
    call check(PMPI_Wtime() >= t0, 'PMPI_Wtime')
    call PMPI_Barrier(MPI_COMM_WORLD)
    if (rank == 0) print '(A)', 'OK f08_pmpi'
    call PMPI_Finalize()

contains

    integer function size_of_buffer()
        size_of_buffer = size(attached)
    end function

    subroutine check(cond, what)
        logical, intent(in) :: cond
        character(len=*), intent(in) :: what
        if (.not. cond) then
            print '(A,A,A,I3)', 'FAIL f08_pmpi: ', what, ' rank', rank
            call PMPI_Abort(MPI_COMM_WORLD, 1)
        end if
    end subroutine

end program f08_pmpi
