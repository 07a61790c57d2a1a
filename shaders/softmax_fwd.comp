// Masked softmax forward over [batch, heads, tq, tk] (kiln_softmax_args), one workgroup
// per row: z = (scale * x + add) / temperature over the visible keys, y = softmax(z),
// masked keys 0, a row with no visible key all zeros. The masks are computed from
// (b, i, j), never stored: causal hides j > i + (tk - tq), lengths hide j >= lengths[b].
// x, add and y are data_t (f32, or f16 in the _f16 build). The last pass recomputes
// exp(z - max) rather than rescaling a stored exponential, so an f16 y is rounded once.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer X { data_t x[]; };
layout(std430, binding = 1) readonly buffer Add { data_t add_[]; };
layout(std430, binding = 2) readonly buffer Len { int lengths[]; };
layout(std430, binding = 3) writeonly buffer Y { data_t y[]; };
layout(push_constant) uniform Push { SOFTMAX_FWD_PUSH } pc;

float logit(uint xo, uint ao, bool has_add, uint j) {
    return (pc.scale * LD(x[xo + j]) + (has_add ? LD(add_[ao + j]) : 0.0)) * pc.inv_temp;
}

void main() {
    uint r = kiln_group_id();
    uint rows = pc.batch * pc.heads * pc.tq;
    if (r >= rows) return;
    uint l = gl_LocalInvocationID.x, tk = pc.tk;
    uint b = r / (pc.heads * pc.tq), i = r % pc.tq;
    int visible = int(tk);
    if (pc.causal != 0u) visible = min(visible, int(i) + int(tk) - int(pc.tq) + 1);
    if (kiln_has(pc.off[2])) visible = min(visible, lengths[pc.off[2] + b]);
    uint vis = uint(max(visible, 0));
    uint xo = pc.off[0] + r * tk, yo = pc.off[3] + r * tk, ao = pc.off[1] + r * tk;
    bool has_add = kiln_has(pc.off[1]);
    float zmax = -1.0 / 0.0;
    for (uint j = l; j < vis; j += WG) zmax = max(zmax, logit(xo, ao, has_add, j));
    zmax = kiln_wg_max(zmax);
    float sum = 0.0;
    for (uint j = l; j < vis; j += WG) sum += exp(logit(xo, ao, has_add, j) - zmax);
    sum = kiln_wg_sum(sum);
    float inv = vis > 0u ? 1.0 / sum : 0.0;
    for (uint j = l; j < tk; j += WG) y[yo + j] = ST(j < vis ? exp(logit(xo, ao, has_add, j) - zmax) * inv : 0.0);
}
