/*
 * mpit_catalog: the MPI_T catalog, its settings and its error classes.
 *
 * - MPI_T before MPI_Init: MPI_T_ERR_NOT_INITIALIZED before MPI_T_init_thread; nested
 *   init/finalize counted.
 * - Every cvar, pvar, category and enumeration enumerated: names and descriptions returned
 *   the MPI_T way (lengths with the NUL, truncation), get_index(name) == index, datatypes,
 *   bindings, scopes and classes valid, each variable in exactly one layer category and the
 *   category lists agreeing with the counts, the "stack" category holding the layers.
 * - The cvars equal the settings the test gave through the environment (TOOL_EXPECT_CHANNEL,
 *   MPI_EAGER_MAX, BIP_SHORT_LIMIT, MPI_NIC_SPLIT_MIN); after MPI_Init the channel and the eager
 *   limit come from the running engine.
 * - Error classes: INVALID_INDEX, INVALID_NAME, INVALID_HANDLE, INVALID_SESSION,
 *   CVAR_SET_NEVER, CVAR_SET_NOT_NOW, PVAR_NO_STARTSTOP, PVAR_NO_WRITE, INVALID, and every
 *   event function (no event types).
 * - MPI_T after MPI_Finalize: init, read a counter, finalize.
 */
#define TEST_NAME "mpit_catalog"
#include "mpitest.h"

