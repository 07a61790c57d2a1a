// gemv: the GEMM for one to KILN_ABI_GEMV_ROWS rows of C (kiln_gemm_args with m <= 4: a
// decoded token's products), C[b] = alpha op(A[b]) op(B[b]) + beta C[b] (+ bias[n]), f32 or
// f16 (packed words) A and B, f32 sums and C. Such a product uses each element of B once per
// row of C, so its time is the time it takes to stream B: B is read where it lies, once, in
// 16-byte loads (4 f32 or 8 f16, a "chunk") that neighbouring invocations take from
// neighbouring addresses; the few rows of op(A) are read beside it (they stay in cache).
//
// Two layouts (specialization constant TRANS_B):
//  - B stored n x k (op(B) = B^T: the tied output embedding [vocab, dim]): each output is a
//    dot product along a contiguous row. The lanes of a subgroup take the chunks of one row
//    in turn and meet in subgroupAdd (the KILN_NO_SUBGROUP build: T lanes per row, summed in
//    a shared-memory tree); a workgroup owns WG / T rows.
//  - B stored k x n (op(B) = B: the layers' weights, [in, out]): each invocation owns one
//    chunk of C's columns and sums a slice of K (k = s, s + KS, ...: the KS slices of a
//    workgroup read KS consecutive rows of B, T chunks wide, at each step); the slices meet
//    in shared memory. A workgroup owns T chunks of columns; KS = WG / T.
//
// The KILN_GEMV_VEC builds (gemv_vec, gemv_vec_shared) bind B as 16-byte words, for B whose
// start, leading dimension, batch stride and contiguous extent (k for n x k, n for k x n) are
// whole chunks; the plain builds read the same chunks word by word, the last one of a ragged
// row cut short, for any shape. The KILN_GEMV_TEXEL builds (CPU devices: vk_gemm_gemv.c says
// why) read both A and B as texels of 4 values. Each output's K terms are summed in f32; the order is per
// lane then across lanes, not the tiled GEMM's, so a row of C may differ from the GEMM's in
// the last bits (within the op tests' tolerances).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "reduce.glsl"

// TRANS_B: lanes per row (the KILN_NO_SUBGROUP build; the subgroup build takes a subgroup
// per row and uses T only to size the workgroup's rows); else chunks of columns per workgroup
layout(constant_id = 1) const uint T = 8;
layout(constant_id = 2) const bool TRANS_A = false;
layout(constant_id = 3) const bool TRANS_B = false;
layout(constant_id = 4) const bool A_F16 = false;
layout(constant_id = 5) const bool B_F16 = false;
layout(constant_id = 6) const bool HAS_BETA = false;
// rows of C (1 .. KILN_ABI_GEMV_ROWS): a constant, so that every loop below has a constant
// trip count and unrolls (a CPU driver keeps arrays indexed by a loop variable in memory)
layout(constant_id = 7) const uint M = 1;

#ifdef KILN_GEMV_TEXEL
// texels of 4 values (RGBA32F, or RGBA16F widened by the fetch); off[0] and off[1] in texels
layout(binding = 0) uniform samplerBuffer a;
layout(binding = 1) uniform samplerBuffer b;
#else
layout(std430, binding = 0) readonly buffer A { uint a[]; };
#endif
#if defined(KILN_GEMV_TEXEL)
#elif defined(KILN_GEMV_VEC)
layout(std430, binding = 1) readonly buffer B { uvec4 b[]; };
#else
layout(std430, binding = 1) readonly buffer B { uint b[]; };
#endif
layout(std430, binding = 2) buffer C { float c[]; };
layout(std430, binding = 3) readonly buffer Bias { float bias[]; };
layout(push_constant) uniform Push { GEMV_PUSH } pc;

#ifdef KILN_GEMV_TEXEL
const uint VW = 4u; // elements of B per chunk (a texel)
#else
const uint VW = B_F16 ? 8u : 4u; // elements of B per chunk (16 bytes)
#endif
const uint KS = TRANS_B ? 1u : WG / T;

// NN's per-slice sums: slice s's for (row i, element e of chunk j) at ((s * T + j) * M + i) * VW + e
shared float part[TRANS_B ? 1u : WG * M * VW];

