/*
 * peer_death: one rank (the victim) dies while every other rank is blocked in
 * an MPI call that waits for it. Never prints OK: the harness checks how each
 * survivor and the job ended.
 *
 *   peer_death VICTIM HOW CALL ERRORS [TAG]
 *     VICTIM  the rank that dies
 *     HOW     self: it raises SIGKILL itself, after printing "rank V dying";
 *             wait: it sleeps (at most 60 s) until the harness kills it;
 *             none: no rank dies here (the harness cuts a link or kills a
 *             host); VICTIM is ignored
 *     CALL    recv: survivors block in MPI_Recv from the victim (with HOW
 *             none: from rank (r + size/2) % size, on the other host when
 *             the ranks are spread evenly over two hosts in order);
 *             coll: survivors block in MPI_Allreduce on MPI_COMM_WORLD (with
 *             HOW none, only the first half of the ranks do, and the others
 *             wait in MPI_Recv as above, so that the collective cannot end)
 *     ERRORS  fatal: MPI_ERRORS_ARE_FATAL (the default); return: survivors
 *             set MPI_ERRORS_RETURN, and on the error print one line
 *             "rank R: CALL failed after T s: <error string>" to stderr and
 *             exit with status 3 (so each survivor's own report is seen);
 *             the line is also appended to FAULT_REPORT.rank<R> if that
 *             variable is set. Times are CLOCK_MONOTONIC seconds.
 *     TAG     ignored: lets the harness find this job's processes
 *
 * With ERRORS=return the survivors also ignore SIGUSR1: Hydra run with
 * -disable-auto-cleanup sends it to the processes left when one dies (MPICH's
 * notice of a failure), and its default action would end them before the
 * library's own report could be seen.
 *
 * Every rank prints "rank R pid P ready" once all are connected.
 */
#define TEST_NAME "peer_death"
#include "mpitest.h"
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

/* CLOCK_MONOTONIC in seconds: the harness reads the same clock, so it can time
 * a report against the moment it broke something, whatever the launcher does
 * with the output. */
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Appends `line` to FAULT_REPORT.rank<R>, if FAULT_REPORT is set: a report
 * that reaches the harness even when the launcher cannot forward output (a
 * host cut off from it). */
static void report(const char *line)
{
    const char *prefix = getenv("FAULT_REPORT");
    if (!prefix)
        return;
    char path[4096];
    snprintf(path, sizeof path, "%s.rank%d", prefix, test_rank);
    FILE *f = fopen(path, "a");
    if (!f)
        return;
    fputs(line, f);
    fclose(f);
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    require_ranks(2);
    if (argc < 5)
        FAIL("usage: peer_death VICTIM self|wait recv|coll fatal|return [TAG]");
    int victim = atoi(argv[1]);
    int self_kill = strcmp(argv[2], "self") == 0;
    int nobody_dies = strcmp(argv[2], "none") == 0;
    int in_recv = strcmp(argv[3], "recv") == 0;
    int errors_return = strcmp(argv[4], "return") == 0;
    CHECK(victim >= 0 && victim < test_size, "victim %d is not a rank of %d", victim, test_size);
    int source = nobody_dies ? (test_rank + test_size / 2) % test_size : victim;
    if (errors_return) {
        CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
        signal(SIGUSR1, SIG_IGN);
    }

    /* Everyone is up and connected before the death. */
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    printf("rank %d pid %ld ready\n", test_rank, (long)getpid());
    fflush(stdout);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));

    if (nobody_dies)
        victim = -1;
    if (test_rank == victim) {
        if (self_kill) {
            /* Give the survivors a moment to block in their call. */
            sleep_ms(300);
            printf("rank %d dying at %.3f\n", test_rank, now_s());
            fflush(stdout);
            raise(SIGKILL);
            FAIL("still alive after raise(SIGKILL)");
        }
        for (int i = 0; i < 600; i++)
            sleep_ms(100);
        FAIL("the harness did not kill rank %d within 60 s", test_rank);
    }

    if (nobody_dies && test_rank >= test_size / 2)
        in_recv = 1;
    const char *call = in_recv ? "MPI_Recv" : "MPI_Allreduce";
    double start = now_s();
    int rc, v = 0, sum = 0;
    if (in_recv)
        rc = MPI_Recv(&v, 1, MPI_INT, source, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    else
        rc = MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    double failed_at = now_s();
    if (rc == MPI_SUCCESS)
        FAIL("%s returned success although the job is broken", call);
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    msg[0] = '\0';
    MPI_Error_string(rc, msg, &len);
    char line[MPI_MAX_ERROR_STRING + 128];
    snprintf(line, sizeof line, "rank %d: %s failed at %.3f after %.2f s: %s\n", test_rank, call,
             failed_at, failed_at - start, msg);
    fputs(line, stderr);
    fflush(stderr);
    report(line);
    /* Linger before exiting: a survivor that exits at once is a second dead rank, and a
     * survivor that looks a moment later would see two (and may name either). */
    sleep_ms(500);
    exit(3);
}
