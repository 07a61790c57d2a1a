/* Activations: forward y = f(x), backward dx += dy * f'(x), one work-item per element.
 * One kernel per function (the kind is a compile-time constant in each), so that the
 * compiler sees straight-line code: PoCL vectorizes across work-items only then, and it
 * was 3x slower with the kind switched at run time.
 *   gelu   tanh approximation, as GPT-2: 0.5 x (1 + tanh(s (x + 0.044715 x^3)))
 *   relu, silu (x * sigmoid x), relu2 (squared ReLU), sqrt (forward only)
 * The kinds are kiln_act's values, KILN_ABI_ACT_* of engine/abi/kernel_abi.h. */

#define GELU_S 0.7978845608028654f /* sqrt(2 / pi) */
#define GELU_C 0.044715f

float act_value(float v, int kind) {
    switch (kind) {
    case KILN_ABI_ACT_GELU: return 0.5f * v * (1.0f + tanh(GELU_S * (v + GELU_C * v * v * v)));
    case KILN_ABI_ACT_RELU: return v > 0.0f ? v : 0.0f;
    case KILN_ABI_ACT_SILU: return v / (1.0f + exp(-v));
    case KILN_ABI_ACT_RELU2: return v > 0.0f ? v * v : 0.0f;
    default: return sqrt(v); /* KILN_ABI_ACT_SQRT */
    }
}

/* f'(x); ReLU's kink at 0 takes the derivative 0, as the CPU reference (and PyTorch) */
float act_derivative(float v, int kind) {
    switch (kind) {
    case KILN_ABI_ACT_GELU: {
        float t = tanh(GELU_S * (v + GELU_C * v * v * v));
        return 0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * GELU_S * (1.0f + 3.0f * GELU_C * v * v);
    }
    case KILN_ABI_ACT_RELU: return v > 0.0f ? 1.0f : 0.0f;
    case KILN_ABI_ACT_SILU: {
        float s = 1.0f / (1.0f + exp(-v));
        return s * (1.0f + v * (1.0f - s));
    }
    default: return v > 0.0f ? 2.0f * v : 0.0f; /* KILN_ABI_ACT_RELU2 */
    }
}

/* x, y, dy, dx are real_t: f32, or f16 in the f16 variant (computed in f32, rounded once) */
#define ACT_FWD(name, kind)                                                                   \
    __kernel void name(const __global real_t *x, ulong x_off, __global real_t *y, ulong y_off, \
                       long n) {                                                              \
        long i = get_global_id(0);                                                            \
        if (i < n) STORE(y, y_off + i, act_value(LOAD(x, x_off + i), kind));                  \
    }
#define ACT_BWD(name, kind)                                                                    \
    __kernel void name(const __global real_t *x, ulong x_off, const __global real_t *dy,       \
                       ulong dy_off, __global real_t *dx, ulong dx_off, long n) {              \
        long i = get_global_id(0);                                                             \
        if (i < n)                                                                             \
            STORE(dx, dx_off + i,                                                              \
                  LOAD(dx, dx_off + i) + LOAD(dy, dy_off + i) * act_derivative(LOAD(x, x_off + i), kind)); \
    }

ACT_FWD(gelu_fwd, KILN_ABI_ACT_GELU)
ACT_FWD(relu_fwd, KILN_ABI_ACT_RELU)
ACT_FWD(silu_fwd, KILN_ABI_ACT_SILU)
ACT_FWD(relu2_fwd, KILN_ABI_ACT_RELU2)
ACT_FWD(sqrt_fwd, KILN_ABI_ACT_SQRT)
ACT_BWD(gelu_bwd, KILN_ABI_ACT_GELU)
ACT_BWD(relu_bwd, KILN_ABI_ACT_RELU)
ACT_BWD(silu_bwd, KILN_ABI_ACT_SILU)
ACT_BWD(relu2_bwd, KILN_ABI_ACT_RELU2)
