/*
 * p2p_sizes: point-to-point messages of every size class between every pair of ranks,
 * received with MPI_ANY_SOURCE and MPI_ANY_TAG, every byte checked.
 *
 * The sizes: 0, every power of two from 1 byte up to P2P_MAX_BYTES (environment; default
 * 64 MiB), and odd sizes around the places where a transport changes its ways: the eager /
 * rendezvous threshold (8 KiB), a network write chunk (64 KiB), a network receive buffer
 * (256 KiB), the network's read chunk (1 MiB: one byte short, one byte over, several chunks
 * and a remainder) and its send-queue limit (4 MiB). Sizes above P2P_MAX_BYTES are left out.
 *
 * For each size (in increasing order) every rank posts n-1 receives with MPI_ANY_SOURCE +
 * MPI_ANY_TAG, then sends one message of that size to every other rank, tagged with the size's
 * index and filled with a pattern that depends on (sender, receiver, size index), and waits
 * for all of them; so every ordered pair of ranks meets every size once, and the senders race
 * for each receiver's wildcard receives. The status of each receive names the sender and the
 * size index: the receiver checks MPI_Get_count against that size and every byte against that
 * pattern, and that no sender's message of that size arrives twice. A barrier ends each size,
 * so a wildcard receive can only meet a message of its own size (without it, a rank that is
 * ahead could take a receive that a slower rank's message needs, and two ranks waiting for
 * their long sends to be received would wait for ever).
 */
#define TEST_NAME "p2p_sizes"
#include "mpitest.h"

#define KIB 1024L
#define MIB (1024L * 1024L)
#define DEFAULT_MAX (64 * MIB)

/* The odd sizes; the powers of two are added in main. */
static const long odd_sizes[] = {
    8 * KIB - 1,  8 * KIB + 1,  8 * KIB + 4093, 64 * KIB - 1, 64 * KIB + 1,
    256 * KIB - 24, 256 * KIB + 1, MIB - 1,     MIB + 1,      2 * MIB + 3,
    3 * MIB + 12345, 4 * MIB + 1,
};
enum { ODD_SIZES = sizeof odd_sizes / sizeof odd_sizes[0], MAX_SIZES = 64 };

static long sizes[MAX_SIZES];
static int nsizes;

static int compare_longs(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

/* Fills `sizes` (sorted) with every size up to `max`. */
static void choose_sizes(long max)
{
    sizes[nsizes++] = 0;
    for (long s = 1; s <= max; s *= 2)
        sizes[nsizes++] = s;
    for (int i = 0; i < ODD_SIZES; i++)
        if (odd_sizes[i] <= max)
            sizes[nsizes++] = odd_sizes[i];
    qsort(sizes, (size_t)nsizes, sizeof sizes[0], compare_longs);
}

/* The size limit from P2P_MAX_BYTES, or the default; fails on a malformed value. */
static long max_bytes(void)
{
    const char *text = getenv("P2P_MAX_BYTES");
    if (!text || !*text)
        return DEFAULT_MAX;
    char *end = NULL;
    long max = strtol(text, &end, 10);
    CHECK(*end == '\0' && max >= 0 && max <= 1024 * MIB,
          "P2P_MAX_BYTES=%s: want a byte count up to 1 GiB", text);
    return max;
}

/* One buffer of `len` bytes per other rank. */
static unsigned char **buffers(size_t len)
{
    unsigned char **b = test_malloc(sizeof *b * (size_t)(test_size - 1));
    for (int i = 0; i < test_size - 1; i++)
        b[i] = test_malloc(len);
    return b;
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    require_ranks(2);
    long max = max_bytes();
    choose_sizes(max);
    long largest = sizes[nsizes - 1];
    int others = test_size - 1;
    /* send_buf[r - 1] goes to rank + r; recv_buf[i] takes the i-th arrival. */
    unsigned char **send_buf = buffers((size_t)largest);
    unsigned char **recv_buf = buffers((size_t)largest);
    MPI_Request *reqs = test_malloc(sizeof *reqs * 2 * (size_t)others);
    MPI_Status *stats = test_malloc(sizeof *stats * 2 * (size_t)others);
    /* received[source * nsizes + k]: how often size k came from source. */
    int *received = calloc((size_t)test_size * (size_t)nsizes, sizeof *received);
    CHECK(received != NULL, "out of memory");
    double started = MPI_Wtime();

    for (int k = 0; k < nsizes; k++) {
        size_t len = (size_t)sizes[k];
        for (int i = 0; i < others; i++) {
            /* Spoil what the message will fill, so that bytes the library fails to write
             * show up. */
            memset(recv_buf[i], 0xA5, len);
            CHECK_MPI(MPI_Irecv(recv_buf[i], (int)largest, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG,
                                MPI_COMM_WORLD, &reqs[i]));
        }
        for (int r = 1; r <= others; r++) {
            int to = (test_rank + r) % test_size;
            fill_pattern(send_buf[r - 1], len, message_seed(test_rank, to, k));
            CHECK_MPI(MPI_Isend(send_buf[r - 1], (int)len, MPI_BYTE, to, k, MPI_COMM_WORLD,
                                &reqs[others + r - 1]));
        }
        CHECK_MPI(MPI_Waitall(2 * others, reqs, stats));
        for (int i = 0; i < others; i++) {
            const MPI_Status *st = &stats[i];
            int from = st->MPI_SOURCE, tag = st->MPI_TAG;
            CHECK(from >= 0 && from < test_size && from != test_rank,
                  "size %ld: status source %d is not another rank", sizes[k], from);
            CHECK(tag == k, "size %ld: a message from rank %d has tag %d, want %d", sizes[k],
                  from, tag, k);
            CHECK(received[from * nsizes + tag] == 0,
                  "a second message of %ld bytes from rank %d", sizes[tag], from);
            received[from * nsizes + tag]++;
            int count = status_bytes(st);
            CHECK(count == sizes[tag], "message from rank %d with tag %d: %d bytes, want %ld",
                  from, tag, count, sizes[tag]);
            CHECK_PATTERN(recv_buf[i], (size_t)count, message_seed(from, test_rank, tag),
                          "%d bytes from rank %d to rank %d", count, from, test_rank);
        }
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    }
    for (int from = 0; from < test_size; from++)
        for (int k = 0; k < nsizes; k++)
            CHECK(received[from * nsizes + k] == (from == test_rank ? 0 : 1),
                  "received %d messages of %ld bytes from rank %d", received[from * nsizes + k],
                  sizes[k], from);

    double seconds = MPI_Wtime() - started;
    if (test_rank == 0) {
        printf("p2p_sizes: %d sizes from 0 to %ld bytes between %d ranks in %.2f s\n", nsizes,
               largest, test_size, seconds);
        fflush(stdout);
    }
    for (int i = 0; i < others; i++) {
        free(send_buf[i]);
        free(recv_buf[i]);
    }
    free(send_buf);
    free(recv_buf);
    free(reqs);
    free(stats);
    free(received);
    test_ok();
    MPI_Finalize();
    return 0;
}
