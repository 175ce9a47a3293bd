/*
 * truncate: a message longer than its receive buffer, under MPI_ERRORS_RETURN.
 *
 * For short, medium and long (1 MiB, rendezvous-size) messages from rank 1
 * to rank 0:
 *  - MPI_Recv into half the room returns an error of class MPI_ERR_TRUNCATE,
 *    the status still names the source and tag, nothing is written past the
 *    receive buffer, the sender's MPI_Send succeeds, and the next message on
 *    the same tag arrives whole (the truncated one was consumed, not left
 *    behind);
 *  - the same through MPI_Irecv + MPI_Wait, and with MPI_ANY_SOURCE;
 *  - MPI_Waitall over a good and a truncated receive returns
 *    MPI_ERR_IN_STATUS with an MPI_ERR_TRUNCATE-class code in the truncated
 *    status's MPI_ERROR and MPI_SUCCESS (or MPI_ERR_PENDING) in the other's.
 * Then an ordinary exchange between all ranks still works.
 *
 * Not checked, as MPICH does not do it either: MPI_ERROR in the status of a
 * single-request call (the standard leaves it unset), and Get_count of a
 * truncated message.
 */
#define TEST_NAME "truncate"
#include "mpitest.h"

enum { CANARY = 64, TAG_A = 1, TAG_B = 2, TAG_C = 3, TAG_D = 4 };

static const int sizes[] = {1, 100, 20000, 1048576};
enum { NSIZES = sizeof sizes / sizeof sizes[0] };

static void check_canary(const unsigned char *buf, int room, const char *what, int size)
{
    for (int i = room; i < room + CANARY; i++)
        CHECK(buf[i] == 0xC5, "%s of %d bytes into %d: byte %d past the buffer was overwritten",
              what, size, room, i - room);
}

static void check_truncated(int rc, const MPI_Status *st, int tag, const char *what, int size)
{
    CHECK(rc != MPI_SUCCESS, "%s of a %d-byte message into a smaller buffer succeeded", what, size);
    CHECK(error_class_of(rc) == MPI_ERR_TRUNCATE, "%s of %d bytes: got %s, want class MPI_ERR_TRUNCATE (%d)",
          what, size, error_text(rc), MPI_ERR_TRUNCATE);
    CHECK(st->MPI_SOURCE == 1 && st->MPI_TAG == tag, "%s of %d bytes: status source %d tag %d, want 1 and %d",
          what, size, st->MPI_SOURCE, st->MPI_TAG, tag);
}

/* Receive the follow-up message whole, proving the truncated one is gone. */
static void check_follow_up(unsigned char *buf, int size, int tag, int index)
{
    MPI_Status st;
    CHECK_MPI(MPI_Recv(buf, size, MPI_BYTE, 1, tag, MPI_COMM_WORLD, &st));
    CHECK(status_bytes(&st) == size, "message after a truncated one: %d bytes, want %d", status_bytes(&st), size);
    CHECK_PATTERN(buf, (size_t)size, message_seed(1, 0, index), "message after a truncated %d-byte one", size);
}

static void sender(int size, int k, unsigned char *buf)
{
    /* Four truncation cases, each followed by a good message on the same tag. */
    const int tags[4] = {TAG_A, TAG_B, TAG_C, TAG_D};
    for (int t = 0; t < 4; t++) {
        fill_pattern(buf, (size_t)size, message_seed(1, 0, 100 * k + 2 * t));
        CHECK_MPI(MPI_Send(buf, size, MPI_BYTE, 0, tags[t], MPI_COMM_WORLD));
        fill_pattern(buf, (size_t)size, message_seed(1, 0, 100 * k + 2 * t + 1));
        CHECK_MPI(MPI_Send(buf, size, MPI_BYTE, 0, tags[t], MPI_COMM_WORLD));
    }
}

