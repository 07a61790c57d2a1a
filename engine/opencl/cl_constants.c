/* Host side of the constants family, as in the CPU backend's cpu_constants.c: fill
 * (cl/memory.cl through cl_transfer.c), the sinusoidal position table (cl/shape.cl) and the
 * inf/NaN check behind dynamic loss scaling (cl/reduce.cl). */
#include <string.h>

#include "opencl/cl_internal.h"

kiln_status cl_sinusoid(void *dev, const kiln_sinusoid_args *a) {
    cl_dev *d = dev;
    cl_call c = cl_begin_dt(d, "shape", "sinusoid", a->dtype);
    cl_arg_op(&c, CL_OP(sinusoid, out), a->out, kiln_dtype_size(a->dtype));
    cl_arg_i64(&c, a->channels);
    size_t global[2] = {(size_t)a->channels, (size_t)a->positions}, local[2] = {d->wg_elem, 1};
    return cl_run(&c, 2, global, local);
}

kiln_status cl_check_finite(void *dev, const kiln_finite_args *a) {
    cl_dev *d = dev;
    cl_call c = cl_begin(d, "reduce", "check_finite");
    cl_arg_op(&c, CL_OP(check_finite, x), a->x, kiln_dtype_size(a->dtype));
    cl_arg_i64(&c, a->n);
    cl_arg_i32(&c, (int)a->dtype);
    cl_arg_op(&c, CL_OP(check_finite, flag), a->flag, 4);
    return cl_run_rows(&c, cl_groups_for(d, (size_t)a->n));
}

kiln_status cl_fill(void *dev, const kiln_fill_args *a) {
    cl_dev *d = dev;
    uint32_t pattern;
    size_t size = kiln_dtype_size(a->dtype);
    if (a->dtype == KILN_F32) {
        memcpy(&pattern, &a->value, 4);
    } else if (a->dtype == KILN_F16) {
        pattern = kiln_f32_to_f16(a->value);
    } else {
        int32_t i = (int32_t)a->value;
        memcpy(&pattern, &i, 4);
    }
    return cl_fill_mem(d, a->dst.buf->block->mem, a->dst.buf->off + a->dst.off,
                       a->n > 0 ? (size_t)a->n : 0, size, pattern);
}
