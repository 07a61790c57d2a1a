/* The product with a matrix quantized in ggml's blocks (kiln_qmatmul_args, kiln/quant.h):
 * y[m, n] = sum_k x[m, k] w[n, k] (+ bias[n]). One work-item per output element walks its
 * row's blocks: the f16 scale (and Q4_1's minimum), then the 32 integers, read from 32-bit
 * words (no 8-bit storage or byte-addressable store needed), each block's sum in f32. x,
 * bias and y are real_t (f32, or f16 in the f16 variant). */

/* byte p of the row starting at word `row` */
uint byte_at(const __global uint *w, ulong row, uint p) { return (w[row + (p >> 2)] >> ((p & 3u) * 8u)) & 0xffu; }

float half_at(const __global uint *w, ulong row, uint p) {
    return f16_bits_to_f32((ushort)(byte_at(w, row, p) | (byte_at(w, row, p + 1u) << 8)));
}

/* grid (n, m) */
__kernel void qmatmul(const __global real_t *x, ulong x_off, const __global uint *w, ulong w_off,
                      const __global real_t *bias, ulong bias_off, __global real_t *y, ulong y_off, long m, long n,
                      long k, long row_words, int format, int has_bias) {
    long r = get_global_id(0), i = get_global_id(1);
    if (r >= n || i >= m) return;
    ulong row = w_off + (ulong)r * (ulong)row_words, xo = x_off + (ulong)i * (ulong)k;
    uint block_bytes = format == KILN_ABI_Q8_0 ? 34u : format == KILN_ABI_Q4_0 ? 18u : 20u;
    float acc = 0.0f;
    for (long b = 0; b < k / 32; b++) {
        uint p = (uint)b * block_bytes;
        ulong xb = xo + (ulong)b * 32u;
        float d = half_at(w, row, p), s = 0.0f;
        if (format == KILN_ABI_Q8_0) {
            for (uint j = 0; j < 32u; j++) s += (float)((int)(byte_at(w, row, p + 2u + j) << 24) >> 24) * LOAD(x, xb + j);
            acc += d * s;
        } else {
            uint q0 = format == KILN_ABI_Q4_1 ? p + 4u : p + 2u;
            float offset = format == KILN_ABI_Q4_0 ? 8.0f : 0.0f, xsum = 0.0f;
            for (uint j = 0; j < 16u; j++) {
                uint q = byte_at(w, row, q0 + j);
                float lo = LOAD(x, xb + j), hi = LOAD(x, xb + j + 16u);
                s += ((float)(q & 15u) - offset) * lo + ((float)(q >> 4) - offset) * hi;
                xsum += lo + hi;
            }
            acc += d * s;
            if (format == KILN_ABI_Q4_1) acc += half_at(w, row, p + 2u) * xsum;
        }
    }
    STORE(y, y_off + (ulong)i * (ulong)n + (ulong)r, acc + (has_bias ? LOAD(bias, bias_off + r) : 0.0f));
}
