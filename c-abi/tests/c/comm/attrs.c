/*
 * attrs: attributes, info objects, memory and error handlers.
 * Keyvals with copy and delete callbacks (counted and checked: Comm_dup copies through the
 * copy callback, MPI_COMM_NULL_COPY_FN does not copy, MPI_COMM_DUP_FN copies the value,
 * replacing or deleting an attribute and freeing the communicator run the delete callback),
 * the MPI-1 names, the predefined attributes, freed keyvals still serving their attributes;
 * info objects (set, get, get_valuelen, get_nkeys, get_nthkey, delete, dup, free,
 * MPI_INFO_ENV), Comm_set_info/get_info; Alloc_mem/Free_mem; a user error handler created
 * with Comm_create_errhandler, inherited by a dup and called with the error code. Finally
 * MPI_Finalize must delete the attributes of MPI_COMM_SELF (checked after it returns).
 */
#define TEST_NAME "attrs"
#include "../mpitest.h"

static int copies, deletes, self_deleted;
static int extra_marker;

static int copy_fn(MPI_Comm oldcomm, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)oldcomm;
    (void)keyval;
    if (extra != &extra_marker)
        FAIL("copy callback: wrong extra_state");
    copies++;
    *(void **)out = (char *)in + 1; /* the copy holds value + 1 */
    *flag = 1;
    return MPI_SUCCESS;
}

static int delete_fn(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)comm;
    (void)keyval;
    (void)value;
    if (extra != &extra_marker)
        FAIL("delete callback: wrong extra_state");
    deletes++;
    return MPI_SUCCESS;
}

static int self_delete_fn(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)keyval;
    (void)extra;
    if (comm == MPI_COMM_SELF && value == (void *)&self_deleted)
        self_deleted = 1;
    return MPI_SUCCESS;
}

static int failing_copy(MPI_Comm oldcomm, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)oldcomm;
    (void)keyval;
    (void)extra;
    (void)in;
    (void)out;
    (void)flag;
    return MPI_ERR_OTHER;
}

static int handled_code, handled_calls;
static MPI_Comm handled_comm;

static void my_handler(MPI_Comm *comm, int *code, ...)
{
    handled_comm = *comm;
    handled_code = *code;
    handled_calls++;
}

