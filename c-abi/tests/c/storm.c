/*
 * storm: every rank Isends to every other rank a stream of messages of mixed
 * sizes (0 B to 256 KiB) and tags, all before any receive is posted; then it
 * posts its receives in a different order and with a mix of selectors, and
 * completes them with Waitany, Testsome, Waitsome and Waitall in turn. Every
 * byte of every message is verified.
 *
 * Message j from rank s to rank d carries tag j; its size and contents are a
 * function of (s, d, j), so any receive can check what it got from its status.
 * The receives are arranged so that the outcome is correct whatever the
 * timing (MPI matches a message to the earliest posted receive it fits):
 *   j % 4 == 0  specific source and tag, posted in reverse order; may be long
 *   j % 4 == 1  MPI_ANY_SOURCE with tag j, one per sender; may be long
 *   j % 4 >= 2  MPI_ANY_TAG: first one batch per source, then a batch with
 *               MPI_ANY_SOURCE as well; these are at most WILD_MAX bytes
 * All selective receives are posted before the first wildcard one, so a
 * wildcard can never take a message a selective receive is waiting for.
 */
#define TEST_NAME "storm"
#include "mpitest.h"

enum { WILD_MAX = 20480, LONG_MIN = 65536, LONG_SPAN = 196608 };

static int per_pair; /* messages from each rank to each other rank */

static uint32_t mix(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7FEB352Du;
    x ^= x >> 15;
    return x;
}

/* Size of message j from s to d. Class-1 sizes depend only on (d, j) since an
 * any-source receive must know its size before it knows the sender. */
static int message_size(int s, int d, int j)
{
    uint32_t h = mix(message_seed(s, d, j));
    switch (j % 4) {
    case 0:
        if (j % 48 == 0)
            return LONG_MIN + (int)(h % (LONG_SPAN + 1));
        return h % 8 == 0 ? 0 : (int)(h % 3000);
    case 1: {
        uint32_t g = mix((uint32_t)d * 131u + (uint32_t)j);
        if (j % 48 == 1)
            return LONG_MIN + 1 + (int)(g % LONG_SPAN);
        return (int)(g % 1500);
    }
    default:
        if (h % 16 == 0)
            return 16384 + (int)(h % (WILD_MAX - 16384 + 1));
        return h % 10 == 0 ? 0 : (int)(h % 1024);
    }
}

/* What a posted receive asked for, to check what it got. */
struct posted {
    unsigned char *buf;
    int selector_source; /* a rank or MPI_ANY_SOURCE */
    int selector_tag;    /* a tag or MPI_ANY_TAG */
    int done;
};

static struct posted *posted;
static unsigned char *received; /* [source * per_pair + j] */
static int completed;

static void check_completion(int index, const MPI_Status *st)
{
    struct posted *p = &posted[index];
    CHECK(!p->done, "receive %d completed twice", index);
    p->done = 1;
    completed++;
    int s = st->MPI_SOURCE, j = st->MPI_TAG;
    CHECK(s >= 0 && s < test_size && s != test_rank, "receive %d: status source %d is not a peer", index, s);
    CHECK(j >= 0 && j < per_pair, "receive %d: status tag %d out of range", index, j);
    CHECK(p->selector_source == MPI_ANY_SOURCE || p->selector_source == s,
          "receive %d for source %d got a message from %d", index, p->selector_source, s);
    CHECK(p->selector_tag == MPI_ANY_TAG ? j % 4 >= 2 : p->selector_tag == j,
          "receive %d for tag %d got tag %d", index, p->selector_tag, j);
    CHECK(!received[s * per_pair + j], "message %d from rank %d received twice", j, s);
    received[s * per_pair + j] = 1;
    int want = message_size(s, test_rank, j);
    CHECK(status_bytes(st) == want, "message %d from rank %d: %d bytes, want %d", j, s,
          status_bytes(st), want);
    CHECK_PATTERN(p->buf, (size_t)want, message_seed(s, test_rank, j), "message %d from rank %d", j, s);
}

static MPI_Request *start_sends(unsigned char ***bufs_out, int *count_out)
{
    int count = per_pair * (test_size - 1);
    MPI_Request *reqs = test_malloc((size_t)count * sizeof *reqs);
    unsigned char **bufs = test_malloc((size_t)count * sizeof *bufs);
    int n = 0;
    /* Interleave destinations so every peer is flooded at once. */
    for (int j = 0; j < per_pair; j++) {
        for (int k = 1; k < test_size; k++) {
            int d = (test_rank + k) % test_size;
            int size = message_size(test_rank, d, j);
            bufs[n] = test_malloc((size_t)size);
            fill_pattern(bufs[n], (size_t)size, message_seed(test_rank, d, j));
            CHECK_MPI(MPI_Isend(bufs[n], size, MPI_BYTE, d, j, MPI_COMM_WORLD, &reqs[n]));
            n++;
        }
    }
    *bufs_out = bufs;
    *count_out = count;
    return reqs;
}

static void post(MPI_Request *reqs, int *n, int source, int tag, int size)
{
    struct posted *p = &posted[*n];
    p->buf = test_malloc((size_t)size);
    p->selector_source = source;
    p->selector_tag = tag;
    p->done = 0;
    CHECK_MPI(MPI_Irecv(p->buf, size, MPI_BYTE, source, tag, MPI_COMM_WORLD, &reqs[*n]));
    (*n)++;
}

