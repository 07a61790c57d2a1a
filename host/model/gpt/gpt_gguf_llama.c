/* The Llama family's GGUF files into a GPT (gpt_gguf_llama.h). */
#include "model/gpt/gpt_gguf_llama.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/error_printf.h"
#include "model/gpt/gpt_gguf.h"
#include "model/gpt/gpt_import.h"
#include "model/gpt/gpt_names.h"

int gpt_gguf_is_llama_family(const char *arch) {
    return !strcmp(arch, "llama") || !strcmp(arch, "qwen2") || !strcmp(arch, "qwen3");
}

/* <arch>.<key> as an unsigned integer (missing: def, or an error when def < 0). */
static int arch_uint(const gguf_file *f, const char *arch, const char *key, int64_t def, int64_t *out, char *err,
                     size_t errlen) {
    char name[128];
    uint64_t v;
    snprintf(name, sizeof name, "%s.%s", arch, key);
    if (!gguf_find_kv(f, name) && def >= 0) return *out = def, 0;
    if (gguf_get_uint(f, name, &v, err, errlen)) return -1;
    if (v > (1u << 30)) return snprintf(err, errlen, "%s = %llu is out of range", name, (unsigned long long)v), -1;
    *out = (int64_t)v;
    return 0;
}

static int arch_float(const gguf_file *f, const char *arch, const char *key, double def, double *out, char *err,
                      size_t errlen) {
    char name[128];
    snprintf(name, sizeof name, "%s.%s", arch, key);
    if (!gguf_find_kv(f, name) && def > 0) return *out = def, 0;
    return gguf_get_float(f, name, out, err, errlen);
}

/* The config the file's keys and tensors describe. */
static int read_config(const gguf_file *f, const char *path, const char *arch, gpt_config *cfg, char *err,
                       size_t errlen) {
    int64_t layers, ctx_len, width, ffn, heads, kv_heads, head_dim;
    double theta, eps;
    const gguf_tensor *embd = gguf_find_tensor(f, "token_embd.weight");
    if (!embd || embd->ndim != 2) return snprintf(err, errlen, "%s: no 2-D tensor token_embd.weight", path), -1;
    if (arch_uint(f, arch, "block_count", -1, &layers, err, errlen) ||
        arch_uint(f, arch, "context_length", -1, &ctx_len, err, errlen) ||
        arch_uint(f, arch, "embedding_length", -1, &width, err, errlen) ||
        arch_uint(f, arch, "feed_forward_length", -1, &ffn, err, errlen) ||
        arch_uint(f, arch, "attention.head_count", -1, &heads, err, errlen) ||
        arch_uint(f, arch, "attention.head_count_kv", heads, &kv_heads, err, errlen) ||
        arch_uint(f, arch, "attention.key_length", heads ? width / heads : 0, &head_dim, err, errlen) ||
        arch_float(f, arch, "rope.freq_base", 10000, &theta, err, errlen) ||
        arch_float(f, arch, "attention.layer_norm_rms_epsilon", -1, &eps, err, errlen))
        return -1;
    memset(cfg, 0, sizeof *cfg);
    *cfg = (gpt_config){.n_layer = (int)layers, .n_head = (int)heads, .n_embd = (int)width,
                        .n_positions = (int)ctx_len, .vocab_size = (int)embd->ne[1], .ln_eps = (float)eps,
                        .block = block_options_default(), .n_kv_head = (int)kv_heads, .head_dim = (int)head_dim,
                        .n_ffn = (int)ffn, .untied = gguf_find_tensor(f, "output.weight") != NULL,
                        .position = GPT_POSITION_ROPE, .rope_freqs = gguf_find_tensor(f, "rope_freqs.weight") != NULL};
    block_options *o = &cfg->block;
    o->norm_type = BLOCK_NORM_TYPE_RMSNORM;
    o->mlp = BLOCK_MLP_SWIGLU;
    o->bias = gguf_find_tensor(f, "blk.0.attn_q.bias") ? BLOCK_BIAS_QKV : BLOCK_BIAS_NONE;
    o->qk_norm = gguf_find_tensor(f, "blk.0.attn_q_norm.weight") != NULL;
    o->rope = 1;
    o->rope_base = (float)theta;
    o->rope_layout = 1; /* KILN_ROPE_HALF: llama's rows are un-permuted to HF's order on read */
    char why[256];
    if (gpt_config_check(cfg, why, sizeof why)) return snprintf(err, errlen, "%s: %s", path, why), -1;
    return 0;
}