static void check_attributes(void)
{
    int key, flag;
    void *v;
    CHECK_MPI(MPI_Comm_create_keyval(copy_fn, delete_fn, &key, &extra_marker));
    MPI_Comm a;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &a));
    CHECK_MPI(MPI_Comm_get_attr(a, key, &v, &flag));
    CHECK(!flag, "an unset attribute has flag set");
    CHECK_MPI(MPI_Comm_set_attr(a, key, (void *)(intptr_t)100));
    CHECK_MPI(MPI_Comm_get_attr(a, key, &v, &flag));
    CHECK(flag && v == (void *)(intptr_t)100, "get_attr: flag %d value %p", flag, v);
    /* replacing runs the delete callback on the old value */
    CHECK_MPI(MPI_Comm_set_attr(a, key, (void *)(intptr_t)200));
    CHECK(deletes == 1, "replacing: %d deletes", deletes);

    MPI_Comm b;
    CHECK_MPI(MPI_Comm_dup(a, &b));
    CHECK(copies == 1, "dup: %d copies", copies);
    CHECK_MPI(MPI_Comm_get_attr(b, key, &v, &flag));
    CHECK(flag && v == (void *)(intptr_t)201, "dup's attribute: flag %d value %p", flag, v);

    /* NULL copy: not copied; DUP_FN: same value */
    int knull, kdup;
    CHECK_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &knull, NULL));
    CHECK_MPI(MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &kdup, NULL));
    CHECK_MPI(MPI_Comm_set_attr(b, knull, (void *)(intptr_t)5));
    CHECK_MPI(MPI_Comm_set_attr(b, kdup, (void *)(intptr_t)6));
    MPI_Comm c;
    CHECK_MPI(MPI_Comm_dup(b, &c));
    CHECK_MPI(MPI_Comm_get_attr(c, knull, &v, &flag));
    CHECK(!flag, "MPI_COMM_NULL_COPY_FN copied the attribute");
    CHECK_MPI(MPI_Comm_get_attr(c, kdup, &v, &flag));
    CHECK(flag && v == (void *)(intptr_t)6, "MPI_COMM_DUP_FN: flag %d value %p", flag, v);
    CHECK_MPI(MPI_Comm_get_attr(c, key, &v, &flag));
    CHECK(flag && v == (void *)(intptr_t)202, "second dup: value %p", v);
    CHECK(copies == 2, "copies %d", copies);

    /* delete_attr runs the callback; freeing runs it for what is left */
    CHECK_MPI(MPI_Comm_delete_attr(c, key));
    CHECK(deletes == 2, "delete_attr: %d deletes", deletes);
    CHECK_MPI(MPI_Comm_get_attr(c, key, &v, &flag));
    CHECK(!flag, "a deleted attribute is still there");
    CHECK_MPI(MPI_Comm_free(&c));
    CHECK(deletes == 2, "freeing a communicator without the attribute ran its delete callback");
    /* a freed keyval still serves the attributes that use it */
    CHECK_MPI(MPI_Comm_free_keyval(&key));
    CHECK(key == MPI_KEYVAL_INVALID, "free_keyval did not set MPI_KEYVAL_INVALID");
    CHECK_MPI(MPI_Comm_free(&b));
    CHECK(deletes == 3, "freeing: %d deletes", deletes);
    CHECK_MPI(MPI_Comm_free(&a));
    CHECK(deletes == 4, "freeing: %d deletes", deletes);
    CHECK_MPI(MPI_Comm_free_keyval(&knull));
    CHECK_MPI(MPI_Comm_free_keyval(&kdup));

    /* a failing copy callback fails the dup */
    int kfail;
    CHECK_MPI(MPI_Comm_create_keyval(failing_copy, MPI_COMM_NULL_DELETE_FN, &kfail, NULL));
    CHECK_MPI(MPI_Comm_set_attr(MPI_COMM_SELF, kfail, NULL));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    MPI_Comm bad;
    int rc = MPI_Comm_dup(MPI_COMM_SELF, &bad);
    CHECK(rc != MPI_SUCCESS, "a dup whose copy callback failed succeeded");
    CHECK_MPI(MPI_Comm_delete_attr(MPI_COMM_SELF, kfail));
    CHECK_MPI(MPI_Comm_free_keyval(&kfail));

    /* MPI-1 names */
    int k1;
    CHECK_MPI(MPI_Keyval_create(MPI_NULL_COPY_FN, MPI_NULL_DELETE_FN, &k1, NULL));
    CHECK_MPI(MPI_Attr_put(MPI_COMM_WORLD, k1, (void *)(intptr_t)9));
    CHECK_MPI(MPI_Attr_get(MPI_COMM_WORLD, k1, &v, &flag));
    CHECK(flag && v == (void *)(intptr_t)9, "Attr_get");
    CHECK_MPI(MPI_Attr_delete(MPI_COMM_WORLD, k1));
    CHECK_MPI(MPI_Keyval_free(&k1));

    /* predefined attributes */
    int *p;
    CHECK_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &p, &flag));
    CHECK(flag && *p >= 32767, "MPI_TAG_UB = %d", *p);
    CHECK_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &p, &flag));
    CHECK(flag && (*p == 0 || *p == 1), "MPI_WTIME_IS_GLOBAL = %d", *p);
    CHECK_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_HOST, &p, &flag));
    CHECK(flag, "MPI_HOST not set");
    CHECK_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_IO, &p, &flag));
    CHECK(flag, "MPI_IO not set");
    CHECK_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &p, &flag));
    CHECK(!flag || *p >= test_size, "MPI_UNIVERSE_SIZE = %d", *p);
    CHECK_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &p, &flag));
    CHECK(!flag || *p == 0, "MPI_APPNUM = %d", *p);

    /* an attribute on MPI_COMM_SELF, which MPI_Finalize must delete */
    int kself;
    CHECK_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, self_delete_fn, &kself, NULL));
    CHECK_MPI(MPI_Comm_set_attr(MPI_COMM_SELF, kself, &self_deleted));
    CHECK_MPI(MPI_Comm_free_keyval(&kself));
}

