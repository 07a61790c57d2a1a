// Reading ggml's weight blocks (kiln/quant.h, ggml-common.h's layouts) from 32-bit words, for
// both quantized products: qmatmul.comp (f32 arithmetic) and qmatmul_dot.comp (int8 dot
// products). Included after the shader declares its weight buffer `w` (uint words); no 8- or
// 16-bit storage is needed, so every device, KILN_VK_MIN_LIMITS mode included, can read them.
//
// A row is read in units of 32 values: unit b is block b of the 32-value formats (Q8_0,
// Q4_0, Q4_1, Q5_0, Q5_1), and sub-block b % 8 of super-block b / 8 in the K formats (Q4_K,
// Q5_K, Q6_K). Why 32 and not a whole super-block per lane: the kernels give consecutive
// units of a row to neighbouring invocations (lanes), so the 8 lanes of a super-block read
// its neighbouring bytes (one cache line or two between them, the header read by all of
// them at once) where super-block lanes would each stream their own 144 to 210 bytes, 144
// to 210 bytes apart; a row of 768 values has 24 units to spread over a subgroup, not 3;
// and a unit is exactly one block of the int8 activations (qmatmul_qx.comp), whose scales
// the K formats' sub-block scales (per 32 values, per 16 for Q6_K) line up with.
//
// Rows start on a word (row_words per row) but blocks need not: 22, 34, 18 and 210 bytes
// put a block's start 2 bytes past a word. Every field the units read starts at an even
// byte of its block, so word_at and half_at take even offsets; byte_at takes any.
#ifndef KILN_QBLOCK_GLSL
#define KILN_QBLOCK_GLSL

// The 4 bytes at byte p (even) of the row that starts at word `row`, little-endian: one
// word, or the halves of two when p is 2 past a word. The second word is read only then
// (it may lie past the matrix otherwise).
uint word_at(uint row, uint p) {
    uint i = row + (p >> 2u), shift = (p & 3u) * 8u;
    uint lo = w[i], hi = w[i + min(shift, 1u)];
    return shift == 0u ? lo : (lo >> shift) | (hi << (32u - shift));
}

// the f16 at byte p (even) of the row
float half_at(uint row, uint p) { return unpackHalf2x16(w[row + (p >> 2u)] >> ((p & 2u) * 8u)).x; }

// the byte at byte p of the row
uint byte_at(uint row, uint p) { return (w[row + (p >> 2u)] >> ((p & 3u) * 8u)) & 0xffu; }

// bytes per block (per super-block for the K formats)
uint qblock_bytes(uint format) {
    switch (format) {
    case KILN_ABI_Q8_0: return 34u;
    case KILN_ABI_Q4_0: return 18u;
    case KILN_ABI_Q4_1: return 20u;
    case KILN_ABI_Q5_0: return 22u;
    case KILN_ABI_Q5_1: return 24u;
    case KILN_ABI_Q4_K: return 144u;
    case KILN_ABI_Q5_K: return 176u;
    default: return 210u; // Q6_K
    }
}

// Bits 0..3 of h moved to bit 4 of bytes 0..3: the fifth bits of four 5-bit values.
uint fifth_bits(uint h) {
    return ((h & 1u) | ((h & 2u) << 7u) | ((h & 4u) << 14u) | ((h & 8u) << 21u)) << 4u;
}

// c subtracted from each byte of v (bytes <= 127 + c) without borrows between bytes: each
// byte + 128 - c stays within its byte, and flipping its top bit subtracts 128
uint sub_bytes(uint v, uint c) { return (v + (128u - c) * 0x01010101u) ^ 0x80808080u; }

// Q4_K and Q5_K's 6-bit scale (.x) and minimum (.y) of sub-block s, packed in the 12 bytes
// at byte p of the row (ggml's get_scale_min_k4): sub-blocks 0..3 in the low 6 bits of
// bytes s and s + 4; 4..7 in the nibbles of byte s + 4, their top bits in the top bits of
// bytes s - 4 and s.
uvec2 k_scale_min(uint row, uint p, uint s) {
    if (s < 4u) return uvec2(byte_at(row, p + s) & 63u, byte_at(row, p + s + 4u) & 63u);
    uint both = byte_at(row, p + s + 4u);
    return uvec2((both & 15u) | ((byte_at(row, p + s - 4u) >> 6u) << 4u),
                 (both >> 4u) | ((byte_at(row, p + s) >> 6u) << 4u));
}

