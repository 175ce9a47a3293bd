/*
 * idup: MPI_Comm_idup and MPI_Comm_idup_with_info are nonblocking collectives (issue 17;
 * MPI 3.1 §6.4.2, §5.12): they return before the other members have called them, complete
 * through their requests, and may be outstanding several at once, on one parent or on
 * several, interleaved with blocking communicator creation.
 *
 *  1. Rank 0 calls MPI_Comm_idup on MPI_COMM_WORLD, then sends to rank 1 on the parent and
 *     waits for its reply; rank 1 receives, replies, and only then calls MPI_Comm_idup.
 *     Then an idup of the new communicator.
 *  2. Four idups of one parent outstanding at once, completed by one MPI_Waitall given the
 *     requests in the reverse order; each new communicator works (an MPI_Allreduce gives the
 *     right sum) and they are all distinct (a message sent on one is never received on
 *     another: rank 0 sends one message on each, in reverse order, and the receiver takes
 *     them in forward order, each on its own communicator).
 *  3. Idups on MPI_COMM_WORLD and on a split of it (two halves, both parities in each),
 *     interleaved with a blocking MPI_Comm_dup of the split: even ranks dup the split while
 *     their idups are outstanding, odd ranks wait for their idups first; then even ranks
 *     idup WORLD before the blocking dup and odd ranks after it.
 *  4. Idup of a communicator made by MPI_Comm_create_group (the ranks in reverse order).
 *  5. MPI_Comm_idup_with_info: the new communicator has the info's hints
 *     (mpi_assert_no_any_tag = true, which the library keeps), where the parent has none.
 *  6. Sixteen idups alternating between MPI_COMM_WORLD and a split of it, a blocking
 *     MPI_Comm_split of WORLD among them, completed by polling MPI_Testany.
 *  7. What the duplicate copies, as MPI_Comm_dup at the time of the call would: the error
 *     handler, an attribute whose copy callback is MPI_COMM_DUP_FN (an attribute set on the
 *     parent after the call is not copied), the topology (a 1-D periodic cartesian grid).
 *
 * The new communicators' handles are read only after their requests complete. Runs on any
 * number of ranks (scenario 1 needs 2; with 1 it checks the rest). Checked against MPICH
 * 4.0.2 (`mpicc.mpich`, `mpiexec.mpich`, 1, 2, 3, 4 and 8 ranks), which deviates in one
 * place: in scenario 6 its blocking MPI_Comm_split of WORLD, called while idups of WORLD
 * and of the split are outstanding, hangs on 2 and 3 ranks (where a half has one process);
 * compile with -DPEER_HANGS_IN_BLOCKING_CREATE_AMONG_IDUPS to make that split after the
 * idups instead (then everything passes there).
 */
#define TEST_NAME "idup"
#include "mpitest.h"

/* The new communicator works: congruent to `parent`, and an MPI_Allreduce sums the ranks. */
static void check_works(MPI_Comm c, MPI_Comm parent, const char *what)
{
    int size = 0, rank = -1, psize = 0, prank = -1, cmp = -1, sum = -1;
    CHECK(c != MPI_COMM_NULL, "%s: the new communicator is MPI_COMM_NULL", what);
    CHECK_MPI(MPI_Comm_compare(c, parent, &cmp));
    CHECK(cmp == MPI_CONGRUENT, "%s: compare with the parent gives %d, not MPI_CONGRUENT", what,
          cmp);
    CHECK_MPI(MPI_Comm_size(c, &size));
    CHECK_MPI(MPI_Comm_rank(c, &rank));
    CHECK_MPI(MPI_Comm_size(parent, &psize));
    CHECK_MPI(MPI_Comm_rank(parent, &prank));
    CHECK(size == psize && rank == prank, "%s: rank %d of %d, the parent says %d of %d", what,
          rank, size, prank, psize);
    CHECK_MPI(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, c));
    CHECK(sum == size * (size - 1) / 2, "%s: allreduce gives %d, not %d", what, sum,
          size * (size - 1) / 2);
}

