// smul_fwd: y = s * x (kiln_smul_args); f32 or f16 data.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "flat.glsl"

layout(std430, binding = 0) readonly buffer X { data_t x[]; };
layout(std430, binding = 1) writeonly buffer Y { data_t y[]; };
layout(push_constant) uniform Push { SMUL_FWD_PUSH } pc;

void main() {
    uint i = kiln_flat_id();
    if (i < pc.n) y[pc.off[1] + i] = ST(pc.s * LD(x[pc.off[0] + i]));
}
