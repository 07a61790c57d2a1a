// Activation functions and their derivatives, as engine/cpu/cpu_activation.c computes them.
// kind: KILN_ABI_ACT_* (engine/abi/kernel_abi.h); sqrt is forward only.
const float GELU_K = 0.7978845608028654;  // sqrt(2 / pi)
const float GELU_C = 0.044715;

float act_value(uint kind, float x) {
    if (kind == KILN_ABI_ACT_GELU) return 0.5 * x * (1.0 + kiln_tanh(GELU_K * (x + GELU_C * x * x * x)));
    if (kind == KILN_ABI_ACT_RELU) return x > 0.0 ? x : 0.0;
    if (kind == KILN_ABI_ACT_SILU) return x / (1.0 + exp(-x));
    if (kind == KILN_ABI_ACT_RELU2) return x > 0.0 ? x * x : 0.0;
    return sqrt(x);
}

float act_derivative(uint kind, float x) {
    if (kind == KILN_ABI_ACT_GELU) {
        float t = kiln_tanh(GELU_K * (x + GELU_C * x * x * x));
        float du = GELU_K * (1.0 + 3.0 * GELU_C * x * x);
        return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du;
    }
    if (kind == KILN_ABI_ACT_RELU) return x > 0.0 ? 1.0 : 0.0;
    if (kind == KILN_ABI_ACT_SILU) {
        float s = 1.0 / (1.0 + exp(-x));
        return s * (1.0 + x * (1.0 - s));
    }
    return x > 0.0 ? 2.0 * x : 0.0;  // KILN_ABI_ACT_RELU2
}
