// act_fwd: y = f(x) (kiln_act_args); f32 or f16 data.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "flat.glsl"
#include "activation.glsl"

layout(std430, binding = 0) readonly buffer X { data_t x[]; };
layout(std430, binding = 1) writeonly buffer Y { data_t y[]; };
layout(push_constant) uniform Push { ACT_FWD_PUSH } pc;

void main() {
    uint i = kiln_flat_id();
    if (i < pc.n) y[pc.off[1] + i] = ST(act_value(pc.kind, LD(x[pc.off[0] + i])));
}
