/* LayerNorm and RMSNorm over rows of length cols; one work-group per row.
 *   LayerNorm: y = (x - mean) * rstd * w + b,  rstd = 1 / sqrt(var + eps)
 *   RMSNorm:   y = x * rstd * w,               rstd = 1 / sqrt(mean(x^2) + eps)
 * Every kernel serves both, picked by the flag `rms` (KILN_ABI_NORM_RMS or
 * KILN_ABI_NORM_LAYER, engine/abi/kernel_abi.h): RMSNorm is LayerNorm with the mean taken as
 * 0, and x - 0 is x exactly, so it computes what a kernel of its own would, bit for bit. The
 * host passes RMSNorm no bias and no mean. The one cost, on PoCL only: its f16 RMSNorm
 * forward runs at about half the speed of a kernel of its own (16 against 7 ms of CPU time
 * at [4096, 768]), because PoCL compiles the whole kernel less well with LayerNorm's
 * centring and bias code in it, as it did the f16 LayerNorm kernel before (3x its f32 time);
 * kiln's models use LayerNorm, whose speed is unchanged.
 * The backward splits in two: the per-row dx kernel, and a column reduction for dweight
 * and dbias (norm_bwd_params), which would otherwise need atomics across rows.
 * x, w, b, y, dy, dx, dw and db are real_t (f16 in the f16 variant); mean and rstd are f32.
 * Row pointers are taken as `p + p_off + r * cols` and indexed by LOAD/STORE. */

__kernel __attribute__((reqd_work_group_size(KILN_WG, 1, 1)))
void norm_fwd(const __global real_t *x, ulong x_off, const __global real_t *w, ulong w_off,
              const __global real_t *b, ulong b_off, __global real_t *y, ulong y_off,
              __global float *mean, ulong mean_off, __global float *rstd, ulong rstd_off,
              long cols, float eps, int rms, int has_w, int has_b, int has_mean, int has_rstd) {
    __local float scratch[KILN_WG];
    long r = get_group_id(0);
    int lid = get_local_id(0);
    const __global real_t *xr = x + x_off + r * cols;
    float m = 0.0f;
    if (rms == KILN_ABI_NORM_LAYER) {
        float s = 0.0f;
        for (long j = lid; j < cols; j += KILN_WG) s += LOAD(xr, j);
        m = wg_sum(s, scratch) / (float)cols;
    }
    /* two passes over the row (it is in cache): no cancellation in E[x^2] - mean^2 */
    float v = 0.0f;
    for (long j = lid; j < cols; j += KILN_WG) {
        float d = LOAD(xr, j) - m;
        v += d * d;
    }
    float rs = 1.0f / sqrt(wg_sum(v, scratch) / (float)cols + eps);
    __global real_t *yr = y + y_off + r * cols;
    for (long j = lid; j < cols; j += KILN_WG) {
        float o = (LOAD(xr, j) - m) * rs;
        if (has_w) o *= LOAD(w, w_off + j);
        if (has_b) o += LOAD(b, b_off + j);
        STORE(yr, j, o);
    }
    if (lid == 0) {
        if (has_mean) mean[mean_off + r] = m;
        if (has_rstd) rstd[rstd_off + r] = rs;
    }
}

/* LayerNorm: dx += rstd * (dy*w - mean(dy*w) - xhat * mean(dy*w * xhat)), xhat = (x - mean) * rstd;
 * RMSNorm:   dx += rstd * (dy*w - xhat * mean(dy*w * xhat)),              xhat = x * rstd. */
__kernel __attribute__((reqd_work_group_size(KILN_WG, 1, 1)))
void norm_bwd_dx(const __global real_t *x, ulong x_off, const __global real_t *w, ulong w_off,
                 const __global float *mean, ulong mean_off, const __global float *rstd,
                 ulong rstd_off, const __global real_t *dy, ulong dy_off, __global real_t *dx,
                 ulong dx_off, long cols, int has_w, int rms) {
    __local float scratch[KILN_WG];
    long r = get_group_id(0);
    int lid = get_local_id(0);
    const __global real_t *xr = x + x_off + r * cols, *dyr = dy + dy_off + r * cols;
    int centred = rms == KILN_ABI_NORM_LAYER;
    float m = centred ? mean[mean_off + r] : 0.0f, rs = rstd[rstd_off + r];
    float s1 = 0.0f, s2 = 0.0f;
    for (long j = lid; j < cols; j += KILN_WG) {
        float g = LOAD(dyr, j) * (has_w ? LOAD(w, w_off + j) : 1.0f);
        s1 += g;
        s2 += g * (LOAD(xr, j) - m) * rs;
    }
    float m1 = centred ? wg_sum(s1, scratch) / (float)cols : 0.0f;
    float m2 = wg_sum(s2, scratch) / (float)cols;
    __global real_t *dxr = dx + dx_off + r * cols;
    for (long j = lid; j < cols; j += KILN_WG) {
        float g = LOAD(dyr, j) * (has_w ? LOAD(w, w_off + j) : 1.0f);
        float xhat = (LOAD(xr, j) - m) * rs;
        STORE(dxr, j, LOAD(dxr, j) + rs * (g - m1 - xhat * m2));
    }
}

/* dweight[j] += sum_r dy[r,j] * xhat[r,j]; dbias[j] += sum_r dy[r,j], by column tiles
 * (common.cl) as sum_rows in reduce.cl. */
__kernel __attribute__((reqd_work_group_size(KILN_WG, 1, 1)))
void norm_bwd_params(const __global real_t *x, ulong x_off, const __global float *mean,
                     ulong mean_off, const __global float *rstd, ulong rstd_off,
                     const __global real_t *dy, ulong dy_off, __global real_t *dw, ulong dw_off,
                     __global real_t *db, ulong db_off, long rows, long cols, int rms,
                     int has_dw, int has_db) {
    __local float sw[KILN_WG], sb[KILN_WG];
    int lane = get_local_id(0) / TILE_COLS, c = get_local_id(0) - lane * TILE_COLS;
    long j = (long)get_group_id(0) * TILE_COLS + c;
    float aw = 0.0f, ab = 0.0f;
    if (j < cols) {
        for (long r = lane; r < rows; r += TILE_LANES) {
            float g = LOAD(dy, dy_off + r * cols + j);
            float m = rms == KILN_ABI_NORM_LAYER ? mean[mean_off + r] : 0.0f;
            aw += g * (LOAD(x, x_off + r * cols + j) - m) * rstd[rstd_off + r];
            ab += g;
        }
    }
    sw[get_local_id(0)] = aw;
    sb[get_local_id(0)] = ab;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lane == 0 && j < cols) {
        float tw = 0.0f, tb = 0.0f;
        for (int l = 0; l < TILE_LANES; l++) {
            tw += sw[l * TILE_COLS + c];
            tb += sb[l * TILE_COLS + c];
        }
        if (has_dw) STORE(dw, dw_off + j, LOAD(dw, dw_off + j) + tw);
        if (has_db) STORE(db, db_off + j, LOAD(db, db_off + j) + tb);
    }
}
