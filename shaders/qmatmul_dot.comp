// qmatmul_dot: y[m, n] = sum_k x[m, k] w[n, k] (+ bias[n]) from activations already rounded
// to int8 blocks of 32 (qmatmul_qx.comp), the second pass of qmatmul's int8 path (vk_quant.c,
// on devices with VK_KHR_shader_integer_dot_product). The structure is qmatmul.comp's: a
// workgroup computes R = WG / T weight rows against a tile of MT rows of x, T consecutive
// invocations per weight row (specialization constant 1, a power of two <= WG, chosen by
// vk_qmatmul_shape), lane j of the T taking the row's 32-value units j, j + T, ... (a block,
// or a K format's sub-block: qblock.glsl); with T = 1 (CPU devices) an invocation owns a
// whole row, with T > 1 the T partial sums meet in shared memory and are added in lane
// order (no subgroup operation, so the KILN_NO_SUBGROUP build, qmatmul_dot_shared, is the
// same kernel). Each unit is read as 32-bit words (no 8-bit storage needed) and turned once
// into 8 words of packed int8 (qunit: Q8_0's own bytes, the 4-, 5- and 6-bit values, less
// their offset where the format has one). Against each x row a unit then costs 8 packed
// 4x8-bit dot products (OpSDotKHR), in two halves of 16 values for Q6_K's two scales, and
// contributes d_w * d_x * (sc_0 * sum_lo + sc_1 * sum_hi) (+ mn_w * s_x: Q4_1 and Q5_1's
// minimum, the K formats' -dmin * min) in f32. The 32-value formats' products are the CPU's
// (cpu/cpu_quant_dot.h); for the K formats the CPU rounds activations per 256 (ggml's Q8_K)
// and this per 32, the finer rounding, whose blocks the sub-block scales line up with.
// bias and y are data_t (f32, or f16 in the _f16 builds).
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

// invocations per weight row (a power of two <= WG)
layout(constant_id = 1) const uint T = 1;

// rows of x per workgroup: each block is unpacked once for all of them
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
    uint rows = min(MT, pc.m - i0), blocks = pc.k / 32u;
    bool live = r < pc.n; // the last group's rows past n only take part in the barrier
    uint row = pc.off[1] + (live ? r : 0u) * pc.row_words;
    float acc[MT];
    for (uint t = 0u; t < MT; t++) acc[t] = 0.0;
    for (uint b = lane; b < (live ? blocks : 0u); b += T) {
        uint q[8]; // unit b's value j in byte j % 4 of q[j / 4], as the x words (qblock.glsl)
        float d, mn;
        ivec2 sc;
        qunit(pc.format, row, b, q, d, sc, mn);
        for (uint t = 0u; t < rows; t++) {
            uint xb = pc.off[0] + ((i0 + t) * blocks + b) * KILN_ABI_VK_QX_WORDS;
            // each half's |sum| <= 16 * 128 * 127, times |sc| <= 128: no overflow
            int lo = 0, hi = 0;
            for (uint i = 0u; i < 4u; i++) lo += sdot4x8(q[i], qx[xb + i], PACKED_4X8);
            for (uint i = 4u; i < 8u; i++) hi += sdot4x8(q[i], qx[xb + i], PACKED_4X8);
            float dx = uintBitsToFloat(qx[xb + 8u]), sx = uintBitsToFloat(qx[xb + 9u]);
            acc[t] += d * dx * float(sc.x * lo + sc.y * hi) + mn * sx;
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
