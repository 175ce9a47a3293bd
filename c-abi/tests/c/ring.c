/*
 * ring: a token travels several laps around all ranks, then ranks 0 and 1
 * ping-pong messages from 0 bytes to 4 MiB (powers of 4 and awkward sizes
 * that straddle packet and protocol boundaries), the data verified at both
 * ends at every size. Sends from odd sizes use a misaligned buffer.
 *
 * Rank 0 also prints the library's version string ("library: ..."), so a
 * test can tell which libmpi a binary actually loaded.
 */
#define TEST_NAME "ring"
#include "mpitest.h"

enum { LAPS = 5, TAG_TOKEN = 1, TAG_PING = 2, TAG_PONG = 3 };

static void print_library(void)
{
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    CHECK_MPI(MPI_Get_library_version(version, &len));
    /* First line only: enough to identify the library. */
    char *newline = strchr(version, '\n');
    if (newline)
        *newline = '\0';
    printf("library: %s\n", version);
    fflush(stdout);
}

static void token_ring(void)
{
    int right = (test_rank + 1) % test_size;
    int left = (test_rank + test_size - 1) % test_size;
    for (int lap = 0; lap < LAPS; lap++) {
        int token;
        MPI_Status st;
        if (test_rank == 0) {
            token = lap * test_size + 1;
            CHECK_MPI(MPI_Send(&token, 1, MPI_INT, right, TAG_TOKEN, MPI_COMM_WORLD));
            CHECK_MPI(MPI_Recv(&token, 1, MPI_INT, left, TAG_TOKEN, MPI_COMM_WORLD, &st));
            CHECK(token == (lap + 1) * test_size, "lap %d: token came back as %d, want %d",
                  lap, token, (lap + 1) * test_size);
        } else {
            CHECK_MPI(MPI_Recv(&token, 1, MPI_INT, left, TAG_TOKEN, MPI_COMM_WORLD, &st));
            CHECK(token == lap * test_size + test_rank, "lap %d: got token %d, want %d", lap,
                  token, lap * test_size + test_rank);
            token++;
            CHECK_MPI(MPI_Send(&token, 1, MPI_INT, right, TAG_TOKEN, MPI_COMM_WORLD));
        }
        CHECK(st.MPI_SOURCE == left && st.MPI_TAG == TAG_TOKEN,
              "token status says source %d tag %d, want %d and %d", st.MPI_SOURCE, st.MPI_TAG,
              left, TAG_TOKEN);
    }
}

static const size_t sizes[] = {
    0,     1,     4,     7,      16,      64,      256,     1024,        4095,   4096,
    4097,  16384, 65536, 65537,  262144,  1048576, 1048579, 4194304,
};

static void ping_pong(void)
{
    const size_t max = 4194304 + 8;
    unsigned char *sendbuf = test_malloc(max);
    unsigned char *recvbuf = test_malloc(max);
    int peer = 1 - test_rank;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k];
        size_t offset = n % 2; /* odd sizes travel from and to misaligned addresses */
        int reps = n <= 65536 ? 3 : 1;
        for (int rep = 0; rep < reps; rep++) {
            uint32_t ping_seed = message_seed(0, 1, (int)(k * 10 + rep));
            uint32_t pong_seed = message_seed(1, 0, (int)(k * 10 + rep));
            MPI_Status st;
            memset(recvbuf, 0xEE, n + offset + 1);
            if (test_rank == 0) {
                fill_pattern(sendbuf + offset, n, ping_seed);
                CHECK_MPI(MPI_Send(sendbuf + offset, (int)n, MPI_BYTE, peer, TAG_PING, MPI_COMM_WORLD));
                CHECK_MPI(MPI_Recv(recvbuf + offset, (int)n, MPI_BYTE, peer, TAG_PONG, MPI_COMM_WORLD, &st));
                CHECK_PATTERN(recvbuf + offset, n, pong_seed, "pong of %zu bytes", n);
            } else {
                CHECK_MPI(MPI_Recv(recvbuf + offset, (int)n, MPI_BYTE, peer, TAG_PING, MPI_COMM_WORLD, &st));
                CHECK_PATTERN(recvbuf + offset, n, ping_seed, "ping of %zu bytes", n);
                fill_pattern(sendbuf + offset, n, pong_seed);
                CHECK_MPI(MPI_Send(sendbuf + offset, (int)n, MPI_BYTE, peer, TAG_PONG, MPI_COMM_WORLD));
            }
            CHECK(status_bytes(&st) == (int)n, "%zu-byte message: Get_count says %d", n,
                  status_bytes(&st));
            CHECK(st.MPI_SOURCE == peer, "%zu-byte message: status source %d, want %d", n,
                  st.MPI_SOURCE, peer);
            CHECK(recvbuf[offset + n] == 0xEE, "%zu-byte message: byte after the buffer was overwritten", n);
        }
    }
    free(sendbuf);
    free(recvbuf);
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    require_ranks(2);
    if (test_rank == 0)
        print_library();
    token_ring();
    if (test_rank < 2)
        ping_pong();
    test_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
