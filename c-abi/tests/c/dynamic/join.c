/*
 * join.c: MPI_Comm_join over a connected TCP socket. Rank 0 listens on a loopback port and
 * tells rank 1 the port number (over MPI_COMM_WORLD); rank 1 connects; both call
 * MPI_Comm_join and exchange data both ways over the intercommunicator, then disconnect.
 * Ranks past 1 only take part in the world's collectives.
 */
#define TEST_NAME "dynamic_join"
#include "../mpitest.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    require_ranks(2);
    int port = 0, fd = -1, listener = -1;
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (test_rank == 0) {
        listener = socket(AF_INET, SOCK_STREAM, 0);
        CHECK(bind(listener, (struct sockaddr *)&a, sizeof a) == 0, "bind");
        CHECK(listen(listener, 1) == 0, "listen");
        socklen_t len = sizeof a;
        getsockname(listener, (struct sockaddr *)&a, &len);
        port = ntohs(a.sin_port);
    }
    CHECK_MPI(MPI_Bcast(&port, 1, MPI_INT, 0, MPI_COMM_WORLD));
    if (test_rank == 0) {
        fd = accept(listener, NULL, NULL);
        CHECK(fd >= 0, "accept");
    } else if (test_rank == 1) {
        fd = socket(AF_INET, SOCK_STREAM, 0);
        a.sin_port = htons((unsigned short)port);
        CHECK(connect(fd, (struct sockaddr *)&a, sizeof a) == 0, "connect");
    }
    if (test_rank <= 1) {
        MPI_Comm inter;
        CHECK_MPI(MPI_Comm_join(fd, &inter));
        int remote;
        MPI_Comm_remote_size(inter, &remote);
        CHECK(remote == 1, "remote size %d", remote);
        int n = 300000;
        unsigned char *out = test_malloc((size_t)n), *in = test_malloc((size_t)n);
        fill_pattern(out, (size_t)n, message_seed(test_rank, 1 - test_rank, 0));
        CHECK_MPI(MPI_Sendrecv(out, n, MPI_BYTE, 0, 5, in, n, MPI_BYTE, 0, 5, inter, MPI_STATUS_IGNORE));
        CHECK_PATTERN(in, (size_t)n, message_seed(1 - test_rank, test_rank, 0), "joined data");
        free(out);
        free(in);
        CHECK_MPI(MPI_Comm_disconnect(&inter));
        close(fd);
        if (listener >= 0)
            close(listener);
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    test_ok();
    MPI_Finalize();
    return 0;
}
