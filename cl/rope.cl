/* Rotary position embeddings (kiln_rope_args), forward and backward in one kernel:
 *   forward (turn 1):                      y  = R(angle) x
 *   backward (turn -1, operands dy, dx):   dx (+)= R(-angle) dy   (accumulate: "+=")
 * x is [rows = batch * seq, heads, 2 pairs]; row r is at position pos0 + r % seq. Pair i of a
 * head is channels (2i, 2i + 1) (KILN_ABI_ROPE_ADJACENT) or (i, i + pairs)
 * (KILN_ABI_ROPE_HALF), turned by the angle p * 2^(-(2i / dim) log2(base)) / factors[i],
 * formed in f32 as PyTorch and llama.cpp form it (OpenCL's exp2, sin and cos are accurate to
 * a few ulp over the whole range). x and y are real_t; factors f32, optional (has_factors).
 * grid (pairs, rows): a work-item forms its pair's angle once for all the row's heads. */
__kernel void rope(const __global real_t *x, ulong x_off, const __global float *factors, ulong factors_off,
                   __global real_t *y, ulong y_off, long seq, long heads, long pairs, long pos0, float log2_base,
                   int pairing, float turn, int accumulate, int has_factors) {
    long i = get_global_id(0), r = get_global_id(1);
    if (i >= pairs) return;
    float freq = exp2(-((float)(2 * i) * log2_base / (float)(2 * pairs)));
    if (has_factors) freq /= factors[factors_off + i];
    /* sin and cos, not sincos: oclgrind cannot follow sincos's private pointer */
    float angle = (float)(pos0 + r % seq) * freq, c = cos(angle), s = turn * sin(angle);
    int adjacent = pairing == KILN_ABI_ROPE_ADJACENT;
    long lo = r * heads * 2 * pairs + (adjacent ? 2 * i : i), step = adjacent ? 1 : pairs;
    for (long h = 0; h < heads; h++, lo += 2 * pairs) {
        float x0 = LOAD(x, x_off + lo), x1 = LOAD(x, x_off + lo + step);
        float y0 = x0 * c - x1 * s, y1 = x0 * s + x1 * c;
        if (accumulate) {
            y0 += LOAD(y, y_off + lo);
            y1 += LOAD(y, y_off + lo + step);
        }
        STORE(y, y_off + lo, y0);
        STORE(y, y_off + lo + step, y1);
    }
}
