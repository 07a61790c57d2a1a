/* Host side of cl/quant.cl: the product with a quantized matrix. Q8_0, Q4_0 and Q4_1: one
 * work-item per output (qmatmul). The formats added with the K-quants (Q5_0 to Q6_K): a
 * work-group per output row and tile of KILN_ABI_CL_QMATMUL_TOKENS tokens, its lanes over
 * the row's blocks (qmatmul_rows). */
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
        size_t global[2] = {(size_t)a->n * d->wg, tiles}, local[2] = {d->wg, 1};
        return cl_run(&c, 2, global, local);
    }
    size_t global[2] = {(size_t)a->n, (size_t)a->m}, local[2] = {d->wg_elem, 1};
    return cl_run(&c, 2, global, local);
}
