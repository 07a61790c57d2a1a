/* CPU y = s * x and dx += s * dy; f16 through widened copies (cpu_f16.h). */
#include "cpu/cpu_f16.h"
#include "cpu/cpu_internal.h"

kiln_status cpu_smul_fwd(void *dev, const kiln_smul_args *a) {
    if (a->dtype != KILN_F32) {
        kiln_smul_args w = *a;
        w.dtype = KILN_F32;
        cpu_widen s;
        cpu_widen_init(&s, a->dtype, "smul_fwd");
        cpu_widen_operand(&s, &w.x, a->n, CPU_IN);
        cpu_widen_operand(&s, &w.y, a->n, CPU_OUT);
        return cpu_widen_finish(&s, s.status ? s.status : cpu_smul_fwd(dev, &w));
    }
    (void)dev;
    const float *x = CPU_PTR(a->x, float);
    float *y = CPU_PTR(a->y, float);
    for (int64_t i = 0; i < a->n; i++) y[i] = a->s * x[i];
    return KILN_OK;
}

kiln_status cpu_smul_bwd(void *dev, const kiln_smul_args *a) {
    if (a->dtype != KILN_F32) {
        kiln_smul_args w = *a;
        w.dtype = KILN_F32;
        cpu_widen s;
        cpu_widen_init(&s, a->dtype, "smul_bwd");
        cpu_widen_operand(&s, &w.dy, a->n, CPU_IN);
        cpu_widen_operand(&s, &w.dx, a->n, CPU_INOUT);
        return cpu_widen_finish(&s, s.status ? s.status : cpu_smul_bwd(dev, &w));
    }
    (void)dev;
    const float *dy = CPU_PTR(a->dy, float);
    float *dx = CPU_PTR(a->dx, float);
    for (int64_t i = 0; i < a->n; i++) dx[i] += a->s * dy[i];
    return KILN_OK;
}
