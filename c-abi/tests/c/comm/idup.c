/*
 * idup: MPI_Comm_idup and MPI_Comm_idup_with_info as nonblocking operations.
 *
 *  1. Three idups of MPI_COMM_WORLD outstanding at once, with point-to-point traffic (a ring)
 *     and a collective on the parent between the calls and the waits, waited in reverse
 *     order; each duplicate then works (allreduce, and point-to-point that does not meet the
 *     parent's).
 *  2. Idups of two different parents (WORLD and a split of it), waited in different orders
 *     on even and odd ranks.
 *  3. An idup of an intercommunicator, where one group calls it before sending to the other
 *     and the other receives before calling it (a blocking duplicate would hang here); the
 *     duplicate is an intercommunicator with the same groups and works.
 *  4. MPI_Comm_idup_with_info: the new communicator has the hints given, not the parent's.
 *  5. Blocking creating calls on an intercommunicator (MPI_Comm_dup, MPI_Intercomm_merge,
 *     MPI_Comm_split) while an idup of MPI_COMM_WORLD is outstanding, one group calling them
 *     before it waits for the idup and the other after (they must not hold the context lock
 *     that the idup needs while they wait for the other group).
 */
#define TEST_NAME "idup"
#include "../mpitest.h"

/* The duplicate works: an allreduce over it and a ring on it. */
static void check_dup(MPI_Comm dup, MPI_Comm parent)
{
    int result, size, rank, sum = -1;
    CHECK_MPI(MPI_Comm_compare(dup, parent, &result));
    CHECK(result == MPI_CONGRUENT, "compare(dup, parent) = %d, want MPI_CONGRUENT", result);
    CHECK_MPI(MPI_Comm_size(dup, &size));
    CHECK_MPI(MPI_Comm_rank(dup, &rank));
    CHECK_MPI(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, dup));
    CHECK(sum == size * (size - 1) / 2, "allreduce on the duplicate = %d", sum);
    /* A message on the parent with the same tag must not be received on the duplicate. */
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int on_parent = 1000 + rank, on_dup = 2000 + rank, got_dup = -1, got_parent = -1;
    MPI_Request rq[2];
    CHECK_MPI(MPI_Isend(&on_parent, 1, MPI_INT, right, 9, parent, &rq[0]));
    CHECK_MPI(MPI_Isend(&on_dup, 1, MPI_INT, right, 9, dup, &rq[1]));
    CHECK_MPI(MPI_Recv(&got_dup, 1, MPI_INT, left, 9, dup, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Recv(&got_parent, 1, MPI_INT, left, 9, parent, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
    CHECK(got_dup == 2000 + left && got_parent == 1000 + left, "dup got %d, parent got %d", got_dup,
          got_parent);
}

static void several_outstanding(void)
{
    enum { K = 3 };
    MPI_Comm dups[K];
    MPI_Request rq[K];
    int size = test_size, rank = test_rank;
    for (int k = 0; k < K; k++) {
        CHECK_MPI(MPI_Comm_idup(MPI_COMM_WORLD, &dups[k], &rq[k]));
        /* Point-to-point on the parent between the idups and the waits. */
        int out = rank * 10 + k, in = -1;
        CHECK_MPI(MPI_Sendrecv(&out, 1, MPI_INT, (rank + 1) % size, k, &in, 1, MPI_INT,
                               (rank + size - 1) % size, k, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(in == ((rank + size - 1) % size) * 10 + k, "ring on the parent got %d", in);
    }
    /* A collective on the parent too (it follows the idups in every process's order). */
    int one = 1, n = 0;
    CHECK_MPI(MPI_Allreduce(&one, &n, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(n == size, "allreduce on the parent = %d", n);
    for (int k = K - 1; k >= 0; k--)
        CHECK_MPI(MPI_Wait(&rq[k], MPI_STATUS_IGNORE));
    for (int k = 0; k < K; k++) {
        check_dup(dups[k], MPI_COMM_WORLD);
        for (int j = 0; j < k; j++)
            CHECK(dups[j] != dups[k], "two idups gave the same handle");
    }
    for (int k = 0; k < K; k++)
        CHECK_MPI(MPI_Comm_free(&dups[k]));
}

static void different_parents(void)
{
    MPI_Comm half, d_world, d_half;
    MPI_Request rq[2];
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, test_rank % 2, test_rank, &half));
    CHECK_MPI(MPI_Comm_idup(MPI_COMM_WORLD, &d_world, &rq[0]));
    CHECK_MPI(MPI_Comm_idup(half, &d_half, &rq[1]));
    if (test_rank % 2) {
        CHECK_MPI(MPI_Wait(&rq[1], MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
    } else {
        CHECK_MPI(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Wait(&rq[1], MPI_STATUS_IGNORE));
    }
    check_dup(d_world, MPI_COMM_WORLD);
    check_dup(d_half, half);
    CHECK_MPI(MPI_Comm_free(&d_world));
    CHECK_MPI(MPI_Comm_free(&d_half));
    CHECK_MPI(MPI_Comm_free(&half));
}

static void on_an_intercommunicator(void)
{
    if (test_size < 2)
        return;
    int k = test_size / 2, group = test_rank < k ? 0 : 1;
    MPI_Comm local, inter, dup;
    MPI_Request rq;
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, group, test_rank, &local));
    CHECK_MPI(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, group == 0 ? k : 0, 3, &inter));
    int lrank, rsize;
    CHECK_MPI(MPI_Comm_rank(inter, &lrank));
    CHECK_MPI(MPI_Comm_remote_size(inter, &rsize));
    int token = -1;
    if (group == 0) {
        /* idup first, then a message to the other group, then the wait. */
        CHECK_MPI(MPI_Comm_idup(inter, &dup, &rq));
        if (lrank == 0) {
            token = 4711;
            CHECK_MPI(MPI_Send(&token, 1, MPI_INT, 0, 1, inter));
        }
    } else {
        /* The other group receives that message before it calls idup. */
        if (lrank == 0) {
            CHECK_MPI(MPI_Recv(&token, 1, MPI_INT, 0, 1, inter, MPI_STATUS_IGNORE));
            CHECK(token == 4711, "message before idup = %d", token);
        }
        CHECK_MPI(MPI_Comm_idup(inter, &dup, &rq));
    }
    CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    int flag, result, dsize, drsize;
    CHECK_MPI(MPI_Comm_test_inter(dup, &flag));
    CHECK(flag, "the duplicate of an intercommunicator is not one");
    CHECK_MPI(MPI_Comm_compare(dup, inter, &result));
    CHECK(result == MPI_CONGRUENT, "compare(dup, inter) = %d", result);
    CHECK_MPI(MPI_Comm_size(dup, &dsize));
    CHECK_MPI(MPI_Comm_remote_size(dup, &drsize));
    CHECK(drsize == rsize, "remote size %d, want %d", drsize, rsize);
    /* The duplicate carries an intercommunicator allreduce and point-to-point. */
    int mine = group + 1, theirs = -1;
    CHECK_MPI(MPI_Allreduce(&mine, &theirs, 1, MPI_INT, MPI_SUM, dup));
    CHECK(theirs == rsize * (2 - group), "allreduce on the duplicate = %d", theirs);
    if (lrank == 0) {
        int out = 100 + group, in = -1;
        CHECK_MPI(MPI_Sendrecv(&out, 1, MPI_INT, 0, 2, &in, 1, MPI_INT, 0, 2, dup, MPI_STATUS_IGNORE));
        CHECK(in == 101 - group, "point-to-point on the duplicate got %d", in);
    }
    /* Two idups of it outstanding, waited in reverse order. */
    MPI_Comm d2[2];
    MPI_Request r2[2];
    CHECK_MPI(MPI_Comm_idup(inter, &d2[0], &r2[0]));
    CHECK_MPI(MPI_Comm_idup(dup, &d2[1], &r2[1]));
    CHECK_MPI(MPI_Wait(&r2[1], MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Wait(&r2[0], MPI_STATUS_IGNORE));
    for (int i = 0; i < 2; i++) {
        theirs = -1;
        CHECK_MPI(MPI_Allreduce(&mine, &theirs, 1, MPI_INT, MPI_SUM, d2[i]));
        CHECK(theirs == rsize * (2 - group), "allreduce on duplicate %d = %d", i, theirs);
        CHECK_MPI(MPI_Comm_free(&d2[i]));
    }
    CHECK_MPI(MPI_Comm_free(&dup));
    CHECK_MPI(MPI_Comm_free(&inter));
    CHECK_MPI(MPI_Comm_free(&local));
}

static void with_info(void)
{
    MPI_Info info, used;
    MPI_Comm parent, dup;
    MPI_Request rq;
    char value[MPI_MAX_INFO_VAL + 1];
    int flag;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &parent));
    CHECK_MPI(MPI_Info_create(&info));
    CHECK_MPI(MPI_Info_set(info, "mpi_assert_no_any_source", "true"));
    CHECK_MPI(MPI_Comm_set_info(parent, info));
    CHECK_MPI(MPI_Info_free(&info));
    CHECK_MPI(MPI_Info_create(&info));
    CHECK_MPI(MPI_Info_set(info, "mpi_assert_no_any_tag", "true"));
    CHECK_MPI(MPI_Comm_idup_with_info(parent, info, &dup, &rq));
    CHECK_MPI(MPI_Info_free(&info));
    CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Comm_get_info(dup, &used));
    CHECK_MPI(MPI_Info_get(used, "mpi_assert_no_any_tag", MPI_MAX_INFO_VAL, value, &flag));
    CHECK(flag && strcmp(value, "true") == 0, "mpi_assert_no_any_tag on the duplicate: %s",
          flag ? value : "(unset)");
    CHECK_MPI(MPI_Info_get(used, "mpi_assert_no_any_source", MPI_MAX_INFO_VAL, value, &flag));
    CHECK(!flag || strcmp(value, "false") == 0, "the parent's hint was copied: %s", value);
    CHECK_MPI(MPI_Info_free(&used));
    check_dup(dup, parent);
    CHECK_MPI(MPI_Comm_free(&dup));
    CHECK_MPI(MPI_Comm_free(&parent));
}

static void blocking_beside_idup(void)
{
    if (test_size < 2)
        return;
    int k = test_size / 2, group = test_rank < k ? 0 : 1;
    MPI_Comm local, inter, dup, merged, split, wdup;
    MPI_Request rq;
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, group, test_rank, &local));
    CHECK_MPI(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, group == 0 ? k : 0, 4, &inter));
    for (int what = 0; what < 3; what++) {
        MPI_Comm *made = what == 0 ? &dup : what == 1 ? &merged : &split;
        CHECK_MPI(MPI_Comm_idup(MPI_COMM_WORLD, &wdup, &rq));
        if (group == 1)
            CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
        if (what == 0)
            CHECK_MPI(MPI_Comm_dup(inter, made));
        else if (what == 1)
            CHECK_MPI(MPI_Intercomm_merge(inter, group, made));
        else
            CHECK_MPI(MPI_Comm_split(inter, 0, test_rank, made));
        if (group == 0)
            CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
        check_dup(wdup, MPI_COMM_WORLD);
        int one = 1, sum = -1, expect = what == 1 ? test_size : (group ? k : test_size - k);
        CHECK_MPI(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, *made));
        CHECK(sum == expect, "allreduce on communicator %d made beside an idup = %d, want %d", what,
              sum, expect);
        CHECK_MPI(MPI_Comm_free(made));
        CHECK_MPI(MPI_Comm_free(&wdup));
    }
    CHECK_MPI(MPI_Comm_free(&inter));
    CHECK_MPI(MPI_Comm_free(&local));
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    several_outstanding();
    different_parents();
    on_an_intercommunicator();
    with_info();
    blocking_beside_idup();
    test_ok();
    MPI_Finalize();
    return 0;
}
