/* Host side of the elementwise kernels, as the CPU backend's cpu_elementwise.c: axpby,
 * binary (cl/elementwise.cl) and sum_rows (cl/reduce.cl).
 *
 * Every kernel with a `dtype` takes the kernel of the same name from the f16 or f32 variant
 * of its family (cl_begin_dt) and passes its operands with that element size; the f32-only
 * operands (num, den) keep 4. */
#include "opencl/cl_internal.h"

kiln_status cl_axpby(void *dev, const kiln_axpby_args *a) {
    size_t es = kiln_dtype_size(a->dtype);
    cl_call c = cl_begin_dt(dev, "elementwise", "axpby", a->dtype);
    cl_arg_op(&c, CL_OP(axpby, x), a->x, es);
    cl_arg_op(&c, CL_OP(axpby, y), a->y, es);
    cl_arg_op(&c, CL_OP(axpby, num), a->num, 4);
    cl_arg_op(&c, CL_OP(axpby, den), a->den, 4);
    cl_arg_i64(&c, a->n);
    cl_arg_f32(&c, a->alpha);
    cl_arg_f32(&c, a->beta);
    cl_arg_i32(&c, cl_has(a->x));
    cl_arg_i32(&c, cl_has(a->num));
    cl_arg_i32(&c, cl_has(a->den));
    return cl_run_1d(&c, (size_t)a->n);
}

kiln_status cl_binary(void *dev, const kiln_binary_args *a) {
    static const char *const kernels[] = {
        [KILN_ABI_BIN_ADD] = "binary_add",
        [KILN_ABI_BIN_SUB] = "binary_sub",
        [KILN_ABI_BIN_MUL] = "binary_mul",
        [KILN_ABI_BIN_DIV] = "binary_div",
    };
    if ((unsigned)a->op > KILN_BIN_DIV)
        return kiln_set_error(KILN_ERR_ARGUMENT, "opencl binary: unknown op %d", (int)a->op);
    size_t es = kiln_dtype_size(a->dtype);
    cl_call c = cl_begin_dt(dev, "elementwise", kernels[a->op], a->dtype);
    cl_arg_op(&c, CL_OP(BINARY, a), a->a, es);
    cl_arg_op(&c, CL_OP(BINARY, b), a->b, es);
    cl_arg_op(&c, CL_OP(BINARY, out), a->out, es);
    cl_arg_i64(&c, a->nb);
    /* grid (nb, n / nb) (empty when n is 0); whole groups along a row unless rows are short */
    size_t wg = ((cl_dev *)dev)->wg_elem;
    size_t global[2] = {a->nb > 0 ? (size_t)a->nb : 0, a->nb > 0 ? (size_t)(a->n / a->nb) : 0};
    size_t local[2] = {wg, 1};
    return cl_run(&c, 2, global, global[0] >= wg ? local : NULL);
}

kiln_status cl_sum_rows(void *dev, const kiln_sum_rows_args *a) {
    size_t es = kiln_dtype_size(a->dtype);
    cl_call c = cl_begin_dt(dev, "reduce", "sum_rows", a->dtype);
    cl_arg_op(&c, CL_OP(sum_rows, x), a->x, es);
    cl_arg_op(&c, CL_OP(sum_rows, out), a->out, es);
    cl_arg_i64(&c, a->rows);
    cl_arg_i64(&c, a->cols);
    cl_arg_f32(&c, a->alpha);
    return cl_run_column_tiles(&c, a->cols);
}
