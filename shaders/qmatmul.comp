// qmatmul: y[m, n] = sum_k x[m, k] w[n, k] (+ bias[n]), w quantized in ggml's blocks
// (kiln_qmatmul_args, kiln/quant.h), one workgroup per weight row and tile of MT rows of x.
// Each invocation takes every WG-th block of the row: the block's scale d (f16), for Q4_1
// its minimum, and its 32 integers, read from 32-bit words (no 8- or 16-bit storage needed:
// many phone drivers have neither), decoded once and summed against each x row in f32; then
// the workgroup's partial sums are added (reduce.glsl). x, bias and y are data_t (f32, or
// f16 in the _f16 builds).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer X { data_t x[]; };
layout(std430, binding = 1) readonly buffer W { uint w[]; };
layout(std430, binding = 2) readonly buffer B { data_t bias[]; };
layout(std430, binding = 3) writeonly buffer Y { data_t y[]; };
layout(push_constant) uniform Push { QMATMUL_PUSH } pc;

// byte p of the row that starts at word `row`, little-endian in its word
uint byte_at(uint row, uint p) { return (w[row + (p >> 2u)] >> ((p & 3u) * 8u)) & 0xffu; }

float half_at(uint row, uint p) { return unpackHalf2x16(byte_at(row, p) | (byte_at(row, p + 1u) << 8u)).x; }

// rows of x per workgroup: each block is decoded once for all of them
#define MT 8u

void main() {
    uint tiles = (pc.m + MT - 1u) / MT, g = kiln_group_id();
    if (g >= pc.n * tiles) return;
    uint r = g % pc.n, i0 = (g / pc.n) * MT, l = gl_LocalInvocationID.x;
    uint rows = min(MT, pc.m - i0);
    uint row = pc.off[1] + r * pc.row_words;
    uint block_bytes = pc.format == KILN_ABI_Q8_0 ? 34u : pc.format == KILN_ABI_Q4_0 ? 18u : 20u;
    float acc[MT];
    for (uint t = 0u; t < MT; t++) acc[t] = 0.0;
    for (uint b = l; b < pc.k / 32u; b += WG) {
        uint p = b * block_bytes;
        float d = half_at(row, p), mn = pc.format == KILN_ABI_Q4_1 ? half_at(row, p + 2u) : 0.0;
        float q[32];
        if (pc.format == KILN_ABI_Q8_0) {
            for (uint j = 0u; j < 32u; j++) q[j] = float(int(byte_at(row, p + 2u + j) << 24u) >> 24);
        } else {
            uint q0 = pc.format == KILN_ABI_Q4_1 ? p + 4u : p + 2u;
            float offset = pc.format == KILN_ABI_Q4_0 ? 8.0 : 0.0;
            for (uint j = 0u; j < 16u; j++) {
                uint v = byte_at(row, q0 + j);
                q[j] = float(v & 15u) - offset;
                q[j + 16u] = float(v >> 4u) - offset;
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
    // every invocation takes part in every sum (they synchronize the workgroup)
    for (uint t = 0u; t < MT; t++) {
        float total = kiln_wg_sum(acc[t]);
        if (l == 0u && t < rows)
            y[pc.off[3] + (i0 + t) * pc.n + r] = ST(total + (kiln_has(pc.off[2]) ? LD(bias[pc.off[2] + r]) : 0.0));
    }
}
