// rope: rotary position embeddings (kiln_rope_args), one invocation per (row, pair), which
// forms the pair's angle once and turns it in every head of the row:
//   forward (turn 1):                     y  = R(angle) x
//   backward (turn -1, operands dy, dx): dx (+)= R(-angle) dy   (accumulate != 0: "+=")
// Rows row0 .. row0 + rows - 1 of the [batch * seq] rows, each heads * 2 pairs channels; the
// row r is at position pos0 + r % seq. Pair i is channels (2i, 2i + 1) (KILN_ABI_ROPE_ADJACENT)
// or (i, i + pairs) (KILN_ABI_ROPE_HALF) of its head, at the angle
//   p * 2^(-(2i / dim) log2(base)) / factors[i]   (factors f32 and optional),
// formed in f32 as PyTorch and llama.cpp form it; sine and cosine from trig.glsl.
// x and y are data_t (f32, or f16 in the _f16 build).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "flat.glsl"
#include "trig.glsl"

layout(std430, binding = 0) readonly buffer X { data_t x[]; };
layout(std430, binding = 1) readonly buffer Factors { float factors[]; };
layout(std430, binding = 2) buffer Y { data_t y[]; };
layout(push_constant) uniform Push { ROPE_PUSH } pc;

void main() {
    uint i = kiln_flat_id();
    uint pairs = pc.pairs;
    if (i >= pc.rows * pairs) return;
    uint pair = i % pairs, r = i / pairs;  // r: the row within this dispatch's rows
    uint t = (pc.row0 + r) % pc.seq;
    float freq = kiln_exp2_neg(float(2u * pair) * pc.log2_base / float(2u * pairs));
    if (kiln_has(pc.off[1])) freq /= factors[pc.off[1] + pair];
    vec2 sc = kiln_sincos(float(pc.pos0 + t) * freq);
    float s = pc.turn * sc.x, c = sc.y;
    bool adjacent = pc.pairing == KILN_ABI_ROPE_ADJACENT;
    uint lo = r * pc.heads * 2u * pairs + (adjacent ? 2u * pair : pair), step = adjacent ? 1u : pairs;
    for (uint h = 0u; h < pc.heads; h++, lo += 2u * pairs) {
        float x0 = LD(x[pc.off[0] + lo]), x1 = LD(x[pc.off[0] + lo + step]);
        float y0 = x0 * c - x1 * s, y1 = x0 * s + x1 * c;
        uint o = pc.off[2] + lo;
        if (pc.accumulate != 0u) {
            y0 += LD(y[o]);
            y1 += LD(y[o + step]);
        }
        y[o] = ST(y0);
        y[o + step] = ST(y1);
    }
}