void store(uint z, uint i, uint col, float sum) {
    uint ci = pc.off[2] + z * pc.stride_c + i * pc.ldc + col;
    float v = pc.alpha * sum;
    if (HAS_BETA) v += pc.beta * c[ci];
    if (kiln_has(pc.off[3])) v += bias[pc.off[3] + col];
    c[ci] = v;
}

#ifdef KILN_GEMV_TEXEL
// op(A) = A (never transposed here), its row i of batch z at p .. p + 3 (p a multiple of 4)
vec4 a_quad(uint z, uint i, uint p) { return texelFetch(a, int(pc.off[0] + (z * pc.stride_a + i * pc.lda + p) / 4u)); }

// B's texel at element e of the operand (a multiple of 4)
vec4 b_quad(uint e) { return texelFetch(b, int(pc.off[1] + e / 4u)); }

// B stored n x k: the sums of row r of B against op(A)'s rows, texels lane, lane + step, ...
void row_sums(uint z, uint r, uint lane, uint step, out float acc[M]) {
    for (uint i = 0u; i < M; i++) acc[i] = 0.0;
    uint quads = pc.k / 4u, row = z * pc.stride_b + r * pc.ldb;
    for (uint q = lane; q < quads; q += step) {
        vec4 v = b_quad(row + 4u * q);
        for (uint i = 0u; i < M; i++) acc[i] += dot(a_quad(z, i, 4u * q), v);
    }
}

// B stored k x n: the sums of columns col .. col + 3 over K slice s (texels of K s, s + KS, ...)
void column_sums(uint z, uint col, uint s, out float acc[M][VW]) {
    for (uint i = 0u; i < M; i++) acc[i] = float[VW](0.0, 0.0, 0.0, 0.0);
    for (uint q = s; q < pc.k / 4u; q += KS) {
        vec4 x[M];
        for (uint i = 0u; i < M; i++) x[i] = a_quad(z, i, 4u * q);
        for (uint j = 0u; j < 4u; j++) {
            vec4 v = b_quad(z * pc.stride_b + (4u * q + j) * pc.ldb + col);
            for (uint i = 0u; i < M; i++)
                for (uint e = 0u; e < 4u; e++) acc[i][e] = fma(x[i][j], v[e], acc[i][e]);
        }
    }
}
#else
// op(A)(i, p) of batch z
float a_at(uint z, uint i, uint p) {
    uint idx = pc.off[0] + z * pc.stride_a + (TRANS_A ? p * pc.lda + i : i * pc.lda + p);
    return A_F16 ? unpackHalf2x16(a[idx >> 1u])[idx & 1u] : uintBitsToFloat(a[idx]);
}

// The chunk of B at element e of the operand (a multiple of VW in the vec builds), its first
// `valid` elements (the rest 0).
void load_chunk(uint e, uint valid, out float v[8]) {
#ifdef KILN_GEMV_VEC
    uvec4 q = b[pc.off[1] + e / VW]; // off[1] in chunks here
    if (B_F16) {
        for (uint j = 0u; j < 4u; j++) {
            vec2 h = unpackHalf2x16(q[j]);
            v[2u * j] = h.x;
            v[2u * j + 1u] = h.y;
        }
    } else {
        for (uint j = 0u; j < 4u; j++) v[j] = uintBitsToFloat(q[j]);
        for (uint j = 4u; j < 8u; j++) v[j] = 0.0;
    }
#else
    for (uint j = 0u; j < 8u; j++) {
        uint idx = pc.off[1] + e + j;
        v[j] = j >= valid ? 0.0 : B_F16 ? unpackHalf2x16(b[idx >> 1u])[idx & 1u] : uintBitsToFloat(b[idx]);
    }
#endif
}


// B stored n x k: the sums of row r of B against op(A)'s rows, chunks lane, lane + step, ...
void row_sums(uint z, uint r, uint lane, uint step, out float acc[M]) {
    for (uint i = 0u; i < M; i++) acc[i] = 0.0;
    uint chunks = (pc.k + VW - 1u) / VW, row = z * pc.stride_b + r * pc.ldb;
    for (uint ch = lane; ch < chunks; ch += step) {
        float v[8];
        uint p0 = ch * VW;
        load_chunk(row + p0, min(VW, pc.k - p0), v);
        for (uint j = 0u; j < VW; j++) {
            bool in_k = p0 + j < pc.k; // v[j] is 0 past k; op(A) is not read there
            for (uint i = 0u; i < M; i++) acc[i] = fma(in_k ? a_at(z, i, p0 + j) : 0.0, v[j], acc[i]);
        }
    }
}