#define EXPECT_T(call, want)                                                   \
    do {                                                                       \
        int got_ = (call);                                                     \
        if (got_ != (want))                                                    \
            FAIL("%s returned %d, expected %s (%d)", #call, got_, #want, want);  \
    } while (0)

static const char *layers[] = {"nic", "bip", "fm", "channel", "mpi"};

static int cvar_index(const char *name)
{
    int i = -1;
    CHECK_MPI(MPI_T_cvar_get_index(name, &i));
    return i;
}

static MPI_T_cvar_handle cvar_handle(const char *name, int *count)
{
    MPI_T_cvar_handle h = MPI_T_CVAR_HANDLE_NULL;
    CHECK_MPI(MPI_T_cvar_handle_alloc(cvar_index(name), NULL, &h, count));
    return h;
}

static unsigned long long cvar_count(const char *name)
{
    int count = 0;
    unsigned long long v = 0;
    MPI_T_cvar_handle h = cvar_handle(name, &count);
    CHECK(count == 1, "%s: count %d", name, count);
    CHECK_MPI(MPI_T_cvar_read(h, &v));
    CHECK_MPI(MPI_T_cvar_handle_free(&h));
    CHECK(h == MPI_T_CVAR_HANDLE_NULL, "handle_free leaves NULL");
    return v;
}

/* The name of the item the enum-valued cvar `name` has now. */
static void cvar_item(const char *name, char *item, int room)
{
    int count = 0, value = -1, num = 0, len;
    MPI_Datatype dt;
    MPI_T_enum e = MPI_T_ENUM_NULL;
    MPI_T_cvar_handle h = cvar_handle(name, &count);
    CHECK_MPI(MPI_T_cvar_read(h, &value));
    CHECK_MPI(MPI_T_cvar_handle_free(&h));
    CHECK_MPI(MPI_T_cvar_get_info(cvar_index(name), NULL, NULL, NULL, &dt, &e, NULL, NULL, NULL, NULL));
    CHECK(dt == MPI_INT && e != MPI_T_ENUM_NULL, "%s is an enumeration", name);
    CHECK_MPI(MPI_T_enum_get_info(e, &num, NULL, NULL));
    for (int k = 0; k < num; k++) {
        int v;
        len = room;
        CHECK_MPI(MPI_T_enum_get_item(e, k, &v, item, &len));
        if (v == value)
            return;
    }
    FAIL("%s has value %d, which is no item of its enumeration", name, value);
}

static void check_string_convention(void)
{
    /* Truncation: room for 3 chars + NUL; the length returned is the full one + 1. */
    char small[4] = "xxx";
    int len = 4, full = 0;
    CHECK_MPI(MPI_T_category_get_info(0, small, &len, NULL, &full, NULL, NULL, NULL));
    CHECK(len == 4 && strcmp(small, "nic") == 0, "category 0 is \"nic\" (len %d, \"%s\")", len, small);
    char tiny[3] = "zz";
    len = 3;
    CHECK_MPI(MPI_T_category_get_info(1, tiny, &len, NULL, NULL, NULL, NULL, NULL));
    CHECK(len == 4 && strcmp(tiny, "bi") == 0, "truncated to \"bi\" (got \"%s\", len %d)", tiny, len);
    /* A length of 0: nothing written, the length needed returned. */
    char untouched[8] = "keep";
    len = 0;
    CHECK_MPI(MPI_T_category_get_info(1, untouched, &len, NULL, NULL, NULL, NULL, NULL));
    CHECK(len == 4 && strcmp(untouched, "keep") == 0, "len 0 writes nothing");
    CHECK(full > 20, "the nic category has a description (%d)", full);
}

static void enumerate(void)
{
    int ncvar = 0, npvar = 0, ncat = 0;
    CHECK_MPI(MPI_T_cvar_get_num(&ncvar));
    CHECK_MPI(MPI_T_pvar_get_num(&npvar));
    CHECK_MPI(MPI_T_category_get_num(&ncat));
    CHECK(ncvar >= 10 && npvar >= 30 && ncat == 6, "counts %d %d %d", ncvar, npvar, ncat);
    int *cvar_seen = calloc((size_t)ncvar, sizeof(int));
    int *pvar_seen = calloc((size_t)npvar, sizeof(int));
    CHECK(cvar_seen && pvar_seen, "memory");

    for (int i = 0; i < ncvar; i++) {
        char name[256], desc[1024];
        int name_len = sizeof name, desc_len = sizeof desc, verbosity, bind, scope, idx = -1;
        MPI_Datatype dt;
        MPI_T_enum e;
        CHECK_MPI(MPI_T_cvar_get_info(i, name, &name_len, &verbosity, &dt, &e, desc, &desc_len, &bind, &scope));
        CHECK(name_len == (int)strlen(name) + 1, "cvar %d name_len %d for \"%s\"", i, name_len, name);
        CHECK(desc_len == (int)strlen(desc) + 1 && desc_len > 10, "cvar %s desc_len %d", name, desc_len);
        CHECK_MPI(MPI_T_cvar_get_index(name, &idx));
        CHECK(idx == i, "cvar_get_index(%s) = %d, not %d", name, idx, i);
        CHECK(verbosity >= MPI_T_VERBOSITY_USER_BASIC && verbosity <= MPI_T_VERBOSITY_MPIDEV_ALL, "%s verbosity %d", name, verbosity);
        CHECK(dt == MPI_INT || dt == MPI_UNSIGNED_LONG_LONG || dt == MPI_CHAR, "%s datatype 0x%x", name, dt);
        CHECK(bind == MPI_T_BIND_NO_OBJECT, "%s bind %d", name, bind);
        CHECK(scope == MPI_T_SCOPE_READONLY || scope == MPI_T_SCOPE_LOCAL || scope == MPI_T_SCOPE_ALL_EQ, "%s scope %d", name, scope);
        if (e != MPI_T_ENUM_NULL) {
            int num = 0, elen = 64;
            char ename[64];
            CHECK(dt == MPI_INT, "%s: an enumeration's datatype is MPI_INT", name);
            CHECK_MPI(MPI_T_enum_get_info(e, &num, ename, &elen));
            CHECK(num >= 2 && elen == (int)strlen(ename) + 1, "%s enum %s has %d items", name, ename, num);
            for (int k = 0; k < num; k++) {
                int v = -1, ilen = 64;
                char item[64];
                CHECK_MPI(MPI_T_enum_get_item(e, k, &v, item, &ilen));
                CHECK(ilen == (int)strlen(item) + 1 && ilen > 1, "%s item %d", ename, k);
            }
            EXPECT_T(MPI_T_enum_get_item(e, num, NULL, NULL, NULL), MPI_T_ERR_INVALID_INDEX);
        }
        int count = 0;
        MPI_T_cvar_handle h;
        CHECK_MPI(MPI_T_cvar_handle_alloc(i, NULL, &h, &count));
        CHECK(count == (dt == MPI_CHAR ? 1024 : 1), "%s count %d", name, count);
        char buf[1024];
        CHECK_MPI(MPI_T_cvar_read(h, buf));
        CHECK_MPI(MPI_T_cvar_handle_free(&h));
    }
    for (int i = 0; i < npvar; i++) {
        char name[256], desc[1024];
        int name_len = sizeof name, desc_len = sizeof desc, verbosity, cls, bind, ro, cont, atomic, idx = -1;
        MPI_Datatype dt;
        MPI_T_enum e;
        CHECK_MPI(MPI_T_pvar_get_info(i, name, &name_len, &verbosity, &cls, &dt, &e, desc, &desc_len, &bind, &ro, &cont, &atomic));
        CHECK(name_len == (int)strlen(name) + 1 && desc_len == (int)strlen(desc) + 1, "pvar %d strings", i);
        CHECK_MPI(MPI_T_pvar_get_index(name, cls, &idx));
        CHECK(idx == i, "pvar_get_index(%s) = %d, not %d", name, idx, i);
        CHECK(dt == MPI_UNSIGNED_LONG_LONG && e == MPI_T_ENUM_NULL && bind == MPI_T_BIND_NO_OBJECT, "pvar %s type", name);
        CHECK(cls == MPI_T_PVAR_CLASS_COUNTER ? (!ro && !cont) : (cls == MPI_T_PVAR_CLASS_LEVEL || cls == MPI_T_PVAR_CLASS_HIGHWATERMARK) && ro && cont,
              "pvar %s class %d readonly %d continuous %d", name, cls, ro, cont);
        CHECK(atomic == 0, "pvar %s atomic", name);
        int other = cls == MPI_T_PVAR_CLASS_COUNTER ? MPI_T_PVAR_CLASS_TIMER : MPI_T_PVAR_CLASS_COUNTER;
        EXPECT_T(MPI_T_pvar_get_index(name, other, &idx), MPI_T_ERR_INVALID_NAME);
    }
    /* Categories: each variable in exactly one layer; the lists agree with the counts. */
    int total_cvars = 0, total_pvars = 0;
    for (int c = 0; c < ncat; c++) {
        char name[64];
        int len = sizeof name, nc, np, nsub, idx = -1, desc_len = 0;
        CHECK_MPI(MPI_T_category_get_info(c, name, &len, NULL, &desc_len, &nc, &np, &nsub));
        CHECK(desc_len > 20, "category %s needs a description", name);
        CHECK_MPI(MPI_T_category_get_index(name, &idx));
        CHECK(idx == c, "category_get_index(%s)", name);
        int *list = malloc(sizeof(int) * (size_t)(nc + np + nsub + 1));
        CHECK_MPI(MPI_T_category_get_cvars(c, nc, list));
        for (int k = 0; k < nc; k++) {
            CHECK(list[k] >= 0 && list[k] < ncvar && !cvar_seen[list[k]], "category %s cvar %d", name, list[k]);
            cvar_seen[list[k]] = 1;
        }
        CHECK_MPI(MPI_T_category_get_pvars(c, np, list));
        for (int k = 0; k < np; k++) {
            char pname[256];
            int plen = sizeof pname;
            CHECK(list[k] >= 0 && list[k] < npvar && !pvar_seen[list[k]], "category %s pvar %d", name, list[k]);
            pvar_seen[list[k]] = 1;
            CHECK_MPI(MPI_T_pvar_get_info(list[k], pname, &plen, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
            CHECK(strncmp(pname, name, strlen(name)) == 0, "pvar %s is in category %s, named after its layer", pname, name);
        }
        total_cvars += nc;
        total_pvars += np;
        CHECK_MPI(MPI_T_category_get_categories(c, nsub, list));
        if (strcmp(name, "stack") == 0) {
            CHECK(nsub == 5 && nc == 0 && np == 0, "stack holds the 5 layers");
            for (int k = 0; k < 5; k++) {
                char sub[64];
                int slen = sizeof sub;
                CHECK_MPI(MPI_T_category_get_info(list[k], sub, &slen, NULL, NULL, NULL, NULL, NULL));
                CHECK(strcmp(sub, layers[k]) == 0, "stack's subcategory %d is %s", k, sub);
            }
        } else {
            CHECK(nsub == 0 && np > 0, "layer %s has counters", name);
        }
        int nev = -1;
        CHECK_MPI(MPI_T_category_get_num_events(c, &nev));
        CHECK(nev == 0, "no events");
        CHECK_MPI(MPI_T_category_get_events(c, 4, list));
        free(list);
    }
    CHECK(total_cvars == ncvar && total_pvars == npvar, "every variable in a category (%d/%d, %d/%d)", total_cvars, ncvar, total_pvars, npvar);
    int changed = -1;
    CHECK_MPI(MPI_T_category_changed(&changed));
    free(cvar_seen);
    free(pvar_seen);
}

static void check_settings(int running)
{
    const char *ch = getenv("TOOL_EXPECT_CHANNEL");
    char item[64];
    cvar_item("MPI_CHANNEL", item, sizeof item);
    CHECK(strcmp(item, ch ? ch : "bip") == 0, "MPI_CHANNEL is %s, expected %s", item, ch ? ch : "bip");
    const char *eager = getenv("MPI_EAGER_MAX");
    if (eager)
        CHECK(cvar_count("MPI_EAGER_MAX") == strtoull(eager, NULL, 10), "MPI_EAGER_MAX %llu, env %s (running %d)", cvar_count("MPI_EAGER_MAX"), eager, running);
    const char *short_limit = getenv("BIP_SHORT_LIMIT");
    if (short_limit)
        CHECK(cvar_count("BIP_SHORT_LIMIT") == strtoull(short_limit, NULL, 10), "BIP_SHORT_LIMIT");
    const char *split = getenv("MPI_NIC_SPLIT_MIN");
    if (split)
        CHECK(cvar_count("MPI_NIC_SPLIT_MIN") == strtoull(split, NULL, 10), "MPI_NIC_SPLIT_MIN");
    cvar_item("MPI_NIC_PROFILE", item, sizeof item);
    CHECK(strcmp(item, "native") == 0, "profile %s", item);
    CHECK(cvar_count("BIP_EAGER_MAX") == 8192, "BIP_EAGER_MAX default");
}

static void check_errors(int mpi_running)
{
    int n, count;
    EXPECT_T(MPI_T_cvar_get_info(-1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL), MPI_T_ERR_INVALID_INDEX);
    CHECK_MPI(MPI_T_cvar_get_num(&n));
    EXPECT_T(MPI_T_cvar_get_info(n, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL), MPI_T_ERR_INVALID_INDEX);
    EXPECT_T(MPI_T_cvar_get_index("NO_SUCH_SETTING", &n), MPI_T_ERR_INVALID_NAME);
    EXPECT_T(MPI_T_cvar_get_index(NULL, &n), MPI_T_ERR_INVALID);
    EXPECT_T(MPI_T_cvar_get_num(NULL), MPI_T_ERR_INVALID);
    EXPECT_T(MPI_T_pvar_get_info(100000, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL), MPI_T_ERR_INVALID_INDEX);
    EXPECT_T(MPI_T_category_get_info(6, NULL, NULL, NULL, NULL, NULL, NULL, NULL), MPI_T_ERR_INVALID_INDEX);
    EXPECT_T(MPI_T_category_get_index("gpu", &n), MPI_T_ERR_INVALID_NAME);
    EXPECT_T(MPI_T_category_get_cvars(0, -1, NULL), MPI_T_ERR_INVALID);
    EXPECT_T(MPI_T_enum_get_info(MPI_T_ENUM_NULL, &n, NULL, NULL), MPI_T_ERR_INVALID_HANDLE);
    EXPECT_T(MPI_T_cvar_read(MPI_T_CVAR_HANDLE_NULL, &n), MPI_T_ERR_INVALID_HANDLE);

    /* A freed handle is refused. */
    MPI_T_cvar_handle h = cvar_handle("MPI_NIC_SLOTS", &count), stale = h;
    unsigned long long v = 8;
    EXPECT_T(MPI_T_cvar_write(h, &v), MPI_T_ERR_CVAR_SET_NEVER);
    CHECK_MPI(MPI_T_cvar_handle_free(&h));
    EXPECT_T(MPI_T_cvar_read(stale, &v), MPI_T_ERR_INVALID_HANDLE);
    EXPECT_T(MPI_T_cvar_handle_free(&stale), MPI_T_ERR_INVALID_HANDLE);

    /* Writes: read-only never; the channel before MPI_Init only, and only to an item. */
    h = cvar_handle("MPI_CHANNEL", &count);
    int bad = 77, same = -1;
    CHECK_MPI(MPI_T_cvar_read(h, &same));
    if (mpi_running) {
        EXPECT_T(MPI_T_cvar_write(h, &same), MPI_T_ERR_CVAR_SET_NOT_NOW);
    } else {
        EXPECT_T(MPI_T_cvar_write(h, &bad), MPI_T_ERR_INVALID);
        CHECK_MPI(MPI_T_cvar_write(h, &same)); /* the same channel: changes nothing */
    }
    CHECK_MPI(MPI_T_cvar_handle_free(&h));

    /* Sessions and handles. */
    MPI_T_pvar_session s, s2, freed;
    MPI_T_pvar_handle ph, level;
    int tx = -1, lvl = -1;
    CHECK_MPI(MPI_T_pvar_get_index("nic_packets_tx", MPI_T_PVAR_CLASS_COUNTER, &tx));
    CHECK_MPI(MPI_T_pvar_get_index("bip_buffered_bytes", MPI_T_PVAR_CLASS_LEVEL, &lvl));
    CHECK_MPI(MPI_T_pvar_session_create(&s));
    CHECK_MPI(MPI_T_pvar_session_create(&s2));
    CHECK_MPI(MPI_T_pvar_handle_alloc(s, tx, NULL, &ph, &count));
    CHECK(count == 1, "pvar count");
    CHECK_MPI(MPI_T_pvar_handle_alloc(s, lvl, NULL, &level, &count));
    EXPECT_T(MPI_T_pvar_handle_alloc(s, 100000, NULL, &ph, &count), MPI_T_ERR_INVALID_INDEX);
    EXPECT_T(MPI_T_pvar_read(s2, ph, &v), MPI_T_ERR_INVALID_HANDLE); /* another session's */
    EXPECT_T(MPI_T_pvar_read(s, MPI_T_PVAR_ALL_HANDLES, &v), MPI_T_ERR_INVALID); /* as MPICH */
    EXPECT_T(MPI_T_pvar_read(s, MPI_T_PVAR_HANDLE_NULL, &v), MPI_T_ERR_INVALID_HANDLE);
    EXPECT_T(MPI_T_pvar_start(MPI_T_PVAR_SESSION_NULL, ph), MPI_T_ERR_INVALID_SESSION);
    EXPECT_T(MPI_T_pvar_start(s, level), MPI_T_ERR_PVAR_NO_STARTSTOP);
    EXPECT_T(MPI_T_pvar_stop(s, level), MPI_T_ERR_PVAR_NO_STARTSTOP);
    EXPECT_T(MPI_T_pvar_reset(s, level), MPI_T_ERR_PVAR_NO_WRITE);
    EXPECT_T(MPI_T_pvar_write(s, level, &v), MPI_T_ERR_PVAR_NO_WRITE);
    EXPECT_T(MPI_T_pvar_readreset(s, level, &v), MPI_T_ERR_PVAR_NO_WRITE);
    CHECK_MPI(MPI_T_pvar_start(s, MPI_T_PVAR_ALL_HANDLES)); /* continuous ones ignored */
    CHECK_MPI(MPI_T_pvar_reset(s, MPI_T_PVAR_ALL_HANDLES)); /* read-only ones ignored */
    CHECK_MPI(MPI_T_pvar_read(s, level, &v));
    CHECK_MPI(MPI_T_pvar_handle_free(s, &ph));
    CHECK(ph == MPI_T_PVAR_HANDLE_NULL, "pvar handle_free leaves NULL");
    freed = s2;
    CHECK_MPI(MPI_T_pvar_session_free(&s2));
    CHECK(s2 == MPI_T_PVAR_SESSION_NULL, "session_free leaves NULL");
    EXPECT_T(MPI_T_pvar_session_free(&freed), MPI_T_ERR_INVALID_SESSION);
    EXPECT_T(MPI_T_pvar_handle_alloc(freed, tx, NULL, &ph, &count), MPI_T_ERR_INVALID_SESSION);
    CHECK_MPI(MPI_T_pvar_session_free(&s));

    /* No event types: every event call refuses its index or handle. */
    MPI_T_event_registration reg = NULL;
    MPI_T_event_instance inst = NULL;
    MPI_Count ts;
    CHECK_MPI(MPI_T_event_get_num(&n));
    CHECK(n == 0, "no event types");
    EXPECT_T(MPI_T_event_get_info(0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL), MPI_T_ERR_INVALID_INDEX);
    EXPECT_T(MPI_T_event_get_index("credit_stall", &n), MPI_T_ERR_INVALID_NAME);
    EXPECT_T(MPI_T_event_handle_alloc(0, NULL, MPI_INFO_NULL, &reg), MPI_T_ERR_INVALID_INDEX);
    EXPECT_T(MPI_T_event_handle_set_info(reg, MPI_INFO_NULL), MPI_T_ERR_INVALID_HANDLE);
    EXPECT_T(MPI_T_event_handle_get_info(reg, NULL), MPI_T_ERR_INVALID_HANDLE);
    EXPECT_T(MPI_T_event_register_callback(reg, MPI_T_CB_REQUIRE_NONE, MPI_INFO_NULL, NULL, NULL), MPI_T_ERR_INVALID_HANDLE);
    EXPECT_T(MPI_T_event_callback_set_info(reg, MPI_T_CB_REQUIRE_NONE, MPI_INFO_NULL), MPI_T_ERR_INVALID_HANDLE);
    EXPECT_T(MPI_T_event_callback_get_info(reg, MPI_T_CB_REQUIRE_NONE, NULL), MPI_T_ERR_INVALID_HANDLE);
    EXPECT_T(MPI_T_event_handle_free(reg, NULL, NULL), MPI_T_ERR_INVALID_HANDLE);
    EXPECT_T(MPI_T_event_set_dropped_handler(reg, NULL), MPI_T_ERR_INVALID_HANDLE);
    EXPECT_T(MPI_T_event_read(inst, 0, &v), MPI_T_ERR_INVALID_HANDLE);
    EXPECT_T(MPI_T_event_copy(inst, &v), MPI_T_ERR_INVALID_HANDLE);
    EXPECT_T(MPI_T_event_get_timestamp(inst, &ts), MPI_T_ERR_INVALID_HANDLE);
    EXPECT_T(MPI_T_event_get_source(inst, &n), MPI_T_ERR_INVALID_HANDLE);

    /* The time source. */
    MPI_Count tps = 0, max = 0, t1 = 0, t2 = 0;
    MPI_T_source_order order = MPI_T_SOURCE_UNORDERED;
    char sname[64];
    int slen = sizeof sname;
    CHECK_MPI(MPI_T_source_get_num(&n));
    CHECK(n == 1, "one source");
    CHECK_MPI(MPI_T_source_get_info(0, sname, &slen, NULL, NULL, &order, &tps, &max, NULL));
    CHECK(order == MPI_T_SOURCE_ORDERED && tps == 1000000000 && max > 0, "source info");
    CHECK_MPI(MPI_T_source_get_timestamp(0, &t1));
    CHECK_MPI(MPI_T_source_get_timestamp(0, &t2));
    CHECK(t2 >= t1, "the clock does not go back");
    EXPECT_T(MPI_T_source_get_timestamp(1, &t1), MPI_T_ERR_INVALID_INDEX);
}

int main(int argc, char **argv)
{
    int provided = -1, n;
    /* Before MPI_T_init_thread: not initialized. */
    EXPECT_T(MPI_T_cvar_get_num(&n), MPI_T_ERR_NOT_INITIALIZED);
    EXPECT_T(MPI_T_finalize(), MPI_T_ERR_NOT_INITIALIZED);
    CHECK_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    CHECK(provided == MPI_THREAD_SINGLE, "provided %d", provided);
    CHECK_MPI(MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided));
    CHECK(provided == MPI_THREAD_MULTIPLE, "MPI_T grants MPI_THREAD_MULTIPLE when asked (%d)", provided);
    CHECK_MPI(MPI_T_finalize()); /* one use left */
    CHECK_MPI(MPI_T_cvar_get_num(&n));

    check_string_convention();
    enumerate();
    check_settings(0);
    check_errors(0);

    /* A counter before MPI_Init reads 0. */
    MPI_T_pvar_session s;
    MPI_T_pvar_handle h;
    int tx, count;
    unsigned long long v = 99;
    CHECK_MPI(MPI_T_pvar_get_index("nic_bytes_tx", MPI_T_PVAR_CLASS_COUNTER, &tx));
    CHECK_MPI(MPI_T_pvar_session_create(&s));
    CHECK_MPI(MPI_T_pvar_handle_alloc(s, tx, NULL, &h, &count));
    CHECK_MPI(MPI_T_pvar_start(s, h));
    CHECK_MPI(MPI_T_pvar_read(s, h, &v));
    CHECK(v == 0, "before MPI_Init, nothing sent (%llu)", v);

    test_init(&argc, &argv);
    check_settings(1);
    check_errors(1);
    /* Some traffic: a ring of 1 KiB messages. */
    char out[1024], in[1024];
    memset(out, test_rank, sizeof out);
    int right = (test_rank + 1) % test_size, left = (test_rank + test_size - 1) % test_size;
    for (int k = 0; k < 10; k++)
        CHECK_MPI(MPI_Sendrecv(out, sizeof out, MPI_BYTE, right, 5, in, sizeof in, MPI_BYTE, left, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_T_pvar_read(s, h, &v));
    if (test_size > 1)
        CHECK(v >= 10 * sizeof out, "nic_bytes_tx counted %llu bytes, at least %zu sent", v, 10 * sizeof out);
    test_ok();
    CHECK_MPI(MPI_Finalize());

    /* After MPI_Finalize: the interface still works, the counter keeps its last value. */
    unsigned long long after = 0, again = 0;
    CHECK_MPI(MPI_T_pvar_read(s, h, &after));
    CHECK(after >= v, "after MPI_Finalize the counter keeps its value (%llu < %llu)", after, v);
    CHECK_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    CHECK_MPI(MPI_T_pvar_read(s, h, &again));
    CHECK(again == after, "nothing moves after MPI_Finalize");
    CHECK_MPI(MPI_T_finalize());
    CHECK_MPI(MPI_T_pvar_session_free(&s));
    CHECK_MPI(MPI_T_finalize());
    EXPECT_T(MPI_T_pvar_get_num(&n), MPI_T_ERR_NOT_INITIALIZED);
    /* The last MPI_T_finalize freed every handle: a new use starts from nothing. */
    CHECK_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    EXPECT_T(MPI_T_pvar_read(s, h, &v), MPI_T_ERR_INVALID_SESSION);
    CHECK_MPI(MPI_T_finalize());
    return 0;
}
