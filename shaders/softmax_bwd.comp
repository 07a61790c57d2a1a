// Softmax backward (kiln_softmax_args), one workgroup per row:
//   g = y * (dy - sum_j dy_j y_j); dx += g * scale / T; dadd += g / T (each optional).
#version 450
#extension GL_GOOGLE_include_directive : require
#ifndef KILN_NO_SUBGROUP
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#include "common.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(local_size_x_id = 0) in;
#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer Yb { float y[]; };
layout(std430, binding = 1) readonly buffer DY { float dy[]; };
layout(std430, binding = 2) buffer DX { float dx[]; };
layout(std430, binding = 3) buffer DAdd { float dadd[]; };
layout(push_constant) uniform Push { SOFTMAX_BWD_PUSH } pc;

void main() {
    uint r = kiln_group_id();
    if (r >= pc.rows) return;
    uint l = gl_LocalInvocationID.x, tk = pc.tk;
    uint yo = pc.off[0] + r * tk, dyo = pc.off[1] + r * tk;
    float dot = 0.0;
    for (uint j = l; j < tk; j += WG) dot += dy[dyo + j] * y[yo + j];
    dot = kiln_wg_sum(dot);
    bool hx = kiln_has(pc.off[2]), ha = kiln_has(pc.off[3]);
    for (uint j = l; j < tk; j += WG) {
        float g = y[yo + j] * (dy[dyo + j] - dot);
        if (hx) dx[pc.off[2] + r * tk + j] += g * pc.dx_scale;
        if (ha) dadd[pc.off[3] + r * tk + j] += g * pc.dadd_scale;
    }
}
