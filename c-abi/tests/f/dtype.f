!     Derived datatypes in Fortran 77: a row of a column-major matrix as
!     MPI_TYPE_VECTOR, a struct of absolute addresses sent from
!     MPI_BOTTOM, TYPE_SIZE / TYPE_GET_EXTENT with ADDRESS_KIND
!     arguments, the MPI-1 functions with INTEGER displacements
!     (TYPE_HVECTOR, TYPE_EXTENT, ADDRESS), and BSEND with
!     BUFFER_DETACH. Two ranks or more; rank 0 prints 'OK dtype'.
      PROGRAM DTYPE
      IMPLICIT NONE
      INCLUDE 'mpif.h'
      CHARACTER*8 TNAME
      COMMON /MPITST/ TNAME
      INTEGER IERR, RANK, NP, I, J, ROWT, STRT, SZ
      INTEGER STATUS(MPI_STATUS_SIZE), COUNT
      INTEGER BLENS(2), TYPES(2)
      INTEGER(KIND=MPI_ADDRESS_KIND) DISPS(2), LB, EXTENT
      DOUBLE PRECISION A(3, 4), ROW(4), X
      INTEGER K(2)
      INTEGER IEXT, IADDR1, IADDR2, HVT, BSIZE, DSIZE
      DOUBLE PRECISION BBUF(100)
!     In a common block: the compiler must assume that a call changes
!     them, which is what a receive into MPI_BOTTOM does.
      COMMON /SBUF/ X, K

      TNAME = 'dtype'
      CALL MPI_INIT(IERR)
      CALL MPI_COMM_RANK(MPI_COMM_WORLD, RANK, IERR)
      CALL MPI_COMM_SIZE(MPI_COMM_WORLD, NP, IERR)
      CALL CHECK(NP .GE. 2, 'needs two ranks')

!     Row 2 of A(3,4): 4 doubles, 3 apart.
      CALL MPI_TYPE_VECTOR(4, 1, 3, MPI_DOUBLE_PRECISION, ROWT, IERR)
      CALL MPI_TYPE_COMMIT(ROWT, IERR)
      CALL CHECK(IERR .EQ. MPI_SUCCESS, 'vector commit')
      CALL MPI_TYPE_SIZE(ROWT, SZ, IERR)
      CALL CHECK(SZ .EQ. 32, 'vector size')
      CALL MPI_TYPE_GET_EXTENT(ROWT, LB, EXTENT, IERR)
      CALL CHECK(LB .EQ. 0 .AND. EXTENT .EQ. 80, 'vector extent')
      IF (RANK .EQ. 0) THEN
         DO J = 1, 4
            DO I = 1, 3
               A(I, J) = I * 10 + J
            END DO
         END DO
         CALL MPI_SEND(A(2, 1), 1, ROWT, 1, 5, MPI_COMM_WORLD, IERR)
      ELSE IF (RANK .EQ. 1) THEN
         CALL MPI_RECV(ROW, 4, MPI_DOUBLE_PRECISION, 0, 5,
     &                 MPI_COMM_WORLD, STATUS, IERR)
         CALL MPI_GET_COUNT(STATUS, MPI_DOUBLE_PRECISION, COUNT, IERR)
         CALL CHECK(COUNT .EQ. 4, 'vector count')
         DO J = 1, 4
            CALL CHECK(ROW(J) .EQ. 20 + J, 'vector data')
         END DO
      END IF

!     And back: contiguous in, vector out (into row 3 of A).
      IF (RANK .EQ. 1) THEN
         CALL MPI_SEND(ROW, 4, MPI_DOUBLE_PRECISION, 0, 6,
     &                 MPI_COMM_WORLD, IERR)
      ELSE IF (RANK .EQ. 0) THEN
         CALL MPI_RECV(A(3, 1), 1, ROWT, 1, 6, MPI_COMM_WORLD,
     &                 MPI_STATUS_IGNORE, IERR)
         DO J = 1, 4
            CALL CHECK(A(3, J) .EQ. 20 + J, 'vector recv')
            CALL CHECK(A(1, J) .EQ. 10 + J, 'vector recv untouched')
         END DO
      END IF
      CALL MPI_TYPE_EXTENT(ROWT, IEXT, IERR)
      CALL CHECK(IEXT .EQ. 80, 'type_extent')
      CALL MPI_TYPE_FREE(ROWT, IERR)
      CALL CHECK(ROWT .EQ. MPI_DATATYPE_NULL, 'type_free')

