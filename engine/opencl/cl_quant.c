/* Host side of cl/quant.cl: the product with a quantized matrix, one work-item per output. */
#include "opencl/cl_internal.h"

kiln_status cl_qmatmul(void *dev, const kiln_qmatmul_args *a) {
    cl_dev *d = dev;
    if (a->format > KILN_ABI_Q4_1)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "opencl qmatmul: quantization format %d is not supported yet",
                              a->format);
    size_t es = kiln_dtype_size(a->dtype);
    cl_call c = cl_begin_dt(d, "quant", "qmatmul", a->dtype);
    cl_arg_op(&c, CL_OP(qmatmul, x), a->x, es);
    cl_arg_op(&c, CL_OP(qmatmul, w), a->w, 4);
    cl_arg_op(&c, CL_OP(qmatmul, bias), a->bias, es);
    cl_arg_op(&c, CL_OP(qmatmul, y), a->y, es);
    cl_arg_i64(&c, a->m);
    cl_arg_i64(&c, a->n);
    cl_arg_i64(&c, a->k);
    cl_arg_i64(&c, a->row_words);
    cl_arg_i32(&c, a->format);
    cl_arg_i32(&c, cl_has(a->bias));
    size_t global[2] = {(size_t)a->n, (size_t)a->m}, local[2] = {d->wg_elem, 1};
    return cl_run(&c, 2, global, local);
}
