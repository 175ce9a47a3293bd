/*
 * coll_errors: bad arguments to collectives return the right error class under
 * MPI_ERRORS_RETURN (as MPICH does), on every rank, and leave the library usable: a correct
 * collective after each error works. MPI_Scan and MPI_Exscan, which MPI does not define on
 * intercommunicators, are refused there with MPI_ERR_COMM (as MPICH does; the other
 * intercommunicator collectives are tested by inter_coll.c and inter_errors.c).
 */
#define TEST_NAME "coll_errors"
#include "../mpitest.h"

static int size, rank;

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
    rank = test_rank;
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int a[64], b[64 * 16];
    MPI_Request q;
    memset(a, 0, sizeof a);
    EXPECT_CLASS(MPI_Bcast(a, 1, MPI_INT, size, MPI_COMM_WORLD), MPI_ERR_ROOT);
    EXPECT_CLASS(MPI_Bcast(a, 1, MPI_INT, -1, MPI_COMM_WORLD), MPI_ERR_ROOT);
    EXPECT_CLASS(MPI_Reduce(a, b, 1, MPI_INT, MPI_SUM, size + 3, MPI_COMM_WORLD), MPI_ERR_ROOT);
    EXPECT_CLASS(MPI_Gather(a, 1, MPI_INT, b, 1, MPI_INT, size, MPI_COMM_WORLD), MPI_ERR_ROOT);
    EXPECT_CLASS(MPI_Bcast(a, -1, MPI_INT, 0, MPI_COMM_WORLD), MPI_ERR_COUNT);
    EXPECT_CLASS(MPI_Allreduce(a, b, -2, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_COUNT);
    EXPECT_CLASS(MPI_Allgather(a, -1, MPI_INT, b, 1, MPI_INT, MPI_COMM_WORLD), MPI_ERR_COUNT);
    EXPECT_CLASS(MPI_Bcast(a, 1, MPI_DATATYPE_NULL, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
    EXPECT_CLASS(MPI_Allreduce(a, b, 1, MPI_DATATYPE_NULL, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_TYPE);
    EXPECT_CLASS(MPI_Alltoall(a, 1, MPI_DATATYPE_NULL, b, 1, MPI_INT, MPI_COMM_WORLD), MPI_ERR_TYPE);
    EXPECT_CLASS(MPI_Allreduce(a, b, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD), MPI_ERR_OP);
    EXPECT_CLASS(MPI_Reduce(a, b, 1, MPI_BYTE, MPI_SUM, 0, MPI_COMM_WORLD), MPI_ERR_OP);
    EXPECT_CLASS(MPI_Allreduce(a, b, 1, MPI_DOUBLE, MPI_BAND, MPI_COMM_WORLD), MPI_ERR_OP);
    EXPECT_CLASS(MPI_Allreduce(a, a, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    EXPECT_CLASS(MPI_Bcast(NULL, 4, MPI_INT, 0, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    EXPECT_CLASS(MPI_Allreduce(NULL, b, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    EXPECT_CLASS(MPI_Barrier(MPI_COMM_NULL), MPI_ERR_COMM);
    EXPECT_CLASS(MPI_Allreduce(a, b, 1, MPI_INT, MPI_SUM, MPI_COMM_NULL), MPI_ERR_COMM);
    EXPECT_CLASS(MPI_Ibcast(a, 1, MPI_INT, size, MPI_COMM_WORLD, &q), MPI_ERR_ROOT);
    EXPECT_CLASS(MPI_Iallreduce(a, b, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD, &q), MPI_ERR_OP);
    EXPECT_CLASS(MPI_Ialltoall(a, -1, MPI_INT, b, 1, MPI_INT, MPI_COMM_WORLD, &q), MPI_ERR_COUNT);
    /* A count mismatch that overflows the receive buffer: truncation where the root's data
     * arrives (rank 1 gets it from the root itself; ranks fed by a truncated rank may not see
     * more than fits), and every rank finishes the call. */
    if (size > 1) {
        int rc = MPI_Bcast(b, rank == 0 ? 8 : 4, MPI_INT, 0, MPI_COMM_WORLD);
        if (rank == 1)
            CHECK(error_class_of(rc) == MPI_ERR_TRUNCATE, "bcast into a short buffer returned %s", error_text(rc));
        else
            CHECK(rc == MPI_SUCCESS || error_class_of(rc) == MPI_ERR_TRUNCATE, "bcast into a short buffer returned %s", error_text(rc));
        still_works();
    }
    /* An intercommunicator (even and odd ranks): no scans on it. */
    if (size > 1) {
        MPI_Comm half, inter;
        CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half));
        CHECK_MPI(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 99, &inter));
        CHECK_MPI(MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN));
        EXPECT_CLASS(MPI_Scan(a, b, 1, MPI_INT, MPI_SUM, inter), MPI_ERR_COMM);
        EXPECT_CLASS(MPI_Exscan(a, b, 1, MPI_INT, MPI_SUM, inter), MPI_ERR_COMM);
        CHECK_MPI(MPI_Comm_free(&inter));
        CHECK_MPI(MPI_Comm_free(&half));
    }
    test_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
