/*
 * error_codes: the error classes and codes a program adds (MPI 3.1 §8.5). The attribute
 * MPI_LASTUSEDCODE is at least MPI_ERR_LASTCODE and grows with each MPI_Add_error_class and
 * MPI_Add_error_code; added numbers are above MPI_ERR_LASTCODE, each code maps to its class,
 * and MPI_Add_error_string gives them their text.
 *
 * Checked against MPICH 4.0.2, whose MPI_LASTUSEDCODE follows the added classes but not the
 * added codes (compile with -DPEER_LASTUSED_SKIPS_CODES to skip that check; the rest passes).
 */
#define TEST_NAME "error_codes"
#include "mpitest.h"

static int last_used(void)
{
    int *v = NULL, flag = 0;
    CHECK_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &v, &flag));
    CHECK(flag && v, "MPI_LASTUSEDCODE is not set");
    return *v;
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    int before = last_used();
    CHECK(before >= MPI_ERR_LASTCODE, "MPI_LASTUSEDCODE %d is below MPI_ERR_LASTCODE %d", before, MPI_ERR_LASTCODE);

    int class, code1, code2, got;
    CHECK_MPI(MPI_Add_error_class(&class));
    CHECK(class > MPI_ERR_LASTCODE && class > before, "the added class %d is not above %d", class, before);
    CHECK(last_used() == class, "MPI_LASTUSEDCODE %d after adding class %d", last_used(), class);
    CHECK_MPI(MPI_Add_error_code(class, &code1));
    CHECK_MPI(MPI_Add_error_code(class, &code2));
    CHECK(code1 > class && code2 > code1, "codes %d %d after class %d", code1, code2, class);
#ifndef PEER_LASTUSED_SKIPS_CODES
    CHECK(last_used() == code2, "MPI_LASTUSEDCODE %d after adding code %d", last_used(), code2);
#endif
    CHECK_MPI(MPI_Error_class(code2, &got));
    CHECK(got == class, "MPI_Error_class(%d) = %d, want %d", code2, got, class);
    CHECK_MPI(MPI_Error_class(class, &got));
    CHECK(got == class, "an added class is not its own class (%d)", got);

    char text[MPI_MAX_ERROR_STRING];
    int len = -1;
    CHECK_MPI(MPI_Add_error_string(code1, "the widget jammed"));
    CHECK_MPI(MPI_Error_string(code1, text, &len));
    CHECK(strcmp(text, "the widget jammed") == 0 && len == (int)strlen(text), "MPI_Error_string gave \"%s\"", text);

    /* An added code raised through an error handler comes back as it is. */
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int e = MPI_Comm_call_errhandler(MPI_COMM_WORLD, code2);
    CHECK(e == MPI_SUCCESS, "MPI_Comm_call_errhandler returned %d", e);
    test_ok();
    MPI_Finalize();
    return 0;
}
