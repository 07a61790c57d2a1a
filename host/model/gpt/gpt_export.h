/* kiln's GPT tensors out in another tool's names and layout: the reverse of gpt_import.h
 * through the same recipes (gpt_names.h). Each of kiln's tensors is read from the device
 * (f32), split into the file's pieces (c_attn into q, k, v; c_fc into gate, up), each
 * transposed back to the file's [out, in] rows, and llama's q/k rows permuted as
 * convert_hf_to_gguf.py permutes them; a sink writes each piece (gpt_gguf_llama_write.c,
 * gpt_hf_write.c). */
#ifndef KILN_HOST_MODEL_GPT_EXPORT_H
#define KILN_HOST_MODEL_GPT_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#include "model/gpt/gpt_names.h"

/* One piece: rows x cols f32 values, row-major (ndim 1: rows values, cols 1), valid during
 * the call. Returns 0, or -1 with err. */
typedef int (*gpt_export_sink)(void *ctx, const char *name, int ndim, int64_t rows, int64_t cols, const float *v,
                               char *err, size_t errlen);

/* Every tensor of m (its f32 weights: a quantized model is refused) that the names place,
 * in m's checkpoint order; rope.freqs only where the format holds it (names->rope_freqs_file).
 * Returns 0, or -1 with one line in err. */
int gpt_export_pieces(const gpt_model *m, const gpt_names *names, gpt_export_sink sink, void *ctx, char *err,
                      size_t errlen);

/* The architecture of llama.cpp (and class of Hugging Face) that holds m: "llama" (no
 * biases), "qwen2" (q/k/v biases) or "qwen3" (q/k norm), or NULL with the reason in err
 * (an option neither has: learned positions, LayerNorm, GELU, Post-LN, ...). */
const char *gpt_llama_arch(const gpt_config *cfg, char *err, size_t errlen);

/* Llama 3's rope scaling parameters that give n frequency factors f (rope.freqs, all kiln
 * keeps: a GGUF file holds no more) at head width hd and base theta, under Llama 3.x's
 * low_freq_factor 1 and high_freq_factor 4: the factor is the largest, the original context
 * follows from a smoothed pair's factor (or lies between the bands), and every factor is
 * recomputed (gpt_rope_llama3_freqs) to 1e-4. Returns 0, or -1 when none fits. */
int gpt_rope_llama3_fit(const float *f, int n, int hd, double base, gpt_rope_llama3 *out);

#endif
