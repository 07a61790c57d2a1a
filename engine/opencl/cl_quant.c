/* Host side of cl/quant.cl: the product with a quantized matrix. Q8_0, Q4_0 and Q4_1: one
 * work-item per output (qmatmul). The formats added with the K-quants (Q5_0 to Q6_K): a
 * work-group per output row and tile of KILN_ABI_CL_QMATMUL_TOKENS tokens, its lanes over
 * the row's blocks (qmatmul_rows): as many as the row has units of 32 weights, rounded up
 * to a power of 2, at most the device's row work-group (KILN_WG). */
#include "opencl/cl_internal.h"

static int per_output(int format) {
    return format == KILN_ABI_Q8_0 || format == KILN_ABI_Q4_0 || format == KILN_ABI_Q4_1;
}

kiln_status cl_qmatmul(void *dev, const kiln_qmatmul_args *a) {
    cl_dev *d = dev;
    if (a->format < KILN_ABI_Q8_0 || a->format > KILN_ABI_Q6_K) /* Q8_K: activations only */
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "opencl qmatmul: %d is not a weight format", a->format);
    size_t es = kiln_dtype_size(a->dtype);
    int rows = !per_output(a->format);
    cl_call c = cl_begin_dt(d, "quant", rows ? "qmatmul_rows" : "qmatmul", a->dtype);
#define QOP(operand) (rows ? CL_OP(qmatmul_rows, operand) : CL_OP(qmatmul, operand))
    cl_arg_op(&c, QOP(x), a->x, es);
    cl_arg_op(&c, QOP(w), a->w, 4);
    cl_arg_op(&c, QOP(bias), a->bias, es);
    cl_arg_op(&c, QOP(y), a->y, es);
#undef QOP
    cl_arg_i64(&c, a->m);
    cl_arg_i64(&c, a->n);
    cl_arg_i64(&c, a->k);
    cl_arg_i64(&c, a->row_words);
    cl_arg_i32(&c, a->format);
    cl_arg_i32(&c, cl_has(a->bias));
    if (rows) {
        size_t tiles = ((size_t)a->m + KILN_ABI_CL_QMATMUL_TOKENS - 1) / KILN_ABI_CL_QMATMUL_TOKENS;
        size_t lanes = 1, units = (size_t)a->k / 32;
        while (lanes < units && lanes < d->wg) lanes *= 2; /* d->wg: a power of 2 */
        size_t global[2] = {(size_t)a->n * lanes, tiles}, local[2] = {lanes, 1};
        return cl_run(&c, 2, global, local);
    }
    size_t global[2] = {(size_t)a->n, (size_t)a->m}, local[2] = {d->wg_elem, 1};
    return cl_run(&c, 2, global, local);
}

/* The transposed product (qmatmul_t): a work-group per 64 output columns and
 * KILN_ABI_QMATMUL_T_ROWS rows of dy, of the device's row work-group size (d->wg) up to 64
 * items; the kernel's items take 64 / that many columns each, at most 4. */
kiln_status cl_qmatmul_t(void *dev, const kiln_qmatmul_args *a) {
    cl_dev *d = dev;
    if (a->format < KILN_ABI_Q8_0 || a->format > KILN_ABI_Q6_K) /* Q8_K: activations only */
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "opencl qmatmul_t: %d is not a weight format", a->format);
    if (d->wg < 16) /* d->wg: a power of 2 */
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "opencl qmatmul_t: needs work-groups of 16, the device runs %zu",
                              d->wg);
    if (a->m == 0) return KILN_OK;
    size_t es = kiln_dtype_size(a->dtype), lanes = d->wg < 64 ? d->wg : 64;
    cl_call c = cl_begin_dt(d, "quant", "qmatmul_t", a->dtype);
    cl_arg_op(&c, CL_OP(qmatmul_t, dy), a->x, es);
    cl_arg_op(&c, CL_OP(qmatmul_t, w), a->w, 4);
    cl_arg_op(&c, CL_OP(qmatmul_t, y), a->y, es);
    cl_arg_i64(&c, a->m);
    cl_arg_i64(&c, a->n);
    cl_arg_i64(&c, a->k);
    cl_arg_i64(&c, a->row_words);
    cl_arg_i32(&c, a->format);
    size_t global[2] = {((size_t)a->k + 63) / 64 * lanes,
                        ((size_t)a->m + KILN_ABI_QMATMUL_T_ROWS - 1) / KILN_ABI_QMATMUL_T_ROWS};
    size_t local[2] = {lanes, 1};
    return cl_run(&c, 2, global, local);
}
