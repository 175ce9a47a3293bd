! use mpi spawn: MPI_COMM_SPAWN and MPI_COMM_SPAWN_MULTIPLE through the mpi module's explicit
! interfaces, children being this same program. As f08_spawn.f90: the parents (rank 0 the
! root) spawn
!   1. two children with ARGV = 'single', '  two words  ', 'x', blank, ARRAY_OF_ERRCODES
!      checked;
!   2. with MPI_COMM_SPAWN_MULTIPLE, one child of command 1 and two of command 2, with
!      ARRAY_OF_ARGV(2, 3) ('multi', 'first' / 'multi', 'second', each ended by a blank) and
!      MPI_ERRCODES_IGNORE; each child checks MPI_APPNUM against its second argument;
!   3. one child with MPI_ARGV_NULL.
! Children check GET_COMMAND_ARGUMENT, MPI_COMM_GET_PARENT, and swap 1000 integers with every
! parent; both sides disconnect. Parent rank 0 prints 'OK spawn_f'.
program spawn_f
    use mpi
    implicit none
    integer, parameter :: n = 1000
    integer :: rank, np, parent, ierr

    call MPI_INIT(ierr)
    call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
    call MPI_COMM_SIZE(MPI_COMM_WORLD, np, ierr)
    call MPI_COMM_GET_PARENT(parent, ierr)
    if (parent == MPI_COMM_NULL) then
        call parents()
    else
        call child(parent)
    end if
    call MPI_FINALIZE(ierr)

contains

    subroutine parents()
        character(len=20) :: argv(4), argvs(2, 3)
        character(len=512) :: self
        integer :: errcodes(2), maxprocs(2), infos(2), inter

        call get_command_argument(0, self)
        if (rank == 0) then
            argv(1) = 'single'
            argv(2) = '  two words  '
            argv(3) = 'x'
            argv(4) = ' '
        else
            argv = 'not significant here'
        end if
        errcodes = -1
        call MPI_COMM_SPAWN(self, argv, 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD, inter, errcodes, &
            ierr)
        call check(ierr == MPI_SUCCESS .and. all(errcodes == MPI_SUCCESS), 'spawn errcodes')
        call exchange_with_children(inter, 1, 2)

        argvs(1, 1) = 'multi'
        argvs(1, 2) = 'first'
        argvs(1, 3) = ' '
        argvs(2, 1) = 'multi'
        argvs(2, 2) = 'second'
        argvs(2, 3) = ' '
        maxprocs = [1, 2]
        infos = MPI_INFO_NULL
        call spawn_multiple(self, argvs, maxprocs, infos, inter)
        call exchange_with_children(inter, 2, 3)

        call MPI_COMM_SPAWN(self, MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0, MPI_COMM_WORLD, inter, &
            MPI_ERRCODES_IGNORE, ierr)
        call check(ierr == MPI_SUCCESS, 'spawn with MPI_ARGV_NULL')
        call exchange_with_children(inter, 3, 1)
        call MPI_BARRIER(MPI_COMM_WORLD, ierr)
        if (rank == 0) print '(A)', 'OK spawn_f'
    end subroutine

    subroutine spawn_multiple(self, argvs, maxprocs, infos, inter)
        character(len=*), intent(in) :: self
        character(len=*), intent(in) :: argvs(2, 3)
        integer, intent(in) :: maxprocs(2), infos(2)
        integer, intent(out) :: inter
        character(len=len_trim(self)) :: commands(2)
        commands = self
        call MPI_COMM_SPAWN_MULTIPLE(2, commands, argvs, maxprocs, infos, 0, MPI_COMM_WORLD, &
            inter, MPI_ERRCODES_IGNORE, ierr)
        call check(ierr == MPI_SUCCESS, 'spawn_multiple')
    end subroutine

    subroutine exchange_with_children(inter, spawn, children)
        integer, intent(inout) :: inter
        integer, intent(in) :: spawn, children
        integer :: remote, c, i, out(n), in(n)
        call MPI_COMM_REMOTE_SIZE(inter, remote, ierr)
        call check(remote == children, 'remote size')
        do c = 0, remote - 1
            out = [(value(spawn, 1, rank, c, i), i = 1, n)]
            call MPI_SENDRECV(out, n, MPI_INTEGER, c, spawn, in, n, MPI_INTEGER, c, spawn, &
                inter, MPI_STATUS_IGNORE, ierr)
            call check(all(in == [(value(spawn, 2, c, rank, i), i = 1, n)]), 'data from a child')
        end do
        call MPI_COMM_DISCONNECT(inter, ierr)
        call check(inter == MPI_COMM_NULL, 'disconnect')
    end subroutine

    pure integer function value(s, from, a, b, i)
        integer, intent(in) :: s, from, a, b, i
        value = s * 10000000 + from * 1000000 + a * 100000 + b * 10000 + i
    end function

    subroutine child(parent)
        integer, intent(inout) :: parent
        character(len=64) :: arg
        integer :: nargs, spawn, remote, p, i, out(n), in(n)
        integer(kind=MPI_ADDRESS_KIND) :: appnum
        logical :: flag

        nargs = command_argument_count()
        call MPI_COMM_GET_ATTR(MPI_COMM_WORLD, MPI_APPNUM, appnum, flag, ierr)
        call check(flag, 'MPI_APPNUM present')
        if (nargs == 0) then
            spawn = 3
            call check(np == 1 .and. appnum == 0, 'argv_null child')
        else
            call get_command_argument(1, arg)
            if (arg == 'single') then
                spawn = 1
                call check(nargs == 3, 'three arguments')
                call get_command_argument(2, arg)
                call check(arg == 'two words', 'blanks stripped: "' // trim(arg) // '"')
                call get_command_argument(3, arg)
                call check(arg == 'x', 'third argument')
                call check(np == 2 .and. appnum == 0, 'spawn world')
            else
                spawn = 2
                call check(arg == 'multi' .and. nargs == 2, 'multi arguments')
                call get_command_argument(2, arg)
                call check(np == 3, 'spawn_multiple world')
                if (appnum == 0) then
                    call check(arg == 'first' .and. rank == 0, 'command 1')
                else
                    call check(appnum == 1 .and. arg == 'second' .and. rank >= 1, 'command 2')
                end if
            end if
        end if
        call MPI_COMM_REMOTE_SIZE(parent, remote, ierr)
        do p = 0, remote - 1
            out = [(value(spawn, 2, rank, p, i), i = 1, n)]
            call MPI_SENDRECV(out, n, MPI_INTEGER, p, spawn, in, n, MPI_INTEGER, p, spawn, &
                parent, MPI_STATUS_IGNORE, ierr)
            call check(all(in == [(value(spawn, 1, p, rank, i), i = 1, n)]), 'data from a parent')
        end do
        call MPI_COMM_DISCONNECT(parent, ierr)
    end subroutine

    subroutine check(cond, what)
        logical, intent(in) :: cond
        character(len=*), intent(in) :: what
        if (.not. cond) then
            print '(A,A,A,I3)', 'FAIL spawn_f: ', what, ' rank', rank
            call MPI_ABORT(MPI_COMM_WORLD, 1, ierr)
        end if
    end subroutine

end program spawn_f
