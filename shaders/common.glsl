// Helpers shared by the compute shaders.
//
// Conventions: operands are bound as whole blocks and addressed by the element offsets in
// pc.off[] (see push.h); f16 data is stored as packed 32-bit words, which needs no optional
// feature; a 1-D grid may be split over x and y (vk_grid_1d), so kernels use
// kiln_group_id() and skip the groups past the end.
#ifndef KILN_COMMON_GLSL
#define KILN_COMMON_GLSL

#include "push.h"

uint kiln_group_id() { return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; }

bool kiln_has(uint off) { return off != KILN_ABSENT; }

// IEEE binary16 from f32 with round-to-nearest-even: the same bit-exact algorithm as
// kiln_f32_to_f16 in engine/core/dtype.c (GPU conversion instructions may round otherwise).
uint kiln_f32_to_f16(float value) {
    uint x = floatBitsToUint(value);
    uint sign = (x >> 16) & 0x8000u;
    uint e8 = (x >> 23) & 0xffu;
    uint mant = x & 0x7fffffu;
    if (e8 == 0xffu) return sign | 0x7c00u | (mant != 0u ? (0x200u | (mant >> 13)) : 0u);
    int e = int(e8) - 127 + 15;
    if (e >= 0x1f) return sign | 0x7c00u;
    if (e <= 0) {
        if (e < -10) return sign;
        mant |= 0x800000u;
        uint shift = uint(14 - e);
        uint half_ = mant >> shift;
        uint rem = mant & ((1u << shift) - 1u);
        uint mid = 1u << (shift - 1u);
        if (rem > mid || (rem == mid && (half_ & 1u) != 0u)) half_++;
        return sign | half_;
    }
    uint h = sign | (uint(e) << 10) | (mant >> 13);
    uint rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) != 0u)) h++;
    return h;
}

// Exact f16 -> f32, subnormals included (unpackHalf2x16 may flush them on some devices).
float kiln_f16_to_f32(uint h) {
    uint sign = (h & 0x8000u) << 16;
    uint e = (h >> 10) & 0x1fu;
    uint mant = h & 0x3ffu;
    uint x;
    if (e == 0x1fu) {
        x = sign | 0x7f800000u | (mant << 13);
    } else if (e == 0u) {
        if (mant == 0u) {
            x = sign;
        } else {
            int s = findMSB(mant);  // normalize: the leading 1 moves to bit 10
            mant = (mant << uint(10 - s)) & 0x3ffu;
            x = sign | (uint(127 - 15 - (10 - s) + 1) << 23) | (mant << 13);
        }
    } else {
        x = sign | ((e + 127u - 15u) << 23) | (mant << 13);
    }
    return uintBitsToFloat(x);
}

// The half at index i (in halves) of a word array.
#define KILN_HALF(arr, i) (((arr)[(i) >> 1] >> (((i) & 1u) * 16u)) & 0xffffu)

// Writes the halves of word w; have_lo / have_hi say which halves belong to this output.
// A word shared with a neighbouring tensor is updated with atomics, so the other half is
// never clobbered (neighbours in other dispatches are ordered by the hazard tracker, which
// works on whole words).
#define KILN_STORE_HALVES(arr, w, lo, hi, have_lo, have_hi)          \
    if ((have_lo) && (have_hi)) {                                    \
        (arr)[w] = (lo) | ((hi) << 16);                              \
    } else if (have_lo) {                                            \
        atomicAnd((arr)[w], 0xffff0000u);                            \
        atomicOr((arr)[w], (lo));                                    \
    } else if (have_hi) {                                            \
        atomicAnd((arr)[w], 0x0000ffffu);                            \
        atomicOr((arr)[w], (hi) << 16);                              \
    }

// tanh without overflow for large |x| (exp(2x) would be inf/inf).
float kiln_tanh(float x) {
    float t = exp(-2.0 * abs(x));
    float r = (1.0 - t) / (1.0 + t);
    return x < 0.0 ? -r : r;
}

#endif
