/* GGUF to GPT (gpt_gguf.h: gpt_load_gguf). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/gguf.h"
#include "formats/utf8.h"
#include "kiln/quant.h"
#include "model/gpt/gpt_gguf.h"
#include "model/gpt/gpt_gguf_llama.h"
#include "model/gpt/gpt_quantize.h"
#include "text/gpt2_bytes.h"

static kiln_qformat qformat_of(int type) { return (kiln_qformat)gpt_gguf_qformat(type); }

static int is_quantized(int type) { return gpt_gguf_qformat(type) >= 0; }

float *gpt_gguf_values(const gguf_tensor *t) {
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++) n *= t->ne[d];
    float *v = malloc((size_t)n * sizeof *v);
    if (!v) return NULL;
    const unsigned char *b = t->data;
    if (t->type == GGML_TYPE_F32) {
        memcpy(v, b, (size_t)n * 4);
    } else if (t->type == GGML_TYPE_F16) {
        for (int64_t i = 0; i < n; i++) v[i] = kiln_f16_to_f32((uint16_t)(b[2 * i] | b[2 * i + 1] << 8));
    } else if (t->type == GGML_TYPE_BF16) {
        for (int64_t i = 0; i < n; i++) {
            uint32_t bits = (uint32_t)(b[2 * i] | b[2 * i + 1] << 8) << 16;
            memcpy(&v[i], &bits, 4);
        }
    } else {
        int64_t rows = n / t->ne[0];
        uint64_t row = gguf_row_bytes(t->type, t->ne[0]);
        for (int64_t r = 0; r < rows; r++)
            if (kiln_dequantize_row(qformat_of(t->type), b + r * row, t->ne[0], v + r * t->ne[0])) return free(v), NULL;
    }
    return v;
}

/* The GGUF tensor of weight p, its dimensions checked against the weight's: ggml's [in,
 * out] (ne[0] = in) for a Conv1D weight stored transposed, else the weight's own order
 * reversed. */
static const gguf_tensor *tensor_for(const gguf_file *f, const gpt_param *p, const char *name, int conv1d,
                                     const char *path, char *err, size_t errlen) {
    const gguf_tensor *t = gguf_find_tensor(f, name);
    if (!t) {
        snprintf(err, errlen, "%s: no tensor %s", path, name);
        return NULL;
    }
    const param_spec *s = &p->spec;
    int64_t want0 = s->ndim == 2 ? (conv1d ? s->shape[0] : s->shape[1]) : s->shape[0];
    int64_t want1 = s->ndim == 2 ? (conv1d ? s->shape[1] : s->shape[0]) : 1;
    int64_t have1 = t->ndim >= 2 ? t->ne[1] : 1;
    if (t->ndim > 2 || t->ne[0] != want0 || have1 != want1) {
        snprintf(err, errlen, "%s: %s is [%lld, %lld] (ggml order) where the config needs [%lld, %lld]", path, name,
                 (long long)t->ne[0], (long long)have1, (long long)want0, (long long)want1);
        return NULL;
    }
    return t;
}

/* Uploads a tensor's values into the f32 weight p (transposing ggml's [out][in] rows back to
 * a Conv1D [in, out] when asked). */
static int load_f32(gpt_param *p, const gguf_tensor *t, int conv1d, char *err, size_t errlen) {
    float *v = gpt_gguf_values(t);
    int64_t n = kiln_numel(p->t);
    if (v && conv1d) {
        int64_t in = p->spec.shape[0], out = p->spec.shape[1];
        float *w = malloc((size_t)n * sizeof *w);
        if (w)
            for (int64_t o = 0; o < out; o++)
                for (int64_t i = 0; i < in; i++) w[i * out + o] = v[o * in + i];
        free(v);
        v = w;
    }
    int rc = !v || kiln_upload_f32(p->t, v, n) ? -1 : 0;
    if (rc) snprintf(err, errlen, "%s: %s", p->spec.name, v ? kiln_error_message() : "out of memory");
    free(v);
    return rc;
}

