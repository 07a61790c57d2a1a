/* CPU activations: y = f(x) and dx += dy * f'(x), elementwise.
 *
 * GELU is the tanh approximation GPT-2 trained with (and Hugging Face calls "gelu_new"):
 *   f(x) = 0.5 x (1 + tanh(u)),  u = sqrt(2/pi) (x + 0.044715 x^3). */
#include <math.h>

#include "cpu/cpu_internal.h"

#define GELU_K 0.7978845608028654f /* sqrt(2 / pi) */
#define GELU_C 0.044715f

static float act_value(int kind, float x) {
    switch (kind) {
    case KILN_ACT_GELU: return 0.5f * x * (1.0f + tanhf(GELU_K * (x + GELU_C * x * x * x)));
    case KILN_ACT_RELU: return x > 0.0f ? x : 0.0f;
    case KILN_ACT_SILU: return x / (1.0f + expf(-x));
    case KILN_ACT_RELU2: return x > 0.0f ? x * x : 0.0f;
    default: return sqrtf(x); /* KILN_ACT_SQRT, checked by the caller */
    }
}

/* f'(x). ReLU's kink at 0 takes the derivative 0, as PyTorch does. */
static float act_derivative(int kind, float x) {
    switch (kind) {
    case KILN_ACT_GELU: {
        float t = tanhf(GELU_K * (x + GELU_C * x * x * x));
        float du = GELU_K * (1.0f + 3.0f * GELU_C * x * x);
        return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du;
    }
    case KILN_ACT_RELU: return x > 0.0f ? 1.0f : 0.0f;
    case KILN_ACT_SILU: {
        float s = 1.0f / (1.0f + expf(-x));
        return s * (1.0f + x * (1.0f - s));
    }
    default: return x > 0.0f ? 2.0f * x : 0.0f; /* KILN_ACT_RELU2 */
    }
}

static int known_kind(int kind, int with_sqrt) {
    return (kind >= KILN_ACT_GELU && kind <= KILN_ACT_RELU2) || (with_sqrt && kind == KILN_ACT_SQRT);
}

kiln_status cpu_act_fwd(void *dev, const kiln_act_args *a) {
    (void)dev;
    if (!known_kind(a->kind, 1))
        return kiln_set_error(KILN_ERR_ARGUMENT, "cpu act_fwd: unknown activation kind %d", a->kind);
    const float *x = CPU_PTR(a->x, float);
    float *y = CPU_PTR(a->y, float);
    int64_t n = a->n;
    int kind = a->kind;
#pragma omp parallel for if (n > CPU_PAR_MIN)
    for (int64_t i = 0; i < n; i++) y[i] = act_value(kind, x[i]);
    return KILN_OK;
}

kiln_status cpu_act_bwd(void *dev, const kiln_act_args *a) {
    (void)dev;
    if (!known_kind(a->kind, 0))
        return kiln_set_error(KILN_ERR_ARGUMENT, "cpu act_bwd: activation kind %d has no backward", a->kind);
    const float *x = CPU_PTR(a->x, float), *dy = CPU_PTR(a->dy, float);
    float *dx = CPU_PTR(a->dx, float);
    int64_t n = a->n;
    int kind = a->kind;
#pragma omp parallel for if (n > CPU_PAR_MIN)
    for (int64_t i = 0; i < n; i++) dx[i] += dy[i] * act_derivative(kind, x[i]);
    return KILN_OK;
}
