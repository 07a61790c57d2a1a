/* BERT checkpoints in Hugging Face's layout (bert_checkpoint.h). */
#define _POSIX_C_SOURCE 200809L
#include "model/bert/bert_checkpoint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/text_number.h"
#include "kiln/file.h"

/* ---- the layout mapping ---- */

/* A block tensor's name after "bert.encoder.layer.<l>.": "attn.c_attn.weight". */
static const char *block_suffix(const param_spec *s) {
    const char *p = s->name + strlen(BERT_BLOCK_PREFIX);
    while (*p >= '0' && *p <= '9') p++;
    return *p == '.' ? p + 1 : p;
}

static void set_piece(bert_piece *p, int param, bert_piece_kind kind, int part, int ndim, int64_t d0, int64_t d1,
                      const char *fmt_layer_prefix, int layer, const char *stem) {
    p->param = param;
    p->kind = kind;
    p->part = part;
    p->ndim = ndim;
    p->shape[0] = d0;
    p->shape[1] = d1;
    snprintf(p->name, sizeof p->name, "%s%d.%s", fmt_layer_prefix, layer, stem);
}

/* The Hugging Face pieces of one block tensor; 0 when it has no Hugging Face counterpart. */
static int hf_block_pieces(const bert_config *cfg, const param_spec *s, int param, bert_piece *out) {
    if (cfg->block.layer != BLOCK_LAYER_TRANSFORMER) return 0;
    static const char *const qkv[3] = {"query", "key", "value"};
    int64_t C = cfg->n_embd;
    const char *pre = BERT_BLOCK_PREFIX;
    char stem[96];
    int l = s->layer;
    switch (s->slot) {
    case BLOCK_QKV_W:
    case BLOCK_QKV_B:
        for (int k = 0; k < 3; k++) {
            int w = s->slot == BLOCK_QKV_W;
            snprintf(stem, sizeof stem, "attention.self.%s.%s", qkv[k], w ? "weight" : "bias");
            if (out) set_piece(&out[k], param, w ? BERT_PIECE_LINEAR : BERT_PIECE_SLICE, k, w ? 2 : 1, C, w ? C : 1,
                               pre, l, stem);
        }
        return 3;
    default: break;
    }
    static const struct { int slot; const char *stem; int linear; } map[] = {
        {BLOCK_LN1_W, "attention.output.LayerNorm.weight", 0}, {BLOCK_LN1_B, "attention.output.LayerNorm.bias", 0},
        {BLOCK_ATTN_PROJ_W, "attention.output.dense.weight", 1}, {BLOCK_ATTN_PROJ_B, "attention.output.dense.bias", 0},
        {BLOCK_LN2_W, "output.LayerNorm.weight", 0},             {BLOCK_LN2_B, "output.LayerNorm.bias", 0},
        {BLOCK_FC_W, "intermediate.dense.weight", 1},            {BLOCK_FC_B, "intermediate.dense.bias", 0},
        {BLOCK_MLP_PROJ_W, "output.dense.weight", 1},            {BLOCK_MLP_PROJ_B, "output.dense.bias", 0},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
        if (map[i].slot != s->slot) continue;
        if (out) {
            if (map[i].linear)
                set_piece(out, param, BERT_PIECE_LINEAR, 0, 2, s->shape[1], s->shape[0], pre, l, map[i].stem);
            else
                set_piece(out, param, BERT_PIECE_COPY, 0, s->ndim, s->shape[0], s->shape[1], pre, l, map[i].stem);
        }
        return 1;
    }
    return 0;
}

int bert_hf_pieces(const bert_config *cfg, const param_spec *specs, int n, bert_piece *out) {
    int count = 0;
    for (int i = 0; i < n; i++) {
        const param_spec *s = &specs[i];
        bert_piece *p = out ? out + count : NULL;
        if (s->layer < 0) {
            if (p) {
                *p = (bert_piece){.param = i, .kind = BERT_PIECE_COPY, .ndim = s->ndim,
                                  .shape = {s->shape[0], s->shape[1]}};
                snprintf(p->name, sizeof p->name, "%s", s->name);
            }
            count++;
            continue;
        }
        int k = hf_block_pieces(cfg, s, i, p);
        if (k == 0) {
            /* what BERT lacks keeps kiln's name, under "kiln." */
            if (p) {
                *p = (bert_piece){.param = i, .kind = BERT_PIECE_COPY, .ndim = s->ndim,
                                  .shape = {s->shape[0], s->shape[1]}};
                snprintf(p->name, sizeof p->name, "%s%d.kiln.%s", BERT_BLOCK_PREFIX, s->layer, block_suffix(s));
            }
            k = 1;
        }
        count += k;
    }
    return count;
}

