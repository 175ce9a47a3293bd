/*
 * coll_ops: reductions with user-defined operations, non-commutative ones included, and
 * with a derived datatype. The non-commutative operation is the product of 2x2 integer
 * matrices modulo a prime (associative, not commutative), one matrix being an element of a
 * contiguous type of 4 ints: the result must be M_0 * M_1 * ... in rank order, whatever
 * the tree. A commutative user operation (sum of the ints modulo the prime) runs at a count
 * large enough for the long-message algorithms.
 */
#define TEST_NAME "coll_ops"
#include "../mpitest.h"

#include "matmod.h"

static int calls_with_wrong_type = 0;
static MPI_Datatype mat_type;

/* inout = in * inout: `in` comes from the lower ranks. */
static void matmul_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    mat *x = in, *y = inout;
    if (*dt != mat_type)
        calls_with_wrong_type++;
    for (int i = 0; i < *len; i++)
        y[i] = mmul(x[i], y[i]);
}

static void summod_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    int *x = in, *y = inout;
    (void)dt;
    for (int i = 0; i < *len; i++)
        y[i] = (x[i] + y[i]) % P;
}

static void expect_mat(const mat *got, int n, int lo, int hi, int shift, const char *what)
{
    for (int j = 0; j < n; j++) {
        mat w = product(lo, hi, j + shift);
        if (got[j].a != w.a || got[j].b != w.b || got[j].c != w.c || got[j].d != w.d)
            FAIL("%s: element %d is [%d %d %d %d], want [%d %d %d %d]", what, j, got[j].a, got[j].b,
                 got[j].c, got[j].d, w.a, w.b, w.c, w.d);
    }
}

static void run(MPI_Comm comm)
{
    int rank, size;
    CHECK_MPI(MPI_Comm_rank(comm, &rank));
    CHECK_MPI(MPI_Comm_size(comm, &size));
    MPI_Op mm, sm;
    CHECK_MPI(MPI_Op_create(matmul_op, 0, &mm));
    CHECK_MPI(MPI_Op_create(summod_op, 1, &sm));
    int counts[3] = {1, 7, 3000};
    for (int k = 0; k < 3; k++) {
        int n = counts[k];
        mat *s = test_malloc(sizeof(mat) * (size_t)n * (size_t)size);
        mat *r = test_malloc(sizeof(mat) * (size_t)n * (size_t)size);
        for (int j = 0; j < n * size; j++)
            s[j] = mine(rank, j);
        for (int root = 0; root < size; root++) {
            memset(r, 0, sizeof(mat) * (size_t)n);
            CHECK_MPI(MPI_Reduce(s, r, n, mat_type, mm, root, comm));
            if (rank == root)
                expect_mat(r, n, 0, size, 0, "reduce (non-commutative)");
        }
        CHECK_MPI(MPI_Allreduce(s, r, n, mat_type, mm, comm));
        expect_mat(r, n, 0, size, 0, "allreduce (non-commutative)");
        memcpy(r, s, sizeof(mat) * (size_t)n);
        CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, r, n, mat_type, mm, comm));
        expect_mat(r, n, 0, size, 0, "allreduce in place (non-commutative)");
        CHECK_MPI(MPI_Scan(s, r, n, mat_type, mm, comm));
        expect_mat(r, n, 0, rank + 1, 0, "scan (non-commutative)");
        CHECK_MPI(MPI_Exscan(s, r, n, mat_type, mm, comm));
        if (rank > 0)
            expect_mat(r, n, 0, rank, 0, "exscan (non-commutative)");
        CHECK_MPI(MPI_Reduce_scatter_block(s, r, n, mat_type, mm, comm));
        expect_mat(r, n, 0, size, n * rank, "reduce_scatter_block (non-commutative)");
        free(s);
        free(r);
    }
    CHECK(calls_with_wrong_type == 0, "the user function got another datatype than the one passed");
    /* A commutative user operation on a long vector (Rabenseifner's algorithms). */
    int n = 300000;
    int *a = test_malloc(sizeof(int) * (size_t)n), *b = test_malloc(sizeof(int) * (size_t)n);
    for (int j = 0; j < n; j++)
        a[j] = (rank * 7 + j) % P;
    CHECK_MPI(MPI_Allreduce(a, b, n, MPI_INT, sm, comm));
    for (int j = 0; j < n; j++) {
        int w = 0;
        for (int i = 0; i < size; i++)
            w = (w + (i * 7 + j) % P) % P;
        CHECK(b[j] == w, "allreduce (commutative user op) element %d is %d, want %d", j, b[j], w);
    }
    CHECK_MPI(MPI_Reduce(a, b, n, MPI_INT, sm, size - 1, comm));
    if (rank == size - 1)
        for (int j = 0; j < n; j++) {
            int w = 0;
            for (int i = 0; i < size; i++)
                w = (w + (i * 7 + j) % P) % P;
            CHECK(b[j] == w, "reduce (commutative user op) element %d is %d, want %d", j, b[j], w);
        }
    free(a);
    free(b);
    CHECK_MPI(MPI_Op_free(&mm));
    CHECK_MPI(MPI_Op_free(&sm));
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    CHECK_MPI(MPI_Type_contiguous(4, MPI_INT, &mat_type));
    CHECK_MPI(MPI_Type_commit(&mat_type));
    run(MPI_COMM_WORLD);
    CHECK_MPI(MPI_Type_free(&mat_type));
    test_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
