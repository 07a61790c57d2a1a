// What the three fused-attention kernels share (kiln_attention_args, engine/core/backend.h):
// the tile shape, the masks, the dropout draw and the reductions across a row's invocations.
// Included first, right after #version and the include extension.
//
// Tiles (FlashAttention-2). A work-group owns R rows (query rows in attention_fwd and
// attention_bwd_dq, key rows in attention_bwd_dkv) and walks the other side in tiles of C
// rows staged in shared memory. Its WG invocations are TR = WG / R per owned row: lane
// `lane` of row r computes the row's scores against tile rows lane, lane + TR, ... and owns
// the row's output columns lane, lane + TR, ... (consecutive invocations read consecutive
// addresses, in global and in shared memory). On a CPU device (lavapipe: a work-group is
// SIMD lanes, and a shared-memory load whose address differs across lanes is a loop over
// them) the host picks TR = 1: an invocation owns a whole row, and the staged tile rows it
// reads are the same for every lane, one load broadcast. Shared rows have HD + 1 floats, score rows
// C + 1, so rows read by neighbouring invocations fall in different banks.
// WG, R, C, HD (and DROPOUT) are specialization constants the host picks (vk_attention.c's plan)
// from the device's shared-memory and work-group limits; it sizes the shared arrays by the
// same formulas as the declarations here and in each kernel.
//
// No subgroup operations: a row's invocations meet in shared memory (attn_row_sum /
// attn_row_max), so one build serves every Vulkan 1.1 device.
//
// Loops: those over an invocation's registers (s[CPT], o[DPT]) are [[unroll]], so the
// arrays stay in registers; those over the head dim, a tile's rows and the staging are
// [[dont_unroll]]: unrolled, their bodies (f16 conversions included) made lavapipe spend
// minutes compiling each pipeline.
#ifndef KILN_ATTENTION_GLSL
#define KILN_ATTENTION_GLSL

#extension GL_EXT_control_flow_attributes : require

#include "common.glsl"
#include "philox.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(constant_id = 1) const uint R = 16;
layout(constant_id = 2) const uint C = 32;
layout(constant_id = 3) const uint HD = 64;
// Whether dropout is on: a constant, because lavapipe evaluates both sides of a branch,
// and the draw (ten Philox rounds) per score costs as much as the score itself.
layout(constant_id = 4) const bool DROPOUT = false;
layout(local_size_x_id = 0) in;

const uint TR = WG / R;               // invocations per owned row
const uint DS = HD + 1u;              // floats per staged row
const uint PS = C + 1u;               // floats per row of a score tile
const uint CPT = (C + TR - 1u) / TR;  // tile rows per invocation
const uint DPT = (HD + TR - 1u) / TR; // output columns per invocation

// The log-sum-exp of a row with no visible key (KILN_ATTN_LSE_EMPTY); any lse below
// ATTN_EMPTY_BELOW marks such a row. Running maxima start there too, so no inf arithmetic.
const float ATTN_LSE_EMPTY = -3.0e38;     // KILN_ATTN_LSE_EMPTY (core/backend.h)
const float ATTN_EMPTY_BELOW = -1.0e38;   // KILN_ATTN_LSE_EMPTY_BELOW

shared float attn_red[WG];

// The sum (or max) of v over the TR invocations of this invocation's row; every
// invocation of the work-group calls it (it has barriers, unless a row has one invocation).
float attn_row_sum(float v) {
    if (TR == 1u) return v;
    uint t = gl_LocalInvocationID.x, base = t - t % TR;
    barrier();  // earlier readers of attn_red are done
    attn_red[t] = v;
    barrier();
    float s = 0.0;
    for (uint i = 0u; i < TR; i++) s += attn_red[base + i];
    return s;
}
float attn_row_max(float v) {
    if (TR == 1u) return v;
    uint t = gl_LocalInvocationID.x, base = t - t % TR;
    barrier();
    attn_red[t] = v;
    barrier();
    float s = attn_red[base];
    for (uint i = 1u; i < TR; i++) s = max(s, attn_red[base + i]);
    return s;
}

// The number of keys query row i sees: keys j < visible are unmasked. causal hides
// j > i + (tk - tq); len (the key length of the batch row, or tk) hides j >= len.
uint attn_visible(uint i, uint tq, uint tk, uint causal, int len) {
    int vis = min(int(tk), len);
    if (causal != 0u) vis = min(vis, int(i) + int(tk) - int(tq) + 1);
    return uint(max(vis, 0));
}

// The dropout factor of probability (row, j), row = (b * H + h) * tq + i: 1 / (1 - dropout)
// when kept, 0 when dropped, 1 without dropout (DROPOUT false). The draw is that of the unfused path's
// dropout on probs [B, H, Tq, Tk]: kiln_rng_uniform(seed, stream, row * tk + j) >= dropout.
float attn_keep(uint row, uint j, uint tk, float dropout, uvec2 seed, uvec2 stream) {
    if (!DROPOUT) return 1.0;
    uint hi, lo, carry;
    umulExtended(row, tk, hi, lo);
    lo = uaddCarry(lo, j, carry);
    bool keep = kiln_rng_uniform(seed, stream, uvec2(lo, hi + carry)) >= dropout;
    return keep ? 1.0 / (1.0 - dropout) : 0.0;
}

#endif
