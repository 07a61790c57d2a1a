/* LoRA adapters merged into a GPT's weights (gpt_lora_merge.h). */
#include "model/gpt/gpt_lora_merge.h"

#include <stdio.h>
#include <stdlib.h>

int gpt_lora_module_place(const gpt_config *cfg, int module, const char **weight, int64_t *col0) {
    int64_t in, out;
    if (gpt_lora_module_shape(cfg, module, &in, &out)) return -1;
    block_config b = gpt_block_config(cfg);
    int64_t q = (int64_t)cfg->n_head * block_head_dim(&b), kv = (int64_t)block_kv_heads(&b) * block_head_dim(&b);
    /* gpt.h's Conv1D weights: c_attn holds q, k, v side by side, c_fc gate then up */
    static const char *const weights[GPT_LORA_MODULES] = {
        "attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight",    "mlp.c_proj.weight",
        "attn.c_attn.weight", "attn.c_attn.weight", "attn.c_attn.weight", "attn.c_proj.weight",
        "mlp.c_fc.weight",    "mlp.c_fc.weight",    "mlp.c_proj.weight"};
    const int64_t cols[GPT_LORA_MODULES] = {0, 0, 0, 0, 0, q, q + kv, 0, 0, block_ffn(&b), 0};
    *weight = weights[module];
    *col0 = cols[module];
    return 0;
}

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
    const char *weight;
    int64_t col0, in, out;
    if (gpt_lora_module_place(&m->cfg, p->module, &weight, &col0) ||
        gpt_lora_module_shape(&m->cfg, p->module, &in, &out) || p->in != in || p->out != out ||
        p->layer < 0 || p->layer >= m->cfg.n_layer)
        return snprintf(err, errlen, "the adapter's matrix %d of block %d is not of the model's shape", p->module,
                        p->layer), -1;
    char name[80];
    snprintf(name, sizeof name, "h.%d.%s", p->layer, weight);
    gpt_param *w = gpt_find_param(m, name);
    if (!w || !w->t || w->t->dtype != KILN_F32)
        return snprintf(err, errlen, "%s: the model holds no f32 weight to merge into", name), -1;
    int64_t n = kiln_numel(w->t), width = w->spec.shape[1];
    float *v = malloc((size_t)n * sizeof *v);
    if (!v) return snprintf(err, errlen, "out of memory"), -1;
    int rc = kiln_download_f32(w->t, v, n) ? -1 : 0;
    if (rc == 0) {
        add_delta(v, width, col0, p, scale);
        rc = kiln_upload_f32(w->t, v, n) ? -1 : 0;
    }
    free(v);
    if (rc) snprintf(err, errlen, "%s: %s", name, kiln_error_message());
    return rc;
}

int gpt_lora_merge(gpt_model *m, const gpt_lora_pair *pairs, int n, float scale, char *err, size_t errlen) {
    if (m->quant) return snprintf(err, errlen, "a model read with quantized matrices: merge into its f32 weights"), -1;
    for (int i = 0; i < n; i++)
        if (merge_one(m, &pairs[i], scale, err, errlen)) return -1;
    return 0;
}