static int64_t piece_numel(const bert_piece *p) { return p->shape[0] * (p->ndim > 1 ? p->shape[1] : 1); }

/* Moves elements between a tensor and a piece: to_piece 1 exports, 0 imports. */
static void convert(const bert_piece *p, const param_spec *spec, float *tensor, float *piece, int to_piece) {
    int64_t n = piece_numel(p);
    if (p->kind == BERT_PIECE_COPY || p->kind == BERT_PIECE_SLICE) {
        float *t = tensor + (p->kind == BERT_PIECE_SLICE ? (int64_t)p->part * n : 0);
        if (to_piece)
            memcpy(piece, t, (size_t)n * sizeof *piece);
        else
            memcpy(t, piece, (size_t)n * sizeof *piece);
        return;
    }
    /* LINEAR: piece[o][i] = tensor[i][part w + o], tensor [in, out], piece [w, in] */
    int64_t in = spec->shape[0], out = spec->shape[1], w = p->shape[0];
    for (int64_t o = 0; o < w; o++) {
        for (int64_t i = 0; i < in; i++) {
            float *t = &tensor[i * out + (int64_t)p->part * w + o];
            if (to_piece)
                piece[o * in + i] = *t;
            else
                *t = piece[o * in + i];
        }
    }
}

void bert_piece_export(const bert_piece *p, const param_spec *spec, const float *tensor, float *piece) {
    convert(p, spec, (float *)tensor, piece, 1);
}

void bert_piece_import(const bert_piece *p, const param_spec *spec, const float *piece, float *tensor) {
    convert(p, spec, tensor, (float *)piece, 0);
}

int bert_hf_add(const bert_model *m, int grads, const char *prefix, st_writer *w, char *err, size_t errlen) {
    int n = grads ? m->n_params : m->n_params + m->n_buffers;
    param_spec *specs = calloc((size_t)n, sizeof *specs);
    int count = 0, rc = -1;
    bert_piece *pieces = NULL;
    float *tensor = NULL, *piece = NULL;
    if (!specs) goto oom;
    for (int i = 0; i < n; i++) specs[i] = m->params[i].spec;
    count = bert_hf_pieces(&m->cfg, specs, n, NULL);
    if (!(pieces = calloc((size_t)count, sizeof *pieces))) goto oom;
    bert_hf_pieces(&m->cfg, specs, n, pieces);
    for (int k = 0, loaded = -1; k < count; k++) {
        const bert_piece *p = &pieces[k];
        const kiln_tensor *t = grads ? kiln_grad(m->params[p->param].t) : m->params[p->param].t;
        int64_t numel = kiln_numel(m->params[p->param].t), pn = piece_numel(p);
        if (p->param != loaded) {
            float *grown = realloc(tensor, (size_t)numel * sizeof *grown);
            if (!grown) goto oom;
            tensor = grown;
            if (!t || kiln_download_f32(t, tensor, numel)) {
                snprintf(err, errlen, "reading %s%s from the device: %s", grads ? "the gradient of " : "",
                         specs[p->param].name, t ? kiln_error_message() : "none");
                goto done;
            }
            loaded = p->param;
        }
        float *grown = realloc(piece, (size_t)pn * sizeof *grown);
        if (!grown) goto oom;
        piece = grown;
        bert_piece_export(p, &specs[p->param], tensor, piece);
        char name[200];
        snprintf(name, sizeof name, "%s%s", prefix, p->name);
        if (st_writer_add(w, name, "F32", p->ndim, p->shape, piece, (size_t)pn * sizeof *piece)) {
            snprintf(err, errlen, "%s", st_writer_error(w));
            goto done;
        }
    }
    rc = 0;
    goto done;
oom:
    snprintf(err, errlen, "out of host memory");
done:
    free(specs);
    free(pieces);
    free(tensor);
    free(piece);
    return rc;
}

