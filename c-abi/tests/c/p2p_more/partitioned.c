/*
 * partitioned: partitioned communication (MPI 4.0 §4), between ring neighbours (each rank
 * sends to the next and receives from the previous; on one rank, to itself).
 *
 *  - 1 partition and 16 partitions of ints, 5 rounds each with new data every round
 *    (MPI_Startall of the send and receive requests, MPI_Waitall);
 *  - partitions marked ready from several points: one by one in reverse order, with
 *    MPI_Pready_range in two halves, with MPI_Pready_list in a shuffled order;
 *  - the receiver polls MPI_Parrived (bounded) until every partition has arrived, and
 *    checks each partition's data as soon as it has;
 *  - different partition counts on the two sides (8 sends, 2 receives; 3 sends, 12
 *    receives) of the same data, and a non-contiguous datatype (every other int);
 *  - a large message (1 MiB in 16 partitions, rendezvous-sized partitions);
 *  - MPI_PROC_NULL on both sides; zero-count partitions (arrived only once made ready);
 *  - freeing the inactive requests (MPI_Request_free);
 *  - errors under MPI_ERRORS_RETURN: Pready on an inactive request, a partition out of range,
 *    marked twice, Pready on a receive, Parrived on a send, MPI_ANY_SOURCE / MPI_ANY_TAG in
 *    Precv_init, a bad partition count.
 */
#define TEST_NAME "partitioned"
#include "../mpitest.h"

static int next, prev;

static int value(int from, int round, int i) { return from * 1000000 + round * 10000 + i; }

enum how { ONE_BY_ONE_REVERSE, RANGE_HALVES, LIST_SHUFFLED, ONE_BY_ONE_POLL };

static void mark_ready(MPI_Request s, int parts, enum how how, int round)
{
    switch (how) {
    case ONE_BY_ONE_REVERSE:
        for (int p = parts - 1; p >= 0; p--)
            CHECK_MPI(MPI_Pready(p, s));
        break;
    case RANGE_HALVES:
        if (parts > 1)
            CHECK_MPI(MPI_Pready_range(parts / 2, parts - 1, s));
        CHECK_MPI(MPI_Pready_range(0, parts > 1 ? parts / 2 - 1 : 0, s));
        break;
    case LIST_SHUFFLED: {
        int *list = test_malloc(parts * sizeof(int));
        for (int p = 0; p < parts; p++)
            list[p] = (p * 7 + round) % parts; /* a permutation when gcd(7, parts) = 1 */
        CHECK_MPI(MPI_Pready_list(parts, list, s));
        free(list);
        break;
    }
    case ONE_BY_ONE_POLL:
        for (int p = 0; p < parts; p++)
            CHECK_MPI(MPI_Pready(p, s));
        break;
    }
}

/* One pair of requests, `rounds` rounds: `sparts` send partitions of `scount` ints, `rparts`
 * receive partitions of `rcount` ints (sparts*scount == rparts*rcount). */
