/*
 * user_ops: user-defined operations made by MPI_Op_create, through
 * MPI_Reduce_local.
 *
 *  - A non-commutative operation, the 2x2 integer matrix product, on a
 *    contiguous type of 4 ints: the result must be in * inout (in on the
 *    left), and the function must get the whole buffer in one call with the
 *    count and the datatype handle the program passed.
 *  - MPI_Op_commutative says 0 for it, 1 for a commutative one and for the
 *    predefined operations.
 *  - A commutative operation on a long vector of doubles.
 *  - MPI_Op_free sets the handle to MPI_OP_NULL; a new operation works after
 *    frees, and many can exist at once.
 */
#define TEST_NAME "user_ops"
#include "mpitest.h"

static MPI_Datatype matrix_type;
static int calls, last_len;
static MPI_Datatype last_type;

/* inout = in x inout for len 2x2 matrices (row-major). */
static void matmul(void *invec, void *inoutvec, int *len, MPI_Datatype *datatype)
{
    const int *a = invec;
    int *b = inoutvec;
    calls++;
    last_len = *len;
    last_type = *datatype;
    for (int k = 0; k < *len; k++, a += 4, b += 4) {
        int r[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3],
                    a[2] * b[0] + a[3] * b[2], a[2] * b[1] + a[3] * b[3]};
        memcpy(b, r, sizeof r);
    }
}

/* inout = (in + inout) mod 7, on doubles holding small integers. */
static void summod7(void *invec, void *inoutvec, int *len, MPI_Datatype *datatype)
{
    const double *a = invec;
    double *b = inoutvec;
    (void)datatype;
    calls++;
    for (int k = 0; k < *len; k++)
        b[k] = (double)(((long)a[k] + (long)b[k]) % 7);
}

static void noncommutative_matrix_product(void)
{
    enum { M = 5 };
    int a[4 * M], b[4 * M], want[4 * M];
    for (int k = 0; k < M; k++) {
        int *x = &a[4 * k], *y = &b[4 * k];
        x[0] = 1 + k; x[1] = 2; x[2] = 0; x[3] = 1;   /* upper triangular */
        y[0] = 1; y[1] = 0; y[2] = 3 - k; y[3] = 1;   /* lower triangular */
        int *w = &want[4 * k];
        w[0] = x[0] * y[0] + x[1] * y[2]; w[1] = x[0] * y[1] + x[1] * y[3];
        w[2] = x[2] * y[0] + x[3] * y[2]; w[3] = x[2] * y[1] + x[3] * y[3];
    }
    MPI_Op op;
    CHECK_MPI(MPI_Op_create(matmul, 0, &op));
    CHECK(op != MPI_OP_NULL, "MPI_Op_create gave MPI_OP_NULL");
    int commute = -1;
    CHECK_MPI(MPI_Op_commutative(op, &commute));
    CHECK(commute == 0, "MPI_Op_commutative of a non-commutative op says %d", commute);

    calls = 0;
    CHECK_MPI(MPI_Reduce_local(a, b, M, matrix_type, op));
    CHECK(calls == 1, "the user function was called %d times for one buffer, want 1", calls);
    CHECK(last_len == M, "the user function got len %d, want %d", last_len, M);
    CHECK(last_type == matrix_type, "the user function got datatype 0x%x, want the program's 0x%x",
          (unsigned)last_type, (unsigned)matrix_type);
    for (int i = 0; i < 4 * M; i++)
        CHECK(b[i] == want[i], "matrix product: entry %d is %d, want %d (in x inout, in on the left)", i, b[i], want[i]);

    CHECK_MPI(MPI_Op_free(&op));
    CHECK(op == MPI_OP_NULL, "MPI_Op_free left the handle as 0x%x, want MPI_OP_NULL", (unsigned)op);
}

static void commutative_long_vector(void)
{
    enum { M = 50001 };
    double *a = test_malloc(M * sizeof(double)), *b = test_malloc(M * sizeof(double));
    for (int i = 0; i < M; i++) {
        a[i] = i % 11;
        b[i] = i % 5;
    }
    MPI_Op op;
    CHECK_MPI(MPI_Op_create(summod7, 1, &op));
    int commute = -1;
    CHECK_MPI(MPI_Op_commutative(op, &commute));
    CHECK(commute == 1, "MPI_Op_commutative of a commutative op says %d", commute);
    calls = 0;
    CHECK_MPI(MPI_Reduce_local(a, b, M, MPI_DOUBLE, op));
    CHECK(calls == 1, "the user function was called %d times", calls);
    for (int i = 0; i < M; i++)
        CHECK(b[i] == (double)((i % 11 + i % 5) % 7), "element %d is %g", i, b[i]);
    CHECK_MPI(MPI_Op_free(&op));
    free(a);
    free(b);
}

static void predefined_are_commutative(void)
{
    MPI_Op ops[] = {MPI_MAX, MPI_MIN, MPI_SUM, MPI_PROD, MPI_LAND, MPI_BAND,
                    MPI_LOR, MPI_BOR, MPI_LXOR, MPI_BXOR, MPI_MINLOC, MPI_MAXLOC};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        int commute = -1;
        CHECK_MPI(MPI_Op_commutative(ops[i], &commute));
        CHECK(commute == 1, "predefined op %zu: MPI_Op_commutative says %d", i, commute);
    }
}

/* Many operations at once, freed in a different order, then made again. */
static void many_ops(void)
{
    enum { K = 40 };
    MPI_Op ops[K];
    for (int i = 0; i < K; i++)
        CHECK_MPI(MPI_Op_create(i % 2 ? matmul : summod7, i % 2 == 0, &ops[i]));
    for (int i = 0; i < K; i++)
        for (int j = 0; j < i; j++)
            CHECK(ops[i] != ops[j], "two live operations share the handle 0x%x", (unsigned)ops[i]);
    for (int i = 0; i < K; i += 2)
        CHECK_MPI(MPI_Op_free(&ops[i]));
    for (int i = 1; i < K; i += 2) {
        int commute = -1;
        CHECK_MPI(MPI_Op_commutative(ops[i], &commute));
        CHECK(commute == 0, "op %d: commutative %d after other ops were freed", i, commute);
        CHECK_MPI(MPI_Op_free(&ops[i]));
    }
    MPI_Op op;
    CHECK_MPI(MPI_Op_create(summod7, 1, &op));
    double x = 3, y = 6;
    CHECK_MPI(MPI_Reduce_local(&x, &y, 1, MPI_DOUBLE, op));
    CHECK(y == 2, "after frees: 3 + 6 mod 7 is %g", y);
    CHECK_MPI(MPI_Op_free(&op));
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Type_contiguous(4, MPI_INT, &matrix_type));
    CHECK_MPI(MPI_Type_commit(&matrix_type));

    noncommutative_matrix_product();
    commutative_long_vector();
    predefined_are_commutative();
    many_ops();

    CHECK_MPI(MPI_Type_free(&matrix_type));
    test_ok();
    MPI_Finalize();
    return 0;
}
