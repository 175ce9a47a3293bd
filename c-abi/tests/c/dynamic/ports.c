/*
 * ports.c: MPI_Open_port / MPI_Comm_accept / MPI_Comm_connect between two separately
 * started jobs, which find each other through the name service. Run as
 *   mpirun -n A ports server SERVICE   and   mpirun -n B ports client SERVICE
 * The server publishes SERVICE, accepts, exchanges data both ways with every client
 * process, merges, disconnects, unpublishes and closes the port. The client looks the name
 * up (bounded retries while the server starts), first knocks on the port as a stranger with
 * a wrong secret (refused), then connects.
 */
#define TEST_NAME "dynamic_ports"
#include "../mpitest.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

static void exchange(MPI_Comm inter, int server)
{
    int rank, remote;
    MPI_Comm_rank(inter, &rank);
    MPI_Comm_remote_size(inter, &remote);
    int n = 100000;
    unsigned char *out = test_malloc((size_t)n), *in = test_malloc((size_t)n);
    for (int peer = 0; peer < remote; peer++) {
        int me_id = (server ? 10 : 20) + rank, peer_id = (server ? 20 : 10) + peer;
        fill_pattern(out, (size_t)n, message_seed(me_id, peer_id, 1));
        CHECK_MPI(MPI_Sendrecv(out, n, MPI_BYTE, peer, 3, in, n, MPI_BYTE, peer, 3, inter, MPI_STATUS_IGNORE));
        CHECK_PATTERN(in, (size_t)n, message_seed(peer_id, me_id, 1), "data from remote %d", peer);
    }
    free(out);
    free(in);
    MPI_Comm merged;
    CHECK_MPI(MPI_Intercomm_merge(inter, server ? 0 : 1, &merged));
    int msize, one = 1, sum = 0;
    MPI_Comm_size(merged, &msize);
    CHECK_MPI(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, merged));
    CHECK(sum == msize, "merged allreduce %d of %d", sum, msize);
    CHECK_MPI(MPI_Comm_free(&merged));
}

/* Connects to the port's address and presents a wrong secret: the port must refuse. */
static void knock_as_stranger(const char *port)
{
    char ip[64];
    unsigned p = 0;
    CHECK(sscanf(port, "mpiport1:%63[^:]:%u:", ip, &p) == 2, "port name %s", port);
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((unsigned short)p);
    inet_pton(AF_INET, ip, &a.sin_addr);
    CHECK(connect(s, (struct sockaddr *)&a, sizeof a) == 0, "stranger cannot reach the port");
    const char *hello = "MPIDYN1 00000000000000000000000000000000 1 0\n";
    CHECK(write(s, hello, strlen(hello)) == (ssize_t)strlen(hello), "stranger write");
    char reply[128] = {0};
    ssize_t got = read(s, reply, sizeof reply - 1);
    CHECK(got > 0 && strncmp(reply, "refused", 7) == 0, "a stranger was not refused: %s", reply);
    close(s);
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    CHECK(argc == 3, "usage: ports server|client SERVICE");
    int server = strcmp(argv[1], "server") == 0;
    const char *service = argv[2];
    char port[MPI_MAX_PORT_NAME];
    MPI_Comm inter;
    if (server) {
        if (test_rank == 0) {
            CHECK_MPI(MPI_Open_port(MPI_INFO_NULL, port));
            CHECK_MPI(MPI_Publish_name(service, MPI_INFO_NULL, port));
        }
        CHECK_MPI(MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter));
        exchange(inter, 1);
        CHECK_MPI(MPI_Comm_disconnect(&inter));
        if (test_rank == 0) {
            CHECK_MPI(MPI_Unpublish_name(service, MPI_INFO_NULL, port));
            CHECK_MPI(MPI_Close_port(port));
        }
    } else {
        if (test_rank == 0) {
            MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
            int rc = MPI_ERR_NAME;
            for (int i = 0; i < 400 && rc != MPI_SUCCESS; i++) {
                rc = MPI_Lookup_name(service, MPI_INFO_NULL, port);
                if (rc != MPI_SUCCESS) {
                    CHECK(error_class_of(rc) == MPI_ERR_NAME, "lookup: %s", error_text(rc));
                    sleep_ms(25);
                }
            }
            CHECK(rc == MPI_SUCCESS, "the service was never published");
            MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
            knock_as_stranger(port);
        }
        CHECK_MPI(MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter));
        exchange(inter, 0);
        CHECK_MPI(MPI_Comm_disconnect(&inter));
    }
    test_ok();
    MPI_Finalize();
    return 0;
}
