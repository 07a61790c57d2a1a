// qmatmul_qx: the first pass of qmatmul's int8 path (vk_quant.c, devices with integer dot
// products), for every weight format (the K formats' sub-blocks are 32 values too): each
// block of 32 activations rounded to int8 with one f32 scale, by the CPU's rule for the
// 32-value formats (qx_quantize in engine/cpu/cpu_quant_dot.c, the same f32 operations
// in the same order):
//   amax = max |x_j|; d = amax / 127; id = d > 0 ? 1 / d : 0; q_j = round-half-even(x_j * id)
// so the product (qmatmul_dot.comp) sums the CPU's integers for those. Each block becomes
// KILN_ABI_VK_QX_WORDS words: its 32 q packed four to a word (value j in byte j % 4 of word
// j / 4, the operand layout of the packed 4x8-bit dot product), then d and s = d * sum(q)
// (the minimum terms of Q4_1, Q5_1 and the K formats multiply s) as f32 bits.
//
// One difference from the CPU remains possible: Vulkan lets a shader's f32 division be
// off by an ulp or two (the CPU's is correctly rounded), so d or id may differ in the last
// bit, and an x_j * id that lands within that of a half-way point (a tie, or nearly one)
// may round to the other integer. That is rare and costs at most one step d of one
// activation; tests/test_op_quant.c allows exactly that. x is data_t (f32, or f16 in the
// _f16 build, widened exactly as the CPU widens it). One invocation per block.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "flat.glsl"

layout(std430, binding = 0) readonly buffer X { data_t x[]; };
layout(std430, binding = 1) writeonly buffer QX { uint qx[]; };
layout(push_constant) uniform Push { QMATMUL_QX_PUSH } pc;

void main() {
    uint b = kiln_flat_id();
    if (b >= pc.blocks) return;
    uint xb = pc.off[0] + b * 32u, out0 = pc.off[1] + b * KILN_ABI_VK_QX_WORDS;
    float v[32];
    float amax = 0.0;
    for (uint j = 0u; j < 32u; j++) {
        v[j] = LD(x[xb + j]);
        amax = max(amax, abs(v[j]));
    }
    float d = amax / 127.0, id = d > 0.0 ? 1.0 / d : 0.0;
    int sum = 0;
    for (uint i = 0u; i < 8u; i++) {
        uint word = 0u;
        for (uint j = 0u; j < 4u; j++) {
            int q = int(roundEven(v[4u * i + j] * id)); // |q| <= 127, as on the CPU
            sum += q;
            word |= (uint(q) & 0xffu) << (8u * j);
        }
        qx[out0 + i] = word;
    }
    qx[out0 + 8u] = floatBitsToUint(d);
    qx[out0 + 9u] = floatBitsToUint(d * float(sum));
}
