// The sinusoidal position table (kiln_sinusoid_args):
//   pe[t, 2i] = sin(t / 10000^(2i/C)), pe[t, 2i+1] = cos(t / 10000^(2i/C)).
// The angle reaches thousands of radians, where Vulkan specifies neither sin/cos nor exp2
// precisely enough (exp2 may be off by (3 + 2|x|) ulp, sin by 2^-11 absolute), so this
// kernel builds both from plain arithmetic, which is accurate everywhere:
//   freq = 2^-y, y = (2i / C) log2(10000), as 2^-floor(y) times a polynomial for 2^-frac(y);
//   angle reduced modulo pi/2 with a three-part constant (Cody-Waite), then Taylor
//   polynomials on [-pi/4, pi/4] and the quadrant's sign and swap.
// out is data_t (f32, or f16 in the _f16 build).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "flat.glsl"

layout(std430, binding = 0) writeonly buffer Out { data_t outv[]; };
layout(push_constant) uniform Push { SINUSOID_PUSH } pc;

// 2^-y for y >= 0
float exp2_neg(float y) {
    float n = floor(y);
    float x = -(y - n) * 0.6931471805599453;  // exp(x), x in (-ln 2, 0]
    float p = 1.0 / 362880.0;
    p = p * x + 1.0 / 40320.0;
    p = p * x + 1.0 / 5040.0;
    p = p * x + 1.0 / 720.0;
    p = p * x + 1.0 / 120.0;
    p = p * x + 1.0 / 24.0;
    p = p * x + 1.0 / 6.0;
    p = p * x + 0.5;
    p = p * x + 1.0;
    p = p * x + 1.0;
    return ldexp(p, -int(n));
}

float sin_poly(float r) {  // |r| <= pi/4
    float r2 = r * r;
    float p = -1.0 / 39916800.0;
    p = p * r2 + 1.0 / 362880.0;
    p = p * r2 - 1.0 / 5040.0;
    p = p * r2 + 1.0 / 120.0;
    p = p * r2 - 1.0 / 6.0;
    return r + r * r2 * p;
}

float cos_poly(float r) {
    float r2 = r * r;
    float p = 1.0 / 479001600.0;
    p = p * r2 - 1.0 / 3628800.0;
    p = p * r2 + 1.0 / 40320.0;
    p = p * r2 - 1.0 / 720.0;
    p = p * r2 + 1.0 / 24.0;
    p = p * r2 - 0.5;
    return 1.0 + r2 * p;
}

void main() {
    uint i = kiln_flat_id();
    if (i >= pc.positions * pc.channels) return;
    uint t = i / pc.channels, c = i - t * pc.channels;
    uint pair = c / 2u;
    float y = float(2u * pair) * 13.287712379549449 / float(pc.channels);
    float angle = float(t) * exp2_neg(y);
    const float HALF_PI_A = 1.5703125;               // 8 significant bits: k * A is exact
    const float HALF_PI_B = 4.838267923332751e-4;
    const float HALF_PI_C = 2.5632829192545614e-12;
    float k = floor(angle * 0.6366197723675814 + 0.5);
    float r = ((angle - k * HALF_PI_A) - k * HALF_PI_B) - k * HALF_PI_C;
    uint q = uint(k) & 3u;
    if ((c & 1u) != 0u) q = (q + 1u) & 3u;  // cos(a) = sin(a + pi/2)
    float s = sin_poly(r), co = cos_poly(r);
    float v = q == 0u ? s : q == 1u ? co : q == 2u ? -s : -co;
    outv[pc.off[0] + i] = ST(v);
}
