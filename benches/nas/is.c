/* is.c: the NAS "Integer Sort" kernel, written from the NPB specification.
 *
 * N keys in [0, MAX_KEY) are made from the specification's generator (seed 314159265,
 * multiplier 5^13): key j = floor(MAX_KEY / 4 * (r[4j+1] + r[4j+2] + r[4j+3] + r[4j+4])).
 * Each of the 10 timed iterations i first sets key[i] = i and key[i + 10] = MAX_KEY - i, then
 * ranks all keys (the rank of a key = how many keys are smaller than it).
 *
 * The parallel ranking is a bucket sort:
 *   1. every rank counts its keys in 2^10 buckets (the top bits of a key) and one
 *      MPI_Allreduce gives the global bucket sizes;
 *   2. from them every rank computes the same split of the buckets into np contiguous
 *      ranges holding about N/np keys each (so rank p owns a range of key values);
 *   3. each rank groups its keys by bucket, MPI_Alltoall exchanges how many go where and
 *      MPI_Alltoallv moves the keys to the rank that owns their value;
 *   4. each rank counts its received keys per value and takes prefix sums: the rank of value
 *      v is the number of keys in lower ranges (known from the bucket sizes) plus the keys of
 *      this rank below v.
 * Partial verification (in every timed iteration): the ranks of the five keys at the
 * specification's test positions equal its table, shifted by the iteration as it prescribes.
 * Full verification (after timing): the keys, placed at their computed ranks, are in order
 * within each rank and across neighbouring ranks, and none were lost. Mop/s = 10 N / time /
 * 10^6, with the slowest rank's time for the 10 iterations.
 */
#include "nas.h"

#define IS_ITERATIONS 10
#define IS_BUCKETS_LOG2 10
#define IS_BUCKETS (1 << IS_BUCKETS_LOG2)
#define IS_TESTS 5

struct is_class {
    char cls;
    int keys_log2, max_key_log2;
    long test_index[IS_TESTS];
    long test_rank[IS_TESTS];
};

static const struct is_class IS_CLASSES[] = {
    {'S', 16, 11, {48427, 17148, 23627, 62548, 4431}, {0, 18, 346, 64917, 65463}},
    {'W', 20, 16, {357773, 934767, 875723, 898999, 404505}, {1249, 11698, 1039987, 1043896, 1048018}},
    {'A', 23, 19, {2112377, 662041, 5336171, 3642833, 4250760}, {104, 17523, 123928, 8288932, 8388264}},
    {'B', 25, 21, {41869, 812306, 5102857, 18232239, 26860214}, {33422937, 10244, 59149, 33135281, 99}},
};

/* The rank the specification expects for test key `t` in iteration `it`. */
static long is_expected_rank(const struct is_class *c, int t, int it)
{
    long r = c->test_rank[t];
    switch (c->cls) {
    case 'S':
        return t <= 2 ? r + it : r - it;
    case 'W':
        return t < 2 ? r + it - 2 : r - it;
    case 'A':
        return t <= 2 ? r + it - 1 : r - (it - 1);
    default: /* B */
        return (t == 1 || t == 2 || t == 4) ? r + it : r - it;
    }
}

/* Everything one rank holds. */
struct is_state {
    const struct is_class *c;
    int rank, np;
    long total, max_key, first, count; /* global key count; this rank's keys [first, first+count) */
    int shift;                         /* key >> shift = bucket */
    int *keys;                         /* this rank's generated keys */
    int *grouped;                      /* the same keys grouped by destination rank */
    int *received;                     /* keys received for ranking */
    long received_cap, received_count;
    long local_buckets[IS_BUCKETS], global_buckets[IS_BUCKETS];
    int bucket_start[IS_BUCKETS + 1]; /* per rank: first bucket owned (np + 1 entries used) */
    long *value_counts;               /* prefix counts over this rank's key range */
    long value_cap;
    int *send_counts, *send_displs, *recv_counts, *recv_displs;
    int test_key[IS_TESTS];
    long passed, failed;
    long min_value, max_value, lesser; /* owned value range and keys below it */
};

static void *is_alloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "is: out of memory (%zu bytes)\n", bytes);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    return p;
}

/* The key at global position j, computed directly by jumping the generator. */
static int is_key_at(long j, long max_key)
{
    double x = NAS_SEED;
    randlc(&x, nas_power(NAS_A, (uint64_t)j * 4));
    double sum = 0.0;
    for (int r = 0; r < 4; r++)
        sum += randlc(&x, NAS_A);
    return (int)((double)(max_key / 4) * sum);
}

