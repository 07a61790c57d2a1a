// attention_fwd: fused attention forward (kiln_attention_args), FlashAttention-2 style.
// A work-group per (tile of R query rows, head h, batch row b): its queries are staged once,
// then the keys and values pass through shared memory in tiles of C rows, each read once,
// with an online softmax: per row a running max m, sum l of exp(s - m) and output o, all
// rescaled by exp(m_old - m_new) when a tile raises the max. Writes y = o / l and
// lse = m + log l (f32 [B, H, Tq]); a row with no visible key gets y = 0 and lse =
// ATTN_LSE_EMPTY. Dropout scales the probabilities that multiply v, not l, so lse is the
// undropped softmax's. q, k, v, y are data_t (f32, or f16 in the _f16 build); math in f32.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "attention.glsl"

layout(std430, binding = 0) readonly buffer Q { data_t q[]; };
layout(std430, binding = 1) readonly buffer K { data_t k[]; };
layout(std430, binding = 2) readonly buffer V { data_t v[]; };
layout(std430, binding = 3) readonly buffer Len { int lengths[]; };
layout(std430, binding = 4) writeonly buffer Y { data_t y[]; };
layout(std430, binding = 5) writeonly buffer Lse { float lse[]; };
layout(push_constant) uniform Push { ATTENTION_FWD_PUSH } pc;

// vk_attention.c's shared_floats(ATTN_FWD) counts these (and attn_red)
shared float Qs[R * DS];
shared float Ks[C * DS];
shared float Vs[C * DS];
shared float Ps[R * PS];

void stage_kv(uint kbase, uint kstride, uint j0) {
    [[dont_unroll]] for (uint e = gl_LocalInvocationID.x; e < C * HD; e += WG) {
        uint jj = e / HD, d = e % HD, j = j0 + jj;
        bool in_ = j < pc.tk;
        uint at = kbase + j * kstride + d;
        Ks[jj * DS + d] = in_ ? LD(k[pc.off[1] + at]) : 0.0;
        Vs[jj * DS + d] = in_ ? LD(v[pc.off[2] + at]) : 0.0;
    }
}

void main() {
    uint t = gl_LocalInvocationID.x, r = t / TR, lane = t % TR;
    uint b = gl_WorkGroupID.z, h = gl_WorkGroupID.y, i0 = gl_WorkGroupID.x * R, i = i0 + r;
    uint hk = h / (pc.heads / pc.kv_heads);
    uint qstride = pc.heads * HD, kstride = pc.kv_heads * HD;
    uint kbase = b * pc.tk * kstride + hk * HD;
    int len = kiln_has(pc.off[3]) ? lengths[pc.off[3] + b] : int(pc.tk);
    uint vis = i < pc.tq ? attn_visible(i, pc.tq, pc.tk, pc.causal, len) : 0u;
    // the tile's last row sees the most keys: the loop stops there
    uint kend = attn_visible(min(i0 + R, pc.tq) - 1u, pc.tq, pc.tk, pc.causal, len);
    [[dont_unroll]] for (uint e = t; e < R * HD; e += WG) {
        uint rr = e / HD, d = e % HD, ii = i0 + rr;
        Qs[rr * DS + d] = ii < pc.tq ? LD(q[pc.off[0] + (b * pc.tq + ii) * qstride + h * HD + d]) : 0.0;
    }
    uvec2 seed = uvec2(pc.seed_lo, pc.seed_hi), stream = uvec2(pc.stream_lo, pc.stream_hi);
    uint rng_row = ((pc.b0 + b) * pc.heads + h) * pc.tq + i;
    float m = ATTN_LSE_EMPTY, l = 0.0;
    float o[DPT];
    [[unroll]] for (uint c = 0u; c < DPT; c++) o[c] = 0.0;
    for (uint j0 = 0u; j0 < kend; j0 += C) {
        barrier();  // the previous tile's readers are done
        stage_kv(kbase, kstride, j0);
        barrier();
        float s[CPT];
        [[unroll]] for (uint c = 0u; c < CPT; c++) s[c] = 0.0;
        [[dont_unroll]] for (uint d = 0u; d < HD; d++) {
            float qd = Qs[r * DS + d];
            [[unroll]] for (uint c = 0u; c < CPT; c++) {
                uint jj = min(lane + c * TR, C - 1u);
                s[c] += qd * Ks[jj * DS + d];
            }
        }
        float mt = ATTN_LSE_EMPTY;
        [[unroll]] for (uint c = 0u; c < CPT; c++) {
            s[c] *= pc.scale;
            uint jj = lane + c * TR;
            if (jj < C && j0 + jj < vis) mt = max(mt, s[c]);
        }
        float mn = max(m, attn_row_max(mt));
        float alpha = exp(m - mn), ls = 0.0;
        [[unroll]] for (uint c = 0u; c < CPT; c++) {
            uint jj = lane + c * TR, j = j0 + jj;
            if (jj >= C) continue;
            float p = j < vis ? exp(s[c] - mn) : 0.0;
            ls += p;
            Ps[r * PS + jj] = p * attn_keep(rng_row, j, pc.tk, pc.dropout, seed, stream);
        }
        l = l * alpha + attn_row_sum(ls);  // its barriers publish Ps (with TR = 1 a row is its own)
        m = mn;
        [[unroll]] for (uint c = 0u; c < DPT; c++) o[c] *= alpha;
        [[dont_unroll]] for (uint jj = 0u; jj < C; jj++) {
            float p = Ps[r * PS + jj];
            [[unroll]] for (uint c = 0u; c < DPT; c++) o[c] += p * Vs[jj * DS + min(lane + c * TR, HD - 1u)];
        }
    }
    if (i >= pc.tq) return;
    float inv = l > 0.0 ? 1.0 / l : 0.0;
    uint yo = pc.off[4] + (b * pc.tq + i) * qstride + h * HD;
    [[unroll]] for (uint c = 0u; c < DPT; c++) {
        uint d = lane + c * TR;
        if (d < HD) y[yo + d] = ST(o[c] * inv);
    }
    if (lane == 0u) lse[pc.off[5] + (b * pc.heads + h) * pc.tq + i] = l > 0.0 ? m + log(l) : ATTN_LSE_EMPTY;
}
