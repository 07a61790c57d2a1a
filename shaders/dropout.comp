// Inverted dropout (kiln_dropout_args): element i is kept when
// kiln_rng_uniform(seed, stream, i) >= prob, i.e. Philox4x32-10 word 0 of counter
// {i, 0, stream_lo, stream_hi} with key {seed_lo, seed_hi}, bit for bit as engine/core/rng.c.
//   forward:  y = keep ? x / (1 - prob) : 0
//   backward: dx += keep ? dy / (1 - prob) : 0   (accumulate != 0; operands dy, dx)
// f32 or f16 data.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "flat.glsl"

layout(std430, binding = 0) readonly buffer X { data_t x[]; };
layout(std430, binding = 1) buffer Y { data_t y[]; };
layout(push_constant) uniform Push { DROPOUT_PUSH } pc;

uint philox_word0(uvec4 c, uvec2 k) {
    for (int round = 0; round < 10; round++) {
        uint hi0, lo0, hi1, lo1;
        umulExtended(0xD2511F53u, c.x, hi0, lo0);
        umulExtended(0xCD9E8D57u, c.z, hi1, lo1);
        c = uvec4(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
        k += uvec2(0x9E3779B9u, 0xBB67AE85u);
    }
    return c.x;
}

void main() {
    uint i = kiln_flat_id();
    if (i >= pc.n) return;
    uint u = philox_word0(uvec4(i, 0u, pc.stream_lo, pc.stream_hi), uvec2(pc.seed_lo, pc.seed_hi));
    float uniform_ = float(u >> 8) * (1.0 / 16777216.0);
    bool keep = uniform_ >= pc.prob;
    float v = LD(x[pc.off[0] + i]);
    uint o = pc.off[1] + i;
    if (pc.accumulate != 0u) {
        if (keep) y[o] = ST(LD(y[o]) + v / pc.keep);
    } else {
        y[o] = ST(keep ? v / pc.keep : 0.0);
    }
}
