/*
 * every_c_data: every large-count (_c) function of datatypes, packing, one-sided
 * communication and MPI-IO, each called with small counts and its data checked; the _c type
 * queries of a type above 2 GiB; the int forms' MPI_UNDEFINED; and bad arguments of the _c
 * forms (a negative MPI_Count is MPI_ERR_COUNT, as in the int forms). Files go to the
 * directory $LARGE_TEST_DIR (one per rank). Runs on any number of ranks.
 *
 * Checked against MPICH 4.0.2 on 1, 2 and 4 ranks: the types, one-sided and file parts pass
 * but for MPI_Pack_external_size_c of 6 GiB (MPICH answers -2^31: an int overflow) and
 * MPI_Register_datarep_c (MPICH refuses it, MPI_ERR_CONVERSION); the bad-argument part
 * crashes MPICH, which does not check every count.
 */
#define TEST_NAME "every_c_data"
#include "mpitest.h"

#define N 6

/* Packs `count` of `dt` from `src` (MPI_Pack_c) and checks it equals `want` (`bytes` long). */
static void packs_to(const void *src, MPI_Count count, MPI_Datatype dt, const int *want, int n,
                     const char *what)
{
    char buf[1024];
    MPI_Count pos = 0, size = -1;
    CHECK_MPI(MPI_Pack_size_c(count, dt, MPI_COMM_WORLD, &size));
    CHECK(size >= (MPI_Count)(n * sizeof(int)) && size <= (MPI_Count)sizeof buf,
          "%s: MPI_Pack_size_c %lld", what, (long long)size);
    CHECK_MPI(MPI_Pack_c(src, count, dt, buf, sizeof buf, &pos, MPI_COMM_WORLD));
    CHECK(pos == (MPI_Count)(n * sizeof(int)), "%s: packed %lld bytes, want %zu", what,
          (long long)pos, n * sizeof(int));
    CHECK(memcmp(buf, want, n * sizeof(int)) == 0, "%s: the packed data differs", what);
    int back[64] = {0};
    MPI_Count at = 0;
    CHECK_MPI(MPI_Unpack_c(buf, pos, &at, back, n, MPI_INT, MPI_COMM_WORLD));
    CHECK(at == pos && memcmp(back, want, n * sizeof(int)) == 0, "%s: MPI_Unpack_c", what);
}

static void envelope(MPI_Datatype t, MPI_Count ni, MPI_Count na, MPI_Count nc, MPI_Count nd,
                     int combiner, const char *what)
{
    MPI_Count i = -1, a = -1, c = -1, d = -1;
    int comb = -1;
    CHECK_MPI(MPI_Type_get_envelope_c(t, &i, &a, &c, &d, &comb));
    CHECK(i == ni && a == na && c == nc && d == nd && comb == combiner,
          "%s: envelope_c %lld %lld %lld %lld %d, want %lld %lld %lld %lld %d", what,
          (long long)i, (long long)a, (long long)c, (long long)d, comb, (long long)ni,
          (long long)na, (long long)nc, (long long)nd, combiner);
}

