/* CPU embedding: a row gather forward, a scatter-add backward. In f16 the gather moves
 * 2-byte rows (nothing to round); the backward adds in f32 on widened copies (cpu_f16.h),
 * so a row that several positions hit is rounded once, after all of its additions. */
#include <string.h>

#include "cpu/cpu_f16.h"
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

/* Several positions may hold the same id, so parallelizing over positions would race on
 * the shared table row. Instead each task owns a block of columns and walks every
 * position in order: disjoint writes, and the same summation order on every run. */
kiln_status cpu_embed_bwd(void *dev, const kiln_embed_args *a) {
    (void)dev;
    kiln_status s = check_ids(a, "embedding backward");
    if (s) return s;
    if (a->dtype != KILN_F32) {
        kiln_embed_args w = *a;
        w.dtype = KILN_F32;
        cpu_widen f;
        cpu_widen_init(&f, a->dtype, "embed_bwd");
        cpu_widen_operand(&f, &w.dout, a->rows * a->dim, CPU_IN);
        cpu_widen_operand(&f, &w.dtable, a->vocab * a->dim, CPU_INOUT);
        return cpu_widen_finish(&f, f.status ? f.status : cpu_embed_bwd(dev, &w));
    }
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
