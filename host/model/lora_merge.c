/* LoRA adapters merged into their base (lora_merge.h). */
#include "model/lora_merge.h"

#include <stdio.h>
#include <stdlib.h>

#include "model/lora_gguf.h"

/* w[i, col0 + o] += scale sum_r B[o, r] A[r, i] over a Conv1D [in, width] weight. */
static void add_delta(float *w, int64_t width, int64_t col0, const gpt_lora_pair *p, float scale) {
    for (int64_t i = 0; i < p->in; i++) {
        float *row = w + i * width + col0;
        for (int64_t o = 0; o < p->out; o++) {
            const float *b = p->b + o * p->rank;
            double d = 0;
            for (int64_t r = 0; r < p->rank; r++) d += (double)b[r] * p->a[r * p->in + i];
            row[o] += scale * (float)d;
        }
    }
}

static int merge_one(gpt_model *m, const gpt_lora_pair *p, float scale, char *err, size_t errlen) {
    lora_site s = lora_site_of(&m->cfg, (lora_target)p->module);
    kiln_tensor *w = m->blocks[p->layer].w[block_linear_slot(s.linear)];
    if (!w || w->dtype != KILN_F32)
        return snprintf(err, errlen, "h.%d.%s: the model holds no f32 weight to merge into", p->layer,
                        lora_target_modules[p->module]), -1;
    int64_t n = kiln_numel(w), width = w->shape[1];
    if (w->shape[0] != p->in || s.col0 + p->out > width)
        return snprintf(err, errlen, "h.%d.%s: the adapter is not of the model's shape", p->layer,
                        lora_target_modules[p->module]), -1;
    float *v = malloc((size_t)n * sizeof *v);
    if (!v) return snprintf(err, errlen, "out of memory"), -1;
    int rc = kiln_download_f32(w, v, n) ? -1 : 0;
    if (rc == 0) {
        add_delta(v, width, s.col0, p, scale);
        rc = kiln_upload_f32(w, v, n) ? -1 : 0;
    }
    free(v);
    if (rc) snprintf(err, errlen, "h.%d.%s: %s", p->layer, lora_target_modules[p->module], kiln_error_message());
    return rc;
}

int lora_merge(gpt_model *m, lora_adapter *const *adapters, int n, char *err, size_t errlen) {
    if (m->quant) return snprintf(err, errlen, "a model read with quantized matrices: merge into its f32 weights"), -1;
    for (int i = 0; i < n; i++) {
        gpt_lora_pair *pairs;
        int count, rc = 0;
        if (lora_pairs(adapters[i], &pairs, &count, err, errlen)) return -1;
        for (int k = 0; rc == 0 && k < count; k++) rc = merge_one(m, &pairs[k], adapters[i]->scale, err, errlen);
        lora_pairs_free(pairs, count);
        if (rc) return -1;
    }
    return 0;
}
