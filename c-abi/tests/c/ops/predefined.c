/*
 * predefined: every predefined reduction operation on the types it is defined
 * on, through MPI_Reduce_local, against the same operation computed here in C.
 *
 * For each (operation, type) the program reduces two vectors of N elements
 * (mixed signs, zeros on either side, equal values) and compares the in-out
 * vector element by element with C's own result of `in (op) inout`: MAX and
 * MIN keep inout unless in is strictly larger/smaller, integer arithmetic
 * wraps, the logical operations give 1 or 0, complex products are the
 * textbook formula, long double is x87 extended precision, MPI_REAL16 is
 * binary128 (gfortran's REAL*16, C's __float128) and _Float16 is
 * rounded from float. The input vector must be left unchanged.
 *
 * Validated against MPICH (Debian's MPICH crashes on MPIX_C_FLOAT16, so set
 * OPS_NO_FLOAT16=1 to skip that part there).
 */
#define TEST_NAME "predefined"
#include "mpitest.h"
#include <complex.h>

enum { N = 9 };
static const int A[N] = {0, 3, -2, 7, 0, 100, -50, 1, 12};
static const int B[N] = {0, 0, 5, 7, 9, -100, -50, 1, -12};
static int cases;

/* Reduces A into B as `ctype` with `op`, and checks against `expr` of x (in) and y (inout). */
#define RUN(ctype, mpitype, op, expr)                                                   \
    do {                                                                                \
        ctype a_[N], b_[N], want_[N], keep_[N];                                         \
        for (int i_ = 0; i_ < N; i_++) {                                                \
            a_[i_] = (ctype)A[i_];                                                      \
            b_[i_] = (ctype)B[i_];                                                      \
            keep_[i_] = a_[i_];                                                         \
            ctype x = a_[i_], y = b_[i_];                                               \
            want_[i_] = (ctype)(expr);                                                  \
        }                                                                               \
        CHECK_MPI(MPI_Reduce_local(a_, b_, N, mpitype, op));                            \
        for (int i_ = 0; i_ < N; i_++) {                                                \
            CHECK(b_[i_] == want_[i_], "%s on %s: element %d is %Lg, want %Lg (in %d, inout %d)", \
                  #op, #mpitype, i_, (long double)b_[i_], (long double)want_[i_], A[i_], B[i_]); \
            CHECK(a_[i_] == keep_[i_], "%s on %s: the input vector changed", #op, #mpitype);  \
        }                                                                               \
        cases++;                                                                        \
    } while (0)

#define ORDERED(ctype, mpitype)                                                         \
    do {                                                                                \
        RUN(ctype, mpitype, MPI_MAX, x > y ? x : y);                                    \
        RUN(ctype, mpitype, MPI_MIN, x < y ? x : y);                                    \
        RUN(ctype, mpitype, MPI_SUM, x + y);                                            \
        RUN(ctype, mpitype, MPI_PROD, x * y);                                           \
        RUN(ctype, mpitype, MPI_LAND, x && y);                                          \
        RUN(ctype, mpitype, MPI_LOR, x || y);                                           \
        RUN(ctype, mpitype, MPI_LXOR, !x != !y);                                        \
    } while (0)

#define INTEGER(ctype, mpitype)                                                         \
    do {                                                                                \
        ORDERED(ctype, mpitype);                                                        \
        RUN(ctype, mpitype, MPI_BAND, x & y);                                           \
        RUN(ctype, mpitype, MPI_BOR, x | y);                                            \
        RUN(ctype, mpitype, MPI_BXOR, x ^ y);                                           \
    } while (0)

/* Complex: in = A + B i, inout = B - A i. */
#define COMPLEX(ctype, rtype, mpitype)                                                  \
    do {                                                                                \
        ctype a_[N], b_[N], want_s[N], want_p[N];                                       \
        for (int i_ = 0; i_ < N; i_++) {                                                \
            rtype ar = (rtype)A[i_], ai = (rtype)B[i_], br = (rtype)B[i_], bi = (rtype)-A[i_]; \
            a_[i_] = ar + ai * I;                                                       \
            b_[i_] = br + bi * I;                                                       \
            want_s[i_] = (ar + br) + (ai + bi) * I;                                     \
            want_p[i_] = (ar * br - ai * bi) + (ar * bi + ai * br) * I;                 \
        }                                                                               \
        CHECK_MPI(MPI_Reduce_local(a_, b_, N, mpitype, MPI_SUM));                       \
        for (int i_ = 0; i_ < N; i_++)                                                  \
            CHECK(b_[i_] == want_s[i_], "MPI_SUM on %s: element %d wrong", #mpitype, i_); \
        for (int i_ = 0; i_ < N; i_++)                                                  \
            b_[i_] = (rtype)B[i_] + (rtype)-A[i_] * I;                                  \
        CHECK_MPI(MPI_Reduce_local(a_, b_, N, mpitype, MPI_PROD));                      \
        for (int i_ = 0; i_ < N; i_++)                                                  \
            CHECK(b_[i_] == want_p[i_], "MPI_PROD on %s: element %d is %Lg%+Lgi, want %Lg%+Lgi", \
                  #mpitype, i_, (long double)creall(b_[i_]), (long double)cimagl(b_[i_]), \
                  (long double)creall(want_p[i_]), (long double)cimagl(want_p[i_]));   \
        cases += 2;                                                                     \
    } while (0)

/* Types with only the logical operations, on the values 0 and 1. */
#define LOGICAL(ctype, mpitype)                                                         \
    do {                                                                                \
        ctype a_[4] = {0, 0, 1, 1}, b_[4], want_[4];                                    \
        const ctype y_[4] = {0, 1, 0, 1};                                               \
        MPI_Op ops_[3] = {MPI_LAND, MPI_LOR, MPI_LXOR};                                 \
        for (int o_ = 0; o_ < 3; o_++) {                                                \
            for (int i_ = 0; i_ < 4; i_++) {                                            \
                b_[i_] = y_[i_];                                                        \
                int x = a_[i_], y = y_[i_];                                             \
                want_[i_] = (ctype)(o_ == 0 ? (x && y) : o_ == 1 ? (x || y) : (!x != !y)); \
            }                                                                           \
            CHECK_MPI(MPI_Reduce_local(a_, b_, 4, mpitype, ops_[o_]));                  \
            for (int i_ = 0; i_ < 4; i_++)                                              \
                CHECK(b_[i_] == want_[i_], "logical op %d on %s: element %d is %d, want %d", \
                      o_, #mpitype, i_, (int)b_[i_], (int)want_[i_]);                   \
            cases++;                                                                    \
        }                                                                               \
    } while (0)

/* long double has more range and precision than double: 1e300 * 1e300 is finite,
 * and 1 + 2^-60 is not 1. */
static void long_double_precision(void)
{
    long double a[2] = {1e300L, 0x1p-60L}, b[2] = {1e300L, 1.0L};
    CHECK_MPI(MPI_Reduce_local(&a[0], &b[0], 1, MPI_LONG_DOUBLE, MPI_PROD));
    CHECK(b[0] == 1e600L, "1e300 * 1e300 as long double is %Lg", b[0]);
    CHECK_MPI(MPI_Reduce_local(&a[1], &b[1], 1, MPI_LONG_DOUBLE, MPI_SUM));
    CHECK(b[1] - 1.0L == 0x1p-60L, "1 + 2^-60 as long double lost its low bits");
    cases += 2;
}

/* A long vector: the vectorized loop and its remainder, on an odd count. */
static void long_vector(void)
{
    enum { M = 100003 };
    double *a = test_malloc(M * sizeof(double)), *b = test_malloc(M * sizeof(double));
    for (int i = 0; i < M; i++) {
        a[i] = i * 0.5;
        b[i] = (M - i) * 0.25;
    }
    CHECK_MPI(MPI_Reduce_local(a, b, M, MPI_DOUBLE, MPI_SUM));
    for (int i = 0; i < M; i++)
        CHECK(b[i] == i * 0.5 + (M - i) * 0.25, "long vector: element %d is %g", i, b[i]);
    free(a);
    free(b);
    cases++;
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));

    INTEGER(char, MPI_CHAR);
    INTEGER(signed char, MPI_SIGNED_CHAR);
    INTEGER(unsigned char, MPI_UNSIGNED_CHAR);
    INTEGER(short, MPI_SHORT);
    INTEGER(unsigned short, MPI_UNSIGNED_SHORT);
    INTEGER(int, MPI_INT);
    INTEGER(unsigned, MPI_UNSIGNED);
    INTEGER(long, MPI_LONG);
    INTEGER(unsigned long, MPI_UNSIGNED_LONG);
    INTEGER(long long, MPI_LONG_LONG);
    INTEGER(unsigned long long, MPI_UNSIGNED_LONG_LONG);
    INTEGER(int8_t, MPI_INT8_T);
    INTEGER(int16_t, MPI_INT16_T);
    INTEGER(int32_t, MPI_INT32_T);
    INTEGER(int64_t, MPI_INT64_T);
    INTEGER(uint8_t, MPI_UINT8_T);
    INTEGER(uint16_t, MPI_UINT16_T);
    INTEGER(uint32_t, MPI_UINT32_T);
    INTEGER(uint64_t, MPI_UINT64_T);
    INTEGER(MPI_Aint, MPI_AINT);
    INTEGER(MPI_Offset, MPI_OFFSET);
    INTEGER(MPI_Count, MPI_COUNT);
    INTEGER(int, MPI_INTEGER);
    INTEGER(int8_t, MPI_INTEGER1);
    INTEGER(int16_t, MPI_INTEGER2);
    INTEGER(int32_t, MPI_INTEGER4);
    INTEGER(int64_t, MPI_INTEGER8);
    INTEGER(char, MPI_CHARACTER);
    ORDERED(float, MPI_FLOAT);
    ORDERED(double, MPI_DOUBLE);
    ORDERED(long double, MPI_LONG_DOUBLE);
    ORDERED(float, MPI_REAL);
    ORDERED(double, MPI_DOUBLE_PRECISION);
    ORDERED(float, MPI_REAL4);
    ORDERED(double, MPI_REAL8);
    ORDERED(__float128, MPI_REAL16);
    if (!getenv("OPS_NO_FLOAT16"))
        ORDERED(_Float16, MPIX_C_FLOAT16);

    RUN(unsigned char, MPI_BYTE, MPI_BAND, x & y);
    RUN(unsigned char, MPI_BYTE, MPI_BOR, x | y);
    RUN(unsigned char, MPI_BYTE, MPI_BXOR, x ^ y);

    COMPLEX(float _Complex, float, MPI_C_FLOAT_COMPLEX);
    COMPLEX(double _Complex, double, MPI_C_DOUBLE_COMPLEX);
    COMPLEX(long double _Complex, long double, MPI_C_LONG_DOUBLE_COMPLEX);
    COMPLEX(float _Complex, float, MPI_CXX_FLOAT_COMPLEX);
    COMPLEX(double _Complex, double, MPI_CXX_DOUBLE_COMPLEX);
    COMPLEX(long double _Complex, long double, MPI_CXX_LONG_DOUBLE_COMPLEX);
    COMPLEX(float _Complex, float, MPI_COMPLEX);
    COMPLEX(double _Complex, double, MPI_DOUBLE_COMPLEX);
    COMPLEX(float _Complex, float, MPI_COMPLEX8);
    COMPLEX(double _Complex, double, MPI_COMPLEX16);

    LOGICAL(_Bool, MPI_C_BOOL);
    LOGICAL(_Bool, MPI_CXX_BOOL);
    LOGICAL(int, MPI_LOGICAL);

    long_double_precision();
    long_vector();

    /* count 0 touches nothing, NULL buffers included. */
    CHECK_MPI(MPI_Reduce_local(NULL, NULL, 0, MPI_DOUBLE, MPI_SUM));

    if (test_rank == 0)
        printf("%d operation/type cases checked\n", cases);
    test_ok();
    MPI_Finalize();
    return 0;
}
