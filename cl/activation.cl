/* Activations (kind = kiln_act): 0 GELU (tanh approximation), 1 ReLU, 2 SiLU, 3 squared
 * ReLU, 100 sqrt (forward only). Forward y = f(x); backward dx += dy * f'(x). */

#define GELU_S 0.7978845608028654f /* sqrt(2 / pi) */
#define GELU_C 0.044715f

__kernel void act_fwd(const __global float *x, ulong x_off, __global float *y, ulong y_off,
                      long n, int kind) {
    long i = get_global_id(0);
    if (i >= n) return;
    float v = x[x_off + i], r;
    switch (kind) {
    case 0: r = 0.5f * v * (1.0f + tanh(GELU_S * (v + GELU_C * v * v * v))); break;
    case 1: r = v > 0.0f ? v : 0.0f; break;
    case 2: r = v / (1.0f + exp(-v)); break;
    case 3: r = v > 0.0f ? v * v : 0.0f; break;
    default: r = sqrt(v); break;
    }
    y[y_off + i] = r;
}

__kernel void act_bwd(const __global float *x, ulong x_off, const __global float *dy, ulong dy_off,
                      __global float *dx, ulong dx_off, long n, int kind) {
    long i = get_global_id(0);
    if (i >= n) return;
    float v = x[x_off + i], d;
    switch (kind) {
    case 0: {
        float u = GELU_S * (v + GELU_C * v * v * v), t = tanh(u);
        d = 0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * GELU_S * (1.0f + 3.0f * GELU_C * v * v);
        break;
    }
    case 1: d = v > 0.0f ? 1.0f : 0.0f; break;
    case 2: {
        float s = 1.0f / (1.0f + exp(-v));
        d = s * (1.0f + v * (1.0f - s));
        break;
    }
    case 3: d = v > 0.0f ? 2.0f * v : 0.0f; break;
    default: d = 0.0f; break;
    }
    dx[dx_off + i] += dy[dy_off + i] * d;
}
