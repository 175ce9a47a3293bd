/*
 * coll_short: the short blocking collectives, which the library runs without a schedule
 * (MPI_Allreduce of short contiguous data, MPI_Bcast on a binomial tree, MPI_Barrier),
 * checked against values computed here.
 *
 *  - MPI_Allreduce with SUM, PROD, MAX, MIN, BAND, BOR, LXOR on int, unsigned, long long and
 *    double (integer-valued, so every order of additions gives the same double), MAXLOC on
 *    MPI_2INT, at counts 1, 3, 17, 256 and 700 (2800 bytes: past the short path, on the
 *    schedule), with and without MPI_IN_PLACE;
 *  - a non-commutative user operation (2x2 matrix product modulo a prime) on a contiguous
 *    type of 4 ints: the result must be M_0 * M_1 * ... in rank order;
 *  - MPI_Bcast from every root at 1, 7 and 1000 ints, and with one rank receiving through a
 *    vector type of the same signature (that rank takes the schedule, the others the short
 *    path: they must still meet);
 *  - MPI_Barrier between them, and a blocking allreduce and barrier while an MPI_Iallreduce
 *    and an MPI_Ibarrier are in flight (their messages must not mix);
 *  - all of it on MPI_COMM_WORLD and on a communicator with the ranks reversed
 *    (MPI_Comm_split), where local and global ranks differ.
 */
#define TEST_NAME "coll_short"
#include "../mpitest.h"

#include "matmod.h"

/* inout = in * inout: `in` holds the lower ranks' product. */
static void matmul_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    mat *x = in, *y = inout;
    (void)dt;
    for (int i = 0; i < *len; i++)
        y[i] = mmul(x[i], y[i]);
}

/* Rank r's value for element j (small, so products of up to 8 ranks stay exact). */
static long long val(int r, int j, int round)
{
    return (long long)((r * 5 + j * 3 + round) % 7) + 1;
}

enum { T_INT, T_UNSIGNED, T_LONG_LONG, T_DOUBLE };

static MPI_Datatype mpi_type(int t)
{
    switch (t) {
    case T_INT: return MPI_INT;
    case T_UNSIGNED: return MPI_UNSIGNED;
    case T_LONG_LONG: return MPI_LONG_LONG;
    default: return MPI_DOUBLE;
    }
}

static size_t type_size(int t)
{
    switch (t) {
    case T_INT: return sizeof(int);
    case T_UNSIGNED: return sizeof(unsigned);
    case T_LONG_LONG: return sizeof(long long);
    default: return sizeof(double);
    }
}

static void put(void *buf, int t, int j, long long v)
{
    switch (t) {
    case T_INT: ((int *)buf)[j] = (int)v; break;
    case T_UNSIGNED: ((unsigned *)buf)[j] = (unsigned)v; break;
    case T_LONG_LONG: ((long long *)buf)[j] = v; break;
    default: ((double *)buf)[j] = (double)v; break;
    }
}

static long long get(const void *buf, int t, int j)
{
    switch (t) {
    case T_INT: return ((const int *)buf)[j];
    case T_UNSIGNED: return ((const unsigned *)buf)[j];
    case T_LONG_LONG: return ((const long long *)buf)[j];
    default: return (long long)((const double *)buf)[j];
    }
}

static const char *op_name(MPI_Op op)
{
    if (op == MPI_SUM) return "MPI_SUM";
    if (op == MPI_PROD) return "MPI_PROD";
    if (op == MPI_MAX) return "MPI_MAX";
    if (op == MPI_MIN) return "MPI_MIN";
    if (op == MPI_BAND) return "MPI_BAND";
    if (op == MPI_BOR) return "MPI_BOR";
    return "MPI_LXOR";
}

static long long combine(MPI_Op op, long long a, long long b)
{
    if (op == MPI_SUM) return a + b;
    if (op == MPI_PROD) return a * b;
    if (op == MPI_MAX) return a > b ? a : b;
    if (op == MPI_MIN) return a < b ? a : b;
    if (op == MPI_BAND) return a & b;
    if (op == MPI_BOR) return a | b;
    return (!a) != (!b);
}

