/* A Llama-family GPT as llama.cpp's llama, qwen2 or qwen3 GGUF (gpt_gguf_llama.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/gguf.h"
#include "kiln/quant.h"
#include "model/gpt/gpt_export.h"
#include "model/gpt/gpt_gguf.h"
#include "model/gpt/gpt_gguf_llama.h"

/* The sink's state: the writer, the file's type and what its per-tensor choice needs, and
 * the converted bytes it references until the save. */
typedef struct sink_state {
    gguf_writer *w;
    const gpt_quant_type *type;
    int n_layer, tied;
    void **bytes;
    size_t n;
} sink_state;

/* One tensor: 1-D ones (norms, biases, rope_freqs) in f32 as convert_hf_to_gguf.py keeps
 * them; matrices in the type gpt_quant_tensor_type chooses (f16 where a row is not whole
 * blocks of any fallback, as llama.cpp's quantizer does). */
static int add_piece(void *ctx, const char *name, int ndim, int64_t rows, int64_t cols, const float *v, char *err,
                     size_t errlen) {
    sink_state *s = ctx;
    int type = ndim == 1 ? GGML_TYPE_F32 : gpt_quant_tensor_type(s->type, name, cols, s->n_layer, s->tied);
    uint64_t nbytes;
    void **grown = realloc(s->bytes, (s->n + 1) * sizeof *grown);
    void *b = grown ? gpt_gguf_convert(v, ndim == 1 ? 1 : rows, ndim == 1 ? rows : cols, type, &nbytes) : NULL;
    if (grown) s->bytes = grown;
    if (!b) return snprintf(err, errlen, "%s: out of memory", name), -1;
    s->bytes[s->n++] = b;
    int64_t ne[2] = {ndim == 1 ? rows : cols, rows};
    if (gguf_writer_tensor(s->w, name, type, ndim, ne, b, nbytes))
        return snprintf(err, errlen, "%s: cannot be written as GGUF", name), -1;
    return 0;
}

/* The keys convert_hf_to_gguf.py writes for these architectures. */
static void write_keys(gguf_writer *w, const gpt_config *c, const char *arch, const gpt_quant_type *type) {
    block_config b = gpt_block_config(c);
    char key[96];
#define ARCH_KEY(k) (snprintf(key, sizeof key, "%s.%s", arch, k), key)
    gguf_writer_str(w, "general.architecture", arch);
    gguf_writer_str(w, "general.name", "kiln GPT");
    gguf_writer_u32(w, "general.file_type", (uint32_t)type->ftype);
    if (gpt_quant_type_quantized(type)) gguf_writer_u32(w, "general.quantization_version", 2);
    gguf_writer_u32(w, ARCH_KEY("block_count"), (uint32_t)c->n_layer);
    gguf_writer_u32(w, ARCH_KEY("context_length"), (uint32_t)c->n_positions);
    gguf_writer_u32(w, ARCH_KEY("embedding_length"), (uint32_t)c->n_embd);
    gguf_writer_u32(w, ARCH_KEY("feed_forward_length"), (uint32_t)block_ffn(&b));
    gguf_writer_u32(w, ARCH_KEY("attention.head_count"), (uint32_t)c->n_head);
    gguf_writer_u32(w, ARCH_KEY("attention.head_count_kv"), (uint32_t)block_kv_heads(&b));
    gguf_writer_f32(w, ARCH_KEY("rope.freq_base"), c->block.rope_base > 0 ? c->block.rope_base : 10000.0f);
    gguf_writer_f32(w, ARCH_KEY("attention.layer_norm_rms_epsilon"), c->ln_eps);
    gguf_writer_u32(w, ARCH_KEY("attention.key_length"), (uint32_t)block_head_dim(&b));
    gguf_writer_u32(w, ARCH_KEY("attention.value_length"), (uint32_t)block_head_dim(&b));
    if (!strcmp(arch, "llama")) {
        gguf_writer_u32(w, ARCH_KEY("vocab_size"), (uint32_t)c->vocab_size);
        gguf_writer_u32(w, ARCH_KEY("rope.dimension_count"), (uint32_t)block_head_dim(&b));
    }
#undef ARCH_KEY
}

int gpt_export_gguf_llama(const gpt_model *m, const tokenizer *tok, const gpt_quant_type *type, const char *path,
                          char *err, size_t errlen) {
    const char *arch = gpt_llama_arch(&m->cfg, err, errlen);
    if (!arch) return -1;
    if (tokenizer_vocab_size(tok) != m->cfg.vocab_size)
        return snprintf(err, errlen, "the tokenizer has %d tokens but the model %d", tokenizer_vocab_size(tok),
                        m->cfg.vocab_size), -1;
    sink_state s = {.w = gguf_writer_new(), .type = type, .n_layer = m->cfg.n_layer, .tied = !m->cfg.untied};
    if (!s.w) return snprintf(err, errlen, "out of memory"), -1;
    gpt_names names = gpt_names_for(GPT_NAMES_GGUF, &m->cfg);
    /* kiln keeps HF's row order and rotates half-split pairs: llama's file holds them permuted
       (llama.cpp rotates adjacent pairs); a model of adjacent pairs is llama.cpp's order already */
    names.permuted = !strcmp(arch, "llama") && m->cfg.block.rope_layout == 1;
    names.rope_freqs_file = 1;
    write_keys(s.w, &m->cfg, arch, type);
    int rc = tokenizer_to_gguf(tok, s.w, err, errlen);
    if (rc == 0) rc = gpt_export_pieces(m, &names, add_piece, &s, err, errlen);
    if (rc == 0) rc = gguf_writer_save(s.w, path, err, errlen);
    gguf_writer_free(s.w);
    for (size_t i = 0; i < s.n; i++) free(s.bytes[i]);
    free(s.bytes);
    return rc;
}
