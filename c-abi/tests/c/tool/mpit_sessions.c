/*
 * mpit_sessions: the layers' counters read through MPI_T sessions, with real traffic.
 *
 * Rank 0 sends N messages of S bytes to rank 1 (on one rank, to itself). Checked:
 * - a started handle of nic_packets_tx / nic_bytes_tx / bip_messages_sent on the sender and of
 *   the _rx / received ones on the receiver moved by at least N packets, N*S bytes and exactly
 *   N BIP messages plus what the two barriers in the interval send, measured by a third
 *   session around one barrier (TOOL_EXACT_BIP=1: the bip channel sends each MPI message as
 *   one BIP message);
 * - a stopped handle does not move while messages flow; start again adds up;
 * - two sessions are independent: one started after half the messages counts less, by at least
 *   the half's bytes; resetting or writing one changes nothing in the other;
 * - reset gives 0, readreset returns the value then 0, write sets the handle's value;
 * - MPI_T_PVAR_ALL_HANDLES starts and stops every counter of a session.
 * - Every counter read after MPI_Finalize through a handle started before MPI_Init is printed
 *   ("PVAR <rank> <name> <value>"): the harness compares them with the MPI_COUNTERS dump.
 */
#define TEST_NAME "mpit_sessions"
#include "mpitest.h"

