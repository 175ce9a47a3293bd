/*
 * roundtrip: derived datatypes through every point-to-point path between 2 ranks.
 *
 * Each case is a datatype and a hand-written description of one element's data
 * (blocks of bytes in type-map order, and the extent). Rank 0 fills a buffer
 * with a pattern and sends `count` elements; rank 1 receives into a buffer
 * filled with a sentinel and checks every byte: the type's bytes hold the
 * pattern, every gap still holds the sentinel. The paths: Send/Recv,
 * Isend/Irecv, Sendrecv, Sendrecv_replace, persistent requests (started twice),
 * Bsend, Ssend + Probe, and typed <-> MPI_BYTE in both directions (which checks
 * the packed order against the blocks' order). Counts and elements come from
 * the statuses.
 */
#define TEST_NAME "roundtrip"
#include "mpitest.h"

#include <stddef.h>

#define MAXB 8
#define SENTINEL 0xEE

struct block { int off, len; };
struct tcase {
    const char *name;
    MPI_Datatype type;
    int count;
    int extent;
    int nblocks;
    struct block b[MAXB];
    int elements; /* basic elements in one element */
};

struct s { int a; double b[2]; char c; };

static int bytes_of(const struct tcase *t) { return t->extent * t->count + 64; }
static int size_of(const struct tcase *t)
{
    int n = 0;
    for (int i = 0; i < t->nblocks; i++) n += t->b[i].len;
    return n;
}

/* Whether byte `at` of the buffer belongs to the count elements' data. */
static int covered(const struct tcase *t, int at)
{
    for (int e = 0; e < t->count; e++)
        for (int i = 0; i < t->nblocks; i++) {
            int o = e * t->extent + t->b[i].off;
            if (at >= o && at < o + t->b[i].len) return 1;
        }
    return 0;
}

static void check_typed(const struct tcase *t, const unsigned char *buf, uint32_t seed, const char *path)
{
    int n = bytes_of(t);
    for (int at = 0; at < n; at++) {
        unsigned char want = covered(t, at) ? pattern_byte(seed, at) : SENTINEL;
        CHECK(buf[at] == want, "%s via %s: byte %d is 0x%02x, want 0x%02x (%s)", t->name, path, at,
              buf[at], want, covered(t, at) ? "data" : "gap, must stay untouched");
    }
}

/* The packed stream: the blocks' bytes in type-map order. */
static void packed_reference(const struct tcase *t, unsigned char *out, uint32_t seed)
{
    int k = 0;
    for (int e = 0; e < t->count; e++)
        for (int i = 0; i < t->nblocks; i++)
            for (int j = 0; j < t->b[i].len; j++)
                out[k++] = pattern_byte(seed, e * t->extent + t->b[i].off + j);
}

static void check_status(const struct tcase *t, MPI_Status *st, const char *path)
{
    int n;
    CHECK_MPI(MPI_Get_count(st, t->type, &n));
    CHECK(n == t->count, "%s via %s: MPI_Get_count says %d, want %d", t->name, path, n, t->count);
    CHECK_MPI(MPI_Get_count(st, MPI_BYTE, &n));
    CHECK(n == t->count * size_of(t), "%s via %s: %d bytes, want %d", t->name, path, n, t->count * size_of(t));
    CHECK_MPI(MPI_Get_elements(st, t->type, &n));
    CHECK(n == t->count * t->elements, "%s via %s: MPI_Get_elements says %d, want %d", t->name, path, n,
          t->count * t->elements);
}

