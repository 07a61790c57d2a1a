/* Host side of cl/rope.cl: rotary position embeddings, one kernel turning by the angle
 * (forward, x -> y) or by its negative (backward, dy -> dx, accumulating or not). */
#include <math.h>

#include "opencl/cl_internal.h"

static kiln_status cl_rope(cl_dev *d, const kiln_rope_args *a, kiln_ref in, kiln_ref out, float turn, int accumulate) {
    size_t es = kiln_dtype_size(a->dtype);
    cl_call c = cl_begin_dt(d, "rope", "rope", a->dtype);
    cl_arg_op(&c, CL_OP(rope, x), in, es);
    cl_arg_op(&c, CL_OP(rope, factors), a->freq_factors, 4);
    cl_arg_op(&c, CL_OP(rope, y), out, es);
    cl_arg_i64(&c, a->seq);
    cl_arg_i64(&c, a->heads);
    cl_arg_i64(&c, a->dim / 2);
    cl_arg_i64(&c, a->pos0);
    cl_arg_f32(&c, (float)log2((double)a->base));
    cl_arg_i32(&c, a->layout);
    cl_arg_f32(&c, turn);
    cl_arg_i32(&c, accumulate);
    cl_arg_i32(&c, cl_has(a->freq_factors));
    size_t global[2] = {(size_t)(a->dim / 2), (size_t)(a->batch * a->seq)};
    return cl_run(&c, 2, global, NULL);
}

kiln_status cl_rope_fwd(void *dev, const kiln_rope_args *a) { return cl_rope(dev, a, a->x, a->y, 1.0f, 0); }

kiln_status cl_rope_bwd(void *dev, const kiln_rope_args *a) {
    return cl_rope(dev, a, a->dy, a->dx, -1.0f, a->accumulate);
}
