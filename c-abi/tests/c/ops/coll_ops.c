/*
 * coll_ops: the operations across ranks, through MPI_Reduce and MPI_Allreduce.
 *
 *  - A non-commutative user operation (2x2 matrix product modulo a prime) on
 *    a contiguous type: the result must be M_0 x M_1 x ... x M_{n-1}, in rank
 *    order, at the root and everywhere.
 *  - MPI_MAXLOC / MPI_MINLOC with ties between ranks: the smallest rank wins.
 *  - MPI_SUM, MPI_PROD, MPI_BXOR on longer vectors of several types.
 *  - A user operation freed while an MPI_Iallreduce that uses it is pending:
 *    MPI_Op_free only marks it for deallocation, so the reduction still
 *    applies it (and not another operation created meanwhile).
 *  - MPI_REPLACE and MPI_NO_OP are refused with MPI_ERR_OP (as MPICH does).
 */
#define TEST_NAME "coll_ops"
#include "mpitest.h"

enum { P = 1000003 };

static void matmul_mod(void *invec, void *inoutvec, int *len, MPI_Datatype *datatype)
{
    const long *a = invec;
    long *b = inoutvec;
    (void)datatype;
    for (int k = 0; k < *len; k++, a += 4, b += 4) {
        long r[4] = {(a[0] * b[0] + a[1] * b[2]) % P, (a[0] * b[1] + a[1] * b[3]) % P,
                     (a[2] * b[0] + a[3] * b[2]) % P, (a[2] * b[1] + a[3] * b[3]) % P};
        memcpy(b, r, sizeof r);
    }
}

/* Rank r's k-th matrix. */
static void matrix_of(int r, int k, long m[4])
{
    m[0] = 1 + r;
    m[1] = 2 * k + 1;
    m[2] = r * r + k;
    m[3] = 3;
}

static void noncommutative(MPI_Datatype mat)
{
    enum { K = 3 };
    MPI_Op op;
    CHECK_MPI(MPI_Op_create(matmul_mod, 0, &op));
    long mine[4 * K], out[4 * K], want[4 * K];
    for (int k = 0; k < K; k++) {
        matrix_of(test_rank, k, &mine[4 * k]);
        matrix_of(0, k, &want[4 * k]);
        for (int r = 1; r < test_size; r++) {
            long m[4];
            int one = 1;
            matrix_of(r, k, m);
            /* want = want x m: the in operand (want, lower ranks) on the left. */
            long w[4];
            memcpy(w, &want[4 * k], sizeof w);
            matmul_mod(w, m, &one, &mat);
            memcpy(&want[4 * k], m, sizeof m);
        }
    }
    for (int root = 0; root < test_size; root++) {
        memset(out, 0, sizeof out);
        CHECK_MPI(MPI_Reduce(mine, out, K, mat, op, root, MPI_COMM_WORLD));
        if (test_rank == root)
            for (int i = 0; i < 4 * K; i++)
                CHECK(out[i] == want[i], "MPI_Reduce to %d, non-commutative: entry %d is %ld, want %ld", root, i,
                      out[i], want[i]);
    }
    memset(out, 0, sizeof out);
    CHECK_MPI(MPI_Allreduce(mine, out, K, mat, op, MPI_COMM_WORLD));
    for (int i = 0; i < 4 * K; i++)
        CHECK(out[i] == want[i], "MPI_Allreduce, non-commutative: entry %d is %ld, want %ld", i, out[i], want[i]);
    CHECK_MPI(MPI_Op_free(&op));
}

static void loc_ties(void)
{
    struct { double v; int i; } in[2], out[2];
    in[0].v = test_rank % 2; /* max 1 at ranks 1, 3, ...: rank 1 wins */
    in[0].i = test_rank;
    in[1].v = test_rank == 0 ? 5 : -(double)(test_rank % 3); /* min at ranks 2, 5, ... */
    in[1].i = test_rank;
    CHECK_MPI(MPI_Allreduce(in, out, 1, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD));
    int want = test_size > 1 ? 1 : 0;
    CHECK(out[0].v == (test_size > 1 ? 1 : 0) && out[0].i == want, "MAXLOC with ties gave (%g, %d), want index %d",
          out[0].v, out[0].i, want);
    CHECK_MPI(MPI_Allreduce(&in[1], &out[1], 1, MPI_DOUBLE_INT, MPI_MINLOC, MPI_COMM_WORLD));
    int wmin = test_size > 2 ? 2 : test_size > 1 ? 1 : 0;
    CHECK(out[1].i == wmin, "MINLOC with ties gave (%g, %d), want index %d", out[1].v, out[1].i, wmin);
}

