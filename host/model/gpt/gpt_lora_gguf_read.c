/* Reading llama.cpp's LoRA GGUF for a base (gpt_lora_gguf.h): llama.cpp's loader's checks,
 * in its words where it has them, then kiln's. */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/error_printf.h"
#include "formats/gguf.h"
#include "model/gpt/gpt_gguf.h"
#include "model/gpt/gpt_import.h"
#include "model/gpt/gpt_lora_gguf.h"

/* A key that must be this string. */
static int expect(const gguf_file *f, const char *path, const char *key, const char *want, char *err, size_t errlen) {
    const gguf_kv *kv = gguf_find_kv(f, key);
    const char *have = kv && kv->type == GGUF_STRING ? kv->str : NULL;
    if (have && !strcmp(have, want)) return 0;
    snprintf(err, errlen, "%s is not a LoRA adapter: its %s is %s%.40s%s where llama.cpp's adapters say \"%s\"", path,
             key, have ? "\"" : "", have ? have : "missing", have ? "\"" : "", want);
    error_one_line(err, errlen);
    return -1;
}

/* The module a tensor's base name ("blk.N.attn_q.weight") adapts in cfg's family, with its
 * layer; -1 when it names no block linear of that family. */
static int module_of(const gpt_config *cfg, const char *base, int *layer) {
    int end = 0;
    int64_t in, out;
    if (sscanf(base, "blk.%d.%n", layer, &end) != 1 || !end || *layer < 0 || *layer >= cfg->n_layer) return -1;
    for (int m = 0; m < LORA_TARGET_COUNT; m++)
        if (!strcmp(base + end, gpt_lora_module_gguf(m)) && !gpt_lora_module_shape(cfg, m, &in, &out)) return m;
    return -1;
}

