/*
 * join_waits: MPI_Comm_join from a thread under MPI_THREAD_MULTIPLE waits with the library's
 * lock let go, while another thread of the process communicates. Ranks are paired (even r
 * with r + 1); run with an even number of ranks.
 *
 * Each round the pair makes a fresh TCP connection (the even rank listens on loopback and
 * sends the port number to the odd rank over MPI_COMM_WORLD). On the even rank a thread calls
 * MPI_Comm_join at once, and waits there for the odd rank's side, while another thread must
 * first receive the odd rank's message and answer it (answering.h's pattern); the odd rank
 * asks first and only then calls MPI_Comm_join, from a thread. A build whose join held the
 * lock while it waited hangs here (the even rank's answering thread cannot receive). Each
 * joined pair then exchanges data both ways, merges, runs an allreduce, and disconnects.
 */
#define TEST_NAME "join_waits"
#include "mpitest.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>
#include "dyn_work.h"

#define ROUNDS 2
#define DELAY_MS 50
#define TAG 9
#include "answering.h"

static int fd = -1;
static MPI_Comm inter = MPI_COMM_NULL;

static void *joiner(void *arg)
{
    (void)arg;
    CHECK_MPI(MPI_Comm_join(fd, &inter));
    return NULL;
}

/* MPI_Comm_join on a thread of its own, waited for. */
static void join_on_a_thread(void)
{
    pthread_t t;
    CHECK(pthread_create(&t, NULL, joiner, NULL) == 0, "pthread_create");
    pthread_join(t, NULL);
}

/* A connected socket between the pair (the even rank listens). */
static int connected(void)
{
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = -1, port = 0;
    if (is_even) {
        int l = socket(AF_INET, SOCK_STREAM, 0);
        CHECK(bind(l, (struct sockaddr *)&a, sizeof a) == 0, "bind");
        CHECK(listen(l, 1) == 0, "listen");
        socklen_t len = sizeof a;
        getsockname(l, (struct sockaddr *)&a, &len);
        port = ntohs(a.sin_port);
        CHECK_MPI(MPI_Send(&port, 1, MPI_INT, partner, 1, MPI_COMM_WORLD));
        fd = accept(l, NULL, NULL);
        CHECK(fd >= 0, "accept");
        close(l);
    } else {
        CHECK_MPI(MPI_Recv(&port, 1, MPI_INT, partner, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        fd = socket(AF_INET, SOCK_STREAM, 0);
        a.sin_port = htons((unsigned short)port);
        CHECK(connect(fd, (struct sockaddr *)&a, sizeof a) == 0, "connect");
    }
    return fd;
}

int main(int argc, char **argv)
{
    init_multiple(&argc, &argv);
    CHECK(test_size % 2 == 0, "run with an even number of ranks");
    is_even = test_rank % 2 == 0;
    partner = is_even ? test_rank + 1 : test_rank - 1;
    for (round_no = 0; round_no < ROUNDS; round_no++) {
        fd = connected();
        beside_answer(join_on_a_thread);
        CHECK(inter != MPI_COMM_NULL, "no intercommunicator");
        int remote;
        CHECK_MPI(MPI_Comm_remote_size(inter, &remote));
        CHECK(remote == 1, "remote size %d", remote);
        /* Ids: the pair's even rank 10 + r, odd 20 + r; the even rank's group first. */
        int chan = 4 + round_no + 10 * (test_rank / 2);
        exchange(inter, (is_even ? 10 : 20) + test_rank, (is_even ? 20 : 10) + partner, chan,
                 is_even);
        CHECK_MPI(MPI_Comm_disconnect(&inter));
        close(fd);
    }
    test_ok();
    MPI_Finalize();
    return 0;
}
