/*
 * comms: communicator creation and use. MPI_Comm_dup, split (with keys reversing the order,
 * and MPI_UNDEFINED), split_type(MPI_COMM_TYPE_SHARED), create, create_group, compare,
 * names, free and context reuse (hundreds of dup/free), error handler inheritance, and
 * point-to-point on every new communicator with real data and translated statuses.
 * Intercommunicators: Intercomm_create between the even and odd ranks, point-to-point across
 * it, remote size and group, Comm_test_inter, dup of the intercommunicator, Intercomm_merge.
 * Needs at least 2 ranks (the intercommunicator part at least 2; everything runs on any size).
 */
#define TEST_NAME "comms"
#include "../mpitest.h"

/* A ring exchange on comm: each rank sends its rank-tagged pattern to the right and checks
 * what comes from the left, including the status's source (a rank of comm). */
static void ring_check(MPI_Comm comm, int salt)
{
    int rank, size;
    CHECK_MPI(MPI_Comm_rank(comm, &rank));
    CHECK_MPI(MPI_Comm_size(comm, &size));
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    unsigned char out[300], in[300];
    fill_pattern(out, sizeof out, message_seed(rank, right, salt));
    MPI_Status st;
    CHECK_MPI(MPI_Sendrecv(out, sizeof out, MPI_BYTE, right, 7, in, sizeof in, MPI_BYTE, MPI_ANY_SOURCE,
                           7, comm, &st));
    CHECK(st.MPI_SOURCE == left, "ring on a communicator of size %d: source %d, want %d", size,
          st.MPI_SOURCE, left);
    CHECK_PATTERN(in, sizeof in, message_seed(left, rank, salt), "ring message from %d", left);
}

static void check_split(void)
{
    /* Two colors by parity; keys reverse the order. */
    MPI_Comm half;
    int color = test_rank % 2;
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, color, -test_rank, &half));
    int r, s;
    CHECK_MPI(MPI_Comm_rank(half, &r));
    CHECK_MPI(MPI_Comm_size(half, &s));
    int want_size = (test_size + 1 - color) / 2;
    CHECK(s == want_size, "split size %d, want %d", s, want_size);
    /* members of my color in decreasing world rank */
    int want_rank = (want_size - 1) - test_rank / 2;
    CHECK(r == want_rank, "split rank %d, want %d", r, want_rank);
    ring_check(half, 1);

    /* The new communicator's group translates to the right world ranks. */
    MPI_Group g, wg;
    CHECK_MPI(MPI_Comm_group(half, &g));
    CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &wg));
    for (int i = 0; i < s; i++) {
        int w;
        CHECK_MPI(MPI_Group_translate_ranks(g, 1, &i, wg, &w));
        int want = color + 2 * (want_size - 1 - i);
        CHECK(w == want, "rank %d of the half is world rank %d, want %d", i, w, want);
    }
    CHECK_MPI(MPI_Group_free(&g));
    CHECK_MPI(MPI_Group_free(&wg));

    /* Split of a split, and MPI_UNDEFINED. */
    MPI_Comm quarter;
    CHECK_MPI(MPI_Comm_split(half, r == 0 ? MPI_UNDEFINED : 5, 0, &quarter));
    if (r == 0) {
        CHECK(quarter == MPI_COMM_NULL, "MPI_UNDEFINED color did not give MPI_COMM_NULL");
    } else {
        int qs;
        CHECK_MPI(MPI_Comm_size(quarter, &qs));
        CHECK(qs == s - 1, "quarter size %d, want %d", qs, s - 1);
        ring_check(quarter, 2);
        CHECK_MPI(MPI_Comm_free(&quarter));
        CHECK(quarter == MPI_COMM_NULL, "MPI_Comm_free did not set MPI_COMM_NULL");
    }
    int result;
    CHECK_MPI(MPI_Comm_compare(half, half, &result));
    CHECK(result == MPI_IDENT, "compare(c, c) = %d", result);
    CHECK_MPI(MPI_Comm_free(&half));
}

