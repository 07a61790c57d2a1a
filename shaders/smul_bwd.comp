// smul_bwd: dx += s * dy (kiln_smul_args); f32 or f16 data.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "flat.glsl"

layout(std430, binding = 0) readonly buffer DY { data_t dy[]; };
layout(std430, binding = 1) buffer DX { data_t dx[]; };
layout(push_constant) uniform Push { SMUL_BWD_PUSH } pc;

void main() {
    uint i = kiln_flat_id();
    if (i >= pc.n) return;
    uint j = pc.off[1] + i;
    dx[j] = ST(LD(dx[j]) + pc.s * LD(dy[pc.off[0] + i]));
}
