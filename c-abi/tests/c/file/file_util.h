/*
 * file_util.h: what the MPI-IO test programs share besides mpitest.h (include it after).
 *
 *  - test_path(name): a path in the directory the harness made for the job ($FILE_TEST_DIR,
 *    the same on every rank); the programs create, check and remove their files there.
 *  - EXPECT_CLASS(call, class): the call must fail with that error class (files' default
 *    error handler is MPI_ERRORS_RETURN, so failing calls return).
 *  - (library_is / tolerated, for the checks where MPICH's ROMIO deviates, are in
 *    mpitest.h.)
 */
#ifndef FILE_UTIL_H
#define FILE_UTIL_H

#ifndef MPITEST_H
#error "include mpitest.h before file_util.h"
#endif

#include <unistd.h>

static inline const char *test_path(const char *name)
{
    static char paths[8][1024];
    static int next = 0;
    const char *dir = getenv("FILE_TEST_DIR");
    if (dir == NULL || dir[0] == '\0')
        FAIL("FILE_TEST_DIR is not set: run this program with it naming an existing directory");
    char *p = paths[next++ % 8];
    snprintf(p, sizeof paths[0], "%s/%s", dir, name);
    return p;
}

#define EXPECT_CLASS(call, want)                                                \
    do {                                                                        \
        int expect_rc_ = (call);                                                \
        if (expect_rc_ == MPI_SUCCESS)                                          \
            FAIL("%s succeeded; want class %d (%s)", #call, (want), #want);   \
        if (error_class_of(expect_rc_) != (want))                               \
            FAIL("%s returned %s; want class %d (%s)", #call,                  \
                 error_text(expect_rc_), (want), #want);                        \
    } while (0)

/* The bytes a status says were moved. */
static inline int moved_bytes(const MPI_Status *st)
{
    int n = -1;
    CHECK_MPI(MPI_Get_count(st, MPI_BYTE, &n));
    return n;
}

#endif
