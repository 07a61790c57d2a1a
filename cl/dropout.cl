/* Inverted dropout: element i is kept when kiln_rng_uniform(seed, stream, i) >= prob
 * (rng_uniform, common.cl). */

/* fwd: y = keep ? x / (1 - prob) : 0 (x and y real_t) */
__kernel void dropout_fwd(const __global real_t *x, ulong x_off, __global real_t *y, ulong y_off,
                          long n, float prob, ulong seed, ulong stream) {
    long i = get_global_id(0);
    if (i >= n) return;
    float u = rng_uniform((ulong)i, stream, seed);
    STORE(y, y_off + i, u >= prob ? LOAD(x, x_off + i) / (1.0f - prob) : 0.0f);
}

/* bwd: dx += keep ? dy / (1 - prob) : 0 */
__kernel void dropout_bwd(const __global real_t *dy, ulong dy_off, __global real_t *dx,
                          ulong dx_off, long n, float prob, ulong seed, ulong stream) {
    long i = get_global_id(0);
    if (i >= n) return;
    float u = rng_uniform((ulong)i, stream, seed);
    if (u >= prob) STORE(dx, dx_off + i, LOAD(dx, dx_off + i) + LOAD(dy, dy_off + i) / (1.0f - prob));
}
