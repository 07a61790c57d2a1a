// Inverted dropout (kiln_dropout_args): element i is kept when
// kiln_rng_uniform(seed, stream, i) >= prob, i.e. Philox4x32-10 word 0 of counter
// {i, 0, stream_lo, stream_hi} with key {seed_lo, seed_hi}, bit for bit as engine/core/rng.c.
//   forward:  y = keep ? x / (1 - prob) : 0
//   backward: dx += keep ? dy / (1 - prob) : 0   (accumulate != 0; operands dy, dx)
// f32 or f16 data.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "flat.glsl"
#include "philox.glsl"

layout(std430, binding = 0) readonly buffer X { data_t x[]; };
layout(std430, binding = 1) buffer Y { data_t y[]; };
layout(push_constant) uniform Push { DROPOUT_PUSH } pc;

void main() {
    uint i = kiln_flat_id();
    if (i >= pc.n) return;
    uvec2 seed = uvec2(pc.seed_lo, pc.seed_hi), stream = uvec2(pc.stream_lo, pc.stream_hi);
    bool keep = kiln_rng_uniform(seed, stream, uvec2(i, 0u)) >= pc.prob;
    float v = LD(x[pc.off[0] + i]);
    uint o = pc.off[1] + i;
    if (pc.accumulate != 0u) {
        if (keep) y[o] = ST(LD(y[o]) + v / pc.keep);
    } else {
        y[o] = ST(keep ? v / pc.keep : 0.0);
    }
}