static void pair(int sparts, int scount, int rparts, int rcount, enum how how, int rounds, int tag)
{
    int total = sparts * scount;
    int *out = test_malloc(total * sizeof(int)), *in = test_malloc(total * sizeof(int));
    MPI_Request reqs[2];
    CHECK_MPI(MPI_Psend_init(out, sparts, scount, MPI_INT, next, tag, MPI_COMM_WORLD, MPI_INFO_NULL, &reqs[0]));
    CHECK_MPI(MPI_Precv_init(in, rparts, rcount, MPI_INT, prev, tag, MPI_COMM_WORLD, MPI_INFO_NULL, &reqs[1]));
    for (int round = 0; round < rounds; round++) {
        for (int i = 0; i < total; i++) {
            out[i] = value(test_rank, round, i);
            in[i] = -1;
        }
        CHECK_MPI(MPI_Startall(2, reqs));
        mark_ready(reqs[0], sparts, how, round);
        if (how == ONE_BY_ONE_POLL || how == RANGE_HALVES) {
            /* Poll every receive partition; check each as soon as it arrives. */
            char *seen = calloc(rparts, 1);
            int left = rparts;
            for (long spin = 0; spin < 50000000 && left > 0; spin++) {
                for (int p = 0; p < rparts; p++) {
                    int flag = 0;
                    if (seen[p])
                        continue;
                    CHECK_MPI(MPI_Parrived(reqs[1], p, &flag));
                    if (!flag)
                        continue;
                    seen[p] = 1;
                    left--;
                    for (int i = p * rcount; i < (p + 1) * rcount; i++)
                        CHECK(in[i] == value(prev, round, i), "round %d: partition %d arrived but in[%d] = %d, want %d",
                              round, p, i, in[i], value(prev, round, i));
                }
            }
            CHECK(left == 0, "round %d: %d partitions never arrived", round, left);
            free(seen);
        }
        MPI_Status sts[2];
        CHECK_MPI(MPI_Waitall(2, reqs, sts));
        CHECK(reqs[0] != MPI_REQUEST_NULL && reqs[1] != MPI_REQUEST_NULL, "persistent requests were freed by Waitall");
        for (int i = 0; i < total; i++)
            CHECK(in[i] == value(prev, round, i), "%dx%d -> %dx%d round %d: in[%d] = %d, want %d", sparts, scount,
                  rparts, rcount, round, i, in[i], value(prev, round, i));
        int flag = 0;
        CHECK_MPI(MPI_Parrived(reqs[1], rparts - 1, &flag));
        CHECK(flag, "Parrived on an inactive (complete) receive is false");
    }
    CHECK_MPI(MPI_Request_free(&reqs[0]));
    CHECK_MPI(MPI_Request_free(&reqs[1]));
    CHECK(reqs[0] == MPI_REQUEST_NULL && reqs[1] == MPI_REQUEST_NULL, "Request_free did not null the handles");
    free(out);
    free(in);
}

static void strided(void)
{
    enum { PARTS = 4, COUNT = 50 };
    MPI_Datatype two_of_three, every_other;
    CHECK_MPI(MPI_Type_vector(2, 1, 2, MPI_INT, &two_of_three)); /* ints 0 and 2 */
    CHECK_MPI(MPI_Type_create_resized(two_of_three, 0, 4 * sizeof(int), &every_other));
    CHECK_MPI(MPI_Type_free(&two_of_three));
    CHECK_MPI(MPI_Type_commit(&every_other));
    /* Element e: ints at 4e and 4e+2. */
    int n = PARTS * COUNT * 4;
    int *out = test_malloc(n * sizeof(int)), *in = test_malloc(n * sizeof(int));
    MPI_Request s, r;
    CHECK_MPI(MPI_Psend_init(out, PARTS, COUNT, every_other, next, 77, MPI_COMM_WORLD, MPI_INFO_NULL, &s));
    CHECK_MPI(MPI_Precv_init(in, 2 * PARTS, COUNT / 2, every_other, prev, 77, MPI_COMM_WORLD, MPI_INFO_NULL, &r));
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < n; i++) {
            out[i] = (i % 2) ? -9 : value(test_rank, round, i);
            in[i] = -1;
        }
        CHECK_MPI(MPI_Start(&r));
        CHECK_MPI(MPI_Start(&s));
        CHECK_MPI(MPI_Pready_range(0, PARTS - 1, s));
        int flag = 0;
        for (long spin = 0; spin < 50000000 && !flag; spin++)
            CHECK_MPI(MPI_Parrived(r, 0, &flag));
        CHECK(flag, "strided: partition 0 never arrived");
        for (int i = 0; i < 4 * COUNT / 2; i++) {
            int want = (i % 4 == 0 || i % 4 == 2) ? value(prev, round, i) : -1;
            CHECK(in[i] == want, "strided partition 0 after Parrived: in[%d] = %d, want %d", i, in[i], want);
        }
        CHECK_MPI(MPI_Wait(&s, MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
        for (int i = 0; i < n; i++) {
            int want = (i % 4 == 0 || i % 4 == 2) ? value(prev, round, i) : -1;
            CHECK(in[i] == want, "strided round %d: in[%d] = %d, want %d", round, i, in[i], want);
        }
    }
    CHECK_MPI(MPI_Request_free(&s));
    CHECK_MPI(MPI_Request_free(&r));
    CHECK_MPI(MPI_Type_free(&every_other));
    free(out);
    free(in);
}