/* A quantized matrix on the device from a tensor's blocks ([rows = ne[1]][cols = ne[0]]). */
static kiln_qmatrix *device_blocks(kiln_ctx *ctx, const gguf_tensor *t, char *err, size_t errlen) {
    kiln_qmatrix *q = kiln_qmatrix_new(ctx, qformat_of(t->type), t->ndim == 2 ? t->ne[1] : 1, t->ne[0]);
    if (q && kiln_qmatrix_upload(q, t->data) == KILN_OK) return q;
    snprintf(err, errlen, "%s: %s", t->name, kiln_error_message());
    kiln_qmatrix_free(q);
    return NULL;
}

/* The tokenizer of tokenizer.ggml.* (text/tokenizer.h: tokenizer_from_gguf), of the model's
 * vocabulary size. */
static int load_tokenizer(const gguf_file *f, const char *path, int32_t vocab, tokenizer **out, char *err, size_t errlen) {
    char msg[384];
    if (tokenizer_from_gguf(f, out, msg, sizeof msg)) {
        snprintf(err, errlen, "%s: %s", path, msg);
        return -1;
    }
    if (tokenizer_vocab_size(*out) != vocab) {
        snprintf(err, errlen, "%s: tokenizer.ggml.tokens is not %d strings", path, vocab);
        tokenizer_free(*out);
        *out = NULL;
        return -1;
    }
    return 0;
}

/* Loads weight p from the file: quantized matrices stay quantized (the blocks' linears,
 * the token embedding), everything else becomes its f32 tensor. */
static int load_weight(gpt_model *m, gpt_param *p, const gguf_file *f, const char *path, char *err, size_t errlen) {
    char name[96];
    int conv1d;
    if (gpt_gguf_name(p->spec.name, name, sizeof name, &conv1d)) {
        snprintf(err, errlen, "%s: kiln's weight %s has no place in gpt2", path, p->spec.name);
        return -1;
    }
    const gguf_tensor *t = tensor_for(f, p, name, conv1d, path, err, errlen);
    if (!t) return -1;
    /* a weight with an f32 tensor is read into it; the others (stays_quantized) keep their blocks */
    if (p->t) {
        int rc = load_f32(p, t, conv1d, err, errlen);
        gguf_drop(f, t->data, t->nbytes); /* read: its pages go back */
        return rc;
    }
    if (p->spec.layer >= 0) {
        kiln_qmatrix *q = device_blocks(m->ctx, t, err, errlen);
        if (!q) return -1;
        m->blocks[p->spec.layer].q[p->spec.slot] = q; /* its w[] and masters' are NULL: gpt_new_except made none */
    } else { /* the token embedding: its blocks on the host */
        gpt_quantized *q = m->quant;
        q->embd_format = qformat_of(t->type);
        q->embd_row_bytes = (size_t)gguf_row_bytes(t->type, t->ne[0]);
        if (!(q->embd = malloc((size_t)t->nbytes))) return snprintf(err, errlen, "out of memory"), -1;
        memcpy(q->embd, t->data, (size_t)t->nbytes); /* m->wte is NULL, as above */
    }
    return 0;
}

/* 1 when the file holds weight s in blocks that the model keeps (gpt_keeps_quantized): the
 * model is then made without its f32 tensor, so that loading never holds both. */
static int stays_quantized(const gguf_file *f, const gpt_param_spec *s) {
    char name[96];
    int conv1d;
    if (!gpt_keeps_quantized(s) || gpt_gguf_name(s->name, name, sizeof name, &conv1d)) return 0;
    const gguf_tensor *t = gguf_find_tensor(f, name);
    return t && is_quantized(t->type);
}

/* gpt_new_except's `absent` for file f: which weights stay quantized (none unless keep_blocks;
 * malloc'd; NULL out of memory). */
