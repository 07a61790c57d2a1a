// act_bwd: dx += dy * f'(x) (kiln_act_args); f32 or f16 data.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "flat.glsl"
#include "activation.glsl"

layout(std430, binding = 0) readonly buffer X { data_t x[]; };
layout(std430, binding = 1) readonly buffer DY { data_t dy[]; };
layout(std430, binding = 2) buffer DX { data_t dx[]; };
layout(push_constant) uniform Push { ACT_BWD_PUSH } pc;

void main() {
    uint i = kiln_flat_id();
    if (i >= pc.n) return;
    uint o = pc.off[2] + i;
    dx[o] = ST(LD(dx[o]) + LD(dy[pc.off[1] + i]) * act_derivative(pc.kind, LD(x[pc.off[0] + i])));
}
