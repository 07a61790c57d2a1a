/* Against issue 32's contract: lora_load takes a non-const lora_base_info (it writes the
 * hash warning into base->warning); lora_alloc, lora_peft_name, lora_param_count,
 * lora_family_of, lora_site_of, lora_base_format, lora_base_trainable and lora_file_meta are
 * added; lora_block_apply (the forward's hook) is declared in model/block.h.
 *
 * LoRA adapters on the GPT's block linears (Hu et al. 2021, as Hugging Face PEFT has them):
 *
 *   h = W x + b + scale * B A dropout(x),   scale = alpha / rank (times a user's SCALE)
 *
 * A [r, in] and B [out, r] per adapted linear, the base W frozen (never in the optimizer,
 * no gradient buffer: lora_freeze_base). The adapters live beside the base, not in it: a
 * block's weights point at the adapters attached to it (block_weights.lora, a list, so
 * several adapters may apply at once) and block_forward.c's linear() adds each adapter's
 * delta to the columns of the output its target covers (lora_block_apply). The base stays
 * in whatever form it was loaded: f32, f16, or quantized blocks.
 *
 * Targets are PEFT's module names, matched by suffix ("c_proj" selects both of GPT-2's):
 *   GPT-2:  attn.c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj           (transformer.h.N.<m>)
 *   Llama:  self_attn.{q,k,v,o}_proj, mlp.{gate,up,down}_proj         (model.layers.N.<m>)
 * kiln holds the Llama family's q, k and v as column ranges of one matrix (c_attn) and gate
 * and up as the two halves of c_fc; an adapter of q_proj adds to q's columns only.
 *
 * Files: lora_peft.c writes and reads PEFT's form (adapter_config.json +
 * adapter_model.safetensors with PEFT's full names; kiln's metadata records the base).
 * Nothing here prints: every call returns 0 or -1 with one line in err (or NULL). */
#ifndef KILN_HOST_MODEL_LORA_H
#define KILN_HOST_MODEL_LORA_H

#include <stddef.h>
#include <stdint.h>

#include "model/gpt/gpt.h"
#include "model/model_checkpoint.h"
#include "text/tokenizer.h"

typedef enum lora_family { LORA_FAMILY_GPT2, LORA_FAMILY_LLAMA } lora_family;

typedef enum lora_target {
    LORA_C_ATTN, LORA_ATTN_C_PROJ, LORA_MLP_C_FC, LORA_MLP_C_PROJ, /* GPT-2 */
    LORA_Q_PROJ, LORA_K_PROJ, LORA_V_PROJ, LORA_O_PROJ,             /* Llama family */
    LORA_GATE_PROJ, LORA_UP_PROJ, LORA_DOWN_PROJ,
    LORA_TARGET_COUNT
} lora_target;

/* PEFT's module name of each target relative to the block ("attn.c_attn",
 * "self_attn.q_proj", ...). */
extern const char *const lora_target_modules[LORA_TARGET_COUNT];

/* Where a target sits in kiln's block: the linear, and the column range [col0, col0 + cols)
 * of its output that the target's module produces; `in` is the linear's input width. */
typedef struct lora_site {
    block_linear linear;
    int64_t col0, cols, in;
} lora_site;

/* The family of a model: LLAMA when gpt_llama_arch names an architecture for it, GPT2 when
 * it is GPT-2's block (LayerNorm, GELU, learned positions); any other block (GAU,
 * sigma-reparam, ...) is refused with one line. Returns 0 or -1. */
int lora_family_of(const gpt_config *cfg, lora_family *out, char *err, size_t errlen);
/* The targets of a family as a bit mask (1u << lora_target). */
unsigned lora_family_targets(lora_family f);
/* Where target t sits in a model of config cfg (the target must be of cfg's family). */
lora_site lora_site_of(const gpt_config *cfg, lora_target t);

/* PEFT's suffix matching of a comma-separated list over the blocks' module names: an entry
 * selects every module whose block-relative name equals it or ends with "." + it (list NULL
 * or empty: every linear of the blocks). An entry that matches nothing is an error naming
 * it. Returns 0 with *mask, or -1. */
int lora_targets_parse(const gpt_config *cfg, const char *list, unsigned *mask, char *err, size_t errlen);

typedef struct lora_options {
    int rank;        /* r > 0, at most min(in, out) of every target */
    float alpha;     /* PEFT's lora_alpha (8 by default) */
    float dropout;   /* on the adapters' input in training mode; 0: none */
    unsigned targets; /* lora_targets_parse's mask; 0: every linear of the family */
} lora_options;

struct lora_block; /* model/block.h: what block_weights.lora points at */

typedef struct lora_adapter {
    lora_family family;
    int rank;
    float alpha, dropout;
    float scale;      /* alpha / rank times the user's SCALE (lora_load), what the delta is scaled by */
    unsigned targets; /* mask over lora_target */
    int n_layer;
    lora_site site[LORA_TARGET_COUNT];
    /* per layer, per target in lora_target order: A [r, in] then B [out, r], f32 (the masters
       in fp16 training, whose f16 copies are .half); names "h.N.<module>.lora_A" / ".lora_B" */
    model_param *params;
    int n_params;
    int *first;               /* [n_layer * LORA_TARGET_COUNT]: index of A in params, -1 where none */
    kiln_ctx *ctx;
    struct lora_block *links; /* [n_layer], the entries lora_attach puts in the blocks' lists */
    gpt_model *attached;      /* the model it is attached to, or NULL */
} lora_adapter;

