/* GEMM: C[b] = alpha op(A[b]) op(B[b]) + beta C[b] (+ bias[n]), f32 or f16 inputs, f32
 * accumulation, f32 or f16 output.
 *
 * Three variants (engine/opencl/cl_gemm.c picks one; cl_gemm_tuning.c holds the sizes):
 *   gemm_direct   one work-item per element of C, reading A and B in place: tiny products,
 *                 where packing would cost more launches than the product itself.
 *   gemm_cpu      CPU devices (PoCL): a register-blocked micro-kernel in the BLIS style. One
 *                 work-item computes an MR x NR block of C from packed panels with explicit
 *                 VW-wide vectors (16 = one AVX-512 register), so the compiler keeps the
 *                 MR * NR / VW accumulators in registers.
 *   gemm_tiled    GPUs: a TM x TN tile per work-group, staged through local memory in KT-deep
 *                 slices; each work-item accumulates WM x WN outputs in registers.
 * The last two read operands packed by gemm_pack: op(A) as panels of PA rows, op(B) as
 * panels of PB columns, each panel stored k-major ([k][PA] / [k][PB]), zero-padded to whole
 * panels and, for gemm_tiled, to K rounded up to KT. Packing also does the transposes and
 * the f16 conversion, so the inner loops see one layout, no bounds and no conversions.
 *
 * Sizes come from the host as -D options prepended to this file:
 *   GEMM_MR, GEMM_NR, GEMM_VW      the CPU micro-kernel (NR a multiple of VW)
 *   GEMM_TM, GEMM_TN, GEMM_KT, GEMM_WM, GEMM_WN   the tiled kernel
 *   GEMM_RX, GEMM_RY               the tiled kernel's work-group (TN / WN by TM / WM)
 */

/* op(X) packed: element (o, k) of the logical matrix, o the panel axis (rows of op(A),
 * columns of op(B)). When o_major, the source stores it at o * ld + k, else at k * ld + o.
 * dst[(o / pw) * kp * pw + k * pw + o % pw]; grid (o padded, kp, batch). */
__kernel void gemm_pack(const __global void *src, ulong src_off, long src_bstride, int dtype,
                        int o_major, long ld, long outer, long depth, __global float *dst,
                        ulong dst_off, long dst_bstride, int pw, long kp) {
    long o = get_global_id(0), k = get_global_id(1), b = get_global_id(2);
    long opad = (outer + pw - 1) / pw * pw;
    if (o >= opad || k >= kp) return;
    float v = 0.0f;
    if (o < outer && k < depth)
        v = load_f(src, src_off + b * src_bstride + (o_major ? o * ld + k : k * ld + o), dtype);
    long r;
    long panel = divrem(o, pw, &r);
    dst[dst_off + b * dst_bstride + panel * kp * pw + k * pw + r] = v;
}

/* The same packing for CPU devices: one work-item per panel walks k in blocks of PACK_KB,
 * reading along the source's contiguous axis, so the strided side of the transposition
 * stays within a few cache lines. One work-item per group keeps PoCL from vectorizing
 * across work-items (gathers); per-element work-items (above) ran at a tenth of memory speed.
 * grid (panels, batch). */
#define PACK_KB 16

/* A whole PACK_KB x pw block (no bounds) of an f32 or f16 source: the common case. An f16
 * element is converted here, once, so the micro-kernel's FMAs read f32. f16 is a constant
 * at both call sites, so each inlined copy has no branch in its loops. */
