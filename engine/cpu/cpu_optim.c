/* CPU kernels of the optimizer: the clipping coefficient and the Adam(W) update.
 *
 * Both follow kiln_clip_args / kiln_adam_args in core/backend.h to the letter and in f32
 * arithmetic, so that the GPU kernels (which compute in f32) can be compared with them
 * closely. */
#include <math.h>

#include "cpu/cpu_internal.h"
#include "cpu/cpu_vmath.h"

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

/* Elements per pass of the update: its temporaries stay in L1. */
#define ADAM_BLOCK 512

/* The update of n <= ADAM_BLOCK elements, in three passes so that two of them vectorize:
 * libm's sqrtf sets errno on a negative input, and that possible call keeps any loop
 * containing it scalar (the argument is never negative here, but the compiler cannot know
 * that). Each element sees exactly the arithmetic of the contract, in its order:
 *   g = grad * coef (+ wd * p when coupled); m = b1 m + (1-b1) g; v = b2 v + (1-b2) g g
 *   p -= lr * wd * p (decoupled); p -= lr * (m / bc1) / (sqrt(v / bc2) + eps). */
CPU_VECTOR_CLONES static void adam_block(const kiln_adam_args *a, float coef, const float *grad, float *p,
                                         float *m, float *v, int64_t n) {
    const float b1 = a->beta1, b2 = a->beta2, wd = a->weight_decay, lr = a->lr;
    const float bc1 = a->bc1, bc2 = a->bc2, eps = a->eps;
    const int decoupled = a->decoupled, coupled = !decoupled && wd != 0.0f;
    float den[ADAM_BLOCK];
    for (int64_t i = 0; i < n; i++) {
        float g = grad[i] * coef;
        g = cpu_select(coupled, g + wd * p[i], g);
        const float mv = b1 * m[i] + (1.0f - b1) * g;
        const float vv = b2 * v[i] + (1.0f - b2) * g * g;
        m[i] = mv;
        v[i] = vv;
        den[i] = vv / bc2;
        p[i] = cpu_select(decoupled, p[i] - lr * wd * p[i], p[i]);
    }
    for (int64_t i = 0; i < n; i++) den[i] = sqrtf(den[i]); /* scalar: see above */
    for (int64_t i = 0; i < n; i++) p[i] -= lr * (m[i] / bc1) / (den[i] + eps);
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
    const float *g32 = a->grad_dtype == KILN_F32 ? CPU_PTR(a->grad, float) : NULL;
    const uint16_t *g16 = a->grad_dtype == KILN_F16 ? CPU_PTR(a->grad, uint16_t) : NULL;
    const int64_t n = a->n, blocks = (n + ADAM_BLOCK - 1) / ADAM_BLOCK;
#pragma omp parallel for if (cpu_use_threads(n, CPU_PAR_MIN / 4))
    for (int64_t b = 0; b < blocks; b++) {
        const int64_t i0 = b * ADAM_BLOCK, len = n - i0 < ADAM_BLOCK ? n - i0 : ADAM_BLOCK;
        float widened[ADAM_BLOCK];
        const float *g = g32 ? g32 + i0 : widened;
        if (g16)
            for (int64_t i = 0; i < len; i++) widened[i] = kiln_f16_to_f32(g16[i0 + i]);
        adam_block(a, coef, g, p + i0, m + i0, v + i0, len);
        if (half)
            for (int64_t i = 0; i < len; i++) half[i0 + i] = kiln_f32_to_f16(p[i0 + i]);
    }
    return KILN_OK;
}
