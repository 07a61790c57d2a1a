/* Where each of kiln's GPT tensors lives in other tools' files, as import recipes
 * (gpt_import.h), for reading and, in reverse, for writing:
 *
 *   kiln                      Hugging Face (Llama, Qwen2, Qwen3)          GGUF (llama.cpp)
 *   wte.weight                model.embed_tokens.weight                   token_embd.weight
 *   lm_head.weight            lm_head.weight                              output.weight
 *   ln_f.weight               model.norm.weight                           output_norm.weight
 *   h.N.ln_1.weight           model.layers.N.input_layernorm.weight       blk.N.attn_norm.weight
 *   h.N.attn.c_attn.*         self_attn.{q,k,v}_proj.{weight,bias}        blk.N.attn_{q,k,v}.{weight,bias}
 *   h.N.attn.q_norm.weight    self_attn.q_norm.weight                     blk.N.attn_q_norm.weight
 *   h.N.attn.k_norm.weight    self_attn.k_norm.weight                     blk.N.attn_k_norm.weight
 *   h.N.attn.c_proj.*         self_attn.o_proj.{weight,bias}              blk.N.attn_output.{weight,bias}
 *   h.N.ln_2.weight           post_attention_layernorm.weight             blk.N.ffn_norm.weight
 *   h.N.mlp.c_fc.weight       mlp.gate_proj.weight, mlp.up_proj.weight    blk.N.ffn_gate.weight, ffn_up.weight
 *   h.N.mlp.c_proj.weight     mlp.down_proj.weight                        blk.N.ffn_down.weight
 *   rope.freqs                (from config.json's rope_scaling)           rope_freqs.weight
 *
 * Every matrix is the transpose of the file's [out, in] one (kiln keeps GPT-2's Conv1D
 * layout); q, k, v and gate, up are stacked along out. GGUF's llama architecture stores q's
 * and k's rows permuted per head (convert_hf_to_gguf.py's LlamaModel.permute), undone on
 * read and redone on write. A GPT-2 folder's tensors are kiln's names (with or without
 * "transformer.") in kiln's layout already. */
#ifndef KILN_HOST_MODEL_GPT_NAMES_H
#define KILN_HOST_MODEL_GPT_NAMES_H

#include "model/gpt/gpt.h"
#include "model/gpt/gpt_import.h"

typedef enum gpt_names_format { GPT_NAMES_HF, GPT_NAMES_GGUF, GPT_NAMES_HF_GPT2 } gpt_names_format;

/* What a recipe needs: the file's naming and the model's sizes. */
typedef struct gpt_names {
    gpt_names_format format;
    int permuted;          /* GGUF llama: q and k rows in llama.cpp's order */
    int rope_freqs_file;   /* rope.freqs is a tensor of the file (GGUF), not computed */
    const char *prefix;    /* GPT-2 folders: "transformer." or "" */
    block_config block;    /* the model's block config (sizes resolved through block_*) */
} gpt_names;

gpt_names gpt_names_for(gpt_names_format format, const gpt_config *cfg);

/* import_recipe_fn over a gpt_names. */
int gpt_names_recipe(const void *names, const param_spec *s, import_recipe *r, char *err, size_t errlen);

#endif
