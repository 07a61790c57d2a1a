/* A GPT from a Hugging Face folder (gpt_hf.h). */
#include "model/gpt/gpt_hf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/file_open.h"
#include "formats/json.h"
#include "formats/safetensors.h"
#include "model/gpt/gpt_import.h"
#include "model/gpt/gpt_names.h"

/* model.safetensors.index.json is a few MiB at most (one line per tensor) */
#define INDEX_MAX (64 << 20)

int gpt_hf_is_folder(const char *path) {
    struct stat sb;
    size_t n = strlen(path);
    if (n >= 11 && !strcmp(path + n - 11, "config.json") && (n == 11 || path[n - 12] == '/')) return 1;
    if (stat(path, &sb) || !S_ISDIR(sb.st_mode)) return 0;
    char config[4096];
    snprintf(config, sizeof config, "%s/config.json", path);
    return stat(config, &sb) == 0;
}

void gpt_hf_dir(const char *path, char *dir, size_t size) {
    size_t n = strlen(path);
    if (n >= 11 && !strcmp(path + n - 11, "config.json")) n -= 11;
    while (n > 1 && path[n - 1] == '/') n--;
    snprintf(dir, size, "%.*s", n ? (int)n : 1, n ? path : ".");
}

/* ---- config ---- */

static int llama_family(const hf_config *hf, gpt_config *cfg, char *err, size_t errlen) {
    if (hf->o_bias || (hf->arch == HF_ARCH_QWEN3 && hf->attention_bias)) {
        snprintf(err, errlen, "attention_bias = true (a bias on o_proj) is not supported");
        return -1;
    }
    block_options *o = &cfg->block;
    o->norm_type = BLOCK_NORM_TYPE_RMSNORM;
    o->mlp = BLOCK_MLP_SWIGLU;
    o->bias = hf->attention_bias ? BLOCK_BIAS_QKV : BLOCK_BIAS_NONE;
    o->qk_norm = hf->arch == HF_ARCH_QWEN3;
    o->rope = 1;
    o->rope_base = (float)hf->rope_theta;
    o->rope_layout = 1; /* KILN_ROPE_HALF: HF's rotate_half, whatever the family */
    cfg->n_kv_head = (int)hf->n_kv_head;
    cfg->head_dim = (int)hf->head_dim;
    cfg->n_ffn = (int)hf->n_ffn;
    cfg->untied = !hf->tied;
    cfg->position = GPT_POSITION_ROPE;
    cfg->rope_freqs = hf->scaled;
    return 0;
}

int gpt_config_from_hf(const hf_config *hf, gpt_config *cfg, char *err, size_t errlen) {
    memset(cfg, 0, sizeof *cfg);
    cfg->n_layer = (int)hf->n_layer;
    cfg->n_head = (int)hf->n_head;
    cfg->n_embd = (int)hf->n_embd;
    cfg->n_positions = (int)hf->n_positions;
    cfg->vocab_size = (int)hf->vocab_size;
    cfg->ln_eps = (float)hf->norm_eps;
    cfg->block = block_options_default();
    if (hf->arch == HF_ARCH_GPT2) {
        if (hf->n_ffn != 4 * hf->n_embd)
            return snprintf(err, errlen, "n_inner = %lld: kiln's GPT-2 has a 4 x n_embd MLP", (long long)hf->n_ffn), -1;
        if (!hf->tied) return snprintf(err, errlen, "tie_word_embeddings = false is not supported for GPT-2"), -1;
    } else if (llama_family(hf, cfg, err, errlen)) {
        return -1;
    }
    return gpt_config_check(cfg, err, errlen);
}

/* ---- the folder's tensors ---- */

typedef struct hf_files {
    st_file **shards;
    int n_shards;
    import_tensor *t;
    size_t n;
} hf_files;

static void hf_files_close(hf_files *h) {
    for (int i = 0; i < h->n_shards; i++) st_close(h->shards[i]);
    free(h->shards);
    free(h->t);
    memset(h, 0, sizeof *h);
}

