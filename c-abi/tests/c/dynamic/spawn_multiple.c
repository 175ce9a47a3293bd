/*
 * spawn_multiple.c: MPI_Comm_spawn_multiple of two commands (this program with argument
 * "first", 1 process; and with "second", 2 processes) with wdir and path info keys. The
 * three children share one MPI_COMM_WORLD in the order of the commands; MPI_APPNUM is 0 for
 * the first command's process and 1 for the others; each child reports its argument,
 * appnum and working directory to the parents' root, which checks them.
 */
#define TEST_NAME "dynamic_spawn_multiple"
#include "../mpitest.h"

#include <unistd.h>

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    MPI_Comm parent;
    CHECK_MPI(MPI_Comm_get_parent(&parent));
    if (parent == MPI_COMM_NULL) {
        char *cmds[2] = {argv[0], argv[0]};
        char *a1[] = {"first", NULL}, *a2[] = {"second", NULL};
        char **argvs[2] = {a1, a2};
        int procs[2] = {1, 2};
        MPI_Info infos[2];
        MPI_Info_create(&infos[0]);
        MPI_Info_set(infos[0], "wdir", "/tmp");
        MPI_Info_create(&infos[1]);
        MPI_Info_set(infos[1], "path", "/nonexistent-dir");
        int codes[3];
        MPI_Comm inter;
        CHECK_MPI(MPI_Comm_spawn_multiple(2, cmds, argvs, procs, infos, 0, MPI_COMM_WORLD, &inter, codes));
        for (int i = 0; i < 3; i++)
            CHECK(codes[i] == MPI_SUCCESS, "errcode %d", codes[i]);
        MPI_Info_free(&infos[0]);
        MPI_Info_free(&infos[1]);
        if (test_rank == 0) {
            for (int child = 0; child < 3; child++) {
                char report[512];
                MPI_Status st;
                CHECK_MPI(MPI_Recv(report, sizeof report, MPI_CHAR, child, 9, inter, &st));
                char arg[64], dir[400];
                int appnum = -1;
                CHECK(sscanf(report, "%63s %d %399s", arg, &appnum, dir) == 3, "report %s", report);
                CHECK(strcmp(arg, child == 0 ? "first" : "second") == 0, "child %d has argument %s", child, arg);
                CHECK(appnum == (child == 0 ? 0 : 1), "child %d has appnum %d", child, appnum);
                CHECK(strcmp(dir, "/tmp") == 0, "child %d runs in %s, not the wdir /tmp", child, dir);
            }
        }
        CHECK_MPI(MPI_Comm_disconnect(&inter));
        test_ok();
    } else {
        CHECK(test_size == 3, "the children's world has %d ranks", test_size);
        int flag = 0, *appnum = NULL;
        CHECK_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &appnum, &flag));
        char dir[400], report[512];
        CHECK(getcwd(dir, sizeof dir) != NULL, "getcwd");
        snprintf(report, sizeof report, "%s %d %s", argc > 1 ? argv[1] : "none", flag ? *appnum : -1, dir);
        CHECK_MPI(MPI_Send(report, (int)strlen(report) + 1, MPI_CHAR, 0, 9, parent));
        CHECK_MPI(MPI_Comm_disconnect(&parent));
    }
    MPI_Finalize();
    return 0;
}
