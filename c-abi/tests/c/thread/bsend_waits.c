/*
 * bsend_waits: MPI_Buffer_detach and MPI_Buffer_flush under MPI_THREAD_MULTIPLE wait for the
 * buffered sends without holding the library's lock. Ranks are paired (r with r ^ 1). On each
 * rank one thread MPI_Bsends a 1 MiB message to the partner (it needs the receiver: a
 * rendezvous), then flushes or detaches the buffer, which waits until the message has left;
 * another thread receives the partner's message only after a delay. If the wait held the
 * lock, neither receiving thread could post its MPI_Recv and the job would hang. Every byte
 * is checked.
 */
#define TEST_NAME "bsend_waits"
#include "mpitest.h"
#include <pthread.h>

#define ROUNDS 4
#define BIG (1 << 20)
#define DELAY_MS 20
#define TAG 11

static int partner, round_no;
static unsigned char *inbox;

static void *receive_late(void *arg)
{
    (void)arg;
    sleep_ms(DELAY_MS);
    MPI_Status st;
    CHECK_MPI(MPI_Recv(inbox, BIG, MPI_BYTE, partner, TAG, MPI_COMM_WORLD, &st));
    CHECK(status_bytes(&st) == BIG, "count %d", status_bytes(&st));
    CHECK_PATTERN(inbox, BIG, message_seed(partner, test_rank, round_no), "round %d", round_no);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided = -1;
    CHECK_MPI(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &test_rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &test_size));
    CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
    CHECK(test_size % 2 == 0, "run with an even number of ranks");
    partner = test_rank ^ 1;
    int size = BIG + MPI_BSEND_OVERHEAD;
    unsigned char *buffer = test_malloc((size_t)size);
    unsigned char *out = test_malloc(BIG);
    inbox = test_malloc(BIG);
    CHECK_MPI(MPI_Buffer_attach(buffer, size));

    for (round_no = 0; round_no < ROUNDS; round_no++) {
        pthread_t t;
        CHECK(pthread_create(&t, NULL, receive_late, NULL) == 0, "pthread_create");
        fill_pattern(out, BIG, message_seed(test_rank, partner, round_no));
        CHECK_MPI(MPI_Bsend(out, BIG, MPI_BYTE, partner, TAG, MPI_COMM_WORLD));
        /* The copy was taken: the send buffer may change at once. */
        memset(out, 0, BIG);
        if (round_no % 2 == 0) {
            CHECK_MPI(MPI_Buffer_flush());
        } else {
            void *back = NULL;
            int back_size = -1;
            CHECK_MPI(MPI_Buffer_detach(&back, &back_size));
            CHECK(back == buffer && back_size == size, "detach gave %p, %d", back, back_size);
            CHECK_MPI(MPI_Buffer_attach(buffer, size));
        }
        pthread_join(t, NULL);
    }

    void *back = NULL;
    int back_size = -1;
    CHECK_MPI(MPI_Buffer_detach(&back, &back_size));
    free(buffer);
    free(out);
    free(inbox);
    test_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
