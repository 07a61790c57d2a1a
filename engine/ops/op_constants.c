/* Ops that are not differentiable: the sinusoidal position table, and the device-side
 * inf/NaN check that dynamic loss scaling reads once per step. */
#include "core/internal.h"

kiln_tensor *kiln_sinusoid_table(kiln_ctx *ctx, int64_t positions, int64_t channels) {
    if (!ctx) return kiln_fail(KILN_ERR_ARGUMENT, "sinusoid_table: ctx is NULL");
    if (positions < 1 || channels < 1)
        return kiln_fail(KILN_ERR_ARGUMENT, "sinusoid_table: %lld positions x %lld channels; both must be >= 1",
                         (long long)positions, (long long)channels);
    int64_t shape[2] = {positions, channels};
    kiln_tensor *out = kiln_op_output(ctx, KILN_F32, 2, shape);
    if (!out) return NULL;
    kiln_sinusoid_args a = {
        .out = kiln_ref_of(out),
        .positions = positions,
        .channels = channels,
        .dtype = out->dtype,
    };
    if (KILN_CALL(ctx, sinusoid, &a)) return NULL;
    return out;
}

kiln_status kiln_check_finite(kiln_tensor *x, kiln_tensor *flag) {
    if (!x || !flag) {
        /* a NULL from a failed op keeps that op's message */
        kiln_status earlier = kiln_error_status();
        return earlier ? earlier : kiln_set_error(KILN_ERR_ARGUMENT, "check_finite: %s is NULL", x ? "flag" : "x");
    }
    if (x->dtype != KILN_F32 && x->dtype != KILN_F16)
        return kiln_set_error(KILN_ERR_DTYPE, "check_finite: x must be f32 or f16, got %s", kiln_dtype_name(x->dtype));
    if (flag->dtype != KILN_I32)
        return kiln_set_error(KILN_ERR_DTYPE, "check_finite: flag must be an i32 scalar, got %s",
                              kiln_dtype_name(flag->dtype));
    if (kiln_numel(flag) != 1) {
        char sf[64];
        return kiln_set_error(KILN_ERR_SHAPE, "check_finite: flag must be an i32 scalar, got shape %s",
                              kiln_shape_str(flag, sf, sizeof sf));
    }
    if (x->ctx != flag->ctx)
        return kiln_set_error(KILN_ERR_ARGUMENT, "check_finite: x and flag belong to different contexts");
    kiln_finite_args a = {
        .x = kiln_ref_of(x),
        .flag = kiln_ref_of(flag),
        .n = kiln_numel(x),
        .dtype = x->dtype,
    };
    return KILN_CALL(x->ctx, check_finite, &a);
}
