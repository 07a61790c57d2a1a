/* Dtype checks shared by the ops (declared in core/internal.h). An op's floating operands
 * all have one dtype, f32 or f16: the kernels take a single dtype per call (backend.h,
 * "Precision"), and a silent conversion inside an op would hide where the precision of a
 * model changes. So a mix is an error that says which operand to convert. */
#include "core/internal.h"

kiln_status kiln_check_float(const char *op, const kiln_tensor *t, const char *what) {
    if (t->dtype == KILN_F32 || t->dtype == KILN_F16) return KILN_OK;
    return kiln_set_error(KILN_ERR_DTYPE, "%s: %s must be f32 or f16, got %s", op, what, kiln_dtype_name(t->dtype));
}

kiln_status kiln_check_same_dtype(const char *op, const kiln_tensor *a, const char *a_name,
                                  const kiln_tensor *b, const char *b_name) {
    if (!b) return KILN_OK;
    kiln_status s = kiln_check_float(op, a, a_name);
    if (!s) s = kiln_check_float(op, b, b_name);
    if (s || a->dtype == b->dtype) return s;
    return kiln_set_error(KILN_ERR_DTYPE, "%s: %s is %s but %s is %s; convert one with kiln_cast", op, a_name,
                          kiln_dtype_name(a->dtype), b_name, kiln_dtype_name(b->dtype));
}
