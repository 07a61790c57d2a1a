/* GPT to GGUF (gpt_gguf.h). */
#include "model/gpt/gpt_gguf.h"
#include "model/gpt/gpt_gguf_llama.h"
#include "model/gpt/gpt_quant_mix.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/gguf.h"
#include "kiln/quant.h"
#include "text/gpt2_bytes.h"

/* kiln's checkpoint names (HF GPT-2) of a block's tensors, llama.cpp's, and whether the
 * weight is a Conv1D [in, out] that ggml stores transposed. */
static const struct {
    const char *hf, *gguf;
    int conv1d;
} block_names[] = {
    {"ln_1.weight", "attn_norm.weight", 0},     {"ln_1.bias", "attn_norm.bias", 0},
    {"attn.c_attn.weight", "attn_qkv.weight", 1}, {"attn.c_attn.bias", "attn_qkv.bias", 0},
    {"attn.c_proj.weight", "attn_output.weight", 1}, {"attn.c_proj.bias", "attn_output.bias", 0},
    {"ln_2.weight", "ffn_norm.weight", 0},      {"ln_2.bias", "ffn_norm.bias", 0},
    {"mlp.c_fc.weight", "ffn_up.weight", 1},    {"mlp.c_fc.bias", "ffn_up.bias", 0},
    {"mlp.c_proj.weight", "ffn_down.weight", 1}, {"mlp.c_proj.bias", "ffn_down.bias", 0},
};

int gpt_gguf_name(const char *hf, char *out, size_t size, int *conv1d) {
    static const struct {
        const char *hf, *gguf;
    } own[] = {{"wte.weight", "token_embd.weight"}, {"wpe.weight", "position_embd.weight"},
               {"ln_f.weight", "output_norm.weight"}, {"ln_f.bias", "output_norm.bias"}};
    *conv1d = 0;
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
        if (!strcmp(hf, own[i].hf)) return snprintf(out, size, "%s", own[i].gguf), 0;
    int layer, end = 0;
    if (sscanf(hf, "h.%d.%n", &layer, &end) == 1 && end)
        for (size_t b = 0; b < sizeof block_names / sizeof block_names[0]; b++)
            if (!strcmp(hf + end, block_names[b].hf)) {
                snprintf(out, size, "blk.%d.%s", layer, block_names[b].gguf);
                *conv1d = block_names[b].conv1d;
                return 0;
            }
    return -1;
}

int gpt_gguf_writes_gpt2(const gpt_config *c) {
    return c->block.norm_type == BLOCK_NORM_TYPE_LAYERNORM && c->block.mlp == BLOCK_MLP_GELU && !c->block.rope &&
           c->position == GPT_POSITION_LEARNED;
}

/* The model must be GPT-2's own block: llama.cpp's gpt2 knows no other (gpt_gguf.h). */
const char *gpt_not_gpt2(const gpt_config *c, char *buf, size_t size) {
    const block_options *o = &c->block;
    block_options d = block_options_default();
    int gpt2_ffn = c->n_ffn == 0 || c->n_ffn == 4 * c->n_embd;
    if (o->norm != d.norm) snprintf(buf, size, "norm %s", block_norm_names[o->norm]);
    else if (o->norm_type != d.norm_type) snprintf(buf, size, "norm-type %s", block_norm_type_names[o->norm_type]);
    else if (o->mlp != d.mlp) snprintf(buf, size, "mlp %s", block_mlp_names[o->mlp]);
    else if (o->bias != d.bias) snprintf(buf, size, "bias %s", block_bias_names[o->bias]);
    else if (o->qk_norm) snprintf(buf, size, "qk-norm");
    else if (c->position != GPT_POSITION_LEARNED) snprintf(buf, size, "position %s", gpt_position_names[c->position]);
    else if (c->n_kv_head && c->n_kv_head != c->n_head) snprintf(buf, size, "kv-heads %d", c->n_kv_head);
    else if (c->head_dim && c->head_dim * c->n_head != c->n_embd) snprintf(buf, size, "head-dim %d", c->head_dim);
    else if (!gpt2_ffn) snprintf(buf, size, "ffn %d", c->n_ffn);
    else if (c->untied) snprintf(buf, size, "untied");
    else if (o->residual != d.residual) snprintf(buf, size, "residual %s", block_residual_names[o->residual]);
    else if (o->layer != d.layer) snprintf(buf, size, "layer-type %s", block_layer_names[o->layer]);
    else if (o->sigma_reparam) snprintf(buf, size, "sigma-reparam");
    else if (o->residual_attention) snprintf(buf, size, "residual-attention");
    else if (o->attn_temperature != 1.0f) snprintf(buf, size, "attn-temperature %g", (double)o->attn_temperature);
    else return NULL;
    return buf;
}

