! Sessions and a datatype attribute through the generated Fortran bindings (use mpi):
! MPI_SESSION_INIT with MPI_ERRORS_RETURN, MPI_SESSION_GET_NUM_PSETS and
! MPI_SESSION_GET_NTH_PSET (a CHARACTER output), MPI_GROUP_FROM_SESSION_PSET,
! MPI_COMM_CREATE_FROM_GROUP (a CHARACTER string tag) and an allreduce on the new
! communicator; an unknown process set returns MPI_ERR_ARG; a type keyval with
! MPI_TYPE_DUP_FN and MPI_TYPE_NULL_DELETE_FN, an attribute copied by MPI_TYPE_DUP;
! MPI_TYPE_CREATE_F90_REAL; MPI_SESSION_FINALIZE (no MPI_INIT).
! Rank 0 prints 'OK session_f'.
program session_f
  use mpi
  implicit none
  integer :: session, ierr, npsets, i, plen, grp, comm, rank, nranks, total, eclass
  integer :: keyval, vec, dup, r8, tsize
  integer(kind=MPI_ADDRESS_KIND) :: val, extra
  logical :: flag, seen_world
  character(len=MPI_MAX_PSET_NAME_LEN) :: pname

  call MPI_SESSION_INIT(MPI_INFO_NULL, MPI_ERRORS_RETURN, session, ierr)
  call check(ierr == MPI_SUCCESS, 'session_init')
  call MPI_SESSION_GET_NUM_PSETS(session, MPI_INFO_NULL, npsets, ierr)
  call check(ierr == MPI_SUCCESS .and. npsets >= 2, 'get_num_psets')
  seen_world = .false.
  do i = 0, npsets - 1
    plen = len(pname)
    call MPI_SESSION_GET_NTH_PSET(session, MPI_INFO_NULL, i, plen, pname, ierr)
    call check(ierr == MPI_SUCCESS, 'get_nth_pset')
    if (trim(pname) == 'mpi://WORLD') seen_world = .true.
  end do
  call check(seen_world, 'mpi://WORLD listed')

  call MPI_GROUP_FROM_SESSION_PSET(session, 'mpi://NO_SUCH_SET', grp, ierr)
  call MPI_ERROR_CLASS(ierr, eclass, i)
  call check(eclass == MPI_ERR_ARG, 'unknown pset is MPI_ERR_ARG')

  call MPI_GROUP_FROM_SESSION_PSET(session, 'mpi://WORLD', grp, ierr)
  call check(ierr == MPI_SUCCESS, 'group_from_session_pset')
  call MPI_COMM_CREATE_FROM_GROUP(grp, 'session_f.tag', MPI_INFO_NULL, &
       MPI_ERRORS_RETURN, comm, ierr)
  call check(ierr == MPI_SUCCESS, 'comm_create_from_group')
  call MPI_GROUP_FREE(grp, ierr)
  call MPI_COMM_RANK(comm, rank, ierr)
  call MPI_COMM_SIZE(comm, nranks, ierr)
  call MPI_ALLREDUCE(rank + 1, total, 1, MPI_INTEGER, MPI_SUM, comm, ierr)
  call check(total == nranks * (nranks + 1) / 2, 'allreduce on the session communicator')

  ! A type attribute copied by MPI_TYPE_DUP through MPI_TYPE_DUP_FN.
  extra = 0
  call MPI_TYPE_CREATE_KEYVAL(MPI_TYPE_DUP_FN, MPI_TYPE_NULL_DELETE_FN, keyval, extra, ierr)
  call check(ierr == MPI_SUCCESS, 'type_create_keyval')
  call MPI_TYPE_CONTIGUOUS(3, MPI_INTEGER, vec, ierr)
  val = 123456789012_MPI_ADDRESS_KIND
  call MPI_TYPE_SET_ATTR(vec, keyval, val, ierr)
  call check(ierr == MPI_SUCCESS, 'type_set_attr')
  call MPI_TYPE_DUP(vec, dup, ierr)
  val = 0
  call MPI_TYPE_GET_ATTR(dup, keyval, val, flag, ierr)
  call check(flag .and. val == 123456789012_MPI_ADDRESS_KIND, 'attribute copied by dup')
  call MPI_TYPE_DELETE_ATTR(dup, keyval, ierr)
  call MPI_TYPE_GET_ATTR(dup, keyval, val, flag, ierr)
  call check(.not. flag, 'type_delete_attr')
  call MPI_TYPE_FREE(dup, ierr)
  call MPI_TYPE_FREE(vec, ierr)
  call MPI_TYPE_FREE_KEYVAL(keyval, ierr)
  call check(keyval == MPI_KEYVAL_INVALID, 'type_free_keyval')

  call MPI_TYPE_CREATE_F90_REAL(12, MPI_UNDEFINED, r8, ierr)
  call MPI_TYPE_SIZE(r8, tsize, ierr)
  call check(ierr == MPI_SUCCESS .and. tsize == 8, 'create_f90_real(12) is 8 bytes')

  call MPI_BARRIER(comm, ierr)
  if (rank == 0) print '(A)', 'OK session_f'
  call MPI_COMM_FREE(comm, ierr)
  call MPI_SESSION_FINALIZE(session, ierr)
  call check(ierr == MPI_SUCCESS .and. session == MPI_SESSION_NULL, 'session_finalize')

contains

  subroutine check(cond, what)
    logical, intent(in) :: cond
    character(len=*), intent(in) :: what
    integer :: ierr2
    if (.not. cond) then
      print '(A,A)', 'FAIL session_f: ', what
      call MPI_ABORT(MPI_COMM_WORLD, 1, ierr2)
    end if
  end subroutine check

end program session_f
