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

/* ---- the formats added with the K-quants: Q5_0, Q5_1, Q4_K, Q5_K, Q6_K ----
 * qmatmul_rows: a work-group per output row and tile of QTOKENS tokens. Its lanes share the
 * row's units (each run of 32 weights: a Q5_0/Q5_1 block, an eighth of a K super-block),
 * decode each unit once into floats and multiply it with every token of the tile; the
 * lanes' sums meet in local memory. One token, the decoding case, thus spreads a row over
 * up to KILN_WG lanes instead of one work-item walking it alone. Blocks sit at any byte
 * offset in the row (22, 210 bytes: not whole words), so they are read with word_at. */
#define QTOKENS KILN_ABI_CL_QMATMUL_TOKENS

/* The 4 bytes from byte p of the row on, little-endian, wherever p falls in its word. The
 * second word is read only when p is not word aligned, and then byte p + 3, still inside
 * the block and so inside the row's words, lies in it. */
uint word_at(const __global uint *w, ulong row, uint p) {
    uint s = (p & 3u) * 8u, lo = w[row + (p >> 2)];
    return s ? (lo >> s) | (w[row + (p >> 2) + 1u] << (32u - s)) : lo;
}

/* The 32 bytes from byte p on, as 8 little-endian words. */
void words8_at(const __global uint *w, ulong row, uint p, uint *out) {
    for (uint i = 0; i < 8u; i++) out[i] = word_at(w, row, p + 4u * i);
}

uint byte_of(const uint *words, uint i) { return (words[i >> 2] >> ((i & 3u) * 8u)) & 0xffu; }

/* Each decoder writes unit u of the row as q[0..31] and a, b with weight j = a q[j] + b. */

/* Q5_0 (22 bytes: d, qh[4], qs[16]) and Q5_1 (24 bytes: d, m, qh[4], qs[16]): value j < 16
 * is qs[j]'s low nibble with bit j of qh as its fifth bit, value j + 16 the high nibble
 * with bit j + 16; Q5_0 centres them on 16, Q5_1 adds the minimum m. */
void decode_q5(const __global uint *w, ulong row, uint u, int q5_1, float *q, float *a, float *b) {
    uint p = u * (q5_1 ? 24u : 22u), head = q5_1 ? 4u : 2u, qs[4];
    uint qh = word_at(w, row, p + head);
    for (uint i = 0; i < 4u; i++) qs[i] = word_at(w, row, p + head + 4u + 4u * i);
    float centre = q5_1 ? 0.0f : 16.0f;
    for (uint j = 0; j < 16u; j++) {
        uint v = byte_of(qs, j);
        q[j] = (float)((v & 15u) | (((qh >> j) & 1u) << 4)) - centre;
        q[j + 16u] = (float)((v >> 4) | (((qh >> (j + 16u)) & 1u) << 4)) - centre;
    }
    *a = half_at(w, row, p);
    *b = q5_1 ? half_at(w, row, p + 2u) : 0.0f;
}

/* Scale and minimum j of the 12 packed bytes of a Q4_K/Q5_K super-block (6 bits each:
 * ggml's get_scale_min_k4). */
void scale_min_k4(const uint *sc, uint j, uint *scale, uint *min) {
    if (j < 4u) {
        *scale = byte_of(sc, j) & 63u;
        *min = byte_of(sc, j + 4u) & 63u;
    } else {
        *scale = (byte_of(sc, j + 4u) & 15u) | ((byte_of(sc, j - 4u) >> 6) << 4);
        *min = (byte_of(sc, j + 4u) >> 4) | ((byte_of(sc, j) >> 6) << 4);
    }
}

/* Q4_K (144 bytes: d, dmin, scales[12], qs[128]) and Q5_K (176: d, dmin, scales[12],
 * qh[32], qs[128]). Sub-block j of 32 takes the low (even j) or high (odd j) nibbles of
 * qs[32 (j / 2) ..], Q5_K bit j of qh[l] as the fifth bit; weight = d scale_j q - dmin min_j. */
void decode_k45(const __global uint *w, ulong row, uint u, int q5_k, float *q, float *a, float *b) {
    uint p = (u >> 3) * (q5_k ? 176u : 144u), j = u & 7u, sc[3], qs[8], qh[8], scale, min;
    for (uint i = 0; i < 3u; i++) sc[i] = word_at(w, row, p + 4u + 4u * i);
    words8_at(w, row, p + (q5_k ? 48u : 16u) + 32u * (j >> 1), qs);
    if (q5_k) words8_at(w, row, p + 16u, qh);
    uint shift = (j & 1u) * 4u;
    for (uint l = 0; l < 32u; l++) {
        uint high = q5_k ? ((byte_of(qh, l) >> j) & 1u) << 4 : 0u;
        q[l] = (float)(((byte_of(qs, l) >> shift) & 15u) | high);
    }
    scale_min_k4(sc, j, &scale, &min);
    *a = half_at(w, row, p) * (float)scale;
    *b = -half_at(w, row, p + 2u) * (float)min;
}

