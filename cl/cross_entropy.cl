/* Cross-entropy from logits [rows, vocab] with i32 targets [rows].
 *   fwd: per row (one work-group): lse = log sum exp z, the row's loss
 *        (1 - s)(lse - z[t]) + s (lse - mean_v z[v]) when t != ignore_index, else nothing;
 *        then one work-group adds the rows: loss = sum / count, count = valid rows.
 *   bwd: dlogits[r, v] += dloss / max(count, 1) * (softmax(z)[v] - (1-s)[v==t] - s/vocab).
 * A target outside [0, vocab) that is not ignore_index sets err_flag[0] = 1 (the engine
 * reports KILN_ERR_RANGE on its next read) and the row counts as ignored.
 * logits and dlogits are real_t; lse, the loss, count, dloss and the row sums are f32. */

__kernel __attribute__((reqd_work_group_size(KILN_WG, 1, 1)))
void xent_rows(const __global real_t *logits, ulong logits_off, const __global int *targets,
               ulong targets_off, __global float *lse, ulong lse_off, __global float *row_loss,
               ulong row_loss_off, __global int *err, ulong err_off, long vocab,
               float smoothing, int ignore_index, int has_err) {
    __local float scratch[KILN_WG];
    long r = get_group_id(0);
    int lid = get_local_id(0);
    const __global real_t *z = logits + logits_off + r * vocab;
    int t = targets[targets_off + r];
    int valid = t != ignore_index;
    if (valid && (t < 0 || t >= vocab)) {
        valid = 0;
        if (lid == 0 && has_err) atomic_xchg(err + err_off, 1); /* several rows may be bad */
    }
    float m = -INFINITY;
    for (long v = lid; v < vocab; v += KILN_WG) m = fmax(m, LOAD(z, v));
    m = wg_max(m, scratch);
    float s = 0.0f, sz = 0.0f;
    for (long v = lid; v < vocab; v += KILN_WG) {
        float zv = LOAD(z, v);
        s += exp(zv - m);
        sz += zv;
    }
    s = wg_sum(s, scratch);
    sz = wg_sum(sz, scratch);
    if (lid == 0) {
        float l = m + log(s);
        lse[lse_off + r] = valid ? l : 0.0f; /* as the CPU: 0 for rows without a loss */
        /* row_loss holds (loss, valid) pairs: KILN_ABI_CL_XENT_ROW_FLOATS per row */
        __global float *out = row_loss + row_loss_off + KILN_ABI_CL_XENT_ROW_FLOATS * r;
        out[0] = valid ? (1.0f - smoothing) * (l - LOAD(z, t)) + smoothing * (l - sz / (float)vocab)
                       : 0.0f;
        out[1] = valid ? 1.0f : 0.0f;
    }
}

__kernel __attribute__((reqd_work_group_size(KILN_WG, 1, 1)))
void xent_total(const __global float *row_loss, ulong row_loss_off, long rows,
                __global float *loss, ulong loss_off, __global float *count, ulong count_off,
                int has_count) {
    __local float scratch[KILN_WG];
    float s = 0.0f, c = 0.0f;
    for (long r = get_local_id(0); r < rows; r += KILN_WG) {
        s += row_loss[row_loss_off + KILN_ABI_CL_XENT_ROW_FLOATS * r];
        c += row_loss[row_loss_off + KILN_ABI_CL_XENT_ROW_FLOATS * r + 1];
    }
    s = wg_sum(s, scratch);
    c = wg_sum(c, scratch);
    if (get_local_id(0) == 0) {
        loss[loss_off] = c > 0.0f ? s / c : 0.0f; /* no valid row: 0, not 0/0 */
        if (has_count) count[count_off] = c;
    }
}

/* grid (vocab, rows) */
__kernel void xent_bwd(const __global real_t *logits, ulong logits_off, const __global int *targets,
                       ulong targets_off, const __global float *lse, ulong lse_off,
                       const __global float *count, ulong count_off, const __global float *dloss,
                       ulong dloss_off, __global real_t *dlogits, ulong dlogits_off, long vocab,
                       float smoothing, int ignore_index) {
    long v = get_global_id(0), r = get_global_id(1);
    if (v >= vocab) return;
    int t = targets[targets_off + r];
    if (t == ignore_index || t < 0 || t >= vocab) return;
    float scale = dloss[dloss_off] / fmax(count[count_off], 1.0f);
    float p = exp(LOAD(logits, logits_off + r * vocab + v) - lse[lse_off + r]);
    float g = p - (v == t ? 1.0f - smoothing : 0.0f) - smoothing / (float)vocab;
    long e = dlogits_off + r * vocab + v;
    STORE(dlogits, e, LOAD(dlogits, e) + scale * g);
}
