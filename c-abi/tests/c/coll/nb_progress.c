/*
 * nb_progress: nonblocking collectives move on while their rank is blocked in point-to-point
 * calls (MPI's progress rule), with no progress thread.
 *
 * Every rank starts MPI_Ibcast from rank 0 (or MPI_Iallreduce). Ranks other than 0 wait for it,
 * then send rank 0 a token. Rank 0 first receives every token with blocking MPI_Recv (or
 * MPI_Probe + MPI_Recv), and only then waits for its own request. The root's later rounds
 * (its sends to its second and further children, and for long messages the pieces of a
 * rendezvous) must therefore be sent from inside MPI_Recv / MPI_Probe, or the job hangs.
 */
#define TEST_NAME "nb_progress"
#include "mpitest.h"

static void round_trip(int count, int use_probe, int use_allreduce) {
    int size, rank;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int *data = malloc(sizeof(int) * (size_t)count), *sum = malloc(sizeof(int) * (size_t)count);
    for (int i = 0; i < count; i++)
        data[i] = rank == 0 ? i * 3 + 1 : -1;
    MPI_Request req;
    if (use_allreduce) {
        for (int i = 0; i < count; i++)
            data[i] = rank + i;
        CHECK_MPI(MPI_Iallreduce(data, sum, count, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req));
    } else {
        CHECK_MPI(MPI_Ibcast(data, count, MPI_INT, 0, MPI_COMM_WORLD, &req));
    }
    if (rank == 0) {
        for (int from = 1; from < size; from++) {
            int token = -1;
            MPI_Status st;
            if (use_probe)
                CHECK_MPI(MPI_Probe(MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &st));
            CHECK_MPI(MPI_Recv(&token, 1, MPI_INT, MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &st));
            CHECK(token == st.MPI_SOURCE * 10, "token %d from %d", token, st.MPI_SOURCE);
        }
        CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    } else {
        CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        int token = rank * 10;
        CHECK_MPI(MPI_Send(&token, 1, MPI_INT, 0, 7, MPI_COMM_WORLD));
    }
    for (int i = 0; i < count; i++) {
        if (use_allreduce) {
            int want = size * (size - 1) / 2 + size * i;
            CHECK(sum[i] == want, "allreduce element %d: %d, want %d", i, sum[i], want);
        } else {
            CHECK(data[i] == i * 3 + 1, "bcast element %d: %d", i, data[i]);
        }
    }
    free(data);
    free(sum);
}

int main(int argc, char **argv) {
    test_init(&argc, &argv);
    int counts[] = {1, 1000, 1 << 18};
    for (int c = 0; c < 3; c++)
        for (int probe = 0; probe < 2; probe++)
            for (int allreduce = 0; allreduce < 2; allreduce++)
                round_trip(counts[c], probe, allreduce);
    test_ok();
    MPI_Finalize();
    return 0;
}
