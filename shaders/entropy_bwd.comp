// entropy_bwd: dp[b, h, i, j] += dout[h] * scale * (log p + 1), 0 where p <= 0, with
// scale = -1 / (batch * tq) (kiln_entropy_args). p and dp are data_t (f32, or f16 in the
// _f16 build); dout is f32.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "flat.glsl"

layout(std430, binding = 0) readonly buffer P { data_t p[]; };
layout(std430, binding = 1) readonly buffer DOut { float dout[]; };
layout(std430, binding = 2) buffer DP { data_t dp[]; };
layout(push_constant) uniform Push { ENTROPY_BWD_PUSH } pc;

void main() {
    uint i = kiln_flat_id();
    if (i >= pc.n) return;
    float v = LD(p[pc.off[0] + i]);
    if (!(v > 0.0)) return;
    uint h = (i / pc.inner) % pc.heads;
    uint o = pc.off[2] + i;
    dp[o] = ST(LD(dp[o]) + dout[pc.off[1] + h] * pc.scale * (log(v) + 1.0));
}
