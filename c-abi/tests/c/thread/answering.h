/*
 * answering.h: the pattern the *_waits.c programs share. Ranks are paired (even rank r with
 * r + 1). On the even rank one thread makes the call under test while another thread first
 * sleeps DELAY_MS (so that the call is inside its wait), then receives the partner's message
 * and answers it; the odd rank first asks (sends, then receives the answer), then makes its
 * own call, which the even rank's call waits for. If the call under test held the library's
 * lock while it waited, the answering thread could not make its MPI_Recv and the job would
 * hang. Include after mpitest.h and <pthread.h>, with TAG and DELAY_MS defined; the program
 * sets `partner`, `is_even` and `round_no`.
 */
static int partner, is_even, round_no;

/* What `rank` sends in round `round_no`. */
static int asked_value(int rank) { return 10000 * round_no + rank; }

/* The even rank's answering thread. */
static void *answer(void *arg)
{
    (void)arg;
    sleep_ms(DELAY_MS);
    int x = -1;
    CHECK_MPI(MPI_Recv(&x, 1, MPI_INT, partner, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK(x == asked_value(partner), "round %d: got %d from %d", round_no, x, partner);
    x += 1;
    CHECK_MPI(MPI_Send(&x, 1, MPI_INT, partner, TAG, MPI_COMM_WORLD));
    return NULL;
}

/* The odd rank's side of the exchange, before it makes its own call. */
static void ask(void)
{
    int x = asked_value(test_rank), y = -1;
    CHECK_MPI(MPI_Send(&x, 1, MPI_INT, partner, TAG, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Recv(&y, 1, MPI_INT, partner, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK(y == x + 1, "round %d: answer %d, expected %d", round_no, y, x + 1);
}

/* On the even rank: `call` on this thread while another answers the partner; on the odd
 * rank: ask, then `call`. */
static void beside_answer(void (*call)(void))
{
    if (is_even) {
        pthread_t t;
        CHECK(pthread_create(&t, NULL, answer, NULL) == 0, "pthread_create");
        call();
        pthread_join(t, NULL);
    } else {
        ask();
        call();
    }
}
