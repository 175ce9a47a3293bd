/*
 * spawn.c: MPI_Comm_spawn of this same program. The parents (any number) spawn CHILDREN
 * children (argv[1], default 2); the children find their parents with MPI_Comm_get_parent.
 * Over the intercommunicator: every parent sends every child a pattern and gets one back
 * (data both ways, 64 B and 1 MiB: eager and rendezvous), an intercommunicator bcast and
 * allreduce, then MPI_Intercomm_merge (parents first) with an allreduce over the merged
 * communicator, MPI_APPNUM / MPI_UNIVERSE_SIZE read, and MPI_Comm_disconnect on both sides.
 */
#define TEST_NAME "dynamic_spawn"
#include "../mpitest.h"

#include <unistd.h>

static const int sizes[] = {64, 1 << 20};

static void exchange(MPI_Comm inter, int parent_side)
{
    int rank, local, remote;
    MPI_Comm_rank(inter, &rank);
    MPI_Comm_size(inter, &local);
    MPI_Comm_remote_size(inter, &remote);
    for (unsigned s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int n = sizes[s];
        unsigned char *out = test_malloc((size_t)n), *in = test_malloc((size_t)n);
        for (int peer = 0; peer < remote; peer++) {
            /* Parents are "from" 1000 + rank, children 2000 + rank. */
            int me_id = (parent_side ? 1000 : 2000) + rank;
            int peer_id = (parent_side ? 2000 : 1000) + peer;
            fill_pattern(out, (size_t)n, message_seed(me_id, peer_id, s));
            MPI_Status st;
            CHECK_MPI(MPI_Sendrecv(out, n, MPI_BYTE, peer, 7, in, n, MPI_BYTE, peer, 7, inter, &st));
            CHECK(status_bytes(&st) == n, "got %d bytes from %d", status_bytes(&st), peer);
            CHECK(st.MPI_SOURCE == peer, "source %d, expected %d", st.MPI_SOURCE, peer);
            CHECK_PATTERN(in, (size_t)n, message_seed(peer_id, me_id, s), "data from remote %d", peer);
        }
        free(out);
        free(in);
    }
    /* Intercommunicator collectives: parents' rank 0 broadcasts, everyone sums. */
    int value = parent_side ? 0 : -1;
    if (parent_side) {
        if (rank == 0)
            value = 4242;
        CHECK_MPI(MPI_Bcast(&value, 1, MPI_INT, rank == 0 ? MPI_ROOT : MPI_PROC_NULL, inter));
    } else {
        CHECK_MPI(MPI_Bcast(&value, 1, MPI_INT, 0, inter));
        CHECK(value == 4242, "bcast from the parents gave %d", value);
    }
    int mine = parent_side ? 1 : 100, sum = 0;
    CHECK_MPI(MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, inter));
    /* An intercommunicator allreduce gives each group the other group's sum. */
    int expect = parent_side ? 100 * remote : remote;
    CHECK(sum == expect, "intercomm allreduce gave %d, expected %d", sum, expect);

    MPI_Comm merged;
    CHECK_MPI(MPI_Intercomm_merge(inter, parent_side ? 0 : 1, &merged));
    int msize, mrank;
    MPI_Comm_size(merged, &msize);
    MPI_Comm_rank(merged, &mrank);
    CHECK(msize == local + remote, "merged size %d", msize);
    CHECK(mrank == (parent_side ? rank : remote + rank), "merged rank %d", mrank);
    int total = 0, one = mrank;
    CHECK_MPI(MPI_Allreduce(&one, &total, 1, MPI_INT, MPI_SUM, merged));
    CHECK(total == msize * (msize - 1) / 2, "merged allreduce gave %d", total);
    CHECK_MPI(MPI_Comm_free(&merged));
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    MPI_Comm parent;
    CHECK_MPI(MPI_Comm_get_parent(&parent));
    if (parent == MPI_COMM_NULL) {
        int children = argc > 1 ? atoi(argv[1]) : 2;
        MPI_Comm inter;
        int *codes = test_malloc(sizeof(int) * (size_t)children);
        char *args[] = {argv[1] ? argv[1] : "2", NULL};
        CHECK_MPI(MPI_Comm_spawn(argv[0], args, children, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter, codes));
        for (int i = 0; i < children; i++)
            CHECK(codes[i] == MPI_SUCCESS, "errcode %d is %d", i, codes[i]);
        free(codes);
        int remote;
        MPI_Comm_remote_size(inter, &remote);
        CHECK(remote == children, "remote size %d, expected %d", remote, children);
        exchange(inter, 1);
        CHECK_MPI(MPI_Comm_disconnect(&inter));
        CHECK(inter == MPI_COMM_NULL, "disconnect left the handle");
        test_ok();
    } else {
        int flag = 0, *appnum = NULL, *usize = NULL;
        CHECK_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &appnum, &flag));
        CHECK(flag && *appnum == 0, "MPI_APPNUM of a child of MPI_Comm_spawn");
        CHECK_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &usize, &flag));
        CHECK(flag && *usize >= test_size, "MPI_UNIVERSE_SIZE");
        int expected = argc > 1 ? atoi(argv[1]) : 2;
        CHECK(test_size == expected, "the children's world has %d ranks, expected %d", test_size, expected);
        int inter_test;
        CHECK_MPI(MPI_Comm_test_inter(parent, &inter_test));
        CHECK(inter_test, "the parent communicator is an intercommunicator");
        exchange(parent, 0);
        CHECK_MPI(MPI_Comm_disconnect(&parent));
        MPI_Comm again;
        MPI_Comm_get_parent(&again);
        CHECK(again == MPI_COMM_NULL, "get_parent after disconnect");
        if (test_rank == 0)
            printf("child ok\n");
    }
    MPI_Finalize();
    return 0;
}
