!     Collectives in Fortran 77: BCAST, REDUCE, ALLREDUCE (also with
!     MPI_IN_PLACE and a user-defined op written in Fortran), GATHER,
!     SCATTER, ALLTOALL, ALLGATHER and BARRIER. Rank 0 prints 'OK coll'.
      PROGRAM COLL
      IMPLICIT NONE
      INCLUDE 'mpif.h'
      CHARACTER*8 TNAME
      COMMON /MPITST/ TNAME
      INTEGER IERR, RANK, NP, I, ROOT, MYOP
      INTEGER IV(4), IW(4), ALL(64), SOME(64)
      DOUBLE PRECISION D, DSUM
      EXTERNAL ISUM

      TNAME = 'coll'
      CALL MPI_INIT(IERR)
      CALL MPI_COMM_RANK(MPI_COMM_WORLD, RANK, IERR)
      CALL MPI_COMM_SIZE(MPI_COMM_WORLD, NP, IERR)
      CALL CHECK(NP .LE. 16, 'at most 16 ranks')

!     BCAST from the last rank.
      ROOT = NP - 1
      DO I = 1, 4
         IV(I) = -1
         IF (RANK .EQ. ROOT) IV(I) = 1000 + I
      END DO
      CALL MPI_BCAST(IV, 4, MPI_INTEGER, ROOT, MPI_COMM_WORLD, IERR)
      CALL CHECK(IERR .EQ. MPI_SUCCESS, 'bcast ierr')
      DO I = 1, 4
         CALL CHECK(IV(I) .EQ. 1000 + I, 'bcast data')
      END DO

!     REDUCE of doubles to rank 0.
      D = RANK + 0.5D0
      DSUM = -1D0
      CALL MPI_REDUCE(D, DSUM, 1, MPI_DOUBLE_PRECISION, MPI_SUM, 0,
     &                MPI_COMM_WORLD, IERR)
      IF (RANK .EQ. 0) THEN
         CALL CHECK(DSUM .EQ. NP * (NP - 1) / 2D0 + NP * 0.5D0,
     &              'reduce sum')
      END IF

!     ALLREDUCE in place: MPI_IN_PLACE must reach C as MPI_IN_PLACE.
      DO I = 1, 4
         IV(I) = RANK * I
      END DO
      CALL MPI_ALLREDUCE(MPI_IN_PLACE, IV, 4, MPI_INTEGER, MPI_SUM,
     &                   MPI_COMM_WORLD, IERR)
      DO I = 1, 4
         CALL CHECK(IV(I) .EQ. I * NP * (NP - 1) / 2, 'in-place sum')
      END DO
      CALL MPI_ALLREDUCE(RANK, I, 1, MPI_INTEGER, MPI_MAX,
     &                   MPI_COMM_WORLD, IERR)
      CALL CHECK(I .EQ. NP - 1, 'allreduce max')

!     A user-defined op written in Fortran.
      CALL MPI_OP_CREATE(ISUM, .TRUE., MYOP, IERR)
      CALL CHECK(IERR .EQ. MPI_SUCCESS, 'op_create')
      DO I = 1, 4
         IV(I) = RANK + I
      END DO
      CALL MPI_ALLREDUCE(IV, IW, 4, MPI_INTEGER, MYOP,
     &                   MPI_COMM_WORLD, IERR)
      DO I = 1, 4
         CALL CHECK(IW(I) .EQ. NP * (NP - 1) / 2 + NP * I, 'user op')
      END DO
      CALL MPI_OP_FREE(MYOP, IERR)
      CALL CHECK(MYOP .EQ. MPI_OP_NULL, 'op_free')

!     GATHER to rank 0, then SCATTER back shifted by one.
      CALL MPI_GATHER(RANK, 1, MPI_INTEGER, ALL, 1, MPI_INTEGER, 0,
     &                MPI_COMM_WORLD, IERR)
      IF (RANK .EQ. 0) THEN
         DO I = 1, NP
            CALL CHECK(ALL(I) .EQ. I - 1, 'gather')
            ALL(I) = ALL(I) + 1
         END DO
      END IF
      CALL MPI_SCATTER(ALL, 1, MPI_INTEGER, I, 1, MPI_INTEGER, 0,
     &                 MPI_COMM_WORLD, IERR)
      CALL CHECK(I .EQ. RANK + 1, 'scatter')

!     ALLTOALL: block j of rank r is r*100+j.
      DO I = 1, NP
         SOME(I) = RANK * 100 + I - 1
      END DO
      CALL MPI_ALLTOALL(SOME, 1, MPI_INTEGER, ALL, 1, MPI_INTEGER,
     &                  MPI_COMM_WORLD, IERR)
      DO I = 1, NP
         CALL CHECK(ALL(I) .EQ. (I - 1) * 100 + RANK, 'alltoall')
      END DO

!     ALLGATHER of two integers each.
      SOME(1) = RANK
      SOME(2) = -RANK
      CALL MPI_ALLGATHER(SOME, 2, MPI_INTEGER, ALL, 2, MPI_INTEGER,
     &                   MPI_COMM_WORLD, IERR)
      DO I = 1, NP
         CALL CHECK(ALL(2 * I - 1) .EQ. I - 1 .AND.
     &              ALL(2 * I) .EQ. 1 - I, 'allgather')
      END DO

      CALL MPI_BARRIER(MPI_COMM_WORLD, IERR)
      CALL CHECK(IERR .EQ. MPI_SUCCESS, 'barrier')
      CALL MPI_FINALIZE(IERR)
      IF (RANK .EQ. 0) PRINT '(A)', 'OK coll'
      END

!     The user-defined op: INOUT(i) = IN(i) + INOUT(i), as MPI calls it.
      SUBROUTINE ISUM(INV, INOUTV, LEN, DTYPE)
      INTEGER LEN, DTYPE, I
      INTEGER INV(LEN), INOUTV(LEN)
      DO I = 1, LEN
         INOUTV(I) = INV(I) + INOUTV(I)
      END DO
      END

      INCLUDE 'mpitest.fh'
