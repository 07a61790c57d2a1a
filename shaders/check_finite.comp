// check_finite: flag[0] = 1 when any of n elements (f32, or f16 words) is inf or NaN,
// i.e. has all exponent bits set (kiln_finite_args); untouched otherwise.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "flat.glsl"

layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) buffer Flag { int flag[]; };
layout(push_constant) uniform Push { CHECK_FINITE_PUSH } pc;

void main() {
    uint i = kiln_flat_id();
    if (i >= pc.n) return;
    bool bad = pc.f16 != 0u ? (KILN_HALF(x, pc.off[0] + i) & 0x7c00u) == 0x7c00u
                            : (x[pc.off[0] + i] & 0x7f800000u) == 0x7f800000u;
    if (bad) flag[pc.off[1]] = 1;  // every writer stores the same value
}
