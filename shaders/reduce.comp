// Segmented reductions (kiln_reduce_args, kiln_entropy_args): x viewed as
// [outer, segs, inner]; segment s reduces its outer * inner elements. kind: sum, sum of
// squares, or p log p (0 where p <= 0): KILN_ABI_VK_REDUCE_*.
//   pass PARTIAL: workgroup (g, s) reduces a strided share of segment s into partial[s * groups + g];
//           with one group per segment it writes the final value directly.
//   pass TOTAL: workgroup s sums partial[s * groups ..] into out[s].
// Final value: out[s] = scale * total, or out[s] += scale * total when accumulating.
// Two passes with a fixed split: deterministic, no atomics. x is data_t (f32, or f16 in the
// _f16 build); partial sums and out are f32.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer X { data_t x[]; };
layout(std430, binding = 1) buffer Partial { float partial[]; };
layout(std430, binding = 2) buffer Out { float outv[]; };
layout(push_constant) uniform Push { REDUCE_PUSH } pc;

float term(float v) {
    if (pc.kind == KILN_ABI_VK_REDUCE_SQUARES) return v * v;
    if (pc.kind == KILN_ABI_VK_REDUCE_PLOGP) return v > 0.0 ? v * log(v) : 0.0;
    return v;
}

void finish(uint s, float total) {
    if (gl_LocalInvocationID.x != 0u) return;
    uint o = pc.off[2] + s;
    outv[o] = pc.accumulate != 0u ? outv[o] + pc.scale * total : pc.scale * total;
}

void main() {
    uint l = gl_LocalInvocationID.x;
    if (pc.pass == KILN_ABI_VK_REDUCE_PASS_TOTAL) {
        uint s = gl_WorkGroupID.x;
        float acc = 0.0;
        for (uint g = l; g < pc.groups; g += WG) acc += partial[pc.off[1] + s * pc.groups + g];
        finish(s, kiln_wg_sum(acc));
        return;
    }
    uint g = gl_WorkGroupID.x, s = gl_WorkGroupID.y;
    uint per_seg = pc.outer * pc.inner;
    float acc = 0.0;
    for (uint e = g * WG + l; e < per_seg; e += pc.groups * WG) {
        uint b = e / pc.inner, r = e - b * pc.inner;
        acc += term(LD(x[pc.off[0] + (b * pc.segs + s) * pc.inner + r]));
    }
    float total = kiln_wg_sum(acc);
    if (pc.groups == 1u)
        finish(s, total);
    else if (l == 0u)
        partial[pc.off[1] + s * pc.groups + g] = total;
}