static unsigned char *quantized_weights(const gguf_file *f, const gpt_config *cfg, int keep_blocks) {
    int n = gpt_param_specs(cfg, NULL);
    gpt_param_spec *specs = calloc((size_t)n, sizeof *specs);
    unsigned char *absent = calloc((size_t)n, 1);
    if (specs && absent) {
        gpt_param_specs(cfg, specs);
        for (int i = 0; i < n; i++) absent[i] = (unsigned char)(keep_blocks && stays_quantized(f, &specs[i]));
    } else {
        free(absent), absent = NULL;
    }
    free(specs);
    return absent;
}

/* The output head: output.weight, else the tied token_embd. kiln's GPT ties them, so an
 * output.weight of token_embd's type must be its copy (an untied model is refused); one of
 * another type is the same matrix quantized as llama.cpp's mixes quantize the head (Q6_K
 * beside a Q4_K embedding) and becomes the head. */
static int load_head(gpt_model *m, const gguf_file *f, const char *path, char *err, size_t errlen) {
    const gguf_tensor *embd = gguf_find_tensor(f, "token_embd.weight"), *out = gguf_find_tensor(f, "output.weight");
    int own = out && out->type != embd->type;
    if (out && !own && (out->nbytes != embd->nbytes || memcmp(out->data, embd->data, out->nbytes))) {
        snprintf(err, errlen, "%s: output.weight is not token_embd.weight: kiln's GPT ties its output head", path);
        return -1;
    }
    if (own && (out->ndim != 2 || out->ne[0] != embd->ne[0] || out->ne[1] != embd->ne[1]))
        return snprintf(err, errlen, "%s: output.weight is not token_embd.weight's shape", path), -1;
    char name[32];
    if (own && !is_quantized(out->type)) /* a float head beside another embedding */
        return snprintf(err, errlen, "%s: output.weight is %s beside a %s token_embd.weight: kiln reads a head in "
                        "blocks or tied", path, gguf_tensor_type_name(out->type, name, sizeof name),
                        gguf_tensor_type_name(embd->type, name + 16, 16)), -1;
    if (!own && !m->quant->embd) return 0; /* f32: the tied wte */
    return (m->quant->head = device_blocks(m->ctx, own ? out : embd, err, errlen)) ? 0 : -1;
}

/* A gpt2 architecture's model from f. */
static int load_gpt2(kiln_ctx *ctx, const gguf_file *f, const char *path, int keep_blocks, gpt_model **model,
                     char *err, size_t errlen) {
    uint64_t layers = 0, heads = 0, width = 0, positions = 0, ffn = 0;
    double eps = 0;
    const gguf_tensor *embd = gguf_find_tensor(f, "token_embd.weight");
    int rc = gguf_get_uint(f, "gpt2.block_count", &layers, err, errlen) ||
                     gguf_get_uint(f, "gpt2.attention.head_count", &heads, err, errlen) ||
                     gguf_get_uint(f, "gpt2.embedding_length", &width, err, errlen) ||
                     gguf_get_uint(f, "gpt2.context_length", &positions, err, errlen) ||
                     gguf_get_uint(f, "gpt2.feed_forward_length", &ffn, err, errlen) ||
                     gguf_get_float(f, "gpt2.attention.layer_norm_epsilon", &eps, err, errlen)
                 ? -1
                 : 0;
    if (rc == 0 && !embd) rc = (snprintf(err, errlen, "%s: no tensor token_embd.weight", path), -1);
    if (rc == 0 && (ffn != 4 * width || layers > 4096 || heads > 4096 || width > 65536 || positions > (1 << 20)))
        rc = (snprintf(err, errlen, "%s: gpt2 of %llu layers, width %llu, feed-forward %llu: kiln's GPT has a 4x "
                       "feed-forward and sane sizes", path, (unsigned long long)layers, (unsigned long long)width,
                       (unsigned long long)ffn), -1);
    gpt_config cfg = {.n_layer = (int)layers, .n_head = (int)heads, .n_embd = (int)width, .n_positions = (int)positions,
                      .vocab_size = embd && embd->ndim == 2 ? (int)embd->ne[1] : 0, .ln_eps = (float)eps,
                      .block = block_options_default()};
    if (rc == 0 && gpt_config_check(&cfg, err, errlen)) rc = -1;
    gpt_model *m = NULL;
    unsigned char *absent = rc == 0 ? quantized_weights(f, &cfg, keep_blocks) : NULL;
    if (rc == 0 && !absent) rc = (snprintf(err, errlen, "out of memory"), -1);
    if (rc == 0 && !(m = gpt_new_except(ctx, &cfg, absent)))
        rc = (snprintf(err, errlen, "%s: %s", path, kiln_error_message()), -1);
    free(absent);
    if (rc == 0 && keep_blocks && is_quantized(embd->type) && !(m->quant = calloc(1, sizeof *m->quant)))
        rc = (snprintf(err, errlen, "out of memory"), -1);
    if (rc == 0 && keep_blocks && !m->quant)
        for (size_t i = 0; i < gguf_tensor_count(f) && !m->quant; i++)
            if (is_quantized(gguf_tensor_at(f, i)->type) && !(m->quant = calloc(1, sizeof *m->quant)))
                rc = (snprintf(err, errlen, "out of memory"), -1);
    for (int i = 0; rc == 0 && i < m->n_params; i++) rc = load_weight(m, &m->params[i], f, path, err, errlen);
    if (rc == 0 && m->quant) rc = load_head(m, f, path, err, errlen);
    if (rc) {
        gpt_free(m);
        return -1;
    }
    *model = m;
    return 0;
}