static MPI_Request *post_receives(int *count_out)
{
    int count = per_pair * (test_size - 1);
    MPI_Request *reqs = test_malloc((size_t)count * sizeof *reqs);
    posted = test_malloc((size_t)count * sizeof *posted);
    int n = 0;
    /* Class 0: specific source and tag, sources and tags both in reverse. */
    for (int s = test_size - 1; s >= 0; s--)
        for (int j = per_pair - 1; j >= 0; j--)
            if (s != test_rank && j % 4 == 0)
                post(reqs, &n, s, j, message_size(s, test_rank, j));
    /* Class 1: any source, one receive per sender for each tag. */
    for (int j = 1; j < per_pair; j += 4)
        for (int k = 1; k < test_size; k++)
            post(reqs, &n, MPI_ANY_SOURCE, j, message_size(0, test_rank, j));
    /* Classes 2 and 3: any tag from each source, then any tag from any source. */
    for (int s = 0; s < test_size; s++)
        for (int j = 2; j < per_pair; j += 4)
            if (s != test_rank)
                post(reqs, &n, s, MPI_ANY_TAG, WILD_MAX);
    for (int j = 3; j < per_pair; j += 4)
        for (int k = 1; k < test_size; k++)
            post(reqs, &n, MPI_ANY_SOURCE, MPI_ANY_TAG, WILD_MAX);
    CHECK(n == count, "posted %d receives, expected %d", n, count);
    *count_out = count;
    return reqs;
}

static void complete_receives(MPI_Request *reqs, int count)
{
    int *indices = test_malloc((size_t)count * sizeof *indices);
    MPI_Status *sts = test_malloc((size_t)count * sizeof *sts);
    /* First quarter with Waitany. */
    while (completed < count / 4) {
        int index;
        MPI_Status st;
        CHECK_MPI(MPI_Waitany(count, reqs, &index, &st));
        CHECK(index != MPI_UNDEFINED, "Waitany found no active request with %d left", count - completed);
        CHECK(reqs[index] == MPI_REQUEST_NULL, "Waitany left request %d active", index);
        check_completion(index, &st);
    }
    /* Up to half by polling with Testsome. */
    while (completed < count / 2) {
        int outcount;
        CHECK_MPI(MPI_Testsome(count, reqs, &outcount, indices, sts));
        CHECK(outcount != MPI_UNDEFINED, "Testsome found no active request with %d left", count - completed);
        for (int i = 0; i < outcount; i++)
            check_completion(indices[i], &sts[i]);
    }
    /* Up to three quarters with Waitsome. */
    while (completed < 3 * count / 4) {
        int outcount;
        CHECK_MPI(MPI_Waitsome(count, reqs, &outcount, indices, sts));
        CHECK(outcount != MPI_UNDEFINED && outcount > 0, "Waitsome returned %d with %d left",
              outcount, count - completed);
        for (int i = 0; i < outcount; i++)
            check_completion(indices[i], &sts[i]);
    }
    /* The rest with Waitall (completed ones are MPI_REQUEST_NULL by now). */
    CHECK_MPI(MPI_Waitall(count, reqs, sts));
    for (int i = 0; i < count; i++)
        if (!posted[i].done)
            check_completion(i, &sts[i]);
    CHECK(completed == count, "%d of %d receives completed", completed, count);
    free(indices);
    free(sts);
}

static void complete_sends(MPI_Request *reqs, int count)
{
    int *indices = test_malloc((size_t)count * sizeof *indices);
    int done = 0;
    while (done < count / 2) {
        int outcount;
        CHECK_MPI(MPI_Waitsome(count, reqs, &outcount, indices, MPI_STATUSES_IGNORE));
        CHECK(outcount != MPI_UNDEFINED, "send Waitsome found nothing active with %d left", count - done);
        done += outcount;
    }
    CHECK_MPI(MPI_Waitall(count, reqs, MPI_STATUSES_IGNORE));
    for (int i = 0; i < count; i++)
        CHECK(reqs[i] == MPI_REQUEST_NULL, "send request %d still active after Waitall", i);
    free(indices);
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    require_ranks(2);
    /* 200 per pair up to 5 ranks, fewer beyond, so a rank handles at most ~800 of each. */
    per_pair = 800 / (test_size - 1);
    if (per_pair > 200)
        per_pair = 200;
    received = calloc((size_t)test_size * (size_t)per_pair, 1);

    unsigned char **send_bufs;
    int send_count, recv_count;
    MPI_Request *sends = start_sends(&send_bufs, &send_count);
    MPI_Request *recvs = post_receives(&recv_count);
    complete_receives(recvs, recv_count);
    complete_sends(sends, send_count);

    for (int s = 0; s < test_size; s++)
        for (int j = 0; j < per_pair; j++)
            CHECK(s == test_rank || received[s * per_pair + j], "message %d from rank %d never arrived", j, s);
    for (int i = 0; i < send_count; i++)
        free(send_bufs[i]);
    for (int i = 0; i < recv_count; i++)
        free(posted[i].buf);
    free(send_bufs);
    free(sends);
    free(recvs);
    free(posted);
    free(received);
    test_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