static void check_dup_compare_names(void)
{
    MPI_Comm d;
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &d));
    MPI_Errhandler eh;
    CHECK_MPI(MPI_Comm_get_errhandler(d, &eh));
    CHECK(eh == MPI_ERRORS_RETURN, "a dup did not inherit MPI_ERRORS_RETURN");
    int result;
    CHECK_MPI(MPI_Comm_compare(MPI_COMM_WORLD, d, &result));
    CHECK(result == MPI_CONGRUENT, "compare(world, dup) = %d, want MPI_CONGRUENT", result);
    /* A message on the dup never matches a receive on world. */
    if (test_size >= 2) {
        if (test_rank == 0) {
            int a = 111, b = 222;
            CHECK_MPI(MPI_Send(&a, 1, MPI_INT, 1, 3, d));
            CHECK_MPI(MPI_Send(&b, 1, MPI_INT, 1, 3, MPI_COMM_WORLD));
        } else if (test_rank == 1) {
            int x = 0, y = 0;
            CHECK_MPI(MPI_Recv(&y, 1, MPI_INT, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK_MPI(MPI_Recv(&x, 1, MPI_INT, 0, 3, d, MPI_STATUS_IGNORE));
            CHECK(x == 111 && y == 222, "dup and world messages crossed: %d %d", x, y);
        }
    }
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    CHECK_MPI(MPI_Comm_get_name(MPI_COMM_WORLD, name, &len));
    CHECK(strcmp(name, "MPI_COMM_WORLD") == 0 && len == 14, "world's name is '%s' (%d)", name, len);
    CHECK_MPI(MPI_Comm_get_name(d, name, &len));
    CHECK(len == 0 && name[0] == 0, "a dup's name is '%s', want empty", name);
    CHECK_MPI(MPI_Comm_set_name(d, "my dup"));
    CHECK_MPI(MPI_Comm_get_name(d, name, &len));
    CHECK(strcmp(name, "my dup") == 0 && len == 6, "name is '%s'", name);

    /* SIMILAR: same members, other order; UNEQUAL: fewer members. */
    MPI_Comm rev, part;
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, test_size - test_rank, &rev));
    CHECK_MPI(MPI_Comm_compare(MPI_COMM_WORLD, rev, &result));
    CHECK(result == (test_size > 1 ? MPI_SIMILAR : MPI_CONGRUENT), "compare(world, reversed) = %d", result);
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, test_rank == 0, 0, &part));
    CHECK_MPI(MPI_Comm_compare(MPI_COMM_WORLD, part, &result));
    CHECK(result == (test_size > 1 ? MPI_UNEQUAL : MPI_CONGRUENT), "compare(world, part) = %d", result);
    ring_check(rev, 3);
    CHECK_MPI(MPI_Comm_free(&rev));
    CHECK_MPI(MPI_Comm_free(&part));
    CHECK_MPI(MPI_Comm_free(&d));

    /* Freeing a communicator with operations pending: they still complete (MPI allows it). */
    if (test_size >= 2 && test_rank < 2) {
        MPI_Comm p;
        MPI_Request r;
        MPI_Status st;
        int out = 4242, in = 0;
        CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, -test_rank, &p)); /* rank 0 of world is last */
        int pr, ps;
        CHECK_MPI(MPI_Comm_rank(p, &pr));
        CHECK_MPI(MPI_Comm_size(p, &ps));
        if (test_rank == 0) {
            CHECK_MPI(MPI_Isend(&out, 1, MPI_INT, ps - 2, 11, p, &r));
        } else {
            CHECK_MPI(MPI_Irecv(&in, 1, MPI_INT, MPI_ANY_SOURCE, 11, p, &r));
        }
        CHECK_MPI(MPI_Comm_free(&p));
        MPI_Comm other;
        CHECK_MPI(MPI_Comm_dup(MPI_COMM_SELF, &other)); /* a new communicator meanwhile */
        CHECK_MPI(MPI_Wait(&r, &st));
        if (test_rank == 1)
            CHECK(in == 4242 && st.MPI_SOURCE == ps - 1, "after free: got %d from %d", in, st.MPI_SOURCE);
        CHECK_MPI(MPI_Comm_free(&other));
    } else if (test_size >= 2) {
        MPI_Comm p;
        CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, -test_rank, &p));
        CHECK_MPI(MPI_Comm_free(&p));
    }

    /* dup_with_info, idup_with_info, disconnect, get_parent */
    MPI_Info hints;
    MPI_Comm e;
    CHECK_MPI(MPI_Info_create(&hints));
    CHECK_MPI(MPI_Info_set(hints, "mpi_assert_no_any_tag", "false"));
    CHECK_MPI(MPI_Comm_dup_with_info(MPI_COMM_WORLD, hints, &e));
    ring_check(e, 10);
    MPI_Request ireq;
    MPI_Comm e2;
    CHECK_MPI(MPI_Comm_idup_with_info(e, hints, &e2, &ireq));
    CHECK_MPI(MPI_Wait(&ireq, MPI_STATUS_IGNORE));
    ring_check(e2, 11);
    CHECK_MPI(MPI_Comm_disconnect(&e2));
    CHECK(e2 == MPI_COMM_NULL, "MPI_Comm_disconnect did not set MPI_COMM_NULL");
    CHECK_MPI(MPI_Comm_free(&e));
    CHECK_MPI(MPI_Info_free(&hints));
    MPI_Comm parent;
    CHECK_MPI(MPI_Comm_get_parent(&parent));
    CHECK(parent == MPI_COMM_NULL, "a process started by mpirun has a parent");

    /* Comm_idup: a request that completes with the new communicator. */
    MPI_Request req;
    CHECK_MPI(MPI_Comm_idup(MPI_COMM_WORLD, &d, &req));
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    CHECK(req == MPI_REQUEST_NULL, "MPI_Wait left the idup request");
    ring_check(d, 9);
    CHECK_MPI(MPI_Comm_free(&d));

    /* Context ids are released and reused: many dup/free cycles (fewer when oversubscribed,
     * where every collective round waits for the scheduler). */
    int cycles = test_size > 4 ? 40 : 200, alive = test_size > 4 ? 20 : 50;
    for (int i = 0; i < cycles; i++) {
        MPI_Comm t;
        CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &t));
        if (i % 100 == 0)
            ring_check(t, 100 + i);
        CHECK_MPI(MPI_Comm_free(&t));
    }
    /* Many alive at once. */
    MPI_Comm many[100];
    for (int i = 0; i < alive; i++)
        CHECK_MPI(MPI_Comm_dup(i == 0 ? MPI_COMM_WORLD : many[i - 1], &many[i]));
    ring_check(many[alive - 1], 4);
    for (int i = 0; i < alive; i++)
        CHECK_MPI(MPI_Comm_free(&many[i]));
}