static void check_info(void)
{
    MPI_Info info, copy;
    char value[64], key[MPI_MAX_INFO_KEY + 1];
    int flag, len, nkeys;
    CHECK_MPI(MPI_Info_create(&info));
    CHECK_MPI(MPI_Info_set(info, "alpha", "one"));
    CHECK_MPI(MPI_Info_set(info, "beta", "two and more"));
    CHECK_MPI(MPI_Info_set(info, "alpha", "uno"));
    CHECK_MPI(MPI_Info_get_nkeys(info, &nkeys));
    CHECK(nkeys == 2, "nkeys %d", nkeys);
    CHECK_MPI(MPI_Info_get_nthkey(info, 0, key));
    CHECK(strcmp(key, "alpha") == 0, "key 0 is '%s'", key);
    CHECK_MPI(MPI_Info_get_nthkey(info, 1, key));
    CHECK(strcmp(key, "beta") == 0, "key 1 is '%s'", key);
    CHECK_MPI(MPI_Info_get(info, "alpha", sizeof value - 1, value, &flag));
    CHECK(flag && strcmp(value, "uno") == 0, "alpha = '%s'", value);
    CHECK_MPI(MPI_Info_get(info, "beta", sizeof value - 1, value, &flag));
    CHECK(flag && strcmp(value, "two and more") == 0, "beta = '%s'", value);
    CHECK_MPI(MPI_Info_get_valuelen(info, "beta", &len, &flag));
    CHECK(flag && len == 12, "valuelen %d", len);
    CHECK_MPI(MPI_Info_get(info, "gamma", sizeof value - 1, value, &flag));
    CHECK(!flag, "a missing key was found");
    CHECK_MPI(MPI_Info_dup(info, &copy));
    CHECK_MPI(MPI_Info_delete(info, "alpha"));
    CHECK_MPI(MPI_Info_get_nkeys(info, &nkeys));
    CHECK(nkeys == 1, "after delete: nkeys %d", nkeys);
    CHECK_MPI(MPI_Info_get(copy, "alpha", sizeof value - 1, value, &flag));
    CHECK(flag && strcmp(value, "uno") == 0, "the dup lost alpha");

    /* hints on a communicator */
    MPI_Comm d;
    MPI_Info used;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &d));
    CHECK_MPI(MPI_Comm_set_info(d, copy));
    CHECK_MPI(MPI_Comm_get_info(d, &used));
    /* Which hints come back is the library's choice (MPICH keeps only those it knows). */
    CHECK_MPI(MPI_Info_get_nkeys(used, &nkeys));
    CHECK(nkeys >= 0, "Comm_get_info: %d keys", nkeys);
    CHECK_MPI(MPI_Info_free(&used));
    CHECK_MPI(MPI_Comm_free(&d));

    CHECK_MPI(MPI_Info_free(&info));
    CHECK_MPI(MPI_Info_free(&copy));
    CHECK(info == MPI_INFO_NULL && copy == MPI_INFO_NULL, "Info_free did not set MPI_INFO_NULL");

    CHECK_MPI(MPI_Info_get_nkeys(MPI_INFO_ENV, &nkeys));
    CHECK(nkeys >= 0, "MPI_INFO_ENV has %d keys", nkeys);
    MPI_Info env;
    int envkeys;
    CHECK_MPI(MPI_Info_create_env(0, NULL, &env));
    CHECK_MPI(MPI_Info_get_nkeys(env, &envkeys));
    CHECK(envkeys >= 0, "Info_create_env has %d keys", envkeys);
    CHECK_MPI(MPI_Info_free(&env));
}

