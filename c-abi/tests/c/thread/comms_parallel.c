/*
 * comms_parallel: 4 threads per rank, each on communicators of its own, concurrently:
 * each thread makes its communicators itself (MPI_Comm_dup, MPI_Comm_split,
 * MPI_Comm_split_type (MPI_COMM_TYPE_SHARED) and MPI_Comm_create of a parent of its own, so creation on different parents runs in
 * parallel), then loops over a ping-pong with a partner rank (8 bytes, and 64 KiB every few
 * rounds), MPI_Allreduce, MPI_Bcast and MPI_Barrier on them, and MPI_Comm_idup with traffic
 * on the parent while the idup is in flight. Every value is checked.
 */
#define TEST_NAME "comms_parallel"
#include "mpitest.h"
#include <pthread.h>

#define THREADS 4
#define ROUNDS 60
#define BIG (64 * 1024)

static MPI_Comm parents[THREADS];

static void *work(void *arg)
{
    int t = (int)(intptr_t)arg;
    MPI_Comm mine, half, evens, late, shared;
    CHECK_MPI(MPI_Comm_dup(parents[t], &mine));
    CHECK_MPI(MPI_Comm_split_type(mine, MPI_COMM_TYPE_SHARED, test_rank, MPI_INFO_NULL, &shared));
    int shared_size;
    CHECK_MPI(MPI_Comm_size(shared, &shared_size));
    CHECK(shared_size == test_size, "every rank of this one-host job shares memory (%d of %d)",
          shared_size, test_size);
    CHECK_MPI(MPI_Comm_split(mine, test_rank % 2, -test_rank, &half));
    MPI_Group all, even_group;
    CHECK_MPI(MPI_Comm_group(mine, &all));
    int n_even = (test_size + 1) / 2, even_ranks[64];
    for (int i = 0; i < n_even; i++)
        even_ranks[i] = 2 * i;
    CHECK_MPI(MPI_Group_incl(all, n_even, even_ranks, &even_group));
    CHECK_MPI(MPI_Comm_create(mine, even_group, &evens));
    CHECK((evens == MPI_COMM_NULL) == (test_rank % 2 == 1), "MPI_Comm_create membership");
    int half_size, half_rank;
    CHECK_MPI(MPI_Comm_size(half, &half_size));
    CHECK_MPI(MPI_Comm_rank(half, &half_rank));
    CHECK(half_size == (test_rank % 2 == 0 ? n_even : test_size / 2), "split size %d", half_size);
    /* key -rank: the highest old rank comes first. */
    CHECK(half_rank == half_size - 1 - test_rank / 2, "split rank %d", half_rank);

    unsigned char *buf = test_malloc(BIG);
    int partner = test_rank ^ 1;
    for (int i = 0; i < ROUNDS; i++) {
        size_t bytes = (i % 10 == 9) ? BIG : 8;
        if (partner < test_size) {
            uint32_t seed = message_seed(test_rank, t, i);
            uint32_t back = message_seed(partner, t, i);
            if (test_rank % 2 == 0) {
                fill_pattern(buf, bytes, seed);
                CHECK_MPI(MPI_Send(buf, (int)bytes, MPI_BYTE, partner, i, mine));
                CHECK_MPI(MPI_Recv(buf, (int)bytes, MPI_BYTE, partner, i, mine, MPI_STATUS_IGNORE));
                CHECK_PATTERN(buf, bytes, back, "thread %d round %d", t, i);
            } else {
                CHECK_MPI(MPI_Recv(buf, (int)bytes, MPI_BYTE, partner, i, mine, MPI_STATUS_IGNORE));
                CHECK_PATTERN(buf, bytes, back, "thread %d round %d", t, i);
                fill_pattern(buf, bytes, seed);
                CHECK_MPI(MPI_Send(buf, (int)bytes, MPI_BYTE, partner, i, mine));
            }
        }
        long in = test_rank + 10L * t + i, sum = 0;
        CHECK_MPI(MPI_Allreduce(&in, &sum, 1, MPI_LONG, MPI_SUM, mine));
        long want = (long)test_size * (test_size - 1) / 2 + (long)test_size * (10L * t + i);
        CHECK(sum == want, "thread %d round %d: allreduce %ld, not %ld", t, i, sum, want);
        int root = i % test_size;
        if (test_rank == root)
            fill_pattern(buf, bytes, message_seed(root, t, -i));
        CHECK_MPI(MPI_Bcast(buf, (int)bytes, MPI_BYTE, root, mine));
        CHECK_PATTERN(buf, bytes, message_seed(root, t, -i), "thread %d bcast %d", t, i);
        long hmax = 0, hin = test_rank;
        CHECK_MPI(MPI_Allreduce(&hin, &hmax, 1, MPI_LONG, MPI_MAX, half));
        CHECK(hmax % 2 == test_rank % 2, "max over my half %ld", hmax);
        if (evens != MPI_COMM_NULL && i % 5 == 0)
            CHECK_MPI(MPI_Barrier(evens));
        CHECK_MPI(MPI_Barrier(mine));
    }

    /* MPI_Comm_idup with traffic on the parent while it is in flight. */
    MPI_Request r;
    CHECK_MPI(MPI_Comm_idup(mine, &late, &r));
    long one = 1, count = 0;
    CHECK_MPI(MPI_Allreduce(&one, &count, 1, MPI_LONG, MPI_SUM, parents[t]));
    CHECK(count == test_size, "allreduce beside the idup: %ld", count);
    CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Allreduce(&one, &count, 1, MPI_LONG, MPI_SUM, late));
    CHECK(count == test_size, "allreduce on the idup'd communicator: %ld", count);

    free(buf);
    CHECK_MPI(MPI_Group_free(&all));
    CHECK_MPI(MPI_Group_free(&even_group));
    if (evens != MPI_COMM_NULL)
        CHECK_MPI(MPI_Comm_free(&evens));
    CHECK_MPI(MPI_Comm_free(&late));
    CHECK_MPI(MPI_Comm_free(&shared));
    CHECK_MPI(MPI_Comm_free(&half));
    CHECK_MPI(MPI_Comm_free(&mine));
    return NULL;
}

int main(int argc, char **argv)
{
    test_init_multiple(&argc, &argv);
    CHECK(test_size <= 64, "at most 64 ranks");
    for (int t = 0; t < THREADS; t++)
        CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &parents[t]));
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++)
        CHECK(pthread_create(&th[t], NULL, work, (void *)(intptr_t)t) == 0, "pthread_create");
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    for (int t = 0; t < THREADS; t++)
        CHECK_MPI(MPI_Comm_free(&parents[t]));
    test_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
