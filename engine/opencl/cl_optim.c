/* Host side of cl/optim.cl: the gradient-clipping coefficient and the Adam(W) update. */
#include "opencl/cl_internal.h"

kiln_status cl_clip_coef(void *dev, const kiln_clip_args *a) {
    cl_call c = cl_begin(dev, "optim", "clip_coef");
    cl_arg_op(&c, CL_OP(clip_coef, sumsq), a->sumsq, 4);
    cl_arg_op(&c, CL_OP(clip_coef, coef), a->coef, 4);
    cl_arg_op(&c, CL_OP(clip_coef, norm), a->norm, 4);
    cl_arg_f32(&c, a->clip);
    cl_arg_f32(&c, a->unscale);
    cl_arg_i32(&c, cl_has(a->coef));
    cl_arg_i32(&c, cl_has(a->norm));
    size_t one = 1;
    return cl_run(&c, 1, &one, &one);
}

kiln_status cl_adam(void *dev, const kiln_adam_args *a) {
    cl_call c = cl_begin(dev, "optim", "adam");
    cl_arg_op(&c, CL_OP(adam, param), a->param, 4);
    cl_arg_op(&c, CL_OP(adam, grad), a->grad, kiln_dtype_size(a->grad_dtype));
    cl_arg_op(&c, CL_OP(adam, m), a->m, 4);
    cl_arg_op(&c, CL_OP(adam, v), a->v, 4);
    cl_arg_op(&c, CL_OP(adam, half_copy), a->half_copy, 2);
    cl_arg_op(&c, CL_OP(adam, coef), a->coef, 4);
    cl_arg_op(&c, CL_OP(adam, skip), a->skip, 4);
    cl_arg_i32(&c, (int)a->grad_dtype);
    cl_arg_i64(&c, a->n);
    cl_arg_f32(&c, a->lr);
    cl_arg_f32(&c, a->beta1);
    cl_arg_f32(&c, a->beta2);
    cl_arg_f32(&c, a->eps);
    cl_arg_f32(&c, a->weight_decay);
    cl_arg_f32(&c, a->bc1);
    cl_arg_f32(&c, a->bc2);
    cl_arg_i32(&c, a->decoupled);
    cl_arg_i32(&c, cl_has(a->half_copy));
    cl_arg_i32(&c, cl_has(a->coef));
    cl_arg_i32(&c, cl_has(a->skip));
    return cl_run_1d(&c, (size_t)a->n);
}