static void run_case(struct tcase *t, int index)
{
    int n = bytes_of(t), size = size_of(t) * t->count;
    unsigned char *buf = test_malloc(n), *packed = test_malloc(size + 1);
    MPI_Status st;
    int tsize;
    CHECK_MPI(MPI_Type_size(t->type, &tsize));
    CHECK(tsize == size_of(t), "%s: MPI_Type_size %d, want %d", t->name, tsize, size_of(t));
    MPI_Aint lb, ext;
    CHECK_MPI(MPI_Type_get_extent(t->type, &lb, &ext));
    CHECK(ext == t->extent, "%s: extent %ld, want %d", t->name, (long)ext, t->extent);
    for (int path = 0; path < 9; path++) {
        uint32_t seed = message_seed(0, 1, index * 16 + path);
        const char *names[] = {"Send/Recv", "Isend/Irecv", "Sendrecv", "Send_init/Recv_init", "Bsend",
                               "Ssend+Probe", "typed->MPI_BYTE", "MPI_BYTE->typed", "Sendrecv_replace"};
        const char *pname = names[path];
        if (test_rank == 0) {
            fill_pattern(buf, n, seed);
            switch (path) {
            case 0: case 5: case 6:
                if (path == 5) CHECK_MPI(MPI_Ssend(buf, t->count, t->type, 1, path, MPI_COMM_WORLD));
                else CHECK_MPI(MPI_Send(buf, t->count, t->type, 1, path, MPI_COMM_WORLD));
                break;
            case 1: {
                MPI_Request r;
                CHECK_MPI(MPI_Isend(buf, t->count, t->type, 1, path, MPI_COMM_WORLD, &r));
                CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
                break;
            }
            case 2: case 8: {
                unsigned char *other = test_malloc(n);
                memset(other, SENTINEL, n);
                if (path == 2) {
                    CHECK_MPI(MPI_Sendrecv(buf, t->count, t->type, 1, path, other, t->count, t->type, 1, path,
                                           MPI_COMM_WORLD, &st));
                } else {
                    memcpy(other, buf, n);
                    CHECK_MPI(MPI_Sendrecv_replace(other, t->count, t->type, 1, path, 1, path, MPI_COMM_WORLD, &st));
                }
                /* Rank 1 sent the same pattern with seed+1 into its own typed buffer. */
                uint32_t back = seed + 1;
                for (int at = 0; at < n; at++) {
                    unsigned char want = covered(t, at) ? pattern_byte(back, at)
                                         : (path == 2 ? SENTINEL : pattern_byte(seed, at));
                    CHECK(other[at] == want, "%s via %s (reply): byte %d is 0x%02x, want 0x%02x", t->name, pname,
                          at, other[at], want);
                }
                check_status(t, &st, pname);
                free(other);
                break;
            }
            case 3: {
                MPI_Request r;
                CHECK_MPI(MPI_Send_init(buf, t->count, t->type, 1, path, MPI_COMM_WORLD, &r));
                for (int k = 0; k < 2; k++) {
                    fill_pattern(buf, n, seed + k * 100);
                    CHECK_MPI(MPI_Start(&r));
                    CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
                }
                CHECK_MPI(MPI_Request_free(&r));
                break;
            }
            case 4: {
                int need;
                CHECK_MPI(MPI_Pack_size(t->count, t->type, MPI_COMM_WORLD, &need));
                need += MPI_BSEND_OVERHEAD;
                void *att = test_malloc(need);
                CHECK_MPI(MPI_Buffer_attach(att, need));
                CHECK_MPI(MPI_Bsend(buf, t->count, t->type, 1, path, MPI_COMM_WORLD));
                memset(buf, 0, n); /* the data was copied: the buffer is ours again */
                int sz;
                CHECK_MPI(MPI_Buffer_detach(&att, &sz));
                free(att);
                break;
            }
            case 7:
                packed_reference(t, packed, seed);
                CHECK_MPI(MPI_Send(packed, size, MPI_BYTE, 1, path, MPI_COMM_WORLD));
                break;
            }
        } else {
            memset(buf, SENTINEL, n);
            switch (path) {
            case 0: case 4:
                CHECK_MPI(MPI_Recv(buf, t->count, t->type, 0, path, MPI_COMM_WORLD, &st));
                break;
            case 1: {
                MPI_Request r;
                CHECK_MPI(MPI_Irecv(buf, t->count, t->type, 0, path, MPI_COMM_WORLD, &r));
                CHECK_MPI(MPI_Wait(&r, &st));
                break;
            }
            case 2: case 8: {
                unsigned char *mine = test_malloc(n);
                fill_pattern(mine, n, seed + 1);
                if (path == 2) {
                    CHECK_MPI(MPI_Sendrecv(mine, t->count, t->type, 0, path, buf, t->count, t->type, 0, path,
                                           MPI_COMM_WORLD, &st));
                } else {
                    CHECK_MPI(MPI_Sendrecv_replace(mine, t->count, t->type, 0, path, 0, path, MPI_COMM_WORLD, &st));
                    for (int at = 0; at < n; at++)
                        buf[at] = covered(t, at) ? mine[at] : SENTINEL;
                }
                free(mine);
                break;
            }
            case 3: {
                MPI_Request r;
                CHECK_MPI(MPI_Recv_init(buf, t->count, t->type, 0, path, MPI_COMM_WORLD, &r));
                for (int k = 0; k < 2; k++) {
                    memset(buf, SENTINEL, n);
                    CHECK_MPI(MPI_Start(&r));
                    CHECK_MPI(MPI_Wait(&r, &st));
                    check_typed(t, buf, seed + k * 100, pname);
                    check_status(t, &st, pname);
                }
                CHECK_MPI(MPI_Request_free(&r));
                break;
            }
            case 5: {
                int bytes;
                CHECK_MPI(MPI_Probe(0, path, MPI_COMM_WORLD, &st));
                CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &bytes));
                CHECK(bytes == size, "%s: probe says %d bytes, want %d", t->name, bytes, size);
                CHECK_MPI(MPI_Recv(buf, t->count, t->type, 0, path, MPI_COMM_WORLD, &st));
                break;
            }
            case 6: {
                CHECK_MPI(MPI_Recv(packed, size + 1, MPI_BYTE, 0, path, MPI_COMM_WORLD, &st));
                CHECK(status_bytes(&st) == size, "%s: %d bytes, want %d", t->name, status_bytes(&st), size);
                unsigned char *want = test_malloc(size);
                packed_reference(t, want, seed);
                for (int k = 0; k < size; k++)
                    CHECK(packed[k] == want[k], "%s sent as typed, received as bytes: byte %d is 0x%02x, want 0x%02x",
                          t->name, k, packed[k], want[k]);
                free(want);
                break;
            }
            case 7:
                CHECK_MPI(MPI_Recv(buf, t->count, t->type, 0, path, MPI_COMM_WORLD, &st));
                break;
            }
            if (path != 3 && path != 6) {
                check_typed(t, buf, seed, pname);
                check_status(t, &st, pname);
            }
        }
    }
    free(buf);
    free(packed);
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    require_ranks(2);
    if (test_rank > 1) { test_ok(); MPI_Finalize(); return 0; }

    struct tcase cases[16];
    int nc = 0;

    MPI_Datatype vec;
    CHECK_MPI(MPI_Type_vector(4, 2, 3, MPI_DOUBLE, &vec));
    cases[nc++] = (struct tcase){"vector(4,2,3) of double", vec, 2, 88, 4, {{0, 16}, {24, 16}, {48, 16}, {72, 16}}, 8};

    MPI_Datatype idx;
    int bl[3] = {1, 3, 2}, disp[3] = {5, 0, 9};
    CHECK_MPI(MPI_Type_indexed(3, bl, disp, MPI_INT, &idx));
    cases[nc++] = (struct tcase){"indexed {5},{0..2},{9,10} of int", idx, 2, 44, 3, {{20, 4}, {0, 12}, {36, 8}}, 6};

    MPI_Datatype st;
    int sbl[3] = {1, 2, 1};
    MPI_Aint sd[3] = {offsetof(struct s, a), offsetof(struct s, b), offsetof(struct s, c)};
    MPI_Datatype sty[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR};
    CHECK_MPI(MPI_Type_create_struct(3, sbl, sd, sty, &st));
    cases[nc++] = (struct tcase){"struct {int; double[2]; char}", st, 3, (int)sizeof(struct s), 3, {{0, 4}, {8, 16}, {24, 1}}, 4};

    int sizes[2] = {4, 5}, subs[2] = {2, 3}, starts[2] = {1, 2};
    MPI_Datatype subc, subf;
    CHECK_MPI(MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_C, MPI_INT, &subc));
    cases[nc++] = (struct tcase){"subarray C order", subc, 2, 80, 2, {{28, 12}, {48, 12}}, 6};
    CHECK_MPI(MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_FORTRAN, MPI_INT, &subf));
    cases[nc++] = (struct tcase){"subarray Fortran order", subf, 2, 80, 3, {{36, 8}, {52, 8}, {68, 8}}, 6};

    MPI_Datatype rs;
    CHECK_MPI(MPI_Type_create_resized(MPI_INT, 0, 12, &rs));
    cases[nc++] = (struct tcase){"int resized to extent 12", rs, 5, 12, 1, {{0, 4}}, 1};

    /* A vector of resized elements: a column of a 3x4 matrix of (int, pad) pairs. */
    MPI_Datatype col, colr;
    CHECK_MPI(MPI_Type_vector(3, 1, 4, MPI_INT, &col));
    CHECK_MPI(MPI_Type_create_resized(col, 0, 4, &colr));
    cases[nc++] = (struct tcase){"column resized to interleave", colr, 4, 4, 3, {{0, 4}, {16, 4}, {32, 4}}, 3};

    cases[nc++] = (struct tcase){"MPI_DOUBLE_INT (padded pair)", MPI_DOUBLE_INT, 3, 16, 1, {{0, 12}}, 2};
    cases[nc++] = (struct tcase){"MPI_SHORT_INT (padded pair)", MPI_SHORT_INT, 3, 8, 2, {{0, 2}, {4, 4}}, 2};

    /* A contiguous derived type takes the direct path. */
    MPI_Datatype cont;
    CHECK_MPI(MPI_Type_contiguous(5, MPI_DOUBLE, &cont));
    cases[nc++] = (struct tcase){"contiguous(5) of double", cont, 3, 40, 1, {{0, 40}}, 5};

    for (int i = 0; i < nc; i++)
        if (cases[i].type != MPI_DOUBLE_INT && cases[i].type != MPI_SHORT_INT)
            CHECK_MPI(MPI_Type_commit(&cases[i].type));
    /* Freeing a type does not affect types built from it. */
    CHECK_MPI(MPI_Type_free(&col));
    for (int i = 0; i < nc; i++)
        run_case(&cases[i], i);
    for (int i = 0; i < nc; i++)
        if (cases[i].type != MPI_DOUBLE_INT && cases[i].type != MPI_SHORT_INT)
            CHECK_MPI(MPI_Type_free(&cases[i].type));
    test_ok();
    MPI_Finalize();
    return 0;
}
