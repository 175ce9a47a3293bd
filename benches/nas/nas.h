/* nas.h: what the five NAS kernels share, written from the NPB specification.
 *
 *  - The specification's pseudo-random generator: x(k+1) = a * x(k) mod 2^46, returning
 *    x(k+1) * 2^-46 in (0, 1). The reference codes do this in double precision by splitting
 *    the operands into 23-bit halves; here the arithmetic is exact 128-bit integer arithmetic,
 *    which yields the same sequence bit for bit (every value below 2^46 is exact in a double).
 *  - The problem class, read from the command line: `ep A` (S, W, A, B and C; a kernel may
 *    refuse a class it has no parameters for).
 *  - The result line the `nas` runner parses, printed by rank 0:
 *        EP S np=2 VERIFIED 0.123 s 456.7 Mop/s
 *    (or FAILED), and the exit status: 0 when verified, 1 when not, 2 on bad usage.
 */
#ifndef NAS_H
#define NAS_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAS_A 1220703125.0 /* 5^13, the specification's multiplier */
#define NAS_SEED 314159265.0 /* the specification's usual seed */

static inline uint64_t nas_mulmod46(uint64_t a, uint64_t x)
{
    return (uint64_t)(((unsigned __int128)a * x) & ((((unsigned __int128)1) << 46) - 1));
}

/* Advances *x by one step of the generator with multiplier a; returns the new value / 2^46. */
static inline double randlc(double *x, double a)
{
    uint64_t v = nas_mulmod46((uint64_t)a, (uint64_t)*x);
    *x = (double)v;
    return (double)v * 0x1p-46;
}

/* Fills y[0..n) with the next n values of the generator and advances *x past them. */
static inline void vranlc(long n, double *x, double a, double *y)
{
    uint64_t ai = (uint64_t)a, v = (uint64_t)*x;
    for (long i = 0; i < n; i++) {
        v = nas_mulmod46(ai, v);
        y[i] = (double)v * 0x1p-46;
    }
    *x = (double)v;
}

/* a^n mod 2^46 (as a double), to jump the generator ahead n steps: x * pow = the value n
 * steps later. */
static inline double nas_power(double a, uint64_t n)
{
    uint64_t r = 1, b = (uint64_t)a;
    while (n) {
        if (n & 1)
            r = nas_mulmod46(r, b);
        b = nas_mulmod46(b, b);
        n >>= 1;
    }
    return (double)r;
}

/* The class letter from argv[1] (upper case); exits with status 2 and a message if absent or
 * not one of `allowed` (for example "SWA"). Call after MPI_Init. */
static inline char nas_class(int argc, char **argv, const char *kernel, const char *allowed)
{
    char c = argc > 1 && argv[1][0] && !argv[1][1] ? argv[1][0] : 0;
    if (c >= 'a' && c <= 'z')
        c = (char)(c - 'a' + 'A');
    if (!c || !strchr(allowed, c)) {
        int rank = 0;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        if (rank == 0)
            fprintf(stderr, "usage: %s CLASS   (CLASS is one of %s)\n", kernel, allowed);
        MPI_Finalize();
        exit(2);
    }
    return c;
}

/* Prints the result line on rank 0 and returns the exit status (0 verified, 1 not), the same
 * on every rank: rank 0's verdict. Collective. The closing barrier keeps any rank from exiting
 * (a failing status ends the job) before rank 0 has printed the line. */
static inline int nas_report(const char *kernel, char cls, int verified, double seconds, double mops)
{
    int rank = 0, np = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    MPI_Bcast(&verified, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("%s %c np=%d %s %.3f s %.1f Mop/s\n", kernel, cls, np, verified ? "VERIFIED" : "FAILED", seconds, mops);
        fflush(stdout);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    return verified ? 0 : 1;
}

/* |value - reference| / |reference| <= epsilon, the specification's verification test. */
static inline int nas_close(double value, double reference, double epsilon)
{
    double d = value - reference;
    if (d < 0)
        d = -d;
    double r = reference < 0 ? -reference : reference;
    return r == 0.0 ? d <= epsilon : d / r <= epsilon;
}

#endif
