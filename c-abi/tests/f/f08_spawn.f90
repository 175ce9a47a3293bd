! mpi_f08 spawn: MPI_Comm_spawn and MPI_Comm_spawn_multiple from Fortran 2008, children being
! this same program. The parents (any number; rank 0 the root) spawn
!   1. two children with argv = 'single', '  two words  ', 'x', blank (the blank row ends the
!      list; leading and trailing blanks go), array_of_errcodes checked;
!   2. with MPI_Comm_spawn_multiple, one child of command 1 and two of command 2, with
!      array_of_argv(2, 3): (1, :) = 'multi', 'first', blank; (2, :) = 'multi', 'second',
!      blank, and MPI_ERRCODES_IGNORE: each child checks MPI_APPNUM (0 or 1) against its
!      second argument;
!   3. one child with MPI_ARGV_NULL, which sees no argument.
! Non-root parents pass other strings (not significant there). Each child checks its command
! line with GET_COMMAND_ARGUMENT, finds its parents with MPI_Comm_get_parent, and exchanges
! 1000 integers both ways with every parent over the intercommunicator (values naming both
! sides and the spawn), then both sides disconnect. Parent rank 0 prints 'OK f08_spawn'.
program f08_spawn
    use mpi_f08
    implicit none
    integer, parameter :: n = 1000
    integer :: rank, np
    type(MPI_Comm) :: parent

    call MPI_Init()
    call MPI_Comm_rank(MPI_COMM_WORLD, rank)
    call MPI_Comm_size(MPI_COMM_WORLD, np)
    call MPI_Comm_get_parent(parent)
    if (parent == MPI_COMM_NULL) then
        call parents()
    else
        call child(parent)
    end if
    call MPI_Finalize()

contains

    subroutine parents()
        character(len=20) :: argv(4), argvs(2, 3)
        character(len=512) :: self
        integer :: errcodes(2), maxprocs(2)
        type(MPI_Info) :: infos(2)
        type(MPI_Comm) :: inter

        call get_command_argument(0, self)
        ! 1. MPI_Comm_spawn with an argument list.
        if (rank == 0) then
            argv(1) = 'single'
            argv(2) = '  two words  '
            argv(3) = 'x'
            argv(4) = ' '
        else
            argv = 'not significant here'
        end if
        errcodes = -1
        call MPI_Comm_spawn(self, argv, 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD, inter, errcodes)
        call check(all(errcodes == MPI_SUCCESS), 'spawn errcodes')
        call exchange_with_children(inter, 1, 2)

        ! 2. MPI_Comm_spawn_multiple: two commands, array_of_argv(i, j).
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

        ! 3. MPI_ARGV_NULL.
        call MPI_Comm_spawn(self, MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0, MPI_COMM_WORLD, inter, &
            MPI_ERRCODES_IGNORE)
        call exchange_with_children(inter, 3, 1)
        call MPI_Barrier(MPI_COMM_WORLD)
        if (rank == 0) print '(A)', 'OK f08_spawn'
    end subroutine

    ! MPI_Comm_spawn_multiple of `self` twice (commands as long as the path needs).
    subroutine spawn_multiple(self, argvs, maxprocs, infos, inter)
        character(len=*), intent(in) :: self
        character(len=*), intent(in) :: argvs(2, 3)
        integer, intent(in) :: maxprocs(2)
        type(MPI_Info), intent(in) :: infos(2)
        type(MPI_Comm), intent(out) :: inter
        character(len=len_trim(self)) :: commands(2)
        integer :: ierror
        commands = self
        call MPI_Comm_spawn_multiple(2, commands, argvs, maxprocs, infos, 0, MPI_COMM_WORLD, &
            inter, MPI_ERRCODES_IGNORE, ierror)
        call check(ierror == MPI_SUCCESS, 'spawn_multiple ierror')
    end subroutine

    ! Every parent and child swap n integers; then disconnect.
    subroutine exchange_with_children(inter, spawn, children)
        type(MPI_Comm), intent(inout) :: inter
        integer, intent(in) :: spawn, children
        integer :: remote, c, i, out(n), in(n)
        call MPI_Comm_remote_size(inter, remote)
        call check(remote == children, 'remote size')
        do c = 0, remote - 1
            out = [(value(spawn, 1, rank, c, i), i = 1, n)]
            call MPI_Sendrecv(out, n, MPI_INTEGER, c, spawn, in, n, MPI_INTEGER, c, spawn, inter, &
                MPI_STATUS_IGNORE)
            call check(all(in == [(value(spawn, 2, c, rank, i), i = 1, n)]), 'data from a child')
        end do
        call MPI_Comm_disconnect(inter)
        call check(inter == MPI_COMM_NULL, 'disconnect')
    end subroutine

    ! The i-th value from side `from` (1 parents, 2 children) rank a to rank b in spawn s.
    pure integer function value(s, from, a, b, i)
        integer, intent(in) :: s, from, a, b, i
        value = s * 10000000 + from * 1000000 + a * 100000 + b * 10000 + i
    end function

    subroutine child(parent)
        type(MPI_Comm), intent(inout) :: parent
        character(len=64) :: arg
        integer :: nargs, spawn, remote, p, i, out(n), in(n)
        integer(kind=MPI_ADDRESS_KIND) :: appnum
        logical :: flag

        nargs = command_argument_count()
        call MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, appnum, flag)
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
        call MPI_Comm_remote_size(parent, remote)
        do p = 0, remote - 1
            out = [(value(spawn, 2, rank, p, i), i = 1, n)]
            call MPI_Sendrecv(out, n, MPI_INTEGER, p, spawn, in, n, MPI_INTEGER, p, spawn, parent, &
                MPI_STATUS_IGNORE)
            call check(all(in == [(value(spawn, 1, p, rank, i), i = 1, n)]), 'data from a parent')
        end do
        call MPI_Comm_disconnect(parent)
    end subroutine

    subroutine check(cond, what)
        logical, intent(in) :: cond
        character(len=*), intent(in) :: what
        if (.not. cond) then
            print '(A,A,A,I3)', 'FAIL f08_spawn: ', what, ' rank', rank
            call MPI_Abort(MPI_COMM_WORLD, 1)
        end if
    end subroutine

end program f08_spawn
