/* One block of each of ggml's formats (kiln/quant.h lists the layouts): the quantizers and
 * dequantizers core/quant.c calls block by block. quant_32.c holds the 32-value formats,
 * quant_k.c the K formats' super-blocks. Both compile with -ffp-contract=off
 * (engine/CMakeLists.txt): ggml rounds every product and sum apart, and a fused multiply-add
 * would change the bytes, and make them differ between gcc and clang. */
#ifndef KILN_CORE_QUANT_BLOCKS_H
#define KILN_CORE_QUANT_BLOCKS_H

#include <stdint.h>
#include <string.h>

#include "kiln/tensor.h"

/* x: the block's values (32 or 256); b: its bytes. */
typedef void kiln_quant_block_fn(const float *x, unsigned char *b);
typedef void kiln_dequant_block_fn(const unsigned char *b, float *y);

kiln_quant_block_fn kiln_quantize_q8_0, kiln_quantize_q4_0, kiln_quantize_q4_1, kiln_quantize_q5_0,
    kiln_quantize_q5_1, kiln_quantize_q4_k, kiln_quantize_q5_k, kiln_quantize_q6_k, kiln_quantize_q8_k;
kiln_dequant_block_fn kiln_dequantize_q8_0, kiln_dequantize_q4_0, kiln_dequantize_q4_1, kiln_dequantize_q5_0,
    kiln_dequantize_q5_1, kiln_dequantize_q4_k, kiln_dequantize_q5_k, kiln_dequantize_q6_k, kiln_dequantize_q8_k;

/* f16 fields, little-endian as GGUF. */
static inline void kiln_put_f16(unsigned char *at, float v) {
    uint16_t h = kiln_f32_to_f16(v);
    at[0] = (unsigned char)(h & 0xff), at[1] = (unsigned char)(h >> 8);
}

static inline float kiln_get_f16(const unsigned char *at) { return kiln_f16_to_f32((uint16_t)(at[0] | at[1] << 8)); }

/* Little-endian 32-bit fields (Q5's qh, Q8_K's d). */
static inline uint32_t kiln_get_u32(const unsigned char *at) {
    return (uint32_t)at[0] | (uint32_t)at[1] << 8 | (uint32_t)at[2] << 16 | (uint32_t)at[3] << 24;
}

static inline void kiln_put_u32(unsigned char *at, uint32_t v) {
    for (int i = 0; i < 4; i++) at[i] = (unsigned char)(v >> 8 * i);
}

#endif