// B stored k x n: the sums of columns col .. col + valid - 1 over K slice s (K s, s + KS, ...)
void column_sums(uint z, uint col, uint valid, uint s, out float acc[M][VW]) {
    for (uint i = 0u; i < M; i++)
        for (uint e = 0u; e < VW; e++) acc[i][e] = 0.0;
    for (uint p = valid > 0u ? s : pc.k; p < pc.k; p += KS) {
        float v[8];
        load_chunk(z * pc.stride_b + p * pc.ldb + col, valid, v);
        for (uint i = 0u; i < M; i++) {
            float x = a_at(z, i, p);
            for (uint e = 0u; e < VW; e++) acc[i][e] = fma(x, v[e], acc[i][e]);
        }
    }
}
#endif

void main_nt(uint g, uint z) {
    uint R = WG / T; // rows per workgroup
#ifdef KILN_NO_SUBGROUP
    uint l = gl_LocalInvocationID.x, lane = l % T, r = g * R + l / T;
    float acc[M];
    row_sums(z, r < pc.n ? r : 0u, lane, T, acc);
    if (r >= pc.n) // rows past n take part in the barriers only
        for (uint i = 0u; i < M; i++) acc[i] = 0.0;
    for (uint i = 0u; i < M; i++) {
        // the T lanes' partials of row r, added pairwise (kiln_red holds WG floats)
        barrier();
        kiln_red[l] = acc[i];
        barrier();
        for (uint s = T / 2u; s > 0u; s >>= 1u) {
            if (lane < s) kiln_red[l] += kiln_red[l + s];
            barrier();
        }
        if (lane == 0u && r < pc.n) store(z, i, r, kiln_red[l]);
    }
#else
    // a subgroup per row, whatever width the device runs: no barrier, no shared memory
    for (uint rr = gl_SubgroupID; rr < R; rr += gl_NumSubgroups) {
        uint r = g * R + rr;
        if (r >= pc.n) break;
        float acc[M];
        row_sums(z, r, gl_SubgroupInvocationID, gl_SubgroupSize, acc);
        for (uint i = 0u; i < M; i++) {
            float s = subgroupAdd(acc[i]);
            if (subgroupElect()) store(z, i, r, s);
        }
    }
#endif
}

void main_nn(uint g, uint z) {
    uint l = gl_LocalInvocationID.x, j = l % T, s = l / T;
    uint col = (g * T + j) * VW, valid = col < pc.n ? min(VW, pc.n - col) : 0u;
    float acc[M][VW];
#ifdef KILN_GEMV_TEXEL
    column_sums(z, valid > 0u ? col : 0u, s, acc);
#else
    column_sums(z, col, valid, s, acc);
#endif
    if (KS == 1u) {
        for (uint i = 0u; i < M; i++)
            for (uint e = 0u; e < VW; e++)
                if (e < valid) store(z, i, col + e, acc[i][e]);
        return;
    }
    for (uint i = 0u; i < M; i++)
        for (uint e = 0u; e < VW; e++) part[((s * T + j) * M + i) * VW + e] = acc[i][e];
    barrier();
    if (s != 0u || valid == 0u) return;
    for (uint i = 0u; i < M; i++)
        for (uint e = 0u; e < VW; e++) {
            if (e >= valid) break;
            float sum = 0.0;
            for (uint q = 0u; q < KS; q++) sum += part[((q * T + j) * M + i) * VW + e];
            store(z, i, col + e, sum);
        }
}

void main() {
    uint g = kiln_group_id(), z = gl_WorkGroupID.z;
    uint groups = TRANS_B ? (pc.n + WG / T - 1u) / (WG / T) : (pc.n + T * VW - 1u) / (T * VW);
    if (g >= groups) return;
    if (TRANS_B)
        main_nt(g, z);
    else
        main_nn(g, z);
}
