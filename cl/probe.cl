/* Device measurement (kiln/probe.h; host side engine/opencl/cl_probe.c).
 *
 * fma_<dtype>x<width>: the FMA ceiling (the contract is kiln_probe_fma_args in
 * engine/core/backend.h). Each work-item keeps CHAINS vectors of WIDTH lanes, accumulator
 * k = chain * WIDTH + lane starting at 1 + (k % 32) / 16, and runs `iters` rounds of
 * a = fma(a, mul, add) on all of them, then writes their sum. mul and add are arguments, so
 * nothing folds; fma() is fused by definition in OpenCL C. A GPU hides FMA latency across
 * work-items, so 12 scalar lanes per work-item (12 / WIDTH chains) keep registers few. A
 * CPU device (PoCL) runs a work-item's vector code as SIMD instructions, one work-item after
 * another, and needs independent chains within it: 12 at every width (PoCL here, float16:
 * 26 GFLOP per CPU-second with 1 chain, 206 with 12, as the CPU backend's AVX-512 kernel).
 * The chain counts are KILN_ABI_CL_FMA_CHAINS_* of engine/abi/kernel_abi.h, which cl_probe.c
 * reads too: the host must know how many FMAs a kernel does.
 * half kernels exist only where the compiler defines cl_khr_fp16. */

#define FMA_START(k) (1.0f + (float)((k) % 32) / 16.0f)

#if KILN_CPU_DEVICE
#define FMA_CHAINS_1 KILN_ABI_CL_FMA_CHAINS_CPU
#define FMA_CHAINS_2 KILN_ABI_CL_FMA_CHAINS_CPU
#define FMA_CHAINS_4 KILN_ABI_CL_FMA_CHAINS_CPU
#define FMA_CHAINS_8 KILN_ABI_CL_FMA_CHAINS_CPU
#define FMA_CHAINS_16 KILN_ABI_CL_FMA_CHAINS_CPU
#else
#define FMA_CHAINS_1 KILN_ABI_CL_FMA_CHAINS_GPU_X1
#define FMA_CHAINS_2 KILN_ABI_CL_FMA_CHAINS_GPU_X2
#define FMA_CHAINS_4 KILN_ABI_CL_FMA_CHAINS_GPU_X4
#define FMA_CHAINS_8 KILN_ABI_CL_FMA_CHAINS_GPU_X8
#define FMA_CHAINS_16 KILN_ABI_CL_FMA_CHAINS_GPU_X16
#endif

/* LOAD(p) / STORE(v, p): a vector from / to a private array of its lanes */
#define FMA_KERNEL(NAME, S, V, W, LOAD, STORE)                                                               \
    __kernel void NAME(__global float *out, ulong out_off, uint items, uint iters, float mulf,  \
                       float addf) {                                                            \
        uint id = get_global_id(0);                                                             \
        if (id >= items) return;                                                                \
        V a[FMA_CHAINS_##W];                                                                    \
        for (int j = 0; j < FMA_CHAINS_##W; j++) {                                              \
            S lanes[W];                                                                         \
            for (int l = 0; l < W; l++) lanes[l] = (S)FMA_START(j * W + l);                     \
            a[j] = LOAD(lanes);                                                                 \
        }                                                                                       \
        V m = (V)((S)mulf), c = (V)((S)addf);                                                   \
        uint blocks = iters / 4;                                                                \
        for (uint i = 0; i < blocks; i++) {                                                     \
            _Pragma("unroll") for (int r = 0; r < 4; r++) {                                     \
                _Pragma("unroll") for (int j = 0; j < FMA_CHAINS_##W; j++) a[j] = fma(a[j], m, c); \
            }                                                                                   \
        }                                                                                       \
        for (uint i = blocks * 4; i < iters; i++) {                                             \
            _Pragma("unroll") for (int j = 0; j < FMA_CHAINS_##W; j++) a[j] = fma(a[j], m, c);  \
        }                                                                                       \
        float sum = 0.0f;                                                                       \
        for (int j = 0; j < FMA_CHAINS_##W; j++) {                                              \
            S lanes[W];                                                                         \
            STORE(a[j], lanes);                                                                 \
            for (int l = 0; l < W; l++) sum += (float)lanes[l];                                 \
        }                                                                                       \
        out[out_off + id] = sum;                                                                \
    }

#define LOAD1(p) ((p)[0])
#define STORE1(v, p) ((p)[0] = (v))
#define LOAD2(p) vload2(0, p)
#define STORE2(v, p) vstore2(v, 0, p)
#define LOAD4(p) vload4(0, p)
#define STORE4(v, p) vstore4(v, 0, p)
#define LOAD8(p) vload8(0, p)
#define STORE8(v, p) vstore8(v, 0, p)
#define LOAD16(p) vload16(0, p)
#define STORE16(v, p) vstore16(v, 0, p)

FMA_KERNEL(fma_f32x1, float, float, 1, LOAD1, STORE1)
FMA_KERNEL(fma_f32x2, float, float2, 2, LOAD2, STORE2)
FMA_KERNEL(fma_f32x4, float, float4, 4, LOAD4, STORE4)
FMA_KERNEL(fma_f32x8, float, float8, 8, LOAD8, STORE8)
FMA_KERNEL(fma_f32x16, float, float16, 16, LOAD16, STORE16)

#ifdef cl_khr_fp16
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
FMA_KERNEL(fma_f16x1, half, half, 1, LOAD1, STORE1)
FMA_KERNEL(fma_f16x2, half, half2, 2, LOAD2, STORE2)
FMA_KERNEL(fma_f16x4, half, half4, 4, LOAD4, STORE4)
FMA_KERNEL(fma_f16x8, half, half8, 8, LOAD8, STORE8)
FMA_KERNEL(fma_f16x16, half, half16, 16, LOAD16, STORE16)
#endif

/* copy_u4: the memory-bandwidth ceiling, one 16-byte word per work-item (full-width,
 * coalesced loads and stores; PoCL turns consecutive work-items into vector moves). */
__kernel void copy_u4(const __global uint4 *src, ulong src_off, __global uint4 *dst, ulong dst_off, ulong n) {
    ulong i = get_global_id(0);
    if (i < n) dst[dst_off + i] = src[src_off + i];
}

/* dispatch_tick: the tiny kernel of the dispatch-latency probe; consecutive ones depend on
 * each other through the counter, and the host checks that every one ran. */
__kernel void dispatch_tick(__global int *counter, ulong off) { counter[off] += 1; }