/* ---- the config in the metadata ---- */

#define N_INTS 7
static const char *const int_names[N_INTS] = {"vocab_size", "hidden_size", "num_hidden_layers",
                                              "num_attention_heads", "intermediate_size",
                                              "max_position_embeddings", "type_vocab_size"};

static void config_ints(const bert_config *c, int64_t v[N_INTS]) {
    v[0] = c->vocab_size;
    v[1] = c->n_embd;
    v[2] = c->n_layer;
    v[3] = c->n_head;
    v[4] = 4 * (int64_t)c->n_embd;
    v[5] = c->max_len;
    v[6] = BERT_TYPE_VOCAB;
}

/* kiln's GELU is the tanh approximation: Hugging Face calls it gelu_new (or gelu_pytorch_tanh) */
#define BERT_HIDDEN_ACT "gelu_new"

static const char *meta_get(void *f, const char *key) { return st_meta(f, key); }

static int read_config(const st_file *f, const char *path, bert_config *c, char *err, size_t errlen) {
    memset(c, 0, sizeof *c);
    const char *type = st_meta(f, "model_type");
    if (!type || strcmp(type, BERT_MODEL_TYPE)) {
        snprintf(err, errlen, "%s: not a BERT checkpoint (model_type \"%s\"%s)", path, type ? type : "",
                 type && !strcmp(type, "gpt2") ? ": a GPT" : "");
        return -1;
    }
    int64_t v[N_INTS];
    for (int i = 0; i < N_INTS; i++) {
        const char *s = st_meta(f, int_names[i]);
        if (!s) {
            snprintf(err, errlen, "%s: the metadata has no %s", path, int_names[i]);
            return -1;
        }
        if (text_to_int64(s, &v[i]) || v[i] < 0 || v[i] > (1 << 24)) {
            snprintf(err, errlen, "%s: metadata %s = \"%s\" is not a whole number in range", path, int_names[i], s);
            return -1;
        }
    }
    c->vocab_size = (int)v[0];
    c->n_embd = (int)v[1];
    c->n_layer = (int)v[2];
    c->n_head = (int)v[3];
    c->max_len = (int)v[5];
    if (v[4] != 4 * v[1]) {
        snprintf(err, errlen, "%s: intermediate_size %lld is not 4 x hidden_size (%lld), kiln's MLP width", path,
                 (long long)v[4], (long long)(4 * v[1]));
        return -1;
    }
    if (v[6] != BERT_TYPE_VOCAB) {
        snprintf(err, errlen, "%s: type_vocab_size %lld; kiln's BERT has %d token types", path, (long long)v[6],
                 BERT_TYPE_VOCAB);
        return -1;
    }
    const char *act = st_meta(f, "hidden_act");
    if (act && strcmp(act, BERT_HIDDEN_ACT) && strcmp(act, "gelu_pytorch_tanh")) {
        snprintf(err, errlen, "%s: hidden_act \"%s\": kiln's GELU is the tanh approximation (gelu_new)", path, act);
        return -1;
    }
    double eps;
    const char *e = st_meta(f, "layer_norm_eps");
    if (!e || text_to_double(e, &eps)) {
        snprintf(err, errlen, "%s: metadata layer_norm_eps is %s", path, e ? "not a number" : "missing");
        return -1;
    }
    c->ln_eps = (float)eps;
    char why[256];
    if (block_options_from_meta(&c->block, meta_get, (void *)f, why, sizeof why) ||
        bert_config_check(c, why, sizeof why)) {
        snprintf(err, errlen, "%s: %s", path, why);
        return -1;
    }
    return 0;
}

/* Tensors a Hugging Face BertForMaskedLM file may hold that the model does not keep. */
static const char *canonical(const char *name) {
    if (!strcmp(name, "cls.predictions.decoder.weight") || !strcmp(name, "cls.predictions.decoder.bias") ||
        !strcmp(name, "bert.embeddings.position_ids"))
        return NULL;
    return name;
}