/* Everything allocated for the writer, freed after the save. */
typedef struct keep {
    void **p;
    size_t n, cap;
} keep;

static void *kept(keep *k, void *p) {
    if (!p) return NULL;
    if (k->n == k->cap) {
        size_t cap = k->cap ? 2 * k->cap : 64;
        void **grown = realloc(k->p, cap * sizeof *grown);
        if (!grown) return free(p), NULL;
        k->p = grown;
        k->cap = cap;
    }
    return k->p[k->n++] = p;
}

static void free_kept(keep *k) {
    for (size_t i = 0; i < k->n; i++) free(k->p[i]);
    free(k->p);
}

/* A [rows, cols] f32 matrix (rows of cols values) in ggml type `type`, malloc'd. */
void *gpt_gguf_convert(const float *x, int64_t rows, int64_t cols, int type, uint64_t *nbytes) {
    uint64_t row = gguf_row_bytes(type, cols);
    unsigned char *out = malloc((size_t)(row * (uint64_t)rows) + 1);
    if (!out) return NULL;
    for (int64_t r = 0; r < rows; r++) {
        const float *src = x + r * cols;
        unsigned char *dst = out + (size_t)(row * (uint64_t)r);
        if (type == GGML_TYPE_F32) {
            memcpy(dst, src, (size_t)cols * 4);
        } else if (type == GGML_TYPE_F16) {
            for (int64_t c = 0; c < cols; c++) {
                uint16_t h = kiln_f32_to_f16(src[c]);
                dst[2 * c] = (unsigned char)(h & 0xff), dst[2 * c + 1] = (unsigned char)(h >> 8);
            }
        } else if (kiln_quantize_row((kiln_qformat)gpt_gguf_qformat(type), src, cols, dst)) {
            free(out);
            return NULL;
        }
    }
    *nbytes = row * (uint64_t)rows;
    return out;
}

/* One weight as the tensor `name`: read from the device, transposed from Conv1D if asked,
 * converted. Returns its bytes (kept), or NULL with err. */
static int add_weight(gguf_writer *w, keep *k, const kiln_tensor *t, const char *name, int conv1d, int type,
                      char *err, size_t errlen) {
    int64_t n = kiln_numel(t), rows = t->ndim == 2 ? t->shape[0] : 1, cols = t->ndim == 2 ? t->shape[1] : n;
    float *x = kept(k, malloc((size_t)n * sizeof *x));
    if (!x || kiln_download_f32(t, x, n)) {
        snprintf(err, errlen, "%s: cannot read the weight: %s", name, x ? kiln_error_message() : "out of memory");
        return -1;
    }
    if (conv1d) { /* [in, out] -> [out][in] */
        float *tr = kept(k, malloc((size_t)n * sizeof *tr));
        if (!tr) return snprintf(err, errlen, "out of memory"), -1;
        for (int64_t i = 0; i < rows; i++)
            for (int64_t o = 0; o < cols; o++) tr[o * rows + i] = x[i * cols + o];
        x = tr;
        int64_t swap = rows;
        rows = cols;
        cols = swap;
    }
    uint64_t nbytes;
    void *bytes = kept(k, gpt_gguf_convert(x, rows, cols, t->ndim == 2 ? type : GGML_TYPE_F32, &nbytes));
    if (!bytes) return snprintf(err, errlen, "%s: out of memory", name), -1;
    int64_t ne[2] = {cols, rows};
    if (gguf_writer_tensor(w, name, t->ndim == 2 ? type : GGML_TYPE_F32, t->ndim == 2 ? 2 : 1, ne, bytes, nbytes)) {
        snprintf(err, errlen, "%s: cannot be written as GGUF", name);
        return -1;
    }
    return 0;
}

