/*
 * session_fatal: an error of a session call under the session's MPI_ERRORS_ARE_FATAL ends
 * the job: an unknown process set. The harness checks the exit status and the message
 * (function, class, the name, how to get errors back instead). Never prints OK.
 */
#define TEST_NAME "session_fatal"
#include "../mpitest.h"

int main(void)
{
    MPI_Session s;
    CHECK_MPI(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, &s));
    MPI_Group g;
    MPI_Group_from_session_pset(s, "mpi://NOWHERE", &g);
    printf("NOT REACHED\n");
    fflush(stdout);
    return 0;
}