void pack_full_block(const __global void *src, ulong sb, int f16, int o_major, long ld, long panel,
                     int pw, long k0, __global float *out) {
    const __global float *f = (const __global float *)src + sb;
    const __global half *h = (const __global half *)src + sb;
    if (o_major) {
        for (int r = 0; r < pw; r++) {
            long row = (panel * pw + r) * ld + k0;
            float v[PACK_KB];
            if (f16)
                vstore16(vload_half16(0, h + row), 0, v);
            else
                vstore16(vload16(0, f + row), 0, v);
#pragma unroll
            for (int kk = 0; kk < PACK_KB; kk++) out[(k0 + kk) * pw + r] = v[kk];
        }
    } else {
#pragma unroll
        for (int kk = 0; kk < PACK_KB; kk++) {
            long col = (k0 + kk) * ld + panel * pw;
            __global float *o = out + (k0 + kk) * pw;
            if (f16)
                for (int r = 0; r < pw; r++) o[r] = vload_half(col + r, h);
            else
                for (int r = 0; r < pw; r++) o[r] = f[col + r];
        }
    }
}

__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void gemm_pack_blocked(const __global void *src, ulong src_off, long src_bstride, int dtype,
                       int o_major, long ld, long outer, long depth, __global float *dst,
                       ulong dst_off, long dst_bstride, int pw, long kp) {
    long panel = get_global_id(0), b = get_global_id(1);
    ulong sb = src_off + b * src_bstride;
    __global float *out = dst + dst_off + b * dst_bstride + panel * kp * pw;
    int full_panel = (panel + 1) * pw <= outer;
    for (long k0 = 0; k0 < kp; k0 += PACK_KB) {
        if (full_panel && k0 + PACK_KB <= depth) {
            if (dtype == KILN_ABI_DTYPE_F16)
                pack_full_block(src, sb, 1, o_major, ld, panel, pw, k0, out);
            else
                pack_full_block(src, sb, 0, o_major, ld, panel, pw, k0, out);
            continue;
        }
        long kend = min(k0 + PACK_KB, kp);
        for (long k = k0; k < kend; k++)
            for (int r = 0; r < pw; r++) {
                long o = panel * pw + r;
                out[k * pw + r] = o < outer && k < depth
                                      ? load_f(src, sb + (o_major ? o * ld + k : k * ld + o), dtype)
                                      : 0.0f;
            }
    }
}

/* The epilogue shared by every variant: c = alpha * acc + beta * c (+ bias[j]); beta == 0
 * never reads c (it may hold NaN). */
void gemm_store(__global void *c, ulong idx, int c_dtype, float acc, float alpha, float beta,
                float bias) {
    float v = alpha * acc;
    if (beta != 0.0f) v += beta * load_f(c, idx, c_dtype);
    store_f(c, idx, v + bias, c_dtype);
}

/* ---- direct ---- grid (n, m, batch) */
__kernel void gemm_direct(const __global void *a, ulong a_off, long a_bstride, int a_dtype,
                          int trans_a, long lda, const __global void *b, ulong b_off,
                          long b_bstride, int b_dtype, int trans_b, long ldb, __global void *c,
                          ulong c_off, long c_bstride, int c_dtype, long ldc,
                          const __global float *bias, ulong bias_off, int has_bias, long m, long n,
                          long k, float alpha, float beta) {
    long j = get_global_id(0), i = get_global_id(1), bt = get_global_id(2);
    if (i >= m || j >= n) return;
    ulong ab = a_off + bt * a_bstride, bb = b_off + bt * b_bstride;
    float acc = 0.0f;
    for (long p = 0; p < k; p++) {
        float x = load_f(a, ab + (trans_a ? p * lda + i : i * lda + p), a_dtype);
        float y = load_f(b, bb + (trans_b ? j * ldb + p : p * ldb + j), b_dtype);
        acc = fma(x, y, acc);
    }
    gemm_store(c, c_off + bt * c_bstride + i * ldc + j, c_dtype, acc, alpha, beta,
               has_bias ? bias[bias_off + j] : 0.0f);
}

/* Panel `index` of batch entry `bt` of a packed operand (panels `width` wide, kp deep, as
 * gemm_pack writes them). */
const __global float *packed_panel(const __global float *p, ulong off, long bstride, long bt,
                                   long index, long kp, int width) {
    return p + off + bt * bstride + index * kp * width;
}

