/* CPU kernels of the optimizer: the clipping coefficient and the Adam(W) update.
 *
 * Both follow kiln_clip_args / kiln_adam_args in core/backend.h to the letter and in f32
 * arithmetic, so that the GPU kernels (which compute in f32) can be compared with them
 * closely. */
#include <math.h>

#include "cpu/cpu_internal.h"

kiln_status cpu_clip_coef(void *dev, const kiln_clip_args *a) {
    (void)dev;
    float norm = sqrtf(CPU_PTR(a->sumsq, float)[0]) * a->unscale;
    float coef = a->unscale;
    if (a->clip > 0) {
        float ratio = a->clip / (norm + 1e-6f);
        /* written as a comparison rather than fminf so a NaN norm behaves like the GPU
         * kernels' select: the ratio is not taken (the skip flag handles non-finite steps) */
        if (ratio < 1.0f) coef *= ratio;
    }
    CPU_PTR(a->coef, float)[0] = coef;
    CPU_PTR(a->norm, float)[0] = norm;
    return KILN_OK;
}

/* One element of the update; `g` is the raw gradient (before coef). */
static inline void adam_element(const kiln_adam_args *a, float coef, float g, float *p,
                                float *m, float *v) {
    float pv = *p;
    g *= coef;
    if (!a->decoupled && a->weight_decay != 0.0f) g += a->weight_decay * pv;
    float mv = a->beta1 * *m + (1.0f - a->beta1) * g;
    float vv = a->beta2 * *v + (1.0f - a->beta2) * g * g;
    if (a->decoupled) pv -= a->lr * a->weight_decay * pv;
    pv -= a->lr * (mv / a->bc1) / (sqrtf(vv / a->bc2) + a->eps);
    *m = mv;
    *v = vv;
    *p = pv;
}

kiln_status cpu_adam(void *dev, const kiln_adam_args *a) {
    (void)dev;
    if (CPU_HAS(a->skip) && CPU_PTR(a->skip, int32_t)[0] != 0) return KILN_OK;
    if (a->grad_dtype != KILN_F32 && a->grad_dtype != KILN_F16)
        return kiln_set_error(KILN_ERR_DTYPE, "adam: gradients must be f32 or f16, got %s",
                              kiln_dtype_name(a->grad_dtype));
    const float coef = CPU_HAS(a->coef) ? CPU_PTR(a->coef, float)[0] : 1.0f;
    float *p = CPU_PTR(a->param, float), *m = CPU_PTR(a->m, float), *v = CPU_PTR(a->v, float);
    uint16_t *half = CPU_HAS(a->half_copy) ? CPU_PTR(a->half_copy, uint16_t) : NULL;
    const int64_t n = a->n;
    if (a->grad_dtype == KILN_F32) {
        const float *g = CPU_PTR(a->grad, float);
#pragma omp parallel for if (n > CPU_PAR_MIN)
        for (int64_t i = 0; i < n; i++) {
            adam_element(a, coef, g[i], p + i, m + i, v + i);
            if (half) half[i] = kiln_f32_to_f16(p[i]);
        }
    } else {
        const uint16_t *g = CPU_PTR(a->grad, uint16_t);
#pragma omp parallel for if (n > CPU_PAR_MIN)
        for (int64_t i = 0; i < n; i++) {
            adam_element(a, coef, kiln_f16_to_f32(g[i]), p + i, m + i, v + i);
            if (half) half[i] = kiln_f32_to_f16(p[i]);
        }
    }
    return KILN_OK;
}