static void is_generate(struct is_state *s)
{
    double x = NAS_SEED, k = (double)(s->max_key / 4);
    randlc(&x, nas_power(NAS_A, (uint64_t)s->first * 4));
    for (long i = 0; i < s->count; i++) {
        double sum = randlc(&x, NAS_A);
        sum += randlc(&x, NAS_A);
        sum += randlc(&x, NAS_A);
        sum += randlc(&x, NAS_A);
        s->keys[i] = (int)(k * sum);
    }
    for (int t = 0; t < IS_TESTS; t++)
        s->test_key[t] = is_key_at(s->c->test_index[t], s->max_key);
}

/* Sets the global key at position j to v if this rank holds it. */
static void is_set_key(struct is_state *s, long j, int v)
{
    if (j >= s->first && j < s->first + s->count)
        s->keys[j - s->first] = v;
}

/* Splits the buckets into np contiguous ranges of about total/np keys each. */
static void is_split_buckets(struct is_state *s)
{
    long running = 0;
    int b = 0;
    s->bucket_start[0] = 0;
    for (int p = 1; p < s->np; p++) {
        long goal = s->total * p / s->np;
        while (b < IS_BUCKETS && running + s->global_buckets[b] <= goal)
            running += s->global_buckets[b++];
        /* Take the straddling bucket if that lands closer to the goal. */
        if (b < IS_BUCKETS && goal - running > running + s->global_buckets[b] - goal)
            running += s->global_buckets[b++];
        s->bucket_start[p] = b;
    }
    s->bucket_start[s->np] = IS_BUCKETS;
}

