/*
 * inter_errors: collectives MPI does not define on intercommunicators (MPI_Scan, MPI_Exscan
 * and their nonblocking forms) return MPI_ERR_COMM; a root that is neither MPI_ROOT,
 * MPI_PROC_NULL nor a rank of the remote group returns MPI_ERR_ROOT; MPI_IN_PLACE returns
 * MPI_ERR_BUFFER (as MPICH 4.0.2 does); and after each error the intercommunicator still
 * works (an allreduce on it gives the other group's sum). On 1 rank there is nothing to test.
 */
#define TEST_NAME "inter_errors"
#include "../mpitest.h"

static MPI_Comm inter;
static int group, rsize, lsize;

static void still_works(void)
{
    int mine = group + 1, theirs = -1;
    CHECK_MPI(MPI_Allreduce(&mine, &theirs, 1, MPI_INT, MPI_SUM, inter));
    CHECK(theirs == rsize * (2 - group), "allreduce after an error gave %d", theirs);
}

#define EXPECT_CLASS(call, cls)                                                  \
    do {                                                                         \
        int rc_ = (call);                                                        \
        CHECK(error_class_of(rc_) == (cls), "%s returned %s, want class %s", #call, \
              rc_ == MPI_SUCCESS ? "MPI_SUCCESS" : error_text(rc_), #cls);       \
        still_works();                                                           \
    } while (0)

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    if (test_size >= 2) {
        int k = test_size / 2;
        MPI_Comm local;
        group = test_rank < k ? 0 : 1;
        CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, group, 0, &local));
        CHECK_MPI(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, group == 0 ? k : 0, 5, &inter));
        CHECK_MPI(MPI_Comm_free(&local));
        CHECK_MPI(MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN));
        CHECK_MPI(MPI_Comm_size(inter, &lsize));
        CHECK_MPI(MPI_Comm_remote_size(inter, &rsize));
        int a[64] = {0}, b[64] = {0};
        MPI_Request rq = MPI_REQUEST_NULL;
        EXPECT_CLASS(MPI_Scan(a, b, 1, MPI_INT, MPI_SUM, inter), MPI_ERR_COMM);
        EXPECT_CLASS(MPI_Exscan(a, b, 1, MPI_INT, MPI_SUM, inter), MPI_ERR_COMM);
        EXPECT_CLASS(MPI_Iscan(a, b, 1, MPI_INT, MPI_SUM, inter, &rq), MPI_ERR_COMM);
        EXPECT_CLASS(MPI_Iexscan(a, b, 1, MPI_INT, MPI_SUM, inter, &rq), MPI_ERR_COMM);
        CHECK(rq == MPI_REQUEST_NULL, "a refused Iscan set its request");
        /* Roots out of range: the remote size, a negative rank other than the specials. */
        EXPECT_CLASS(MPI_Bcast(a, 1, MPI_INT, rsize, inter), MPI_ERR_ROOT);
        EXPECT_CLASS(MPI_Bcast(a, 1, MPI_INT, -7, inter), MPI_ERR_ROOT);
        EXPECT_CLASS(MPI_Reduce(a, b, 1, MPI_INT, MPI_SUM, rsize + 3, inter), MPI_ERR_ROOT);
        EXPECT_CLASS(MPI_Gather(a, 1, MPI_INT, b, 1, MPI_INT, -7, inter), MPI_ERR_ROOT);
        EXPECT_CLASS(MPI_Iscatter(a, 1, MPI_INT, b, 1, MPI_INT, rsize, inter, &rq), MPI_ERR_ROOT);
        /* MPI_IN_PLACE is not allowed on intercommunicators. */
        EXPECT_CLASS(MPI_Allreduce(MPI_IN_PLACE, b, 1, MPI_INT, MPI_SUM, inter), MPI_ERR_BUFFER);
        EXPECT_CLASS(MPI_Allgather(MPI_IN_PLACE, 0, MPI_INT, b, 1, MPI_INT, inter), MPI_ERR_BUFFER);
        EXPECT_CLASS(MPI_Alltoall(MPI_IN_PLACE, 0, MPI_INT, b, 1, MPI_INT, inter), MPI_ERR_BUFFER);
        /* Negative counts and bad types are checked as on intracommunicators. */
        EXPECT_CLASS(MPI_Allreduce(a, b, -1, MPI_INT, MPI_SUM, inter), MPI_ERR_COUNT);
        EXPECT_CLASS(MPI_Allgather(a, 1, MPI_DATATYPE_NULL, b, 1, MPI_INT, inter), MPI_ERR_TYPE);
        CHECK_MPI(MPI_Comm_free(&inter));
    }
    test_ok();
    MPI_Finalize();
    return 0;
}