static void proc_null(void)
{
    int x[4] = {1, 2, 3, 4}, y[4] = {0, 0, 0, 0}, flag = 0;
    MPI_Request s, r;
    CHECK_MPI(MPI_Psend_init(x, 2, 2, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, MPI_INFO_NULL, &s));
    CHECK_MPI(MPI_Precv_init(y, 4, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, MPI_INFO_NULL, &r));
    for (int round = 0; round < 2; round++) {
        MPI_Status st;
        CHECK_MPI(MPI_Start(&s));
        CHECK_MPI(MPI_Start(&r));
        CHECK_MPI(MPI_Pready_range(0, 1, s));
        CHECK_MPI(MPI_Parrived(r, 3, &flag));
        CHECK(flag, "PROC_NULL partition not arrived");
        CHECK_MPI(MPI_Wait(&s, MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Wait(&r, &st));
        CHECK(st.MPI_SOURCE == MPI_PROC_NULL, "PROC_NULL receive status source %d", st.MPI_SOURCE);
    }
    CHECK(y[0] == 0, "a PROC_NULL receive wrote data");
    CHECK_MPI(MPI_Request_free(&s));
    CHECK_MPI(MPI_Request_free(&r));
}

static void errors(void)
{
    int x[8] = {0}, y[8], flag, rc;
    MPI_Request s, r;
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Psend_init(x, 4, 2, MPI_INT, next, 500, MPI_COMM_WORLD, MPI_INFO_NULL, &s));
    CHECK_MPI(MPI_Precv_init(y, 4, 2, MPI_INT, prev, 500, MPI_COMM_WORLD, MPI_INFO_NULL, &r));
    rc = MPI_Pready(0, s);
    CHECK(error_class_of(rc) == MPI_ERR_REQUEST, "Pready on an inactive request: %s", error_text(rc));
    CHECK_MPI(MPI_Start(&s));
    CHECK_MPI(MPI_Start(&r));
    rc = MPI_Pready(4, s);
    CHECK(error_class_of(rc) == MPI_ERR_ARG, "Pready(4) of 4 partitions: %s", error_text(rc));
    rc = MPI_Pready(-1, s);
    CHECK(error_class_of(rc) == MPI_ERR_ARG, "Pready(-1): %s", error_text(rc));
    rc = MPI_Pready_range(2, 9, s);
    CHECK(error_class_of(rc) == MPI_ERR_ARG, "Pready_range(2, 9): %s", error_text(rc));
    int list[2] = {1, 1};
    rc = MPI_Pready_list(2, list, s);
    CHECK(error_class_of(rc) == MPI_ERR_ARG, "a partition listed twice: %s", error_text(rc));
    rc = MPI_Pready(0, r);
    CHECK(error_class_of(rc) == MPI_ERR_REQUEST, "Pready on a receive: %s", error_text(rc));
    rc = MPI_Parrived(s, 0, &flag);
    CHECK(error_class_of(rc) == MPI_ERR_REQUEST, "Parrived on a send: %s", error_text(rc));
    rc = MPI_Parrived(r, 4, &flag);
    CHECK(error_class_of(rc) == MPI_ERR_ARG, "Parrived(4): %s", error_text(rc));
    /* The failed calls changed nothing: the round still completes. */
    CHECK_MPI(MPI_Pready_range(0, 3, s));
    rc = MPI_Pready(2, s);
    CHECK(error_class_of(rc) == MPI_ERR_ARG, "Pready twice: %s", error_text(rc));
    CHECK_MPI(MPI_Wait(&s, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
    rc = MPI_Pready(0, s);
    CHECK(error_class_of(rc) == MPI_ERR_REQUEST, "Pready after the round: %s", error_text(rc));
    CHECK_MPI(MPI_Request_free(&s));
    CHECK_MPI(MPI_Request_free(&r));
    MPI_Request bad;
    rc = MPI_Precv_init(y, 2, 1, MPI_INT, MPI_ANY_SOURCE, 1, MPI_COMM_WORLD, MPI_INFO_NULL, &bad);
    CHECK(error_class_of(rc) == MPI_ERR_RANK, "Precv_init from MPI_ANY_SOURCE: %s", error_text(rc));
    rc = MPI_Precv_init(y, 2, 1, MPI_INT, prev, MPI_ANY_TAG, MPI_COMM_WORLD, MPI_INFO_NULL, &bad);
    CHECK(error_class_of(rc) == MPI_ERR_TAG, "Precv_init with MPI_ANY_TAG: %s", error_text(rc));
    rc = MPI_Psend_init(x, 0, 1, MPI_INT, next, 1, MPI_COMM_WORLD, MPI_INFO_NULL, &bad);
    CHECK(error_class_of(rc) == MPI_ERR_ARG, "0 partitions: %s", error_text(rc));
    rc = MPI_Psend_init(x, 2, -1, MPI_INT, next, 1, MPI_COMM_WORLD, MPI_INFO_NULL, &bad);
    CHECK(error_class_of(rc) == MPI_ERR_COUNT, "count -1: %s", error_text(rc));
    rc = MPI_Psend_init(x, 2, 1, MPI_INT, test_size, 1, MPI_COMM_WORLD, MPI_INFO_NULL, &bad);
    CHECK(error_class_of(rc) == MPI_ERR_RANK, "dest out of range: %s", error_text(rc));
    rc = MPI_Pready(0, MPI_REQUEST_NULL);
    CHECK(error_class_of(rc) == MPI_ERR_REQUEST, "Pready(MPI_REQUEST_NULL): %s", error_text(rc));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

/* Zero-count partitions (mpi4py's testRing with s=0): a receive partition has arrived only
 * once the sender made it ready, round after round, though no byte moves. */
static void zero_count(void)
{
    char sb[1], rb[1];
    for (int parts = 1; parts <= 3; parts++) {
        MPI_Request s, r;
        int flag;
        CHECK_MPI(MPI_Psend_init(sb, parts, 0, MPI_BYTE, next, 20, MPI_COMM_WORLD, MPI_INFO_NULL, &s));
        CHECK_MPI(MPI_Precv_init(rb, parts, 0, MPI_BYTE, prev, 20, MPI_COMM_WORLD, MPI_INFO_NULL, &r));
        for (int round = 0; round < 3; round++) {
            CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
            CHECK_MPI(MPI_Start(&r));
            for (int i = 0; i < parts; i++) {
                CHECK_MPI(MPI_Parrived(r, i, &flag));
                CHECK(!flag, "zero-count partition %d of %d arrived in round %d before its sender started",
                      i, parts, round);
            }
            CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
            CHECK_MPI(MPI_Start(&s));
            for (int i = 0; i < parts; i++)
                CHECK_MPI(MPI_Pready(i, s));
            for (int i = 0; i < parts; i++) {
                flag = 0;
                for (long spins = 0; !flag && spins < 100000000L; spins++)
                    CHECK_MPI(MPI_Parrived(r, i, &flag));
                CHECK(flag, "zero-count partition %d of %d never arrived", i, parts);
            }
            CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
            CHECK_MPI(MPI_Wait(&s, MPI_STATUS_IGNORE));
        }
        CHECK_MPI(MPI_Request_free(&s));
        CHECK_MPI(MPI_Request_free(&r));
    }
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    next = (test_rank + 1) % test_size;
    prev = (test_rank + test_size - 1) % test_size;
    pair(1, 100, 1, 100, ONE_BY_ONE_POLL, 5, 1);
    pair(16, 64, 16, 64, ONE_BY_ONE_REVERSE, 5, 2);
    pair(16, 64, 16, 64, RANGE_HALVES, 5, 3);
    pair(16, 64, 16, 64, LIST_SHUFFLED, 5, 4);
    pair(8, 30, 2, 120, ONE_BY_ONE_POLL, 5, 5);
    pair(3, 40, 12, 10, RANGE_HALVES, 5, 6);
    pair(16, 16384, 16, 16384, ONE_BY_ONE_POLL, 2, 7); /* 1 MiB, 64 KiB partitions */
    pair(16, 16384, 4, 65536, LIST_SHUFFLED, 2, 8);
    strided();
    proc_null();
    zero_count();
    errors();
    test_ok();
    MPI_Finalize();
    return 0;
}