// One unit (32 values) of a weight row: value j is d * sc[j / 16] * q_j + mn, q_j the signed
// byte j % 4 of q[j / 4] (Q4_0's nibble - 8, Q5_0's 5 bits - 16, Q6_K's 6 bits - 32; the
// other formats' 0..31 as they are), sc 1 but for the K formats' integer sub-block scales
// (one per 32 values in Q4_K and Q5_K, per 16 in Q6_K), mn the minimum term (Q4_1, Q5_1,
// and the K formats' -dmin * min).
void qunit(uint format, uint row, uint b, out uint q[8], out float d, out ivec2 sc, out float mn) {
    sc = ivec2(1);
    mn = 0.0;
    if (format <= KILN_ABI_Q5_1) {
        uint p = b * qblock_bytes(format);
        d = half_at(row, p);
        if (format == KILN_ABI_Q8_0) {
            for (uint i = 0u; i < 8u; i++) q[i] = word_at(row, p + 2u + 4u * i);
            return;
        }
        // the 16 bytes hold value j in the low nibble of byte j, value j + 16 in the high
        // one; Q5's bit 4 of value j is bit j of the 32-bit qh before them
        bool five = format >= KILN_ABI_Q5_0, minimum = format == KILN_ABI_Q4_1 || format == KILN_ABI_Q5_1;
        uint qs = p + 2u + (minimum ? 2u : 0u) + (five ? 4u : 0u);
        uint qh = five ? word_at(row, qs - 4u) : 0u;
        if (minimum) mn = half_at(row, p + 2u);
        for (uint i = 0u; i < 4u; i++) {
            uint v = word_at(row, qs + 4u * i);
            q[i] = (v & 0x0f0f0f0fu) | fifth_bits(qh >> (4u * i));
            q[i + 4u] = ((v >> 4u) & 0x0f0f0f0fu) | fifth_bits(qh >> (16u + 4u * i));
        }
        if (format == KILN_ABI_Q4_0 || format == KILN_ABI_Q5_0)
            for (uint i = 0u; i < 8u; i++) q[i] = sub_bytes(q[i], format == KILN_ABI_Q4_0 ? 8u : 16u);
        return;
    }
    uint s = b & 7u, p = (b >> 3u) * qblock_bytes(format);
    if (format == KILN_ABI_Q6_K) {
        // ql[128], qh[64], scales[16], d: the super-block's halves of 128 values take 64
        // bytes of ql and 32 of qh each; sub-block s = 4 h + c of half h reads ql's bytes
        // 64 h + 32 (c & 1) .. + 31 (low nibbles for c < 2, high ones after) and bits 2 c, 2 c + 1
        // of qh's bytes 32 h .. 32 h + 31; its two int8 scales are bytes 2 s and 2 s + 1
        uint h = s >> 2u, c = s & 3u;
        uint ql = p + 64u * h + 32u * (c & 1u), qh = p + 128u + 32u * h;
        for (uint i = 0u; i < 8u; i++) {
            uint lo = (word_at(row, ql + 4u * i) >> (4u * (c >> 1u))) & 0x0f0f0f0fu;
            uint hi = (word_at(row, qh + 4u * i) >> (2u * c)) & 0x03030303u;
            q[i] = sub_bytes(lo | (hi << 4u), 32u);
        }
        uint scales = word_at(row, p + 192u + 2u * s);
        sc = ivec2(int(scales << 24u) >> 24, int(scales << 16u) >> 24);
        d = half_at(row, p + 208u);
        return;
    }
    // Q4_K (d, dmin, scales[12], qs[128]) and Q5_K (the same with qh[32] before qs): the
    // super-block's quarters of 64 values share 32 bytes of qs, sub-block 2 j + 0 / 1 in
    // their low / high nibbles; Q5_K's bit 4 of sub-block s's value l is bit s of qh[l]
    bool five = format == KILN_ABI_Q5_K;
    uint qs = p + (five ? 48u : 16u) + 32u * (s >> 1u), shift = 4u * (s & 1u);
    for (uint i = 0u; i < 8u; i++) {
        q[i] = (word_at(row, qs + 4u * i) >> shift) & 0x0f0f0f0fu;
        if (five) q[i] |= ((word_at(row, p + 16u + 4u * i) >> s) & 0x01010101u) << 4u;
    }
    uvec2 scale_min = k_scale_min(row, p + 4u, s);
    sc = ivec2(int(scale_min.x));
    d = half_at(row, p);
    mn = -half_at(row, p + 2u) * float(scale_min.y);
}

#endif
