/* GPT checkpoints: Hugging Face GPT-2's safetensors layout (see gpt_checkpoint.h). Every
 * check happens before the model is allocated, so a lying file (a config asking for a
 * billion layers, shapes that disagree with the config) costs nothing but a message. */
#include "model/gpt/gpt_checkpoint.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/json.h"
#include "formats/safetensors.h"
#include "formats/text_number.h"
#include "model/seq2seq/seq2seq.h"

#define CONFIG_JSON_MAX (1 << 20)

/* ---- config ---- */

/* GPT2Config's integer keys, all required, and where each goes. */
#define N_CONFIG_INTS 5
static const char *const config_int_names[N_CONFIG_INTS] = {"n_layer", "n_head", "n_embd",
                                                            "n_positions", "vocab_size"};
static int *config_int_slot(gpt_config *cfg, int i) {
    int *slots[N_CONFIG_INTS] = {&cfg->n_layer, &cfg->n_head, &cfg->n_embd, &cfg->n_positions,
                                 &cfg->vocab_size};
    return slots[i];
}

static int set_config_int(const char *src, const char *key, int64_t v, int *target, char *err,
                          size_t errlen) {
    if (v < 1 || v > INT32_MAX) {
        snprintf(err, errlen, "%s: %s = %lld is out of range", src, key, (long long)v);
        return -1;
    }
    *target = (int)v;
    return 0;
}

/* From the safetensors metadata (strings). Returns 1 when the metadata holds a config, 0
 * when it holds none of the keys, -1 on an error. */
static int config_from_meta(const st_file *f, const char *path, gpt_config *cfg, char *err,
                            size_t errlen) {
    int found = 0;
    for (int i = 0; i < N_CONFIG_INTS; i++)
        if (st_meta(f, config_int_names[i])) found++;
    if (!found) return 0;
    for (int i = 0; i < N_CONFIG_INTS; i++) {
        const char *key = config_int_names[i], *s = st_meta(f, key);
        int64_t v;
        if (!s) {
            snprintf(err, errlen, "%s: the metadata has a GPT-2 config but no %s", path, key);
            return -1;
        }
        if (text_to_int64(s, &v)) {
            snprintf(err, errlen, "%s: metadata %s = \"%s\" is not a whole number", path, key, s);
            return -1;
        }
        if (set_config_int(path, key, v, config_int_slot(cfg, i), err, errlen)) return -1;
    }
    const char *eps = st_meta(f, "layer_norm_epsilon");
    if (eps) {
        double v;
        if (text_to_double(eps, &v)) {
            snprintf(err, errlen, "%s: metadata layer_norm_epsilon = \"%s\" is not a number", path, eps);
            return -1;
        }
        cfg->ln_eps = (float)v;
    }
    return 1;
}