static void check_create(void)
{
    MPI_Group wg, evens;
    CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &wg));
    int range[1][3] = {{0, test_size - 1, 2}};
    CHECK_MPI(MPI_Group_range_incl(wg, 1, range, &evens));
    MPI_Comm ce;
    CHECK_MPI(MPI_Comm_create(MPI_COMM_WORLD, evens, &ce));
    if (test_rank % 2 == 0) {
        int r;
        CHECK_MPI(MPI_Comm_rank(ce, &r));
        CHECK(r == test_rank / 2, "create: rank %d, want %d", r, test_rank / 2);
        ring_check(ce, 5);
        CHECK_MPI(MPI_Comm_free(&ce));
    } else {
        CHECK(ce == MPI_COMM_NULL, "create: a non-member did not get MPI_COMM_NULL");
    }
    /* create_group: only the members call it. */
    if (test_rank % 2 == 0) {
        MPI_Comm cg;
        CHECK_MPI(MPI_Comm_create_group(MPI_COMM_WORLD, evens, 42, &cg));
        int r;
        CHECK_MPI(MPI_Comm_rank(cg, &r));
        CHECK(r == test_rank / 2, "create_group: rank %d, want %d", r, test_rank / 2);
        ring_check(cg, 6);
        CHECK_MPI(MPI_Comm_free(&cg));
    }
    CHECK_MPI(MPI_Group_free(&evens));
    CHECK_MPI(MPI_Group_free(&wg));

    /* split_type shared: every rank of this job is on this host. */
    MPI_Comm node;
    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, test_rank, MPI_INFO_NULL, &node));
    int ns, nr;
    CHECK_MPI(MPI_Comm_size(node, &ns));
    CHECK_MPI(MPI_Comm_rank(node, &nr));
    CHECK(ns == test_size && nr == test_rank, "split_type: %d of %d", nr, ns);
    ring_check(node, 7);
    CHECK_MPI(MPI_Comm_free(&node));
    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_UNDEFINED, 0, MPI_INFO_NULL, &node));
    CHECK(node == MPI_COMM_NULL, "split_type(MPI_UNDEFINED) did not give MPI_COMM_NULL");
}

