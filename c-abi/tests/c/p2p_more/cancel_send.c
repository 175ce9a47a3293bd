/*
 * cancel_send.c: MPI_Cancel of sends (MPI 4.0 §3.8.4), short and rendezvous, to this process
 * and to another.
 *
 *  1. A zero-byte MPI_Issend to self, probed, then cancelled: right after MPI_Cancel,
 *     MPI_Request_get_status already has the answer (the cancellation of a send to this very
 *     process is settled inside MPI_Cancel, as MPICH does) and it is "cancelled"; the message
 *     is gone (MPI_Iprobe finds nothing). This is mpi4py's testProbeCancel, which hung.
 *  2. Unmatched sends to self of 8 B and 1 MiB (eager and rendezvous), MPI_Isend and
 *     MPI_Issend: cancelled, MPI_Wait returns, MPI_Test_cancelled is true, nothing arrives.
 *  3. With 2+ ranks, rank 0 sends rank 1 an unmatched message of each size and cancels it:
 *     cancelled, and rank 1 (after a barrier) finds no such message; then a send rank 1 has
 *     already received: the cancellation fails and the send completes normally.
 */
#define TEST_NAME "cancel_send"
#include "../mpitest.h"

enum { BIG = 1 << 20 };

static void expect_gone(MPI_Comm comm, int src, int tag)
{
    int flag = 1;
    CHECK_MPI(MPI_Iprobe(src, tag, comm, &flag, MPI_STATUS_IGNORE));
    CHECK(!flag, "a cancelled message (source %d, tag %d) still arrived", src, tag);
}

static void cancel_probed_self_ssend(void)
{
    MPI_Comm comm;
    MPI_Request req;
    MPI_Status st;
    int flag = 0, cancelled = 0;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_SELF, &comm));
    CHECK_MPI(MPI_Issend(NULL, 0, MPI_BYTE, 0, 123, comm, &req));
    CHECK_MPI(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &st));
    CHECK(st.MPI_SOURCE == 0 && st.MPI_TAG == 123, "probe saw source %d tag %d", st.MPI_SOURCE,
          st.MPI_TAG);
    CHECK_MPI(MPI_Cancel(&req));
    CHECK_MPI(MPI_Request_get_status(req, &flag, &st));
    CHECK(flag, "MPI_Request_get_status right after cancelling a send to self: not complete");
    CHECK_MPI(MPI_Test_cancelled(&st, &cancelled));
    CHECK(cancelled, "an unmatched Issend to self was not cancelled");
    CHECK_MPI(MPI_Request_free(&req));
    expect_gone(comm, 0, 123);
    CHECK_MPI(MPI_Comm_free(&comm));
}

static void cancel_unmatched_to(MPI_Comm comm, int dest, char *buf, int len, int sync, int tag)
{
    MPI_Request req;
    MPI_Status st;
    int cancelled = 0;
    fill_pattern(buf, len, tag);
    if (sync)
        CHECK_MPI(MPI_Issend(buf, len, MPI_BYTE, dest, tag, comm, &req));
    else
        CHECK_MPI(MPI_Isend(buf, len, MPI_BYTE, dest, tag, comm, &req));
    CHECK_MPI(MPI_Cancel(&req));
    CHECK_MPI(MPI_Wait(&req, &st));
    CHECK(req == MPI_REQUEST_NULL, "the cancelled request was not freed by MPI_Wait");
    CHECK_MPI(MPI_Test_cancelled(&st, &cancelled));
    CHECK(cancelled, "an unmatched %s of %d B to rank %d was not cancelled",
          sync ? "Issend" : "Isend", len, dest);
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    char *buf = malloc(BIG);
    char *got = malloc(BIG);
    CHECK(buf && got, "out of memory");

    cancel_probed_self_ssend();

    int me = test_rank;
    int tag = 200;
    for (int sync = 0; sync < 2; sync++) {
        int lens[] = {8, BIG};
        for (int i = 0; i < 2; i++, tag++) {
            cancel_unmatched_to(MPI_COMM_SELF, 0, buf, lens[i], sync, tag);
            expect_gone(MPI_COMM_SELF, 0, tag);
        }
    }

    if (test_size >= 2 && me < 2) {
        MPI_Comm pair;
        CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, me, &pair));
        int first = tag;
        if (me == 0) {
            for (int sync = 0; sync < 2; sync++) {
                int lens[] = {8, BIG};
                for (int i = 0; i < 2; i++, tag++)
                    cancel_unmatched_to(pair, 1, buf, lens[i], sync, tag);
            }
        }
        CHECK_MPI(MPI_Barrier(pair));
        if (me == 1)
            for (int t = first; t < first + 4; t++)
                expect_gone(pair, 0, t);
        CHECK_MPI(MPI_Barrier(pair));

        /* A send already received cannot be cancelled: it completes as sent. */
        if (me == 0) {
            MPI_Request req;
            MPI_Status st;
            int cancelled = 1;
            fill_pattern(buf, 64, 7);
            CHECK_MPI(MPI_Isend(buf, 64, MPI_BYTE, 1, 300, pair, &req));
            CHECK_MPI(MPI_Barrier(pair)); /* rank 1 has received it */
            CHECK_MPI(MPI_Cancel(&req));
            CHECK_MPI(MPI_Wait(&req, &st));
            CHECK_MPI(MPI_Test_cancelled(&st, &cancelled));
            CHECK(!cancelled, "a send the receiver had already received was marked cancelled");
        } else {
            CHECK_MPI(MPI_Recv(got, 64, MPI_BYTE, 0, 300, pair, MPI_STATUS_IGNORE));
            CHECK_PATTERN(got, 64, 7, "the message rank 0 then tried to cancel");
            CHECK_MPI(MPI_Barrier(pair));
        }
        CHECK_MPI(MPI_Comm_free(&pair));
    } else if (test_size >= 2) {
        MPI_Comm pair;
        CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, MPI_UNDEFINED, me, &pair));
    }

    free(buf);
    free(got);
    test_ok();
    MPI_Finalize();
    return 0;
}