#define EXPECT_T(call, want)                                                   \
    do {                                                                       \
        int got_ = (call);                                                     \
        if (got_ != (want))                                                    \
            FAIL("%s returned %d, expected %s (%d)", #call, got_, #want, want);  \
    } while (0)

static int pvar(const char *name)
{
    int i = -1;
    CHECK_MPI(MPI_T_pvar_get_index(name, MPI_T_PVAR_CLASS_COUNTER, &i));
    return i;
}

static MPI_T_pvar_handle alloc(MPI_T_pvar_session s, const char *name)
{
    MPI_T_pvar_handle h;
    int count = 0;
    CHECK_MPI(MPI_T_pvar_handle_alloc(s, pvar(name), NULL, &h, &count));
    CHECK(count == 1, "count");
    return h;
}

static unsigned long long rd(MPI_T_pvar_session s, MPI_T_pvar_handle h)
{
    unsigned long long v = 0;
    CHECK_MPI(MPI_T_pvar_read(s, h, &v));
    return v;
}

static void traffic(int count, int size, char *buf, int tag)
{
    int peer = test_size > 1 ? 1 : 0;
    for (int k = 0; k < count; k++) {
        if (test_rank == 0) {
            fill_pattern(buf, (size_t)size, message_seed(0, peer, k));
            if (peer == 0) {
                CHECK_MPI(MPI_Sendrecv(buf, size, MPI_BYTE, 0, tag, buf + size, size, MPI_BYTE, 0, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                CHECK_PATTERN(buf + size, (size_t)size, message_seed(0, 0, k), "message %d", k);
            } else {
                CHECK_MPI(MPI_Send(buf, size, MPI_BYTE, peer, tag, MPI_COMM_WORLD));
            }
        } else if (test_rank == 1) {
            CHECK_MPI(MPI_Recv(buf, size, MPI_BYTE, 0, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK_PATTERN(buf, (size_t)size, message_seed(0, 1, k), "message %d", k);
        }
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

int main(int argc, char **argv)
{
    int provided, npvar;
    CHECK_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    CHECK_MPI(MPI_T_pvar_get_num(&npvar));

    /* Since MPI_Init: one handle of every counter, started before it. */
    MPI_T_pvar_session whole;
    MPI_T_pvar_handle *all = malloc(sizeof(MPI_T_pvar_handle) * (size_t)npvar);
    CHECK(all, "memory");
    CHECK_MPI(MPI_T_pvar_session_create(&whole));
    for (int i = 0; i < npvar; i++) {
        int count;
        CHECK_MPI(MPI_T_pvar_handle_alloc(whole, i, NULL, &all[i], &count));
    }
    CHECK_MPI(MPI_T_pvar_start(whole, MPI_T_PVAR_ALL_HANDLES));

    test_init(&argc, &argv);
    const int N = 40, S = 2000, half = N / 2;
    char *buf = test_malloc(2 * (size_t)S);
    int sender = test_rank == 0, receiver = test_size > 1 ? test_rank == 1 : test_rank == 0;
    int exact_bip = getenv("TOOL_EXACT_BIP") != NULL;

    MPI_T_pvar_session a, b;
    CHECK_MPI(MPI_T_pvar_session_create(&a));
    CHECK_MPI(MPI_T_pvar_session_create(&b));
    MPI_T_pvar_handle a_tx = alloc(a, "nic_packets_tx"), a_txb = alloc(a, "nic_bytes_tx");
    MPI_T_pvar_handle a_rx = alloc(a, "nic_packets_rx"), a_rxb = alloc(a, "nic_bytes_rx");
    MPI_T_pvar_handle a_sent = alloc(a, "bip_messages_sent"), a_recv = alloc(a, "bip_messages_received");
    MPI_T_pvar_handle b_txb = alloc(b, "nic_bytes_tx"), b_rxb = alloc(b, "nic_bytes_rx");
    CHECK(rd(a, a_txb) == 0, "a new handle reads 0");

    /* What one barrier sends and receives in BIP messages (traffic() ends with one). */
    MPI_T_pvar_session c;
    CHECK_MPI(MPI_T_pvar_session_create(&c));
    MPI_T_pvar_handle c_sent = alloc(c, "bip_messages_sent"), c_recv = alloc(c, "bip_messages_received");
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_T_pvar_start(c, MPI_T_PVAR_ALL_HANDLES));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_T_pvar_stop(c, MPI_T_PVAR_ALL_HANDLES));
    unsigned long long barrier_sent = rd(c, c_sent), barrier_recv = rd(c, c_recv);
    CHECK_MPI(MPI_T_pvar_session_free(&c));

    CHECK_MPI(MPI_T_pvar_start(a, MPI_T_PVAR_ALL_HANDLES));
    traffic(half, S, buf, 1);
    CHECK_MPI(MPI_T_pvar_start(b, MPI_T_PVAR_ALL_HANDLES));
    traffic(N - half, S, buf, 2);
    CHECK_MPI(MPI_T_pvar_stop(a, MPI_T_PVAR_ALL_HANDLES));
    CHECK_MPI(MPI_T_pvar_stop(b, MPI_T_PVAR_ALL_HANDLES));

    unsigned long long tx = rd(a, a_tx), txb = rd(a, a_txb), rx = rd(a, a_rx), rxb = rd(a, a_rxb);
    unsigned long long sent = rd(a, a_sent), recvd = rd(a, a_recv);
    if (sender) {
        CHECK(tx >= (unsigned long long)N, "nic_packets_tx %llu < %d messages", tx, N);
        CHECK(txb >= (unsigned long long)N * S, "nic_bytes_tx %llu < %d bytes", txb, N * S);
        CHECK(rd(a, a_txb) - rd(b, b_txb) >= (unsigned long long)half * S,
              "session b started after %d messages counts at least their bytes less (%llu vs %llu)", half, rd(a, a_txb), rd(b, b_txb));
        CHECK(rd(b, b_txb) >= (unsigned long long)(N - half) * S, "session b counted its half (%llu)", rd(b, b_txb));
        if (exact_bip)
            CHECK(sent == (unsigned long long)N + 2 * barrier_sent,
                  "bip_messages_sent %llu, exactly %d messages + 2 barriers of %llu expected", sent, N, barrier_sent);
        else
            CHECK(sent >= (unsigned long long)N, "bip_messages_sent %llu < %d", sent, N);
    }
    if (receiver) {
        CHECK(rx >= (unsigned long long)N, "nic_packets_rx %llu < %d", rx, N);
        CHECK(rxb >= (unsigned long long)N * S, "nic_bytes_rx %llu < %d", rxb, N * S);
        CHECK(rd(b, b_rxb) >= (unsigned long long)(N - half) * S && rd(b, b_rxb) < rxb, "session b's rx view");
        if (exact_bip && test_size > 1)
            CHECK(recvd == (unsigned long long)N + 2 * barrier_recv,
                  "bip_messages_received %llu, exactly %d messages + 2 barriers of %llu expected", recvd, N, barrier_recv);
    }

    /* Stopped: no longer counts. */
    traffic(10, S, buf, 3);
    CHECK(rd(a, a_txb) == txb && rd(a, a_rxb) == rxb, "a stopped handle does not move");
    /* Started again: adds up. */
    CHECK_MPI(MPI_T_pvar_start(a, a_txb));
    traffic(10, S, buf, 4);
    CHECK_MPI(MPI_T_pvar_stop(a, a_txb));
    if (sender)
        CHECK(rd(a, a_txb) >= txb + 10ull * S, "a second interval adds up (%llu, %llu)", rd(a, a_txb), txb);

    /* Reset, readreset, write: the handle's own view only. */
    unsigned long long b_before = rd(b, b_txb), v = 0, w = 12345;
    CHECK_MPI(MPI_T_pvar_reset(a, a_txb));
    CHECK(rd(a, a_txb) == 0, "reset gives 0");
    CHECK(rd(b, b_txb) == b_before, "another session's handle is untouched by a reset");
    CHECK_MPI(MPI_T_pvar_readreset(a, a_rxb, &v));
    CHECK(v == rxb && rd(a, a_rxb) == 0, "readreset returns the value (%llu, %llu) then 0", v, rxb);
    CHECK_MPI(MPI_T_pvar_write(a, a_tx, &w));
    CHECK(rd(a, a_tx) == w, "write sets the handle's value");
    CHECK(rd(b, b_txb) == b_before, "another session's handle is untouched by a write");
    /* Started after a write: counts on from the written value. */
    CHECK_MPI(MPI_T_pvar_start(a, a_tx));
    traffic(5, S, buf, 5);
    CHECK_MPI(MPI_T_pvar_stop(a, a_tx));
    if (sender)
        CHECK(rd(a, a_tx) >= w + 5, "counts on from the written value (%llu)", rd(a, a_tx));

    /* A continuous level and high-water mark read without start. */
    int lvl, peak, count;
    MPI_T_pvar_handle hl, hp;
    unsigned long long level = 0, top = 0;
    CHECK_MPI(MPI_T_pvar_get_index("bip_buffered_bytes", MPI_T_PVAR_CLASS_LEVEL, &lvl));
    CHECK_MPI(MPI_T_pvar_get_index("bip_buffered_peak", MPI_T_PVAR_CLASS_HIGHWATERMARK, &peak));
    CHECK_MPI(MPI_T_pvar_handle_alloc(a, lvl, NULL, &hl, &count));
    CHECK_MPI(MPI_T_pvar_handle_alloc(a, peak, NULL, &hp, &count));
    CHECK_MPI(MPI_T_pvar_read(a, hl, &level));
    CHECK_MPI(MPI_T_pvar_read(a, hp, &top));
    CHECK(top >= level, "peak %llu >= level %llu", top, level);

    CHECK_MPI(MPI_T_pvar_session_free(&a));
    CHECK_MPI(MPI_T_pvar_session_free(&b));
    free(buf);
    test_ok();
    CHECK_MPI(MPI_Finalize());

    /* After MPI_Finalize: the totals since MPI_Init, for the harness to compare with the dump. */
    for (int i = 0; i < npvar; i++) {
        char name[128];
        int len = sizeof name, cls;
        unsigned long long value = 0;
        CHECK_MPI(MPI_T_pvar_get_info(i, name, &len, NULL, &cls, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
        CHECK_MPI(MPI_T_pvar_read(whole, all[i], &value));
        printf("PVAR %d %s %llu\n", test_rank, name, value);
    }
    fflush(stdout);
    CHECK_MPI(MPI_T_pvar_session_free(&whole));
    free(all);
    CHECK_MPI(MPI_T_finalize());
    return 0;
}
