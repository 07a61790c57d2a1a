// Softmax backward (kiln_softmax_args), one workgroup per row:
//   g = y * (dy - sum_j dy_j y_j); dx += g * scale / T; dadd += g / T (each optional).
// f32 or f16 data (the _f16 build).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer Yb { data_t y[]; };
layout(std430, binding = 1) readonly buffer DY { data_t dy[]; };
layout(std430, binding = 2) buffer DX { data_t dx[]; };
layout(std430, binding = 3) buffer DAdd { data_t dadd[]; };
layout(push_constant) uniform Push { SOFTMAX_BWD_PUSH } pc;

void main() {
    uint r = kiln_group_id();
    if (r >= pc.rows) return;
    uint l = gl_LocalInvocationID.x, tk = pc.tk;
    uint yo = pc.off[0] + r * tk, dyo = pc.off[1] + r * tk;
    float dot = 0.0;
    for (uint j = l; j < tk; j += WG) dot += LD(dy[dyo + j]) * LD(y[yo + j]);
    dot = kiln_wg_sum(dot);
    bool hx = kiln_has(pc.off[2]), ha = kiln_has(pc.off[3]);
    for (uint j = l; j < tk; j += WG) {
        float g = LD(y[yo + j]) * (LD(dy[dyo + j]) - dot);
        uint xi = pc.off[2] + r * tk + j, ai = pc.off[3] + r * tk + j;
        if (hx) dx[xi] = ST(LD(dx[xi]) + g * pc.dx_scale);
        if (ha) dadd[ai] = ST(LD(dadd[ai]) + g * pc.dadd_scale);
    }
}
