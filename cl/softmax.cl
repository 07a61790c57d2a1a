/* Masked softmax over [batch, heads, tq, tk], one work-group per row (b, h, i).
 * Both masks keep a prefix of the keys: j < i + (tk - tq) + 1 when causal, j < lengths[b]
 * when lengths are given; so each row has one limit and no mask is ever stored. */

long valid_keys(long row, long heads, long tq, long tk, int causal,
                const __global int *lengths, ulong lengths_off, int has_lengths) {
    long i;
    long b = divrem(row, tq, &i) / heads;
    long limit = tk;
    if (causal) limit = min(limit, i + (tk - tq) + 1);
    if (has_lengths) limit = min(limit, (long)lengths[lengths_off + b]);
    return max(limit, 0L);
}

/* z = (scale * x + add) * inv_temp on unmasked keys; y = softmax(z), 0 on masked keys.
 * The host passes 1 / temperature and scale / temperature, rounded once as the CPU does. */
__kernel __attribute__((reqd_work_group_size(KILN_WG, 1, 1)))
void softmax_fwd(const __global float *x, ulong x_off, const __global float *add, ulong add_off,
                 const __global int *lengths, ulong lengths_off, __global float *y, ulong y_off,
                 long heads, long tq, long tk, float scale, float inv_temp, int causal,
                 int has_add, int has_lengths) {
    __local float scratch[KILN_WG];
    long row = get_group_id(0);
    int lid = get_local_id(0);
    long limit = valid_keys(row, heads, tq, tk, causal, lengths, lengths_off, has_lengths);
    const __global float *xr = x + x_off + row * tk;
    const __global float *ar = add + add_off + row * tk;
    __global float *yr = y + y_off + row * tk;
    float m = -INFINITY;
    for (long j = lid; j < limit; j += KILN_WG) {
        float z = (scale * xr[j] + (has_add ? ar[j] : 0.0f)) * inv_temp;
        m = fmax(m, z);
    }
    m = wg_max(m, scratch);
    float s = 0.0f;
    for (long j = lid; j < limit; j += KILN_WG) {
        float z = (scale * xr[j] + (has_add ? ar[j] : 0.0f)) * inv_temp;
        float e = exp(z - m);
        yr[j] = e;
        s += e;
    }
    /* each work-item rescales only the entries it wrote itself: no barrier needed */
    float inv = 1.0f / wg_sum(s, scratch);
    for (long j = lid; j < tk; j += KILN_WG) yr[j] = j < limit ? yr[j] * inv : 0.0f;
}

/* g = y * (dy - sum_j dy*y); dx += g * dx_scale; dadd += g / temperature */
__kernel __attribute__((reqd_work_group_size(KILN_WG, 1, 1)))
void softmax_bwd(const __global float *y, ulong y_off, const __global float *dy, ulong dy_off,
                 __global float *dx, ulong dx_off, __global float *dadd, ulong dadd_off,
                 long tk, float dx_scale, float inv_temp, int has_dx, int has_dadd) {
    __local float scratch[KILN_WG];
    long row = get_group_id(0);
    int lid = get_local_id(0);
    const __global float *yr = y + y_off + row * tk, *dyr = dy + dy_off + row * tk;
    float s = 0.0f;
    for (long j = lid; j < tk; j += KILN_WG) s += dyr[j] * yr[j];
    s = wg_sum(s, scratch);
    for (long j = lid; j < tk; j += KILN_WG) {
        float g = yr[j] * (dyr[j] - s);
        if (has_dx) dx[dx_off + row * tk + j] += g * dx_scale;
        if (has_dadd) dadd[dadd_off + row * tk + j] += g * inv_temp;
    }
}
