/* Shared by every kernel family: the host prepends this file to each cl/<family>.cl.
 *
 * In front of it, the host puts engine/abi/kernel_abi.h: the values kernels and host code
 * must agree on (kinds, flags, dtype codes, tile sizes), KILN_ABI_*.
 *
 * Compile-time options set by the host (engine/opencl/cl_device.c):
 *   KILN_WG          the work-group size of row kernels and reductions (a power of 2)
 *   KILN_SUBGROUPS   1 when sub-group functions exist (cl_khr_subgroups / OpenCL 2.1+)
 *   KILN_FP64        1 when doubles exist (used where the CPU reference computes in double)
 *   KILN_CPU_DEVICE  1 on CPU devices (PoCL): kernels may pick CPU-friendly loop shapes
 *   KILN_F16         1 in the f16 variant of a family, 0 (or undefined) in the f32 one: the
 *                    storage type of the operands backend.h marks with `dtype` (below)
 *
 * Argument convention: every tensor operand is a pointer and an element offset (ulong),
 * `p + p_off` being its first element; the host never creates sub-buffers. An optional
 * operand that is absent comes with has_<name> = 0 and a placeholder buffer.
 *
 * f16 tensors are read and written with half_load / half_store (below): f16 storage, f32
 * arithmetic, on every device, whether or not it has cl_khr_fp16 (PoCL does not). No kernel
 * uses cl_khr_fp16's half arithmetic: the contract (backend.h, "Precision") is to compute
 * and accumulate in f32 and round once on store, which half arithmetic would not reproduce,
 * and a conversion on load and store is all the f16 variants need. */

#if KILN_SUBGROUPS && !defined(__opencl_c_subgroups)
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
#endif
#if KILN_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

/* x / d, with the remainder in *rem. Written as x - q * d rather than x % d: with both a
 * division and a remainder of the same operands, LLVM emits a `freeze` instruction that
 * oclgrind's uninitialized-value checker (21.10) cannot interpret. */
long divrem(long x, long d, long *rem) {
    long q = x / d;
    *rem = x - q * d;
    return q;
}

/* The elements [*start, end) with stride *step that this work-item visits when a grid of
 * work-items covers n elements. GPUs: grid-stride (neighbours read neighbouring words, which
 * coalesces). CPU devices: one contiguous chunk per work-item (a core streams its own
 * range; a grid stride would touch one float per cache line). */
long my_range(long n, long *start, long *step) {
    long id = get_global_id(0), total = get_global_size(0);
#if KILN_CPU_DEVICE
    long per = (n + total - 1) / total;
    *start = id * per;
    *step = 1;
    return min(*start + per, n);
#else
    *start = id;
    *step = total;
    return n;
#endif
}

/* ---- the counter-based generator ----
 * The Philox4x32-10 generator of engine/core/rng.c, bit for bit: kiln_rng_u32 is the first
 * output word of Philox(counter = (index, stream), key = seed), and kiln_rng_uniform =
 * (kiln_rng_u32 >> 8) * 2^-24. Dropout (cl/dropout.cl) and the fused attention's dropout
 * (cl/attention.cl) draw from it, so both keep the same elements. */
#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

