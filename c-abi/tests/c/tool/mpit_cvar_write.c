/*
 * mpit_cvar_write: control variables written between MPI_T_init_thread and MPI_Init are what
 * MPI_Init uses.
 *
 * Every rank writes MPI_CHANNEL = fm and MPI_EAGER_MAX = 1024, then calls MPI_Init. Checked:
 * the channel cvar (read from the running engine) is fm, the eager limit is 1024, and messages
 * go through FM (fm_messages_sent moves by at least the messages sent, on the sender; 4 KiB
 * messages, above the written eager limit, arrive intact). After MPI_Init, a write is
 * MPI_T_ERR_CVAR_SET_NOT_NOW.
 */
#define TEST_NAME "mpit_cvar_write"
#include "mpitest.h"

static MPI_T_cvar_handle cvar(const char *name)
{
    int i = -1, count = 0;
    MPI_T_cvar_handle h;
    CHECK_MPI(MPI_T_cvar_get_index(name, &i));
    CHECK_MPI(MPI_T_cvar_handle_alloc(i, NULL, &h, &count));
    return h;
}

static int item_value(MPI_T_cvar_handle unused, const char *cvar_name, const char *item)
{
    int i = -1, num = 0;
    MPI_T_enum e;
    (void)unused;
    CHECK_MPI(MPI_T_cvar_get_index(cvar_name, &i));
    CHECK_MPI(MPI_T_cvar_get_info(i, NULL, NULL, NULL, NULL, &e, NULL, NULL, NULL, NULL));
    CHECK_MPI(MPI_T_enum_get_info(e, &num, NULL, NULL));
    for (int k = 0; k < num; k++) {
        char name[32];
        int len = sizeof name, v;
        CHECK_MPI(MPI_T_enum_get_item(e, k, &v, name, &len));
        if (strcmp(name, item) == 0)
            return v;
    }
    FAIL("%s has no item %s", cvar_name, item);
    return -1;
}

int main(int argc, char **argv)
{
    int provided;
    CHECK_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    MPI_T_cvar_handle channel = cvar("MPI_CHANNEL"), eager = cvar("MPI_EAGER_MAX");
    int fm = item_value(channel, "MPI_CHANNEL", "fm");
    unsigned long long limit = 1024;
    CHECK_MPI(MPI_T_cvar_write(channel, &fm));
    CHECK_MPI(MPI_T_cvar_write(eager, &limit));

    test_init(&argc, &argv);
    int now = -1;
    unsigned long long eager_now = 0;
    CHECK_MPI(MPI_T_cvar_read(channel, &now));
    CHECK_MPI(MPI_T_cvar_read(eager, &eager_now));
    CHECK(now == fm, "MPI_Init used the channel written before it (%d, fm is %d)", now, fm);
    CHECK(eager_now == limit, "MPI_Init used the eager limit written before it (%llu)", eager_now);
    int rc = MPI_T_cvar_write(channel, &fm);
    CHECK(rc == MPI_T_ERR_CVAR_SET_NOT_NOW, "a write after MPI_Init: %d", rc);

    /* Traffic goes through FM. */
    MPI_T_pvar_session s;
    MPI_T_pvar_handle h;
    int idx, count;
    unsigned long long fm_sent = 0;
    CHECK_MPI(MPI_T_pvar_get_index("fm_messages_sent", MPI_T_PVAR_CLASS_COUNTER, &idx));
    CHECK_MPI(MPI_T_pvar_session_create(&s));
    CHECK_MPI(MPI_T_pvar_handle_alloc(s, idx, NULL, &h, &count));
    CHECK_MPI(MPI_T_pvar_start(s, h));
    enum { N = 8, S = 4096 };
    char *buf = test_malloc(S);
    int right = (test_rank + 1) % test_size, left = (test_rank + test_size - 1) % test_size;
    char *in = test_malloc(S);
    for (int k = 0; k < N; k++) {
        fill_pattern(buf, S, message_seed(test_rank, right, k));
        CHECK_MPI(MPI_Sendrecv(buf, S, MPI_BYTE, right, 9, in, S, MPI_BYTE, left, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK_PATTERN(in, S, message_seed(left, test_rank, k), "message %d from %d", k, left);
    }
    CHECK_MPI(MPI_T_pvar_stop(s, h));
    CHECK_MPI(MPI_T_pvar_read(s, h, &fm_sent));
    if (test_size > 1)
        CHECK(fm_sent >= N, "fm_messages_sent %llu < %d: the messages did not go through FM", fm_sent, N);
    CHECK_MPI(MPI_T_pvar_session_free(&s));
    CHECK_MPI(MPI_T_cvar_handle_free(&channel));
    CHECK_MPI(MPI_T_cvar_handle_free(&eager));
    CHECK_MPI(MPI_T_finalize());
    free(buf);
    free(in);
    test_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
