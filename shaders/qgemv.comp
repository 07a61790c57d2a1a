// qgemv: qmatmul for one to KILN_ABI_GEMV_ROWS rows of x (a decoded token's products),
// y[m, n] = sum_k x[m, k] w[n, k] (+ bias[n]), w in Q8_0 or Q4_0 (kiln/quant.h), for rows of
// whole groups of 8 blocks (k a multiple of 256) that start on a 16-byte texel. Each weight
// is read once for all the rows of x, as 16-byte texels (usamplerBuffer: a texel fetch is as
// cheap as a 4-byte buffer load on CPU devices and one wide load on GPUs); x is read as
// texels of 4 values (f32 or f16 views).
//
// The unit of work is a group of 8 blocks (256 values): 9 texels in Q4_0 (8 x 18 bytes), 17
// in Q8_0 (8 x 34), so every block's bytes lie at the same offsets within its group and the
// decoding below has no variable shifts. Lanes take a row's groups in turn (T lanes per row)
// and meet in subgroupAdd (the KILN_NO_SUBGROUP build: a shared-memory tree); an invocation
// takes NR rows of w at once, each block of x fetched once for all of them. vk_quant_gemv.c
// picks T, NR and the workgroup per device (CPU devices: T = 1, NR = 4).
//
// Sums: per block d * sum_j q_j x_j in f32, as qmatmul.comp's; the order across blocks is per
// lane then across lanes.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "reduce.glsl"

#ifdef KILN_QGEMV_ROUNDED
// x rounded to int8 blocks by qmatmul_qx.comp (KILN_ABI_VK_QX_WORDS words per block: 8 of
// packed int8, then the scale), as 16-byte texels: a group of 8 blocks is 20 texels
layout(binding = 0) uniform usamplerBuffer x; // off[0] in texels
#else
layout(binding = 0) uniform samplerBuffer x;  // off[0] in texels
#endif
layout(binding = 1) uniform usamplerBuffer w; // off[1] in texels
layout(std430, binding = 2) readonly buffer B { data_t bias[]; };
layout(std430, binding = 3) writeonly buffer Y { data_t y[]; };
layout(push_constant) uniform Push { QGEMV_PUSH } pc;

// lanes per row (the subgroup build takes a subgroup per row; T sizes the workgroup's rows)
layout(constant_id = 1) const uint T = 1;
layout(constant_id = 2) const uint FORMAT = 0; // KILN_ABI_Q8_0 or KILN_ABI_Q4_0
layout(constant_id = 3) const uint M = 1;      // rows of x
layout(constant_id = 4) const uint NR = 1;     // rows of w per invocation

const bool Q8 = FORMAT == KILN_ABI_Q8_0;
const uint BB = Q8 ? 34u : 18u; // bytes per block
const uint GT = Q8 ? 17u : 9u;  // texels per group of 8 blocks

// the 4 bytes at byte p (even) of the 12 words q (3 texels)
uint word_at(uint q[12], uint p) {
    uint i = p >> 2u;
    return (p & 2u) == 0u ? q[i] : (q[i] >> 16u) | (q[min(i + 1u, 11u)] << 16u);
}

// Block j of group g of row r against the block's x (8 vec4 per row of x; in the rounded
// builds the int8 values, and the block's scale in xd): adds d * sum q x (d * xd * sum q x)
void block_dot(uint r, uint g, uint j, vec4 xb[M][8], float xd[M], inout float acc[M]) {
    uint p = j * BB, t0 = p / 16u, rel = p - 16u * t0; // within the group: constants once unrolled
    uint base = pc.off[1] + r * (pc.row_words / 4u) + g * GT + t0;
    uint q[12];
    for (uint u = 0u; u < 3u; u++) {
        uvec4 v = u * 16u < rel + BB ? texelFetch(w, int(base + u)) : uvec4(0u);
        for (uint c = 0u; c < 4u; c++) q[4u * u + c] = v[c];
    }
    float d = unpackHalf2x16(word_at(q, rel)).x;
    float s[M];
    for (uint t = 0u; t < M; t++) s[t] = 0.0;
    for (uint i = 0u; i < (Q8 ? 8u : 4u); i++) {
        uint v = word_at(q, rel + 2u + 4u * i);
        vec4 lo, hi;
        if (Q8) { // values 4i .. 4i + 3, signed bytes
            lo = vec4(ivec4(int(v << 24u) >> 24, int(v << 16u) >> 24, int(v << 8u) >> 24, int(v) >> 24));
            for (uint t = 0u; t < M; t++) s[t] += dot(lo, xb[t][i]);
        } else { // values 4i .. 4i + 3 in the low nibbles, 4i + 16 .. in the high ones, less 8
            lo = vec4(uvec4(v, v >> 8u, v >> 16u, v >> 24u) & 15u) - 8.0;
            hi = vec4(uvec4(v >> 4u, v >> 12u, v >> 20u, v >> 28u) & 15u) - 8.0;
            for (uint t = 0u; t < M; t++) s[t] += dot(lo, xb[t][i]) + dot(hi, xb[t][i + 4u]);
        }
    }
#ifdef KILN_QGEMV_ROUNDED
    // the integer sums are exact in f32 (|sum| <= 32 * 128 * 127): qmatmul_dot.comp's numbers
    for (uint t = 0u; t < M; t++) acc[t] += d * xd[t] * s[t];
#else
    for (uint t = 0u; t < M; t++) acc[t] += d * s[t];
#endif
}

