! mpi_f08 derived datatypes: a vector (a matrix row) committed and sent, MPI_Type_size and
! MPI_Type_get_extent (INTEGER(MPI_ADDRESS_KIND)), names, a struct of a derived type built
! with MPI_Get_address and sent from/received into MPI_BOTTOM (MPI_F_sync_reg after the
! receive), MPI_Pack/MPI_Unpack (position INOUT),
! MPI_Type_free leaving MPI_DATATYPE_NULL. Rank 0 prints 'OK f08_types'.
program f08_types
    use mpi_f08
    implicit none
    type :: particle
        sequence
        integer :: id
        double precision :: x(3)
    end type particle
    integer :: rank, np, right, left, i, j, size, position, n, ierror
    double precision :: a(4, 5), row(5)
    integer(kind=MPI_ADDRESS_KIND) :: lb, extent, base, addr(2), raddr(2)
    type(MPI_Datatype) :: row_type, particle_type, received_type, types(2)
    type(particle) :: mine, theirs
    character(len=MPI_MAX_OBJECT_NAME) :: name
    character(len=64) :: packed
    integer :: blocklengths(2), unpacked(3)

    call MPI_Init()
    call MPI_Comm_rank(MPI_COMM_WORLD, rank)
    call MPI_Comm_size(MPI_COMM_WORLD, np)
    right = mod(rank + 1, np)
    left = mod(rank + np - 1, np)

    ! Row 2 of a 4x5 column-major matrix: 5 blocks of 1 with stride 4.
    call MPI_Type_vector(5, 1, 4, MPI_DOUBLE_PRECISION, row_type)
    call MPI_Type_commit(row_type)
    call MPI_Type_size(row_type, size)
    call MPI_Type_get_extent(row_type, lb, extent)
    call check(size == 40 .and. lb == 0 .and. extent == (4 * 4 + 1) * 8, 'vector size/extent')
    call MPI_Type_set_name(row_type, 'matrix row')
    call MPI_Type_get_name(row_type, name, n)
    call check(name(1:n) == 'matrix row' .and. n == 10, 'type name')
    a = reshape([((dble(rank * 1000 + 10 * i + j), i = 1, 4), j = 1, 5)], [4, 5])
    call MPI_Sendrecv(a(2, 1), 1, row_type, right, 1, row, 5, MPI_DOUBLE_PRECISION, left, 1, &
                      MPI_COMM_WORLD, MPI_STATUS_IGNORE)
    call check(all(row == [(dble(left * 1000 + 20 + j), j = 1, 5)]), 'row received')
    call MPI_Type_free(row_type)
    call check(row_type == MPI_DATATYPE_NULL, 'type_free')

    ! Structs at absolute addresses, sent from and received into MPI_BOTTOM.
    mine%id = rank
    mine%x = [rank + 0.5d0, rank + 1.5d0, rank + 2.5d0]
    call MPI_Get_address(mine%id, addr(1))
    call MPI_Get_address(mine%x, addr(2))
    call MPI_Get_address(mine, base)
    call check(addr(1) == base, 'get_address')
    blocklengths = [1, 3]
    types = [MPI_INTEGER, MPI_DOUBLE_PRECISION]
    call MPI_Type_create_struct(2, blocklengths, addr, types, particle_type)
    call MPI_Type_commit(particle_type)
    theirs%id = -1
    theirs%x = 0
    call MPI_Get_address(theirs%id, raddr(1))
    call MPI_Get_address(theirs%x, raddr(2))
    call MPI_Type_create_struct(2, blocklengths, raddr, types, received_type)
    call MPI_Type_commit(received_type)
    call MPI_Sendrecv(MPI_BOTTOM, 1, particle_type, right, 2, MPI_BOTTOM, 1, received_type, &
                      left, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
    ! theirs was written through MPI_BOTTOM, which the compiler cannot see: make it reload.
    call MPI_F_sync_reg(theirs)
    call check(theirs%id == left, 'struct from MPI_BOTTOM: id')
    call check(all(theirs%x == [left + 0.5d0, left + 1.5d0, left + 2.5d0]), 'struct: x')
    call MPI_Type_free(particle_type)
    call MPI_Type_free(received_type)

    ! Pack three integers, unpack them.
    position = 0
    call MPI_Pack([rank, 2, 3], 3, MPI_INTEGER, packed, len(packed), position, MPI_COMM_WORLD)
    call check(position == 12, 'pack position')
    position = 0
    call MPI_Unpack(packed, len(packed), position, unpacked, 3, MPI_INTEGER, MPI_COMM_WORLD, ierror)
    call check(ierror == MPI_SUCCESS .and. all(unpacked == [rank, 2, 3]), 'unpack')

    call MPI_Finalize()
    if (rank == 0) print '(A)', 'OK f08_types'

contains

    subroutine check(cond, what)
        logical, intent(in) :: cond
        character(len=*), intent(in) :: what
        if (.not. cond) then
            print '(A,A,A,I3)', 'FAIL f08_types: ', what, ' rank', rank
            call MPI_Abort(MPI_COMM_WORLD, 1)
        end if
    end subroutine check
end program f08_types
