/*
 * type_attr: datatype attributes (MPI_Type_create_keyval & co) and their callbacks.
 *
 *  - a keyval with counting callbacks: the copy callback (run by MPI_Type_dup) gives the
 *    duplicate value + 1 and sees the old type and the extra state; the delete callback runs
 *    on MPI_Type_delete_attr, on replacement by MPI_Type_set_attr, and on MPI_Type_free, with
 *    the type's handle and the value;
 *  - MPI_TYPE_DUP_FN copies the value, MPI_TYPE_NULL_COPY_FN does not, MPI_TYPE_NULL_DELETE_FN
 *    does nothing; MPI_DUP_FN (MPI-1, MPICH's MPIR_Dup_fn) works as a type copy callback;
 *  - predefined types carry attributes too (MPI_INT);
 *  - a keyval freed while an attribute uses it: the attribute stays readable and its delete
 *    callback still runs on MPI_Type_free;
 *  - a copy callback that fails fails MPI_Type_dup (its class is returned) and leaves no
 *    type behind; a delete callback that fails fails MPI_Type_delete_attr;
 *  - a duplicate with copied attributes works in communication (the data is checked);
 *  - errors: an invalid keyval (MPI_ERR_KEYVAL), an invalid datatype (MPI_ERR_TYPE).
 * MPICH 4.0.2 deviates once (tolerated under MPICH only): it accepts a freed keyval in
 * MPI_Type_get_attr once no attribute uses it any more.
 * Rank 0 prints "OK type_attr".
 */
#define TEST_NAME "type_attr"
#include "../mpitest.h"

static int copies = 0, deletes = 0, refuse_copy = 0, refuse_delete = 0;
static MPI_Datatype last_copied_from = MPI_DATATYPE_NULL, last_deleted_on = MPI_DATATYPE_NULL;
static intptr_t last_deleted_value = 0;
static int extra_marker = 77;

static int counting_copy(MPI_Datatype old, int keyval, void *extra, void *in, void *out,
                         int *flag)
{
    (void)keyval;
    CHECK(extra == &extra_marker, "copy callback: wrong extra state");
    copies++;
    last_copied_from = old;
    if (refuse_copy) {
        *flag = 0;
        return MPI_ERR_OTHER;
    }
    *(intptr_t *)out = (intptr_t)in + 1;
    *flag = 1;
    return MPI_SUCCESS;
}

static int counting_delete(MPI_Datatype type, int keyval, void *value, void *extra)
{
    (void)keyval;
    CHECK(extra == &extra_marker, "delete callback: wrong extra state");
    if (refuse_delete)
        return MPI_ERR_OTHER;
    deletes++;
    last_deleted_on = type;
    last_deleted_value = (intptr_t)value;
    return MPI_SUCCESS;
}

