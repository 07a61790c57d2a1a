/* A GPT's weights from another tool's tensors: a Hugging Face folder's safetensors shards
 * (gpt_hf.h) or a GGUF file of the Llama family (gpt_gguf.h), whatever their names, layouts
 * and element types. Each of kiln's tensors (gpt_param_specs) is described by a recipe: the
 * file's tensors it is made of (up to three, stacked along their rows: q, k and v become
 * c_attn; gate and up become c_fc), whether it is their transpose (PyTorch's and ggml's
 * [out, in] weights against GPT-2's Conv1D [in, out]), and which of them have their rows
 * un-permuted (convert_hf_to_gguf.py's llama q/k permutation).
 *
 * Memory: nothing is read twice nor held twice. The values go from the file's mapped pages
 * to the model's tensors in chunks of a few MiB (converted on the way: F16 and BF16 widen
 * to f32), and the pages of each file tensor are given back as soon as it is consumed
 * (st_drop, gguf_drop). Quantized matrices (any of kiln/quant.h's weight formats, each tensor
 * its own) that the model keeps in blocks are copied block row by block row; the others are
 * dequantized on the way like F16. */
#ifndef KILN_HOST_MODEL_GPT_IMPORT_H
#define KILN_HOST_MODEL_GPT_IMPORT_H

#include <stddef.h>
#include <stdint.h>

#include "kiln/quant.h"
#include "model/gpt/gpt.h"

typedef enum import_dtype {
    IMPORT_F32,
    IMPORT_F16,
    IMPORT_BF16,
    IMPORT_QUANT, /* blocks of import_tensor.qformat */
    IMPORT_DTYPE_COUNT
} import_dtype;

/* One tensor of the file, in PyTorch's order: [rows, cols] with cols contiguous (ggml's ne[1],
 * ne[0]); a 1-D tensor has ndim 1, rows its length and cols 1. */
typedef struct import_tensor {
    const char *name;
    import_dtype dtype;
    kiln_qformat qformat; /* IMPORT_QUANT's block format */
    int ndim;
    int64_t rows, cols;
    const unsigned char *data; /* rows whole: a quantized row is whole blocks */
    size_t nbytes;
    /* gives the file's pages of [p, p + n) back once consumed (may be NULL) */
    void (*drop)(const void *owner, const void *p, size_t n);
    const void *owner;
} import_tensor;

/* The file's tensors; path names the file or folder in messages. */
typedef struct import_source {
    const import_tensor *tensors;
    size_t count;
    const char *path;
} import_source;

const import_tensor *import_find(const import_source *src, const char *name);

/* How one of kiln's tensors is made. */
#define IMPORT_MAX_PIECES 3
typedef struct import_piece {
    char name[96];
    int64_t rows;         /* the rows it must have (a 1-D piece: its length) */
    int64_t unpermute_hd; /* > 0: rows come in llama's GGUF order, heads of this width */
} import_piece;

typedef struct import_recipe {
    int n;
    import_piece piece[IMPORT_MAX_PIECES];
    int transpose; /* kiln's [in, out] from the pieces' [out, in] */
} import_recipe;

/* The file's row of a piece's row r in HF's order: convert_hf_to_gguf.py stores head h's row
 * a * hd/2 + b (a in {0, 1}) at h * hd + 2 b + a (r itself without unpermute_hd). */
int64_t import_file_row(const import_piece *p, int64_t r);

/* Fills r for spec s. Returns 0, 1 when the tensor is not in the file (the caller sets it:
 * rope.freqs from a config), or -1 when the format has no place for it (err). */
typedef int (*import_recipe_fn)(const void *ctx, const param_spec *s, import_recipe *r, char *err, size_t errlen);

/* 1 when the model keeps weight s quantized given the file: a matrix of a block whose pieces
 * are all quantized (in parts where their formats differ: block_weights' qpart), or the token
 * embedding or untied output head in blocks. */
int import_stays_quantized(const import_source *src, const param_spec *s, import_recipe_fn recipe, const void *ctx);

/* Checks every recipe's pieces against the specs before anything is allocated: each piece
 * present, 2-D or 1-D as its spec, of the rows the recipe says and the columns the spec
 * says. Returns 0, or -1 with "PATH: no tensor NAME (kiln's SPEC)" or "PATH: NAME is [r, c]
 * where kiln's SPEC needs [r', c'] (CONFIG)". */
int import_check(const import_source *src, const param_spec *specs, int n, import_recipe_fn recipe, const void *ctx,
                 const char *config, char *err, size_t errlen);

/* Reads every tensor of m (built by gpt_new_except with import_stays_quantized's absent
 * set) from the file; the quantized ones into m->blocks[].q (or .qpart), m->quant->embd and
 * m->quant->head (the tied head from the embedding's blocks). Returns 0, or -1 with err. */
int import_fill(gpt_model *m, const import_source *src, import_recipe_fn recipe, const void *ctx, char *err,
                size_t errlen);

/* The tensor's element type ("f32", "bf16", "q4_k", ...), for messages. */
const char *import_dtype_name(const import_tensor *t);

#endif