/* The tensors of the file paired by (layer, module): slot[2 (layer * MODULES + module) + b]. */
static int pair_up(const gpt_config *cfg, const gguf_file *f, const char *path, const gguf_tensor **slot, char *err,
                   size_t errlen) {
    for (size_t i = 0; i < gguf_tensor_count(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        size_t len = strlen(t->name);
        int is_a = len > 7 && !strcmp(t->name + len - 7, ".lora_a"), is_b = len > 7 && !strcmp(t->name + len - 7, ".lora_b");
        if (!is_a && !is_b) {
            if (len > 12 && !strcmp(t->name + len - 12, "_norm.weight")) continue; /* llama.cpp skips these too */
            snprintf(err, errlen, "%s: LoRA tensor '%.60s' has unexpected suffix", path, t->name);
            return error_one_line(err, errlen), -1;
        }
        char base[96];
        snprintf(base, sizeof base, "%.*s", (int)(len - 7), t->name);
        int layer, m = module_of(cfg, base, &layer);
        if (m < 0) {
            snprintf(err, errlen, "%s: %.60s adapts %.60s, which is not a linear of the base's blocks (kiln adapts "
                     "those only)", path, t->name, base);
            return error_one_line(err, errlen), -1;
        }
        slot[2 * (layer * LORA_TARGET_COUNT + m) + is_b] = t;
    }
    return 0;
}

/* One pair checked as llama.cpp checks it, then read (B's rows back in kiln's order). */
static int read_pair(const gpt_config *cfg, int permuted, const char *path, int layer, int m, const gguf_tensor *a,
                     const gguf_tensor *b, gpt_lora_pair *p, char *err, size_t errlen) {
    char base[64];
    snprintf(base, sizeof base, "blk.%d.%s", layer, gpt_lora_module_gguf(m));
    if (!a || !b) return snprintf(err, errlen, "%s: LoRA tensor pair for '%s' is missing one component", path, base), -1;
    int64_t in, out;
    gpt_lora_module_shape(cfg, m, &in, &out);
    if (a->ndim != 2 || b->ndim != 2 || a->ne[0] != in || b->ne[1] != out)
        return snprintf(err, errlen, "%s: tensor '%s' has incorrect shape: lora_a [%lld, %lld], lora_b [%lld, %lld] (ggml "
                        "order) where the base's [%lld, %lld] needs [%lld, r] and [r, %lld]", path, base,
                        (long long)a->ne[0], (long long)a->ne[1], (long long)b->ne[0], (long long)b->ne[1],
                        (long long)in, (long long)out, (long long)in, (long long)out), -1;
    if (a->ne[1] != b->ne[0] || a->ne[1] <= 0)
        return snprintf(err, errlen, "%s: %s's lora_a has rank %lld but its lora_b %lld", path, base,
                        (long long)a->ne[1], (long long)b->ne[0]), -1;
    *p = (gpt_lora_pair){.layer = layer, .module = m, .rank = a->ne[1], .in = in, .out = out};
    float *fb = gpt_gguf_values(b);
    p->a = gpt_gguf_values(a);
    p->b = malloc((size_t)(out * p->rank) * sizeof *p->b);
    if (!fb || !p->a || !p->b) {
        free(fb);
        return snprintf(err, errlen, "out of memory"), -1;
    }
    import_piece piece = {.rows = out, .unpermute_hd = gpt_lora_permute_hd(cfg, permuted, m)};
    for (int64_t o = 0; o < out; o++)
        memcpy(p->b + o * p->rank, fb + import_file_row(&piece, o) * p->rank, (size_t)p->rank * 4);
    free(fb);
    return 0;
}

/* Every pair of the file, in (layer, module) order, all of one rank. */
static int read_pairs(const gpt_config *cfg, int permuted, const gguf_file *f, const char *path, gpt_lora_gguf *g,
                      char *err, size_t errlen) {
    size_t slots = (size_t)cfg->n_layer * LORA_TARGET_COUNT;
    const gguf_tensor **slot = calloc(2 * slots, sizeof *slot);
    g->pairs = calloc(slots, sizeof *g->pairs);
    int rc = slot && g->pairs ? pair_up(cfg, f, path, slot, err, errlen) : (snprintf(err, errlen, "out of memory"), -1);
    for (size_t s = 0; rc == 0 && s < slots; s++) {
        if (!slot[2 * s] && !slot[2 * s + 1]) continue;
        gpt_lora_pair *p = &g->pairs[g->n++];
        rc = read_pair(cfg, permuted, path, (int)(s / LORA_TARGET_COUNT), (int)(s % LORA_TARGET_COUNT), slot[2 * s],
                       slot[2 * s + 1], p, err, errlen);
        if (rc == 0 && g->rank && p->rank != g->rank)
            rc = (snprintf(err, errlen, "%s: pairs of ranks %lld and %lld: kiln's adapters have one rank", path,
                           (long long)g->rank, (long long)p->rank), -1);
        g->rank = p->rank;
    }
    if (rc == 0 && g->n == 0) rc = (snprintf(err, errlen, "%s: a LoRA adapter without a .lora_a/.lora_b pair", path), -1);
    free(slot);
    return rc;
}

/* The file's kiln.* string keys, copied. */
static int read_meta(const gguf_file *f, gpt_lora_gguf *g) {
    g->meta = calloc(gguf_kv_count(f) + 1, sizeof *g->meta);
    if (!g->meta) return -1;
    for (size_t i = 0; i < gguf_kv_count(f); i++) {
        const gguf_kv *kv = gguf_kv_at(f, i);
        if (kv->type != GGUF_STRING || strncmp(kv->key, "kiln.", 5)) continue;
        gpt_lora_meta *m = &g->meta[g->n_meta++];
        m->key = strdup(kv->key);
        m->value = strdup(kv->str);
        if (!m->key || !m->value) return -1;
    }
    return 0;
}

int gpt_lora_gguf_load(const gpt_config *cfg, const char *path, gpt_lora_gguf *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    int permuted;
    const char *arch = gpt_lora_gguf_arch(cfg, &permuted, err, errlen);
    if (!arch) return -1;
    gguf_file *f;
    if (gguf_open(path, &f, err, errlen)) return -1;
    int rc = expect(f, path, "general.type", "adapter", err, errlen) ||
             expect(f, path, "adapter.type", "lora", err, errlen) ? -1 : 0;
    const char *have = NULL;
    if (rc == 0 && (gguf_get_string(f, "general.architecture", &have, err, errlen) || strcmp(have, arch))) {
        if (have) snprintf(err, errlen, "%s: an adapter for llama.cpp's %.40s, but the base is %s", path, have, arch);
        error_one_line(err, errlen);
        rc = -1;
    }
    double alpha = 0;
    if (rc == 0 && gguf_find_kv(f, "adapter.lora.alpha") && gguf_get_float(f, "adapter.lora.alpha", &alpha, err, errlen))
        rc = -1;
    if (rc == 0) rc = read_pairs(cfg, permuted, f, path, out, err, errlen);
    if (rc == 0 && read_meta(f, out)) rc = (snprintf(err, errlen, "out of memory"), -1);
    out->alpha = alpha != 0 ? (float)alpha : (float)out->rank; /* llama.cpp: no alpha, scale 1 */
    gguf_close(f);
    if (rc) gpt_lora_gguf_free(out);
    return rc;
}

void gpt_lora_gguf_free(gpt_lora_gguf *g) {
    for (int i = 0; i < g->n; i++) {
        free(g->pairs[i].a);
        free(g->pairs[i].b);
    }
    for (int i = 0; i < g->n_meta; i++) {
        free((char *)g->meta[i].key);
        free((char *)g->meta[i].value);
    }
    free(g->pairs);
    free(g->meta);
    memset(g, 0, sizeof *g);
}
