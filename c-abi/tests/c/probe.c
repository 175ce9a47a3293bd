/*
 * probe: receiving messages whose size the receiver does not know.
 *
 * Every rank but 0 sends rank 0 (with Isend) two messages per round whose
 * sizes only the sender knows (short ones, and long ones beyond any eager limit). Rank 0
 * finds each with MPI_Probe or MPI_Iprobe on MPI_ANY_SOURCE, sizes it with
 * MPI_Get_count, allocates exactly that, and receives it from the probed
 * source and tag. Also: a probe does not consume (probing twice finds the
 * same message), Iprobe for a message nobody sent says no, Get_count in
 * MPI_INT units and MPI_UNDEFINED for a size that is not a whole number of
 * elements, Get_elements.
 */
#define TEST_NAME "probe"
#include "mpitest.h"

enum { ROUNDS = 3, TAG_SHORT = 10, TAG_LONG = 11, TAG_NEVER = 12345 };

/* Sizes depend on sender and round; the receiver never computes them. */
static int short_size(int from, int round) { return 4 * (from * 13 + round * 7) + (round == 2 ? 3 : 0); }
static int long_size(int from, int round) { return 100000 + from * 40961 + round * 4099; }

static void receive_probed(const MPI_Status *probed, int expect_round_of[], int tag)
{
    int from = probed->MPI_SOURCE;
    int bytes = -1;
    CHECK(from >= 1 && from < test_size, "probe returned source %d", from);
    CHECK(probed->MPI_TAG == tag, "probe for tag %d returned tag %d", tag, probed->MPI_TAG);
    CHECK_MPI(MPI_Get_count(probed, MPI_BYTE, &bytes));
    int round = expect_round_of[from]++;
    int want = tag == TAG_SHORT ? short_size(from, round) : long_size(from, round);
    CHECK(bytes == want, "probed message from %d (round %d) is %d bytes, want %d", from, round, bytes, want);

    int ints = -2, elements = -2;
    CHECK_MPI(MPI_Get_count(probed, MPI_INT, &ints));
    CHECK_MPI(MPI_Get_elements(probed, MPI_BYTE, &elements));
    CHECK(elements == bytes, "Get_elements says %d bytes, Get_count %d", elements, bytes);
    if (bytes % (int)sizeof(int) == 0)
        CHECK(ints == bytes / (int)sizeof(int), "Get_count(MPI_INT) %d for %d bytes", ints, bytes);
    else
        CHECK(ints == MPI_UNDEFINED, "Get_count(MPI_INT) of %d bytes is %d, want MPI_UNDEFINED", bytes, ints);

    unsigned char *buf = test_malloc((size_t)bytes);
    MPI_Status st;
    CHECK_MPI(MPI_Recv(buf, bytes, MPI_BYTE, from, probed->MPI_TAG, MPI_COMM_WORLD, &st));
    CHECK(st.MPI_SOURCE == from && st.MPI_TAG == tag && status_bytes(&st) == bytes,
          "receive after probe: source %d tag %d count %d, probe said %d, %d, %d", st.MPI_SOURCE,
          st.MPI_TAG, status_bytes(&st), from, tag, bytes);
    CHECK_PATTERN(buf, (size_t)bytes, message_seed(from, tag, round), "message from %d tag %d round %d",
                  from, tag, round);
    free(buf);
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    require_ranks(2);
    if (test_rank != 0) {
        /* Non-blocking, so rank 0 may take them in any order it likes. */
        unsigned char *bufs[2 * ROUNDS];
        MPI_Request reqs[2 * ROUNDS];
        for (int round = 0; round < ROUNDS; round++) {
            int sizes[2] = {short_size(test_rank, round), long_size(test_rank, round)};
            int tags[2] = {TAG_SHORT, TAG_LONG};
            for (int m = 0; m < 2; m++) {
                int i = 2 * round + m;
                bufs[i] = test_malloc((size_t)sizes[m]);
                fill_pattern(bufs[i], (size_t)sizes[m], message_seed(test_rank, tags[m], round));
                CHECK_MPI(MPI_Isend(bufs[i], sizes[m], MPI_BYTE, 0, tags[m], MPI_COMM_WORLD, &reqs[i]));
            }
        }
        CHECK_MPI(MPI_Waitall(2 * ROUNDS, reqs, MPI_STATUSES_IGNORE));
        for (int i = 0; i < 2 * ROUNDS; i++)
            free(bufs[i]);
    } else {
        int *short_round = calloc((size_t)test_size, sizeof(int));
        int *long_round = calloc((size_t)test_size, sizeof(int));
        int flag = 1;
        MPI_Status st;
        CHECK_MPI(MPI_Iprobe(MPI_ANY_SOURCE, TAG_NEVER, MPI_COMM_WORLD, &flag, &st));
        CHECK(!flag, "Iprobe found a message with tag %d that nobody sent", TAG_NEVER);
        for (int round = 0; round < ROUNDS; round++) {
            for (int m = 1; m < test_size; m++) {
                /* Short ones with blocking Probe, probing twice to see it stays. */
                MPI_Status first, again;
                CHECK_MPI(MPI_Probe(MPI_ANY_SOURCE, TAG_SHORT, MPI_COMM_WORLD, &first));
                CHECK_MPI(MPI_Probe(first.MPI_SOURCE, TAG_SHORT, MPI_COMM_WORLD, &again));
                CHECK(status_bytes(&first) == status_bytes(&again),
                      "probing twice gave %d then %d bytes", status_bytes(&first), status_bytes(&again));
                receive_probed(&first, short_round, TAG_SHORT);
            }
            for (int m = 1; m < test_size; m++) {
                /* Long ones by polling Iprobe. */
                flag = 0;
                while (!flag)
                    CHECK_MPI(MPI_Iprobe(MPI_ANY_SOURCE, TAG_LONG, MPI_COMM_WORLD, &flag, &st));
                receive_probed(&st, long_round, TAG_LONG);
            }
        }
        for (int r = 1; r < test_size; r++)
            CHECK(short_round[r] == ROUNDS && long_round[r] == ROUNDS,
                  "from rank %d: %d short and %d long messages, want %d each", r, short_round[r],
                  long_round[r], ROUNDS);
        CHECK_MPI(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st));
        CHECK(!flag, "a message from %d tag %d is left over", st.MPI_SOURCE, st.MPI_TAG);
        free(short_round);
        free(long_round);
    }
    test_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
