/* Encoder-decoder checkpoints (seq2seq_checkpoint.h). */
#include "model/seq2seq/seq2seq_checkpoint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/text_number.h"

#define N_INTS 8
static const char *const int_names[N_INTS] = {"enc_layers", "dec_layers", "n_head", "n_embd",
                                              "max_len", "src_vocab", "tgt_vocab", "shared_vocab"};
static int *int_slot(seq2seq_config *c, int i) {
    int *slots[N_INTS] = {&c->enc_layers, &c->dec_layers, &c->n_head, &c->n_embd,
                          &c->max_len, &c->src_vocab, &c->tgt_vocab, &c->shared_vocab};
    return slots[i];
}

static const char *meta_get(void *f, const char *key) { return st_meta(f, key); }

static int read_config(const st_file *f, const char *path, seq2seq_config *c, char *err, size_t errlen) {
    memset(c, 0, sizeof *c);
    const char *type = st_meta(f, "model_type");
    if (!type || strcmp(type, SEQ2SEQ_MODEL_TYPE)) {
        snprintf(err, errlen, "%s: not an encoder-decoder checkpoint (model_type \"%s\"%s)", path, type ? type : "",
                 type && !strcmp(type, "gpt2") ? ": a GPT" : "");
        return -1;
    }
    for (int i = 0; i < N_INTS; i++) {
        const char *s = st_meta(f, int_names[i]);
        int64_t v;
        if (!s) {
            snprintf(err, errlen, "%s: the metadata has no %s", path, int_names[i]);
            return -1;
        }
        if (text_to_int64(s, &v) || v < 0 || v > (1 << 24)) {
            snprintf(err, errlen, "%s: metadata %s = \"%s\" is not a whole number in range", path, int_names[i], s);
            return -1;
        }
        *int_slot(c, i) = (int)v;
    }
    double eps;
    const char *e = st_meta(f, "layer_norm_epsilon");
    if (!e || text_to_double(e, &eps)) {
        snprintf(err, errlen, "%s: metadata layer_norm_epsilon is %s", path, e ? "not a number" : "missing");
        return -1;
    }
    c->ln_eps = (float)eps;
    char why[256];
    if (block_options_from_meta(&c->block, meta_get, (void *)f, why, sizeof why) ||
        seq2seq_config_check(c, why, sizeof why)) {
        snprintf(err, errlen, "%s: %s", path, why);
        return -1;
    }
    return 0;
}

static int specs_of(const void *cfg, param_spec *out) { return seq2seq_param_specs(cfg, out); }
static void *build(kiln_ctx *ctx, const void *cfg) { return seq2seq_new(ctx, cfg); }
static model_param *params_of(void *m) { return ((seq2seq_model *)m)->params; }
static void free_model(void *m) { seq2seq_free(m); }

int seq2seq_checkpoint_load(kiln_ctx *ctx, const char *path, seq2seq_model **out, char *err, size_t errlen) {
    *out = NULL;
    st_file *f;
    if (st_open(path, &f, err, errlen)) return -1;
    seq2seq_config cfg;
    int rc = read_config(f, path, &cfg, err, errlen);
    if (rc == 0) {
        char config[160];
        snprintf(config, sizeof config, "enc_layers %d, dec_layers %d, n_embd %d, max_len %d, vocab %d/%d",
                 cfg.enc_layers, cfg.dec_layers, cfg.n_embd, cfg.max_len, cfg.src_vocab, cfg.tgt_vocab);
        model_loader l = {.cfg = &cfg, .specs = specs_of, .build = build, .params = params_of, .free = free_model,
                          .config = config};
        rc = model_checkpoint_build(f, path, ctx, &l, (void **)out, err, errlen);
    }
    st_close(f);
    return rc;
}

int seq2seq_checkpoint_save(const seq2seq_model *m, const char *path, const model_meta *extra, int n_extra,
                            char *err, size_t errlen) {
    seq2seq_config cfg = m->cfg;
    int64_t ints[N_INTS];
    for (int i = 0; i < N_INTS; i++) ints[i] = *int_slot(&cfg, i);
    model_checkpoint_config c = {.model_type = SEQ2SEQ_MODEL_TYPE, .int_names = int_names, .ints = ints,
                                 .n_ints = N_INTS, .eps_key = "layer_norm_epsilon", .ln_eps = cfg.ln_eps,
                                 .block = &cfg.block};
    return model_checkpoint_save(m->params, m->n_params + m->n_buffers, &c, extra, n_extra, path, err, errlen);
}