!     MPI-1: the same row as an HVECTOR with an INTEGER byte stride.
      CALL MPI_TYPE_HVECTOR(4, 1, 24, MPI_DOUBLE_PRECISION, HVT, IERR)
      CALL MPI_TYPE_COMMIT(HVT, IERR)
      CALL MPI_TYPE_EXTENT(HVT, IEXT, IERR)
      CALL CHECK(IEXT .EQ. 80, 'hvector extent')
      CALL MPI_ADDRESS(A(1, 1), IADDR1, IERR)
      CALL MPI_ADDRESS(A(1, 2), IADDR2, IERR)
      CALL CHECK(IADDR2 - IADDR1 .EQ. 24, 'address')
      IF (RANK .EQ. 0) THEN
         CALL MPI_SEND(A(1, 1), 1, HVT, 1, 8, MPI_COMM_WORLD, IERR)
      ELSE IF (RANK .EQ. 1) THEN
         CALL MPI_RECV(ROW, 4, MPI_DOUBLE_PRECISION, 0, 8,
     &                 MPI_COMM_WORLD, MPI_STATUS_IGNORE, IERR)
         DO J = 1, 4
            CALL CHECK(ROW(J) .EQ. 10 + J, 'hvector data')
         END DO
      END IF
      CALL MPI_TYPE_FREE(HVT, IERR)

!     BSEND from an attached buffer, then detach it.
      BSIZE = 800
      CALL MPI_BUFFER_ATTACH(BBUF, BSIZE, IERR)
      IF (RANK .EQ. 0) THEN
         CALL MPI_BSEND(A(1, 1), 3, MPI_DOUBLE_PRECISION, 1, 10,
     &                  MPI_COMM_WORLD, IERR)
      ELSE IF (RANK .EQ. 1) THEN
         CALL MPI_RECV(ROW, 3, MPI_DOUBLE_PRECISION, 0, 10,
     &                 MPI_COMM_WORLD, MPI_STATUS_IGNORE, IERR)
         CALL CHECK(ROW(1) .EQ. 11 .AND. ROW(2) .EQ. 21, 'bsend data')
      END IF
      CALL MPI_BUFFER_DETACH(BBUF, DSIZE, IERR)
      CALL CHECK(IERR .EQ. MPI_SUCCESS .AND. DSIZE .EQ. 800,
     &           'buffer_detach size')

!     A struct of absolute addresses (a double and two integers),
!     sent and received from MPI_BOTTOM.
      CALL MPI_GET_ADDRESS(X, DISPS(1), IERR)
      CALL MPI_GET_ADDRESS(K, DISPS(2), IERR)
      BLENS(1) = 1
      BLENS(2) = 2
      TYPES(1) = MPI_DOUBLE_PRECISION
      TYPES(2) = MPI_INTEGER
      CALL MPI_TYPE_CREATE_STRUCT(2, BLENS, DISPS, TYPES, STRT, IERR)
      CALL MPI_TYPE_COMMIT(STRT, IERR)
      CALL MPI_TYPE_SIZE(STRT, SZ, IERR)
      CALL CHECK(SZ .EQ. 16, 'struct size')
      IF (RANK .EQ. 0) THEN
         X = 2.5D0
         K(1) = 7
         K(2) = 8
         CALL MPI_SEND(MPI_BOTTOM, 1, STRT, 1, 9, MPI_COMM_WORLD, IERR)
      ELSE IF (RANK .EQ. 1) THEN
         X = 0
         K(1) = 0
         K(2) = 0
         CALL MPI_RECV(MPI_BOTTOM, 1, STRT, 0, 9, MPI_COMM_WORLD,
     &                 STATUS, IERR)
         CALL CHECK(X .EQ. 2.5D0, 'struct double')
         CALL CHECK(K(1) .EQ. 7 .AND. K(2) .EQ. 8, 'struct integers')
      END IF
      CALL MPI_TYPE_FREE(STRT, IERR)

      CALL MPI_FINALIZE(IERR)
      IF (RANK .EQ. 0) PRINT '(A)', 'OK dtype'
      END

      INCLUDE 'mpitest.fh'