/* A new adapter for m (not attached): A uniform(-1/sqrt(in), 1/sqrt(in)) (PEFT's
 * kaiming_uniform_(a = sqrt(5))) from the counter RNG's stream of its index in the table,
 * B zeros, scale alpha / rank. Checks rank > 0 and rank <= min(in, out) of every target.
 * NULL with one line in err. */
lora_adapter *lora_new(gpt_model *m, const lora_options *o, uint64_t seed, char *err, size_t errlen);
/* The same with every weight zero: for readers, which fill the table. */
lora_adapter *lora_alloc(gpt_model *m, const lora_options *o, char *err, size_t errlen);
void lora_free(lora_adapter *a); /* detaches it first when attached */

/* Puts the adapter in m's blocks' lists (after any attached before): from then on m's forward
 * adds its deltas. The adapter must have been made for m's config. */
int lora_attach(gpt_model *m, lora_adapter *a, char *err, size_t errlen);
/* Takes every adapter out of m's blocks (the adapters stay allocated). */
void lora_detach_all(gpt_model *m);

/* No base tensor requires grad: backward computes no gradient of the base (the
 * activations' gradients still flow through it to the adapters of the layers below). */
void lora_freeze_base(gpt_model *m);

/* Elements of the adapter's trained weights. */
int64_t lora_param_count(const lora_adapter *a);

/* ---- the base an adapter belongs to ---- */
typedef struct lora_base_info {
    char arch[16];      /* gpt2, llama, qwen2, qwen3 */
    char shapes[192];   /* "n_layer=..,n_embd=..,n_head=..,n_kv_head=..,head_dim=..,n_ffn=..,vocab=.." */
    char tokenizer[24]; /* FNV-1a 64 of the tokenizer's serialization, hex ("none" without one) */
    char hash[24];      /* FNV-1a 64 of the base file's bytes (a folder: config.json + *.safetensors), hex */
    char path[1024];
    char warning[512];  /* lora_load: a content hash that differs (empty otherwise) */
} lora_base_info;

/* Fills *out for model m read from path with tokenizer tok (NULL: none). Returns 0 or -1. */
int lora_base_info_of(const gpt_model *m, const tokenizer *tok, const char *path, lora_base_info *out, char *err,
                      size_t errlen);

/* The base's record as an adapter file's metadata, the same in both forms (PEFT's safetensors
 * header, the LoRA GGUF's kiln.* keys): put(ctx, key, value) for kiln.base.architecture,
 * kiln.base.shapes, kiln.base.tokenizer, kiln.base.hash and, with_path, kiln.base.path. */
void lora_base_to_meta(const lora_base_info *base, int with_path, block_meta_put put, void *ctx);
/* Checks the record an adapter file holds (get(ctx, key): NULL when absent, as in a file
 * PEFT wrote, which checks nothing) against base: another architecture, shapes or tokenizer
 * is an error naming path; another hash fills base->warning. base NULL: nothing checked.
 * Returns 0 or -1 with one line in err. */
int lora_base_check(lora_base_info *base, const char *path, block_meta_get get, void *ctx, char *err, size_t errlen);

/* The storage type of the base file's (or folder's) block matrices as the file holds them:
 * "F32", "F16", "BF16", "Q8_0", "Q4_K", ... ("unknown" when it cannot tell). */
void lora_base_format(const char *path, char *buf, size_t size);

/* 0 when training adapters on m can reach every layer: a base of f32/f16 weights, or
 * quantized blocks whose product records its backward to the input; -1 with one line. */
int lora_base_trainable(gpt_model *m, char *err, size_t errlen);

/* ---- PEFT's files (lora_peft.c) ---- */
#define LORA_CONFIG_FILE "adapter_config.json"
#define LORA_WEIGHTS_FILE "adapter_model.safetensors"

/* Writes dir/adapter_config.json and dir/adapter_model.safetensors (each atomic; the folder
 * must exist): PEFT's names ("base_model.model.transformer.h.N.attn.c_attn.lora_A.weight"),
 * A [r, in] and B [out, r] in F32, and in the safetensors metadata kiln.base.* of base plus
 * kiln.lora.* (rank, alpha, dropout, targets) and the caller's extra entries. */
int lora_save_peft(const lora_adapter *a, const lora_base_info *base, const char *dir, const model_meta *extra,
                   int n_extra, char *err, size_t errlen);

/* PEFT's full name of the adapter's table entry i ("base_model.model.transformer.h.3.attn.c_attn.lora_A.weight",
 * "base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight"). */
void lora_peft_name(const lora_adapter *a, int i, char *buf, size_t size);

/* Reads an adapter for m from path (a PEFT folder or its adapter_model.safetensors; its
 * adapter_config.json beside it gives r and lora_alpha when the metadata lacks them) with
 * its delta scaled by `scale` (1: as trained); not attached. A base of another
 * architecture, shapes or tokenizer is an error; another content hash writes one line into
 * base->warning (base may be NULL: nothing checked). Returns 0 with *out, or -1. */
int lora_load(gpt_model *m, lora_base_info *base, const char *path, float scale, lora_adapter **out, char *err,
              size_t errlen);

/* The metadata entry of the adapter file at path (a folder or its safetensors), copied into
 * buf; -1 with err when the file cannot be read or has no such key. */
int lora_file_meta(const char *path, const char *key, char *buf, size_t size, char *err, size_t errlen);

#endif
