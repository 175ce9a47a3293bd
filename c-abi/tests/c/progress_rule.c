/*
 * progress_rule: MPI's progress rule (MPI 3.1 sections 3.5 and 5.12). A rank that is
 * blocked, in any call, must keep its pending operations moving: here rank 0 starts a 4 MiB
 * MPI_Isend to rank 1, an MPI_Ibcast and an MPI_Iallreduce of 1 MiB each, then blocks,
 * in one way per round, waiting for a message that rank 1 sends only once it has received
 * the 4 MiB message and both collectives have completed on every rank. Each collective needs
 * rank 0's share (a 1 MiB broadcast is a scatter and a ring allgather, which every rank
 * forwards; an allreduce combines every rank's data), so the job finishes only if the
 * blocked rank moves them on.
 *
 * Ways of blocking: MPI_Recv, a loop of MPI_Test on one receive, a loop of MPI_Iprobe,
 * MPI_Probe, MPI_Wait, MPI_Waitany, MPI_Ssend, MPI_Sendrecv, MPI_Barrier on another
 * communicator. Every byte of every result is checked on every rank.
 */
#define TEST_NAME "progress_rule"
#include "mpitest.h"

#define BIG (4 << 20)
#define COLL (1 << 20)
#define COLL_DOUBLES (COLL / (int)sizeof(double))

enum way { RECV, TEST_LOOP, IPROBE_LOOP, PROBE, WAIT, WAITANY, SSEND, SENDRECV, BARRIER, WAYS };
static const char *way_name[WAYS] = { "MPI_Recv", "MPI_Test loop", "MPI_Iprobe loop", "MPI_Probe", "MPI_Wait",
                                       "MPI_Waitany", "MPI_Ssend", "MPI_Sendrecv", "MPI_Barrier" };