static void check_allreduce(MPI_Comm comm, int t, MPI_Op op, int n, int in_place, int round)
{
    int rank, size;
    CHECK_MPI(MPI_Comm_rank(comm, &rank));
    CHECK_MPI(MPI_Comm_size(comm, &size));
    size_t bytes = type_size(t) * (size_t)n;
    void *s = test_malloc(bytes), *r = test_malloc(bytes);
    for (int j = 0; j < n; j++) {
        put(s, t, j, val(rank, j, round));
        put(r, t, j, -1);
    }
    if (in_place) {
        memcpy(r, s, bytes);
        CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, r, n, mpi_type(t), op, comm));
    } else {
        CHECK_MPI(MPI_Allreduce(s, r, n, mpi_type(t), op, comm));
    }
    for (int j = 0; j < n; j++) {
        long long w = val(0, j, round);
        for (int i = 1; i < size; i++)
            w = combine(op, w, val(i, j, round));
        if (t == T_UNSIGNED)
            w = (unsigned)w;
        long long got = get(r, t, j);
        CHECK(got == w, "allreduce %s on type %d, count %d%s: element %d is %lld, want %lld",
              op_name(op), t, n, in_place ? " in place" : "", j, got, w);
    }
    /* The send buffer is left alone. */
    for (int j = 0; j < n && !in_place; j++)
        CHECK(get(s, t, j) == val(rank, j, round), "allreduce changed its send buffer");
    free(s);
    free(r);
}

static void check_maxloc(MPI_Comm comm, int n)
{
    int rank, size;
    CHECK_MPI(MPI_Comm_rank(comm, &rank));
    CHECK_MPI(MPI_Comm_size(comm, &size));
    int *s = test_malloc(sizeof(int) * 2 * (size_t)n), *r = test_malloc(sizeof(int) * 2 * (size_t)n);
    for (int j = 0; j < n; j++) {
        s[2 * j] = (int)val(rank, j, 0);
        s[2 * j + 1] = rank;
    }
    CHECK_MPI(MPI_Allreduce(s, r, n, MPI_2INT, MPI_MAXLOC, comm));
    for (int j = 0; j < n; j++) {
        int best = (int)val(0, j, 0), at = 0;
        for (int i = 1; i < size; i++)
            if (val(i, j, 0) > best) {
                best = (int)val(i, j, 0);
                at = i;
            }
        CHECK(r[2 * j] == best && r[2 * j + 1] == at, "maxloc element %d is (%d, %d), want (%d, %d)",
              j, r[2 * j], r[2 * j + 1], best, at);
    }
    free(s);
    free(r);
}

static void check_matmul(MPI_Comm comm, MPI_Datatype mat_type, MPI_Op mm, int n, int in_place)
{
    int rank, size;
    CHECK_MPI(MPI_Comm_rank(comm, &rank));
    CHECK_MPI(MPI_Comm_size(comm, &size));
    mat *s = test_malloc(sizeof(mat) * (size_t)n), *r = test_malloc(sizeof(mat) * (size_t)n);
    for (int j = 0; j < n; j++)
        s[j] = mine(rank, j);
    if (in_place) {
        memcpy(r, s, sizeof(mat) * (size_t)n);
        CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, r, n, mat_type, mm, comm));
    } else {
        CHECK_MPI(MPI_Allreduce(s, r, n, mat_type, mm, comm));
    }
    for (int j = 0; j < n; j++) {
        mat w = product(0, size, j);
        CHECK(r[j].a == w.a && r[j].b == w.b && r[j].c == w.c && r[j].d == w.d,
              "allreduce (non-commutative%s), count %d: element %d is [%d %d %d %d], want [%d %d %d %d]",
              in_place ? ", in place" : "", n, j, r[j].a, r[j].b, r[j].c, r[j].d, w.a, w.b, w.c, w.d);
    }
    free(s);
    free(r);
}

static void check_bcast(MPI_Comm comm, int n, int root, int odd_rank_out)
{
    int rank, size;
    CHECK_MPI(MPI_Comm_rank(comm, &rank));
    CHECK_MPI(MPI_Comm_size(comm, &size));
    uint32_t seed = (uint32_t)(n * 131 + root + 1);
    /* The odd rank out receives every other int of a buffer twice as long (a vector type of
     * the same signature as n ints). */
    int odd = odd_rank_out && size > 1 && rank == (root + 1) % size;
    int *buf = test_malloc(sizeof(int) * 2 * (size_t)n);
    for (int j = 0; j < 2 * n; j++)
        buf[j] = -7;
    if (rank == root)
        for (int j = 0; j < n; j++)
            buf[j] = (int)(pattern_byte(seed, (size_t)j) * 1000 + j);
    if (odd) {
        MPI_Datatype vec;
        CHECK_MPI(MPI_Type_vector(n, 1, 2, MPI_INT, &vec));
        CHECK_MPI(MPI_Type_commit(&vec));
        CHECK_MPI(MPI_Bcast(buf, 1, vec, root, comm));
        CHECK_MPI(MPI_Type_free(&vec));
    } else {
        CHECK_MPI(MPI_Bcast(buf, n, MPI_INT, root, comm));
    }
    for (int j = 0; j < n; j++) {
        int w = (int)(pattern_byte(seed, (size_t)j) * 1000 + j);
        int got = odd ? buf[2 * j] : buf[j];
        CHECK(got == w, "bcast of %d ints from %d%s: element %d is %d, want %d", n, root,
              odd ? " (through a vector type)" : "", j, got, w);
        if (odd)
            CHECK(buf[2 * j + 1] == -7, "bcast through a vector type wrote between its elements");
    }
    if (!odd)
        for (int j = n; j < 2 * n; j++)
            CHECK(buf[j] == -7, "bcast of %d ints wrote past them (element %d)", n, j);
    free(buf);
}