/* One ranking pass (iteration `it`, 1-based), with the partial verification. */
static void is_rank(struct is_state *s, int it)
{
    is_set_key(s, it, it);
    is_set_key(s, it + IS_ITERATIONS, (int)(s->max_key - it));

    memset(s->local_buckets, 0, sizeof s->local_buckets);
    for (long i = 0; i < s->count; i++)
        s->local_buckets[s->keys[i] >> s->shift]++;
    MPI_Allreduce(s->local_buckets, s->global_buckets, IS_BUCKETS, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    is_split_buckets(s);

    /* Group the keys by bucket (so by destination); bucket_pos = where each bucket goes. */
    long bucket_pos[IS_BUCKETS], at = 0;
    for (int b = 0; b < IS_BUCKETS; b++) {
        bucket_pos[b] = at;
        at += s->local_buckets[b];
    }
    for (int p = 0; p < s->np; p++) {
        long start = s->bucket_start[p] < IS_BUCKETS ? bucket_pos[s->bucket_start[p]] : s->count;
        long end = s->bucket_start[p + 1] < IS_BUCKETS ? bucket_pos[s->bucket_start[p + 1]] : s->count;
        s->send_displs[p] = (int)start;
        s->send_counts[p] = (int)(end - start);
    }
    for (long i = 0; i < s->count; i++) {
        int k = s->keys[i];
        s->grouped[bucket_pos[k >> s->shift]++] = k;
    }

    MPI_Alltoall(s->send_counts, 1, MPI_INT, s->recv_counts, 1, MPI_INT, MPI_COMM_WORLD);
    long incoming = 0;
    for (int p = 0; p < s->np; p++) {
        s->recv_displs[p] = (int)incoming;
        incoming += s->recv_counts[p];
    }
    if (incoming > s->received_cap) {
        free(s->received);
        s->received_cap = incoming + incoming / 8;
        s->received = is_alloc(sizeof(int) * (size_t)s->received_cap);
    }
    s->received_count = incoming;
    MPI_Alltoallv(s->grouped, s->send_counts, s->send_displs, MPI_INT, s->received, s->recv_counts,
                  s->recv_displs, MPI_INT, MPI_COMM_WORLD);

    /* Rank the owned value range [min_value, max_value). */
    int me = s->rank;
    s->min_value = (long)s->bucket_start[me] << s->shift;
    s->max_value = (long)s->bucket_start[me + 1] << s->shift;
    s->lesser = 0;
    for (int b = 0; b < s->bucket_start[me]; b++)
        s->lesser += s->global_buckets[b];
    long width = s->max_value - s->min_value;
    if (width > s->value_cap) {
        free(s->value_counts);
        s->value_cap = width;
        s->value_counts = is_alloc(sizeof(long) * (size_t)width);
    }
    long *counts = s->value_counts;
    memset(counts, 0, sizeof(long) * (size_t)width);
    for (long i = 0; i < incoming; i++)
        counts[s->received[i] - s->min_value]++;
    for (long v = 1; v < width; v++)
        counts[v] += counts[v - 1]; /* counts[v] = keys <= min_value + v on this rank */

    for (int t = 0; t < IS_TESTS; t++) {
        long k = s->test_key[t];
        if (k <= 0 || k >= s->max_key || k < s->min_value || k >= s->max_value)
            continue;
        long below = k - 1 >= s->min_value ? counts[k - 1 - s->min_value] : 0;
        if (s->lesser + below == is_expected_rank(s->c, t, it)) {
            s->passed++;
        } else {
            s->failed++;
            fprintf(stderr, "is: iteration %d, test key %d: rank %ld, expected %ld\n", it, t, s->lesser + below,
                    is_expected_rank(s->c, t, it));
        }
    }
}

/* Places the last iteration's keys at their ranks and checks the order; returns 1 if good. */
static int is_full_verify(struct is_state *s)
{
    long n = s->received_count, bad = 0;
    int *sorted = is_alloc(sizeof(int) * (size_t)n);
    for (long i = 0; i < n; i++) {
        int k = s->received[i];
        sorted[--s->value_counts[k - s->min_value]] = k; /* local rank of this key */
    }
    for (long i = 1; i < n; i++)
        bad += sorted[i - 1] > sorted[i];
    /* Across ranks: my smallest key must not be below the previous non-empty rank's largest. */
    int my_first = n ? sorted[0] : -1, my_last = n ? sorted[n - 1] : -1;
    int *lasts = is_alloc(sizeof(int) * (size_t)s->np);
    int *firsts = is_alloc(sizeof(int) * (size_t)s->np);
    MPI_Allgather(&my_last, 1, MPI_INT, lasts, 1, MPI_INT, MPI_COMM_WORLD);
    MPI_Allgather(&my_first, 1, MPI_INT, firsts, 1, MPI_INT, MPI_COMM_WORLD);
    int prev_last = -1;
    for (int p = 0; p < s->np; p++) {
        if (lasts[p] < 0)
            continue;
        if (firsts[p] < prev_last)
            bad++;
        prev_last = lasts[p];
    }
    long counts[2] = {bad, n}, sums[2];
    MPI_Allreduce(counts, sums, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (s->rank == 0 && (sums[0] || sums[1] != s->total))
        fprintf(stderr, "is: full verification: %ld keys out of order, %ld of %ld keys ranked\n", sums[0], sums[1],
                s->total);
    free(sorted);
    free(lasts);
    free(firsts);
    return sums[0] == 0 && sums[1] == s->total;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    struct is_state s;
    memset(&s, 0, sizeof s);
    MPI_Comm_rank(MPI_COMM_WORLD, &s.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &s.np);
    char cls = nas_class(argc, argv, "is", "SWAB");
    s.c = IS_CLASSES;
    while (s.c->cls != cls)
        s.c++;
    if (s.np > IS_BUCKETS) {
        if (s.rank == 0)
            fprintf(stderr, "is: at most %d processes (one bucket each), not %d\n", IS_BUCKETS, s.np);
        MPI_Finalize();
        return 2;
    }

    s.total = 1L << s.c->keys_log2;
    s.max_key = 1L << s.c->max_key_log2;
    s.shift = s.c->max_key_log2 - IS_BUCKETS_LOG2;
    s.first = s.total * s.rank / s.np;
    s.count = s.total * (s.rank + 1) / s.np - s.first;
    s.keys = is_alloc(sizeof(int) * (size_t)s.count);
    s.grouped = is_alloc(sizeof(int) * (size_t)s.count);
    s.send_counts = is_alloc(sizeof(int) * (size_t)s.np);
    s.send_displs = is_alloc(sizeof(int) * (size_t)s.np);
    s.recv_counts = is_alloc(sizeof(int) * (size_t)s.np);
    s.recv_displs = is_alloc(sizeof(int) * (size_t)s.np);
    is_generate(&s);

    /* One untimed pass, as the specification allows, to touch every page and table. */
    is_rank(&s, 1);
    s.passed = s.failed = 0;
    MPI_Barrier(MPI_COMM_WORLD);

    double start = MPI_Wtime();
    for (int it = 1; it <= IS_ITERATIONS; it++)
        is_rank(&s, it);
    double elapsed = MPI_Wtime() - start, slowest = 0.0;
    MPI_Reduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);

    int full = is_full_verify(&s);
    long mine[2] = {s.passed, s.failed}, all[2];
    MPI_Allreduce(mine, all, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    int verified = full && all[1] == 0 && all[0] == (long)IS_TESTS * IS_ITERATIONS;
    if (s.rank == 0 && !verified)
        fprintf(stderr, "is: partial verification %ld passed, %ld failed (of %d); full %s\n", all[0], all[1],
                IS_TESTS * IS_ITERATIONS, full ? "passed" : "failed");
    double mops = (double)IS_ITERATIONS * (double)s.total / slowest / 1e6;
    int status = nas_report("IS", cls, verified, slowest, mops);

    free(s.keys);
    free(s.grouped);
    free(s.received);
    free(s.value_counts);
    free(s.send_counts);
    free(s.send_displs);
    free(s.recv_counts);
    free(s.recv_displs);
    MPI_Finalize();
    return status;
}
