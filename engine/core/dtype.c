/* dtypes and the f32 <-> f16 conversions the host side and the CPU backend need. */
#include <string.h>

#include "core/cpu_features.h"
#include "core/internal.h"

size_t kiln_dtype_size(kiln_dtype dtype) {
    switch (dtype) {
    case KILN_F32: return 4;
    case KILN_F16: return 2;
    case KILN_I32: return 4;
    }
    return 0;
}

const char *kiln_dtype_name(kiln_dtype dtype) {
    switch (dtype) {
    case KILN_F32: return "f32";
    case KILN_F16: return "f16";
    case KILN_I32: return "i32";
    }
    return "?";
}

/* IEEE binary16 with round-to-nearest-even, subnormals, inf and NaN: the same rounding the
 * GPU conversion instructions use, so host-side and device-side casts agree bit for bit. */
uint16_t kiln_f32_to_f16(float value) {
    uint32_t x;
    memcpy(&x, &value, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t exp = (x >> 23) & 0xffu;
    uint32_t mant = x & 0x7fffffu;
    if (exp == 0xff) /* inf or NaN (keep NaN quiet and non-zero) */
        return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u | (mant >> 13) : 0));
    int e = (int)exp - 127 + 15;
    if (e >= 0x1f) return (uint16_t)(sign | 0x7c00u); /* overflow -> inf */
    if (e <= 0) {
        if (e < -10) return (uint16_t)sign; /* underflow -> signed zero */
        mant |= 0x800000u;                  /* subnormal: shift in the implicit bit */
        uint32_t shift = (uint32_t)(14 - e);
        uint32_t half = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1);
        uint32_t mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = sign | ((uint32_t)e << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1))) half++; /* may carry into exp: ok */
    return (uint16_t)half;
}

float kiln_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t x;
    if (exp == 0x1f) {
        x = sign | 0x7f800000u | (mant << 13);
    } else if (exp == 0) {
        if (mant == 0) {
            x = sign;
        } else { /* subnormal: normalize */
            int e = -1;
            do {
                mant <<= 1;
                e++;
            } while (!(mant & 0x400u));
            x = sign | ((uint32_t)(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
        }
    } else {
        x = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &x, 4);
    return f;
}

/* ---- many values at once ----
 * x86-64 converts 16 values per instruction with AVX-512F (vcvtph2ps / vcvtps2ph on zmm)
 * and 8 with F16C; both round to nearest even (the immediate says so, whatever MXCSR
 * holds) and handle subnormals, inf and NaN as the scalar functions above do, so the
 * result is the same bits on every path (a NaN stays a NaN; only a signalling NaN's
 * quiet bit may differ). The scalar loop takes the tail and other CPUs. */
#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define KILN_X86_F16 1

__attribute__((target("avx512f"))) static int64_t f16_to_f32_avx512(const uint16_t *src, float *dst, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(src + i))));
    return i;
}

__attribute__((target("avx512f"))) static int64_t f32_to_f16_avx512(const float *src, uint16_t *dst, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm256_storeu_si256((__m256i *)(void *)(dst + i),
                            _mm512_cvtps_ph(_mm512_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    return i;
}

__attribute__((target("avx,f16c"))) static int64_t f16_to_f32_f16c(const uint16_t *src, float *dst, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(src + i))));
    return i;
}

__attribute__((target("avx,f16c"))) static int64_t f32_to_f16_f16c(const float *src, uint16_t *dst, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(void *)(dst + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    return i;
}

/* 2: AVX-512F (and F16C), 1: F16C, 0: scalar. */
static int f16_vector_level(void) {
    const kiln_cpu_features *cpu = kiln_cpu();
    if (!cpu->f16c) return 0;
    return cpu->avx512f ? 2 : 1;
}
#endif

void kiln_f16_to_f32_n(const uint16_t *src, float *dst, int64_t n) {
    int64_t i = 0;
#ifdef KILN_X86_F16
    int level = f16_vector_level();
    if (level == 2) i = f16_to_f32_avx512(src, dst, n);
    if (level >= 1) { /* every AVX-512 CPU has F16C: 8 at a time, then the tail padded to 8 */
        i += f16_to_f32_f16c(src + i, dst + i, n - i);
        if (i < n) {
            uint16_t h[8] = {0};
            float f[8];
            memcpy(h, src + i, (size_t)(n - i) * sizeof *h);
            f16_to_f32_f16c(h, f, 8);
            memcpy(dst + i, f, (size_t)(n - i) * sizeof *f);
            return;
        }
    }
#endif
    for (; i < n; i++) dst[i] = kiln_f16_to_f32(src[i]);
}

void kiln_f32_to_f16_n(const float *src, uint16_t *dst, int64_t n) {
    int64_t i = 0;
#ifdef KILN_X86_F16
    int level = f16_vector_level();
    if (level == 2) i = f32_to_f16_avx512(src, dst, n);
    if (level >= 1) {
        i += f32_to_f16_f16c(src + i, dst + i, n - i);
        if (i < n) {
            float f[8] = {0};
            uint16_t h[8];
            memcpy(f, src + i, (size_t)(n - i) * sizeof *f);
            f32_to_f16_f16c(f, h, 8);
            memcpy(dst + i, h, (size_t)(n - i) * sizeof *h);
            return;
        }
    }
#endif
    for (; i < n; i++) dst[i] = kiln_f32_to_f16(src[i]);
}