#ifdef KILN_QGEMV_ROUNDED
// Block j of group g of x's row t: its 32 int8 values as 8 vec4, and its scale
void x_block(uint t, uint g, uint j, out vec4 xb[8], out float xd) {
    uint wd = j * KILN_ABI_VK_QX_WORDS, t0 = wd / 4u, rel = wd - 4u * t0; // constants once unrolled
    uint base = pc.off[0] + (t * (pc.k / 256u) + g) * (8u * KILN_ABI_VK_QX_WORDS / 4u) + t0;
    uint q[12];
    for (uint u = 0u; u < 3u; u++) {
        uvec4 v = texelFetch(x, int(base + u));
        for (uint c = 0u; c < 4u; c++) q[4u * u + c] = v[c];
    }
    for (uint i = 0u; i < 8u; i++) {
        uint v = q[rel + i];
        xb[i] = vec4(ivec4(int(v << 24u) >> 24, int(v << 16u) >> 24, int(v << 8u) >> 24, int(v) >> 24));
    }
    xd = uintBitsToFloat(q[rel + 8u]);
}
#endif

// the sums of rows r0 .. r0 + NR - 1 (those < n) over groups lane, lane + step, ...
void rows_sums(uint r0, uint lane, uint step, out float acc[NR][M]) {
    for (uint rr = 0u; rr < NR; rr++)
        for (uint t = 0u; t < M; t++) acc[rr][t] = 0.0;
    uint groups = pc.k / 256u;
    for (uint g = lane; g < groups; g += step)
        for (uint j = 0u; j < 8u; j++) {
            vec4 xb[M][8];
            float xd[M];
            for (uint t = 0u; t < M; t++) {
#ifdef KILN_QGEMV_ROUNDED
                x_block(t, g, j, xb[t], xd[t]);
#else
                xd[t] = 1.0;
                for (uint u = 0u; u < 8u; u++) xb[t][u] = texelFetch(x, int(pc.off[0] + (t * pc.k + g * 256u + j * 32u) / 4u + u));
#endif
            }
            for (uint rr = 0u; rr < NR; rr++) {
                float a[M];
                for (uint t = 0u; t < M; t++) a[t] = acc[rr][t];
                block_dot(min(r0 + rr, pc.n - 1u), g, j, xb, xd, a);
                for (uint t = 0u; t < M; t++) acc[rr][t] = a[t];
            }
        }
}

void store(uint r, uint t, float v) {
    if (kiln_has(pc.off[2])) v += LD(bias[pc.off[2] + r]);
    y[pc.off[3] + t * pc.n + r] = ST(v);
}

void main() {
    uint R = WG / T * NR; // rows of w per workgroup
    uint g = kiln_group_id();
    if (g >= (pc.n + R - 1u) / R) return;
    if (T == 1u) { // an invocation per NR rows, its sums its own (CPU devices)
        uint r0 = g * R + gl_LocalInvocationID.x * NR;
        if (r0 >= pc.n) return;
        float acc[NR][M];
        rows_sums(r0, 0u, 1u, acc);
        for (uint rr = 0u; rr < NR; rr++)
            for (uint t = 0u; t < M; t++)
                if (r0 + rr < pc.n) store(r0 + rr, t, acc[rr][t]);
        return;
    }
#ifdef KILN_NO_SUBGROUP
    uint l = gl_LocalInvocationID.x, lane = l % T, r0 = g * R + (l / T) * NR;
    float acc[NR][M];
    rows_sums(r0, lane, T, acc);
    for (uint rr = 0u; rr < NR; rr++)
        for (uint t = 0u; t < M; t++) {
            barrier(); // the T lanes' partials, added pairwise (kiln_red holds WG floats)
            kiln_red[l] = acc[rr][t];
            barrier();
            for (uint s = T / 2u; s > 0u; s >>= 1u) {
                if (lane < s) kiln_red[l] += kiln_red[l + s];
                barrier();
            }
            if (lane == 0u && r0 + rr < pc.n) store(r0 + rr, t, kiln_red[l]);
        }
#else
    // a subgroup per NR rows, whatever width the device runs
    for (uint b = gl_SubgroupID; b < R / NR; b += gl_NumSubgroups) {
        uint r0 = g * R + b * NR;
        if (r0 >= pc.n) break;
        float acc[NR][M];
        rows_sums(r0, gl_SubgroupInvocationID, gl_SubgroupSize, acc);
        for (uint rr = 0u; rr < NR; rr++)
            for (uint t = 0u; t < M; t++) {
                float s = subgroupAdd(acc[rr][t]);
                if (subgroupElect() && r0 + rr < pc.n) store(r0 + rr, t, s);
            }
    }
#endif
}
