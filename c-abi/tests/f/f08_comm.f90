! mpi_f08 communicators and groups: MPI_Comm_dup and MPI_Comm_compare (MPI_CONGRUENT),
! == / /= on communicators and groups, MPI_Comm_split by parity, MPI_Comm_group,
! MPI_Group_incl, MPI_Group_translate_ranks, MPI_Comm_create (MPI_COMM_NULL outside the
! group), names, attributes with f08 copy callbacks (MPI_COMM_DUP_FN, MPI_COMM_NULL_COPY_FN),
! a periodic MPI_Cart_create (LOGICAL arrays) with MPI_Cart_shift, frees leaving the null
! handles. Rank 0 prints 'OK f08_comm'.
program f08_comm
    use mpi_f08
    implicit none
    integer :: rank, np, i, result, sub_rank, sub_size, n, key_dup, key_none, ierror
    integer :: first_half, dims(1), src, dst
    integer, allocatable :: ranks(:), translated(:)
    type(MPI_Comm) :: dup, split, created, dup2, cart
    type(MPI_Group) :: world_group, half_group
    character(len=MPI_MAX_OBJECT_NAME) :: name
    integer(kind=MPI_ADDRESS_KIND) :: value
    logical :: flag, periods(1)

    call MPI_Init()
    call MPI_Comm_rank(MPI_COMM_WORLD, rank)
    call MPI_Comm_size(MPI_COMM_WORLD, np)

    call MPI_Comm_dup(MPI_COMM_WORLD, dup)
    call check(dup /= MPI_COMM_WORLD .and. dup /= MPI_COMM_NULL, 'dup is new')
    call MPI_Comm_compare(dup, MPI_COMM_WORLD, result)
    call check(result == MPI_CONGRUENT, 'compare congruent')
    call MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_WORLD, result)
    call check(result == MPI_IDENT, 'compare ident')
    call MPI_Comm_set_name(dup, 'my duplicate')
    call MPI_Comm_get_name(dup, name, n)
    call check(name(1:n) == 'my duplicate', 'comm name')

    ! Split by parity.
    call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), rank, split)
    call MPI_Comm_rank(split, sub_rank)
    call MPI_Comm_size(split, sub_size)
    call check(sub_rank == rank / 2 .and. sub_size == (np + 1 - mod(rank, 2)) / 2, 'split')

    ! The first half of the ranks as a group, and a communicator of it.
    first_half = max(1, np / 2)
    call MPI_Comm_group(MPI_COMM_WORLD, world_group)
    allocate(ranks(first_half), translated(first_half))
    ranks = [(i, i = 0, first_half - 1)]
    call MPI_Group_incl(world_group, first_half, ranks, half_group)
    call check(half_group /= world_group, 'group /=')
    call MPI_Group_translate_ranks(half_group, first_half, ranks, world_group, translated)
    call check(all(translated == ranks), 'translate ranks')
    call MPI_Comm_create(MPI_COMM_WORLD, half_group, created)
    if (rank < first_half) then
        call check(created /= MPI_COMM_NULL, 'created member')
        call MPI_Comm_size(created, n)
        call check(n == first_half, 'created size')
        call MPI_Comm_free(created)
    else
        call check(created == MPI_COMM_NULL, 'created non-member')
    end if
    call MPI_Group_free(half_group)
    call MPI_Group_free(world_group)
    call check(world_group == MPI_GROUP_NULL, 'group_free')

    ! Attributes: one copied on dup, one not.
    call MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, key_dup, 0_MPI_ADDRESS_KIND)
    call MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, key_none, &
                                0_MPI_ADDRESS_KIND, ierror)
    call check(ierror == MPI_SUCCESS, 'create_keyval')
    call MPI_Comm_set_attr(dup, key_dup, 1234_MPI_ADDRESS_KIND)
    call MPI_Comm_set_attr(dup, key_none, 99_MPI_ADDRESS_KIND)
    call MPI_Comm_dup(dup, dup2)
    call MPI_Comm_get_attr(dup2, key_dup, value, flag)
    call check(flag .and. value == 1234, 'dup_fn copied')
    call MPI_Comm_get_attr(dup2, key_none, value, flag)
    call check(.not. flag, 'null_copy_fn not copied')
    call MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, value, flag)
    call check(flag .and. value >= 32767, 'MPI_TAG_UB')
    call MPI_Comm_free(dup2)
    call MPI_Comm_free_keyval(key_dup)
    call MPI_Comm_free_keyval(key_none)

    ! A periodic ring as a Cartesian communicator.
    dims = np
    periods = .true.
    call MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, .false., cart)
    call MPI_Cart_shift(cart, 0, 1, src, dst)
    call check(src == mod(rank + np - 1, np) .and. dst == mod(rank + 1, np), 'cart_shift')
    call MPI_Comm_free(cart)

    call MPI_Comm_free(split)
    call MPI_Comm_free(dup)
    call check(dup == MPI_COMM_NULL .and. split == MPI_COMM_NULL, 'comm_free')
    call MPI_Finalize()
    if (rank == 0) print '(A)', 'OK f08_comm'

contains

    subroutine check(cond, what)
        logical, intent(in) :: cond
        character(len=*), intent(in) :: what
        if (.not. cond) then
            print '(A,A,A,I3)', 'FAIL f08_comm: ', what, ' rank', rank
            call MPI_Abort(MPI_COMM_WORLD, 1)
        end if
    end subroutine check
end program f08_comm