/* The checkpoint's tensors as Hugging Face lays them out: the pieces each parameter is cut
 * into, and their specs for matching. */
typedef struct hf_layout {
    param_spec *specs, *piece_specs;
    bert_piece *pieces;
    int n, count;
} hf_layout;

static void hf_layout_free(hf_layout *l) {
    free(l->specs);
    free(l->piece_specs);
    free(l->pieces);
}

static int hf_layout_init(const bert_config *cfg, const char *path, hf_layout *l, char *err, size_t errlen) {
    l->n = bert_param_specs(cfg, NULL);
    if (!(l->specs = calloc((size_t)l->n, sizeof *l->specs))) goto oom;
    bert_param_specs(cfg, l->specs);
    l->count = bert_hf_pieces(cfg, l->specs, l->n, NULL);
    l->pieces = calloc((size_t)l->count, sizeof *l->pieces);
    l->piece_specs = calloc((size_t)l->count, sizeof *l->piece_specs);
    if (!l->pieces || !l->piece_specs) goto oom;
    bert_hf_pieces(cfg, l->specs, l->n, l->pieces);
    for (int k = 0; k < l->count; k++) {
        const bert_piece *p = &l->pieces[k];
        l->piece_specs[k] = (param_spec){.ndim = p->ndim, .shape = {p->shape[0], p->shape[1]}};
        size_t len = strlen(p->name);
        if (len >= sizeof l->piece_specs[k].name) {
            snprintf(err, errlen, "%s: tensor name %s is too long", path, p->name);
            return -1;
        }
        memcpy(l->piece_specs[k].name, p->name, len + 1);
    }
    return 0;
oom:
    snprintf(err, errlen, "out of host memory");
    return -1;
}

/* Parameter `param` from its matched pieces k.. (advancing *k past them), converted to the
 * block's layout in tensor and uploaded; piece is scratch. */
static int read_param(bert_model *m, const hf_layout *l, const st_tensor **match, int *k, float *tensor,
                      float **piece, const char *path, char *err, size_t errlen) {
    int param = l->pieces[*k].param;
    for (; *k < l->count && l->pieces[*k].param == param; (*k)++) {
        const st_tensor *t = match[*k];
        float *grown = realloc(*piece, (size_t)(t->numel > 0 ? t->numel : 1) * sizeof *grown);
        if (!grown) {
            snprintf(err, errlen, "out of host memory");
            return -1;
        }
        *piece = grown;
        if (st_read_f32(t, *piece, (size_t)t->numel)) {
            snprintf(err, errlen, "%s: cannot read %s", path, t->name);
            return -1;
        }
        bert_piece_import(&l->pieces[*k], &l->specs[param], *piece, tensor);
    }
    if (kiln_upload_f32(m->params[param].t, tensor, kiln_numel(m->params[param].t))) {
        snprintf(err, errlen, "%s: cannot load %s: %s", path, l->specs[param].name, kiln_error_message());
        return -1;
    }
    return 0;
}

/* Every parameter from the matched pieces. */
static int read_params(bert_model *m, const hf_layout *l, const st_tensor **match, const char *path, char *err,
                       size_t errlen) {
    float *tensor = NULL, *piece = NULL;
    int rc = 0;
    for (int k = 0; k < l->count && rc == 0;) {
        float *grown = realloc(tensor, (size_t)kiln_numel(m->params[l->pieces[k].param].t) * sizeof *grown);
        if (!grown) {
            snprintf(err, errlen, "out of host memory");
            rc = -1;
            break;
        }
        tensor = grown;
        rc = read_param(m, l, match, &k, tensor, &piece, path, err, errlen);
    }
    free(tensor);
    free(piece);
    return rc;
}

/* kiln ties the decoder to the word embeddings: a checkpoint's own must have their shape. */
static int check_tied(const st_file *f, const bert_config *cfg, const char *path, char *err, size_t errlen) {
    const st_tensor *tied = st_find(f, "cls.predictions.decoder.weight");
    if (tied && (tied->ndim != 2 || tied->shape[0] != cfg->vocab_size || tied->shape[1] != cfg->n_embd)) {
        snprintf(err, errlen, "%s: cls.predictions.decoder.weight is not [%d, %d]: kiln ties it to the word embeddings",
                 path, cfg->vocab_size, cfg->n_embd);
        return -1;
    }
    return 0;
}

