/*
 * persistent_coll_errors: bad arguments to the persistent and neighbourhood collectives under
 * MPI_ERRORS_RETURN get the blocking form's error class at init and leave the library usable;
 * neighbourhood collectives on a communicator without a topology are MPI_ERR_TOPOLOGY;
 * starting a persistent collective that is active already is MPI_ERR_REQUEST (and the run
 * in flight still completes); MPI_Startall checks every request before starting any;
 * MPI_Cancel of an active persistent collective (an allreduce, a broadcast at a leaf) is
 * MPI_ERR_REQUEST and the run still completes with its data.
 */
#define TEST_NAME "persistent_coll_errors"
#include "../mpitest.h"

static int size;

#define EXPECT_CLASS(call, cls)                                                  \
    do {                                                                         \
        int rc_ = (call);                                                        \
        CHECK(error_class_of(rc_) == (cls), "%s returned %s, want class %s", #call, \
              rc_ == MPI_SUCCESS ? "MPI_SUCCESS" : error_text(rc_), #cls);       \
        still_works();                                                           \
    } while (0)

static void still_works(void)
{
    int one = 1, total = 0;
    CHECK_MPI(MPI_Allreduce(&one, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(total == size, "allreduce after an error gave %d, want %d", total, size);
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    size = test_size;
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int a[64], b[64 * 64], counts[64], displs[64];
    MPI_Aint bdispls[64];
    MPI_Datatype types[64];
    MPI_Request q = MPI_REQUEST_NULL;
    for (int i = 0; i < 64; i++) {
        counts[i] = 1;
        displs[i] = i;
        bdispls[i] = i * (MPI_Aint)sizeof(int);
        types[i] = MPI_INT;
    }
    memset(a, 0, sizeof a);

    /* Init calls check as their blocking forms do. */
    EXPECT_CLASS(MPI_Allreduce_init(a, b, -1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &q),
                 MPI_ERR_COUNT);
    EXPECT_CLASS(MPI_Allgather_init(a, -2, MPI_INT, b, 1, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &q),
                 MPI_ERR_COUNT);
    EXPECT_CLASS(MPI_Bcast_init(a, 1, MPI_INT, size, MPI_COMM_WORLD, MPI_INFO_NULL, &q), MPI_ERR_ROOT);
    EXPECT_CLASS(MPI_Reduce_init(a, b, 1, MPI_INT, MPI_OP_NULL, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &q),
                 MPI_ERR_OP);
    EXPECT_CLASS(MPI_Alltoall_init(a, 1, MPI_DATATYPE_NULL, b, 1, MPI_INT, MPI_COMM_WORLD,
                                   MPI_INFO_NULL, &q),
                 MPI_ERR_TYPE);
    EXPECT_CLASS(MPI_Barrier_init(MPI_COMM_NULL, MPI_INFO_NULL, &q), MPI_ERR_COMM);
    CHECK(q == MPI_REQUEST_NULL, "a failed init leaves the request argument alone");

    /* Neighbourhood collectives need a topology. */
    EXPECT_CLASS(MPI_Neighbor_allgather(a, 1, MPI_INT, b, 1, MPI_INT, MPI_COMM_WORLD),
                 MPI_ERR_TOPOLOGY);
    EXPECT_CLASS(MPI_Ineighbor_alltoall(a, 1, MPI_INT, b, 1, MPI_INT, MPI_COMM_WORLD, &q),
                 MPI_ERR_TOPOLOGY);
    EXPECT_CLASS(MPI_Neighbor_alltoallw_init(a, counts, bdispls, types, b, counts, bdispls, types,
                                             MPI_COMM_WORLD, MPI_INFO_NULL, &q),
                 MPI_ERR_TOPOLOGY);
    MPI_Comm ring;
    int dims[1] = {size}, periods[1] = {1};
    CHECK_MPI(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring));
    CHECK_MPI(MPI_Comm_set_errhandler(ring, MPI_ERRORS_RETURN));
    EXPECT_CLASS(MPI_Neighbor_alltoall(a, -1, MPI_INT, b, 1, MPI_INT, ring), MPI_ERR_COUNT);
    EXPECT_CLASS(MPI_Neighbor_allgatherv_init(a, 1, MPI_INT, b, counts, displs, MPI_DATATYPE_NULL,
                                              ring, MPI_INFO_NULL, &q),
                 MPI_ERR_TYPE);
    EXPECT_CLASS(MPI_Neighbor_alltoallv(a, counts, displs, MPI_INT, NULL, counts, displs, MPI_INT,
                                        ring),
                 MPI_ERR_BUFFER);
    EXPECT_CLASS(MPI_Neighbor_allgather(MPI_IN_PLACE, 1, MPI_INT, b, 1, MPI_INT, ring),
                 MPI_ERR_BUFFER);
    CHECK(q == MPI_REQUEST_NULL, "a failed init leaves the request argument alone");

    /* Starting an active persistent collective: MPI_ERR_REQUEST; the run in flight is fine. */
    int x = test_rank + 1, sum = 0;
    CHECK_MPI(MPI_Allreduce_init(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &q));
    CHECK_MPI(MPI_Start(&q));
    EXPECT_CLASS(MPI_Start(&q), MPI_ERR_REQUEST);
    MPI_Request pair[2] = {q, q};
    EXPECT_CLASS(MPI_Startall(2, pair), MPI_ERR_REQUEST);
    /* MPI does not allow cancelling a collective's request. */
    EXPECT_CLASS(MPI_Cancel(&q), MPI_ERR_REQUEST);
    CHECK_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
    CHECK(sum == size * (size + 1) / 2, "allreduce_init after errors: %d", sum);
    /* Startall with one bad request starts none: the good one is still inactive after it. */
    MPI_Request mixed[2] = {q, MPI_REQUEST_NULL};
    EXPECT_CLASS(MPI_Startall(2, mixed), MPI_ERR_REQUEST);
    sum = 0;
    CHECK_MPI(MPI_Start(&q));
    CHECK_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
    CHECK(sum == size * (size + 1) / 2, "allreduce_init restarted: %d", sum);
    CHECK_MPI(MPI_Request_free(&q));

    /* Nor a persistent broadcast's, whose run at a leaf is a plain receive (the root waits
     * until every rank has tried, so the leaves' receives are still pending). */
    int word = test_rank == 0 ? 4242 : -1;
    CHECK_MPI(MPI_Bcast_init(&word, 1, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &q));
    if (test_rank != 0) {
        CHECK_MPI(MPI_Start(&q));
        EXPECT_CLASS(MPI_Cancel(&q), MPI_ERR_REQUEST);
    } else {
        still_works(); /* the leaves' EXPECT_CLASS runs it once */
        CHECK_MPI(MPI_Start(&q));
    }
    CHECK_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
    CHECK(word == 4242, "bcast_init after a refused cancel: %d", word);
    CHECK_MPI(MPI_Request_free(&q));

    /* The same on a neighbourhood collective. */
    int nb[2] = {-1, -1};
    CHECK_MPI(MPI_Neighbor_allgather_init(&x, 1, MPI_INT, nb, 1, MPI_INT, ring, MPI_INFO_NULL, &q));
    CHECK_MPI(MPI_Start(&q));
    EXPECT_CLASS(MPI_Start(&q), MPI_ERR_REQUEST);
    CHECK_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
    CHECK(nb[0] == (test_rank - 1 + size) % size + 1 && nb[1] == (test_rank + 1) % size + 1,
          "neighbor_allgather_init: got %d %d", nb[0], nb[1]);
    CHECK_MPI(MPI_Request_free(&q));
    CHECK_MPI(MPI_Comm_free(&ring));

    test_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
