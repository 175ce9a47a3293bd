! MPI 4.0's additions through `use mpi` (the twin of f08_mpi4.f90, INTEGER handles and
! ierror arguments) (issue 16's groups that had no Fortran program):
! MPI_Init_thread with MPI_THREAD_MULTIPLE, partitioned communication (Psend_init,
! Precv_init, Pready, Pready_range, Pready_list, Parrived, restarted), neighborhood
! collectives on a periodic ring (blocking, nonblocking, persistent), MPI_Isendrecv and
! MPI_Isendrecv_replace, MPI_Comm_idup, MPI_Comm_split_type with MPI_COMM_TYPE_HW_GUIDED,
! MPI_Pack_external / Unpack_external / Pack_external_size, datatype keyvals and
! attributes, MPI_Type_match_size, MPI_Type_create_f90_integer and MPI_Info_create_env.
! Every rank talks to its ring neighbours (on one rank, with itself). Rank 0 prints 'OK mpi4'.
program mpi4
    use mpi
    implicit none
    integer :: rank, np, right, left, provided, ierr
    integer :: ring, dup, hw

    call MPI_Init_thread(MPI_THREAD_MULTIPLE, provided, ierr)
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
    call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
    call check(provided == MPI_THREAD_MULTIPLE, 'init_thread provided MULTIPLE')
    right = mod(rank + 1, np)
    left = mod(rank + np - 1, np)

    call partitioned()
    call MPI_Cart_create(MPI_COMM_WORLD, 1, [np], [.true.], .false., ring, ierr)
    call neighbors(ring)
    call MPI_Comm_free(ring, ierr)
    call send_receive()
    call communicators()
    call external32()
    call type_attributes()
    call environment()

    call MPI_Finalize(ierr)
    if (rank == 0) print '(A)', 'OK mpi4'

contains

    subroutine partitioned()
        integer, parameter :: parts = 4, per = 3
        integer, asynchronous :: sendbuf(parts * per), recvbuf(parts * per)
        integer :: requests(2)
        integer(kind=MPI_COUNT_KIND) :: count
        integer :: round, i, spins
        logical :: arrived
        double precision :: t0

        count = per
        call MPI_Psend_init(sendbuf, parts, count, MPI_INTEGER, right, 5, MPI_COMM_WORLD, &
                            MPI_INFO_NULL, requests(1), ierr)
        call MPI_Precv_init(recvbuf, parts, count, MPI_INTEGER, left, 5, MPI_COMM_WORLD, &
                            MPI_INFO_NULL, requests(2), ierr)
        do round = 1, 3
            sendbuf = [(1000 * rank + 100 * round + i, i = 1, parts * per)]
            recvbuf = -1
            call MPI_F_sync_reg(sendbuf)
            call MPI_F_sync_reg(recvbuf)
            call MPI_Startall(2, requests, ierr)
            call MPI_Pready(0, requests(1), ierr)
            call MPI_Pready_range(1, 2, requests(1), ierr)
            call MPI_Pready_list(1, [3], requests(1), ierr)
            ! Partition 0 arrives on its own; bounded by count and time.
            arrived = .false.
            t0 = MPI_Wtime()
            do spins = 1, 10000000
                call MPI_Parrived(requests(2), 0, arrived, ierr)
                if (arrived .or. MPI_Wtime() - t0 > 30.0d0) exit
            end do
            call check(arrived, 'parrived(0)')
            call MPI_Waitall(2, requests, MPI_STATUSES_IGNORE, ierr)
            call MPI_F_sync_reg(recvbuf)
            call check(all(recvbuf == [(1000 * left + 100 * round + i, i = 1, parts * per)]), &
                       'partitioned data')
        end do
        call MPI_Request_free(requests(1), ierr)
        call MPI_Request_free(requests(2), ierr)
        call check(requests(1) == MPI_REQUEST_NULL, 'partitioned request freed')
    end subroutine partitioned

    subroutine neighbors(ring)
        integer, intent(in) :: ring
        integer, asynchronous :: sendbuf(2), recvbuf(2), mine(1)
        integer :: round
        integer :: request

        ! Block 1 goes to the -1 neighbour, block 2 to the +1 neighbour; a neighbour met
        ! twice (1 or 2 ranks) pairs block k with the other block, as MPI 4.0 says.
        sendbuf = [100 * rank + 1, 100 * rank + 2]
        recvbuf = -1
        call MPI_Neighbor_alltoall(sendbuf, 1, MPI_INTEGER, recvbuf, 1, MPI_INTEGER, ring, ierr)
        call check(all(recvbuf == [100 * left + 2, 100 * right + 1]), 'neighbor_alltoall')

        mine = rank
        recvbuf = -1
        call MPI_Ineighbor_allgather(mine, 1, MPI_INTEGER, recvbuf, 1, MPI_INTEGER, ring, &
                                     request, ierr)
        call MPI_Wait(request, MPI_STATUS_IGNORE, ierr)
        call check(all(recvbuf == [left, right]), 'ineighbor_allgather')

        call MPI_Neighbor_alltoall_init(sendbuf, 1, MPI_INTEGER, recvbuf, 1, MPI_INTEGER, &
                                        ring, MPI_INFO_NULL, request, ierr)
        do round = 1, 3
            sendbuf = [100 * rank + 10 * round + 1, 100 * rank + 10 * round + 2]
            recvbuf = -1
            ! The buffers change between starts: MPI_F_sync_reg keeps the compiler from
            ! moving those stores past MPI_Start or the loads before MPI_Wait.
            call MPI_F_sync_reg(sendbuf)
            call MPI_F_sync_reg(recvbuf)
            call MPI_Start(request, ierr)
            call MPI_Wait(request, MPI_STATUS_IGNORE, ierr)
            call MPI_F_sync_reg(recvbuf)
            call check(all(recvbuf == [100 * left + 10 * round + 2, &
                                       100 * right + 10 * round + 1]), 'neighbor_alltoall_init')
        end do
        call MPI_Request_free(request, ierr)
    end subroutine neighbors

    subroutine send_receive()
        integer :: out(3), in(3), both(3), n
        integer :: request
        integer :: status(MPI_STATUS_SIZE)

        out = [rank, rank + 1, rank + 2]
        in = -1
        call MPI_Isendrecv(out, 3, MPI_INTEGER, right, 7, in, 3, MPI_INTEGER, left, 7, &
                           MPI_COMM_WORLD, request, ierr)
        call MPI_Wait(request, status, ierr)
        call check(all(in == [left, left + 1, left + 2]), 'isendrecv data')
        call check(status(MPI_SOURCE) == left .and. status(MPI_TAG) == 7, 'isendrecv status')
        call MPI_Get_count(status, MPI_INTEGER, n, ierr)
        call check(n == 3, 'isendrecv count')

        both = [10 * rank, 10 * rank + 1, 10 * rank + 2]
        call MPI_Isendrecv_replace(both, 3, MPI_INTEGER, right, 8, left, 8, MPI_COMM_WORLD, &
                                   request, ierr)
        call MPI_Wait(request, MPI_STATUS_IGNORE, ierr)
        call check(all(both == [10 * left, 10 * left + 1, 10 * left + 2]), 'isendrecv_replace')
    end subroutine send_receive

    subroutine communicators()
        integer :: request
        integer :: info
        integer :: result, sum, hwsize

        call MPI_Comm_idup(MPI_COMM_WORLD, dup, request, ierr)
        call MPI_Wait(request, MPI_STATUS_IGNORE, ierr)
        call MPI_Comm_compare(MPI_COMM_WORLD, dup, result, ierr)
        call check(result == MPI_CONGRUENT, 'comm_idup congruent')
        call MPI_Allreduce(rank, sum, 1, MPI_INTEGER, MPI_SUM, dup, ierr)
        call check(sum == np * (np - 1) / 2, 'allreduce on the idup')
        call MPI_Comm_free(dup, ierr)

        ! Every rank of a job on one host shares the machine: one communicator of all.
        call MPI_Info_create(info, ierr)
        call MPI_Info_set(info, 'mpi_hw_resource_type', 'mpi_shared_memory', ierr)
        call MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, 0, info, hw, ierr)
        call MPI_Info_free(info, ierr)
        call check(hw /= MPI_COMM_NULL, 'split_type hw_guided')
        call MPI_Comm_size(hw, hwsize, ierr)
        call check(hwsize == np, 'split_type hw_guided size')
        call MPI_Comm_free(hw, ierr)
    end subroutine communicators

    subroutine external32()
        integer :: values(3), back(3)
        character(len=1) :: packed(64)
        integer(kind=MPI_ADDRESS_KIND) :: size, position

        values = [1, -2, 16909060]
        call MPI_Pack_external_size('external32', 3, MPI_INTEGER, size, ierr)
        call check(size == 12, 'pack_external_size')
        position = 0
        call MPI_Pack_external('external32', values, 3, MPI_INTEGER, packed, 64_MPI_ADDRESS_KIND, &
                               position, ierr)
        call check(position == 12, 'pack_external position')
        ! external32 is big-endian: 16909060 = 0x01020304.
        call check(all(ichar(packed(9:12)) == [1, 2, 3, 4]), 'external32 bytes')
        call check(all(ichar(packed(5:8)) == [255, 255, 255, 254]), 'external32 of -2')
        back = 0
        position = 0
        call MPI_Unpack_external('external32', packed, 64_MPI_ADDRESS_KIND, position, back, 3, &
                                 MPI_INTEGER, ierr)
        call check(all(back == values), 'unpack_external')
    end subroutine external32

    subroutine type_attributes()
        integer :: keyval
        integer(kind=MPI_ADDRESS_KIND) :: value, extra
        logical :: found
        integer :: pair, matched, f90int

        extra = 0
        call MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, MPI_TYPE_NULL_DELETE_FN, keyval, extra, ierr)
        call MPI_Type_contiguous(2, MPI_INTEGER, pair, ierr)
        value = 4242
        call MPI_Type_set_attr(pair, keyval, value, ierr)
        value = 0
        call MPI_Type_get_attr(pair, keyval, value, found, ierr)
        call check(found .and. value == 4242, 'type_get_attr')
        call MPI_Type_delete_attr(pair, keyval, ierr)
        call MPI_Type_get_attr(pair, keyval, value, found, ierr)
        call check(.not. found, 'type_delete_attr')
        call MPI_Type_free(pair, ierr)
        call MPI_Type_free_keyval(keyval, ierr)

        call MPI_Type_match_size(MPI_TYPECLASS_REAL, 8, matched, ierr)
        call check(matched == MPI_DOUBLE_PRECISION .or. matched == MPI_REAL8, 'type_match_size')
        call MPI_Type_create_f90_integer(9, f90int, ierr)
        call check(f90int /= MPI_DATATYPE_NULL, 'type_create_f90_integer')
    end subroutine type_attributes

    subroutine environment()
        integer :: env
        integer :: nkeys, nenv

        call MPI_Info_create_env(env, ierr)
        call MPI_Info_get_nkeys(env, nkeys, ierr)
        call MPI_Info_get_nkeys(MPI_INFO_ENV, nenv, ierr)
        call check(nkeys == nenv .and. nkeys > 0, 'info_create_env keys')
        call MPI_Info_free(env, ierr)
    end subroutine environment

    subroutine check(cond, what)
        logical, intent(in) :: cond
        character(len=*), intent(in) :: what
        if (.not. cond) then
            print '(A,A,A,I3)', 'FAIL mpi4: ', what, ' rank', rank
            call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
        end if
    end subroutine check
end program mpi4
