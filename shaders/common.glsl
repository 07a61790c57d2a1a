// Helpers shared by the compute shaders.
//
// Conventions: operands are bound as whole blocks and addressed by the element offsets in
// pc.off[] (see push.h); a 1-D grid may be split over x and y (vk_grid_1d), so kernels use
// kiln_group_id() (or kiln_flat_id(), flat.glsl) and skip the groups past the end. The
// kinds, modes and tile sizes the host uses too come from engine/abi/kernel_abi.h
// (glslc -I engine).
//
// f16 data comes two ways. The kernels with a dtype (engine/core/backend.h, "Precision")
// declare their data operands as `data_t x[]` and read and write them through LD() / ST()
// (below): the plain build is f32, the "_f16" build (-DKILN_F16, core/kernel_slots.def) is
// f16 in 16-bit storage buffers, which needs storageBuffer16BitAccess (the host checks it).
// fill, cast, check_finite, adam and the GEMM packing read and write f16 as packed 32-bit
// words instead (KILN_HALF, KILN_STORE_HALVES), which would need no optional feature; the
// host still refuses f16 everywhere on a device without 16-bit storage (vk_require_f16).
#ifndef KILN_COMMON_GLSL
#define KILN_COMMON_GLSL

#ifdef KILN_F16
#extension GL_EXT_shader_16bit_storage : require
#endif

#include "abi/kernel_abi.h"
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

// ---- the storage type of a kernel's data operands ----
// Statistics and scalars that the contract keeps in f32 (mean, rstd, lse, loss, partial
// sums) stay `float` in every build; everything is computed in f32, and an f16 result is
// rounded once, when it is stored ("+=" into f16: LD, add in f32, ST).
//
// The f16 build stores IEEE binary16 bit patterns as uint16_t and converts with the
// bit-exact functions above, not float16_t and the conversion instruction: Vulkan lets a
// narrowing conversion round either to nearest even or toward zero, and lets both
// directions flush f16 denormals unless the device offers float controls for them
// (lavapipe reports shaderDenormPreserveFloat16 = false). The contract wants nearest even,
// and small f16 gradients do land among the denormals (below 6.1e-5), loss scaling or not.
// The conversions cost a few integer operations per element, which memory-bound kernels
// hide. Only 16-bit storage is used, no f16 arithmetic (shaderFloat16): f16 math would
// round at every step, not once.
//
// LD(e) is an element's value as f32, ST(v) the element that stores f32 value v; macros,
// because 16-bit types may not be function parameters with 16-bit storage alone.
#ifdef KILN_F16
#define data_t uint16_t
#define LD(e) kiln_f16_to_f32(uint(e))
#define ST(v) uint16_t(kiln_f32_to_f16(v))
#else
#define data_t float
#define LD(e) (e)
#define ST(v) (v)
#endif

// tanh without overflow for large |x| (exp(2x) would be inf/inf).
float kiln_tanh(float x) {
    float t = exp(-2.0 * abs(x));
    float r = (1.0 - t) / (1.0 + t);
    return x < 0.0 ? -r : r;
}

#endif