static intptr_t get(MPI_Datatype t, int key, int *flag)
{
    void *v = NULL;
    CHECK_MPI(MPI_Type_get_attr(t, key, &v, flag));
    return (intptr_t)v;
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    int flag;
    int kcount, kdup, knull, kmpi1;
    CHECK_MPI(MPI_Type_create_keyval(counting_copy, counting_delete, &kcount, &extra_marker));
    CHECK_MPI(MPI_Type_create_keyval(MPI_TYPE_DUP_FN, MPI_TYPE_NULL_DELETE_FN, &kdup, NULL));
    CHECK_MPI(MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, MPI_TYPE_NULL_DELETE_FN, &knull,
                                     NULL));
    CHECK_MPI(MPI_Type_create_keyval((MPI_Type_copy_attr_function *)MPI_DUP_FN,
                                     MPI_TYPE_NULL_DELETE_FN, &kmpi1, NULL));

    MPI_Datatype vec;
    CHECK_MPI(MPI_Type_vector(4, 2, 3, MPI_INT, &vec));
    CHECK_MPI(MPI_Type_commit(&vec));
    get(vec, kcount, &flag);
    CHECK(!flag, "an attribute nobody set is there");
    CHECK_MPI(MPI_Type_set_attr(vec, kcount, (void *)(intptr_t)100));
    CHECK_MPI(MPI_Type_set_attr(vec, kdup, (void *)(intptr_t)200));
    CHECK_MPI(MPI_Type_set_attr(vec, knull, (void *)(intptr_t)300));
    CHECK_MPI(MPI_Type_set_attr(vec, kmpi1, (void *)(intptr_t)400));
    CHECK(get(vec, kdup, &flag) == 200 && flag, "get_attr of kdup");

    /* Replacing runs the delete callback on the old value. */
    CHECK_MPI(MPI_Type_set_attr(vec, kcount, (void *)(intptr_t)101));
    CHECK(deletes == 1 && last_deleted_value == 100 && last_deleted_on == vec,
          "replacement: %d deletes, value %ld", deletes, (long)last_deleted_value);

    /* Dup: the copy callbacks decide. */
    MPI_Datatype dup;
    CHECK_MPI(MPI_Type_dup(vec, &dup));
    CHECK(copies == 1 && last_copied_from == vec, "dup: %d copies", copies);
    CHECK(get(dup, kcount, &flag) == 102 && flag, "the user copy's value");
    CHECK(get(dup, kdup, &flag) == 200 && flag, "MPI_TYPE_DUP_FN copies the value");
    get(dup, knull, &flag);
    CHECK(!flag, "MPI_TYPE_NULL_COPY_FN copied the attribute");
    CHECK(get(dup, kmpi1, &flag) == 400 && flag, "MPI_DUP_FN copies the value");
    CHECK(get(vec, kcount, &flag) == 101 && flag, "the original keeps its value");

    /* The duplicate carries data as the original does. */
    int out[12], in[12];
    for (int i = 0; i < 12; i++) {
        out[i] = test_rank * 100 + i;
        in[i] = -1;
    }
    int right = (test_rank + 1) % test_size, left = (test_rank + test_size - 1) % test_size;
    CHECK_MPI(MPI_Sendrecv(out, 1, dup, right, 0, in, 1, vec, left, 0, MPI_COMM_WORLD,
                           MPI_STATUS_IGNORE));
    for (int i = 0; i < 12; i++) {
        int picked = (i % 3) < 2;
        int want = picked ? left * 100 + i : -1;
        CHECK(in[i] == want, "element %d: %d, want %d", i, in[i], want);
    }

    /* Errors of datatype calls go to MPI_COMM_WORLD's handler. */
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));

    /* delete_attr runs the callback; a refusing callback fails the call. */
    refuse_delete = 1;
    int rc = MPI_Type_delete_attr(dup, kcount);
    CHECK(rc != MPI_SUCCESS, "a refusing delete callback did not fail delete_attr");
    refuse_delete = 0;
    CHECK(get(dup, kcount, &flag) == 102 && flag, "a refused delete removed the attribute");
    CHECK_MPI(MPI_Type_delete_attr(dup, kcount));
    CHECK(deletes == 2 && last_deleted_on == dup && last_deleted_value == 102,
          "delete_attr: %d deletes", deletes);
    get(dup, kcount, &flag);
    CHECK(!flag, "a deleted attribute is still there");

    /* A failing copy callback fails MPI_Type_dup and leaves no type. */
    refuse_copy = 1;
    MPI_Datatype failed = MPI_DATATYPE_NULL;
    rc = MPI_Type_dup(vec, &failed);
    CHECK(error_class_of(rc) == MPI_ERR_OTHER, "refused copy: %s", error_text(rc));
    refuse_copy = 0;

    /* Predefined types carry attributes. */
    CHECK_MPI(MPI_Type_set_attr(MPI_INT, kcount, (void *)(intptr_t)5));
    CHECK(get(MPI_INT, kcount, &flag) == 5 && flag, "attribute on MPI_INT");
    int before = deletes;
    CHECK_MPI(MPI_Type_delete_attr(MPI_INT, kcount));
    CHECK(deletes == before + 1 && last_deleted_on == MPI_INT, "delete on MPI_INT");

    /* Free: the remaining attributes' delete callbacks run; a freed keyval still counts. */
    CHECK_MPI(MPI_Type_set_attr(dup, kcount, (void *)(intptr_t)900));
    int kept = kcount;
    CHECK_MPI(MPI_Type_free_keyval(&kcount));
    CHECK(kcount == MPI_KEYVAL_INVALID, "free_keyval did not clear the key");
    CHECK(get(dup, kept, &flag) == 900 && flag, "an attribute of a freed keyval");
    before = deletes;
    MPI_Datatype freed = dup;
    CHECK_MPI(MPI_Type_free(&dup));
    CHECK(dup == MPI_DATATYPE_NULL, "Type_free did not clear the handle");
    CHECK(deletes == before + 1 && last_deleted_on == freed && last_deleted_value == 900,
          "free of the duplicate: %d deletes, value %ld", deletes - before,
          (long)last_deleted_value);
    before = deletes;
    MPI_Datatype vec_handle = vec;
    CHECK_MPI(MPI_Type_free(&vec));
    CHECK(deletes == before + 1 && last_deleted_on == vec_handle && last_deleted_value == 101,
          "free of the original: %d deletes", deletes - before);

    /* A new type does not inherit a freed type's attributes, even if it gets its handle. */
    MPI_Datatype fresh;
    CHECK_MPI(MPI_Type_contiguous(3, MPI_INT, &fresh));
    get(fresh, kdup, &flag);
    CHECK(!flag, "a new type has an attribute");

    /* Bad arguments. */
    void *v;
    rc = MPI_Type_get_attr(fresh, kept, &v, &flag);
    CHECK(error_class_of(rc) == MPI_ERR_KEYVAL ||
              tolerated("MPICH", "a freed keyval with no attribute left is accepted"),
          "a freed keyval: %s", error_text(rc));
    rc = MPI_Type_set_attr(fresh, MPI_KEYVAL_INVALID, NULL);
    CHECK(error_class_of(rc) == MPI_ERR_KEYVAL, "MPI_KEYVAL_INVALID: %s", error_text(rc));
    rc = MPI_Type_set_attr(MPI_DATATYPE_NULL, kdup, NULL);
    CHECK(error_class_of(rc) == MPI_ERR_TYPE, "MPI_DATATYPE_NULL: %s", error_text(rc));
    rc = MPI_Type_delete_attr(fresh, kdup);
    CHECK(rc == MPI_SUCCESS || error_class_of(rc) == MPI_ERR_KEYVAL,
          "delete of an attribute never set: %s", error_text(rc));

    CHECK_MPI(MPI_Type_free(&fresh));
    CHECK_MPI(MPI_Type_free_keyval(&kdup));
    CHECK_MPI(MPI_Type_free_keyval(&knull));
    CHECK_MPI(MPI_Type_free_keyval(&kmpi1));
    CHECK(copies == 2, "%d copy callbacks in all, want 2", copies);
    test_ok();
    MPI_Finalize();
    return 0;
}
