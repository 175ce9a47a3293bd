/*
 * dyn_work.h: what the dynamic-process thread programs (accept_waits, connect_pair,
 * spawn_waits, join_waits) share. Include after mpitest.h and <pthread.h>.
 *
 *  - work(): a worker thread's job on a communicator of its own: ROUNDS rounds of a ring
 *    exchange (MPI_Sendrecv, every fourth round a rendezvous-sized message) and an
 *    MPI_Allreduce, every value checked; a program runs it beside a dynamic-process call
 *    that waits, which a build that waited holding the library's lock would stall. With
 *    `then` set, once the workers of every rank are done (an allreduce), rank 0 of the
 *    worker's communicator calls it (what lets the waiting call finish).
 *  - exchange(): data both ways between every pair of processes of an intercommunicator,
 *    then MPI_Intercomm_merge and an MPI_Allreduce on the merged communicator.
 *  - init_multiple(): MPI_Init_thread asking for MPI_THREAD_MULTIPLE, checked.
 */
#define WORK_ROUNDS 40

struct worker {
    MPI_Comm comm;
    int id;        /* tells the workers' messages apart */
    int rounds;    /* done so far (read by the program once the thread is joined) */
    void (*then)(void); /* NULL, or run by rank 0 once every rank's worker is done */
};

static inline void *work(void *arg)
{
    struct worker *w = arg;
    int rank, size;
    CHECK_MPI(MPI_Comm_rank(w->comm, &rank));
    CHECK_MPI(MPI_Comm_size(w->comm, &size));
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    size_t big = 200000;
    unsigned char *out = test_malloc(big), *in = test_malloc(big);
    for (int r = 0; r < WORK_ROUNDS; r++) {
        size_t n = r % 4 == 3 ? big : 2000;
        int index = 100 * w->id + r;
        fill_pattern(out, n, message_seed(rank, next, index));
        MPI_Status st;
        CHECK_MPI(MPI_Sendrecv(out, (int)n, MPI_BYTE, next, 7, in, (int)n, MPI_BYTE, prev, 7,
                               w->comm, &st));
        CHECK(status_bytes(&st) == (int)n, "worker %d round %d: %d bytes", w->id, r,
              status_bytes(&st));
        CHECK_PATTERN(in, n, message_seed(prev, rank, index), "worker %d round %d", w->id, r);
        int mine = rank + r, sum = -1;
        CHECK_MPI(MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, w->comm));
        CHECK(sum == size * (size - 1) / 2 + size * r, "worker %d round %d: sum %d", w->id, r,
              sum);
        w->rounds = r + 1;
    }
    free(out);
    free(in);
    if (w->then) {
        int done = 1, all = 0;
        CHECK_MPI(MPI_Allreduce(&done, &all, 1, MPI_INT, MPI_SUM, w->comm));
        CHECK(all == size, "%d of %d ranks' workers done", all, size);
        if (rank == 0)
            w->then();
    }
    return NULL;
}

/* Data both ways with every remote process of `inter` (this side's ids from `base`, the
 * other side's from `other`; `chan` tells intercommunicators apart), then a merge and an
 * allreduce over both groups. `low`: this group comes first in the merge. */
static inline void exchange(MPI_Comm inter, int base, int other, int chan, int low)
{
    int rank, remote, lsize;
    CHECK_MPI(MPI_Comm_rank(inter, &rank));
    CHECK_MPI(MPI_Comm_size(inter, &lsize));
    CHECK_MPI(MPI_Comm_remote_size(inter, &remote));
    int n = 100000;
    unsigned char *out = test_malloc((size_t)n), *in = test_malloc((size_t)n);
    for (int peer = 0; peer < remote; peer++) {
        int me_id = base + rank, peer_id = other + peer;
        fill_pattern(out, (size_t)n, message_seed(me_id, peer_id, chan));
        CHECK_MPI(MPI_Sendrecv(out, n, MPI_BYTE, peer, 3, in, n, MPI_BYTE, peer, 3, inter,
                               MPI_STATUS_IGNORE));
        CHECK_PATTERN(in, (size_t)n, message_seed(peer_id, me_id, chan),
                      "channel %d: data from remote %d", chan, peer);
    }
    free(out);
    free(in);
    MPI_Comm merged;
    CHECK_MPI(MPI_Intercomm_merge(inter, low ? 0 : 1, &merged));
    int msize, mrank, one = 1, sum = 0;
    CHECK_MPI(MPI_Comm_size(merged, &msize));
    CHECK_MPI(MPI_Comm_rank(merged, &mrank));
    CHECK(msize == lsize + remote, "merged size %d, expected %d", msize, lsize + remote);
    CHECK(mrank == (low ? rank : remote + rank), "merged rank %d", mrank);
    CHECK_MPI(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, merged));
    CHECK(sum == msize, "merged allreduce %d of %d", sum, msize);
    CHECK_MPI(MPI_Comm_free(&merged));
}

static inline void init_multiple(int *argc, char ***argv)
{
    int provided = -1;
    CHECK_MPI(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &test_rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &test_size));
    CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
}

/* The port published under `service`, looked up with bounded retries (the other job may not
 * have published it yet): at most `tries` looks, 25 ms apart. */
static inline void lookup_port(const char *service, char *port, int tries)
{
    int rc = MPI_ERR_NAME;
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    for (int i = 0; i < tries && rc != MPI_SUCCESS; i++) {
        rc = MPI_Lookup_name(service, MPI_INFO_NULL, port);
        if (rc != MPI_SUCCESS) {
            CHECK(error_class_of(rc) == MPI_ERR_NAME, "lookup of %s: %s", service, error_text(rc));
            sleep_ms(25);
        }
    }
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    CHECK(rc == MPI_SUCCESS, "%s was never published", service);
}
