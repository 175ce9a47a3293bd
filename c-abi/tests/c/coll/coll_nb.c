/*
 * coll_nb: nonblocking collectives. Several are started at once on one communicator and
 * completed together (MPI_Waitall), or one is driven by MPI_Test alone; results are checked
 * as for the blocking ones. A blocking collective in between must not match their messages,
 * and ranks may wait for their requests in different orders.
 */
#define TEST_NAME "coll_nb"
#include "../mpitest.h"

static int val(int r, long j, int salt)
{
    return (int)(((long)(r + 1) * 131 + j * 7 + (long)salt * 17) % 100003);
}

static void run(MPI_Comm comm, int n)
{
    int rank, size;
    CHECK_MPI(MPI_Comm_rank(comm, &rank));
    CHECK_MPI(MPI_Comm_size(comm, &size));
    int *b = test_malloc(sizeof(int) * (size_t)n + 4);
    int *s = test_malloc(sizeof(int) * (size_t)n + 4), *r = test_malloc(sizeof(int) * (size_t)n + 4);
    int *s2 = test_malloc(sizeof(int) * (size_t)n + 4), *r2 = test_malloc(sizeof(int) * (size_t)n + 4);
    int *ga = test_malloc(sizeof(int) * (size_t)n * (size_t)size + 4);
    int *ta = test_malloc(sizeof(int) * (size_t)n * (size_t)size + 4);
    int *tb = test_malloc(sizeof(int) * (size_t)n * (size_t)size + 4);
    int *rr = test_malloc(sizeof(int) * (size_t)n + 4);
    int root = size - 1;
    MPI_Request q[7];
    for (int j = 0; j < n; j++) {
        b[j] = rank == root ? val(root, j, 1) : -1;
        s[j] = val(rank, j, 2);
        s2[j] = val(rank, j, 3);
    }
    for (int i = 0; i < size; i++)
        for (int j = 0; j < n; j++)
            ta[i * n + j] = val(rank * size + i, j, 4);
    CHECK_MPI(MPI_Ibarrier(comm, &q[0]));
    CHECK_MPI(MPI_Ibcast(b, n, MPI_INT, root, comm, &q[1]));
    CHECK_MPI(MPI_Iallreduce(s, r, n, MPI_INT, MPI_SUM, comm, &q[2]));
    CHECK_MPI(MPI_Ireduce(s2, r2, n, MPI_INT, MPI_SUM, 0, comm, &q[3]));
    CHECK_MPI(MPI_Iallgather(s, n, MPI_INT, ga, n, MPI_INT, comm, &q[4]));
    CHECK_MPI(MPI_Ialltoall(ta, n, MPI_INT, tb, n, MPI_INT, comm, &q[5]));
    CHECK_MPI(MPI_Iscan(s, rr, n, MPI_INT, MPI_SUM, comm, &q[6]));
    /* A blocking collective while they are in flight. */
    int one = 1, total = 0;
    CHECK_MPI(MPI_Allreduce(&one, &total, 1, MPI_INT, MPI_SUM, comm));
    CHECK(total == size, "blocking allreduce among nonblocking ones gave %d, want %d", total, size);
    CHECK_MPI(MPI_Waitall(7, q, MPI_STATUSES_IGNORE));
    for (int i = 0; i < 7; i++)
        CHECK(q[i] == MPI_REQUEST_NULL, "request %d not freed by MPI_Waitall", i);
    for (int j = 0; j < n; j++) {
        CHECK(b[j] == val(root, j, 1), "ibcast element %d is %d", j, b[j]);
        int w = 0, w2 = 0, w3 = 0;
        for (int i = 0; i < size; i++) {
            w += val(i, j, 2);
            w2 += val(i, j, 3);
            if (i <= rank)
                w3 += val(i, j, 2);
        }
        CHECK(r[j] == w, "iallreduce element %d is %d, want %d", j, r[j], w);
        if (rank == 0)
            CHECK(r2[j] == w2, "ireduce element %d is %d, want %d", j, r2[j], w2);
        CHECK(rr[j] == w3, "iscan element %d is %d, want %d", j, rr[j], w3);
        for (int i = 0; i < size; i++) {
            CHECK(ga[i * n + j] == val(i, j, 2), "iallgather block %d element %d is %d", i, j, ga[i * n + j]);
            CHECK(tb[i * n + j] == val(i * size + rank, j, 4), "ialltoall block %d element %d is %d", i, j, tb[i * n + j]);
        }
    }
    /* Two in flight, completed in different orders on different ranks: waiting for one must
     * move the other on, or ranks waiting for each other's other collective deadlock. */
    MPI_Request two[2];
    for (int j = 0; j < n; j++)
        b[j] = rank == 0 ? val(0, j, 5) : -1;
    CHECK_MPI(MPI_Ibcast(b, n, MPI_INT, 0, comm, &two[0]));
    CHECK_MPI(MPI_Iallreduce(s, r, n, MPI_INT, MPI_SUM, comm, &two[1]));
    CHECK_MPI(MPI_Wait(&two[rank % 2], MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Wait(&two[1 - rank % 2], MPI_STATUS_IGNORE));
    for (int j = 0; j < n; j++) {
        int w = 0;
        for (int i = 0; i < size; i++)
            w += val(i, j, 2);
        CHECK(b[j] == val(0, j, 5), "ibcast (waited out of order) element %d is %d", j, b[j]);
        CHECK(r[j] == w, "iallreduce (waited out of order) element %d is %d, want %d", j, r[j], w);
    }
    /* One driven by MPI_Test only. */
    MPI_Request t;
    int flag = 0;
    long spins = 0;
    CHECK_MPI(MPI_Iallreduce(s, r, n, MPI_INT, MPI_MAX, comm, &t));
    while (!flag) {
        CHECK_MPI(MPI_Test(&t, &flag, MPI_STATUS_IGNORE));
        spins++;
    }
    CHECK(t == MPI_REQUEST_NULL, "MPI_Test did not free the completed request");
    for (int j = 0; j < n; j++) {
        int w = val(0, j, 2);
        for (int i = 1; i < size; i++)
            if (val(i, j, 2) > w)
                w = val(i, j, 2);
        CHECK(r[j] == w, "iallreduce MAX element %d is %d, want %d", j, r[j], w);
    }
    /* The other nonblocking collectives, one at a time. */
    for (int j = 0; j < n; j++)
        r[j] = -1;
    CHECK_MPI(MPI_Igather(s, n, MPI_INT, ga, n, MPI_INT, 0, comm, &t));
    CHECK_MPI(MPI_Wait(&t, MPI_STATUS_IGNORE));
    if (rank == 0)
        for (int i = 0; i < size; i++)
            for (int j = 0; j < n; j++)
                CHECK(ga[i * n + j] == val(i, j, 2), "igather block %d element %d", i, j);
    CHECK_MPI(MPI_Iscatter(ga, n, MPI_INT, r, n, MPI_INT, 0, comm, &t));
    CHECK_MPI(MPI_Wait(&t, MPI_STATUS_IGNORE));
    for (int j = 0; j < n; j++)
        CHECK(r[j] == val(rank, j, 2), "iscatter element %d is %d", j, r[j]);
    CHECK_MPI(MPI_Iexscan(s, rr, n, MPI_INT, MPI_SUM, comm, &t));
    CHECK_MPI(MPI_Wait(&t, MPI_STATUS_IGNORE));
    if (rank > 0)
        for (int j = 0; j < n; j++) {
            int w = 0;
            for (int i = 0; i < rank; i++)
                w += val(i, j, 2);
            CHECK(rr[j] == w, "iexscan element %d is %d, want %d", j, rr[j], w);
        }
    CHECK_MPI(MPI_Ireduce_scatter_block(ta, r, n, MPI_INT, MPI_SUM, comm, &t));
    CHECK_MPI(MPI_Wait(&t, MPI_STATUS_IGNORE));
    for (int j = 0; j < n; j++) {
        int w = 0;
        for (int i = 0; i < size; i++)
            w += val(i * size + rank, j, 4);
        CHECK(r[j] == w, "ireduce_scatter_block element %d is %d, want %d", j, r[j], w);
    }
    free(b);
    free(s);
    free(r);
    free(s2);
    free(r2);
    free(ga);
    free(ta);
    free(tb);
    free(rr);
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    int sizes[4] = {0, 1, 1000, 100000};
    for (int i = 0; i < 4; i++)
        run(MPI_COMM_WORLD, sizes[i]);
    test_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
