/* A Hugging Face model folder's config.json (and generation_config.json's end-of-generation
 * ids), for the classes kiln reads: LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM and
 * GPT2LMHeadModel (architectures[0]). The keys each class's PretrainedConfig defines, with
 * that class's defaults where the file leaves one out (transformers' LlamaConfig,
 * Qwen2Config, Qwen3Config, GPT2Config), checked for what kiln's decoder can run: an unknown
 * class, an activation other than silu (GPT-2: its tanh GELU), a rope_scaling other than
 * llama3's, Qwen2's sliding window or a size out of range is refused in one line naming the
 * file and the key. Plain data: the model room maps it onto its own config (model/gpt/). */
#ifndef KILN_HOST_FORMATS_HF_CONFIG_H
#define KILN_HOST_FORMATS_HF_CONFIG_H

#include <stddef.h>
#include <stdint.h>

typedef enum hf_arch { HF_ARCH_LLAMA, HF_ARCH_QWEN2, HF_ARCH_QWEN3, HF_ARCH_GPT2, HF_ARCH_COUNT } hf_arch;

/* "LlamaForCausalLM", ... indexed by hf_arch; and model_type's "llama", "qwen2", "qwen3",
 * "gpt2" (also general.architecture's name in GGUF). */
extern const char *const hf_arch_class[HF_ARCH_COUNT];
extern const char *const hf_arch_type[HF_ARCH_COUNT];

#define HF_MAX_EOS 8

typedef struct hf_config {
    hf_arch arch;
    int64_t n_layer, n_head, n_kv_head, n_embd, head_dim, n_ffn, n_positions, vocab_size;
    double norm_eps;       /* rms_norm_eps (GPT-2: layer_norm_epsilon) */
    double rope_theta;     /* 0 for GPT-2 (learned positions) */
    int tied;              /* tie_word_embeddings */
    int attention_bias;    /* q, k, v (and o for Llama's attention_bias) biases */
    int o_bias;            /* Llama's attention_bias also biases o_proj */
    /* rope_scaling of type llama3 (scaled = 0: none) */
    int scaled;
    double rope_factor, rope_low_freq_factor, rope_high_freq_factor;
    int64_t rope_original_max_positions;
    int64_t bos_id;        /* -1 when absent */
    int n_eos;             /* eos_token_id (one or a list), generation_config.json's when given */
    int64_t eos_ids[HF_MAX_EOS];
} hf_config;

/* Parses config.json's text; name is used in messages. Returns 0, or -1 with one line. */
int hf_config_parse(const char *text, size_t len, const char *name, hf_config *out, char *err, size_t errlen);

/* Its eos_token_id from generation_config.json's text (which wins over config.json's):
 * returns 0 (absent leaves out as it is), or -1 with one line. */
int hf_config_parse_generation(const char *text, size_t len, const char *name, hf_config *out, char *err,
                               size_t errlen);

/* Reads the folder's config.json (dir is the folder) and, when present, its
 * generation_config.json. Returns 0, or -1 with one line. */
int hf_config_read(const char *dir, hf_config *out, char *err, size_t errlen);

#endif
