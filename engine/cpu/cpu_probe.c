/* Device measurement on the CPU backend (kiln/probe.h, the probe slots of backend.h).
 *
 * The FMA ceiling runs one work item per OpenMP thread; each keeps enough independent
 * accumulators in vector registers to cover FMA latency times the FMA units (4 cycles x 2
 * units on current x86 cores: 8 in flight; 12 with 16 registers, 16 with 32). The kernels
 * use intrinsics, compiled per function with target attributes and chosen at run time with
 * the cpuid flags (core/cpu_features.h), like the GEMM: C11 does not contract a*b+c into an FMA
 * (-ffp-contract=off), so plain C would measure a multiply and an add. OpenBLAS sgemm is
 * checked against this ceiling by `kiln bench` (a GEMM above 100% would mean the ceiling
 * kernel is wrong), so the widest kernel must run at the full width of the machine.
 *
 * Widths are the machine's vector registers: 1 (scalar FMA), 4 (128-bit), 8 (256-bit), 16
 * (512-bit) floats; f16 arithmetic needs AVX512-FP16: 1, 8, 16, 32 halves. Other widths,
 * and every width but 1 on CPUs other than x86-64, are KILN_ERR_UNSUPPORTED.
 *
 * The timer is the monotonic clock around the work, which the CPU backend runs synchronously
 * as it is recorded. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define CPU_PROBE_X86 1
#endif

#include "core/cpu_features.h"
#include "cpu/cpu_internal.h"
#include "cpu/cpu_probe.h"

/* ---- timer ---- */

kiln_status cpu_timer_begin(void *dev, void **timer) {
    (void)dev;
    double *t0 = malloc(sizeof *t0);
    if (!t0) return kiln_set_error(KILN_ERR_MEMORY, "cpu: out of host memory");
    *t0 = kiln_clock_wall();
    *timer = t0;
    return KILN_OK;
}

kiln_status cpu_timer_end(void *dev, void *timer, double *device_s) {
    (void)dev;
    *device_s = kiln_clock_wall() - *(double *)timer;
    free(timer);
    return KILN_OK;
}

static const char *isa_name(void) {
#ifdef CPU_PROBE_X86
    const kiln_cpu_features *cpu = kiln_cpu();
    if (cpu->avx512fp16) return "x86-64 AVX-512 with FP16";
    if (cpu->avx512f) return "x86-64 AVX-512";
    if (cpu->avx2 && cpu->fma) return "x86-64 AVX2+FMA";
    return "x86-64";
#elif defined(__aarch64__)
    return "aarch64";
#else
    return "generic";
#endif
}

void cpu_driver_info(void *dev, char *buf, size_t size) {
    (void)dev;
    char compiler[64] = "an unknown C compiler";
#if defined(__clang__)
    snprintf(compiler, sizeof compiler, "clang %d.%d.%d", __clang_major__, __clang_minor__, __clang_patchlevel__);
#elif defined(__GNUC__)
    snprintf(compiler, sizeof compiler, "GCC %d.%d.%d", __GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__);
#endif
#ifdef _OPENMP
    const int threads = cpu_max_threads();
    snprintf(buf, size, "kiln cpu backend (%s, OpenMP %d, %d thread%s, %s)", compiler, _OPENMP, threads,
             threads == 1 ? "" : "s", isa_name());
#else
    snprintf(buf, size, "kiln cpu backend (%s, no OpenMP, 1 thread, %s)", compiler, isa_name());
#endif
}

/* ---- FMA kernels: one work item ----
 * Each returns the sum of its accumulators; accumulator k = chain * width + lane starts at
 * 1 + (k % 32) / 16 (backend.h). The chain loops are unrolled so that every accumulator
 * lives in its own register (checked in the assembly: one vfmadd per accumulator per round,
 * no loads or stores in the loop). */

#define CHAINS_16REG 12 /* 16 vector registers: 12 accumulators + mul + add */
#define CHAINS_32REG 16 /* 32 vector registers (AVX-512) */

/* The kernels are never instrumented (the sanitizer build): instrumentation keeps the
 * accumulator arrays on the stack, and the ceiling would time memory traffic. They touch
 * no memory but their own locals. engine/CMakeLists.txt also builds this file with -O2 in
 * every configuration, for the same reason. */
#define CPU_PROBE_KERNEL __attribute__((no_sanitize("address", "undefined")))

static void start_values(float *dst, int count) {
    for (int k = 0; k < count; k++) dst[k] = 1.0f + (float)(k % 32) / 16.0f;
}

static float sum_floats(const float *v, int n) {
    float s = 0;
    for (int i = 0; i < n; i++) s += v[i];
    return s;
}

/* Portable scalar FMA: fmaf is a fused multiply-add by definition (a library call where the
 * build has no FMA instruction, so only the x86 kernels below are ceilings). */
