/* CPU embedding: a row gather forward, a scatter-add backward. In f16 the gather moves
 * 2-byte rows (nothing to round); the backward gathers each table row's additions and
 * rounds the row once, after all of them (embed_bwd_f16). */
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_internal.h"

/* Columns per task in the backward: see cpu_embed_bwd. */
#define EMBED_COL_BLOCK 64

/* Every id must index a row of the table. Checked before anything is written, so a bad
 * batch leaves the output (or the gradient) untouched. */
static kiln_status check_ids(const kiln_embed_args *a, const char *what) {
    const int32_t *ids = CPU_PTR(a->ids, int32_t);
    for (int64_t r = 0; r < a->rows; r++) {
        if (ids[r] < 0 || ids[r] >= a->vocab)
            return kiln_set_error(KILN_ERR_RANGE,
                                  "%s: token id %d (at position %lld of the ids) is outside the "
                                  "table's vocabulary of %lld rows [0, %lld)",
                                  what, (int)ids[r], (long long)r, (long long)a->vocab, (long long)a->vocab);
    }
    return KILN_OK;
}

kiln_status cpu_embed_fwd(void *dev, const kiln_embed_args *a) {
    (void)dev;
    kiln_status s = check_ids(a, "embedding");
    if (s) return s;
    if (a->dtype != KILN_F32 && a->dtype != KILN_F16)
        return kiln_set_error(KILN_ERR_DTYPE, "cpu embed_fwd: the table must be f32 or f16, got %s",
                              kiln_dtype_name(a->dtype));
    const int32_t *ids = CPU_PTR(a->ids, int32_t);
    const char *table = CPU_PTR(a->table, char);
    char *out = CPU_PTR(a->out, char);
    const int64_t rows = a->rows;
    const size_t row_bytes = (size_t)a->dim * kiln_dtype_size(a->dtype);
#pragma omp parallel for if (rows * a->dim > CPU_PAR_MIN)
    for (int64_t r = 0; r < rows; r++) memcpy(out + (size_t)r * row_bytes, table + (size_t)ids[r] * row_bytes, row_bytes);
    return KILN_OK;
}

/* f16 dtable[ids[r], :] += dout[r, :]: the positions are ordered by id first (a counting
 * sort, stable), so that each table row hit is loaded to f32 once, receives its positions'
 * rows in position order (the additions of the f32 kernel, in its order) and is rounded
 * once. Only the rows hit are touched: nothing of the size of the table is widened. Each
 * task owns a block of columns, as in the f32 kernel. */
static kiln_status embed_bwd_f16(const kiln_embed_args *a) {
    const int32_t *ids = CPU_PTR(a->ids, int32_t);
    const uint16_t *dout = CPU_PTR(a->dout, uint16_t);
    uint16_t *dtable = CPU_PTR(a->dtable, uint16_t);
    const int64_t rows = a->rows, dim = a->dim, vocab = a->vocab;
    int64_t *first = calloc((size_t)vocab + 1, sizeof *first);
    int64_t *order = malloc((size_t)(rows > 0 ? rows : 1) * sizeof *order);
    if (!first || !order) {
        free(first), free(order);
        return kiln_set_error(KILN_ERR_MEMORY, "cpu embed_bwd: out of host memory");
    }
    for (int64_t r = 0; r < rows; r++) first[ids[r] + 1]++;
    for (int64_t v = 0; v < vocab; v++) first[v + 1] += first[v]; /* first[v]: where id v's positions start */
    for (int64_t r = 0; r < rows; r++) order[first[ids[r]]++] = r; /* first[v] ends past v's positions ... */
    for (int64_t v = vocab; v > 0; v--) first[v] = first[v - 1];    /* ... so shift it back */
    first[0] = 0;
    const int64_t blocks = (dim + EMBED_COL_BLOCK - 1) / EMBED_COL_BLOCK;
#pragma omp parallel for if (rows * dim > CPU_PAR_MIN)
    for (int64_t blk = 0; blk < blocks; blk++) {
        const int64_t j0 = blk * EMBED_COL_BLOCK, width = dim - j0 < EMBED_COL_BLOCK ? dim - j0 : EMBED_COL_BLOCK;
        float acc[EMBED_COL_BLOCK], add[EMBED_COL_BLOCK];
        for (int64_t k = 0; k < rows;) { /* one id's run of positions at a time */
            const int64_t id = ids[order[k]], end = first[id + 1];
            uint16_t *dst = dtable + id * dim + j0;
            kiln_f16_to_f32_n(dst, acc, width);
            for (; k < end; k++) {
                kiln_f16_to_f32_n(dout + order[k] * dim + j0, add, width);
                for (int64_t j = 0; j < width; j++) acc[j] += add[j];
            }
            kiln_f32_to_f16_n(acc, dst, width);
        }
    }
    free(first), free(order);
    return KILN_OK;
}

/* Several positions may hold the same id, so parallelizing over positions would race on
 * the shared table row. Instead each task owns a block of columns and walks every
 * position in order: disjoint writes, and the same summation order on every run. */
kiln_status cpu_embed_bwd(void *dev, const kiln_embed_args *a) {
    (void)dev;
    kiln_status s = check_ids(a, "embedding backward");
    if (s) return s;
    if (a->dtype == KILN_F16) return embed_bwd_f16(a);
    if (a->dtype != KILN_F32)
        return kiln_set_error(KILN_ERR_DTYPE, "cpu embed_bwd: the table must be f32 or f16, got %s",
                              kiln_dtype_name(a->dtype));
    const int32_t *ids = CPU_PTR(a->ids, int32_t);
    const float *dout = CPU_PTR(a->dout, float);
    float *dtable = CPU_PTR(a->dtable, float);
    int64_t rows = a->rows, dim = a->dim;
    int64_t blocks = (dim + EMBED_COL_BLOCK - 1) / EMBED_COL_BLOCK;
#pragma omp parallel for if (rows * dim > CPU_PAR_MIN)
    for (int64_t blk = 0; blk < blocks; blk++) {
        int64_t j0 = blk * EMBED_COL_BLOCK;
        int64_t j1 = j0 + EMBED_COL_BLOCK < dim ? j0 + EMBED_COL_BLOCK : dim;
        for (int64_t r = 0; r < rows; r++) {
            float *dst = dtable + (int64_t)ids[r] * dim;
            const float *src = dout + r * dim;
            for (int64_t j = j0; j < j1; j++) dst[j] += src[j];
        }
    }
    return KILN_OK;
}
