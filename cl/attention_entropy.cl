/* Attention entropy over p [batch, heads, tq, tk], per head:
 *   fwd: out[h] = -(1 / (batch*tq)) sum_{b,i,j} p log p   (0 log 0 = 0)
 *   bwd: dp += dout[h] * -(log p + 1) / (batch*tq)       (0 where p <= 0)
 * The forward is a two-pass segmented reduction: groups (g, h) write partial sums, then one
 * work-group per head adds them. p and dp are real_t; out, dout and the partials are f32. */

/* p <= 0 contributes nothing: 0 log 0 = 0, and a negative p is not a probability */
float plogp(float p) { return p > 0.0f ? p * log(p) : 0.0f; }

/* grid: (groups * KILN_WG, heads); partial[h * groups + g] */
__kernel __attribute__((reqd_work_group_size(KILN_WG, 1, 1)))
void entropy_partial(const __global real_t *p, ulong p_off, long batch, long heads, long per_head,
                     __global float *partial, ulong partial_off) {
    __local float scratch[KILN_WG];
    long h = get_global_id(1);
    long n = batch * per_head; /* elements of head h: batch runs of per_head = tq * tk */
    float s = 0.0f;
    long start, step, end = my_range(n, &start, &step);
    for (long e = start; e < end; e += step) {
        long b = e / per_head, k = e - b * per_head;
        s += plogp(LOAD(p, p_off + (b * heads + h) * per_head + k));
    }
    s = wg_sum(s, scratch);
    if (get_local_id(0) == 0) partial[partial_off + h * get_num_groups(0) + get_group_id(0)] = s;
}

/* one work-group per head */
__kernel __attribute__((reqd_work_group_size(KILN_WG, 1, 1)))
void entropy_final(const __global float *partial, ulong partial_off, int groups,
                   __global float *out, ulong out_off, float inv_count) {
    __local float scratch[KILN_WG];
    long h = get_group_id(0);
    float s = 0.0f;
    for (int g = get_local_id(0); g < groups; g += KILN_WG) s += partial[partial_off + h * groups + g];
    s = wg_sum(s, scratch);
    if (get_local_id(0) == 0) out[out_off + h] = -s * inv_count;
}

/* grid (per_head, heads, batch): the head of an element without a division */
__kernel void entropy_bwd(const __global real_t *p, ulong p_off, const __global float *dout,
                          ulong dout_off, __global real_t *dp, ulong dp_off, long per_head,
                          float inv_count) {
    long k = get_global_id(0), h = get_global_id(1), b = get_global_id(2);
    if (k >= per_head) return;
    long e = (b * get_global_size(1) + h) * per_head + k;
    float pv = LOAD(p, p_off + e);
    if (pv > 0.0f)
        STORE(dp, dp_off + e, LOAD(dp, dp_off + e) + dout[dout_off + h] * -(log(pv) + 1.0f) * inv_count);
}
