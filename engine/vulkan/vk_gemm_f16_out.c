/* The GEMM slot: vk_gemm_piece, and for an f16 C (mixed precision) a wrapper around it, since
 * its kernels write f32. Like every kernel, it refuses f16 on a device without 16-bit
 * storage (vk_require_f16).
 *
 * C is widened into an f32 scratch matrix, the GEMM runs there (f32 accumulation, beta
 * applied in f32), and the result is rounded once back into C: the contract's "load to
 * f32, compute in f32, round once on store", at the price of two extra passes over C,
 * O(MN) against the GEMM's O(MNK). The whole span of C is widened and narrowed, gaps
 * between rows (ldc > n) and batches included: a gap belongs to some other tensor, and the
 * round trip f16 -> f32 -> f16 gives its elements back unchanged.
 *
 * An epilogue that stores f16 directly (gemm_tiled.comp, gemm_packed.comp) would save those
 * passes; until the GEMM kernels have one, this keeps every device correct. */
#include "vk_internal.h"

/* Elements that C spans: batch blocks stride_c apart, m rows ldc apart, n columns. */
static int64_t c_span(const kiln_gemm_args *a, int64_t batch, int64_t m) {
    return (batch - 1) * a->stride_c + (m - 1) * a->ldc + a->n;
}

/* One GEMM whose C (f16) spans `span` elements, through an f32 scratch of that size. */
static kiln_status through_f32(vk_dev *d, const kiln_gemm_args *a, int64_t span) {
    kiln_ref c32;
    kiln_status s = vk_scratch(d, (size_t)span * 4, &c32);
    if (s) return s;
    kiln_cast_args widen = {.src = a->c, .dst = c32, .n = span, .src_dtype = KILN_F16, .dst_dtype = KILN_F32};
    kiln_gemm_args g = *a;
    g.c = c32;
    g.c_dtype = KILN_F32;
    kiln_cast_args narrow = {.src = c32, .dst = a->c, .n = span, .src_dtype = KILN_F32, .dst_dtype = KILN_F16};
    /* with beta == 0 and no gaps, C's old contents matter nowhere: skip the widening */
    int gaps = a->ldc != a->n || (a->batch > 1 && a->stride_c != a->m * a->ldc);
    if (a->beta != 0.0f || gaps) s = vk_cast_piece(d, &widen);
    if (!s) s = vk_gemm_split(d, &g);
    if (!s) s = vk_cast_piece(d, &narrow);
    vk_buf_release(d, c32.buf);
    return s;
}

kiln_status vk_gemm(void *dev, const kiln_gemm_args *a) {
    vk_dev *d = vk_of(dev);
    int f16 = a->a_dtype == KILN_F16 || a->b_dtype == KILN_F16 || a->c_dtype == KILN_F16;
    if (f16 && vk_require_f16(d, "gemm")) return kiln_error_status();
    if (a->c_dtype != KILN_F16) return vk_gemm_split(d, a);
    if (a->m <= 0 || a->n <= 0 || a->batch <= 0) return KILN_OK;
    /* the scratch is twice C's bytes: beyond one binding, go batch by batch and in row
     * blocks, each a GEMM of its own */
    int64_t limit = (int64_t)(d->max_operand_bytes / 4);
    int64_t span = c_span(a, a->batch, a->m);
    if (span <= limit) return through_f32(d, a, span);
    if (a->n > limit)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "vulkan gemm: a row of %lld f16 outputs exceeds one binding of %s",
                              (long long)a->n, d->name);
    int64_t rows = (limit - a->n) / a->ldc + 1; /* per block: (rows - 1) * ldc + n <= limit */
    if (rows > a->m) rows = a->m;
    for (int64_t b = 0; b < a->batch; b++) {
        for (int64_t m0 = 0; m0 < a->m; m0 += rows) {
            kiln_gemm_args g = *a;
            g.batch = 1;
            g.m = a->m - m0 < rows ? a->m - m0 : rows;
            /* row m0 of op(A): a row of stored A, or a column when A is transposed */
            g.a.off += (size_t)(b * a->stride_a + m0 * (a->trans_a ? 1 : a->lda)) * kiln_dtype_size(a->a_dtype);
            g.b.off += (size_t)(b * a->stride_b) * kiln_dtype_size(a->b_dtype);
            g.c.off += (size_t)(b * a->stride_c + m0 * a->ldc) * 2;
            kiln_status s = through_f32(d, &g, c_span(&g, 1, g.m));
            if (s) return s;
        }
    }
    return KILN_OK;
}