int bert_checkpoint_load(kiln_ctx *ctx, const char *path, bert_model **out, char *err, size_t errlen) {
    *out = NULL;
    st_file *f;
    if (st_open(path, &f, err, errlen)) return -1;
    int rc = -1;
    bert_config cfg;
    bert_model *m = NULL;
    hf_layout l = {0};
    const st_tensor **match = NULL;
    if (read_config(f, path, &cfg, err, errlen) || hf_layout_init(&cfg, path, &l, err, errlen)) goto done;
    if (!(match = calloc((size_t)l.count, sizeof *match))) {
        snprintf(err, errlen, "out of host memory");
        goto done;
    }
    if (check_tied(f, &cfg, path, err, errlen)) goto done;
    char config[160];
    snprintf(config, sizeof config, "num_hidden_layers %d, hidden_size %d, max_position_embeddings %d, vocab_size %d",
             cfg.n_layer, cfg.n_embd, cfg.max_len, cfg.vocab_size);
    if (model_checkpoint_match(f, path, canonical, l.piece_specs, l.count, config, match, err, errlen)) goto done;
    if (!(m = bert_new(ctx, &cfg))) {
        snprintf(err, errlen, "%s: cannot allocate the model: %s", path, kiln_error_message());
        goto done;
    }
    if (read_params(m, &l, match, path, err, errlen)) goto done;
    *out = m;
    m = NULL;
    rc = 0;
done:
    bert_free(m);
    free(match);
    hf_layout_free(&l);
    st_close(f);
    return rc;
}

int bert_checkpoint_save(const bert_model *m, const char *path, const model_meta *extra, int n_extra, char *err,
                         size_t errlen) {
    int64_t ints[N_INTS];
    config_ints(&m->cfg, ints);
    const model_meta act = {.key = "hidden_act", .value = BERT_HIDDEN_ACT};
    model_checkpoint_config c = {.model_type = BERT_MODEL_TYPE, .int_names = int_names, .ints = ints,
                                 .n_ints = N_INTS, .eps_key = "layer_norm_eps", .ln_eps = m->cfg.ln_eps,
                                 .fixed = &act, .n_fixed = 1, .block = &m->cfg.block};
    st_writer *w = model_checkpoint_writer(&c, extra, n_extra, path, err, errlen);
    if (!w) return -1;
    char why[512];
    int rc = bert_hf_add(m, 0, "", w, why, sizeof why);
    if (rc)
        snprintf(err, errlen, "%s: %s", path, why);
    else
        rc = st_writer_save(w, path, err, errlen);
    st_writer_free(w);
    return rc;
}

static void json_put(void *file, const char *key, const char *value) {
    /* the block options' names and values are plain ASCII words and numbers */
    fprintf(file, ",\n  \"%s\": \"%s\"", key, value);
}

int bert_write_hf_config(const bert_model *m, const char *path, char *err, size_t errlen) {
    kiln_file *file = kiln_file_begin(path, err, errlen);
    if (!file) return -1;
    FILE *f = kiln_file_stream(file);
    int64_t v[N_INTS];
    config_ints(&m->cfg, v);
    fprintf(f, "{\n  \"architectures\": [\"BertForMaskedLM\"],\n  \"model_type\": \"%s\"", BERT_MODEL_TYPE);
    for (int i = 0; i < N_INTS; i++) fprintf(f, ",\n  \"%s\": %lld", int_names[i], (long long)v[i]);
    fprintf(f, ",\n  \"layer_norm_eps\": %.9g,\n  \"hidden_act\": \"%s\",\n  \"initializer_range\": 0.02,\n"
               "  \"position_embedding_type\": \"absolute\",\n  \"tie_word_embeddings\": true",
            (double)m->cfg.ln_eps, BERT_HIDDEN_ACT);
    block_options_to_meta(&m->cfg.block, json_put, f);
    fprintf(f, "\n}\n");
    return kiln_file_commit(file, err, errlen) == KILN_OK ? 0 : -1;
}