static void vectors(void)
{
    enum { M = 1000 };
    long *l = test_malloc(M * sizeof(long)), *lo = test_malloc(M * sizeof(long));
    double *d = test_malloc(M * sizeof(double)), *dout = test_malloc(M * sizeof(double));
    for (int i = 0; i < M; i++) {
        l[i] = (long)test_rank * 1000 + i;
        d[i] = 1.0 + (test_rank + i) % 3;
    }
    CHECK_MPI(MPI_Allreduce(l, lo, M, MPI_LONG, MPI_SUM, MPI_COMM_WORLD));
    for (int i = 0; i < M; i++)
        CHECK(lo[i] == 1000L * test_size * (test_size - 1) / 2 + (long)i * test_size, "SUM: element %d is %ld", i, lo[i]);
    CHECK_MPI(MPI_Allreduce(l, lo, M, MPI_LONG, MPI_BXOR, MPI_COMM_WORLD));
    for (int i = 0; i < M; i++) {
        long x = 0;
        for (int r = 0; r < test_size; r++)
            x ^= (long)r * 1000 + i;
        CHECK(lo[i] == x, "BXOR: element %d is %ld, want %ld", i, lo[i], x);
    }
    CHECK_MPI(MPI_Allreduce(d, dout, M, MPI_DOUBLE, MPI_PROD, MPI_COMM_WORLD));
    for (int i = 0; i < M; i++) {
        double x = 1;
        for (int r = 0; r < test_size; r++)
            x *= 1.0 + (r + i) % 3;
        CHECK(dout[i] == x, "PROD: element %d is %g, want %g", i, dout[i], x);
    }
    free(l);
    free(lo);
    free(d);
    free(dout);
}

static void other(void *invec, void *inoutvec, int *len, MPI_Datatype *datatype)
{
    (void)invec; (void)inoutvec; (void)len; (void)datatype;
    FAIL("an operation created after MPI_Op_free was applied in place of the freed one");
}

static void freed_while_pending(MPI_Datatype mat)
{
    MPI_Op op, later;
    CHECK_MPI(MPI_Op_create(matmul_mod, 0, &op));
    long mine[4], out[4], want[4];
    matrix_of(test_rank, 7, mine);
    matrix_of(0, 7, want);
    for (int r = 1; r < test_size; r++) {
        long m[4], w[4];
        int one = 1;
        matrix_of(r, 7, m);
        memcpy(w, want, sizeof w);
        matmul_mod(w, m, &one, &mat);
        memcpy(want, m, sizeof m);
    }
    MPI_Request req;
    CHECK_MPI(MPI_Iallreduce(mine, out, 1, mat, op, MPI_COMM_WORLD, &req));
    CHECK_MPI(MPI_Op_free(&op));
    CHECK(op == MPI_OP_NULL, "MPI_Op_free left 0x%x", (unsigned)op);
    CHECK_MPI(MPI_Op_create(other, 1, &later));
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    for (int i = 0; i < 4; i++)
        CHECK(out[i] == want[i], "MPI_Iallreduce with a freed non-commutative op: entry %d is %ld, want %ld", i,
              out[i], want[i]);
    CHECK_MPI(MPI_Op_free(&later));
}

static void refused(void)
{
    int x = 1, y = 0;
    int rc = MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_REPLACE, MPI_COMM_WORLD);
    CHECK(error_class_of(rc) == MPI_ERR_OP, "MPI_Allreduce with MPI_REPLACE returned %s", error_text(rc));
    rc = MPI_Reduce(&x, &y, 1, MPI_INT, MPI_NO_OP, 0, MPI_COMM_WORLD);
    CHECK(error_class_of(rc) == MPI_ERR_OP, "MPI_Reduce with MPI_NO_OP returned %s", error_text(rc));
    rc = MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_MAXLOC, MPI_COMM_WORLD);
    CHECK(error_class_of(rc) == MPI_ERR_OP, "MPI_Allreduce MAXLOC on MPI_INT returned %s", error_text(rc));
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MPI_Datatype mat;
    CHECK_MPI(MPI_Type_contiguous(4, MPI_LONG, &mat));
    CHECK_MPI(MPI_Type_commit(&mat));
    noncommutative(mat);
    loc_ties();
    vectors();
    freed_while_pending(mat);
    refused();
    CHECK_MPI(MPI_Type_free(&mat));
    test_ok();
    MPI_Finalize();
    return 0;
}
