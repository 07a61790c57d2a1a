// qmatmul: y[m, n] = sum_k x[m, k] w[n, k] (+ bias[n]), w quantized in ggml's blocks
// (kiln_qmatmul_args, kiln/quant.h: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K), on the
// activations as given (f32 arithmetic).
//
// A workgroup computes R = WG / T weight rows against a tile of MT rows of x: T consecutive
// invocations per weight row (specialization constant 1, a power of two <= WG; the host
// picks it per device and shape, vk_qmatmul_shape in engine/vulkan/vk_quant.c), lane j of
// the T taking units j, j + T, ... of the row: 32 values each, a block of the 32-value
// formats or a sub-block of the K formats' super-blocks (qblock.glsl says why). For each
// unit it reads the scales and the integers from 32-bit words (no 8- or 16-bit storage
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

// rows of x per workgroup: each unit is decoded once for all of them
#define MT 8u

// the partial sums when T > 1: x row t's at t * (WG + 1) + invocation (the padding puts the
// T reads of the lanes that add up different x rows in different banks)
shared float part[T > 1u ? MT * (WG + 1u) : 1u];

#include "qblock.glsl"

void main() {
    uint R = WG / T, l = gl_LocalInvocationID.x, lane = l % T;
    uint tiles = (pc.m + MT - 1u) / MT, groups = (pc.n + R - 1u) / R, g = kiln_group_id();
    if (g >= groups * tiles) return;
    uint r = (g % groups) * R + l / T, i0 = (g / groups) * MT;
    uint rows = min(MT, pc.m - i0);
    bool live = r < pc.n; // the last group's rows past n only take part in the barrier
    uint row = pc.off[1] + (live ? r : 0u) * pc.row_words;
    uint units = live ? pc.k / 32u : 0u; // 32-value units: qblock.glsl
    float acc[MT];
    for (uint t = 0u; t < MT; t++) acc[t] = 0.0;
    for (uint b = lane; b < units; b += T) {
        uint packed[8];
        float d, mn;
        ivec2 sc;
        qunit(pc.format, row, b, packed, d, sc, mn);
        // the integers times their sub-block scale: exact in f32 (|q sc| <= 127 for Q8_0,
        // 32 * 128 for Q6_K), so a 32-value format sums as it did before the K formats
        float q[32];
        for (uint j = 0u; j < 32u; j++)
            q[j] = float((int(packed[j / 4u] << (24u - 8u * (j % 4u))) >> 24) * sc[j / 16u]);
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