/* Q6_K (210 bytes: ql[128], qh[64], int8 scales[16], d last). Each half of 128 values has
 * ql[64 h ..], qh[32 h ..] and scales[8 h ..]; its quarter t (unit 4 h + t) takes nibble
 * t / 2 of ql[32 (t % 2) + l], bits 2t of qh[l] as bits 4-5, centred on 32, and scale
 * 2t + l / 16. The scales are folded into q (integers below 2^13, exact in f32). */
void decode_q6_k(const __global uint *w, ulong row, uint u, float *q, float *a, float *b) {
    uint p = (u >> 3) * 210u, h = (u >> 2) & 1u, t = u & 3u, ql[8], qh[8];
    words8_at(w, row, p + 64u * h + 32u * (t & 1u), ql);
    words8_at(w, row, p + 128u + 32u * h, qh);
    uint sc = word_at(w, row, p + 192u + 8u * h + 2u * t);
    for (uint l = 0; l < 32u; l++) {
        int v = (int)(((byte_of(ql, l) >> (4u * (t >> 1))) & 15u) | (((byte_of(qh, l) >> (2u * t)) & 3u) << 4));
        int scale = (int)((sc >> (8u * (l >> 4))) << 24) >> 24; /* int8 */
        q[l] = (float)((v - 32) * scale);
    }
    *a = half_at(w, row, p + 208u);
    *b = 0.0f;
}

/* Q8_0 (34 bytes: d, qs[32] int8), Q4_0 (18: d, qs[16], centred on 8) and Q4_1 (20: d, m,
 * qs[16]): value j < 16 is qs[j]'s low nibble, value j + 16 its high one. */
void decode_32(const __global uint *w, ulong row, int format, uint u, float *q, float *a, float *b) {
    uint p = u * (format == KILN_ABI_Q8_0 ? 34u : format == KILN_ABI_Q4_0 ? 18u : 20u);
    *a = half_at(w, row, p);
    *b = format == KILN_ABI_Q4_1 ? half_at(w, row, p + 2u) : 0.0f;
    if (format == KILN_ABI_Q8_0) {
        for (uint j = 0; j < 32u; j++) q[j] = (float)((int)(byte_at(w, row, p + 2u + j) << 24) >> 24);
        return;
    }
    uint q0 = format == KILN_ABI_Q4_1 ? p + 4u : p + 2u;
    float centre = format == KILN_ABI_Q4_0 ? 8.0f : 0.0f;
    for (uint j = 0; j < 16u; j++) {
        uint v = byte_at(w, row, q0 + j);
        q[j] = (float)(v & 15u) - centre;
        q[j + 16u] = (float)(v >> 4) - centre;
    }
}

void decode_unit(const __global uint *w, ulong row, int format, uint u, float *q, float *a, float *b) {
    if (format == KILN_ABI_Q8_0 || format == KILN_ABI_Q4_0 || format == KILN_ABI_Q4_1) decode_32(w, row, format, u, q, a, b);
    else if (format == KILN_ABI_Q5_0 || format == KILN_ABI_Q5_1) decode_q5(w, row, u, format == KILN_ABI_Q5_1, q, a, b);
    else if (format == KILN_ABI_Q6_K) decode_q6_k(w, row, u, q, a, b);
    else decode_k45(w, row, u, format == KILN_ABI_Q5_K, q, a, b);
}

/* grid (n * lanes, ceil(m / QTOKENS)), work-groups of `lanes`: a power of 2 up to KILN_WG
 * that the host picks for the row's units (no more lanes than units, which would only wait at
 * the barriers). The lanes' partial sums of the tile's tokens are added in one tree. */
