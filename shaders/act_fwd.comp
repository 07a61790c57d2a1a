// act_fwd: y = f(x) (kiln_act_args); f32 or f16 data.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "act.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer X { data_t x[]; };
layout(std430, binding = 1) writeonly buffer Y { data_t y[]; };
layout(push_constant) uniform Push { ACT_FWD_PUSH } pc;

void main() {
    uint i = kiln_group_id() * WG + gl_LocalInvocationID.x;
    if (i < pc.n) y[pc.off[1] + i] = ST(act_value(pc.kind, LD(x[pc.off[0] + i])));
}