static void receiver(int size, int k, unsigned char *buf, unsigned char *spare)
{
    int room = size / 2;
    MPI_Status st;
    MPI_Request req;
    int rc;

    /* A: blocking receive. */
    memset(buf, 0xC5, (size_t)size + CANARY);
    rc = MPI_Recv(buf, room, MPI_BYTE, 1, TAG_A, MPI_COMM_WORLD, &st);
    check_truncated(rc, &st, TAG_A, "MPI_Recv", size);
    check_canary(buf, room, "MPI_Recv", size);
    check_follow_up(buf, size, TAG_A, 100 * k + 1);

    /* B: MPI_Irecv + MPI_Wait. */
    memset(buf, 0xC5, (size_t)size + CANARY);
    CHECK_MPI(MPI_Irecv(buf, room, MPI_BYTE, 1, TAG_B, MPI_COMM_WORLD, &req));
    rc = MPI_Wait(&req, &st);
    check_truncated(rc, &st, TAG_B, "MPI_Wait", size);
    CHECK(req == MPI_REQUEST_NULL, "MPI_Wait of a truncated receive left the request active");
    check_canary(buf, room, "MPI_Irecv", size);
    check_follow_up(buf, size, TAG_B, 100 * k + 3);

    /* C: any source. */
    memset(buf, 0xC5, (size_t)size + CANARY);
    rc = MPI_Recv(buf, room, MPI_BYTE, MPI_ANY_SOURCE, TAG_C, MPI_COMM_WORLD, &st);
    check_truncated(rc, &st, TAG_C, "MPI_Recv from MPI_ANY_SOURCE", size);
    check_canary(buf, room, "MPI_Recv from MPI_ANY_SOURCE", size);
    check_follow_up(buf, size, TAG_C, 100 * k + 5);

    /* D: Waitall over a good and a truncated receive. The truncated one is
     * posted first (it matches the first message) but sits second in the
     * array. An implementation may leave the good one pending (MPI_ERR_PENDING
     * in its status, request still active); then a Wait finishes it. */
    enum { GOOD = 0, SHORTENED = 1 };
    MPI_Request reqs[2];
    MPI_Status sts[2];
    memset(buf, 0xC5, (size_t)size + CANARY);
    memset(spare, 0, (size_t)size);
    sts[0].MPI_ERROR = sts[1].MPI_ERROR = -12345;
    CHECK_MPI(MPI_Irecv(buf, room, MPI_BYTE, 1, TAG_D, MPI_COMM_WORLD, &reqs[SHORTENED]));
    CHECK_MPI(MPI_Irecv(spare, size, MPI_BYTE, 1, TAG_D, MPI_COMM_WORLD, &reqs[GOOD]));
    rc = MPI_Waitall(2, reqs, sts);
    CHECK(rc == MPI_ERR_IN_STATUS, "Waitall with a truncated receive of %d bytes returned %s, want MPI_ERR_IN_STATUS",
          size, error_text(rc));
    CHECK(error_class_of(sts[SHORTENED].MPI_ERROR) == MPI_ERR_TRUNCATE,
          "Waitall: the truncated receive's status MPI_ERROR is %d, want class MPI_ERR_TRUNCATE",
          sts[SHORTENED].MPI_ERROR);
    CHECK(reqs[SHORTENED] == MPI_REQUEST_NULL, "Waitall left the truncated request active");
    CHECK(sts[SHORTENED].MPI_SOURCE == 1 && sts[SHORTENED].MPI_TAG == TAG_D,
          "Waitall: truncated status names source %d tag %d", sts[SHORTENED].MPI_SOURCE, sts[SHORTENED].MPI_TAG);
    if (sts[GOOD].MPI_ERROR == MPI_ERR_PENDING) {
        CHECK(reqs[GOOD] != MPI_REQUEST_NULL, "Waitall: MPI_ERR_PENDING for a request it freed");
        CHECK_MPI(MPI_Wait(&reqs[GOOD], &sts[GOOD]));
    } else {
        CHECK(sts[GOOD].MPI_ERROR == MPI_SUCCESS,
              "Waitall: the good receive's status MPI_ERROR is %d, want MPI_SUCCESS (or MPI_ERR_PENDING)",
              sts[GOOD].MPI_ERROR);
        CHECK(reqs[GOOD] == MPI_REQUEST_NULL, "Waitall left the good request active");
    }
    CHECK(status_bytes(&sts[GOOD]) == size, "Waitall: good receive got %d bytes, want %d", status_bytes(&sts[GOOD]), size);
    check_canary(buf, room, "Waitall", size);
    CHECK_PATTERN(spare, (size_t)size, message_seed(1, 0, 100 * k + 7), "Waitall: the good %d-byte receive", size);
}

static void ordinary_exchange(void)
{
    int right = (test_rank + 1) % test_size, left = (test_rank + test_size - 1) % test_size;
    unsigned char out[4096], in[4096];
    MPI_Status st;
    fill_pattern(out, sizeof out, message_seed(test_rank, right, 999));
    CHECK_MPI(MPI_Sendrecv(out, sizeof out, MPI_BYTE, right, 9, in, sizeof in, MPI_BYTE, left, 9,
                           MPI_COMM_WORLD, &st));
    CHECK_PATTERN(in, sizeof in, message_seed(left, test_rank, 999), "exchange after the truncations");
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    require_ranks(2);
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    const int max = 1048576;
    unsigned char *buf = test_malloc(max + CANARY), *spare = test_malloc(max);
    for (int k = 0; k < NSIZES; k++) {
        if (test_rank == 1)
            sender(sizes[k], k, buf);
        else if (test_rank == 0)
            receiver(sizes[k], k, buf, spare);
    }
    free(buf);
    free(spare);
    ordinary_exchange();
    test_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