int gpt_load_gguf(kiln_ctx *ctx, const char *path, gpt_model **model, tokenizer **tok, char *err, size_t errlen) {
    return gpt_load_gguf_as(ctx, path, KILN_F32, model, tok, err, errlen);
}

/* The file's model in dtype, its quantized matrices in blocks when keep_blocks, else dequantized. */
static int load_file(kiln_ctx *ctx, const char *path, kiln_dtype dtype, int keep_blocks, gpt_model **model,
                     tokenizer **tok, char *err, size_t errlen) {
    gguf_file *f;
    *model = NULL;
    *tok = NULL;
    if (gguf_open(path, &f, err, errlen)) return -1;
    const char *arch = NULL;
    int rc = gguf_get_string(f, "general.architecture", &arch, err, errlen), gpt2 = rc == 0 && !strcmp(arch, "gpt2");
    if (rc == 0 && gpt2) rc = load_gpt2(ctx, f, path, keep_blocks, model, err, errlen);
    else if (rc == 0) rc = gpt_load_gguf_llama(ctx, f, path, arch, dtype, keep_blocks, model, err, errlen);
    /* gpt2's reader builds f32 weights: converted after (its files are GPT-2 sized) */
    if (rc == 0 && gpt_set_precision(*model, dtype, 0))
        rc = (snprintf(err, errlen, "%s: %s", path, kiln_error_message()), -1);
    /* a gpt2 file carries its tokenizer; the Llama family's may leave it to --tokenizer */
    if (rc == 0 && (gpt2 || gguf_find_kv(f, "tokenizer.ggml.model")))
        rc = load_tokenizer(f, path, (*model)->cfg.vocab_size, tok, err, errlen);
    gguf_close(f);
    if (rc) {
        gpt_free(*model);
        *model = NULL;
        return -1;
    }
    return 0;
}

int gpt_load_gguf_as(kiln_ctx *ctx, const char *path, kiln_dtype dtype, gpt_model **model, tokenizer **tok, char *err,
                     size_t errlen) {
    return load_file(ctx, path, dtype, 1, model, tok, err, errlen);
}

int gpt_load_gguf_floats(kiln_ctx *ctx, const char *path, gpt_model **model, tokenizer **tok, char *err,
                         size_t errlen) {
    return load_file(ctx, path, KILN_F32, 0, model, tok, err, errlen);
}
