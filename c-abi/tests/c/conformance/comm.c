/*
 * comm: communicator behaviours the standard fixes (issue 17).
 *
 *  - A communicator-making call that fails after its argument checks returns MPI_COMM_NULL
 *    in its output (MPICH does; the program must not find a stale handle there): a copy
 *    callback that refuses makes MPI_Comm_dup and MPI_Comm_dup_with_info fail with the
 *    callback's error, and the attribute copy is undone.
 *  - A keyval freed while attributes use it stays valid for them (MPI 3.1 §6.7.2): getting,
 *    copying (MPI_Comm_dup runs its copy callback) and deleting them work, and the delete
 *    callback runs for each.
 *  - MPI_Comm_get_info returns the hints the library keeps, not keys it ignores (MPI 4.0
 *    §7.4.4): MPI 4.0's four assertions, each with its value ("false" unless set).
 *
 * Checked against MPICH 4.0.2: passes.
 */
#define TEST_NAME "comm"
#include "mpitest.h"

static int copy_refuses(MPI_Comm c, int key, void *extra, void *in, void *out, int *flag)
{
    (void)c, (void)key, (void)extra, (void)in, (void)out;
    *flag = 0;
    return MPI_ERR_OTHER;
}

static int deletes = 0;
static int count_deletes(MPI_Comm c, int key, void *value, void *extra)
{
    (void)c, (void)key, (void)value, (void)extra;
    deletes++;
    return MPI_SUCCESS;
}

static void failed_dup_gives_comm_null(void)
{
    int key;
    CHECK_MPI(MPI_Comm_create_keyval(copy_refuses, MPI_COMM_NULL_DELETE_FN, &key, NULL));
    MPI_Comm c;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    CHECK_MPI(MPI_Comm_set_attr(c, key, (void *)1));
    CHECK_MPI(MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN));

    MPI_Comm d = MPI_COMM_WORLD;
    int e = MPI_Comm_dup(c, &d);
    CHECK(error_class_of(e) == MPI_ERR_OTHER, "MPI_Comm_dup with a refusing copy callback returned %s", error_text(e));
    CHECK(d == MPI_COMM_NULL, "a failed MPI_Comm_dup left its output set");

    MPI_Info info;
    CHECK_MPI(MPI_Info_create(&info));
    d = MPI_COMM_WORLD;
    e = MPI_Comm_dup_with_info(c, info, &d);
    CHECK(error_class_of(e) == MPI_ERR_OTHER, "MPI_Comm_dup_with_info returned %s", error_text(e));
    CHECK(d == MPI_COMM_NULL, "a failed MPI_Comm_dup_with_info left its output set");
    CHECK_MPI(MPI_Info_free(&info));

    /* The communicator is intact and usable. */
    int sum = 0, one = 1;
    CHECK_MPI(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, c));
    CHECK(sum == test_size, "Allreduce after the failed dups: %d", sum);
    CHECK_MPI(MPI_Comm_delete_attr(c, key));
    CHECK_MPI(MPI_Comm_free_keyval(&key));
    CHECK_MPI(MPI_Comm_free(&c));
}

static void freed_keyval_stays_valid_for_its_attributes(void)
{
    int key, flag = 0;
    void *v = NULL;
    CHECK_MPI(MPI_Comm_create_keyval(MPI_COMM_DUP_FN, count_deletes, &key, NULL));
    int held = key;
    MPI_Comm c, d;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    CHECK_MPI(MPI_Comm_set_attr(c, held, (void *)42));
    CHECK_MPI(MPI_Comm_free_keyval(&key));
    CHECK(key == MPI_KEYVAL_INVALID, "MPI_Comm_free_keyval did not set MPI_KEYVAL_INVALID");
    CHECK_MPI(MPI_Comm_get_attr(c, held, &v, &flag));
    CHECK(flag && v == (void *)42, "the attribute of a freed keyval is gone (flag %d)", flag);
    CHECK_MPI(MPI_Comm_dup(c, &d));
    CHECK_MPI(MPI_Comm_get_attr(d, held, &v, &flag));
    CHECK(flag && v == (void *)42, "the copy of an attribute of a freed keyval is missing");
    CHECK_MPI(MPI_Comm_delete_attr(c, held));
    CHECK(deletes == 1, "delete callback ran %d times", deletes);
    CHECK_MPI(MPI_Comm_free(&d));
    CHECK(deletes == 2, "freeing the copy ran the delete callback %d times in all", deletes);
    CHECK_MPI(MPI_Comm_free(&c));
}

static int value_of(MPI_Info info, const char *key, char *value, int len)
{
    int flag = 0;
    CHECK_MPI(MPI_Info_get(info, key, len - 1, value, &flag));
    return flag;
}

static void comm_info_holds_only_kept_hints(void)
{
    MPI_Info in, used;
    MPI_Comm c;
    char value[64];
    CHECK_MPI(MPI_Info_create(&in));
    CHECK_MPI(MPI_Info_set(in, "no_such_hint_anywhere", "1"));
    CHECK_MPI(MPI_Info_set(in, "mpi_assert_no_any_tag", "true"));
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    CHECK_MPI(MPI_Comm_set_info(c, in));
    CHECK_MPI(MPI_Comm_get_info(c, &used));
    CHECK(!value_of(used, "no_such_hint_anywhere", value, sizeof value), "MPI_Comm_get_info returned an ignored key");
    CHECK(value_of(used, "mpi_assert_no_any_tag", value, sizeof value) && strcmp(value, "true") == 0,
          "mpi_assert_no_any_tag is not true in MPI_Comm_get_info");
    CHECK(value_of(used, "mpi_assert_exact_length", value, sizeof value) && strcmp(value, "false") == 0,
          "mpi_assert_exact_length is not reported false");
    CHECK_MPI(MPI_Info_free(&used));

    MPI_Comm d;
    CHECK_MPI(MPI_Comm_dup_with_info(MPI_COMM_WORLD, in, &d));
    CHECK_MPI(MPI_Comm_get_info(d, &used));
    CHECK(!value_of(used, "no_such_hint_anywhere", value, sizeof value), "MPI_Comm_dup_with_info kept an ignored key");
    CHECK(value_of(used, "mpi_assert_no_any_tag", value, sizeof value) && strcmp(value, "true") == 0,
          "MPI_Comm_dup_with_info lost mpi_assert_no_any_tag");
    CHECK_MPI(MPI_Info_free(&used));
    CHECK_MPI(MPI_Info_free(&in));
    CHECK_MPI(MPI_Comm_free(&d));
    CHECK_MPI(MPI_Comm_free(&c));
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    failed_dup_gives_comm_null();
    freed_keyval_stays_valid_for_its_attributes();
    comm_info_holds_only_kept_hints();
    test_ok();
    MPI_Finalize();
    return 0;
}
