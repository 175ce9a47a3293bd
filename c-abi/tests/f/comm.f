!     Communicators in Fortran 77: COMM_SPLIT, COMM_DUP with names
!     (CHARACTER arguments both ways), CART_CREATE / CART_SHIFT /
!     DIMS_CREATE, the MPI_TAG_UB attribute, processor name and error
!     strings. Rank 0 prints 'OK comm'.
      PROGRAM COMM
      IMPLICIT NONE
      INCLUDE 'mpif.h'
      CHARACTER*8 TNAME
      COMMON /MPITST/ TNAME
      INTEGER IERR, RANK, NP, HALF, HRANK, HSIZE, DUP, CART, I, N
      INTEGER DIMS(1), SRC, DST, CRANK, RESULT, ECLASS, IERR2
      LOGICAL PERIODS(1), FLAG, WEIGHTED
      INTEGER GRAPH, INDEG, OUTDEG, SRCS(1), DSTS(1)
      INTEGER(KIND=MPI_ADDRESS_KIND) TAGUB
      CHARACTER*(MPI_MAX_OBJECT_NAME) NAME
      CHARACTER*(MPI_MAX_PROCESSOR_NAME) HOST
      CHARACTER*(MPI_MAX_ERROR_STRING) TEXT
      INTEGER EH, NCALLS, LASTCODE
      COMMON /HANDLED/ NCALLS, LASTCODE
      EXTERNAL ONERROR

      TNAME = 'comm'
      CALL MPI_INIT(IERR)
      CALL MPI_COMM_RANK(MPI_COMM_WORLD, RANK, IERR)
      CALL MPI_COMM_SIZE(MPI_COMM_WORLD, NP, IERR)

!     Split by parity, reverse order within each half.
      CALL MPI_COMM_SPLIT(MPI_COMM_WORLD, MOD(RANK, 2), -RANK, HALF,
     &                    IERR)
      CALL CHECK(IERR .EQ. MPI_SUCCESS, 'split')
      CALL MPI_COMM_SIZE(HALF, HSIZE, IERR)
      CALL MPI_COMM_RANK(HALF, HRANK, IERR)
      N = (NP + 1 - MOD(RANK, 2)) / 2
      CALL CHECK(HSIZE .EQ. N, 'split size')
      CALL CHECK(HRANK .EQ. N - 1 - RANK / 2, 'split rank')
      CALL MPI_ALLREDUCE(RANK, I, 1, MPI_INTEGER, MPI_SUM, HALF, IERR)
      CALL CHECK(MOD(I - MOD(RANK, 2) * N, 2) .EQ. 0, 'split sum')
      CALL MPI_COMM_FREE(HALF, IERR)
      CALL CHECK(HALF .EQ. MPI_COMM_NULL, 'comm_free')

!     Names: set with trailing blanks, read back blank-padded.
      CALL MPI_COMM_DUP(MPI_COMM_WORLD, DUP, IERR)
      CALL MPI_COMM_COMPARE(DUP, MPI_COMM_WORLD, RESULT, IERR)
      CALL CHECK(RESULT .EQ. MPI_CONGRUENT, 'dup congruent')
      CALL MPI_COMM_SET_NAME(DUP, 'fortran dup   ', IERR)
      NAME = 'garbage'
      CALL MPI_COMM_GET_NAME(DUP, NAME, N, IERR)
      CALL CHECK(N .EQ. 11, 'name length')
      CALL CHECK(NAME .EQ. 'fortran dup', 'name text')
      CALL CHECK(NAME(12:12) .EQ. ' ', 'name padding')
      CALL MPI_COMM_GET_NAME(MPI_COMM_WORLD, NAME, N, IERR)
      CALL CHECK(NAME(1:N) .EQ. 'MPI_COMM_WORLD', 'world name')
      CALL MPI_COMM_FREE(DUP, IERR)

!     A periodic ring as a 1-D Cartesian topology.
      DIMS(1) = 0
      CALL MPI_DIMS_CREATE(NP, 1, DIMS, IERR)
      CALL CHECK(DIMS(1) .EQ. NP, 'dims_create')
      PERIODS(1) = .TRUE.
      CALL MPI_CART_CREATE(MPI_COMM_WORLD, 1, DIMS, PERIODS, .FALSE.,
     &                     CART, IERR)
      CALL CHECK(IERR .EQ. MPI_SUCCESS, 'cart_create')
      CALL MPI_COMM_RANK(CART, CRANK, IERR)
      CALL MPI_CART_SHIFT(CART, 0, 1, SRC, DST, IERR)
      CALL CHECK(SRC .EQ. MOD(CRANK + NP - 1, NP), 'shift source')
      CALL CHECK(DST .EQ. MOD(CRANK + 1, NP), 'shift dest')
      CALL MPI_SENDRECV(CRANK, 1, MPI_INTEGER, DST, 1, I, 1,
     &                  MPI_INTEGER, SRC, 1, CART, MPI_STATUS_IGNORE,
     &                  IERR)
      CALL CHECK(I .EQ. SRC, 'shift exchange')
      CALL MPI_COMM_FREE(CART, IERR)

