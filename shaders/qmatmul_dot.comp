// qmatmul_dot: y[m, n] = sum_k x[m, k] w[n, k] (+ bias[n]) from activations already rounded
// to int8 blocks (qmatmul_qx.comp), the second pass of qmatmul's int8 path (vk_quant.c, on
// devices with VK_KHR_shader_integer_dot_product): the CPU's product (cpu/cpu_quant_dot.h) on the
// GPU. The structure is qmatmul.comp's: a workgroup computes R = WG / T weight rows against
// a tile of MT rows of x, T consecutive invocations per weight row (specialization constant
// 1, a power of two <= WG, chosen by vk_qmatmul_shape), lane j of the T taking blocks j,
// j + T, ... of the row; with T = 1 (CPU devices) an invocation owns a whole row, with T > 1
// the T partial sums meet in shared memory and are added in lane order (no subgroup
// operation, so the KILN_NO_SUBGROUP build, qmatmul_dot_shared, is the same kernel). Each
// weight block is read as 32-bit words (no 8-bit storage needed) and turned once into 8
// words of packed int8: Q8_0's own bytes (gathered across word boundaries: 34-byte blocks
// start on every other half-word), Q4_0's nibbles minus 8, Q4_1's nibbles (0..15). Against
// each x row a block then costs 8 packed 4x8-bit dot products (OpSDotKHR), and contributes
// d_w * d_x * sum(q_w * q_x) (+ m_w * s_x for Q4_1) in f32, as on the CPU. bias and y are
// data_t (f32, or f16 in the _f16 builds).
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_spirv_intrinsics : require
#include "reduce.glsl"

// OpSDotKHR (4450) with PackedVectorFormat4x8Bit (0): the sum of the four signed byte
// products of two words. Declared through spirv_intrinsics because the glslang of some
// distributions (Debian 12's) lacks GL_EXT_integer_dot_product; capabilities DotProductKHR
// (6019) and DotProductInput4x8BitPackedKHR (6018).
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int sdot4x8(uint a, uint b, spirv_literal int fmt);
#define PACKED_4X8 0

layout(std430, binding = 0) readonly buffer QX { uint qx[]; };
layout(std430, binding = 1) readonly buffer W { uint w[]; };
layout(std430, binding = 2) readonly buffer B { data_t bias[]; };
layout(std430, binding = 3) writeonly buffer Y { data_t y[]; };
layout(push_constant) uniform Push { QMATMUL_DOT_PUSH } pc;

// the f16 at byte p (even) of the row
float half_at(uint row, uint p) { return unpackHalf2x16(w[row + (p >> 2u)] >> ((p & 2u) * 8u)).x; }

// The 4 bytes at byte p (even) of the row: one word, or the halves of two when p is 2 past
// a word. The second word is read only then (it may lie past the matrix otherwise).
uint word_at(uint row, uint p) {
    uint i = row + (p >> 2u), shift = (p & 3u) * 8u;
    uint lo = w[i], hi = w[i + min(shift, 1u)];
    return shift == 0u ? lo : (lo >> shift) | (hi << (32u - shift));
}

// invocations per weight row (a power of two <= WG)
layout(constant_id = 1) const uint T = 1;

// rows of x per workgroup: each block is unpacked once for all of them
#define MT 8u

// the partial sums when T > 1: x row t's at t * (WG + 1) + invocation (the padding puts the
// T reads of the lanes that add up different x rows in different banks)
shared float part[T > 1u ? MT * (WG + 1u) : 1u];

void main() {
    uint R = WG / T, l = gl_LocalInvocationID.x, lane = l % T;
    uint tiles = (pc.m + MT - 1u) / MT, groups = (pc.n + R - 1u) / R, g = kiln_group_id();
    if (g >= groups * tiles) return;
    uint r = (g % groups) * R + l / T, i0 = (g / groups) * MT;
    uint rows = min(MT, pc.m - i0), blocks = pc.k / 32u;
    bool live = r < pc.n; // the last group's rows past n only take part in the barrier
    uint row = pc.off[1] + (live ? r : 0u) * pc.row_words;
    uint block_bytes = pc.format == KILN_ABI_Q8_0 ? 34u : pc.format == KILN_ABI_Q4_0 ? 18u : 20u;
    float acc[MT];
    for (uint t = 0u; t < MT; t++) acc[t] = 0.0;
    for (uint b = lane; b < (live ? blocks : 0u); b += T) {
        uint p = b * block_bytes;
        float d = half_at(row, p), mn = pc.format == KILN_ABI_Q4_1 ? half_at(row, p + 2u) : 0.0;
        uint q[8]; // value j in byte j % 4 of q[j / 4], as the x words
        if (pc.format == KILN_ABI_Q8_0) {
            for (uint i = 0u; i < 8u; i++) q[i] = word_at(row, p + 2u + 4u * i);
        } else {
            // byte j of the 16 holds value j in its low nibble and value j + 16 in its high one
            uint q0 = pc.format == KILN_ABI_Q4_1 ? p + 4u : p + 2u;
            for (uint i = 0u; i < 4u; i++) {
                uint v = word_at(row, q0 + 4u * i);
                q[i] = v & 0x0f0f0f0fu;
                q[i + 4u] = (v >> 4u) & 0x0f0f0f0fu;
            }
            // Q4_0's q - 8 in every byte without borrows: q + 0x78 stays within a byte
            // (120..135), and flipping its top bit subtracts 128, giving q - 8 mod 256
            if (pc.format == KILN_ABI_Q4_0)
                for (uint i = 0u; i < 8u; i++) q[i] = (q[i] + 0x78787878u) ^ 0x80808080u;
        }
        for (uint t = 0u; t < rows; t++) {
            uint xb = pc.off[0] + ((i0 + t) * blocks + b) * KILN_ABI_VK_QX_WORDS;
            int isum = 0; // |isum| <= 32 * 128 * 127: no overflow
            for (uint i = 0u; i < 8u; i++) isum += sdot4x8(q[i], qx[xb + i], PACKED_4X8);
            float dx = uintBitsToFloat(qx[xb + 8u]), sx = uintBitsToFloat(qx[xb + 9u]);
            acc[t] += d * dx * float(isum) + mn * sx;
        }
    }
    float b0 = live && kiln_has(pc.off[2]) ? LD(bias[pc.off[2] + r]) : 0.0;
    uint y0 = pc.off[3] + i0 * pc.n + r;
    if (T == 1u) {
        if (live)
            for (uint t = 0u; t < rows; t++) y[y0 + t * pc.n] = ST(acc[t] + b0);
        return;
    }
    // every invocation of the workgroup reaches the barrier; then lane j of a row adds up
    // the row's T partial sums for x rows j, j + T, ...
    for (uint t = 0u; t < MT; t++) part[t * (WG + 1u) + l] = acc[t];
    barrier();
    if (!live) return;
    for (uint t = lane; t < rows; t += T) {
        uint first = t * (WG + 1u) + l - lane;
        float s = 0.0;
        for (uint i = 0u; i < T; i++) s += part[first + i];
        y[y0 + t * pc.n] = ST(s + b0);
    }
}
