/*
 * coll_types: collectives on derived datatypes. A strided vector (every other int) is
 * broadcast short and long (packed and unpacked on the way), gathered into plain ints (the
 * send and receive types differ, their signatures agree), all-reduced with MPI_SUM (the
 * operation runs on a vector type's layout), and exchanged by alltoall; the gaps of the
 * vector must stay untouched.
 */
#define TEST_NAME "coll_types"
#include "../mpitest.h"

#define GAP -7

static int val(int r, long j, int salt)
{
    return (int)(((long)(r + 1) * 131 + j * 7 + (long)salt * 17) % 100003);
}

/* n elements of the strided type: 2n ints, the data at even positions. */
static void fill_strided(int *b, long n, int r, int salt)
{
    for (long j = 0; j < n; j++) {
        b[2 * j] = val(r, j, salt);
        b[2 * j + 1] = GAP;
    }
}

static void expect_strided(const int *b, long n, int r, int salt, const char *what)
{
    for (long j = 0; j < n; j++) {
        CHECK(b[2 * j] == val(r, j, salt), "%s: element %ld is %d, want %d", what, j, b[2 * j], val(r, j, salt));
        CHECK(b[2 * j + 1] == GAP, "%s: the gap after element %ld was overwritten (%d)", what, j, b[2 * j + 1]);
    }
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    int rank = test_rank, size = test_size;
    MPI_Datatype strided, one;
    /* One int followed by a gap of one int: extent 8 bytes. */
    CHECK_MPI(MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &one));
    CHECK_MPI(MPI_Type_commit(&one));
    CHECK_MPI(MPI_Type_vector(4, 1, 2, MPI_INT, &strided));
    CHECK_MPI(MPI_Type_commit(&strided));
    long sizes[3] = {1, 1000, 200000};
    for (int k = 0; k < 3; k++) {
        long n = sizes[k];
        int *b = test_malloc(sizeof(int) * 2 * (size_t)n);
        for (int root = 0; root < size; root++) {
            if (rank == root)
                fill_strided(b, n, root, 1 + k);
            else
                for (long j = 0; j < 2 * n; j++)
                    b[j] = GAP;
            CHECK_MPI(MPI_Bcast(b, (int)n, one, root, MPI_COMM_WORLD));
            expect_strided(b, n, root, 1 + k, "bcast of a strided type");
        }
        /* Gather strided into plain ints, and allgather plain into strided. */
        int *all = test_malloc(sizeof(int) * 2 * (size_t)n * (size_t)size);
        fill_strided(b, n, rank, 10 + k);
        CHECK_MPI(MPI_Gather(b, (int)n, one, all, (int)n, MPI_INT, 0, MPI_COMM_WORLD));
        if (rank == 0)
            for (int i = 0; i < size; i++)
                for (long j = 0; j < n; j++)
                    CHECK(all[i * n + j] == val(i, j, 10 + k), "gather strided->int: rank %d element %ld is %d", i, j, all[i * n + j]);
        int *plain = test_malloc(sizeof(int) * (size_t)n);
        for (long j = 0; j < n; j++)
            plain[j] = val(rank, j, 20 + k);
        for (long j = 0; j < 2 * n * size; j++)
            all[j] = GAP;
        CHECK_MPI(MPI_Allgather(plain, (int)n, MPI_INT, all, (int)n, one, MPI_COMM_WORLD));
        for (int i = 0; i < size; i++)
            expect_strided(all + 2 * n * i, n, i, 20 + k, "allgather int->strided");
        /* Allreduce on the strided type. */
        int *s = test_malloc(sizeof(int) * 2 * (size_t)n), *r = test_malloc(sizeof(int) * 2 * (size_t)n);
        fill_strided(s, n, rank, 30 + k);
        for (long j = 0; j < 2 * n; j++)
            r[j] = GAP;
        /* (MPICH defines MPI_SUM on a vector of ints, not on a resized int: one vector.) */
        MPI_Datatype vec;
        CHECK_MPI(MPI_Type_vector((int)n, 1, 2, MPI_INT, &vec));
        CHECK_MPI(MPI_Type_commit(&vec));
        CHECK_MPI(MPI_Allreduce(s, r, 1, vec, MPI_SUM, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Type_free(&vec));
        for (long j = 0; j < n; j++) {
            int w = 0;
            for (int i = 0; i < size; i++)
                w += val(i, j, 30 + k);
            CHECK(r[2 * j] == w, "allreduce on a strided type: element %ld is %d, want %d", j, r[2 * j], w);
            CHECK(r[2 * j + 1] == GAP, "allreduce on a strided type overwrote gap %ld", j);
        }
        /* Alltoall of strided blocks. */
        int *ts = test_malloc(sizeof(int) * 2 * (size_t)n * (size_t)size);
        for (int i = 0; i < size; i++)
            fill_strided(ts + 2 * n * i, n, rank * size + i, 40 + k);
        for (long j = 0; j < 2 * n * size; j++)
            all[j] = GAP;
        CHECK_MPI(MPI_Alltoall(ts, (int)n, one, all, (int)n, one, MPI_COMM_WORLD));
        for (int i = 0; i < size; i++)
            expect_strided(all + 2 * n * i, n, i * size + rank, 40 + k, "alltoall of strided blocks");
        free(ts);
        free(s);
        free(r);
        free(plain);
        free(all);
        free(b);
    }
    /* A vector of 4 strided ints as one element: 8-int span, data at even positions. */
    int v[8], w[8];
    for (int j = 0; j < 8; j++)
        v[j] = j % 2 ? GAP : val(rank, j / 2, 50);
    CHECK_MPI(MPI_Allreduce(v, w, 1, strided, MPI_MAX, MPI_COMM_WORLD));
    for (int j = 0; j < 4; j++) {
        int m = val(0, j, 50);
        for (int i = 1; i < size; i++)
            if (val(i, j, 50) > m)
                m = val(i, j, 50);
        CHECK(w[2 * j] == m, "allreduce MAX on a vector: element %d is %d, want %d", j, w[2 * j], m);
    }
    CHECK_MPI(MPI_Type_free(&strided));
    CHECK_MPI(MPI_Type_free(&one));
    test_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
