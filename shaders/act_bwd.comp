// act_bwd: dx += dy * f'(x) (kiln_act_args).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "act.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer DY { float dy[]; };
layout(std430, binding = 2) buffer DX { float dx[]; };
layout(push_constant) uniform Push { ACT_PUSH } pc;

void main() {
    uint i = kiln_group_id() * WG + gl_LocalInvocationID.x;
    if (i < pc.n) dx[pc.off[2] + i] += dy[pc.off[1] + i] * act_derivative(pc.kind, x[pc.off[0] + i]);
}