int gpt_gguf_qformat(int type) {
    /* ggml's type numbers (ggml.h) of kiln's block formats (kiln/quant.h): the one place they
       meet; every other ggml type (Q2_K, Q3_K, the IQ types, Q8_1, Q8_K) is refused by
       gguf_open by its name */
    static const struct {
        int type;
        kiln_qformat format;
    } map[] = {{GGML_TYPE_Q8_0, KILN_Q8_0}, {GGML_TYPE_Q4_0, KILN_Q4_0}, {GGML_TYPE_Q4_1, KILN_Q4_1},
               {GGML_TYPE_Q5_0, KILN_Q5_0}, {GGML_TYPE_Q5_1, KILN_Q5_1}, {GGML_TYPE_Q4_K, KILN_Q4_K},
               {GGML_TYPE_Q5_K, KILN_Q5_K}, {GGML_TYPE_Q6_K, KILN_Q6_K}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (map[i].type == type) return (int)map[i].format;
    return -1;
}

/* The ggml type of gpt2's matrix `name` (rows of n_embd values but ffn_down's 4 n_embd):
 * 1-D tensors are f32 whatever this says (add_weight). */
static int matrix_type(const gpt_quant_type *type, const char *name, const gpt_config *c) {
    int64_t cols = strstr(name, "ffn_down") ? 4 * (int64_t)c->n_embd : c->n_embd;
    return gpt_quant_tensor_type(type, name, cols, c->n_layer, 0);
}

int gpt_export_gguf(const gpt_model *m, const tokenizer *tok, const gpt_quant_type *type, const char *path, char *err,
                    size_t errlen) {
    const gpt_config *c = &m->cfg;
    char option[64];
    if (!gpt_gguf_writes_gpt2(c))
        return gpt_export_gguf_llama(m, tok, type, path, err, errlen); /* the Llama family's architectures */
    if (gpt_not_gpt2(c, option, sizeof option)) {        snprintf(err, errlen, "this model cannot be exported to GGUF: it was trained with %s, and llama.cpp's gpt2 "
                 "architecture is GPT-2's own block only", option);
        return -1;
    }
    int quantized = gpt_quant_type_quantized(type);
    if (quantized && c->n_embd % KILN_QBLOCK) {
        snprintf(err, errlen, "a model of width %d cannot be quantized in blocks of %d values (its width must be a "
                 "multiple of %d); export it as f16 or f32", c->n_embd, KILN_QBLOCK, KILN_QBLOCK);
        return -1;
    }
    if (tokenizer_vocab_size(tok) != c->vocab_size) {
        snprintf(err, errlen, "the tokenizer has %d tokens but the model %d", tokenizer_vocab_size(tok), c->vocab_size);
        return -1;
    }
    gguf_writer *w = gguf_writer_new();
    keep k = {0};
    int rc = w ? 0 : -1;
    if (rc == 0) {
        gguf_writer_str(w, "general.architecture", "gpt2");
        gguf_writer_str(w, "general.name", "kiln GPT");
        gguf_writer_u32(w, "general.file_type", (uint32_t)type->ftype);
        if (quantized) gguf_writer_u32(w, "general.quantization_version", 2);
        gguf_writer_u32(w, "gpt2.context_length", (uint32_t)c->n_positions);
        gguf_writer_u32(w, "gpt2.embedding_length", (uint32_t)c->n_embd);
        gguf_writer_u32(w, "gpt2.feed_forward_length", (uint32_t)(4 * c->n_embd));
        gguf_writer_u32(w, "gpt2.block_count", (uint32_t)c->n_layer);
        gguf_writer_u32(w, "gpt2.attention.head_count", (uint32_t)c->n_head);
        gguf_writer_f32(w, "gpt2.attention.layer_norm_epsilon", c->ln_eps);
        if (tokenizer_to_gguf(tok, w, err, errlen)) rc = -1;
    }
    for (int i = 0; rc == 0 && i < m->n_params; i++) {
        const gpt_param *p = &m->params[i];
        const char *hf = p->spec.name;
        char name[96];
        int conv1d;
        if (!strcmp(hf, "wte.weight")) { /* llama.cpp sees output.weight: not tied, each its own type */
            rc = add_weight(w, &k, p->t, "token_embd.weight", 0, matrix_type(type, "token_embd.weight", c), err, errlen);
            if (rc == 0) /* the tied head */
                rc = add_weight(w, &k, p->t, "output.weight", 0, matrix_type(type, "output.weight", c), err, errlen);
            continue;
        }
        if (gpt_gguf_name(hf, name, sizeof name, &conv1d)) {
            snprintf(err, errlen, "the weight %s has no place in llama.cpp's gpt2", hf);
            rc = -1;
            break;
        }
        int t = !strcmp(hf, "wpe.weight") ? gpt_quant_table_type(type) : matrix_type(type, name, c);
        rc = add_weight(w, &k, p->t, name, conv1d, t, err, errlen);
    }
    if (rc == 0) rc = gguf_writer_save(w, path, err, errlen);
    gguf_writer_free(w);
    free_kept(&k);
    return rc;
}