static void check_intercomm(void)
{
    if (test_size < 2)
        return;
    int color = test_rank % 2;
    MPI_Comm local, inter;
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, color, test_rank, &local));
    /* Leaders: world rank 0 for the evens, world rank 1 for the odds. */
    CHECK_MPI(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, color == 0 ? 1 : 0, 99, &inter));
    int flag, lsize, rsize, lrank;
    CHECK_MPI(MPI_Comm_test_inter(inter, &flag));
    CHECK(flag, "Comm_test_inter says no on an intercommunicator");
    CHECK_MPI(MPI_Comm_test_inter(local, &flag));
    CHECK(!flag, "Comm_test_inter says yes on an intracommunicator");
    CHECK_MPI(MPI_Comm_size(inter, &lsize));
    CHECK_MPI(MPI_Comm_rank(inter, &lrank));
    CHECK_MPI(MPI_Comm_remote_size(inter, &rsize));
    int evens = (test_size + 1) / 2, odds = test_size / 2;
    CHECK(lsize == (color ? odds : evens) && rsize == (color ? evens : odds),
          "intercomm sizes %d/%d", lsize, rsize);
    CHECK(lrank == test_rank / 2, "intercomm rank %d", lrank);
    MPI_Group rg;
    CHECK_MPI(MPI_Comm_remote_group(inter, &rg));
    int gs;
    CHECK_MPI(MPI_Group_size(rg, &gs));
    CHECK(gs == rsize, "remote group size %d", gs);
    CHECK_MPI(MPI_Group_free(&rg));

    /* Point-to-point across: local rank i talks to remote rank i (if it exists). */
    for (int round = 0; round < 2; round++) {
        MPI_Comm c = inter;
        MPI_Comm d = MPI_COMM_NULL;
        if (round == 1) {
            CHECK_MPI(MPI_Comm_dup(inter, &d));
            c = d;
        }
        if (lrank < rsize) {
            unsigned char out[1000], in[1000];
            fill_pattern(out, sizeof out, message_seed(test_rank, round, color));
            MPI_Status st;
            CHECK_MPI(MPI_Sendrecv(out, sizeof out, MPI_BYTE, lrank, 1, in, sizeof in, MPI_BYTE,
                                   MPI_ANY_SOURCE, 1, c, &st));
            CHECK(st.MPI_SOURCE == lrank, "intercomm status source %d, want %d", st.MPI_SOURCE, lrank);
            int peer_world = 2 * lrank + (1 - color);
            CHECK_PATTERN(in, sizeof in, message_seed(peer_world, round, 1 - color), "intercomm message");
        }
        if (d != MPI_COMM_NULL)
            CHECK_MPI(MPI_Comm_free(&d));
    }
    /* Split of the intercommunicator by parity of the local rank. */
    MPI_Comm sub;
    int c2 = lrank % 2;
    CHECK_MPI(MPI_Comm_split(inter, c2, lrank, &sub));
    int remote_with_c2 = (rsize - c2 + 1) / 2;
    if (remote_with_c2 == 0) {
        CHECK(sub == MPI_COMM_NULL, "intercomm split: no remote partner but a communicator");
    } else {
        int ss, sr, srs;
        CHECK_MPI(MPI_Comm_size(sub, &ss));
        CHECK_MPI(MPI_Comm_rank(sub, &sr));
        CHECK_MPI(MPI_Comm_remote_size(sub, &srs));
        CHECK(sr == lrank / 2 && srs == remote_with_c2, "intercomm split: rank %d remote size %d", sr, srs);
        if (sr < srs) {
            int out = test_rank, in = -1;
            MPI_Status st;
            CHECK_MPI(MPI_Sendrecv(&out, 1, MPI_INT, sr, 5, &in, 1, MPI_INT, sr, 5, sub, &st));
            int peer_lrank = 2 * sr + c2, peer_world = 2 * peer_lrank + (1 - color);
            CHECK(in == peer_world && st.MPI_SOURCE == sr, "intercomm split: got %d from %d, want %d", in,
                  st.MPI_SOURCE, peer_world);
        }
        CHECK_MPI(MPI_Comm_free(&sub));
    }

    /* Comm_create on the intercommunicator: each side keeps its local ranks 0 and 1. */
    MPI_Group lg, keep;
    CHECK_MPI(MPI_Comm_group(inter, &lg));
    int first_two[2] = {1, 0}; /* reversed: rank 1 becomes rank 0 */
    int nkeep = lsize < 2 ? lsize : 2;
    CHECK_MPI(MPI_Group_incl(lg, nkeep, nkeep == 2 ? first_two : &first_two[1], &keep));
    MPI_Comm ic;
    CHECK_MPI(MPI_Comm_create(inter, keep, &ic));
    if (lrank < 2) {
        int icr, icrs, rkeep = rsize < 2 ? rsize : 2;
        CHECK_MPI(MPI_Comm_rank(ic, &icr));
        CHECK_MPI(MPI_Comm_remote_size(ic, &icrs));
        CHECK(icr == (nkeep == 2 ? 1 - lrank : 0) && icrs == rkeep, "intercomm create: rank %d remote %d", icr, icrs);
        if (icr < icrs) {
            int out = test_rank, in = -1;
            CHECK_MPI(MPI_Sendrecv(&out, 1, MPI_INT, icr, 6, &in, 1, MPI_INT, icr, 6, ic, MPI_STATUS_IGNORE));
            int peer_lrank = rkeep == 2 ? 1 - icr : 0, peer_world = 2 * peer_lrank + (1 - color);
            CHECK(in == peer_world, "intercomm create: got %d, want %d", in, peer_world);
        }
        CHECK_MPI(MPI_Comm_free(&ic));
    } else {
        CHECK(ic == MPI_COMM_NULL, "intercomm create: a non-member got a communicator");
    }
    CHECK_MPI(MPI_Group_free(&keep));
    CHECK_MPI(MPI_Group_free(&lg));

    int result;
    MPI_Comm merged;
    /* The odd group asks to go first (high = 0). */
    CHECK_MPI(MPI_Intercomm_merge(inter, color == 0, &merged));
    int ms, mr;
    CHECK_MPI(MPI_Comm_size(merged, &ms));
    CHECK_MPI(MPI_Comm_rank(merged, &mr));
    int want = color == 1 ? test_rank / 2 : odds + test_rank / 2;
    CHECK(ms == test_size && mr == want, "merged: rank %d of %d, want %d", mr, ms, want);
    ring_check(merged, 8);
    CHECK_MPI(MPI_Comm_test_inter(merged, &flag));
    CHECK(!flag, "a merged communicator is an intercommunicator");
    CHECK_MPI(MPI_Comm_compare(merged, MPI_COMM_WORLD, &result));
    CHECK(result == (test_size > 2 ? MPI_SIMILAR : MPI_SIMILAR), "compare(merged, world) = %d", result);
    CHECK_MPI(MPI_Comm_free(&merged));
    CHECK_MPI(MPI_Comm_free(&inter));
    CHECK_MPI(MPI_Comm_free(&local));
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    check_split();
    check_dup_compare_names();
    check_create();
    check_intercomm();
    test_ok();
    MPI_Finalize();
    return 0;
}