/* Rank 0 blocks in `way` until rank 1 says it is done (tag 99). */
static void block_until_released(enum way w, MPI_Comm other)
{
    int token = 0, flag = 0;
    MPI_Request r;
    MPI_Status st;
    switch (w) {
    case RECV:
        CHECK_MPI(MPI_Recv(&token, 1, MPI_INT, 1, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        break;
    case TEST_LOOP:
        CHECK_MPI(MPI_Irecv(&token, 1, MPI_INT, 1, 99, MPI_COMM_WORLD, &r));
        while (!flag)
            CHECK_MPI(MPI_Test(&r, &flag, MPI_STATUS_IGNORE));
        break;
    case IPROBE_LOOP:
        while (!flag)
            CHECK_MPI(MPI_Iprobe(1, 99, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Recv(&token, 1, MPI_INT, 1, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        break;
    case PROBE:
        CHECK_MPI(MPI_Probe(1, 99, MPI_COMM_WORLD, &st));
        CHECK_MPI(MPI_Recv(&token, 1, MPI_INT, 1, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        break;
    case WAIT:
        CHECK_MPI(MPI_Irecv(&token, 1, MPI_INT, 1, 99, MPI_COMM_WORLD, &r));
        CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
        break;
    case WAITANY: {
        int index = -1;
        CHECK_MPI(MPI_Irecv(&token, 1, MPI_INT, 1, 99, MPI_COMM_WORLD, &r));
        CHECK_MPI(MPI_Waitany(1, &r, &index, MPI_STATUS_IGNORE));
        CHECK(index == 0, "MPI_Waitany gave index %d", index);
        break;
    }
    case SSEND:
        /* Rank 1 posts the matching receive only once it is done. */
        token = 7;
        CHECK_MPI(MPI_Ssend(&token, 1, MPI_INT, 1, 98, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Recv(&token, 1, MPI_INT, 1, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        break;
    case SENDRECV: {
        int out = 7;
        CHECK_MPI(MPI_Sendrecv(&out, 1, MPI_INT, 1, 98, &token, 1, MPI_INT, 1, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        break;
    }
    case BARRIER:
        CHECK_MPI(MPI_Barrier(other));
        token = 42;
        break;
    case WAYS:
        break;
    }
    CHECK(token == 42, "%s: released with token %d", way_name[w], token);
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    CHECK(test_size >= 3, "needs at least 3 ranks");
    MPI_Comm other;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &other));
    char *big = malloc(BIG);
    char *bc = malloc(COLL);
    double *mine = malloc(COLL);
    double *sum = malloc(COLL);
    CHECK(big && bc && mine && sum, "out of memory");
    int root = test_size - 1;
    for (int w = 0; w < WAYS; w++) {
        MPI_Request reqs[3];
        int nreq = 0;
        if (test_rank == 0) {
            fill_pattern(big, BIG, 1000 + w);
            CHECK_MPI(MPI_Isend(big, BIG, MPI_CHAR, 1, 5, MPI_COMM_WORLD, &reqs[nreq++]));
        } else if (test_rank == 1) {
            memset(big, 0, BIG);
            CHECK_MPI(MPI_Irecv(big, BIG, MPI_CHAR, 0, 5, MPI_COMM_WORLD, &reqs[nreq++]));
        }
        if (test_rank == root)
            fill_pattern(bc, COLL, 2000 + w);
        else
            memset(bc, 0, COLL);
        CHECK_MPI(MPI_Ibcast(bc, COLL, MPI_CHAR, root, MPI_COMM_WORLD, &reqs[nreq++]));
        for (int i = 0; i < COLL_DOUBLES; i++)
            mine[i] = (double)(test_rank + 1) * (double)((i % 1000) + w);
        CHECK_MPI(MPI_Iallreduce(mine, sum, COLL_DOUBLES, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &reqs[nreq++]));
        if (test_rank == 0) {
            block_until_released((enum way)w, other);
            /* Rank 1 released rank 0 only once every other rank had completed both
             * collectives and rank 1 had the whole 4 MiB message: rank 0 moved its share on
             * while it was blocked. (Its own last collective pieces may still be on their
             * way to it: they come from other ranks than its release.) */
            CHECK_MPI(MPI_Waitall(nreq, reqs, MPI_STATUSES_IGNORE));
        } else {
            CHECK_MPI(MPI_Waitall(nreq, reqs, MPI_STATUSES_IGNORE));
            /* Every rank is done with both collectives before rank 1 releases rank 0. */
            if (test_rank == 1) {
                CHECK_PATTERN(big, BIG, 1000 + w, "%s: the 4 MiB message", way_name[w]);
                for (int r = 2; r < test_size; r++) {
                    int ready;
                    CHECK_MPI(MPI_Recv(&ready, 1, MPI_INT, r, 97, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                }
                int token = 42, from0;
                if (w == SSEND || w == SENDRECV)
                    CHECK_MPI(MPI_Recv(&from0, 1, MPI_INT, 0, 98, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                if (w == BARRIER)
                    CHECK_MPI(MPI_Barrier(other));
                else
                    CHECK_MPI(MPI_Send(&token, 1, MPI_INT, 0, 99, MPI_COMM_WORLD));
            } else {
                int ready = 1;
                CHECK_MPI(MPI_Send(&ready, 1, MPI_INT, 1, 97, MPI_COMM_WORLD));
                if (w == BARRIER)
                    CHECK_MPI(MPI_Barrier(other));
            }
        }
        CHECK_PATTERN(bc, COLL, 2000 + w, "%s: the broadcast", way_name[w]);
        double expect_factor = (double)test_size * (test_size + 1) / 2.0;
        for (int i = 0; i < COLL_DOUBLES; i++) {
            double want = expect_factor * (double)((i % 1000) + w);
            CHECK(sum[i] == want, "%s: allreduce element %d is %g, not %g", way_name[w], i, sum[i], want);
        }
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    }
    CHECK_MPI(MPI_Comm_free(&other));
    free(big);
    free(bc);
    free(mine);
    free(sum);
    test_ok();
    MPI_Finalize();
    return 0;
}
