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

/* z of key j: (scale * x + add) * inv_temp */
float logit(const __global real_t *xr, const __global real_t *ar, long j, float scale,
            float inv_temp, int has_add) {
    return (scale * LOAD(xr, j) + (has_add ? LOAD(ar, j) : 0.0f)) * inv_temp;
}

/* z = (scale * x + add) * inv_temp on unmasked keys; y = softmax(z), 0 on masked keys.
 * The host passes 1 / temperature and scale / temperature, rounded once as the CPU does.
 * x, add and y are real_t. */
__kernel __attribute__((reqd_work_group_size(KILN_WG, 1, 1)))
void softmax_fwd(const __global real_t *x, ulong x_off, const __global real_t *add, ulong add_off,
                 const __global int *lengths, ulong lengths_off, __global real_t *y, ulong y_off,
                 long heads, long tq, long tk, float scale, float inv_temp, int causal,
                 int has_add, int has_lengths) {
    __local float scratch[KILN_WG];
    long row = get_group_id(0);
    int lid = get_local_id(0);
    long limit = valid_keys(row, heads, tq, tk, causal, lengths, lengths_off, has_lengths);
    const __global real_t *xr = x + x_off + row * tk;
    const __global real_t *ar = add + add_off + row * tk;
    __global real_t *yr = y + y_off + row * tk;
    float m = -INFINITY;
    for (long j = lid; j < limit; j += KILN_WG) m = fmax(m, logit(xr, ar, j, scale, inv_temp, has_add));
    m = wg_max(m, scratch);
    float s = 0.0f;
    for (long j = lid; j < limit; j += KILN_WG) {
        float e = exp(logit(xr, ar, j, scale, inv_temp, has_add) - m);
#if !KILN_F16
        yr[j] = e; /* kept for the rescale below: one exp per element */
#endif
        s += e;
    }
    /* each work-item rescales only the entries it wrote itself: no barrier needed */
    float inv = 1.0f / wg_sum(s, scratch);
    for (long j = lid; j < tk; j += KILN_WG) {
#if KILN_F16
        /* an f16 y cannot hold e: rounded there and rescaled, y would be rounded twice.
         * Computing e again costs an exp, and y is rounded once. */
        float v = j < limit ? exp(logit(xr, ar, j, scale, inv_temp, has_add) - m) * inv : 0.0f;
#else
        float v = j < limit ? yr[j] * inv : 0.0f;
#endif
        STORE(yr, j, v);
    }
}

/* g = y * (dy - sum_j dy*y); dx += g * dx_scale; dadd += g / temperature (all real_t) */
__kernel __attribute__((reqd_work_group_size(KILN_WG, 1, 1)))
void softmax_bwd(const __global real_t *y, ulong y_off, const __global real_t *dy, ulong dy_off,
                 __global real_t *dx, ulong dx_off, __global real_t *dadd, ulong dadd_off,
                 long tk, float dx_scale, float inv_temp, int has_dx, int has_dadd) {
    __local float scratch[KILN_WG];
    long row = get_group_id(0);
    int lid = get_local_id(0);
    const __global real_t *yr = y + y_off + row * tk, *dyr = dy + dy_off + row * tk;
    float s = 0.0f;
    for (long j = lid; j < tk; j += KILN_WG) s += LOAD(dyr, j) * LOAD(yr, j);
    s = wg_sum(s, scratch);
    for (long j = lid; j < tk; j += KILN_WG) {
        float g = LOAD(yr, j) * (LOAD(dyr, j) - s);
        long e = row * tk + j;
        if (has_dx) STORE(dx, dx_off + e, LOAD(dx, dx_off + e) + g * dx_scale);
        if (has_dadd) STORE(dadd, dadd_off + e, LOAD(dadd, dadd_off + e) + g * inv_temp);
    }
}