!     The same ring as an unweighted distributed graph: MPI_UNWEIGHTED
!     must reach C as C's MPI_UNWEIGHTED.
      SRCS(1) = MOD(RANK + NP - 1, NP)
      DSTS(1) = MOD(RANK + 1, NP)
      CALL MPI_DIST_GRAPH_CREATE_ADJACENT(MPI_COMM_WORLD, 1, SRCS,
     &     MPI_UNWEIGHTED, 1, DSTS, MPI_UNWEIGHTED, MPI_INFO_NULL,
     &     .FALSE., GRAPH, IERR)
      CALL CHECK(IERR .EQ. MPI_SUCCESS, 'dist_graph_create_adjacent')
      CALL MPI_DIST_GRAPH_NEIGHBORS_COUNT(GRAPH, INDEG, OUTDEG,
     &     WEIGHTED, IERR)
      CALL CHECK(INDEG .EQ. 1 .AND. OUTDEG .EQ. 1, 'graph degrees')
      CALL CHECK(.NOT. WEIGHTED, 'graph unweighted')
      SRCS(1) = -1
      DSTS(1) = -1
      CALL MPI_DIST_GRAPH_NEIGHBORS(GRAPH, 1, SRCS, MPI_UNWEIGHTED, 1,
     &     DSTS, MPI_UNWEIGHTED, IERR)
      CALL CHECK(SRCS(1) .EQ. MOD(RANK + NP - 1, NP), 'graph source')
      CALL CHECK(DSTS(1) .EQ. MOD(RANK + 1, NP), 'graph dest')
      CALL MPI_COMM_FREE(GRAPH, IERR)

!     Errors returned, then handled by a Fortran subroutine.
      CALL MPI_COMM_DUP(MPI_COMM_WORLD, DUP, IERR)
      CALL MPI_COMM_SET_ERRHANDLER(DUP, MPI_ERRORS_RETURN, IERR)
      CALL MPI_SEND(I, 1, MPI_INTEGER, NP, 0, DUP, IERR)
      CALL MPI_ERROR_CLASS(IERR, ECLASS, IERR2)
      CALL CHECK(ECLASS .EQ. MPI_ERR_RANK, 'errors_return')
      CALL MPI_ERROR_STRING(IERR, TEXT, N, IERR2)
      CALL CHECK(IERR2 .EQ. MPI_SUCCESS .AND. N .GT. 0 .AND.
     &           INDEX(TEXT, 'rank') .GT. 0, 'returned error string')
      NCALLS = 0
      CALL MPI_COMM_CREATE_ERRHANDLER(ONERROR, EH, IERR)
      CALL MPI_COMM_SET_ERRHANDLER(DUP, EH, IERR)
      CALL MPI_SEND(I, 1, MPI_INTEGER, NP, 0, DUP, IERR)
      CALL CHECK(NCALLS .EQ. 1, 'fortran handler called')
      CALL CHECK(LASTCODE .EQ. MPI_ERR_RANK, 'fortran handler code')
      CALL MPI_ERRHANDLER_FREE(EH, IERR)
      CALL MPI_COMM_FREE(DUP, IERR)

!     A predefined attribute: the value itself, not a pointer to it.
      CALL MPI_COMM_GET_ATTR(MPI_COMM_WORLD, MPI_TAG_UB, TAGUB, FLAG,
     &                       IERR)
      CALL CHECK(FLAG, 'tag_ub present')
      CALL CHECK(TAGUB .GE. 32767 .AND. TAGUB .LT. 2147483648_8,
     &           'tag_ub value')

!     Output strings.
      CALL MPI_GET_PROCESSOR_NAME(HOST, N, IERR)
      CALL CHECK(N .GT. 0 .AND. HOST(N+1:N+1) .EQ. ' ', 'host name')
      CALL MPI_ERROR_STRING(MPI_ERR_RANK, TEXT, N, IERR)
      CALL CHECK(N .GT. 0 .AND. INDEX(TEXT, 'rank') .GT. 0,
     &           'error string')

      CALL MPI_FINALIZE(IERR)
      IF (RANK .EQ. 0) PRINT '(A)', 'OK comm'
      END

!     The error handler: counts its calls, keeps the error class.
      SUBROUTINE ONERROR(COMM, CODE)
      INCLUDE 'mpif.h'
      INTEGER COMM, CODE, CLASS, IERR
      INTEGER NCALLS, LASTCODE
      COMMON /HANDLED/ NCALLS, LASTCODE
      NCALLS = NCALLS + 1
      CALL MPI_ERROR_CLASS(CODE, CLASS, IERR)
      LASTCODE = CLASS
      END

      INCLUDE 'mpitest.fh'