static char *read_small_file(const char *path, size_t *len, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    char *buf = malloc(CONFIG_JSON_MAX + 1);
    size_t n = buf ? fread(buf, 1, CONFIG_JSON_MAX + 1, f) : 0;
    int bad = !buf || ferror(f) || n > CONFIG_JSON_MAX;
    fclose(f);
    if (bad) {
        snprintf(err, errlen, "%s: %s", path, !buf ? "out of memory" : n > CONFIG_JSON_MAX ? "larger than 1 MiB" : "read error");
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

/* GPT-2 variants this model does not implement are refused rather than run wrongly. */
static int check_config_json_variant(const json_value *root, const char *path, char *err,
                                     size_t errlen) {
    const char *act = json_as_string(json_get(root, "activation_function"));
    if (act && strcmp(act, "gelu_new") && strcmp(act, "gelu_pytorch_tanh") && strcmp(act, "gelu_fast")) {
        snprintf(err, errlen, "%s: activation_function \"%s\" is not supported (kiln's GPT uses "
                 "GPT-2's tanh GELU, \"gelu_new\")", path, act);
        return -1;
    }
    int inv = 0;
    if (json_as_bool(json_get(root, "scale_attn_by_inverse_layer_idx"), &inv) && inv) {
        snprintf(err, errlen, "%s: scale_attn_by_inverse_layer_idx = true is not supported", path);
        return -1;
    }
    return 0;
}

/* From config.json in the checkpoint's directory (Hugging Face's GPT2Config). */
static int config_from_json(const char *ckpt_path, gpt_config *cfg, char *err, size_t errlen) {
    char path[4096];
    const char *slash = strrchr(ckpt_path, '/');
    int dir_len = slash ? (int)(slash - ckpt_path) : 1;
    snprintf(path, sizeof path, "%.*s/config.json", dir_len, slash ? ckpt_path : ".");
    FILE *probe = fopen(path, "rb");
    if (!probe) {
        snprintf(err, errlen, "%s: no GPT-2 config in the metadata (n_layer, n_head, n_embd, "
                 "n_positions, vocab_size) and no %s beside it", ckpt_path, path);
        return -1;
    }
    fclose(probe);
    size_t len;
    char *text = read_small_file(path, &len, err, errlen);
    if (!text) return -1;
    json_value *root;
    char jerr[256];
    int rc = json_parse(text, len, &root, jerr, sizeof jerr);
    free(text);
    if (rc) {
        snprintf(err, errlen, "%s: %s", path, jerr);
        return -1;
    }
    rc = -1;
    if (root->type != JSON_OBJECT) {
        snprintf(err, errlen, "%s: expected a JSON object", path);
        goto done;
    }
    for (int i = 0; i < N_CONFIG_INTS; i++) {
        const char *key = config_int_names[i];
        const json_value *v = json_get(root, key);
        if (!v && !strcmp(key, "n_positions")) v = json_get(root, "n_ctx"); /* old configs */
        int64_t x;
        if (!v) {
            snprintf(err, errlen, "%s: no \"%s\"", path, key);
            goto done;
        }
        if (!json_as_int64(v, &x)) {
            snprintf(err, errlen, "%s: \"%s\" must be a whole number", path, key);
            goto done;
        }
        if (set_config_int(path, key, x, config_int_slot(cfg, i), err, errlen)) goto done;
    }
    const json_value *eps = json_get(root, "layer_norm_epsilon");
    if (eps) {
        double x;
        if (!json_as_double(eps, &x)) {
            snprintf(err, errlen, "%s: \"layer_norm_epsilon\" must be a number", path);
            goto done;
        }
        cfg->ln_eps = (float)x;
    }
    rc = check_config_json_variant(root, path, err, errlen);
done:
    json_free(root);
    return rc;
}

static const char *meta_get(void *f, const char *key) { return st_meta(f, key); }


static int read_config(const st_file *f, const char *path, gpt_config *cfg, char *err,
                       size_t errlen) {
    memset(cfg, 0, sizeof *cfg);
    cfg->ln_eps = GPT_DEFAULT_LN_EPS;
    const char *type = st_meta(f, "model_type");
    if (type && strcmp(type, "gpt2")) {
        snprintf(err, errlen, "%s: a %s checkpoint, not a GPT (model_type \"%s\")", path,
                 !strcmp(type, SEQ2SEQ_MODEL_TYPE) ? "seq2seq (encoder-decoder)" : !strcmp(type, "bert") ? "BERT" : "non-GPT", type);
        return -1;
    }
    int rc = config_from_meta(f, path, cfg, err, errlen);
    if (rc < 0) return -1;
    if (rc == 0 && config_from_json(path, cfg, err, errlen)) return -1;
    char why[256];
    if (block_options_from_meta(&cfg->block, meta_get, (void *)f, why, sizeof why) ||
        gpt_config_from_meta(cfg, meta_get, (void *)f, why, sizeof why)) {
        snprintf(err, errlen, "%s: %s", path, why);
        return -1;
    }
    if (gpt_config_check(cfg, why, sizeof why)) {
        snprintf(err, errlen, "%s: %s", path, why);
        return -1;
    }
    return 0;
}

/* ---- names ---- */

/* HF GPT-2 buffers that are not weights: the causal mask and its fill value. */
static int is_ignored_buffer(const char *name) {
    int layer, end = 0;
    if (sscanf(name, "h.%d.attn.bias%n", &layer, &end) == 1 && end && !name[end]) return 1;
    end = 0;
    if (sscanf(name, "h.%d.attn.masked_bias%n", &layer, &end) == 1 && end && !name[end]) return 1;
    return 0;
}

/* The name a file tensor stands for: HF's "transformer." prefix dropped; NULL for HF's
 * buffers. */
static const char *gpt_name_untied(const char *file_name) {
    static const char prefix[] = "transformer.";
    const char *name = strncmp(file_name, prefix, sizeof prefix - 1) ? file_name : file_name + sizeof prefix - 1;
    return is_ignored_buffer(name) ? NULL : name;
}

/* The same for a tied model, whose HF file may hold lm_head.weight: wte itself. */
static const char *gpt_name(const char *file_name) {
    return strcmp(file_name, "lm_head.weight") ? gpt_name_untied(file_name) : NULL;
}

static int specs_of(const void *cfg, param_spec *out) { return gpt_param_specs(cfg, out); }
static void *build(kiln_ctx *ctx, const void *cfg) { return gpt_new(ctx, cfg); }
static model_param *params_of(void *m) { return ((gpt_model *)m)->params; }
static void free_model(void *m) { gpt_free(m); }

int gpt_checkpoint_load(kiln_ctx *ctx, const char *path, gpt_model **out, char *err,
                        size_t errlen) {
    *out = NULL;
    st_file *f;
    if (st_open(path, &f, err, errlen)) return -1;
    gpt_config cfg;
    int rc = read_config(f, path, &cfg, err, errlen);
    if (rc == 0) {
        char config[160];
        snprintf(config, sizeof config, "n_layer %d, n_embd %d, n_positions %d, vocab_size %d", cfg.n_layer,
                 cfg.n_embd, cfg.n_positions, cfg.vocab_size);
        model_loader l = {.cfg = &cfg, .specs = specs_of, .build = build, .params = params_of, .free = free_model,
                          .canonical = cfg.untied ? gpt_name_untied : gpt_name, .config = config};
        rc = model_checkpoint_build(f, path, ctx, &l, (void **)out, err, errlen);
    }
    st_close(f);
    return rc;
}

/* The config's Llama-family keys, collected for the writer (gpt_config_to_meta writes only
 * those that are not GPT-2's: a GPT-2 checkpoint's metadata is what it always was). */
typedef struct llama_keys {
    model_meta meta[8];
    char values[8][32];
    int n;
} llama_keys;

static void collect(void *ctx, const char *key, const char *value) {
    llama_keys *k = ctx;
    if (k->n >= 8) return;
    snprintf(k->values[k->n], sizeof k->values[k->n], "%s", value);
    k->meta[k->n] = (model_meta){.key = key, .value = k->values[k->n]};
    k->n++;
}

int gpt_checkpoint_save(const gpt_model *m, const char *path, const gpt_meta *extra,
                        int n_extra, char *err, size_t errlen) {
    gpt_config cfg = m->cfg;
    int64_t ints[N_CONFIG_INTS];
    for (int i = 0; i < N_CONFIG_INTS; i++) ints[i] = *config_int_slot(&cfg, i);
    llama_keys keys = {.n = 0};
    gpt_config_to_meta(&cfg, collect, &keys);
    model_checkpoint_config c = {.model_type = "gpt2", .int_names = config_int_names, .ints = ints,
                                 .n_ints = N_CONFIG_INTS, .eps_key = "layer_norm_epsilon", .ln_eps = cfg.ln_eps,
                                 .fixed = keys.meta, .n_fixed = keys.n, .block = &cfg.block};
    return model_checkpoint_save(m->params, m->n_params + m->n_buffers, &c, extra, n_extra, path, err, errlen);
}
