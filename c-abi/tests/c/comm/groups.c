/*
 * groups: the group algebra on MPI_COMM_WORLD's group, checked against arrays computed
 * here: incl, excl, range_incl, range_excl, union, intersection, difference,
 * translate_ranks (with MPI_PROC_NULL and MPI_UNDEFINED), compare, rank, size, free, and
 * MPI_GROUP_EMPTY. Runs on any number of ranks (richer with 4 or more).
 */
#define TEST_NAME "groups"
#include "../mpitest.h"

/* Checks that group g holds exactly the world ranks want[0..n), in order. */
static void expect(MPI_Group g, const int *want, int n, const char *what)
{
    MPI_Group wg;
    int size;
    CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &wg));
    CHECK_MPI(MPI_Group_size(g, &size));
    CHECK(size == n, "%s: size %d, want %d", what, size, n);
    int *idx = test_malloc(sizeof(int) * (n + 1)), *got = test_malloc(sizeof(int) * (n + 1));
    for (int i = 0; i < n; i++)
        idx[i] = i;
    CHECK_MPI(MPI_Group_translate_ranks(g, n, idx, wg, got));
    for (int i = 0; i < n; i++)
        CHECK(got[i] == want[i], "%s: member %d is world rank %d, want %d", what, i, got[i], want[i]);
    int r, want_r = MPI_UNDEFINED;
    for (int i = 0; i < n; i++)
        if (want[i] == test_rank)
            want_r = i;
    CHECK_MPI(MPI_Group_rank(g, &r));
    CHECK(r == want_r, "%s: my rank %d, want %d", what, r, want_r);
    free(idx);
    free(got);
    CHECK_MPI(MPI_Group_free(&wg));
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    int n = test_size;
    MPI_Group world, a, b, c;
    CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world));
    int *all = test_malloc(sizeof(int) * n), *want = test_malloc(sizeof(int) * n * 2);
    for (int i = 0; i < n; i++)
        all[i] = i;
    expect(world, all, n, "world");

    /* incl in reverse order */
    for (int i = 0; i < n; i++)
        want[i] = n - 1 - i;
    CHECK_MPI(MPI_Group_incl(world, n, want, &a));
    expect(a, want, n, "incl reversed");
    int result;
    CHECK_MPI(MPI_Group_compare(world, a, &result));
    CHECK(result == (n > 1 ? MPI_SIMILAR : MPI_IDENT), "compare(world, reversed) = %d", result);
    CHECK_MPI(MPI_Group_compare(world, world, &result));
    CHECK(result == MPI_IDENT, "compare(world, world) = %d", result);

    /* excl of the evens leaves the odds */
    int ne = 0, no = 0;
    int *evens = test_malloc(sizeof(int) * n), *odds = test_malloc(sizeof(int) * n);
    for (int i = 0; i < n; i++) {
        if (i % 2 == 0)
            evens[ne++] = i;
        else
            odds[no++] = i;
    }
    CHECK_MPI(MPI_Group_excl(world, ne, evens, &b));
    expect(b, odds, no, "excl evens");

    /* range_incl: evens ascending, then range_excl of the same range */
    int r1[1][3] = {{0, n - 1, 2}};
    CHECK_MPI(MPI_Group_range_incl(world, 1, r1, &c));
    expect(c, evens, ne, "range_incl evens");
    MPI_Group d;
    CHECK_MPI(MPI_Group_range_excl(world, 1, r1, &d));
    expect(d, odds, no, "range_excl evens");
    CHECK_MPI(MPI_Group_compare(b, d, &result));
    CHECK(result == MPI_IDENT, "compare(excl, range_excl) = %d", result);
    CHECK_MPI(MPI_Group_free(&d));
    /* a descending range */
    int r2[1][3] = {{n - 1, 0, -1}};
    CHECK_MPI(MPI_Group_range_incl(world, 1, r2, &d));
    expect(d, want, n, "range_incl descending");
    CHECK_MPI(MPI_Group_free(&d));

    /* union(odds, reversed) = odds then the evens in reversed order */
    int k = 0;
    for (int i = 0; i < no; i++)
        want[k++] = odds[i];
    for (int i = n - 1; i >= 0; i--)
        if (i % 2 == 0)
            want[k++] = i;
    CHECK_MPI(MPI_Group_union(b, a, &d));
    expect(d, want, n, "union");
    CHECK_MPI(MPI_Group_free(&d));
    /* intersection(reversed, evens) = evens descending */
    k = 0;
    for (int i = n - 1; i >= 0; i--)
        if (i % 2 == 0)
            want[k++] = i;
    CHECK_MPI(MPI_Group_intersection(a, c, &d));
    expect(d, want, k, "intersection");
    CHECK_MPI(MPI_Group_free(&d));
    /* difference(world, evens) = odds; difference(evens, world) = empty */
    CHECK_MPI(MPI_Group_difference(world, c, &d));
    expect(d, odds, no, "difference");
    CHECK_MPI(MPI_Group_free(&d));
    CHECK_MPI(MPI_Group_difference(c, world, &d));
    CHECK(d == MPI_GROUP_EMPTY, "an empty difference is not MPI_GROUP_EMPTY");
    expect(d, want, 0, "empty difference");
    CHECK_MPI(MPI_Group_compare(d, MPI_GROUP_EMPTY, &result));
    CHECK(result == MPI_IDENT, "compare(empty, MPI_GROUP_EMPTY) = %d", result);

    /* translate_ranks: MPI_PROC_NULL passes, non-members are MPI_UNDEFINED */
    int in[3] = {0, MPI_PROC_NULL, n - 1}, out[3];
    CHECK_MPI(MPI_Group_translate_ranks(world, 3, in, c, out));
    CHECK(out[0] == 0 && out[1] == MPI_PROC_NULL, "translate: %d %d", out[0], out[1]);
    CHECK(out[2] == ((n - 1) % 2 == 0 ? (n - 1) / 2 : MPI_UNDEFINED), "translate last: %d", out[2]);

    CHECK_MPI(MPI_Group_free(&a));
    CHECK_MPI(MPI_Group_free(&b));
    CHECK_MPI(MPI_Group_free(&c));
    CHECK(c == MPI_GROUP_NULL, "MPI_Group_free did not set MPI_GROUP_NULL");
    CHECK_MPI(MPI_Group_free(&world));
    free(all);
    free(want);
    free(evens);
    free(odds);
    test_ok();
    MPI_Finalize();
    return 0;
}
