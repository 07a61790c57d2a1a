// permute: y[a, c, b, d] (+)= x[a, b, c, d], x [d0, d1, d2, d3] (kiln_permute_args).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) buffer Y { float y[]; };
layout(push_constant) uniform Push { PERMUTE_PUSH } pc;

void main() {
    uint i = kiln_group_id() * WG + gl_LocalInvocationID.x;
    if (i >= pc.d0 * pc.d1 * pc.d2 * pc.d3) return;
    uint d = i % pc.d3, row = i / pc.d3;
    uint c = row % pc.d2, b = (row / pc.d2) % pc.d1, a = row / (pc.d1 * pc.d2);
    uint o = pc.off[1] + ((a * pc.d2 + c) * pc.d1 + b) * pc.d3 + d;
    float v = x[pc.off[0] + i];
    if (pc.accumulate != 0u)
        y[o] += v;
    else
        y[o] = v;
}