static void check_memory_and_handlers(void)
{
    double *buf;
    CHECK_MPI(MPI_Alloc_mem(1000 * sizeof(double), MPI_INFO_NULL, &buf));
    for (int i = 0; i < 1000; i++)
        buf[i] = i;
    if (test_size >= 2 && test_rank < 2) {
        int peer = 1 - test_rank;
        double *in;
        CHECK_MPI(MPI_Alloc_mem(1000 * sizeof(double), MPI_INFO_NULL, &in));
        CHECK_MPI(MPI_Sendrecv(buf, 1000, MPI_DOUBLE, peer, 0, in, 1000, MPI_DOUBLE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        for (int i = 0; i < 1000; i++)
            CHECK(in[i] == i, "Alloc_mem buffer: in[%d] = %g", i, in[i]);
        CHECK_MPI(MPI_Free_mem(in));
    }
    CHECK_MPI(MPI_Free_mem(buf));

    MPI_Errhandler eh, got, old_style;
    CHECK_MPI(MPI_Errhandler_create(my_handler, &old_style));
    CHECK_MPI(MPI_Errhandler_free(&old_style));
    CHECK_MPI(MPI_Comm_create_errhandler(my_handler, &eh));
    MPI_Comm d;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &d));
    CHECK_MPI(MPI_Comm_set_errhandler(d, eh));
    CHECK_MPI(MPI_Errhandler_free(&eh));
    CHECK(eh == MPI_ERRHANDLER_NULL, "Errhandler_free did not set MPI_ERRHANDLER_NULL");
    MPI_Comm d2;
    CHECK_MPI(MPI_Comm_dup(d, &d2));
    int x = 0;
    int rc = MPI_Send(&x, 1, MPI_INT, test_size + 5, 0, d2);
    CHECK(error_class_of(rc) == MPI_ERR_RANK, "the handler's call returned %s", error_text(rc));
    CHECK(handled_calls == 1 && handled_code == rc && handled_comm == d2,
          "user handler: %d calls, code %d", handled_calls, handled_code);
    CHECK_MPI(MPI_Comm_call_errhandler(d2, MPI_ERR_OTHER));
    CHECK(handled_calls == 2 && handled_code == MPI_ERR_OTHER, "Comm_call_errhandler: code %d", handled_code);
    CHECK_MPI(MPI_Comm_get_errhandler(d2, &got));
    CHECK(got != MPI_ERRORS_ARE_FATAL && got != MPI_ERRORS_RETURN, "the dup did not inherit the handler");
    CHECK_MPI(MPI_Errhandler_free(&got));
    CHECK_MPI(MPI_Comm_free(&d2));
    CHECK_MPI(MPI_Comm_free(&d));
}

static void check_added_errors(void)
{
    int cls, code, got, len, flag, *last;
    char text[MPI_MAX_ERROR_STRING];
    CHECK_MPI(MPI_Add_error_class(&cls));
    CHECK_MPI(MPI_Add_error_code(cls, &code));
    CHECK(code != cls, "an added code equals its class");
    CHECK_MPI(MPI_Add_error_string(code, "the frobnicator jammed"));
    CHECK_MPI(MPI_Error_class(code, &got));
    CHECK(got == cls, "Error_class(added code) = %d, want %d", got, cls);
    CHECK_MPI(MPI_Error_class(cls, &got));
    CHECK(got == cls, "Error_class(added class) = %d", got);
    CHECK_MPI(MPI_Error_string(code, text, &len));
    CHECK(strcmp(text, "the frobnicator jammed") == 0 && len == 22, "Error_string = '%s'", text);
    CHECK_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &last, &flag));
    CHECK(flag && *last >= cls, "MPI_LASTUSEDCODE = %d, class %d", *last, cls);
    /* raised through an error handler, the added code comes back */
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Comm_call_errhandler(MPI_COMM_WORLD, code));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    check_added_errors();
    check_attributes();
    check_info();
    check_memory_and_handlers();
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Finalize());
    if (!self_deleted) {
        fprintf(stderr, "FAIL attrs rank %d: MPI_Finalize did not delete the attribute of MPI_COMM_SELF\n", test_rank);
        return 1;
    }
    if (test_rank == 0)
        printf("OK %s\n", TEST_NAME);
    return 0;
}
