/* The C side of the Fortran interoperability: MPI_Status_c2f / MPI_Status_f2c (and
 * MPI_F_STATUS_IGNORE), and the handle conversions, which are macros in mpi.h and also
 * exported functions (looked up with dlsym, as a non-C caller would). Prints 'OK convert'. */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

/* The class of a returned error code (a code need not be its class). */
static int error_class_of(int code) {
    int cls = -1;
    if (MPI_Error_class(code, &cls) != MPI_SUCCESS)
        return -1;
    return cls;
}

static void check(int ok, const char *what) {
    if (!ok) {
        printf("FAIL convert: %s\n", what);
        fflush(stdout);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Status s = {0}, back = {0};
    MPI_Fint fs[MPI_F_STATUS_SIZE];
    s.MPI_SOURCE = 3;
    s.MPI_TAG = 4;
    s.MPI_ERROR = 5;
    check(MPI_Status_c2f(&s, fs) == MPI_SUCCESS, "status_c2f");
    check(fs[MPI_F_SOURCE] == 3 && fs[MPI_F_TAG] == 4 && fs[MPI_F_ERROR] == 5, "fortran status");
    check(MPI_Status_f2c(fs, &back) == MPI_SUCCESS, "status_f2c");
    check(back.MPI_SOURCE == 3 && back.MPI_TAG == 4 && back.MPI_ERROR == 5, "c status");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    check(error_class_of(MPI_Status_c2f(&s, MPI_F_STATUS_IGNORE)) == MPI_ERR_ARG, "c2f into STATUS_IGNORE");
    check(error_class_of(MPI_Status_f2c(MPI_F_STATUS_IGNORE, &back)) == MPI_ERR_ARG, "f2c from STATUS_IGNORE");

    check(MPI_Comm_c2f(MPI_COMM_WORLD) == (MPI_Fint)MPI_COMM_WORLD, "comm_c2f macro");
    check(MPI_Type_f2c(MPI_Type_c2f(MPI_INT)) == MPI_INT, "type macros");
    MPI_Comm (*comm_f2c)(MPI_Fint) = (MPI_Comm(*)(MPI_Fint))dlsym(RTLD_DEFAULT, "MPI_Comm_f2c");
    MPI_Fint (*op_c2f)(MPI_Op) = (MPI_Fint(*)(MPI_Op))dlsym(RTLD_DEFAULT, "PMPI_Op_c2f");
    check(comm_f2c && comm_f2c((MPI_Fint)MPI_COMM_SELF) == MPI_COMM_SELF, "exported MPI_Comm_f2c");
    check(op_c2f && op_c2f(MPI_SUM) == (MPI_Fint)MPI_SUM, "exported PMPI_Op_c2f");
    MPI_Finalize();
    printf("OK convert\n");
    return 0;
}