static void drop_st(const void *owner, const void *p, size_t n) { st_drop(owner, p, n); }

/* Every tensor of one shard into h->t (a name in two shards is an error). */
static int add_shard(hf_files *h, const char *path, char *err, size_t errlen) {
    st_file *f;
    if (st_open(path, &f, err, errlen)) return -1;
    h->shards[h->n_shards++] = f;
    import_tensor *grown = realloc(h->t, (h->n + st_count(f)) * sizeof *grown + 1);
    if (!grown) return snprintf(err, errlen, "%s: out of memory", path), -1;
    h->t = grown;
    for (size_t i = 0; i < st_count(f); i++) {
        const st_tensor *s = st_tensor_at(f, i);
        import_dtype d = s->dtype == ST_F32 ? IMPORT_F32 : s->dtype == ST_F16 ? IMPORT_F16
                       : s->dtype == ST_BF16 ? IMPORT_BF16 : IMPORT_DTYPE_COUNT;
        if (d == IMPORT_DTYPE_COUNT) continue; /* not a weight kiln reads (an integer buffer) */
        for (size_t k = 0; k < h->n; k++)
            if (!strcmp(h->t[k].name, s->name))
                return snprintf(err, errlen, "%s: tensor %s is in two shards", path, s->name), -1;
        int64_t cols = 1;
        for (int d2 = 1; d2 < s->ndim; d2++) cols *= s->shape[d2];
        h->t[h->n++] = (import_tensor){.name = s->name, .dtype = d, .ndim = s->ndim, .rows = s->ndim ? s->shape[0] : 1,
                                       .cols = cols, .data = s->data, .nbytes = s->nbytes, .drop = drop_st, .owner = f};
    }
    return 0;
}

/* The shards model.safetensors.index.json's weight_map names, each once, from the folder. */
static int add_indexed(hf_files *h, const char *dir, const char *index, char *err, size_t errlen) {
    char *text, path[4096 + 256];
    size_t len;
    json_value *root = NULL;
    char jerr[160];
    if (file_read_all(index, "model.safetensors.index.json", &text, &len, err, errlen)) return -1;
    int rc = len > INDEX_MAX || json_parse(text, len, &root, jerr, sizeof jerr) ? -1 : 0;
    free(text);
    if (rc) return snprintf(err, errlen, "%s: %s", index, len > INDEX_MAX ? "too large" : jerr), -1;
    const json_value *map = json_get(root, "weight_map");
    size_t n = json_count(map);
    if (!map || map->type != JSON_OBJECT || !n) rc = (snprintf(err, errlen, "%s: no weight_map", index), -1);
    if (rc == 0 && !(h->shards = calloc(n, sizeof *h->shards))) rc = (snprintf(err, errlen, "out of memory"), -1);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const char *file = json_as_string(json_at(map, i));
        int seen = 0;
        for (size_t k = 0; k < i && !seen; k++) seen = !strcmp(file ? file : "", json_as_string(json_at(map, k)));
        if (!file || !*file || strchr(file, '/'))
            rc = (snprintf(err, errlen, "%s: weight_map's %s is not a file of the folder", index, json_key_at(map, i)), -1);
        else if (!seen && snprintf(path, sizeof path, "%s/%.255s", dir, file) > 0)
            rc = add_shard(h, path, err, errlen);
    }
    json_free(root);
    return rc;
}

static int hf_files_open(hf_files *h, const char *dir, char *err, size_t errlen) {
    char path[4096 + 64];
    struct stat sb;
    memset(h, 0, sizeof *h);
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    if (stat(path, &sb) == 0) return add_indexed(h, dir, path, err, errlen);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (!(h->shards = calloc(1, sizeof *h->shards))) return snprintf(err, errlen, "out of memory"), -1;
    return add_shard(h, path, err, errlen);
}

/* ---- the model ---- */

