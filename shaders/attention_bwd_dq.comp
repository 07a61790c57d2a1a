// attention_bwd_dq: the fused attention backward's query side (kiln_attention_args).
// A work-group per (tile of R query rows, head h, batch row b), as attention_fwd:
//   over the visible keys in tiles of C staged in shared memory (delta_i = dy_i . y_i from
//   attention_bwd_delta, the pass before):
//   p_ij = exp(s_ij - lse_i) recomputed from the forward's lse, dP_ij = keep_ij dy_i . v_j
//   (keep_ij the dropout factor), dS_ij = p_ij (dP_ij - delta_i), and dq_i += scale *
//   sum_j dS_ij k_j, added to dq in place. The work-group owns its rows of dq, so nothing is
//   written by two work-groups (no atomics). Rows whose lse marks them empty have no
//   gradient.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "attention.glsl"

layout(std430, binding = 0) readonly buffer Q { data_t q[]; };
layout(std430, binding = 1) readonly buffer K { data_t k[]; };
layout(std430, binding = 2) readonly buffer V { data_t v[]; };
layout(std430, binding = 3) readonly buffer Len { int lengths[]; };
layout(std430, binding = 4) readonly buffer Dy { data_t dy[]; };
layout(std430, binding = 5) readonly buffer Lse { float lse[]; };
layout(std430, binding = 6) readonly buffer Delta { float delta[]; };
layout(std430, binding = 7) buffer Dq { data_t dq[]; };
layout(push_constant) uniform Push { ATTENTION_BWD_DQ_PUSH } pc;

// vk_attention.c's shared_floats(ATTN_DQ) counts these (and attn_red)
shared float Qs[R * DS];
shared float Dys[R * DS];
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
    [[dont_unroll]] for (uint e = t; e < R * HD; e += WG) {
        uint rr = e / HD, d = e % HD, ii = i0 + rr;
        bool in_ = ii < pc.tq;
        uint at = (b * pc.tq + ii) * qstride + h * HD + d;
        Qs[rr * DS + d] = in_ ? LD(q[pc.off[0] + at]) : 0.0;
        Dys[rr * DS + d] = in_ ? LD(dy[pc.off[4] + at]) : 0.0;
    }
    uint qrow = (b * pc.tq + i) * qstride + h * HD, stat = (b * pc.heads + h) * pc.tq + i;
    int len = kiln_has(pc.off[3]) ? lengths[pc.off[3] + b] : int(pc.tk);
    float lse_i = i < pc.tq ? lse[pc.off[5] + stat] : ATTN_LSE_EMPTY;
    float dl = i < pc.tq ? delta[pc.off[6] + stat] : 0.0;
    uint vis = lse_i < ATTN_EMPTY_BELOW ? 0u : attn_visible(i, pc.tq, pc.tk, pc.causal, len);
    uint kend = attn_visible(min(i0 + R, pc.tq) - 1u, pc.tq, pc.tk, pc.causal, len);
    uvec2 seed = uvec2(pc.seed_lo, pc.seed_hi), stream = uvec2(pc.stream_lo, pc.stream_hi);
    uint rng_row = ((pc.b0 + b) * pc.heads + h) * pc.tq + i;
    float g[DPT];
    [[unroll]] for (uint c = 0u; c < DPT; c++) g[c] = 0.0;
    for (uint j0 = 0u; j0 < kend; j0 += C) {
        barrier();  // the previous tile's readers are done
        stage_kv(kbase, kstride, j0);
        barrier();
        float s[CPT], dp[CPT];
        [[unroll]] for (uint c = 0u; c < CPT; c++) s[c] = dp[c] = 0.0;
        [[dont_unroll]] for (uint d = 0u; d < HD; d++) {
            float qd = Qs[r * DS + d], gd = Dys[r * DS + d];
            [[unroll]] for (uint c = 0u; c < CPT; c++) {
                uint jj = min(lane + c * TR, C - 1u);
                s[c] += qd * Ks[jj * DS + d];
                dp[c] += gd * Vs[jj * DS + d];
            }
        }
        [[unroll]] for (uint c = 0u; c < CPT; c++) {
            uint jj = lane + c * TR, j = j0 + jj;
            if (jj >= C) continue;
            float ds = 0.0;
            if (j < vis) {
                float p = exp(pc.scale * s[c] - lse_i);
                ds = p * (dp[c] * attn_keep(rng_row, j, pc.tk, pc.dropout, seed, stream) - dl);
            }
            Ps[r * PS + jj] = ds;
        }
        barrier();
        [[dont_unroll]] for (uint jj = 0u; jj < C; jj++) {
            float ds = Ps[r * PS + jj];
            [[unroll]] for (uint c = 0u; c < DPT; c++) g[c] += ds * Ks[jj * DS + min(lane + c * TR, HD - 1u)];
        }
    }
    if (i >= pc.tq) return;
    [[unroll]] for (uint c = 0u; c < DPT; c++) {
        uint d = lane + c * TR;
        if (d < HD) {
            uint at = pc.off[7] + qrow + d;
            dq[at] = ST(LD(dq[at]) + pc.scale * g[c]);
        }
    }
}
