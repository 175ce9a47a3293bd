/*
 * anysource_anytag: wildcard receives and MPI's non-overtaking rule.
 *
 * 1. Every rank but 0 sends rank 0 a numbered series of messages, each with a
 *    tag of its own and a length of its own; rank 0 takes them all with
 *    MPI_ANY_SOURCE + MPI_ANY_TAG and checks every status (MPI_SOURCE,
 *    MPI_TAG, Get_count) against the message's contents. Since one wildcard
 *    receive matches every message, each sender's series must arrive in the
 *    order it was sent, whatever the tags.
 * 2. Specific tag with any source (tag 9 first, although tag 7 was sent
 *    first), then any tag with a specific source (last rank first).
 * 3. Non-overtaking across protocols: rank 1 sends rank 0 a run of short and
 *    long (> 64 KiB) messages with the same tag, non-blocking, all in flight
 *    at once. Once with rank 0 receiving late (everything unexpected, taken
 *    with MPI_ANY_TAG while the sender alternates two tags), once with all
 *    receives posted before the first message leaves.
 */
#define TEST_NAME "anysource_anytag"
#include "mpitest.h"

enum {
    SERIES = 30,
    MAX_INTS = 64,
    TAG_SYNC = 999,
};

static int series_tag(int from, int k) { return from * 100 + k; }
static int series_len(int from, int k) { return 2 + (k * 5 + from * 3) % (MAX_INTS - 2); }