__kernel void qmatmul_rows(const __global real_t *x, ulong x_off, const __global uint *w, ulong w_off,
                           const __global real_t *bias, ulong bias_off, __global real_t *y, ulong y_off, long m,
                           long n, long k, long row_words, int format, int has_bias) {
    __local float sums[QTOKENS][KILN_WG];
    uint lane = get_local_id(0), lanes = get_local_size(0);
    long r = get_group_id(0), i0 = get_group_id(1) * QTOKENS, units = k / 32;
    long tokens = min((long)QTOKENS, m - i0);
    ulong row = w_off + (ulong)r * (ulong)row_words;
    float acc[QTOKENS] = {0.0f};
    for (long u = lane; u < units; u += lanes) {
        float q[32], a, b;
        decode_unit(w, row, format, (uint)u, q, &a, &b);
        /* a fixed trip count, so that a GPU compiler can unroll it and keep acc in registers */
        for (long t = 0; t < QTOKENS; t++) {
            if (t >= tokens) break;
            ulong xb = x_off + (ulong)(i0 + t) * (ulong)k + (ulong)u * 32u;
            float s = 0.0f, xsum = 0.0f;
            for (uint j = 0; j < 32u; j++) {
                float v = LOAD(x, xb + j);
                s += q[j] * v;
                xsum += v;
            }
            acc[t] += a * s + b * xsum;
        }
    }
    for (uint t = 0; t < QTOKENS; t++) sums[t][lane] = acc[t];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint step = lanes / 2u; step > 0u; step >>= 1) {
        if (lane < step)
            for (uint t = 0; t < QTOKENS; t++) sums[t][lane] += sums[t][lane + step];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (long t = lane; t < tokens; t += lanes)
        STORE(y, y_off + (ulong)(i0 + t) * (ulong)n + (ulong)r, sums[t][0] + (has_bias ? LOAD(bias, bias_off + r) : 0.0f));
}

/* ---- the transposed product: y[m, k] = sum_n dy[m, n] w[n, k], the gradient of x ----
 * grid (ceil(k / QT_COLS) L, ceil(m / QT_ROWS)), work-groups of L items (16, 32 or 64): a
 * work-group owns QT_COLS output columns (two units of each row of w), item l columns l,
 * l + L, ..., and QT_ROWS rows of dy. It walks w's rows QT_PANEL at a time: the items decode
 * the panel's units, each once for the work-group, into local memory beside the panel's dy
 * values, then each item adds the panel's products for its columns to its sums. Every
 * output is summed and written by one item: no atomics. */
#define QT_ROWS KILN_ABI_QMATMUL_T_ROWS
#define QT_PANEL KILN_ABI_QMATMUL_T_PANEL
#define QT_COLS 64
#define QT_UNITS (QT_COLS / 32)
#define QT_MAX_PER 4 /* columns per item: QT_COLS / L, L >= 16 */

__kernel void qmatmul_t(const __global real_t *dy, ulong dy_off, const __global uint *w, ulong w_off,
                        __global real_t *y, ulong y_off, long m, long n, long k, long row_words, int format) {
    __local float wv[QT_PANEL * QT_COLS]; /* row p of the panel at p * QT_COLS */
    __local float dv[QT_ROWS * QT_PANEL]; /* dy[i0 + t, r0 + p] at t * QT_PANEL + p */
    uint l = get_local_id(0), lanes = get_local_size(0), per = QT_COLS / lanes;
    long c0 = (long)get_group_id(0) * QT_COLS, i0 = (long)get_group_id(1) * QT_ROWS;
    long rows = min((long)QT_ROWS, m - i0);
    uint live_units = (uint)min((long)QT_UNITS, (k - c0) / 32); /* k is whole units */
    float acc[QT_MAX_PER][QT_ROWS];
    for (uint s = 0; s < QT_MAX_PER; s++)
        for (uint t = 0; t < QT_ROWS; t++) acc[s][t] = 0.0f;
    for (long r0 = 0; r0 < n; r0 += QT_PANEL) {
        uint panel = (uint)min((long)QT_PANEL, n - r0);
        barrier(CLK_LOCAL_MEM_FENCE); /* the previous panel's readers are done */
        for (uint u = l; u < QT_PANEL * QT_UNITS; u += lanes) {
            uint p = u / QT_UNITS, b = u % QT_UNITS;
            __local float *dst = wv + p * QT_COLS + b * 32u;
            if (p < panel && b < live_units) {
                float q[32], a, off;
                decode_unit(w, w_off + (ulong)(r0 + p) * (ulong)row_words, format, (uint)(c0 / 32) + b, q, &a, &off);
                for (uint j = 0; j < 32u; j++) dst[j] = a * q[j] + off;
            } else {
                for (uint j = 0; j < 32u; j++) dst[j] = 0.0f;
            }
        }
        for (uint e = l; e < QT_ROWS * QT_PANEL; e += lanes) {
            uint t = e / QT_PANEL, p = e % QT_PANEL;
            dv[e] = t < rows && p < panel ? LOAD(dy, dy_off + (ulong)(i0 + t) * (ulong)n + (ulong)(r0 + p)) : 0.0f;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint p = 0; p < panel; p++)
            for (uint s = 0; s < per; s++) {
                float wc = wv[p * QT_COLS + l + s * lanes];
                for (uint t = 0; t < QT_ROWS; t++) acc[s][t] += dv[t * QT_PANEL + p] * wc;
            }
    }
    for (uint s = 0; s < per; s++) {
        long c = c0 + l + s * lanes;
        if (c < k)
            for (long t = 0; t < rows; t++) STORE(y, y_off + (ulong)(i0 + t) * (ulong)k + (ulong)c, acc[s][t]);
    }
}
