/* lora.h's adapters as llama.cpp's LoRA GGUF, and merged into their base (lora_gguf.h). */
#include "model/lora_gguf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


void lora_pairs_free(gpt_lora_pair *pairs, int n) {
    for (int i = 0; pairs && i < n; i++) {
        free(pairs[i].a);
        free(pairs[i].b);
    }
    free(pairs);
}

/* One table entry (A or B) read from the device. */
static float *download(const model_param *p, char *err, size_t errlen) {
    int64_t n = kiln_numel(p->t);
    float *v = malloc((size_t)n * sizeof *v);
    if (!v || kiln_download_f32(p->t, v, n)) {
        snprintf(err, errlen, "%s: cannot read the adapter's weight: %s", p->spec.name,
                 v ? kiln_error_message() : "out of memory");
        free(v);
        return NULL;
    }
    return v;
}

int lora_pairs(const lora_adapter *a, gpt_lora_pair **pairs, int *n, char *err, size_t errlen) {
    *n = a->n_params / 2;
    *pairs = calloc((size_t)(*n > 0 ? *n : 1), sizeof **pairs);
    if (!*pairs) return snprintf(err, errlen, "out of memory"), -1;
    for (int i = 0; i < *n; i++) {
        const model_param *A = &a->params[2 * i], *B = &a->params[2 * i + 1];
        int t = A->spec.slot / 2;
        gpt_lora_pair *p = &(*pairs)[i];
        *p = (gpt_lora_pair){.layer = A->spec.layer, .module = t, .rank = a->rank, .in = a->site[t].in,
                             .out = a->site[t].cols};
        if (!(p->a = download(A, err, errlen)) || !(p->b = download(B, err, errlen))) {
            lora_pairs_free(*pairs, i + 1);
            *pairs = NULL;
            return -1;
        }
    }
    return 0;
}

/* The base's record as the GGUF's kiln.* keys (lora_base_to_meta's, without the path). */
typedef struct meta_list {
    gpt_lora_meta meta[4];
    int n;
} meta_list;

static void list_put(void *ctx, const char *key, const char *value) {
    meta_list *l = ctx;
    if (l->n < 4) l->meta[l->n++] = (gpt_lora_meta){key, value};
}

int lora_save_gguf(const lora_adapter *a, const gpt_config *cfg, const lora_base_info *base, const char *path,
                   char *err, size_t errlen) {
    gpt_lora_pair *pairs;
    int n;
    if (lora_pairs(a, &pairs, &n, err, errlen)) return -1;
    meta_list list = {.n = 0};
    if (base) lora_base_to_meta(base, 0, list_put, &list);
    /* llama.cpp's scale is alpha / r times its own: a SCALE given at load stays in alpha */
    int rc = gpt_lora_gguf_save(cfg, a->scale * (float)a->rank, pairs, n, list.meta, list.n, path, err, errlen);
    lora_pairs_free(pairs, n);
    return rc;
}

static const char *meta_of(void *ctx, const char *key) {
    const gpt_lora_gguf *g = ctx;
    for (int i = 0; i < g->n_meta; i++)
        if (!strcmp(g->meta[i].key, key)) return g->meta[i].value;
    return NULL;
}

/* The adapter's table filled from the file's pairs. */
static int fill(lora_adapter *a, const gpt_lora_gguf *g, char *err, size_t errlen) {
    for (int i = 0; i < g->n; i++) {
        const gpt_lora_pair *p = &g->pairs[i];
        int at = a->first[p->layer * LORA_TARGET_COUNT + p->module];
        if (at < 0 || kiln_upload_f32(a->params[at].t, p->a, p->rank * p->in) ||
            kiln_upload_f32(a->params[at + 1].t, p->b, p->out * p->rank))
            return snprintf(err, errlen, "cannot set the adapter's h.%d.%s: %s", p->layer,
                            lora_target_modules[p->module], kiln_error_message()), -1;
    }
    return 0;
}

int lora_load_gguf(gpt_model *m, lora_base_info *base, const char *path, float scale, lora_adapter **out, char *err,
                   size_t errlen) {
    *out = NULL;
    gpt_lora_gguf g;
    if (gpt_lora_gguf_load(&m->cfg, path, &g, err, errlen)) return -1;
    lora_options o = {.rank = (int)g.rank, .alpha = g.alpha};
    for (int i = 0; i < g.n; i++) o.targets |= 1u << g.pairs[i].module;
    lora_adapter *a = NULL;
    int rc = lora_base_check(base, path, meta_of, &g, err, errlen);
    if (rc == 0 && !(a = lora_alloc(m, &o, err, errlen))) rc = -1;
    if (rc == 0) rc = fill(a, &g, err, errlen); /* pairs the file leaves out stay zero: no delta */
    gpt_lora_gguf_free(&g);
    if (rc) {
        lora_free(a);
        return -1;
    }
    a->scale *= scale;
    *out = a;
    return 0;
}