/* The parameters of both kernels that read packed panels (gemm_cpu, gemm_tiled), which the
 * host sets in one place: A's and B's panels with their batch strides and the padded depth,
 * then the output as gemm_direct takes it. */
#define GEMM_PACKED_PARAMS                                                                     \
    const __global float *ap, ulong ap_off, long ap_bstride, const __global float *bp,         \
        ulong bp_off, long bp_bstride, long kp, __global void *c, ulong c_off, long c_bstride, \
        int c_dtype, long ldc, const __global float *bias, ulong bias_off, int has_bias,       \
        long m, long n, float alpha, float beta

/* ---- CPU micro-kernel ---- */
#ifdef GEMM_MR
#define GEMM_NV (GEMM_NR / GEMM_VW)
#if GEMM_VW == 16
#define vfloat float16
#define vload_w vload16
#define vstore_w vstore16
#elif GEMM_VW == 8
#define vfloat float8
#define vload_w vload8
#define vstore_w vstore8
#elif GEMM_VW == 4
#define vfloat float4
#define vload_w vload4
#define vstore_w vstore4
#endif

/* grid (m blocks, n blocks, batch), one work-item per group: consecutive groups share the
 * B panel (NR columns x K), which stays in cache while the A panels stream past it. */
__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void gemm_cpu(GEMM_PACKED_PARAMS) {
    long ib = get_global_id(0), jb = get_global_id(1), bt = get_global_id(2);
    const __global float *pa = packed_panel(ap, ap_off, ap_bstride, bt, ib, kp, GEMM_MR);
    const __global float *pb = packed_panel(bp, bp_off, bp_bstride, bt, jb, kp, GEMM_NR);
    vfloat acc[GEMM_MR][GEMM_NV];
#pragma unroll
    for (int r = 0; r < GEMM_MR; r++)
#pragma unroll
        for (int v = 0; v < GEMM_NV; v++) acc[r][v] = (vfloat)(0.0f);
    for (long p = 0; p < kp; p++) {
        vfloat bv[GEMM_NV];
#pragma unroll
        for (int v = 0; v < GEMM_NV; v++) bv[v] = vload_w(v, pb + p * GEMM_NR);
#pragma unroll
        for (int r = 0; r < GEMM_MR; r++) {
            vfloat av = (vfloat)(pa[p * GEMM_MR + r]);
#pragma unroll
            for (int v = 0; v < GEMM_NV; v++) acc[r][v] = fma(av, bv[v], acc[r][v]);
        }
    }
    long i0 = ib * GEMM_MR, j0 = jb * GEMM_NR;
    ulong cb = c_off + bt * c_bstride;
#pragma unroll
    for (int r = 0; r < GEMM_MR; r++) {
        if (i0 + r >= m) break;
#pragma unroll
        for (int v = 0; v < GEMM_NV; v++) {
            float lane[GEMM_VW];
            vstore_w(acc[r][v], 0, lane);
            for (int e = 0; e < GEMM_VW; e++) {
                long j = j0 + v * GEMM_VW + e;
                if (j < n)
                    gemm_store(c, cb + (i0 + r) * ldc + j, c_dtype, lane[e], alpha, beta,
                               has_bias ? bias[bias_off + j] : 0.0f);
            }
        }
    }
}
#endif

/* ---- GPU tiled kernel ---- */
#ifdef GEMM_TM
/* GEMM_RX = TN / WN work-items along n, GEMM_RY = TM / WM along m: the work-group shape, from
 * the host, which launches with it (cl_gemm_configure) */
#define GEMM_THREADS (GEMM_RX * GEMM_RY)

/* grid (n tiles * RX, m tiles * RY, batch). Work-item (tx, ty) owns the outputs
 * (ty + RY * u, tx + RX * w) of the tile: strided, so neighbours read neighbouring local
 * memory words (no bank conflicts) and write neighbouring elements of C (coalesced). */
