/*
 * mpitest.h: the small toolkit every C test program in this directory shares.
 *
 * A program defines TEST_NAME, then includes this header first (it sets the
 * POSIX feature level before any system header). It gives:
 *
 *  - FAIL / CHECK / CHECK_MPI: on a broken expectation, print one line
 *        FAIL <test> rank <r>: <file>:<line>: <what went wrong>
 *    to stderr and end the whole job with MPI_Abort (exit(1) if even that
 *    returns), so a failing rank never leaves its peers hanging.
 *  - fill_pattern / CHECK_PATTERN: a byte pattern that depends on a seed and
 *    on the position, so a lost, duplicated, shifted or swapped message (or a
 *    truncated copy) shows up as a mismatch at a precise offset.
 *  - test_ok: rank 0 prints "OK <test>", the line the harness looks for.
 *  - error_text / error_class_of: readable MPI error codes for messages.
 *
 * Everything is static inline so a program that uses only part of it compiles
 * without unused-function warnings under -Wall -Werror.
 */
#ifndef MPITEST_H
#define MPITEST_H

#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <mpi.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef TEST_NAME
#error "define TEST_NAME before including mpitest.h"
#endif

/* The rank of this process in MPI_COMM_WORLD, or -1 before test_init. */
static int test_rank = -1;
static int test_size = 0;

static inline void test_fail_at(const char *file, int line, const char *fmt, ...)
{
    char what[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    fprintf(stderr, "FAIL %s rank %d: %s:%d: %s\n", TEST_NAME, test_rank, file, line, what);
    fflush(stderr);
    fflush(stdout);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

#define FAIL(...) test_fail_at(__FILE__, __LINE__, __VA_ARGS__)
#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond))                                                           \
            FAIL(__VA_ARGS__);                                                 \
    } while (0)

/* A readable form of an MPI error code: its class number and its string. */
static inline const char *error_text(int code)
{
    static char text[MPI_MAX_ERROR_STRING + 64];
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0, cls = -1;
    msg[0] = '\0';
    MPI_Error_class(code, &cls);
    MPI_Error_string(code, msg, &len);
    snprintf(text, sizeof text, "code %d (class %d): %s", code, cls, msg);
    return text;
}

static inline int error_class_of(int code)
{
    int cls = -1;
    if (MPI_Error_class(code, &cls) != MPI_SUCCESS)
        return -1;
    return cls;
}

/* Call an MPI function that must succeed. */
#define CHECK_MPI(call)                                                        \
    do {                                                                       \
        int check_rc_ = (call);                                                \
        if (check_rc_ != MPI_SUCCESS)                                          \
            FAIL("%s returned %s", #call, error_text(check_rc_));             \
    } while (0)

/* MPI_Init plus the rank and size every program needs. */
static inline void test_init(int *argc, char ***argv)
{
    CHECK_MPI(MPI_Init(argc, argv));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &test_rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &test_size));
}

/* MPI_Init_thread asking for MPI_THREAD_MULTIPLE, which must be granted. */
static inline void test_init_multiple(int *argc, char ***argv)
{
    int provided;
    CHECK_MPI(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &test_rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &test_size));
    CHECK(provided == MPI_THREAD_MULTIPLE, "MPI_THREAD_MULTIPLE not granted (%d)", provided);
}

static inline void require_ranks(int at_least)
{
    if (test_size < at_least)
        FAIL("this test needs at least %d ranks, run it with mpirun -n %d", at_least, at_least);
}

/* The pattern byte at position i of a message with this seed. */
static inline unsigned char pattern_byte(uint32_t seed, size_t i)
{
    uint32_t x = (uint32_t)i ^ (seed * 0x9E3779B9u);
    x ^= x >> 15;
    x *= 0x2C1B3C6Du;
    x ^= x >> 12;
    x ^= (uint32_t)(i >> 24);
    return (unsigned char)x;
}

/* A seed naming one message: who sent it, to whom, and which one it was. */
static inline uint32_t message_seed(int from, int to, int index)
{
    return (uint32_t)from * 1000003u + (uint32_t)to * 7919u + (uint32_t)index * 31u + 1u;
}

static inline void fill_pattern(void *buf, size_t n, uint32_t seed)
{
    unsigned char *p = buf;
    for (size_t i = 0; i < n; i++)
        p[i] = pattern_byte(seed, i);
}

/* The first position where buf differs from the pattern, or n if it matches. */
static inline size_t pattern_mismatch(const void *buf, size_t n, uint32_t seed)
{
    const unsigned char *p = buf;
    for (size_t i = 0; i < n; i++)
        if (p[i] != pattern_byte(seed, i))
            return i;
    return n;
}

#define CHECK_PATTERN(buf, n, seed, ...)                                       \
    do {                                                                       \
        size_t at_ = pattern_mismatch((buf), (n), (seed));                     \
        if (at_ != (size_t)(n)) {                                              \
            char what_[512];                                                   \
            snprintf(what_, sizeof what_, __VA_ARGS__);                        \
            FAIL("%s: data differs at byte %zu of %zu: got 0x%02x, want 0x%02x", \
                 what_, at_, (size_t)(n), ((const unsigned char *)(buf))[at_], \
                 pattern_byte((seed), at_));                                   \
        }                                                                      \
    } while (0)

/* Count of bytes (as MPI_BYTE) a status reports. */
static inline int status_bytes(const MPI_Status *st)
{
    int n = -1;
    CHECK_MPI(MPI_Get_count(st, MPI_BYTE, &n));
    return n;
}

/* malloc that fails the test instead of returning NULL. */
static inline void *test_malloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        FAIL("out of memory allocating %zu bytes", n);
    return p;
}

static inline void sleep_ms(int ms)
{
    struct timespec ts;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (long)(ms % 1000) * 1000000L;
    nanosleep(&ts, NULL);
}

/* Rank 0 announces success; every program calls this as its last MPI act. */
static inline void test_ok(void)
{
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (test_rank == 0) {
        printf("OK %s\n", TEST_NAME);
        fflush(stdout);
    }
}

/* The programs check what the MPI standard says. Where Debian's MPICH 4.0 or Open MPI 4.1 is
 * known to deviate, a program names the deviation at the check with
 * tolerated("Open MPI", "what"): under that library the check is skipped and rank 0 prints
 * "NOTE <test>: Open MPI deviates: <what>" (once per deviation); under any other library
 * (ours above all) the check stands. Every such place is listed in the program's header. */
/* Whether the running library's version string starts with `name` ("MPICH", "Open MPI"). */
static inline int library_is(const char *name)
{
    static char version[MPI_MAX_LIBRARY_VERSION_STRING];
    static int known = 0;
    if (!known) {
        int len = 0;
        CHECK_MPI(MPI_Get_library_version(version, &len));
        known = 1;
    }
    return strncmp(version, name, strlen(name)) == 0;
}

/* True (and a note on rank 0) when the running library is `name`, known to deviate here. */
static inline int tolerated(const char *name, const char *what)
{
    if (!library_is(name))
        return 0;
    /* Each note once: a check inside a loop must not flood the output. */
    static char said[32][160];
    static int n_said = 0;
    for (int i = 0; i < n_said; i++)
        if (strncmp(said[i], what, sizeof said[i] - 1) == 0)
            return 1;
    if (n_said < 32)
        snprintf(said[n_said++], sizeof said[0], "%s", what);
    if (test_rank == 0) {
        printf("NOTE %s: %s deviates: %s\n", TEST_NAME, name, what);
        fflush(stdout);
    }
    return 1;
}

#endif /* MPITEST_H */