int gpt_hf_rope_scaling(const hf_config *hf, gpt_rope_llama3 *out) {
    if (!hf->scaled) return 1;
    *out = (gpt_rope_llama3){hf->rope_factor, hf->rope_low_freq_factor, hf->rope_high_freq_factor,
                             (double)hf->rope_original_max_positions};
    return 0;
}

/* Llama 3's rope scaling: rope.freqs from the config. */
static int set_rope_freqs(gpt_model *m, const hf_config *hf, char *err, size_t errlen) {
    gpt_param *p = gpt_find_param(m, "rope.freqs");
    if (!p) return 0;
    gpt_rope_llama3 s;
    gpt_hf_rope_scaling(hf, &s);
    int64_t n = p->spec.shape[0];
    float *f = malloc((size_t)n * sizeof *f);
    int rc = !f ? (snprintf(err, errlen, "out of memory"), -1)
                : gpt_rope_llama3_freqs(&s, (int)(2 * n), hf->rope_theta, f, err, errlen);
    if (rc == 0 && kiln_upload_f32(p->t, f, n)) rc = (snprintf(err, errlen, "rope.freqs: %s", kiln_error_message()), -1);
    free(f);
    return rc;
}

static int build(kiln_ctx *ctx, const char *dir, const hf_config *hf, const gpt_config *cfg, const hf_files *h,
                 kiln_dtype dtype, gpt_model **out, char *err, size_t errlen) {
    gpt_names names = gpt_names_for(hf->arch == HF_ARCH_GPT2 ? GPT_NAMES_HF_GPT2 : GPT_NAMES_HF, cfg);
    import_source src = {.tensors = h->t, .count = h->n, .path = dir};
    if (names.format == GPT_NAMES_HF_GPT2 && import_find(&src, "transformer.wte.weight")) names.prefix = "transformer.";
    int n = gpt_param_specs(cfg, NULL);
    param_spec *specs = calloc((size_t)n, sizeof *specs);
    if (!specs) return snprintf(err, errlen, "out of memory"), -1;
    gpt_param_specs(cfg, specs);
    char config[200];
    snprintf(config, sizeof config, "%s: n_layer %d, n_embd %d, n_head %d, n_kv_head %d, vocab %d",
             hf_arch_class[hf->arch], cfg->n_layer, cfg->n_embd, cfg->n_head, cfg->n_kv_head ? cfg->n_kv_head : cfg->n_head,
             cfg->vocab_size);
    int rc = import_check(&src, specs, n, gpt_names_recipe, &names, config, err, errlen);
    free(specs);
    if (rc) return -1;
    gpt_model *m = gpt_new_typed(ctx, cfg, NULL, dtype);
    if (!m) return snprintf(err, errlen, "%s: %s", dir, kiln_error_message()), -1;
    if (import_fill(m, &src, gpt_names_recipe, &names, err, errlen) || set_rope_freqs(m, hf, err, errlen)) {
        gpt_free(m);
        return -1;
    }
    *out = m;
    return 0;
}

int gpt_load_hf(kiln_ctx *ctx, const char *path, kiln_dtype dtype, gpt_model **out, hf_config *hf_out, char *err,
                size_t errlen) {
    char dir[4096], why[512];
    hf_config hf;
    gpt_config cfg;
    hf_files h;
    *out = NULL;
    gpt_hf_dir(path, dir, sizeof dir);
    if (hf_config_read(dir, &hf, err, errlen)) return -1;
    if (gpt_config_from_hf(&hf, &cfg, why, sizeof why))
        return snprintf(err, errlen, "%s/config.json: %s", dir, why), -1;
    int rc = hf_files_open(&h, dir, err, errlen);
    if (rc == 0) rc = build(ctx, dir, &hf, &cfg, &h, dtype, out, err, errlen);
    hf_files_close(&h);
    if (rc == 0 && hf_out) *hf_out = hf;
    return rc;
}
