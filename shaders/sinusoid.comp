// The sinusoidal position table (kiln_sinusoid_args):
//   pe[t, 2i] = sin(t / 10000^(2i/C)), pe[t, 2i+1] = cos(t / 10000^(2i/C)).
// The angle reaches thousands of radians: freq = 2^-y, y = (2i / C) log2(10000), and the
// sine and cosine come from trig.glsl's plain arithmetic, accurate everywhere.
// out is data_t (f32, or f16 in the _f16 build).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "flat.glsl"
#include "trig.glsl"

layout(std430, binding = 0) writeonly buffer Out { data_t outv[]; };
layout(push_constant) uniform Push { SINUSOID_PUSH } pc;

void main() {
    uint i = kiln_flat_id();
    if (i >= pc.positions * pc.channels) return;
    uint t = i / pc.channels, c = i - t * pc.channels;
    uint pair = c / 2u;
    float y = float(2u * pair) * 13.287712379549449 / float(pc.channels);
    float angle = float(t) * kiln_exp2_neg(y);
    vec2 sc = kiln_sincos(angle);
    float v = (c & 1u) != 0u ? sc.y : sc.x;
    outv[pc.off[0] + i] = ST(v);
}
