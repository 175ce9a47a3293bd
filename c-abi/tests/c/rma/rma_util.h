/*
 * rma_util.h: what the one-sided test programs share besides mpitest.h (include it after).
 *
 *  - (library_is / tolerated, for the checks where MPICH or Open MPI deviate, are in
 *    mpitest.h.)
 *  - time_left: a deadline for polling loops (MPI_Test, MPI_Win_test, spin locks), so that
 *    a library that never completes something fails the test instead of hanging it.
 */
#ifndef RMA_UTIL_H
#define RMA_UTIL_H

#ifndef MPITEST_H
#error "include mpitest.h before rma_util.h"
#endif

/* The size to give MPI_Win_allocate for `bytes` of window. Debian's MPICH 4.0.2 (ch4) lays
 * the segments of MPI_Win_allocate out in 16-byte steps but lets peers address a segment
 * whose size is not a multiple of 16 as if it were not rounded: a Get from such a rank reads
 * from the wrong place (4 or 8 bytes off). Under MPICH the size is rounded up to 16. */
static inline MPI_Aint alloc_size(MPI_Aint bytes)
{
    if (bytes % 16 != 0 &&
        tolerated("MPICH", "MPI_Win_allocate sizes not a multiple of 16 bytes misplace peers' "
                           "accesses (sizes rounded up here)"))
        return (bytes + 15) / 16 * 16;
    return bytes;
}

/* Seconds since an arbitrary start, for bounding polling loops. */
static inline double now_s(void)
{
    return MPI_Wtime();
}

/* How long any polling loop may go on before the test fails. */
#define POLL_LIMIT_S 20.0

/* Ring neighbours, and the value rank r writes at element j in round `round` (distinct for
 * every rank, element and round, so a misplaced write shows). */
static inline int right_of(int r)
{
    return (r + 1) % test_size;
}

static inline int left_of(int r)
{
    return (r + test_size - 1) % test_size;
}

static inline int cell(int r, int j, int round)
{
    return r * 100003 + j * 7 + round * 1000 + 1;
}

#endif /* RMA_UTIL_H */
