/*
 * minmaxloc: MPI_MAXLOC and MPI_MINLOC on the nine value-and-index pair types,
 * through MPI_Reduce_local.
 *
 * Each pair type gets the same vectors: a strictly larger value on either
 * side, and equal values, where the standard's rule applies: the result keeps
 * the value and takes the smaller of the two indices, whichever operand it
 * came from. Only the value and index are written: the padding bytes of the
 * in-out buffer keep what they held. Validated against MPICH.
 */
#define TEST_NAME "minmaxloc"
#include "mpitest.h"

enum { N = 6 };
/* in = (VA, IA), inout = (VB, IB). */
static const int VA[N] = {5, 1, 3, 3, -7, 0};
static const int IA[N] = {0, 1, 2, 9, 4, 5};
static const int VB[N] = {4, 2, 3, 3, -7, 0};
static const int IB[N] = {10, 11, 12, 3, 14, 5};
static int cases;

#define PAIR(name, vtype, itype, mpitype)                                               \
    do {                                                                                \
        struct name { vtype v; itype i; } a_[N], b_[N];                                 \
        for (int which_ = 0; which_ < 2; which_++) {                                    \
            int max_ = which_ == 0;                                                     \
            memset(a_, 0x11, sizeof a_);                                                \
            memset(b_, 0x5a, sizeof b_);                                                \
            for (int k_ = 0; k_ < N; k_++) {                                            \
                a_[k_].v = (vtype)VA[k_];                                               \
                a_[k_].i = (itype)IA[k_];                                               \
                b_[k_].v = (vtype)VB[k_];                                               \
                b_[k_].i = (itype)IB[k_];                                               \
            }                                                                           \
            struct name pad_;                                                           \
            memcpy(&pad_, &b_[0], sizeof pad_);                                         \
            CHECK_MPI(MPI_Reduce_local(a_, b_, N, mpitype, max_ ? MPI_MAXLOC : MPI_MINLOC)); \
            for (int k_ = 0; k_ < N; k_++) {                                            \
                int va = VA[k_], vb = VB[k_];                                           \
                int in_wins = max_ ? va > vb : va < vb;                                 \
                int want_v = in_wins ? va : va == vb ? va : vb;                         \
                int want_i = in_wins ? IA[k_] : va == vb ? (IA[k_] < IB[k_] ? IA[k_] : IB[k_]) : IB[k_]; \
                CHECK(b_[k_].v == (vtype)want_v && b_[k_].i == (itype)want_i,           \
                      "%s on %s, pair %d: got (%g, %g), want (%d, %d)",                 \
                      max_ ? "MPI_MAXLOC" : "MPI_MINLOC", #mpitype, k_,                 \
                      (double)b_[k_].v, (double)b_[k_].i, want_v, want_i);             \
            }                                                                           \
            /* Bytes after the index (the padding, if any) of the first pair. */        \
            size_t end_ = offsetof(struct name, i) + sizeof(itype);                     \
            CHECK(memcmp((char *)&b_[0] + end_, (char *)&pad_ + end_, sizeof pad_ - end_) == 0, \
                  "%s on %s wrote into the padding", max_ ? "MPI_MAXLOC" : "MPI_MINLOC", #mpitype); \
            cases++;                                                                    \
        }                                                                               \
    } while (0)

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));

    PAIR(two_int, int, int, MPI_2INT);
    PAIR(float_int, float, int, MPI_FLOAT_INT);
    PAIR(double_int, double, int, MPI_DOUBLE_INT);
    PAIR(long_int, long, int, MPI_LONG_INT);
    PAIR(short_int, short, int, MPI_SHORT_INT);
    PAIR(long_double_int, long double, int, MPI_LONG_DOUBLE_INT);
    PAIR(two_integer, int, int, MPI_2INTEGER);
    PAIR(two_real, float, float, MPI_2REAL);
    PAIR(two_double, double, double, MPI_2DOUBLE_PRECISION);

    if (test_rank == 0)
        printf("%d pair cases checked\n", cases);
    test_ok();
    MPI_Finalize();
    return 0;
}
