/* The optimizer step: gradient clipping coefficient and Adam(W). */

/* coef = unscale * min(1, clip / (norm * unscale + 1e-6)) when clip > 0, else unscale;
 * norm_out = sqrt(sumsq) * unscale. One work-item. */
__kernel void clip_coef(const __global float *sumsq, ulong sumsq_off, __global float *coef,
                        ulong coef_off, __global float *norm, ulong norm_off, float clip,
                        float unscale, int has_coef, int has_norm) {
    float n = sqrt(sumsq[sumsq_off]) * unscale, c = unscale;
    if (clip > 0.0f) {
        float ratio = clip / (n + 1e-6f);
        if (ratio < 1.0f) c *= ratio; /* a NaN norm keeps c: the skip flag handles it */
    }
    if (has_coef) coef[coef_off] = c;
    if (has_norm) norm[norm_off] = n;
}

/* One Adam(W) update per element; a nonzero skip[0] (the overflow flag, i32) skips it all. */
__kernel void adam(__global float *param, ulong param_off, const __global void *grad,
                   ulong grad_off, __global float *m, ulong m_off, __global float *v, ulong v_off,
                   __global half *half_copy, ulong half_off, const __global float *coef,
                   ulong coef_off, const __global int *skip, ulong skip_off, int grad_dtype,
                   long n, float lr, float beta1, float beta2, float eps, float weight_decay,
                   float bc1, float bc2, int decoupled, int has_half, int has_coef, int has_skip) {
    long i = get_global_id(0);
    if (i >= n) return;
    if (has_skip && skip[skip_off] != 0) return;
    float p = param[param_off + i];
    float g = load_f(grad, grad_off + i, grad_dtype);
    if (has_coef) g *= coef[coef_off];
    if (!decoupled && weight_decay != 0.0f) g += weight_decay * p;
    float mi = beta1 * m[m_off + i] + (1.0f - beta1) * g;
    float vi = beta2 * v[v_off + i] + (1.0f - beta2) * g * g;
    m[m_off + i] = mi;
    v[v_off + i] = vi;
    if (decoupled) p -= lr * weight_decay * p;
    p -= lr * (mi / bc1) / (sqrt(vi / bc2) + eps);
    param[param_off + i] = p;
    if (has_half) half_store(half_copy, half_off + i, p);
}