static void drop_gguf(const void *owner, const void *p, size_t n) { gguf_drop(owner, p, n); }

/* The file's tensors as import_tensor (NULL: out of memory). */
static import_tensor *tensors_of(const gguf_file *f) {
    size_t n = gguf_tensor_count(f);
    import_tensor *t = calloc(n + 1, sizeof *t);
    for (size_t i = 0; t && i < n; i++) {
        const gguf_tensor *g = gguf_tensor_at(f, i);
        /* gguf_open admits only the types kiln reads: the floats, or a block format */
        int q = gpt_gguf_qformat(g->type);
        import_dtype d = g->type == GGML_TYPE_F32    ? IMPORT_F32
                         : g->type == GGML_TYPE_F16  ? IMPORT_F16
                         : g->type == GGML_TYPE_BF16 ? IMPORT_BF16
                                                     : IMPORT_QUANT;
        int64_t outer = 1;
        for (int k = 1; k < g->ndim; k++) outer *= g->ne[k];
        t[i] = (import_tensor){.name = g->name, .dtype = d, .qformat = q < 0 ? KILN_Q8_0 : (kiln_qformat)q, .ndim = g->ndim, .rows = g->ndim == 1 ? g->ne[0] : outer,
                               .cols = g->ndim == 1 ? 1 : g->ne[0], .data = g->data, .nbytes = (size_t)g->nbytes,
                               .drop = drop_gguf, .owner = f};
    }
    return t;
}

/* The model with the matrices the file quantizes left in blocks, filled from the file. */
static int build(kiln_ctx *ctx, const import_source *src, const gpt_config *cfg, const gpt_names *names,
                 kiln_dtype dtype, int keep_blocks, gpt_model **out, char *err, size_t errlen) {
    int n = gpt_param_specs(cfg, NULL), any = 0;
    param_spec *specs = calloc((size_t)n, sizeof *specs);
    unsigned char *absent = calloc((size_t)n, 1);
    char config[160];
    snprintf(config, sizeof config, "n_layer %d, n_embd %d, n_head %d, n_kv_head %d, vocab %d", cfg->n_layer,
             cfg->n_embd, cfg->n_head, cfg->n_kv_head, cfg->vocab_size);
    int rc = specs && absent ? 0 : (snprintf(err, errlen, "out of memory"), -1);
    if (rc == 0) gpt_param_specs(cfg, specs);
    if (rc == 0) rc = import_check(src, specs, n, gpt_names_recipe, names, config, err, errlen);
    for (int i = 0; rc == 0 && i < n; i++) any |= absent[i] =
        (unsigned char)(keep_blocks && import_stays_quantized(src, &specs[i], gpt_names_recipe, names));
    gpt_model *m = NULL;
    if (rc == 0 && !(m = gpt_new_typed(ctx, cfg, absent, dtype)))
        rc = (snprintf(err, errlen, "%s: %s", src->path, kiln_error_message()), -1);
    if (rc == 0 && any && !(m->quant = calloc(1, sizeof *m->quant))) rc = (snprintf(err, errlen, "out of memory"), -1);
    if (rc == 0) rc = import_fill(m, src, gpt_names_recipe, names, err, errlen);
    free(specs);
    free(absent);
    if (rc) gpt_free(m);
    else *out = m;
    return rc;
}

int gpt_load_gguf_llama(kiln_ctx *ctx, const gguf_file *f, const char *path, const char *arch, kiln_dtype dtype,
                        int keep_blocks, gpt_model **out, char *err, size_t errlen) {
    gpt_config cfg;
    *out = NULL;
    if (!gpt_gguf_is_llama_family(arch)) {
        snprintf(err, errlen, "%s: a model of architecture \"%.40s\"; kiln reads gpt2, llama, qwen2 and qwen3", path,
                 arch);
        error_one_line(err, errlen); /* the name is the file's */
        return -1;
    }
    if (read_config(f, path, arch, &cfg, err, errlen)) return -1;
    gpt_names names = gpt_names_for(GPT_NAMES_GGUF, &cfg);
    names.permuted = !strcmp(arch, "llama");
    names.rope_freqs_file = 1;
    import_tensor *t = tensors_of(f);
    if (!t) return snprintf(err, errlen, "out of memory"), -1;
    import_source src = {.tensors = t, .count = gguf_tensor_count(f), .path = path};
    int rc = build(ctx, &src, &cfg, &names, dtype, keep_blocks, out, err, errlen);
    free(t);
    return rc;
}
