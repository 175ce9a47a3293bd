/*
 * long_sends: rank 0 sends LONG_SENDS (environment, default 0) messages of 1 MiB to rank 1
 * with MPI_Send, each checked byte for byte. With MPI_NIC_PCAP set, the NIC traces of a run
 * with none and a run with some tell how many packets one long message costs (the harness
 * counts them: the rendezvous is an RTS and a FIN, the data moves in one copy).
 */
#define TEST_NAME "long_sends"
#include "mpitest.h"

#define LEN (1 << 20)

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    const char *env = getenv("LONG_SENDS");
    int n = env ? atoi(env) : 0;
    char *buf = malloc(LEN);
    CHECK(buf != NULL, "out of memory");
    for (int i = 0; i < n; i++) {
        if (test_rank == 0) {
            fill_pattern(buf, LEN, 500 + i);
            CHECK_MPI(MPI_Send(buf, LEN, MPI_CHAR, 1, i, MPI_COMM_WORLD));
        } else if (test_rank == 1) {
            memset(buf, 0, LEN);
            CHECK_MPI(MPI_Recv(buf, LEN, MPI_CHAR, 0, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK_PATTERN(buf, LEN, 500 + i, "message %d", i);
        }
    }
    free(buf);
    test_ok();
    MPI_Finalize();
    return 0;
}
