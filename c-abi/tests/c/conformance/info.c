/*
 * info: the info calls before MPI_Init and after MPI_Finalize (MPI 4.0 §10.1 lists them
 * among the functions that may be called at any time: MPI_Info_create, _create_env, _set,
 * _get_string, _get_nkeys, _get_nthkey, _get_valuelen, _delete, _dup, _free, and MPI 3.1's
 * MPI_Info_get). An object made before MPI_Init stays valid inside MPI and after it.
 *
 * Checked against MPICH 4.0.2: passes.
 */
#define TEST_NAME "info"
#include "mpitest.h"

static void expect_value(MPI_Info info, const char *key, const char *want, const char *when)
{
    char value[64];
    int flag = 0, len = (int)sizeof value;
    if (MPI_Info_get_string(info, key, &len, value, &flag) != MPI_SUCCESS) {
        fprintf(stderr, "FAIL info: MPI_Info_get_string(%s) failed %s\n", key, when);
        exit(1);
    }
    if (!flag || strcmp(value, want) != 0) {
        fprintf(stderr, "FAIL info: %s is %s, want %s, %s\n", key, flag ? value : "(unset)", want, when);
        exit(1);
    }
}

int main(int argc, char **argv)
{
    /* Before MPI_Init: no CHECK_MPI (it would call MPI_Abort); failures exit(1). */
    MPI_Info made, copy, env;
    int nkeys = -1, flag = 0, len = 0;
    char key[MPI_MAX_INFO_KEY + 1];
    if (MPI_Info_create(&made) != MPI_SUCCESS || MPI_Info_set(made, "alpha", "one") != MPI_SUCCESS ||
        MPI_Info_set(made, "beta", "two") != MPI_SUCCESS || MPI_Info_dup(made, &copy) != MPI_SUCCESS ||
        MPI_Info_delete(copy, "beta") != MPI_SUCCESS || MPI_Info_get_nkeys(copy, &nkeys) != MPI_SUCCESS ||
        MPI_Info_get_nthkey(made, 1, key) != MPI_SUCCESS || MPI_Info_get_valuelen(made, "alpha", &len, &flag) != MPI_SUCCESS ||
        MPI_Info_create_env(argc, argv, &env) != MPI_SUCCESS) {
        fprintf(stderr, "FAIL info: an info call failed before MPI_Init\n");
        return 1;
    }
    if (nkeys != 1 || strcmp(key, "beta") != 0 || !flag || len != 3) {
        fprintf(stderr, "FAIL info: before MPI_Init: nkeys %d, key %s, valuelen %d (flag %d)\n", nkeys, key, len, flag);
        return 1;
    }
    expect_value(made, "alpha", "one", "before MPI_Init");

    test_init(&argc, &argv);
    /* Inside MPI: the objects made before are the same objects. */
    expect_value(made, "beta", "two", "inside MPI");
    CHECK_MPI(MPI_Info_get_nkeys(copy, &nkeys));
    CHECK(nkeys == 1, "the copy has %d keys inside MPI", nkeys);
    MPI_Comm dup;
    CHECK_MPI(MPI_Comm_dup_with_info(MPI_COMM_WORLD, made, &dup));
    CHECK_MPI(MPI_Comm_free(&dup));
    CHECK_MPI(MPI_Info_set(made, "gamma", "three"));
    int rank = test_rank;
    test_ok();
    MPI_Finalize();

    /* After MPI_Finalize. */
    expect_value(made, "gamma", "three", "after MPI_Finalize");
    MPI_Info later;
    if (MPI_Info_create(&later) != MPI_SUCCESS || MPI_Info_set(later, "delta", "four") != MPI_SUCCESS) {
        fprintf(stderr, "FAIL info: rank %d: MPI_Info_create/set failed after MPI_Finalize\n", rank);
        return 1;
    }
    expect_value(later, "delta", "four", "after MPI_Finalize");
    if (MPI_Info_free(&made) != MPI_SUCCESS || MPI_Info_free(&copy) != MPI_SUCCESS || MPI_Info_free(&env) != MPI_SUCCESS ||
        MPI_Info_free(&later) != MPI_SUCCESS || made != MPI_INFO_NULL || later != MPI_INFO_NULL) {
        fprintf(stderr, "FAIL info: rank %d: MPI_Info_free after MPI_Finalize\n", rank);
        return 1;
    }
    return 0;
}