uint philox_first(ulong index, ulong stream, ulong seed) {
    uint c0 = (uint)index, c1 = (uint)(index >> 32), c2 = (uint)stream, c3 = (uint)(stream >> 32);
    uint k0 = (uint)seed, k1 = (uint)(seed >> 32);
    for (int round = 0; round < 10; round++) {
        /* the 64-bit products of rng.c, as 64-bit products: PoCL builds mul_hi out of 16-bit
         * pieces, which made dropout 4x slower */
        ulong p0 = (ulong)PHILOX_M0 * c0, p1 = (ulong)PHILOX_M1 * c2;
        uint hi0 = (uint)(p0 >> 32), lo0 = (uint)p0;
        uint hi1 = (uint)(p1 >> 32), lo1 = (uint)p1;
        uint n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
        c0 = n0;
        c1 = lo1;
        c2 = n2;
        c3 = lo0;
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    return c0;
}

float rng_uniform(ulong index, ulong stream, ulong seed) {
    return (float)(philox_first(index, stream, seed) >> 8) * (1.0f / 16777216.0f);
}

/* ---- f16 <-> f32 ----
 * GPUs: vload_half / vstore_half_rte (core OpenCL, with or without cl_khr_fp16), one
 * conversion instruction each. CPU devices: the integer conversions below. PoCL implements
 * the built-ins as scalar library calls that its work-group vectorizer cannot widen: a
 * 4M-element f16 y = 1.5 x + 0.25 ran in 12 ms with them, 2.4 ms with these, 2.8 ms in f32
 * (2-core Xeon, PoCL 3.1, under load). They are bit for bit kiln_f32_to_f16 and
 * kiln_f16_to_f32 (round to nearest even, subnormals, overflow to inf, NaN payloads), have
 * no branches (select), and never depend on f32 denormals, so a device that flushes them
 * still converts exactly. */
float f16_bits_to_f32(ushort h) {
    uint a = h & 0x7fffu;
    /* normal: rebias the exponent by 127 - 15; inf and NaN: f32's all-ones exponent */
    uint normal = (a << 13) + (112u << 23), special = (a << 13) | 0x7f800000u;
    /* subnormal: the mantissa m as the low bits of 0.5 is 0.5 + m * 2^-24, exactly */
    float sub = as_float(a | (126u << 23)) - 0.5f;
    float v = a < 0x400u ? sub : as_float(a >= 0x7c00u ? special : normal);
    return as_float(as_uint(v) | ((uint)(h & 0x8000u) << 16));
}

ushort f32_to_f16_bits(float f) {
    uint u = as_uint(f), a = u & 0x7fffffffu;
    /* normal: rebias (-112 << 23), add just under half an f16 ulp plus the kept lsb (ties
     * to even), truncate; a carry into the exponent is the right rounding */
    uint normal = (a + 0xc8000fffu + ((a >> 13) & 1u)) >> 13;
    /* |f| < 2^-14: 0.5 + |f| rounds (nearest even) to a multiple of 2^-24, the f16
     * subnormal's mantissa; 2^-14 itself comes out as 0x400, the smallest normal */
    uint sub = as_uint(as_float(a) + 0.5f) - 0x3f000000u;
    uint nan = 0x7e00u | ((a >> 13) & 0x3ffu); /* quiet, payload kept */
    uint r = a < 0x38800000u ? sub : normal;
    r = a >= 0x477ff000u ? 0x7c00u : r; /* rounds past 65504: inf */
    r = a > 0x7f800000u ? nan : r;
    return (ushort)(((u >> 16) & 0x8000u) | r);
}

float half_load(const __global half *p, ulong i) {
#if KILN_CPU_DEVICE
    return f16_bits_to_f32(((const __global ushort *)p)[i]);
#else
    return vload_half(i, p);
#endif
}

void half_store(__global half *p, ulong i, float v) {
#if KILN_CPU_DEVICE
    ((__global ushort *)p)[i] = f32_to_f16_bits(v);
#else
    vstore_half_rte(v, i, p);
#endif
}

/* ---- the storage type of a family's variant ----
 * Each family that takes a `dtype` is compiled twice from the same text, with KILN_F16 0
 * and 1. Its operands of that dtype are `__global real_t *`, read with LOAD (to f32) and
 * written with STORE (from f32, rounding to nearest even in the f16 variant); everything in
 * between is f32. Operands that stay f32 whatever the dtype (statistics, scalars, the loss)
 * are plain `float *`. RAW_T is an unsigned type of the same size, for moves that must keep
 * every bit (copies of i32 data through the f32 variant, f16 NaN payloads). */
#if KILN_F16
#define real_t half
#define RAW_T ushort
#define LOAD(p, i) half_load((p), (i))
#define STORE(p, i, v) half_store((p), (i), (v))
#else
#define real_t float
#define RAW_T uint
#define LOAD(p, i) ((p)[i])
#define STORE(p, i, v) ((p)[i] = (v))
#endif

/* Element i of an f32 or f16 tensor whose dtype (KILN_ABI_DTYPE_*) is known only at run
 * time, as f32. */
float load_f(const __global void *p, ulong i, int dtype) {
    return dtype == KILN_ABI_DTYPE_F16 ? half_load((const __global half *)p, i)
                                       : ((const __global float *)p)[i];
}

/* Stores v as f32 or f16 (round to nearest even, as kiln_f32_to_f16). */
void store_f(__global void *p, ulong i, float v, int dtype) {
    if (dtype == KILN_ABI_DTYPE_F16)
        half_store((__global half *)p, i, v);
    else
        ((__global float *)p)[i] = v;
}

/* ---- column sums ----
 * A work-group of a column-sum kernel (sum_rows, norm_bwd_params) covers TILE_COLS adjacent
 * columns (coalesced reads along a row) with TILE_LANES row lanes, whose sums it adds in
 * local memory. The host launches one work-group per tile of KILN_ABI_CL_COLUMN_TILE columns
 * or fewer (cl_run_column_tiles). */
#define TILE_COLS (KILN_WG < KILN_ABI_CL_COLUMN_TILE ? KILN_WG : KILN_ABI_CL_COLUMN_TILE)
#define TILE_LANES (KILN_WG / TILE_COLS)

/* ---- work-group reductions ----
 * Every work-item of the group calls these with its value and gets the group's result.
 * `scratch` is a __local float[KILN_WG] declared by the kernel; it may be reused right after
 * (each function ends with a barrier). The order of the additions is fixed, so results are
 * deterministic run to run. */

#if KILN_SUBGROUPS
float wg_sum(float v, __local float *scratch) {
    float s = sub_group_reduce_add(v);
    if (get_sub_group_local_id() == 0) scratch[get_sub_group_id()] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    float total = 0.0f;
    for (uint i = 0; i < get_num_sub_groups(); i++) total += scratch[i];
    barrier(CLK_LOCAL_MEM_FENCE);
    return total;
}

float wg_max(float v, __local float *scratch) {
    float s = sub_group_reduce_max(v);
    if (get_sub_group_local_id() == 0) scratch[get_sub_group_id()] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    float m = -INFINITY;
    for (uint i = 0; i < get_num_sub_groups(); i++) m = fmax(m, scratch[i]);
    barrier(CLK_LOCAL_MEM_FENCE);
    return m;
}
#else
float wg_sum(float v, __local float *scratch) {
    uint lid = get_local_id(0);
    scratch[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint s = KILN_WG / 2; s > 0; s >>= 1) {
        if (lid < s) scratch[lid] += scratch[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float total = scratch[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return total;
}

float wg_max(float v, __local float *scratch) {
    uint lid = get_local_id(0);
    scratch[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint s = KILN_WG / 2; s > 0; s >>= 1) {
        if (lid < s) scratch[lid] = fmax(scratch[lid], scratch[lid + s]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float m = scratch[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return m;
}
#endif
