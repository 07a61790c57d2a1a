/* y = s * x and dx += s * dy (real_t: f32, or f16 in the f16 variant). */
__kernel void smul_fwd(const __global real_t *x, ulong x_off, __global real_t *y, ulong y_off, long n, float s) {
    long i = get_global_id(0);
    if (i < n) STORE(y, y_off + i, s * LOAD(x, x_off + i));
}

__kernel void smul_bwd(const __global real_t *dy, ulong dy_off, __global real_t *dx, ulong dx_off, long n, float s) {
    long i = get_global_id(0);
    if (i < n) STORE(dx, dx_off + i, LOAD(dx, dx_off + i) + s * LOAD(dy, dy_off + i));
}
