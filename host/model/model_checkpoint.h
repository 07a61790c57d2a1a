/* What every model's safetensors checkpoint shares: matching a file's tensors to the model's
 * parameter table (names, shapes, dtypes, nothing missing, nothing unknown) before anything
 * is allocated, loading them, and saving the table atomically with metadata. The models'
 * own files (gpt/gpt_checkpoint.c, seq2seq/seq2seq_checkpoint.c, bert/bert_checkpoint.c) add
 * their configs and names. */
#ifndef KILN_HOST_MODEL_MODEL_CHECKPOINT_H
#define KILN_HOST_MODEL_MODEL_CHECKPOINT_H

#include <stddef.h>

#include "formats/safetensors.h"
#include "model/block.h"
#include "model/model_params.h"

/* A metadata entry a caller adds to a saved checkpoint. */
typedef struct model_meta {
    const char *key, *value;
} model_meta;

/* The name a file tensor stands for, or NULL when the model ignores it (a tied head, a
 * mask buffer); NULL as the function itself keeps names as they are. */
typedef const char *(*model_name_fn)(const char *file_name);

/* Matches every file tensor to a spec: match[i] receives the file tensor of spec i. Errors
 * (one line, naming the file) for an unknown tensor, a duplicate, a wrong shape (`config`
 * describes the config that asked for the shape, e.g. "n_layer 2, n_embd 64"), a dtype that
 * is not a float, and missing tensors. */
int model_checkpoint_match(const st_file *f, const char *path, model_name_fn canonical, const param_spec *specs,
                           int n_specs, const char *config, const st_tensor **match, char *err, size_t errlen);

/* Reads the matched tensors of f into the table's f32 weights (any float dtype converts),
 * giving each one's pages of the mapped file back once read (st_drop). */
int model_checkpoint_read(const st_file *f, const char *path, const st_tensor *const *match, model_param *params, int n, char *err,
                          size_t errlen);

/* How a model is built from a checkpoint whose config has been read: its tensors' specs, its
 * constructor and its parameter table. */
typedef struct model_loader {
    const void *cfg;
    int (*specs)(const void *cfg, param_spec *out); /* as gpt_param_specs */
    void *(*build)(kiln_ctx *ctx, const void *cfg);  /* NULL with the engine's error set */
    model_param *(*params)(void *model);
    void (*free)(void *model);
    model_name_fn canonical;                         /* may be NULL */
    const char *config;                              /* the config, for messages */
} model_loader;

/* Matches every tensor of f (model_checkpoint_match), then builds the model and reads them
 * into it. Returns 0 and *out, or -1 with one line in err (nothing left allocated). */
int model_checkpoint_build(const st_file *f, const char *path, kiln_ctx *ctx, const model_loader *l, void **out,
                           char *err, size_t errlen);

/* The metadata every kind's checkpoint starts with, in this order: "format" "pt" (what Hugging
 * Face's loaders expect of a PyTorch-layout file), "model_type", the config's integers, the
 * LayerNorm epsilon, the kind's fixed keys, and the block's options (model/block.h). */
typedef struct model_checkpoint_config {
    const char *model_type;
    const char *const *int_names;
    const int64_t *ints;
    int n_ints;
    const char *eps_key; /* "layer_norm_epsilon", or Hugging Face BERT's "layer_norm_eps" */
    float ln_eps;
    const model_meta *fixed; /* n_fixed entries, or NULL */
    int n_fixed;
    const block_options *block;
} model_checkpoint_config;

/* A new writer holding that metadata, then the caller's n_extra entries. NULL: out of host
 * memory, said in err naming path. */
st_writer *model_checkpoint_writer(const model_checkpoint_config *c, const model_meta *extra, int n_extra,
                                   const char *path, char *err, size_t errlen);

/* The table saved with that metadata and the caller's: model_checkpoint_writer, then
 * model_checkpoint_write. */
int model_checkpoint_save(const model_param *params, int n, const model_checkpoint_config *c, const model_meta *extra,
                          int n_extra, const char *path, char *err, size_t errlen);

/* Adds the n tensors of the table (f32, as the masters are) to w, which holds the
 * caller's metadata, and saves it atomically: an existing file is replaced only by a
 * complete new one. The caller frees w. */
int model_checkpoint_write(const model_param *params, int n, st_writer *w, const char *path, char *err,
                           size_t errlen);

/* Copies the metadata value of `key` of a safetensors file into value. 1 when found, 0
 * when absent, -1 with a message when the file cannot be read. */
int model_checkpoint_meta(const char *path, const char *key, char *value, size_t size, char *err, size_t errlen);

#endif
