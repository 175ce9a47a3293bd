!     Point-to-point in Fortran 77: a ring of MPI_SEND/MPI_RECV with status checks,
!     MPI_SENDRECV, nonblocking ISEND/IRECV/WAITALL, MPI_PROBE/GET_COUNT, and the
!     MPI_STATUS_IGNORE sentinel. Rank 0 prints 'OK ring' and the first
!     line of the library's version ('library: ...').
      PROGRAM RING
      IMPLICIT NONE
      INCLUDE 'mpif.h'
      CHARACTER*8 TNAME
      COMMON /MPITST/ TNAME
      INTEGER IERR, RANK, NP, NEXT, PREV, I, COUNT
      INTEGER STATUS(MPI_STATUS_SIZE), STATS(MPI_STATUS_SIZE, 2)
      INTEGER REQS(2)
      INTEGER SBUF(10), RBUF(10)
      DOUBLE PRECISION DS(4), DR(4), T0, T1
      LOGICAL FLAG
      CHARACTER*(MPI_MAX_LIBRARY_VERSION_STRING) VERSION
      INTEGER VLEN, EOL

      TNAME = 'ring'
      CALL MPI_INIT(IERR)
      CALL CHECK(IERR .EQ. MPI_SUCCESS, 'MPI_INIT')
      CALL MPI_INITIALIZED(FLAG, IERR)
      CALL CHECK(FLAG, 'MPI_INITIALIZED')
      CALL MPI_COMM_RANK(MPI_COMM_WORLD, RANK, IERR)
      CALL MPI_COMM_SIZE(MPI_COMM_WORLD, NP, IERR)
      NEXT = MOD(RANK + 1, NP)
      PREV = MOD(RANK + NP - 1, NP)
      T0 = MPI_WTIME()

!     A ring of blocking sends: rank 0 starts, the others pass it on.
      DO I = 1, 10
         SBUF(I) = RANK * 100 + I
      END DO
      IF (RANK .EQ. 0) THEN
         CALL MPI_SEND(SBUF, 10, MPI_INTEGER, NEXT, 7, MPI_COMM_WORLD,
     &                 IERR)
         CALL MPI_RECV(RBUF, 10, MPI_INTEGER, PREV, 7, MPI_COMM_WORLD,
     &                 STATUS, IERR)
      ELSE
         CALL MPI_RECV(RBUF, 10, MPI_INTEGER, PREV, 7, MPI_COMM_WORLD,
     &                 STATUS, IERR)
         CALL MPI_SEND(SBUF, 10, MPI_INTEGER, NEXT, 7, MPI_COMM_WORLD,
     &                 IERR)
      END IF
      CALL CHECK(IERR .EQ. MPI_SUCCESS, 'ring IERR')
      CALL CHECK(STATUS(MPI_SOURCE) .EQ. PREV, 'ring MPI_SOURCE')
      CALL CHECK(STATUS(MPI_TAG) .EQ. 7, 'ring MPI_TAG')
      CALL MPI_GET_COUNT(STATUS, MPI_INTEGER, COUNT, IERR)
      CALL CHECK(COUNT .EQ. 10, 'ring MPI_GET_COUNT')
      DO I = 1, 10
         CALL CHECK(RBUF(I) .EQ. PREV * 100 + I, 'ring data')
      END DO

!     SENDRECV of doubles around the ring, status ignored.
      DO I = 1, 4
         DS(I) = RANK + I / 4.0D0
      END DO
      CALL MPI_SENDRECV(DS, 4, MPI_DOUBLE_PRECISION, NEXT, 3,
     &                  DR, 4, MPI_DOUBLE_PRECISION, PREV, 3,
     &                  MPI_COMM_WORLD, MPI_STATUS_IGNORE, IERR)
      DO I = 1, 4
         CALL CHECK(DR(I) .EQ. PREV + I / 4.0D0, 'sendrecv data')
      END DO

!     Nonblocking both ways, statuses of WAITALL checked.
      CALL MPI_IRECV(RBUF, 10, MPI_INTEGER, MPI_ANY_SOURCE, 9,
     &               MPI_COMM_WORLD, REQS(1), IERR)
      CALL MPI_ISEND(SBUF, 5, MPI_INTEGER, NEXT, 9, MPI_COMM_WORLD,
     &               REQS(2), IERR)
      CALL MPI_WAITALL(2, REQS, STATS, IERR)
      CALL CHECK(REQS(1) .EQ. MPI_REQUEST_NULL, 'waitall request')
      CALL CHECK(STATS(MPI_SOURCE, 1) .EQ. PREV, 'waitall source')
      CALL MPI_GET_COUNT(STATS(1, 1), MPI_INTEGER, COUNT, IERR)
      CALL CHECK(COUNT .EQ. 5, 'waitall count')
      CALL CHECK(RBUF(5) .EQ. PREV * 100 + 5, 'irecv data')

!     PROBE, then receive exactly what is there; WAITALL with
!     MPI_STATUSES_IGNORE.
      CALL MPI_ISEND(SBUF, 3, MPI_INTEGER, NEXT, 11, MPI_COMM_WORLD,
     &               REQS(1), IERR)
      CALL MPI_PROBE(PREV, 11, MPI_COMM_WORLD, STATUS, IERR)
      CALL MPI_GET_COUNT(STATUS, MPI_INTEGER, COUNT, IERR)
      CALL CHECK(COUNT .EQ. 3, 'probe count')
      CALL MPI_IRECV(RBUF, COUNT, MPI_INTEGER, PREV, 11,
     &               MPI_COMM_WORLD, REQS(2), IERR)
      CALL MPI_WAITALL(2, REQS, MPI_STATUSES_IGNORE, IERR)
      CALL CHECK(IERR .EQ. MPI_SUCCESS, 'waitall statuses_ignore')
      CALL CHECK(RBUF(3) .EQ. PREV * 100 + 3, 'probed data')

      CALL MPI_GET_LIBRARY_VERSION(VERSION, VLEN, IERR)
      CALL CHECK(VLEN .GT. 0 .AND. VERSION(VLEN+1:) .EQ. ' ', 'version')
      EOL = INDEX(VERSION(1:VLEN), CHAR(10))
      IF (EOL .EQ. 0) EOL = VLEN + 1
      IF (RANK .EQ. 0) PRINT '(A,A)', 'library: ', VERSION(1:EOL-1)

      T1 = MPI_WTIME()
      CALL CHECK(T1 .GE. T0 .AND. MPI_WTICK() .GT. 0D0, 'MPI_WTIME')
      CALL MPI_FINALIZE(IERR)
      CALL CHECK(IERR .EQ. MPI_SUCCESS, 'MPI_FINALIZE')
      IF (RANK .EQ. 0) PRINT '(A)', 'OK ring'
      END

      INCLUDE 'mpitest.fh'
