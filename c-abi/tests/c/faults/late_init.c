/*
 * late_init: one rank sleeps before MPI_Init, so that the others wait in the
 * wire-up (their listening sockets open) meanwhile; then every pair of ranks
 * exchanges a patterned message of 100000 bytes both ways and checks it.
 * Prints "OK late_init" from rank 0 when every check passed.
 *
 *   late_init LATE_RANK MILLISECONDS
 *
 * Before MPI_Init each rank prints "rank R entering MPI_Init" (the late one
 * "rank R sleeping before MPI_Init"); it knows its rank from PMI_RANK, which
 * the launcher sets.
 */
#define TEST_NAME "late_init"
#include "mpitest.h"

#define BYTES 100000

int main(int argc, char **argv)
{
    int late = argc > 1 ? atoi(argv[1]) : -1;
    int millis = argc > 2 ? atoi(argv[2]) : 0;
    const char *pmi_rank = getenv("PMI_RANK");
    int rank = pmi_rank ? atoi(pmi_rank) : -1;
    if (rank == late) {
        printf("rank %d sleeping before MPI_Init\n", rank);
        fflush(stdout);
        sleep_ms(millis);
    } else {
        printf("rank %d entering MPI_Init\n", rank);
        fflush(stdout);
    }
    test_init(&argc, &argv);
    require_ranks(2);
    unsigned char *out = test_malloc(BYTES);
    unsigned char *in = test_malloc(BYTES);
    for (int peer = 0; peer < test_size; peer++) {
        if (peer == test_rank)
            continue;
        fill_pattern(out, BYTES, message_seed(test_rank, peer, 0));
        memset(in, 0, BYTES);
        MPI_Status st;
        CHECK_MPI(MPI_Sendrecv(out, BYTES, MPI_BYTE, peer, 7, in, BYTES, MPI_BYTE, peer, 7,
                               MPI_COMM_WORLD, &st));
        CHECK(status_bytes(&st) == BYTES, "from rank %d: %d bytes, want %d", peer,
              status_bytes(&st), BYTES);
        CHECK_PATTERN(in, BYTES, message_seed(peer, test_rank, 0), "message from rank %d", peer);
    }
    free(out);
    free(in);
    test_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