CPU_PROBE_KERNEL static float fma_f32x1_generic(int64_t iters, float mul, float add) {
    float a[CHAINS_16REG], v[CHAINS_16REG];
    start_values(v, CHAINS_16REG);
    memcpy(a, v, sizeof a);
    for (int64_t r = 0; r < iters; r++) {
#pragma GCC unroll 16
        for (int j = 0; j < CHAINS_16REG; j++) a[j] = fmaf(a[j], mul, add);
    }
    return sum_floats(a, CHAINS_16REG);
}

#ifdef CPU_PROBE_X86
__attribute__((target("fma"))) CPU_PROBE_KERNEL static float fma_f32x1(int64_t iters, float mul, float add) {
    float v[CHAINS_16REG];
    start_values(v, CHAINS_16REG);
    __m128 a[CHAINS_16REG], m = _mm_set_ss(mul), c = _mm_set_ss(add);
#pragma GCC unroll 16
    for (int j = 0; j < CHAINS_16REG; j++) a[j] = _mm_set_ss(v[j]);
    for (int64_t r = 0; r < iters; r++) {
#pragma GCC unroll 16
        for (int j = 0; j < CHAINS_16REG; j++) a[j] = _mm_fmadd_ss(a[j], m, c);
    }
#pragma GCC unroll 16
    for (int j = 0; j < CHAINS_16REG; j++) v[j] = _mm_cvtss_f32(a[j]);
    return sum_floats(v, CHAINS_16REG);
}

__attribute__((target("fma"))) CPU_PROBE_KERNEL static float fma_f32x4(int64_t iters, float mul, float add) {
    float v[CHAINS_16REG * 4];
    start_values(v, CHAINS_16REG * 4);
    __m128 a[CHAINS_16REG], m = _mm_set1_ps(mul), c = _mm_set1_ps(add);
#pragma GCC unroll 16
    for (int j = 0; j < CHAINS_16REG; j++) a[j] = _mm_loadu_ps(v + 4 * j);
    for (int64_t r = 0; r < iters; r++) {
#pragma GCC unroll 16
        for (int j = 0; j < CHAINS_16REG; j++) a[j] = _mm_fmadd_ps(a[j], m, c);
    }
#pragma GCC unroll 16
    for (int j = 0; j < CHAINS_16REG; j++) _mm_storeu_ps(v + 4 * j, a[j]);
    return sum_floats(v, CHAINS_16REG * 4);
}

__attribute__((target("avx2,fma"))) CPU_PROBE_KERNEL static float fma_f32x8(int64_t iters, float mul, float add) {
    float v[CHAINS_16REG * 8];
    start_values(v, CHAINS_16REG * 8);
    __m256 a[CHAINS_16REG], m = _mm256_set1_ps(mul), c = _mm256_set1_ps(add);
#pragma GCC unroll 16
    for (int j = 0; j < CHAINS_16REG; j++) a[j] = _mm256_loadu_ps(v + 8 * j);
    for (int64_t r = 0; r < iters; r++) {
#pragma GCC unroll 16
        for (int j = 0; j < CHAINS_16REG; j++) a[j] = _mm256_fmadd_ps(a[j], m, c);
    }
#pragma GCC unroll 16
    for (int j = 0; j < CHAINS_16REG; j++) _mm256_storeu_ps(v + 8 * j, a[j]);
    return sum_floats(v, CHAINS_16REG * 8);
}

__attribute__((target("avx512f"))) CPU_PROBE_KERNEL static float fma_f32x16(int64_t iters, float mul, float add) {
    float v[CHAINS_32REG * 16];
    start_values(v, CHAINS_32REG * 16);
    __m512 a[CHAINS_32REG], m = _mm512_set1_ps(mul), c = _mm512_set1_ps(add);
#pragma GCC unroll 16
    for (int j = 0; j < CHAINS_32REG; j++) a[j] = _mm512_loadu_ps(v + 16 * j);
    for (int64_t r = 0; r < iters; r++) {
#pragma GCC unroll 16
        for (int j = 0; j < CHAINS_32REG; j++) a[j] = _mm512_fmadd_ps(a[j], m, c);
    }
#pragma GCC unroll 16
    for (int j = 0; j < CHAINS_32REG; j++) _mm512_storeu_ps(v + 16 * j, a[j]);
    return sum_floats(v, CHAINS_32REG * 16);
}

#ifdef KILN_HAVE_AVX512FP16
/* f16: AVX512-FP16 (32 vector registers at every width). Values are kept as f16 bits and
 * summed in f32 with the F16C conversion. Compiled only where the compiler has the
 * AVX512-FP16 intrinsics (gcc 12; not clang 14 or 15): KILN_HAVE_AVX512FP16 is set at
 * configure time (cmake/cpu_features.cmake). */
