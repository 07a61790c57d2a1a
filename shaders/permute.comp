// permute: y[a, c, b, d] (+)= x[a, b, c, d], x [d0, d1, d2, d3] (kiln_permute_args).
// data_t is f32 (also used for i32: a copy moves the bits) or f16 (the _f16 build).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "flat.glsl"

layout(std430, binding = 0) readonly buffer X { data_t x[]; };
layout(std430, binding = 1) buffer Y { data_t y[]; };
layout(push_constant) uniform Push { PERMUTE_PUSH } pc;

void main() {
    uint i = kiln_flat_id();
    if (i >= pc.d0 * pc.d1 * pc.d2 * pc.d3) return;
    uint d = i % pc.d3, row = i / pc.d3;
    uint c = row % pc.d2, b = (row / pc.d2) % pc.d1, a = row / (pc.d1 * pc.d2);
    uint o = pc.off[1] + ((a * pc.d2 + c) * pc.d1 + b) * pc.d3 + d;
    if (pc.accumulate != 0u)
        y[o] = ST(LD(y[o]) + LD(x[pc.off[0] + i]));
    else
        y[o] = x[pc.off[0] + i];
}