/* A blocking allreduce and barrier while a nonblocking allreduce and barrier are in flight. */
static void check_overlap(MPI_Comm comm)
{
    int rank, size;
    CHECK_MPI(MPI_Comm_rank(comm, &rank));
    CHECK_MPI(MPI_Comm_size(comm, &size));
    int a = rank + 1, asum = 0, b = 10 * (rank + 1), bsum = 0;
    MPI_Request req[2];
    CHECK_MPI(MPI_Iallreduce(&a, &asum, 1, MPI_INT, MPI_SUM, comm, &req[0]));
    CHECK_MPI(MPI_Ibarrier(comm, &req[1]));
    CHECK_MPI(MPI_Allreduce(&b, &bsum, 1, MPI_INT, MPI_SUM, comm));
    CHECK_MPI(MPI_Barrier(comm));
    CHECK_MPI(MPI_Waitall(2, req, MPI_STATUSES_IGNORE));
    CHECK(asum == size * (size + 1) / 2, "iallreduce gave %d, want %d", asum, size * (size + 1) / 2);
    CHECK(bsum == 10 * size * (size + 1) / 2, "allreduce beside an iallreduce gave %d, want %d", bsum,
          10 * size * (size + 1) / 2);
}

static void run(MPI_Comm comm, MPI_Datatype mat_type, MPI_Op mm)
{
    int size;
    CHECK_MPI(MPI_Comm_size(comm, &size));
    const MPI_Op arith[] = {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN};
    const MPI_Op bits[] = {MPI_BAND, MPI_BOR, MPI_LXOR};
    const int counts[] = {1, 3, 17, 256, 700};
    int round = 0;
    for (int c = 0; c < 5; c++) {
        int n = counts[c];
        for (int t = T_INT; t <= T_DOUBLE; t++) {
            for (int o = 0; o < 4; o++) {
                check_allreduce(comm, t, arith[o], n, 0, round);
                check_allreduce(comm, t, arith[o], n, 1, round);
                round++;
            }
            if (t != T_DOUBLE)
                for (int o = 0; o < 3; o++) {
                    check_allreduce(comm, t, bits[o], n, (o + c) & 1, round);
                    round++;
                }
        }
        check_maxloc(comm, n);
        CHECK_MPI(MPI_Barrier(comm));
    }
    const int mcounts[] = {1, 5, 100, 200};
    for (int c = 0; c < 4; c++) {
        check_matmul(comm, mat_type, mm, mcounts[c], 0);
        check_matmul(comm, mat_type, mm, mcounts[c], 1);
    }
    const int bcounts[] = {1, 7, 1000};
    for (int c = 0; c < 3; c++)
        for (int root = 0; root < size; root++) {
            check_bcast(comm, bcounts[c], root, 0);
            check_bcast(comm, bcounts[c], root, 1);
        }
    for (int i = 0; i < 20; i++) {
        check_overlap(comm);
        CHECK_MPI(MPI_Barrier(comm));
    }
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    MPI_Datatype mat_type;
    MPI_Op mm;
    CHECK_MPI(MPI_Type_contiguous(4, MPI_INT, &mat_type));
    CHECK_MPI(MPI_Type_commit(&mat_type));
    CHECK_MPI(MPI_Op_create(matmul_op, 0, &mm));
    run(MPI_COMM_WORLD, mat_type, mm);
    MPI_Comm reversed;
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, test_size - test_rank, &reversed));
    run(reversed, mat_type, mm);
    CHECK_MPI(MPI_Comm_free(&reversed));
    CHECK_MPI(MPI_Op_free(&mm));
    CHECK_MPI(MPI_Type_free(&mat_type));
    test_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
