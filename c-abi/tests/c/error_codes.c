/*
 * error_codes: returned error codes carry what went wrong.
 *
 * Under MPI_ERRORS_RETURN a failed call returns an error code whose class
 * MPI_Error_class gives and whose MPI_Error_string says what exactly was
 * wrong: a send to rank BAD_RANK names that rank, a send with a datatype not
 * committed says so. Each code is at most MPI_ERR_LASTCODE. A program's error
 * handler receives the same kind of code. After many more errors than a
 * library can be expected to remember, an old code still has its class and a
 * string. Classes and codes the program adds keep working beside them
 * (MPI_Add_error_class / _code / _string), and after MPI_Finalize a returned
 * code still has its class and string (both may be called at any time).
 *
 * Every rank runs the same checks on its own; no message is ever sent.
 */
#define TEST_NAME "error_codes"
#include "mpitest.h"

enum { BAD_RANK = 4242, MANY_ERRORS = 3000 };

static int handled_calls, handled_code;

static void remember_code(MPI_Comm *comm, int *code, ...)
{
    (void)comm;
    handled_calls++;
    handled_code = *code;
}

/* The string of `code`, checked to be a proper C string of the length given. */
static const char *string_of(int code, char *text)
{
    int len = -1;
    text[0] = '\0';
    CHECK_MPI(MPI_Error_string(code, text, &len));
    CHECK(len > 0 && len < MPI_MAX_ERROR_STRING && (int)strlen(text) == len,
          "MPI_Error_string(%d): length %d for \"%s\"", code, len, text);
    return text;
}

/* `rc`, returned by `call`, is an error of class `want` whose string contains `needle`. */
static void check_code(const char *call, int rc, int want, const char *needle)
{
    char text[MPI_MAX_ERROR_STRING];
    CHECK(rc != MPI_SUCCESS, "%s succeeded", call);
    CHECK(rc > 0 && rc <= MPI_ERR_LASTCODE, "%s returned %d, outside 1..MPI_ERR_LASTCODE", call, rc);
    CHECK(error_class_of(rc) == want, "%s returned %s; want class %d", call, error_text(rc), want);
    CHECK(strstr(string_of(rc, text), needle) != NULL, "%s: the string of code %d does not say \"%s\": \"%s\"",
          call, rc, needle, text);
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    char text[MPI_MAX_ERROR_STRING], rank_text[16];
    snprintf(rank_text, sizeof rank_text, "%d", BAD_RANK);
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));

    int x = 0;
    int bad_rank = MPI_Send(&x, 1, MPI_INT, BAD_RANK, 0, MPI_COMM_WORLD);
    check_code("MPI_Send to rank 4242", bad_rank, MPI_ERR_RANK, rank_text);

    MPI_Datatype pair;
    CHECK_MPI(MPI_Type_contiguous(2, MPI_INT, &pair));
    int pair_buf[2] = {0, 0};
    int uncommitted = MPI_Send(pair_buf, 1, pair, 0, 0, MPI_COMM_WORLD);
    check_code("MPI_Send with an uncommitted datatype", uncommitted, MPI_ERR_TYPE, "commit");
    CHECK_MPI(MPI_Type_free(&pair));
    /* The first code still says what it said. */
    check_code("MPI_Send to rank 4242 (asked again)", bad_rank, MPI_ERR_RANK, rank_text);

    /* A program's error handler gets such a code, and MPI_Comm_call_errhandler passes one on. */
    MPI_Comm dup;
    MPI_Errhandler eh;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    CHECK_MPI(MPI_Comm_create_errhandler(remember_code, &eh));
    CHECK_MPI(MPI_Comm_set_errhandler(dup, eh));
    CHECK_MPI(MPI_Errhandler_free(&eh));
    int rc = MPI_Send(&x, 1, MPI_INT, BAD_RANK, 0, dup);
    CHECK(handled_calls == 1 && handled_code == rc, "the handler saw %d calls, code %d; the call returned %d",
          handled_calls, handled_code, rc);
    check_code("MPI_Send to rank 4242 on a comm with a handler", handled_code, MPI_ERR_RANK, rank_text);
    CHECK_MPI(MPI_Comm_call_errhandler(dup, bad_rank));
    CHECK(handled_calls == 2 && handled_code == bad_rank, "MPI_Comm_call_errhandler: the handler got %d, want %d",
          handled_code, bad_rank);
    CHECK_MPI(MPI_Comm_free(&dup));

    /* Classes and codes the program adds. */
    int my_class, my_code, lastused = 0, flag = 0;
    int *lastused_p = NULL;
    CHECK_MPI(MPI_Add_error_class(&my_class));
    CHECK_MPI(MPI_Add_error_code(my_class, &my_code));
    CHECK_MPI(MPI_Add_error_string(my_code, "the widget broke"));
    CHECK(my_class != my_code && my_code != bad_rank && my_code != uncommitted,
          "added class %d and code %d collide with each other or with a returned code", my_class, my_code);
    CHECK(error_class_of(my_code) == my_class, "MPI_Error_class(added code) = %d, want %d", error_class_of(my_code),
          my_class);
    CHECK(error_class_of(my_class) == my_class, "MPI_Error_class(added class) = %d", error_class_of(my_class));
    CHECK(strcmp(string_of(my_code, text), "the widget broke") == 0, "the added code's string is \"%s\"", text);
    CHECK_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &lastused_p, &flag));
    if (flag)
        lastused = *lastused_p;
    CHECK(flag && lastused >= my_class, "MPI_LASTUSEDCODE is %d (flag %d)", lastused, flag);

    /* Many errors later: the newest names its rank, the oldest still has its class and a string. */
    int newest = MPI_SUCCESS;
    for (int i = 0; i < MANY_ERRORS; i++) {
        newest = MPI_Send(&x, 1, MPI_INT, BAD_RANK + 1 + (i % 7), 0, MPI_COMM_WORLD);
        CHECK(error_class_of(newest) == MPI_ERR_RANK, "error %d: %s", i, error_text(newest));
    }
    snprintf(rank_text, sizeof rank_text, "%d", BAD_RANK + 1 + (MANY_ERRORS - 1) % 7);
    check_code("the last of many bad sends", newest, MPI_ERR_RANK, rank_text);
    CHECK(error_class_of(bad_rank) == MPI_ERR_RANK, "an old code lost its class: %s", error_text(bad_rank));
    string_of(bad_rank, text);

    test_ok();
    CHECK_MPI(MPI_Finalize());
    int cls = -1;
    CHECK(MPI_Error_class(uncommitted, &cls) == MPI_SUCCESS && cls == MPI_ERR_TYPE,
          "after MPI_Finalize: class %d of a returned code", cls);
    string_of(uncommitted, text);
    return 0;
}
