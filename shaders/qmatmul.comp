// qmatmul: y[m, n] = sum_k x[m, k] w[n, k] (+ bias[n]), w quantized in ggml's blocks
// (kiln_qmatmul_args, kiln/quant.h), on the activations as given (f32 arithmetic).
//
// A workgroup computes R = WG / T weight rows against a tile of MT rows of x: T consecutive
// invocations per weight row (specialization constant 1, a power of two <= WG; the host
// picks it per device and shape, vk_qmatmul_shape in engine/vulkan/vk_quant.c), lane j of
// the T taking blocks j, j + T, ... of the row. For each block it reads the scale d (f16),
// for Q4_1 the minimum, and the 32 integers, from 32-bit words (no 8- or 16-bit storage
// needed: many phone drivers have neither), decodes them once and sums them against each x
// row in f32. With T = 1 (CPU devices) an invocation owns a whole row and writes its sums
// itself; with T > 1 the T partial sums of each (weight row, x row) meet in shared memory
// and are added in lane order. No subgroup operation is used (Vulkan leaves the mapping of
// invocations to subgroups to the implementation), so the KILN_NO_SUBGROUP build
// (qmatmul_shared, for devices without subgroup arithmetic) is the same kernel. x, bias
// and y are data_t (f32, or f16 in the _f16 builds).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer X { data_t x[]; };
layout(std430, binding = 1) readonly buffer W { uint w[]; };
layout(std430, binding = 2) readonly buffer B { data_t bias[]; };
layout(std430, binding = 3) writeonly buffer Y { data_t y[]; };
layout(push_constant) uniform Push { QMATMUL_PUSH } pc;

// invocations per weight row (a power of two <= WG)
layout(constant_id = 1) const uint T = 1;

// rows of x per workgroup: each block is decoded once for all of them
#define MT 8u

// the partial sums when T > 1: x row t's at t * (WG + 1) + invocation (the padding puts the
// T reads of the lanes that add up different x rows in different banks)
shared float part[T > 1u ? MT * (WG + 1u) : 1u];

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

void main() {
    uint R = WG / T, l = gl_LocalInvocationID.x, lane = l % T;
    uint tiles = (pc.m + MT - 1u) / MT, groups = (pc.n + R - 1u) / R, g = kiln_group_id();
    if (g >= groups * tiles) return;
    uint r = (g % groups) * R + l / T, i0 = (g / groups) * MT;
    uint rows = min(MT, pc.m - i0);
    bool live = r < pc.n; // the last group's rows past n only take part in the barrier
    uint row = pc.off[1] + (live ? r : 0u) * pc.row_words;
    uint blocks = live ? pc.k / 32u : 0u;
    uint block_bytes = pc.format == KILN_ABI_Q8_0 ? 34u : pc.format == KILN_ABI_Q4_0 ? 18u : 20u;
    float acc[MT];
    for (uint t = 0u; t < MT; t++) acc[t] = 0.0;
    for (uint b = lane; b < blocks; b += T) {
        uint p = b * block_bytes;
        float d = half_at(row, p), mn = pc.format == KILN_ABI_Q4_1 ? half_at(row, p + 2u) : 0.0;
        float q[32];
        if (pc.format == KILN_ABI_Q8_0) {
            for (uint i = 0u; i < 8u; i++) {
                uint v = word_at(row, p + 2u + 4u * i);
                for (uint j = 0u; j < 4u; j++) q[4u * i + j] = float(int(v << (24u - 8u * j)) >> 24);
            }
        } else {
            // byte j of the 16 holds value j in its low nibble and value j + 16 in its high one
            uint q0 = pc.format == KILN_ABI_Q4_1 ? p + 4u : p + 2u;
            float offset = pc.format == KILN_ABI_Q4_0 ? 8.0 : 0.0;
            for (uint i = 0u; i < 4u; i++) {
                uint v = word_at(row, q0 + 4u * i);
                for (uint j = 0u; j < 4u; j++) {
                    uint byte_ = (v >> (8u * j)) & 0xffu;
                    q[4u * i + j] = float(byte_ & 15u) - offset;
                    q[4u * i + j + 16u] = float(byte_ >> 4u) - offset;
                }
            }
        }
        for (uint t = 0u; t < rows; t++) {
            uint xb = pc.off[0] + (i0 + t) * pc.k + b * 32u;
            float s = 0.0, xsum = 0.0;
            for (uint j = 0u; j < 32u; j++) {
                float xv = LD(x[xb + j]);
                s += q[j] * xv;
                xsum += xv;
            }
            acc[t] += d * s + mn * xsum;
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
