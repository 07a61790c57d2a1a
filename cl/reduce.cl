/* Reductions: to a scalar (sum, sum of squares), over rows (sum_rows: the backward of a
 * broadcast), and the any-non-finite check. */

/* Pass 1 of reduce: work-group g sums its work-items' shares of x (my_range, real_t) into
 * partial[g] (f32). */
__kernel __attribute__((reqd_work_group_size(KILN_WG, 1, 1)))
void reduce_partial(const __global real_t *x, ulong x_off, long n, int square,
                    __global float *partial, ulong partial_off) {
    __local float scratch[KILN_WG];
    float s = 0.0f;
    long start, step, end = my_range(n, &start, &step);
    for (long i = start; i < end; i += step) {
        float v = LOAD(x, x_off + i);
        s += square ? v * v : v;
    }
    s = wg_sum(s, scratch);
    if (get_local_id(0) == 0) partial[partial_off + get_group_id(0)] = s;
}

/* Pass 2: one work-group sums the partials; out = alpha * sum, or out += sum (square). out
 * is f32 in both variants. */
__kernel __attribute__((reqd_work_group_size(KILN_WG, 1, 1)))
void reduce_final(const __global float *partial, ulong partial_off, int count,
                  __global float *out, ulong out_off, float alpha, int square) {
    __local float scratch[KILN_WG];
    float s = 0.0f;
    for (int i = get_local_id(0); i < count; i += KILN_WG) s += partial[partial_off + i];
    s = wg_sum(s, scratch);
    if (get_local_id(0) == 0) {
        if (square)
            out[out_off] += s;
        else
            out[out_off] = alpha * s;
    }
}

/* out[j] += alpha * sum_i x[i * cols + j] (x and out real_t), by column tiles (common.cl):
 * each lane sums every TILE_LANES-th row, then the lanes are added in local memory. */
__kernel __attribute__((reqd_work_group_size(KILN_WG, 1, 1)))
void sum_rows(const __global real_t *x, ulong x_off, __global real_t *out, ulong out_off,
              long rows, long cols, float alpha) {
    __local float scratch[KILN_WG];
    int lane = get_local_id(0) / TILE_COLS, c = get_local_id(0) - lane * TILE_COLS;
    long j = (long)get_group_id(0) * TILE_COLS + c;
    float s = 0.0f;
    if (j < cols)
        for (long i = lane; i < rows; i += TILE_LANES) s += LOAD(x, x_off + i * cols + j);
    scratch[get_local_id(0)] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lane == 0 && j < cols) {
        float total = 0.0f;
        for (int l = 0; l < TILE_LANES; l++) total += scratch[l * TILE_COLS + c];
        STORE(out, out_off + j, LOAD(out, out_off + j) + alpha * total);
    }
}

/* flag[0] = 1 when any element is inf or NaN (exponent bits all ones: immune to fast-math
 * assumptions; an f16 inf/NaN loads as an f32 inf/NaN); untouched otherwise. The dtype is an
 * argument (the host uses the f32 program for both). */
__kernel void check_finite(const __global void *x, ulong x_off, long n, int dtype,
                           __global int *flag, ulong flag_off) {
    int bad = 0;
    long start, step, end = my_range(n, &start, &step);
    for (long i = start; i < end; i += step)
        bad |= (as_uint(load_f(x, x_off + i, dtype)) & 0x7f800000u) == 0x7f800000u;
    if (bad) atomic_xchg(flag + flag_off, 1);
}
