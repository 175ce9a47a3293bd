/*
 * persistent_coll_inter: a persistent collective on an intercommunicator (the even and the
 * odd ranks of MPI_COMM_WORLD as the two groups): MPI_Allreduce_init and MPI_Bcast_init are
 * built by the same builders as their blocking forms, which handle intercommunicators, and
 * replayed three times with new data, results checked each time.
 */
#define TEST_NAME "persistent_coll_inter"
#include "../mpitest.h"

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    require_ranks(2);
    int color = test_rank % 2;
    MPI_Comm half, inter;
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, color, test_rank, &half));
    CHECK_MPI(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, 1 - color, 7, &inter));
    int x = 0, sum = -1, rsize, lrank, data[4] = {0, 0, 0, 0};
    CHECK_MPI(MPI_Comm_remote_size(inter, &rsize));
    CHECK_MPI(MPI_Comm_rank(inter, &lrank));
    MPI_Request q[2];
    CHECK_MPI(MPI_Allreduce_init(&x, &sum, 1, MPI_INT, MPI_SUM, inter, MPI_INFO_NULL, &q[0]));
    /* Broadcast from rank 0 of the even group to the odd group. */
    int root = color == 0 ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    CHECK_MPI(MPI_Bcast_init(data, 4, MPI_INT, root, inter, MPI_INFO_NULL, &q[1]));
    for (int run = 0; run < 3; run++) {
        x = 1 + run + (1 - color) * 100;
        for (int i = 0; i < 4; i++)
            data[i] = root == MPI_ROOT ? 10 * run + i : -1;
        CHECK_MPI(MPI_Startall(2, q));
        CHECK_MPI(MPI_Waitall(2, q, MPI_STATUSES_IGNORE));
        int want = rsize * (1 + run + color * 100);
        CHECK(sum == want, "allreduce_init run %d: sum %d, want %d", run, sum, want);
        for (int i = 0; i < 4; i++)
            CHECK(color == 0 ? data[i] == (root == MPI_ROOT ? 10 * run + i : -1)
                             : data[i] == 10 * run + i,
                  "bcast_init run %d: [%d] = %d", run, i, data[i]);
    }
    CHECK_MPI(MPI_Request_free(&q[0]));
    CHECK_MPI(MPI_Request_free(&q[1]));
    CHECK_MPI(MPI_Comm_free(&inter));
    CHECK_MPI(MPI_Comm_free(&half));
    test_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
