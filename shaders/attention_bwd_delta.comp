// attention_bwd_delta: the first pass of the fused attention backward's query side
// (kiln_attention_args): delta_i = dy_i . y_i for every (b, i, h), written to delta
// (f32 [B, H, Tq]), which attention_bwd_dq and attention_bwd_dkv read. One work-group per
// row of head_dim contiguous elements of y and dy ([B, Tq, H, D]). A pass of its own because
// attention_bwd_dq already binds the eight storage buffers a kernel may. y and dy are
// data_t (f32, or f16 in the _f16 build).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer Y { data_t y[]; };
layout(std430, binding = 1) readonly buffer Dy { data_t dy[]; };
layout(std430, binding = 2) writeonly buffer Delta { float delta[]; };
layout(push_constant) uniform Push { ATTENTION_BWD_DELTA_PUSH } pc;

void main() {
    uint r = kiln_group_id();  // (b * tq + i) * heads + h
    if (r >= pc.rows) return;
    uint l = gl_LocalInvocationID.x, at = r * pc.head_dim;
    float s = 0.0;
    for (uint d = l; d < pc.head_dim; d += WG) s += LD(dy[pc.off[1] + at + d]) * LD(y[pc.off[0] + at + d]);
    s = kiln_wg_sum(s);
    uint h = r % pc.heads, bi = r / pc.heads, b = bi / pc.tq, i = bi % pc.tq;
    if (l == 0u) delta[pc.off[2] + (b * pc.heads + h) * pc.tq + i] = s;
}