__attribute__((target("avx512fp16,avx512vl,f16c"))) static float sum_halves(const __m512h *a, int chains, int width) {
    uint16_t bits[CHAINS_32REG * 32];
    for (int j = 0; j < chains; j++) _mm512_storeu_si512((void *)(bits + 32 * j), _mm512_castph_si512(a[j]));
    float s = 0;
    for (int j = 0; j < chains; j++)
        for (int l = 0; l < width; l++) s += _cvtsh_ss(bits[32 * j + l]);
    return s;
}

/* The start values, as a __m512h per chain whose first `width` lanes are accumulators. */
__attribute__((target("avx512fp16,avx512vl,f16c"))) static void start_halves(__m512h *a, int chains, int width) {
    uint16_t bits[32];
    for (int j = 0; j < chains; j++) {
        for (int l = 0; l < 32; l++) bits[l] = (uint16_t)_cvtss_sh(1.0f + (float)((j * width + l) % 32) / 16.0f, 0);
        a[j] = _mm512_castsi512_ph(_mm512_loadu_si512((const void *)bits));
    }
}

__attribute__((target("avx512fp16,avx512vl,f16c"))) CPU_PROBE_KERNEL static float fma_f16x1(int64_t iters, float mul, float add) {
    __m512h a[CHAINS_32REG];
    start_halves(a, CHAINS_32REG, 1);
    __m128h x[CHAINS_32REG], m = _mm_set1_ph((_Float16)mul), c = _mm_set1_ph((_Float16)add);
#pragma GCC unroll 16
    for (int j = 0; j < CHAINS_32REG; j++) x[j] = _mm512_castph512_ph128(a[j]);
    for (int64_t r = 0; r < iters; r++) {
#pragma GCC unroll 16
        for (int j = 0; j < CHAINS_32REG; j++) x[j] = _mm_fmadd_sh(x[j], m, c);
    }
#pragma GCC unroll 16
    for (int j = 0; j < CHAINS_32REG; j++) a[j] = _mm512_castph128_ph512(x[j]);
    return sum_halves(a, CHAINS_32REG, 1);
}

__attribute__((target("avx512fp16,avx512vl,f16c"))) CPU_PROBE_KERNEL static float fma_f16x8(int64_t iters, float mul, float add) {
    __m512h a[CHAINS_32REG];
    start_halves(a, CHAINS_32REG, 8);
    __m128h x[CHAINS_32REG], m = _mm_set1_ph((_Float16)mul), c = _mm_set1_ph((_Float16)add);
#pragma GCC unroll 16
    for (int j = 0; j < CHAINS_32REG; j++) x[j] = _mm512_castph512_ph128(a[j]);
    for (int64_t r = 0; r < iters; r++) {
#pragma GCC unroll 16
        for (int j = 0; j < CHAINS_32REG; j++) x[j] = _mm_fmadd_ph(x[j], m, c);
    }
#pragma GCC unroll 16
    for (int j = 0; j < CHAINS_32REG; j++) a[j] = _mm512_castph128_ph512(x[j]);
    return sum_halves(a, CHAINS_32REG, 8);
}

__attribute__((target("avx512fp16,avx512vl,f16c"))) CPU_PROBE_KERNEL static float fma_f16x16(int64_t iters, float mul, float add) {
    __m512h a[CHAINS_32REG];
    start_halves(a, CHAINS_32REG, 16);
    __m256h x[CHAINS_32REG], m = _mm256_set1_ph((_Float16)mul), c = _mm256_set1_ph((_Float16)add);
#pragma GCC unroll 16
    for (int j = 0; j < CHAINS_32REG; j++) x[j] = _mm512_castph512_ph256(a[j]);
    for (int64_t r = 0; r < iters; r++) {
#pragma GCC unroll 16
        for (int j = 0; j < CHAINS_32REG; j++) x[j] = _mm256_fmadd_ph(x[j], m, c);
    }
#pragma GCC unroll 16
    for (int j = 0; j < CHAINS_32REG; j++) a[j] = _mm512_castph256_ph512(x[j]);
    return sum_halves(a, CHAINS_32REG, 16);
}

__attribute__((target("avx512fp16,avx512vl,f16c"))) CPU_PROBE_KERNEL static float fma_f16x32(int64_t iters, float mul, float add) {
    __m512h a[CHAINS_32REG];
    start_halves(a, CHAINS_32REG, 32);
    __m512h m = _mm512_set1_ph((_Float16)mul), c = _mm512_set1_ph((_Float16)add);
    for (int64_t r = 0; r < iters; r++) {
#pragma GCC unroll 16
        for (int j = 0; j < CHAINS_32REG; j++) a[j] = _mm512_fmadd_ph(a[j], m, c);
    }
    return sum_halves(a, CHAINS_32REG, 32);
}
#endif /* KILN_HAVE_AVX512FP16 */
#endif

