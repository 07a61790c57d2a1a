// 2^-y, sine and cosine from plain arithmetic, for the kernels that form angles (the
// sinusoidal table, rotary embeddings). Angles reach thousands of radians, where Vulkan
// specifies neither sin/cos nor exp2 precisely enough (exp2 may be off by (3 + 2|x|) ulp,
// sin by 2^-11 absolute), so these are accurate everywhere instead:
//   2^-y as 2^-floor(y) times a polynomial for 2^-frac(y);
//   an angle reduced modulo pi/2 with a three-part constant (Cody-Waite; k * A is exact
//   while k < 2^16, angles below about 10^5), then Taylor polynomials on [-pi/4, pi/4] and
//   the quadrant's sign and swap.
#ifndef KILN_TRIG_GLSL
#define KILN_TRIG_GLSL

// 2^-y for y >= 0
float kiln_exp2_neg(float y) {
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

float kiln_sin_poly(float r) {  // |r| <= pi/4
    float r2 = r * r;
    float p = -1.0 / 39916800.0;
    p = p * r2 + 1.0 / 362880.0;
    p = p * r2 - 1.0 / 5040.0;
    p = p * r2 + 1.0 / 120.0;
    p = p * r2 - 1.0 / 6.0;
    return r + r * r2 * p;
}

float kiln_cos_poly(float r) {
    float r2 = r * r;
    float p = 1.0 / 479001600.0;
    p = p * r2 - 1.0 / 3628800.0;
    p = p * r2 + 1.0 / 40320.0;
    p = p * r2 - 1.0 / 720.0;
    p = p * r2 + 1.0 / 24.0;
    p = p * r2 - 0.5;
    return 1.0 + r2 * p;
}

// (sin(angle), cos(angle)), for angles of either sign
vec2 kiln_sincos(float angle) {
    const float HALF_PI_A = 1.5703125;               // 8 significant bits: k * A is exact
    const float HALF_PI_B = 4.838267923332751e-4;
    const float HALF_PI_C = 2.5632829192545614e-12;
    float k = floor(angle * 0.6366197723675814 + 0.5);
    float r = ((angle - k * HALF_PI_A) - k * HALF_PI_B) - k * HALF_PI_C;
    uint q = uint(int(k) & 3);  // angle = k pi/2 + r; k mod 4 also for k < 0 (two's complement)
    float s = kiln_sin_poly(r), c = kiln_cos_poly(r);
    return q == 0u ? vec2(s, c) : q == 1u ? vec2(c, -s) : q == 2u ? vec2(-s, -c) : vec2(-c, s);
}

#endif
