/* The counter-based RNG: Philox4x32-10 keyed by a 64-bit seed, with a 64-bit stream and a
 * 64-bit element index as the counter. A value depends only on (seed, stream, index), so
 * every backend draws the same numbers and a run is reproducible. */
#ifndef KILN_RNG_H
#define KILN_RNG_H

#include "kiln/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Philox4x32 with 10 rounds: counter {c0,c1,c2,c3}, key {k0,k1}. */
void kiln_philox4x32_10(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4]);

/* The raw 32-bit draw for (seed, stream, index): word 0 of Philox with counter
 * {index_lo, index_hi, stream_lo, stream_hi} and key {seed_lo, seed_hi}. Kernels compute
 * exactly this. */
uint32_t kiln_rng_u32(uint64_t seed, uint64_t stream, uint64_t index);
/* Uniform in [0, 1) with 24 bits: (u32 >> 8) * 2^-24. */
float kiln_rng_uniform(uint64_t seed, uint64_t stream, uint64_t index);
/* Standard normal: Box-Muller on words 0 and 1 of the same draw. */
float kiln_rng_normal(uint64_t seed, uint64_t stream, uint64_t index);

/* Fill a tensor (f32 or f16) on the host and upload it. */
kiln_status kiln_init_normal(kiln_tensor *t, uint64_t seed, uint64_t stream, float mean,
                             float std);
kiln_status kiln_init_uniform(kiln_tensor *t, uint64_t seed, uint64_t stream, float lo,
                              float hi);

#ifdef __cplusplus
}
#endif
#endif