static void idup_while_peer_talks_first(void)
{
    MPI_Comm c = MPI_COMM_NULL;
    MPI_Request r = MPI_REQUEST_NULL;
    int token = 0;
    if (test_size < 2) {
        CHECK_MPI(MPI_Comm_idup(MPI_COMM_WORLD, &c, &r));
        CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
    } else if (test_rank == 0) {
        CHECK_MPI(MPI_Comm_idup(MPI_COMM_WORLD, &c, &r));
        token = 41;
        CHECK_MPI(MPI_Send(&token, 1, MPI_INT, 1, 7, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Recv(&token, 1, MPI_INT, 1, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(token == 42, "reply %d, not 42", token);
        CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
    } else if (test_rank == 1) {
        CHECK_MPI(MPI_Recv(&token, 1, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        token += 1;
        CHECK_MPI(MPI_Send(&token, 1, MPI_INT, 0, 8, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Comm_idup(MPI_COMM_WORLD, &c, &r));
        CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
    } else {
        CHECK_MPI(MPI_Comm_idup(MPI_COMM_WORLD, &c, &r));
        CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
    }
    CHECK(r == MPI_REQUEST_NULL, "MPI_Wait left the idup's request set");
    check_works(c, MPI_COMM_WORLD, "idup while a peer talks first");
    /* An idup of the idup. */
    MPI_Comm cc = MPI_COMM_NULL;
    CHECK_MPI(MPI_Comm_idup(c, &cc, &r));
    CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
    check_works(cc, c, "idup of an idup");
    CHECK_MPI(MPI_Comm_free(&cc));
    CHECK_MPI(MPI_Comm_free(&c));
}

enum { OUTSTANDING = 4, MANY = 16 };

/* The n communicators c[] (of one group) have distinct message spaces: rank 0 sends value i
 * on c[i] to the last rank, in reverse order; the last rank receives in forward order with
 * MPI_ANY_TAG, each on its own communicator. */
static void check_distinct(MPI_Comm *c, int n)
{
    int rank = -1, size = 0;
    CHECK_MPI(MPI_Comm_rank(c[0], &rank));
    CHECK_MPI(MPI_Comm_size(c[0], &size));
    int last = size - 1;
    MPI_Request sends[MANY];
    int values[MANY];
    if (rank == 0) {
        for (int i = n - 1; i >= 0; i--) {
            values[i] = i;
            CHECK_MPI(MPI_Isend(&values[i], 1, MPI_INT, last, 0, c[i], &sends[i]));
        }
    }
    if (rank == last) {
        for (int i = 0; i < n; i++) {
            int got = -1;
            CHECK_MPI(MPI_Recv(&got, 1, MPI_INT, 0, MPI_ANY_TAG, c[i], MPI_STATUS_IGNORE));
            CHECK(got == i, "the receive on communicator %d got the message sent on %d", i, got);
        }
    }
    if (rank == 0)
        CHECK_MPI(MPI_Waitall(n, sends, MPI_STATUSES_IGNORE));
}

static void outstanding_idups_are_distinct(MPI_Comm parent)
{
    MPI_Comm c[OUTSTANDING];
    MPI_Request r[OUTSTANDING], reversed[OUTSTANDING];
    int rank = -1, size = 0;
    CHECK_MPI(MPI_Comm_rank(parent, &rank));
    CHECK_MPI(MPI_Comm_size(parent, &size));
    for (int i = 0; i < OUTSTANDING; i++)
        CHECK_MPI(MPI_Comm_idup(parent, &c[i], &r[i]));
    for (int i = 0; i < OUTSTANDING; i++)
        reversed[i] = r[OUTSTANDING - 1 - i];
    CHECK_MPI(MPI_Waitall(OUTSTANDING, reversed, MPI_STATUSES_IGNORE));
    for (int i = 0; i < OUTSTANDING; i++) {
        CHECK(reversed[i] == MPI_REQUEST_NULL, "MPI_Waitall left request %d set", i);
        check_works(c[i], parent, "one of four outstanding idups");
        for (int j = 0; j < i; j++) {
            int cmp = -1;
            CHECK_MPI(MPI_Comm_compare(c[i], c[j], &cmp));
            CHECK(cmp == MPI_CONGRUENT, "idups %d and %d compare as %d", i, j, cmp);
        }
    }
    check_distinct(c, OUTSTANDING);
    for (int i = 0; i < OUTSTANDING; i++)
        CHECK_MPI(MPI_Comm_free(&c[i]));
}

static void idups_interleaved_with_blocking_dup(void)
{
    MPI_Comm half, a = MPI_COMM_NULL, b = MPI_COMM_NULL, d = MPI_COMM_NULL;
    MPI_Request r[2];
    int even = test_rank % 2 == 0;
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, test_rank < test_size / 2, test_rank, &half));

    /* Both idups outstanding; even ranks dup the split before waiting, odd ranks after. */
    CHECK_MPI(MPI_Comm_idup(MPI_COMM_WORLD, &a, &r[0]));
    CHECK_MPI(MPI_Comm_idup(half, &b, &r[1]));
    if (even) {
        CHECK_MPI(MPI_Comm_dup(half, &d));
        CHECK_MPI(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
    } else {
        CHECK_MPI(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
        CHECK_MPI(MPI_Comm_dup(half, &d));
    }
    check_works(a, MPI_COMM_WORLD, "idup of WORLD beside a blocking dup");
    check_works(b, half, "idup of a split beside a blocking dup");
    check_works(d, half, "blocking dup beside idups");
    CHECK_MPI(MPI_Comm_free(&a));
    CHECK_MPI(MPI_Comm_free(&b));
    CHECK_MPI(MPI_Comm_free(&d));

    /* Even ranks start the idup of WORLD before the blocking dup of the split, odd ones after. */
    if (even) {
        CHECK_MPI(MPI_Comm_idup(MPI_COMM_WORLD, &a, &r[0]));
        CHECK_MPI(MPI_Comm_dup(half, &d));
    } else {
        CHECK_MPI(MPI_Comm_dup(half, &d));
        CHECK_MPI(MPI_Comm_idup(MPI_COMM_WORLD, &a, &r[0]));
    }
    CHECK_MPI(MPI_Wait(&r[0], MPI_STATUS_IGNORE));
    check_works(a, MPI_COMM_WORLD, "idup of WORLD started around a blocking dup");
    check_works(d, half, "blocking dup started around an idup");
    /* Four idups of the split beside the communicators made above. */
    outstanding_idups_are_distinct(half);
    CHECK_MPI(MPI_Comm_free(&a));
    CHECK_MPI(MPI_Comm_free(&d));
    CHECK_MPI(MPI_Comm_free(&half));
}

/* MANY idups alternating between WORLD and a split of it, with a blocking MPI_Comm_split of
 * WORLD between the two halves of the calls, completed by polling MPI_Testany; each works and
 * the children of each parent are distinct. */
static void many_idups_on_two_parents(void)
{
    MPI_Comm half, split, c[MANY], of_world[MANY / 2], of_half[MANY / 2];
    MPI_Request r[MANY];
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, test_rank % 2, -test_rank, &half));
#ifdef PEER_HANGS_IN_BLOCKING_CREATE_AMONG_IDUPS
    enum { SPLIT_AT = MANY };
#else
    enum { SPLIT_AT = MANY / 2 };
#endif
    for (int i = 0; i <= MANY; i++) {
        if (i == SPLIT_AT)
            CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, test_rank, &split));
        if (i < MANY)
            CHECK_MPI(MPI_Comm_idup(i % 2 ? half : MPI_COMM_WORLD, &c[i], &r[i]));
    }
    int done = 0;
    for (long polls = 0; done < MANY; polls++) {
        int index = -1, flag = 0;
        CHECK(polls < 100000000L, "the idups did not complete (%d of %d)", done, MANY);
        CHECK_MPI(MPI_Testany(MANY, r, &index, &flag, MPI_STATUS_IGNORE));
        if (flag && index != MPI_UNDEFINED)
            done++;
    }
    for (int i = 0; i < MANY; i++) {
        check_works(c[i], i % 2 ? half : MPI_COMM_WORLD, "one of many idups on two parents");
        (i % 2 ? of_half : of_world)[i / 2] = c[i];
    }
    check_works(split, MPI_COMM_WORLD, "a blocking split among many idups");
    check_distinct(of_world, MANY / 2);
    check_distinct(of_half, MANY / 2);
    for (int i = 0; i < MANY; i++)
        CHECK_MPI(MPI_Comm_free(&c[i]));
    CHECK_MPI(MPI_Comm_free(&split));
    CHECK_MPI(MPI_Comm_free(&half));
}

static void idup_of_a_group_communicator(void)
{
    MPI_Group world, reversed;
    MPI_Comm g = MPI_COMM_NULL, c = MPI_COMM_NULL;
    MPI_Request r;
    int *ranks = test_malloc(sizeof(int) * (size_t)test_size);
    for (int i = 0; i < test_size; i++)
        ranks[i] = test_size - 1 - i;
    CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world));
    CHECK_MPI(MPI_Group_incl(world, test_size, ranks, &reversed));
    CHECK_MPI(MPI_Comm_create_group(MPI_COMM_WORLD, reversed, 5, &g));
    CHECK_MPI(MPI_Comm_idup(g, &c, &r));
    CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
    check_works(c, g, "idup of a communicator from MPI_Comm_create_group");
    int rank = -1;
    CHECK_MPI(MPI_Comm_rank(c, &rank));
    CHECK(rank == test_size - 1 - test_rank, "rank %d in the reversed group, not %d", rank,
          test_size - 1 - test_rank);
    CHECK_MPI(MPI_Comm_free(&c));
    CHECK_MPI(MPI_Comm_free(&g));
    CHECK_MPI(MPI_Group_free(&reversed));
    CHECK_MPI(MPI_Group_free(&world));
    free(ranks);
}

