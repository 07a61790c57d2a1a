/* A GEMM whose operands are larger than one binding: several GEMMs on sub-blocks.
 *
 * Why: GPT-2's output layer multiplies by the token table, 50257 x 768 floats (154 MB),
 * beyond lavapipe's 128 MiB binding; its gradient is as large. On a CPU-class device the
 * packed kernels' panels must fit a binding too, or the product falls to the tiled kernel.
 *
 * The product is halved along one axis until every part fits (vk_gemm_fits), chosen by the
 * operand that does not fit: a batched operand splits the batch; otherwise the axis along
 * its stored rows, which shrinks its byte span (a stored row is ld elements apart). M and N
 * parts are independent products on sub-views. K parts add up: the first applies beta and
 * the bias, the rest add to C (beta = 1). Under an f16 C this runs on the f32 scratch
 * (vk_gemm_f16_out.c), so C is still rounded to f16 once. */
#include "vk_internal.h"

typedef enum { AXIS_BATCH, AXIS_M, AXIS_N, AXIS_K } gemm_axis;

static int64_t axis_size(const kiln_gemm_args *a, gemm_axis x) {
    return x == AXIS_BATCH ? a->batch : x == AXIS_M ? a->m : x == AXIS_N ? a->n : a->k;
}

/* The first half of an axis: a multiple of 64 when the axis is long, so the parts keep
 * whole blocks of the kernels. */
static int64_t first_half(int64_t size) {
    int64_t h = (size + 1) / 2;
    return size > 128 ? (h + 63) / 64 * 64 : h;
}

/* The part [from, from + len) of the product along axis x. */
static kiln_gemm_args part(const kiln_gemm_args *a, gemm_axis x, int64_t from, int64_t len) {
    kiln_gemm_args p = *a;
    int64_t ea = kiln_dtype_size(a->a_dtype), eb = kiln_dtype_size(a->b_dtype), ec = kiln_dtype_size(a->c_dtype);
    switch (x) {
    case AXIS_BATCH:
        p.batch = len;
        p.a = vk_ref_at(a->a, from * a->stride_a * ea);
        p.b = vk_ref_at(a->b, from * a->stride_b * eb);
        p.c = vk_ref_at(a->c, from * a->stride_c * ec);
        break;
    case AXIS_M: /* row `from` of op(A): a row of stored A, or a column when transposed */
        p.m = len;
        p.a = vk_ref_at(a->a, from * (a->trans_a ? 1 : a->lda) * ea);
        p.c = vk_ref_at(a->c, from * a->ldc * ec);
        break;
    case AXIS_N: /* column `from` of op(B): a column of stored B, or a row when transposed */
        p.n = len;
        p.b = vk_ref_at(a->b, from * (a->trans_b ? a->ldb : 1) * eb);
        p.c = vk_ref_at(a->c, from * ec);
        p.bias = vk_ref_at(a->bias, from * 4); /* the kernels take the bias in f32 */
        break;
    case AXIS_K:
        p.k = len;
        p.a = vk_ref_at(a->a, from * (a->trans_a ? a->lda : 1) * ea);
        p.b = vk_ref_at(a->b, from * (a->trans_b ? 1 : a->ldb) * eb);
        if (from > 0) { /* later K parts add to what the first wrote */
            p.beta = 1.0f;
            p.bias.buf = NULL;
            p.bias.off = 0;
        }
        break;
    }
    return p;
}

void vk_gemm_spans(const kiln_gemm_args *a, int64_t bytes[3]) {
    int64_t ba = a->stride_a ? a->batch : 1, bb = a->stride_b ? a->batch : 1;
    int64_t one_a = a->trans_a ? (a->k - 1) * a->lda + a->m : (a->m - 1) * a->lda + a->k;
    int64_t one_b = a->trans_b ? (a->n - 1) * a->ldb + a->k : (a->k - 1) * a->ldb + a->n;
    bytes[0] = ((a->batch - 1) * a->stride_c + (a->m - 1) * a->ldc + a->n) * (int64_t)kiln_dtype_size(a->c_dtype);
    bytes[1] = a->k > 0 ? ((ba - 1) * a->stride_a + one_a) * (int64_t)kiln_dtype_size(a->a_dtype) : 0;
    bytes[2] = a->k > 0 ? ((bb - 1) * a->stride_b + one_b) * (int64_t)kiln_dtype_size(a->b_dtype) : 0;
}

/* The axis to halve: by the first operand (C, then A, then B) whose span does not fit. */
static gemm_axis pick_axis(const vk_dev *d, const kiln_gemm_args *a) {
    int64_t limit = (int64_t)d->max_operand_bytes;
    int64_t bytes[3];
    vk_gemm_spans(a, bytes);
    /* each operand: its batch stride, its span, its stored rows and columns */
    struct {
        int64_t stride, bytes;
        gemm_axis rows, cols;
    } ops[3] = {
        {.stride = a->stride_c, .bytes = bytes[0], .rows = AXIS_M, .cols = AXIS_N},
        {.stride = a->stride_a,
         .bytes = bytes[1],
         .rows = a->trans_a ? AXIS_K : AXIS_M,
         .cols = a->trans_a ? AXIS_M : AXIS_K},
        {.stride = a->stride_b,
         .bytes = bytes[2],
         .rows = a->trans_b ? AXIS_N : AXIS_K,
         .cols = a->trans_b ? AXIS_K : AXIS_N},
    };
    /* an operand's packed panel is about its m*k or k*n floats even where its span fits, so
     * when only the panels are too large, the largest operand decides */
    int pick = -1;
    for (int i = 0; i < 3 && pick < 0; i++)
        if (ops[i].bytes > limit) pick = i;
    if (pick < 0) pick = ops[1].bytes >= ops[2].bytes ? 1 : 2;
    if (a->batch > 1 && ops[pick].stride) return AXIS_BATCH;
    if (axis_size(a, ops[pick].rows) > 1) return ops[pick].rows;
    if (axis_size(a, ops[pick].cols) > 1) return ops[pick].cols;
    return a->batch > 1 ? AXIS_BATCH : AXIS_K;
}

kiln_status vk_gemm_split(vk_dev *d, const kiln_gemm_args *a) {
    if (a->m <= 0 || a->n <= 0 || a->batch <= 0 || vk_gemm_fits(d, a)) return vk_gemm_piece(d, a);
    gemm_axis x = pick_axis(d, a);
    int64_t size = axis_size(a, x);
    if (size <= 1) /* one element of every axis and still too large: cannot happen at sane ld */
        return vk_gemm_piece(d, a);
    int64_t h = first_half(size);
    kiln_gemm_args lo = part(a, x, 0, h), hi = part(a, x, h, size - h);
    kiln_status s = vk_gemm_split(d, &lo);
    return s ? s : vk_gemm_split(d, &hi);
}
