// attention_bwd_dkv: the fused attention backward's key/value side (kiln_attention_args),
// after attention_bwd_delta. It reads each query row's lse and delta from stats, the two
// interleaved (stats[2 row] = lse, stats[2 row + 1] = delta, row = (b * H + h) * tq + i; the
// host copies them there, since a kernel binds at most eight buffers). A work-group per (tile of R key rows, kv head hk,
// batch row b) keeps its keys and values in shared memory and walks, for each of the
// G = H / KVH query heads reading kv head hk, the query rows that can see its keys, in
// tiles of C (queries, dy, lse, delta staged once per tile):
//   p_ij = exp(s_ij - lse_i), p'_ij = keep_ij p_ij, dS_ij = p_ij (keep_ij dy_i . v_j - delta_i)
//   dv_j += sum_i p'_ij dy_i,  dk_j += scale * sum_i dS_ij q_i
// summed in registers over every head and tile, then added to dk and dv in place. The
// work-group owns its rows of dk and dv: no atomics, and the sums' order is fixed.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "attention.glsl"

layout(std430, binding = 0) readonly buffer Q { data_t q[]; };
layout(std430, binding = 1) readonly buffer K { data_t k[]; };
layout(std430, binding = 2) readonly buffer V { data_t v[]; };
layout(std430, binding = 3) readonly buffer Len { int lengths[]; };
layout(std430, binding = 4) readonly buffer Dy { data_t dy[]; };
layout(std430, binding = 5) readonly buffer Stats { float stats[]; };
layout(std430, binding = 6) buffer Dk { data_t dk[]; };
layout(std430, binding = 7) buffer Dv { data_t dv[]; };
layout(push_constant) uniform Push { ATTENTION_BWD_DKV_PUSH } pc;

// vk_attention.c's shared_floats(ATTN_DKV) counts these (and attn_red)
shared float Ks[R * DS];
shared float Vs[R * DS];
shared float Qs[C * DS];
shared float Dys[C * DS];
shared float Ps[R * PS];
shared float Dss[R * PS];
shared float Lses[C];
shared float Deltas[C];

// Stages query rows i0 .. i0 + C - 1 of head h: q, dy, lse, delta (rows past tq: empty).
void stage_queries(uint b, uint h, uint i0) {
    uint qstride = pc.heads * HD;
    [[dont_unroll]] for (uint e = gl_LocalInvocationID.x; e < C * HD; e += WG) {
        uint ii = e / HD, d = e % HD, i = i0 + ii;
        bool in_ = i < pc.tq;
        uint at = (b * pc.tq + i) * qstride + h * HD + d;
        Qs[ii * DS + d] = in_ ? LD(q[pc.off[0] + at]) : 0.0;
        Dys[ii * DS + d] = in_ ? LD(dy[pc.off[4] + at]) : 0.0;
    }
    [[dont_unroll]] for (uint ii = gl_LocalInvocationID.x; ii < C; ii += WG) {
        uint i = i0 + ii, stat = (b * pc.heads + h) * pc.tq + i;
        Lses[ii] = i < pc.tq ? stats[pc.off[5] + 2u * stat] : ATTN_LSE_EMPTY;
        Deltas[ii] = i < pc.tq ? stats[pc.off[5] + 2u * stat + 1u] : 0.0;
    }
}

void main() {
    uint t = gl_LocalInvocationID.x, r = t / TR, lane = t % TR;
    uint b = gl_WorkGroupID.z, hk = gl_WorkGroupID.y, j0 = gl_WorkGroupID.x * R, j = j0 + r;
    uint group = pc.heads / pc.kv_heads, kstride = pc.kv_heads * HD;
    int len = kiln_has(pc.off[3]) ? lengths[pc.off[3] + b] : int(pc.tk);
    if (int(j0) >= min(int(pc.tk), len)) return;  // every key of the tile is masked
    uint krow = (b * pc.tk + j) * kstride + hk * HD;
    [[dont_unroll]] for (uint e = t; e < R * HD; e += WG) {
        uint jj = e / HD, d = e % HD;
        bool in_ = j0 + jj < pc.tk;
        uint at = (b * pc.tk + j0 + jj) * kstride + hk * HD + d;
        Ks[jj * DS + d] = in_ ? LD(k[pc.off[1] + at]) : 0.0;
        Vs[jj * DS + d] = in_ ? LD(v[pc.off[2] + at]) : 0.0;
    }
    // query i sees key j when j < attn_visible(i): with the causal mask from i = j - (tk - tq)
    int first = pc.causal != 0u ? max(int(j0) - (int(pc.tk) - int(pc.tq)), 0) : 0;
    uvec2 seed = uvec2(pc.seed_lo, pc.seed_hi), stream = uvec2(pc.stream_lo, pc.stream_hi);
    float gk[DPT], gv[DPT];
    [[unroll]] for (uint c = 0u; c < DPT; c++) gk[c] = gv[c] = 0.0;
    for (uint h = hk * group; h < (hk + 1u) * group; h++) {
        for (uint i0 = uint(first); i0 < pc.tq; i0 += C) {
            barrier();  // the previous tile's readers are done
            stage_queries(b, h, i0);
            barrier();
            float s[CPT], dp[CPT];
            [[unroll]] for (uint c = 0u; c < CPT; c++) s[c] = dp[c] = 0.0;
            [[dont_unroll]] for (uint d = 0u; d < HD; d++) {
                float kd = Ks[r * DS + d], vd = Vs[r * DS + d];
                [[unroll]] for (uint c = 0u; c < CPT; c++) {
                    uint ii = min(lane + c * TR, C - 1u);
                    s[c] += kd * Qs[ii * DS + d];
                    dp[c] += vd * Dys[ii * DS + d];
                }
            }
            [[unroll]] for (uint c = 0u; c < CPT; c++) {
                uint ii = lane + c * TR, i = i0 + ii;
                if (ii >= C) continue;
                float pk = 0.0, ds = 0.0, lse_i = Lses[ii];
                if (i < pc.tq && lse_i >= ATTN_EMPTY_BELOW && j < attn_visible(i, pc.tq, pc.tk, pc.causal, len)) {
                    float p = exp(pc.scale * s[c] - lse_i);
                    float keep = attn_keep((pc.b0 + b) * pc.heads * pc.tq + h * pc.tq + i, j, pc.tk, pc.dropout, seed,
                                           stream);
                    pk = p * keep;
                    ds = p * (dp[c] * keep - Deltas[ii]);
                }
                Ps[r * PS + ii] = pk;
                Dss[r * PS + ii] = ds;
            }
            barrier();
            [[dont_unroll]] for (uint ii = 0u; ii < C; ii++) {
                float pk = Ps[r * PS + ii], ds = Dss[r * PS + ii];
                [[unroll]] for (uint c = 0u; c < DPT; c++) {
                    uint d = min(lane + c * TR, HD - 1u);
                    gv[c] += pk * Dys[ii * DS + d];
                    gk[c] += ds * Qs[ii * DS + d];
                }
            }
        }
    }
    if (j >= pc.tk) return;
    [[unroll]] for (uint c = 0u; c < DPT; c++) {
        uint d = lane + c * TR;
        if (d >= HD) continue;
        if (kiln_has(pc.off[6])) dk[pc.off[6] + krow + d] = ST(LD(dk[pc.off[6] + krow + d]) + pc.scale * gk[c]);
        if (kiln_has(pc.off[7])) dv[pc.off[7] + krow + d] = ST(LD(dv[pc.off[7] + krow + d]) + gv[c]);
    }
}
