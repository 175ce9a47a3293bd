/*
 * errors.c: the error classes of dynamic processes, under MPI_ERRORS_RETURN. A spawn of a
 * command that does not exist fails with MPI_ERR_SPAWN in every errcode and starts
 * nothing; a malformed port name gives MPI_ERR_PORT; a port that was closed gives
 * MPI_ERR_PORT (quickly: nobody listens); looking up an unknown service gives MPI_ERR_NAME;
 * unpublishing one gives MPI_ERR_SERVICE; closing a port never opened gives MPI_ERR_PORT.
 */
#define TEST_NAME "dynamic_errors"
#include "../mpitest.h"

#include <unistd.h>

#define EXPECT_CLASS(call, cls)                                                \
    do {                                                                       \
        int rc_ = (call);                                                      \
        CHECK(error_class_of(rc_) == (cls), #call " gave %s, expected class %d", \
              error_text(rc_), (cls));                                         \
    } while (0)

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Comm inter = MPI_COMM_WORLD;
    int codes[3] = {-1, -1, -1};
    EXPECT_CLASS(MPI_Comm_spawn("./no-such-program-here", MPI_ARGV_NULL, 3, MPI_INFO_NULL, 0,
                                MPI_COMM_WORLD, &inter, codes),
                 MPI_ERR_SPAWN);
    CHECK(inter == MPI_COMM_NULL, "a failed spawn left an intercommunicator");
    for (int i = 0; i < 3; i++)
        CHECK(codes[i] == MPI_ERR_SPAWN, "errcode %d is %d", i, codes[i]);
    /* The same with MPI_ERRCODES_IGNORE. */
    EXPECT_CLASS(MPI_Comm_spawn("no-such-program-in-path", MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0,
                                MPI_COMM_WORLD, &inter, MPI_ERRCODES_IGNORE),
                 MPI_ERR_SPAWN);

    EXPECT_CLASS(MPI_Comm_connect("not a port", MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter), MPI_ERR_PORT);
    CHECK(inter == MPI_COMM_NULL, "a failed connect left an intercommunicator");
    char port[MPI_MAX_PORT_NAME];
    CHECK_MPI(MPI_Open_port(MPI_INFO_NULL, port));
    CHECK_MPI(MPI_Close_port(port));
    EXPECT_CLASS(MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter), MPI_ERR_PORT);
    EXPECT_CLASS(MPI_Close_port(port), MPI_ERR_PORT);

    char name[64];
    snprintf(name, sizeof name, "dyn-errors-unknown-%d-%d", (int)getpid(), test_rank);
    EXPECT_CLASS(MPI_Lookup_name(name, MPI_INFO_NULL, port), MPI_ERR_NAME);
    EXPECT_CLASS(MPI_Unpublish_name(name, MPI_INFO_NULL, "mpiport1:127.0.0.1:1:00000000000000000000000000000000"),
                 MPI_ERR_SERVICE);
    /* Publishing twice is refused; after unpublishing the name is gone. */
    CHECK_MPI(MPI_Open_port(MPI_INFO_NULL, port));
    CHECK_MPI(MPI_Publish_name(name, MPI_INFO_NULL, port));
    EXPECT_CLASS(MPI_Publish_name(name, MPI_INFO_NULL, port), MPI_ERR_SERVICE);
    char found[MPI_MAX_PORT_NAME];
    CHECK_MPI(MPI_Lookup_name(name, MPI_INFO_NULL, found));
    CHECK(strcmp(found, port) == 0, "lookup gave %s", found);
    CHECK_MPI(MPI_Unpublish_name(name, MPI_INFO_NULL, port));
    EXPECT_CLASS(MPI_Lookup_name(name, MPI_INFO_NULL, found), MPI_ERR_NAME);
    CHECK_MPI(MPI_Close_port(port));
    test_ok();
    MPI_Finalize();
    return 0;
}