static void wildcard_series(void)
{
    int buf[MAX_INTS];
    if (test_rank != 0) {
        for (int k = 0; k < SERIES; k++) {
            int len = series_len(test_rank, k);
            for (int i = 0; i < len; i++)
                buf[i] = test_rank * 1000000 + k * 1000 + i;
            CHECK_MPI(MPI_Send(buf, len, MPI_INT, 0, series_tag(test_rank, k), MPI_COMM_WORLD));
        }
        return;
    }
    int *next = calloc((size_t)test_size, sizeof *next);
    for (int m = 0; m < SERIES * (test_size - 1); m++) {
        MPI_Status st;
        memset(buf, 0xFF, sizeof buf);
        CHECK_MPI(MPI_Recv(buf, MAX_INTS, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        int from = st.MPI_SOURCE;
        CHECK(from >= 1 && from < test_size, "wildcard receive: status source %d is not a sender", from);
        int k = next[from]++;
        CHECK(k < SERIES, "wildcard receive: more than %d messages from rank %d", SERIES, from);
        CHECK(st.MPI_TAG == series_tag(from, k),
              "message %d from rank %d has tag %d, want %d (a message overtook another)", k, from,
              st.MPI_TAG, series_tag(from, k));
        int count = -1;
        CHECK_MPI(MPI_Get_count(&st, MPI_INT, &count));
        CHECK(count == series_len(from, k), "message %d from rank %d: Get_count %d, want %d", k,
              from, count, series_len(from, k));
        for (int i = 0; i < count; i++)
            CHECK(buf[i] == from * 1000000 + k * 1000 + i,
                  "message %d from rank %d: int %d is %d, want %d", k, from, i, buf[i],
                  from * 1000000 + k * 1000 + i);
        CHECK(buf[count] == -1 || count == MAX_INTS, "message %d from rank %d: wrote past its length", k, from);
    }
    for (int r = 1; r < test_size; r++)
        CHECK(next[r] == SERIES, "got %d messages from rank %d, want %d", next[r], r, SERIES);
    free(next);
}

static void specific_tag_any_source(void)
{
    if (test_rank != 0) {
        int seven = 7 * test_rank, nine = 9 * test_rank;
        CHECK_MPI(MPI_Send(&seven, 1, MPI_INT, 0, 7, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Send(&nine, 1, MPI_INT, 0, 9, MPI_COMM_WORLD));
        int last = test_rank;
        CHECK_MPI(MPI_Send(&last, 1, MPI_INT, 0, 20 + test_rank, MPI_COMM_WORLD));
        return;
    }
    int *seen = calloc((size_t)test_size, sizeof *seen);
    for (int tag = 9; tag >= 7; tag -= 2) {
        memset(seen, 0, (size_t)test_size * sizeof *seen);
        for (int m = 1; m < test_size; m++) {
            int v = -1;
            MPI_Status st;
            CHECK_MPI(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &st));
            CHECK(st.MPI_TAG == tag, "receive for tag %d got status tag %d", tag, st.MPI_TAG);
            CHECK(st.MPI_SOURCE >= 1 && st.MPI_SOURCE < test_size && !seen[st.MPI_SOURCE],
                  "receive for tag %d: unexpected or repeated source %d", tag, st.MPI_SOURCE);
            seen[st.MPI_SOURCE] = 1;
            CHECK(v == tag * st.MPI_SOURCE, "tag %d from %d carried %d, want %d", tag,
                  st.MPI_SOURCE, v, tag * st.MPI_SOURCE);
        }
    }
    /* Any tag, specific source, highest rank first. */
    for (int from = test_size - 1; from >= 1; from--) {
        int v = -1;
        MPI_Status st;
        CHECK_MPI(MPI_Recv(&v, 1, MPI_INT, from, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        CHECK(st.MPI_SOURCE == from && st.MPI_TAG == 20 + from && v == from,
              "any-tag receive from %d: source %d tag %d value %d, want %d, %d, %d", from,
              st.MPI_SOURCE, st.MPI_TAG, v, from, 20 + from, from);
    }
    free(seen);
}

/* Sizes of the mixed run: short and long messages interleaved. */
static const int run_sizes[] = {10, 200000, 3, 100000, 0, 70000, 64, 65537, 1, 150000, 4096, 5};
enum { RUN = sizeof run_sizes / sizeof run_sizes[0], RUN_MAX = 200000 };

static void mixed_run_sender(int round, int tag_a, int tag_b)
{
    unsigned char *bufs[RUN];
    MPI_Request reqs[RUN];
    for (int i = 0; i < RUN; i++) {
        bufs[i] = test_malloc((size_t)run_sizes[i]);
        fill_pattern(bufs[i], (size_t)run_sizes[i], message_seed(round, 0, i));
        int tag = i % 2 ? tag_b : tag_a;
        CHECK_MPI(MPI_Isend(bufs[i], run_sizes[i], MPI_BYTE, 0, tag, MPI_COMM_WORLD, &reqs[i]));
    }
    CHECK_MPI(MPI_Waitall(RUN, reqs, MPI_STATUSES_IGNORE));
    for (int i = 0; i < RUN; i++)
        free(bufs[i]);
}

static void check_run_message(int round, int i, const unsigned char *buf, const MPI_Status *st, int want_tag)
{
    CHECK(st->MPI_SOURCE == 1, "round %d message %d: source %d, want 1", round, i, st->MPI_SOURCE);
    CHECK(st->MPI_TAG == want_tag, "round %d message %d: tag %d, want %d (overtaken?)", round, i,
          st->MPI_TAG, want_tag);
    CHECK(status_bytes(st) == run_sizes[i],
          "round %d message %d: %d bytes, want %d (a message overtook another)", round, i,
          status_bytes(st), run_sizes[i]);
    CHECK_PATTERN(buf, (size_t)run_sizes[i], message_seed(round, 0, i), "round %d message %d", round, i);
}

static void mixed_run(void)
{
    /* Round 1: receiver late; the sender alternates tags 5 and 6, rank 0 uses ANY_TAG. */
    if (test_rank == 1) {
        mixed_run_sender(1, 5, 6);
        int done = 1;
        CHECK_MPI(MPI_Send(&done, 1, MPI_INT, 0, TAG_SYNC, MPI_COMM_WORLD));
    } else if (test_rank == 0) {
        int done;
        unsigned char *buf = test_malloc(RUN_MAX);
        /* Isends started before this arrives are all in flight or queued. */
        sleep_ms(20);
        for (int i = 0; i < RUN; i++) {
            MPI_Status st;
            CHECK_MPI(MPI_Recv(buf, RUN_MAX, MPI_BYTE, 1, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
            check_run_message(1, i, buf, &st, i % 2 ? 6 : 5);
        }
        CHECK_MPI(MPI_Recv(&done, 1, MPI_INT, 1, TAG_SYNC, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        free(buf);
    }

    /* Round 2: every receive posted (any source, one tag) before the sender starts. */
    if (test_rank == 0) {
        unsigned char *bufs[RUN];
        MPI_Request reqs[RUN];
        MPI_Status sts[RUN];
        for (int i = 0; i < RUN; i++) {
            bufs[i] = test_malloc(RUN_MAX);
            CHECK_MPI(MPI_Irecv(bufs[i], RUN_MAX, MPI_BYTE, MPI_ANY_SOURCE, 8, MPI_COMM_WORLD, &reqs[i]));
        }
        int go = 1;
        CHECK_MPI(MPI_Send(&go, 1, MPI_INT, 1, TAG_SYNC, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Waitall(RUN, reqs, sts));
        for (int i = 0; i < RUN; i++) {
            check_run_message(2, i, bufs[i], &sts[i], 8);
            free(bufs[i]);
        }
    } else if (test_rank == 1) {
        int go;
        CHECK_MPI(MPI_Recv(&go, 1, MPI_INT, 0, TAG_SYNC, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        mixed_run_sender(2, 8, 8);
    }
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    require_ranks(2);
    wildcard_series();
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    specific_tag_any_source();
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    mixed_run();
    test_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
