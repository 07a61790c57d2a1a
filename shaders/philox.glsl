// Philox4x32-10, word 0: the counter-based RNG of engine/core/rng.c, bit for bit
// (kiln_rng_u32(seed, stream, index) is word 0 of counter {index_lo, index_hi, stream_lo,
// stream_hi} with key {seed_lo, seed_hi}); kiln_rng_uniform is (u >> 8) / 2^24. Shared by
// dropout.comp and the fused attention's dropout, so both draw the same masks.
#ifndef KILN_PHILOX_GLSL
#define KILN_PHILOX_GLSL

uint philox_word0(uvec4 c, uvec2 k) {
    for (int round = 0; round < 10; round++) {
        uint hi0, lo0, hi1, lo1;
        umulExtended(0xD2511F53u, c.x, hi0, lo0);
        umulExtended(0xCD9E8D57u, c.z, hi1, lo1);
        c = uvec4(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
        k += uvec2(0x9E3779B9u, 0xBB67AE85u);
    }
    return c.x;
}

// kiln_rng_uniform(seed, stream, index) with each 64-bit value as (lo, hi) words.
float kiln_rng_uniform(uvec2 seed, uvec2 stream, uvec2 index) {
    uint u = philox_word0(uvec4(index, stream), seed);
    return float(u >> 8) * (1.0 / 16777216.0);
}

#endif