static void types(void)
{
    int src[64];
    for (int i = 0; i < 64; i++) src[i] = i * 3 + 1;
    MPI_Datatype t;

    CHECK_MPI(MPI_Type_contiguous_c(N, MPI_INT, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    packs_to(src, 1, t, src, N, "MPI_Type_contiguous_c");
    envelope(t, 0, 0, 1, 1, MPI_COMBINER_CONTIGUOUS, "contiguous_c");
    {
        /* The int forms cannot describe a type a _c constructor made (MPI_ERR_OTHER, as
         * MPICH 4.0.2 answers). */
        int ni, na, nd, comb;
        CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
        int rc = MPI_Type_get_envelope(t, &ni, &na, &nd, &comb);
        CHECK(error_class_of(rc) == MPI_ERR_OTHER, "MPI_Type_get_envelope of a _c type: %s",
              error_text(rc));
        MPI_Count ints[4], large[4];
        MPI_Aint addrs[4];
        int iints[4];
        MPI_Datatype dts[4];
        (void)ints;
        CHECK_MPI(MPI_Type_get_contents_c(t, 4, 4, 4, 4, iints, addrs, large, dts));
        CHECK(large[0] == N && dts[0] == MPI_INT, "MPI_Type_get_contents_c: %lld", (long long)large[0]);
    }
    MPI_Type_free(&t);

    CHECK_MPI(MPI_Type_vector_c(3, 2, 4, MPI_INT, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    int want_vec[] = {src[0], src[1], src[4], src[5], src[8], src[9]};
    packs_to(src, 1, t, want_vec, 6, "MPI_Type_vector_c");
    envelope(t, 0, 0, 3, 1, MPI_COMBINER_VECTOR, "vector_c");
    MPI_Count lb = -1, extent = -1, tlb = -1, textent = -1, size = -1;
    CHECK_MPI(MPI_Type_get_extent_c(t, &lb, &extent));
    CHECK_MPI(MPI_Type_get_true_extent_c(t, &tlb, &textent));
    CHECK_MPI(MPI_Type_size_c(t, &size));
    CHECK(lb == 0 && extent == 10 * 4 && tlb == 0 && textent == 40 && size == 24,
          "vector_c: lb %lld extent %lld true %lld %lld size %lld", (long long)lb,
          (long long)extent, (long long)tlb, (long long)textent, (long long)size);
    MPI_Type_free(&t);

    CHECK_MPI(MPI_Type_create_hvector_c(3, 2, 16, MPI_INT, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    packs_to(src, 1, t, want_vec, 6, "MPI_Type_create_hvector_c");
    envelope(t, 0, 0, 3, 1, MPI_COMBINER_HVECTOR, "hvector_c");
    MPI_Type_free(&t);

    MPI_Count lens[3] = {2, 1, 3}, idx[3] = {5, 0, 9};
    MPI_Count bidx[3] = {20, 0, 36};
    int want_idx[] = {src[5], src[6], src[0], src[9], src[10], src[11]};
    CHECK_MPI(MPI_Type_indexed_c(3, lens, idx, MPI_INT, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    packs_to(src, 1, t, want_idx, 6, "MPI_Type_indexed_c");
    envelope(t, 0, 0, 7, 1, MPI_COMBINER_INDEXED, "indexed_c");
    MPI_Type_free(&t);
    CHECK_MPI(MPI_Type_create_hindexed_c(3, lens, bidx, MPI_INT, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    packs_to(src, 1, t, want_idx, 6, "MPI_Type_create_hindexed_c");
    MPI_Type_free(&t);

    MPI_Count bidx2[3] = {20, 0, 36}, idx2[3] = {5, 0, 9};
    int want_blk[] = {src[5], src[6], src[0], src[1], src[9], src[10]};
    CHECK_MPI(MPI_Type_create_indexed_block_c(3, 2, idx2, MPI_INT, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    packs_to(src, 1, t, want_blk, 6, "MPI_Type_create_indexed_block_c");
    MPI_Type_free(&t);
    CHECK_MPI(MPI_Type_create_hindexed_block_c(3, 2, bidx2, MPI_INT, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    packs_to(src, 1, t, want_blk, 6, "MPI_Type_create_hindexed_block_c");
    MPI_Type_free(&t);

    MPI_Count slens[2] = {2, 4};
    MPI_Count sdisp[2] = {40, 0};
    MPI_Datatype stypes[2] = {MPI_INT, MPI_INT};
    int want_st[] = {src[10], src[11], src[0], src[1], src[2], src[3]};
    CHECK_MPI(MPI_Type_create_struct_c(2, slens, sdisp, stypes, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    packs_to(src, 1, t, want_st, 6, "MPI_Type_create_struct_c");
    envelope(t, 0, 0, 5, 2, MPI_COMBINER_STRUCT, "struct_c");
    MPI_Type_free(&t);

    /* A 4x8 C array of ints, the 2x3 block from (1, 2). */
    MPI_Count sizes[2] = {4, 8}, subsizes[2] = {2, 3}, starts[2] = {1, 2};
    int want_sub[] = {src[10], src[11], src[12], src[18], src[19], src[20]};
    CHECK_MPI(MPI_Type_create_subarray_c(2, sizes, subsizes, starts, MPI_ORDER_C, MPI_INT, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    packs_to(src, 1, t, want_sub, 6, "MPI_Type_create_subarray_c");
    envelope(t, 2, 0, 6, 1, MPI_COMBINER_SUBARRAY, "subarray_c");
    MPI_Type_free(&t);

    /* 12 ints cyclic over 2 processes, process 1: ints 1, 3, 5, 7, 9, 11. */
    MPI_Count gsizes[1] = {12};
    int distribs[1] = {MPI_DISTRIBUTE_CYCLIC}, dargs[1] = {MPI_DISTRIBUTE_DFLT_DARG}, psizes[1] = {2};
    int want_da[] = {src[1], src[3], src[5], src[7], src[9], src[11]};
    CHECK_MPI(MPI_Type_create_darray_c(2, 1, 1, gsizes, distribs, dargs, psizes, MPI_ORDER_C, MPI_INT, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    packs_to(src, 1, t, want_da, 6, "MPI_Type_create_darray_c");
    envelope(t, 7, 0, 1, 1, MPI_COMBINER_DARRAY, "darray_c");
    MPI_Type_free(&t);

    CHECK_MPI(MPI_Type_create_resized_c(MPI_INT, -4, 12, &t));
    CHECK_MPI(MPI_Type_get_extent_c(t, &lb, &extent));
    CHECK(lb == -4 && extent == 12, "MPI_Type_create_resized_c: %lld %lld", (long long)lb, (long long)extent);
    envelope(t, 0, 0, 2, 1, MPI_COMBINER_RESIZED, "resized_c");
    MPI_Type_free(&t);

    /* A type above 2 GiB: 3 * 2^30 bytes. The int size cannot hold it. */
    const MPI_Count huge = (MPI_Count)3 << 30;
    CHECK_MPI(MPI_Type_contiguous_c(huge, MPI_BYTE, &t));
    CHECK_MPI(MPI_Type_size_c(t, &size));
    CHECK(size == huge, "MPI_Type_size_c: %lld", (long long)size);
    int isize = 0;
    CHECK_MPI(MPI_Type_size(t, &isize));
    CHECK(isize == MPI_UNDEFINED, "MPI_Type_size of 3 GiB: %d, want MPI_UNDEFINED", isize);
    MPI_Count sx = -1;
    CHECK_MPI(MPI_Type_size_x(t, &sx));
    CHECK(sx == huge, "MPI_Type_size_x: %lld", (long long)sx);
    CHECK_MPI(MPI_Type_get_extent_c(t, &lb, &extent));
    CHECK(lb == 0 && extent == huge, "extent_c of 3 GiB: %lld", (long long)extent);
    MPI_Count esz = 0;
    CHECK_MPI(MPI_Pack_external_size_c("external32", 2, t, &esz));
    CHECK(esz == 2 * huge, "MPI_Pack_external_size_c: %lld", (long long)esz);
    MPI_Type_free(&t);

    /* External32 (big-endian) of 3 ints. */
    int three[3] = {1, 0x01020304, -1};
    unsigned char ext[12];
    MPI_Count pos = 0;
    CHECK_MPI(MPI_Pack_external_c("external32", three, 3, MPI_INT, ext, sizeof ext, &pos));
    CHECK(pos == 12 && ext[3] == 1 && ext[4] == 1 && ext[7] == 4 && ext[8] == 0xff,
          "MPI_Pack_external_c: %lld bytes", (long long)pos);
    int back[3] = {0};
    MPI_Count at = 0;
    CHECK_MPI(MPI_Unpack_external_c("external32", ext, sizeof ext, &at, back, 3, MPI_INT));
    CHECK(at == 12 && memcmp(back, three, sizeof three) == 0, "MPI_Unpack_external_c");
}

static void rma(void)
{
    const int p = test_size, me = test_rank, right = (me + 1) % p;
    int *win_mem = test_malloc(sizeof(int) * 4 * N);
    for (int i = 0; i < 4 * N; i++) win_mem[i] = 0;
    MPI_Win win;
    CHECK_MPI(MPI_Win_create_c(win_mem, sizeof(int) * 4 * N, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    int out[N], got[N], res[N];
    for (int i = 0; i < N; i++) out[i] = me * 100 + i;
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_MPI(MPI_Put_c(out, N, MPI_INT, right, 0, N, MPI_INT, win));
    CHECK_MPI(MPI_Accumulate_c(out, N, MPI_INT, right, N, N, MPI_INT, MPI_SUM, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    int left = (me + p - 1) % p;
    for (int i = 0; i < N; i++)
        CHECK(win_mem[i] == left * 100 + i && win_mem[N + i] == left * 100 + i,
              "MPI_Put_c / MPI_Accumulate_c: %d %d", win_mem[i], win_mem[N + i]);
    CHECK_MPI(MPI_Win_fence(0, win)); /* every rank checked before the next epoch changes it */
    CHECK_MPI(MPI_Get_c(got, N, MPI_INT, right, 0, N, MPI_INT, win));
    CHECK_MPI(MPI_Get_accumulate_c(out, N, MPI_INT, res, N, MPI_INT, right, N, N, MPI_INT, MPI_SUM, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    for (int i = 0; i < N; i++)
        CHECK(got[i] == me * 100 + i && res[i] == me * 100 + i, "MPI_Get_c / MPI_Get_accumulate_c: %d %d", got[i], res[i]);
    CHECK_MPI(MPI_Win_fence(0, win));
    /* The request forms, in a passive-target epoch. */
    MPI_Request rq[4];
    CHECK_MPI(MPI_Win_lock_all(0, win));
    CHECK_MPI(MPI_Rput_c(out, N, MPI_INT, right, 2 * N, N, MPI_INT, win, &rq[0]));
    CHECK_MPI(MPI_Raccumulate_c(out, N, MPI_INT, right, 3 * N, N, MPI_INT, MPI_SUM, win, &rq[1]));
    CHECK_MPI(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
    CHECK_MPI(MPI_Win_flush_all(win));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Rget_c(got, N, MPI_INT, right, 2 * N, N, MPI_INT, win, &rq[2]));
    CHECK_MPI(MPI_Rget_accumulate_c(out, N, MPI_INT, res, N, MPI_INT, right, 3 * N, N, MPI_INT, MPI_NO_OP, win, &rq[3]));
    CHECK_MPI(MPI_Waitall(2, rq + 2, MPI_STATUSES_IGNORE));
    CHECK_MPI(MPI_Win_unlock_all(win));
    for (int i = 0; i < N; i++)
        CHECK(got[i] == me * 100 + i && res[i] == me * 100 + i, "MPI_Rget_c / MPI_Rget_accumulate_c: %d %d", got[i], res[i]);
    CHECK_MPI(MPI_Win_free(&win));
    free(win_mem);

    int *base = NULL;
    CHECK_MPI(MPI_Win_allocate_c(sizeof(int) * N, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    CHECK(base != NULL, "MPI_Win_allocate_c gave no memory");
    CHECK_MPI(MPI_Win_free(&win));

    MPI_Comm node;
    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    CHECK_MPI(MPI_Win_allocate_shared_c(sizeof(int) * N, 8, MPI_INFO_NULL, node, &base, &win));
    MPI_Aint qsize = -1, qunit = -1;
    int *qbase = NULL;
    CHECK_MPI(MPI_Win_shared_query_c(win, 0, &qsize, &qunit, &qbase));
    CHECK(qsize == (MPI_Aint)sizeof(int) * N && qunit == 8 && qbase != NULL,
          "MPI_Win_shared_query_c: %lld %lld", (long long)qsize, (long long)qunit);
    CHECK_MPI(MPI_Win_free(&win));
    CHECK_MPI(MPI_Comm_free(&node));
}

static int conversions;

/* A large-count conversion: the file holds the memory's ints as they are. */
static int copy_ints(void *userbuf, MPI_Datatype dt, MPI_Count count, void *filebuf,
                     MPI_Offset position, void *extra)
{
    (void)dt;
    (void)extra;
    conversions++;
    memcpy(filebuf, (int *)userbuf + position, count * sizeof(int));
    return MPI_SUCCESS;
}

static int read_ints(void *userbuf, MPI_Datatype dt, MPI_Count count, void *filebuf,
                     MPI_Offset position, void *extra)
{
    (void)dt;
    (void)extra;
    conversions++;
    memcpy((int *)userbuf + position, filebuf, count * sizeof(int));
    return MPI_SUCCESS;
}

static void files(const char *base_path)
{
    char path[1100];
    snprintf(path, sizeof path, "%s.%d", base_path, test_rank);
    MPI_File fh;
    CHECK_MPI(MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh));
    int out[N], in[N];
    MPI_Status st;
    MPI_Request rq;
    MPI_Count c;
#define ROUND(k) for (int i = 0; i < N; i++) out[i] = (k) * 1000 + test_rank * 10 + i
#define CHECK_IN(k, what)                                                                     \
    do {                                                                                      \
        for (int i = 0; i < N; i++)                                                           \
            CHECK(in[i] == (k) * 1000 + test_rank * 10 + i, "%s: %d", what, in[i]);           \
        memset(in, 0, sizeof in);                                                             \
    } while (0)
#define COUNTED(what)                                                                         \
    do {                                                                                      \
        CHECK_MPI(MPI_Get_count_c(&st, MPI_INT, &c));                                         \
        CHECK(c == N, "%s: status count %lld", what, (long long)c);                           \
    } while (0)
    const MPI_Offset B = N * sizeof(int);
    /* Explicit offsets (etype bytes): blocking, collective, nonblocking, split. */
    ROUND(1); CHECK_MPI(MPI_File_write_at_c(fh, 0, out, N, MPI_INT, &st)); COUNTED("write_at_c");
    CHECK_MPI(MPI_File_read_at_c(fh, 0, in, N, MPI_INT, &st)); COUNTED("read_at_c"); CHECK_IN(1, "read_at_c");
    ROUND(2); CHECK_MPI(MPI_File_write_at_all_c(fh, B, out, N, MPI_INT, &st));
    CHECK_MPI(MPI_File_read_at_all_c(fh, B, in, N, MPI_INT, &st)); CHECK_IN(2, "read_at_all_c");
    ROUND(3); CHECK_MPI(MPI_File_iwrite_at_c(fh, 2 * B, out, N, MPI_INT, &rq)); CHECK_MPI(MPI_Wait(&rq, &st));
    CHECK_MPI(MPI_File_iread_at_c(fh, 2 * B, in, N, MPI_INT, &rq)); CHECK_MPI(MPI_Wait(&rq, &st)); CHECK_IN(3, "iread_at_c");
    ROUND(4); CHECK_MPI(MPI_File_iwrite_at_all_c(fh, 3 * B, out, N, MPI_INT, &rq)); CHECK_MPI(MPI_Wait(&rq, &st));
    CHECK_MPI(MPI_File_iread_at_all_c(fh, 3 * B, in, N, MPI_INT, &rq)); CHECK_MPI(MPI_Wait(&rq, &st)); CHECK_IN(4, "iread_at_all_c");
    ROUND(5); CHECK_MPI(MPI_File_write_at_all_begin_c(fh, 4 * B, out, N, MPI_INT)); CHECK_MPI(MPI_File_write_at_all_end(fh, out, &st));
    CHECK_MPI(MPI_File_read_at_all_begin_c(fh, 4 * B, in, N, MPI_INT)); CHECK_MPI(MPI_File_read_at_all_end(fh, in, &st)); CHECK_IN(5, "read_at_all_begin_c");
    /* The individual file pointer. */
    CHECK_MPI(MPI_File_seek(fh, 5 * B, MPI_SEEK_SET));
    ROUND(6); CHECK_MPI(MPI_File_write_c(fh, out, N, MPI_INT, &st)); COUNTED("write_c");
    ROUND(7); CHECK_MPI(MPI_File_write_all_c(fh, out, N, MPI_INT, &st));
    ROUND(8); CHECK_MPI(MPI_File_iwrite_c(fh, out, N, MPI_INT, &rq)); CHECK_MPI(MPI_Wait(&rq, &st));
    ROUND(9); CHECK_MPI(MPI_File_iwrite_all_c(fh, out, N, MPI_INT, &rq)); CHECK_MPI(MPI_Wait(&rq, &st));
    ROUND(10); CHECK_MPI(MPI_File_write_all_begin_c(fh, out, N, MPI_INT)); CHECK_MPI(MPI_File_write_all_end(fh, out, &st));
    CHECK_MPI(MPI_File_seek(fh, 5 * B, MPI_SEEK_SET));
    CHECK_MPI(MPI_File_read_c(fh, in, N, MPI_INT, &st)); COUNTED("read_c"); CHECK_IN(6, "read_c");
    CHECK_MPI(MPI_File_read_all_c(fh, in, N, MPI_INT, &st)); CHECK_IN(7, "read_all_c");
    CHECK_MPI(MPI_File_iread_c(fh, in, N, MPI_INT, &rq)); CHECK_MPI(MPI_Wait(&rq, &st)); CHECK_IN(8, "iread_c");
    CHECK_MPI(MPI_File_iread_all_c(fh, in, N, MPI_INT, &rq)); CHECK_MPI(MPI_Wait(&rq, &st)); CHECK_IN(9, "iread_all_c");
    CHECK_MPI(MPI_File_read_all_begin_c(fh, in, N, MPI_INT)); CHECK_MPI(MPI_File_read_all_end(fh, in, &st)); CHECK_IN(10, "read_all_begin_c");
    /* The shared file pointer (the file is this rank's own: MPI_COMM_SELF). */
    CHECK_MPI(MPI_File_seek_shared(fh, 10 * B, MPI_SEEK_SET));
    ROUND(11); CHECK_MPI(MPI_File_write_shared_c(fh, out, N, MPI_INT, &st)); COUNTED("write_shared_c");
    ROUND(12); CHECK_MPI(MPI_File_iwrite_shared_c(fh, out, N, MPI_INT, &rq)); CHECK_MPI(MPI_Wait(&rq, &st));
    ROUND(13); CHECK_MPI(MPI_File_write_ordered_c(fh, out, N, MPI_INT, &st));
    ROUND(14); CHECK_MPI(MPI_File_write_ordered_begin_c(fh, out, N, MPI_INT)); CHECK_MPI(MPI_File_write_ordered_end(fh, out, &st));
    CHECK_MPI(MPI_File_seek_shared(fh, 10 * B, MPI_SEEK_SET));
    CHECK_MPI(MPI_File_read_shared_c(fh, in, N, MPI_INT, &st)); CHECK_IN(11, "read_shared_c");
    CHECK_MPI(MPI_File_iread_shared_c(fh, in, N, MPI_INT, &rq)); CHECK_MPI(MPI_Wait(&rq, &st)); CHECK_IN(12, "iread_shared_c");
    CHECK_MPI(MPI_File_read_ordered_c(fh, in, N, MPI_INT, &st)); CHECK_IN(13, "read_ordered_c");
    CHECK_MPI(MPI_File_read_ordered_begin_c(fh, in, N, MPI_INT)); CHECK_MPI(MPI_File_read_ordered_end(fh, in, &st)); CHECK_IN(14, "read_ordered_begin_c");
    MPI_Count ext = -1;
    CHECK_MPI(MPI_File_get_type_extent_c(fh, MPI_DOUBLE, &ext));
    CHECK(ext == 8, "MPI_File_get_type_extent_c: %lld", (long long)ext);
    CHECK_MPI(MPI_File_close(&fh));

    /* A representation with large-count conversion functions. */
    if (test_rank == 0)
        CHECK_MPI(MPI_Register_datarep_c("lc-copy", read_ints, copy_ints, NULL, NULL));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (test_rank != 0)
        CHECK_MPI(MPI_Register_datarep_c("lc-copy", read_ints, copy_ints, NULL, NULL));
    CHECK_MPI(MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh));
    CHECK_MPI(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "lc-copy", MPI_INFO_NULL));
    ROUND(15); CHECK_MPI(MPI_File_write_at_c(fh, 0, out, N, MPI_INT, &st));
    CHECK_MPI(MPI_File_read_at_c(fh, 0, in, N, MPI_INT, &st)); CHECK_IN(15, "a view of the _c representation");
    CHECK(conversions >= 2, "the _c conversion functions were called %d times", conversions);
    CHECK_MPI(MPI_File_close(&fh));
}

static void errors(const char *base_path)
{
    int x[4] = {0};
    MPI_Datatype t;
    MPI_Count c;
    int rc;
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
#define EXPECT(call, cls)                                                                     \
    do {                                                                                      \
        rc = (call);                                                                          \
        CHECK(error_class_of(rc) == (cls), "%s: %s, want class %d", #call, error_text(rc), (cls)); \
    } while (0)
    EXPECT(MPI_Send_c(x, -1, MPI_INT, 0, 0, MPI_COMM_WORLD), MPI_ERR_COUNT);
    EXPECT(MPI_Recv_c(x, -5, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE), MPI_ERR_COUNT);
    EXPECT(MPI_Send_c(x, 1, MPI_INT, 0, 0, MPI_COMM_NULL), MPI_ERR_COMM);
    EXPECT(MPI_Send_c(x, 1, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
    EXPECT(MPI_Send_c(x, 1, MPI_INT, test_size, 0, MPI_COMM_WORLD), MPI_ERR_RANK);
    EXPECT(MPI_Bcast_c(x, -1, MPI_INT, 0, MPI_COMM_WORLD), MPI_ERR_COUNT);
    EXPECT(MPI_Allreduce_c(x, x + 2, -(MPI_Count)1 << 40, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_COUNT);
    EXPECT(MPI_Type_contiguous_c(-2, MPI_INT, &t), MPI_ERR_COUNT);
    EXPECT(MPI_Pack_size_c(-1, MPI_INT, MPI_COMM_WORLD, &c), MPI_ERR_COUNT);
    /* An int form cannot report a count above INT_MAX in an int where an error is the rule. */
    CHECK_MPI(MPI_Type_contiguous_c((MPI_Count)1 << 31, MPI_BYTE, &t));
    int isize;
    EXPECT(MPI_Pack_size(1, t, MPI_COMM_WORLD, &isize), MPI_ERR_COUNT);
    CHECK_MPI(MPI_Pack_size_c(1, t, MPI_COMM_WORLD, &c));
    CHECK(c >= (MPI_Count)1 << 31, "MPI_Pack_size_c of 2 GiB: %lld", (long long)c);
    MPI_Type_free(&t);
    /* Counts that overflow the byte count are refused, not wrapped. */
    EXPECT(MPI_Send_c(x, (MPI_Count)1 << 62, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD), MPI_ERR_COUNT);
    MPI_File fh;
    char path[1100];
    snprintf(path, sizeof path, "%s.err%d", base_path, test_rank);
    CHECK_MPI(MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh));
    CHECK_MPI(MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN));
    EXPECT(MPI_File_write_at_c(fh, 0, x, -1, MPI_INT, MPI_STATUS_IGNORE), MPI_ERR_COUNT);
    CHECK_MPI(MPI_File_close(&fh));
    MPI_Win win;
    CHECK_MPI(MPI_Win_create_c(x, sizeof x, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    CHECK_MPI(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Win_fence(0, win));
    EXPECT(MPI_Put_c(x, -1, MPI_INT, 0, 0, 1, MPI_INT, win), MPI_ERR_COUNT);
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_MPI(MPI_Win_free(&win));
    EXPECT(MPI_Win_create_c(x, sizeof x, 0, MPI_INFO_NULL, MPI_COMM_WORLD, &win), MPI_ERR_DISP);
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    const char *dir = getenv("LARGE_TEST_DIR");
    char base[1024];
    snprintf(base, sizeof base, "%s/every_c_data", dir ? dir : ".");
    types();
    rma();
    files(base);
    errors(base);
    test_ok();
    MPI_Finalize();
    return 0;
}