__kernel __attribute__((reqd_work_group_size(GEMM_RX, GEMM_RY, 1)))
void gemm_tiled(GEMM_PACKED_PARAMS) {
    __local float as[GEMM_KT * GEMM_TM], bs[GEMM_KT * GEMM_TN];
    int tx = get_local_id(0), ty = get_local_id(1), tid = ty * GEMM_RX + tx;
    long jt = get_group_id(0), it = get_group_id(1), bt = get_global_id(2);
    const __global float *pa = packed_panel(ap, ap_off, ap_bstride, bt, it, kp, GEMM_TM);
    const __global float *pb = packed_panel(bp, bp_off, bp_bstride, bt, jt, kp, GEMM_TN);
    float acc[GEMM_WM][GEMM_WN];
#pragma unroll
    for (int u = 0; u < GEMM_WM; u++)
#pragma unroll
        for (int w = 0; w < GEMM_WN; w++) acc[u][w] = 0.0f;
    for (long k0 = 0; k0 < kp; k0 += GEMM_KT) {
        /* the KT x TM slice of the A panel is contiguous: a coalesced copy */
        for (int e = tid; e < GEMM_KT * GEMM_TM; e += GEMM_THREADS) as[e] = pa[k0 * GEMM_TM + e];
        for (int e = tid; e < GEMM_KT * GEMM_TN; e += GEMM_THREADS) bs[e] = pb[k0 * GEMM_TN + e];
        barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
        for (int kk = 0; kk < GEMM_KT; kk++) {
            float av[GEMM_WM], bv[GEMM_WN];
#pragma unroll
            for (int u = 0; u < GEMM_WM; u++) av[u] = as[kk * GEMM_TM + ty + GEMM_RY * u];
#pragma unroll
            for (int w = 0; w < GEMM_WN; w++) bv[w] = bs[kk * GEMM_TN + tx + GEMM_RX * w];
#pragma unroll
            for (int u = 0; u < GEMM_WM; u++)
#pragma unroll
                for (int w = 0; w < GEMM_WN; w++) acc[u][w] = fma(av[u], bv[w], acc[u][w]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    ulong cb = c_off + bt * c_bstride;
#pragma unroll
    for (int u = 0; u < GEMM_WM; u++) {
        long i = it * GEMM_TM + ty + GEMM_RY * u;
        if (i >= m) continue;
#pragma unroll
        for (int w = 0; w < GEMM_WN; w++) {
            long j = jt * GEMM_TN + tx + GEMM_RX * w;
            if (j < n)
                gemm_store(c, cb + i * ldc + j, c_dtype, acc[u][w], alpha, beta,
                           has_bias ? bias[bias_off + j] : 0.0f);
        }
    }
}
#endif

/* ---- gemv: at most KILN_ABI_GEMV_ROWS rows of C (a decoded token's products) ----
 * Each element of B is used once per row of C, so the product's time is the time it takes to
 * stream B: B is read where it lies, once, 8 elements at a time (vload8, or 8 halves widened
 * in registers), the few rows of op(A) beside it. Two kernels, by B's layout (the host,
 * cl_gemm_gemv.c, sizes the work-groups per device):
 *   gemm_gemv_nt  B stored n x k (the tied output head): a row of B per row of lanes
 *                 (local y), its 8-element chunks dealt to the GV_T lanes of local x, whose
 *                 partial sums meet in local memory; each work-group walks `rows_per_item`
 *                 blocks of rows (CPU devices: one work-item per group, one row at a time,
 *                 so that PoCL's vectors run along K, not as gathers across rows).
 *   gemm_gemv_nn  B stored k x n (the layers' weights): a work-item per chunk of 8 columns
 *                 (local x) and slice of K (local y: k = s, s + slices, ...), the slices
 *                 summed in local memory.
 * Work-groups hold at most GV_LOCAL work-items. Each output's terms are summed per lane and
 * chunk, then across lanes: not the GEMM's order, so a row of C may differ from the GEMM's
 * in the last bits. */
#define GV_MR KILN_ABI_GEMV_ROWS
#define GV_LOCAL 64

/* 8 elements of an f32 or f16 operand from element i (any alignment of i) */
float8 load8_f(const __global void *p, ulong i, int dtype) {
    if (dtype != KILN_ABI_DTYPE_F16) return vload8(0, (const __global float *)p + i);
#if KILN_CPU_DEVICE
    /* f16_bits_to_f32 on 8 lanes at once (PoCL's vload_half8 is a scalar library call) */
    uint8 h = convert_uint8(vload8(0, (const __global ushort *)p + i)), a = h & 0x7fffu;
    uint8 normal = (a << 13) + (112u << 23), special = (a << 13) | 0x7f800000u;
    float8 sub = as_float8(a | (126u << 23)) - 0.5f;
    uint8 v = select(select(normal, special, a >= 0x7c00u), as_uint8(sub), a < 0x400u);
    return as_float8(v | ((h & 0x8000u) << 16));
#else
    return vload_half8(0, (const __global half *)p + i);
#endif
}

/* 8 elements from element i, the first `valid` of them (the rest 0) */
float8 load8_part(const __global void *p, ulong i, int dtype, long valid) {
    if (valid >= 8) return load8_f(p, i, dtype);
    float v[8];
    for (int e = 0; e < 8; e++) v[e] = e < valid ? load_f(p, i + e, dtype) : 0.0f;
    return vload8(0, v);
}

float sum8(float8 v) {
    float4 s = v.lo + v.hi;
    return (s.x + s.y) + (s.z + s.w);
}


/* op(A)(i, p) .. (i, p + 7), the first `valid` of them */
float8 a_chunk(const __global void *a, ulong ab, int a_dtype, int trans_a, long lda, long i, long p,
               long valid) {
    if (!trans_a) return load8_part(a, ab + i * lda + p, a_dtype, valid);
    float v[8];
    for (int e = 0; e < 8; e++) v[e] = e < valid ? load_f(a, ab + (p + e) * lda + i, a_dtype) : 0.0f;
    return vload8(0, v);
}

/* grid (GV_T lanes, rows / rows_per_item, batch); local (GV_T, R, 1) */
__kernel void gemm_gemv_nt(const __global void *a, ulong a_off, long a_bstride, int a_dtype, int trans_a,
                           long lda, const __global void *b, ulong b_off, long b_bstride, int b_dtype,
                           long ldb, __global void *c, ulong c_off, long c_bstride, int c_dtype, long ldc,
                           const __global float *bias, ulong bias_off, int has_bias, long m, long n,
                           long k, float alpha, float beta, int rows_per_item) {
    __local float part[GV_MR * GV_LOCAL];
    long lane = get_local_id(0), lanes = get_local_size(0), R = get_local_size(1), bt = get_global_id(2);
    long slot = get_local_id(1) * lanes + lane;
    ulong ab = a_off + bt * a_bstride, bb = b_off + bt * b_bstride;
    for (int t = 0; t < rows_per_item; t++) {
        long r = ((long)get_group_id(1) * rows_per_item + t) * R + get_local_id(1);
        float8 acc[GV_MR];
        for (int i = 0; i < GV_MR; i++) acc[i] = 0.0f;
        if (r < n)
            for (long p = lane * 8; p < k; p += lanes * 8) {
                long valid = k - p;
                float8 w = load8_part(b, bb + r * ldb + p, b_dtype, valid);
                for (int i = 0; i < GV_MR; i++)
                    if (i < m) acc[i] = fma(a_chunk(a, ab, a_dtype, trans_a, lda, i, p, valid), w, acc[i]);
            }
        float s[GV_MR];
        for (int i = 0; i < GV_MR; i++) s[i] = sum8(acc[i]);
        if (lanes > 1) { /* the lanes' partials of row r, added pairwise */
            barrier(CLK_LOCAL_MEM_FENCE);
            for (int i = 0; i < GV_MR; i++) part[i * GV_LOCAL + slot] = s[i];
            for (long h = lanes / 2; h > 0; h /= 2) {
                barrier(CLK_LOCAL_MEM_FENCE);
                if (lane < h)
                    for (int i = 0; i < GV_MR; i++) part[i * GV_LOCAL + slot] += part[i * GV_LOCAL + slot + h];
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            for (int i = 0; i < GV_MR; i++) s[i] = part[i * GV_LOCAL + slot];
        }
        if (lane == 0 && r < n)
            for (int i = 0; i < m; i++)
                gemm_store(c, c_off + bt * c_bstride + i * ldc + r, c_dtype, s[i], alpha, beta,
                           has_bias ? bias[bias_off + r] : 0.0f);
    }
}

/* Chunks of 8 columns per work-item of gemm_gemv_nn: on CPU devices 4, a 64-byte cache line
 * of an f16 row of B per step (with one chunk each, neighbouring work-items on other threads
 * shared each line: 1.2 GB/s of weights on PoCL against 12.6 for gemm_gemv_nt); 1 on GPUs,
 * where neighbouring work-items read neighbouring chunks. */
#if KILN_CPU_DEVICE
#define GV_NN_CHUNKS 4
#else
#define GV_NN_CHUNKS 1
#endif

/* grid (groups of GV_NN_CHUNKS chunks of 8 columns, slices, batch); local (groups per
 * work-group, slices, 1) */
__kernel void gemm_gemv_nn(const __global void *a, ulong a_off, long a_bstride, int a_dtype, int trans_a,
                           long lda, const __global void *b, ulong b_off, long b_bstride, int b_dtype,
                           long ldb, __global void *c, ulong c_off, long c_bstride, int c_dtype, long ldc,
                           const __global float *bias, ulong bias_off, int has_bias, long m, long n,
                           long k, float alpha, float beta) {
    __local float part[GV_MR * 8 * GV_LOCAL];
    long x = get_local_id(0), s = get_local_id(1), X = get_local_size(0), S = get_local_size(1);
    long bt = get_global_id(2), col0 = get_global_id(0) * 8 * GV_NN_CHUNKS, slot = s * X + x;
    ulong ab = a_off + bt * a_bstride, bb = b_off + bt * b_bstride;
    float8 acc[GV_MR][GV_NN_CHUNKS];
    for (int i = 0; i < GV_MR; i++)
        for (int h = 0; h < GV_NN_CHUNKS; h++) acc[i][h] = 0.0f;
    if (col0 < n)
        for (long p = s; p < k; p += S) {
            float8 w[GV_NN_CHUNKS];
            for (int h = 0; h < GV_NN_CHUNKS; h++)
                w[h] = load8_part(b, bb + p * ldb + col0 + 8 * h, b_dtype, n - col0 - 8 * h);
            for (int i = 0; i < GV_MR; i++)
                if (i < m) {
                    float8 xv = (float8)load_f(a, ab + (trans_a ? p * lda + i : i * lda + p), a_dtype);
                    for (int h = 0; h < GV_NN_CHUNKS; h++) acc[i][h] = fma(xv, w[h], acc[i][h]);
                }
        }
    if (S > 1) { /* GPUs: one chunk per work-item */
        for (int i = 0; i < GV_MR; i++) vstore8(acc[i][0], i * GV_LOCAL + slot, part);
        barrier(CLK_LOCAL_MEM_FENCE);
        if (s != 0) return;
        for (int i = 0; i < GV_MR; i++)
            for (long q = 1; q < S; q++) acc[i][0] += vload8(i * GV_LOCAL + q * X + x, part);
    }
    for (int h = 0; h < GV_NN_CHUNKS; h++) {
        long col = col0 + 8 * h;
        for (int i = 0; i < m; i++) {
            float v[8];
            vstore8(acc[i][h], 0, v);
            for (int e = 0; e < 8 && col + e < n; e++)
                gemm_store(c, c_off + bt * c_bstride + i * ldc + col + e, c_dtype, v[e], alpha, beta,
                           has_bias ? bias[bias_off + col + e] : 0.0f);
        }
    }
}