typedef float (*fma_kernel)(int64_t iters, float mul, float add);

/* The kernel for a dtype and width on this CPU, and its chains; NULL when it has none. */
static fma_kernel pick_fma(kiln_dtype dtype, int width, int *chains) {
    *chains = CHAINS_16REG;
#ifdef CPU_PROBE_X86
    const kiln_cpu_features *cpu = kiln_cpu();
    int fma = cpu->fma, avx2 = fma && cpu->avx2;
    int avx512 = cpu->avx512f;
    int fp16 = cpu->avx512fp16 && cpu->avx512vl;
    if (dtype == KILN_F32) {
        if (width == 1) return fma ? fma_f32x1 : fma_f32x1_generic;
        if (width == 4 && fma) return fma_f32x4;
        if (width == 8 && avx2) return fma_f32x8;
        *chains = CHAINS_32REG;
        if (width == 16 && avx512) return fma_f32x16;
        return NULL;
    }
    *chains = CHAINS_32REG;
#ifdef KILN_HAVE_AVX512FP16
    if (!fp16) return NULL;
    switch (width) {
    case 1: return fma_f16x1;
    case 8: return fma_f16x8;
    case 16: return fma_f16x16;
    case 32: return fma_f16x32;
    }
#else
    (void)fp16; /* this build's compiler has no AVX512-FP16 intrinsics */
#endif
    return NULL;
#else
    return dtype == KILN_F32 && width == 1 ? fma_f32x1_generic : NULL;
#endif
}

kiln_status cpu_probe_fma(void *dev, kiln_probe_fma_args *a) {
    (void)dev;
    int chains;
    fma_kernel k = pick_fma(a->dtype, a->width, &chains);
    if (!k) {
#ifndef KILN_HAVE_AVX512FP16
        if (a->dtype == KILN_F16 && kiln_cpu()->avx512fp16)
            return kiln_set_error(KILN_ERR_UNSUPPORTED, "cpu: this CPU has AVX512-FP16 but this build of kiln does not "
                                                        "(its compiler lacks the intrinsics; gcc 12 has them)");
#endif
        if (a->dtype == KILN_F16)
            return kiln_set_error(KILN_ERR_UNSUPPORTED, "cpu: no f16 arithmetic at width %d on this CPU (%s; f16 FMA "
                                                        "needs AVX512-FP16: widths 1, 8, 16, 32)",
                                  a->width, isa_name());
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "cpu: no %d-lane f32 FMA instruction on this CPU (%s)", a->width,
                              isa_name());
    }
    if (a->items <= 0) a->items = cpu_max_threads();
    a->chains = chains;
    int64_t items = a->items, iters = a->iters;
    float mul = a->mul, add = a->add, *out = CPU_HAS(a->out) ? CPU_PTR(a->out, float) : NULL;
    /* results nobody reads still go to memory the compiler cannot see through */
    volatile float sink = 0;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < items; i++) {
        float r = k(iters, mul, add);
        if (out)
            out[i] = r;
        else if (r < 0)
            sink = r;
    }
    (void)sink;
    return KILN_OK;
}

/* ---- memory copy: memcpy per thread over contiguous parts (glibc picks the widest vector
 * moves and, for large parts, non-temporal stores) ---- */

kiln_status cpu_probe_copy(void *dev, const kiln_probe_copy_args *a) {
    (void)dev;
    const char *src = CPU_PTR(a->src, char);
    char *dst = CPU_PTR(a->dst, char);
    size_t bytes = a->bytes;
#pragma omp parallel
    {
#ifdef _OPENMP
        size_t t = (size_t)omp_get_thread_num(), n = (size_t)omp_get_num_threads();
#else
        size_t t = 0, n = 1;
#endif
        size_t part = (bytes / n + 63) / 64 * 64;
        size_t begin = t * part < bytes ? t * part : bytes;
        size_t end = begin + part < bytes ? begin + part : bytes;
        memcpy(dst + begin, src + begin, end - begin);
    }
    return KILN_OK;
}

/* ---- dispatch: the CPU backend's per-kernel fixed cost is the fork and join of the OpenMP
 * team that every parallel kernel pays; a tiny kernel here is one such region ---- */

kiln_status cpu_probe_dispatch(void *dev, const kiln_probe_dispatch_args *a) {
    (void)dev;
    int32_t *counter = CPU_PTR(a->counter, int32_t);
    for (int i = 0; i < a->count; i++) {
#pragma omp parallel
        {
#ifdef _OPENMP
            if (omp_get_thread_num() == 0)
#endif
                counter[0]++;
        }
    }
    return KILN_OK;
}
