!     MPI-IO in Fortran 77 (INCLUDE 'mpif.h'): each rank writes four
!     DOUBLE PRECISION values at its own byte offset (INTEGER*8, that is
!     INTEGER(KIND=MPI_OFFSET_KIND)) with WRITE_AT_ALL, then reads its
!     right neighbour's with READ_AT and MPI_STATUS_IGNORE; GET_SIZE;
!     an exclusive create of the existing file fails with class
!     MPI_ERR_FILE_EXISTS; the handle becomes MPI_FILE_NULL at CLOSE;
!     DELETE. Also the 8-byte constant MPI_DISPLACEMENT_CURRENT.
!     The file is made in $FILE_TEST_DIR. Rank 0 prints the first line
!     of the library's version ('library: ...') and 'OK file77'.
      PROGRAM FILE77
      IMPLICIT NONE
      INCLUDE 'mpif.h'
      CHARACTER*8 TNAME
      COMMON /MPITST/ TNAME
      INTEGER IERR, IERR2, RANK, NP, NEXT, FH, FH2, I, N, ECLASS
      INTEGER DLEN
      INTEGER STATUS(MPI_STATUS_SIZE)
      INTEGER*8 OFFSET, FSIZE, DISP
      DOUBLE PRECISION OUT(4), IN(4)
      CHARACTER*512 DIR
      CHARACTER*600 PATH
      CHARACTER*(MPI_MAX_LIBRARY_VERSION_STRING) VERSION
      INTEGER VLEN, EOL

      TNAME = 'file77'
      CALL MPI_INIT(IERR)
      CALL MPI_COMM_RANK(MPI_COMM_WORLD, RANK, IERR)
      CALL MPI_COMM_SIZE(MPI_COMM_WORLD, NP, IERR)
      NEXT = MOD(RANK + 1, NP)
      CALL GET_ENVIRONMENT_VARIABLE('FILE_TEST_DIR', DIR, DLEN)
      IF (DLEN .EQ. 0) THEN
         DIR = '.'
         DLEN = 1
      END IF
      PATH = DIR(1:DLEN) // '/fortran77-file.dat'

!     An 8-byte constant: it reaches an offset argument whole.
      DISP = MPI_DISPLACEMENT_CURRENT
      CALL CHECK(DISP .EQ. -54278278, 'MPI_DISPLACEMENT_CURRENT')
      CALL CHECK(MPI_OFFSET_KIND .EQ. 8, 'MPI_OFFSET_KIND')

      CALL MPI_FILE_OPEN(MPI_COMM_WORLD, PATH,
     &     MPI_MODE_CREATE + MPI_MODE_RDWR, MPI_INFO_NULL, FH, IERR)
      CALL CHECK(IERR .EQ. MPI_SUCCESS, 'open')
      CALL CHECK(FH .NE. MPI_FILE_NULL, 'open gave a handle')
      CALL MPI_FILE_SET_SIZE(FH, 0_8, IERR)
      CALL CHECK(IERR .EQ. MPI_SUCCESS, 'set_size 0')

      DO I = 1, 4
         OUT(I) = RANK * 10.0D0 + I / 8.0D0
      END DO
      OFFSET = RANK * 32
      CALL MPI_FILE_WRITE_AT_ALL(FH, OFFSET, OUT, 4,
     &     MPI_DOUBLE_PRECISION, STATUS, IERR)
      CALL CHECK(IERR .EQ. MPI_SUCCESS, 'write_at_all')
      CALL MPI_GET_COUNT(STATUS, MPI_DOUBLE_PRECISION, N, IERR)
      CALL CHECK(N .EQ. 4, 'write_at_all count')
      CALL MPI_FILE_SYNC(FH, IERR)
      CALL MPI_BARRIER(MPI_COMM_WORLD, IERR)
      CALL MPI_FILE_SYNC(FH, IERR)

      OFFSET = NEXT * 32
      CALL MPI_FILE_READ_AT(FH, OFFSET, IN, 4, MPI_DOUBLE_PRECISION,
     &     MPI_STATUS_IGNORE, IERR)
      CALL CHECK(IERR .EQ. MPI_SUCCESS, 'read_at')
      DO I = 1, 4
         CALL CHECK(IN(I) .EQ. NEXT * 10.0D0 + I / 8.0D0,
     &        'read_at data')
      END DO
      CALL MPI_FILE_GET_SIZE(FH, FSIZE, IERR)
      CALL CHECK(IERR .EQ. MPI_SUCCESS .AND. FSIZE .EQ. NP * 32,
     &     'get_size')

!     The file exists: an exclusive create fails on every rank.
      FH2 = MPI_FILE_NULL
      CALL MPI_FILE_OPEN(MPI_COMM_WORLD, PATH,
     &     MPI_MODE_CREATE + MPI_MODE_EXCL + MPI_MODE_WRONLY,
     &     MPI_INFO_NULL, FH2, IERR)
      CALL CHECK(IERR .NE. MPI_SUCCESS, 'exclusive create failed')
      CALL MPI_ERROR_CLASS(IERR, ECLASS, IERR2)
      CALL CHECK(ECLASS .EQ. MPI_ERR_FILE_EXISTS, 'MPI_ERR_FILE_EXISTS')
      CALL CHECK(FH2 .EQ. MPI_FILE_NULL, 'failed open: MPI_FILE_NULL')

      CALL MPI_FILE_CLOSE(FH, IERR)
      CALL CHECK(IERR .EQ. MPI_SUCCESS, 'close')
      CALL CHECK(FH .EQ. MPI_FILE_NULL, 'close sets MPI_FILE_NULL')
      CALL MPI_BARRIER(MPI_COMM_WORLD, IERR)
      IF (RANK .EQ. 0) THEN
         CALL MPI_FILE_DELETE(PATH, MPI_INFO_NULL, IERR)
         CALL CHECK(IERR .EQ. MPI_SUCCESS, 'delete')
      END IF
      CALL MPI_BARRIER(MPI_COMM_WORLD, IERR)
      CALL MPI_FILE_OPEN(MPI_COMM_WORLD, PATH, MPI_MODE_RDONLY,
     &     MPI_INFO_NULL, FH, IERR)
      CALL MPI_ERROR_CLASS(IERR, ECLASS, IERR2)
      CALL CHECK(ECLASS .EQ. MPI_ERR_NO_SUCH_FILE, 'deleted')

      CALL MPI_GET_LIBRARY_VERSION(VERSION, VLEN, IERR)
      EOL = INDEX(VERSION(1:VLEN), CHAR(10))
      IF (EOL .EQ. 0) EOL = VLEN + 1
      IF (RANK .EQ. 0) PRINT '(A,A)', 'library: ', VERSION(1:EOL-1)

      CALL MPI_FINALIZE(IERR)
      IF (RANK .EQ. 0) PRINT '(A)', 'OK file77'
      END

      INCLUDE 'mpitest.fh'