static void idup_with_info_keeps_it(void)
{
    MPI_Info info, used;
    MPI_Comm c = MPI_COMM_NULL;
    MPI_Request r;
    char value[MPI_MAX_INFO_VAL + 1];
    int flag = 0;
    CHECK_MPI(MPI_Info_create(&info));
    CHECK_MPI(MPI_Info_set(info, "mpi_assert_no_any_tag", "true"));
    CHECK_MPI(MPI_Comm_idup_with_info(MPI_COMM_WORLD, info, &c, &r));
    CHECK_MPI(MPI_Info_free(&info));
    CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
    check_works(c, MPI_COMM_WORLD, "idup_with_info");
    CHECK_MPI(MPI_Comm_get_info(c, &used));
    CHECK_MPI(MPI_Info_get(used, "mpi_assert_no_any_tag", MPI_MAX_INFO_VAL, value, &flag));
    CHECK(flag && strcmp(value, "true") == 0,
          "idup_with_info: mpi_assert_no_any_tag is %s on the new communicator",
          flag ? value : "not set");
    CHECK_MPI(MPI_Info_free(&used));
    CHECK_MPI(MPI_Comm_free(&c));
}

static void idup_copies_what_dup_copies(void)
{
    MPI_Comm grid, c = MPI_COMM_NULL;
    MPI_Request r;
    MPI_Errhandler eh;
    int key = MPI_KEYVAL_INVALID, later = MPI_KEYVAL_INVALID, flag = 0, status = -1;
    int dims[1] = {test_size}, periods[1] = {1};
    static int value = 17, other = 23;
    void *got = NULL;
    CHECK_MPI(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &grid));
    CHECK_MPI(MPI_Comm_set_errhandler(grid, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &key, NULL));
    CHECK_MPI(MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &later, NULL));
    CHECK_MPI(MPI_Comm_set_attr(grid, key, &value));
    CHECK_MPI(MPI_Comm_idup(grid, &c, &r));
    CHECK_MPI(MPI_Comm_set_attr(grid, later, &other));
    CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
    check_works(c, grid, "idup of a cartesian communicator");
    CHECK_MPI(MPI_Comm_get_attr(c, key, &got, &flag));
    CHECK(flag && got == &value, "the attribute set before the idup was not copied");
    CHECK_MPI(MPI_Comm_get_attr(c, later, &got, &flag));
    CHECK(!flag, "an attribute set after MPI_Comm_idup was copied");
    CHECK_MPI(MPI_Comm_get_errhandler(c, &eh));
    CHECK(eh == MPI_ERRORS_RETURN, "the error handler was not copied");
    CHECK_MPI(MPI_Errhandler_free(&eh));
    CHECK_MPI(MPI_Topo_test(c, &status));
    CHECK(status == MPI_CART, "the topology was not copied (MPI_Topo_test gives %d)", status);
    int left = -1, right = -1;
    CHECK_MPI(MPI_Cart_shift(c, 0, 1, &left, &right));
    CHECK(right == (test_rank + 1) % test_size, "cart shift gives %d", right);
    CHECK_MPI(MPI_Comm_free(&c));
    CHECK_MPI(MPI_Comm_free(&grid));
    CHECK_MPI(MPI_Comm_free_keyval(&key));
    CHECK_MPI(MPI_Comm_free_keyval(&later));
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    idup_while_peer_talks_first();
    outstanding_idups_are_distinct(MPI_COMM_WORLD);
    idups_interleaved_with_blocking_dup();
    many_idups_on_two_parents();
    idup_of_a_group_communicator();
    idup_with_info_keeps_it();
    idup_copies_what_dup_copies();
    test_ok();
    MPI_Finalize();
    return 0;
}
