/* kiln's GPT tensors out in other tools' layouts (gpt_export.h). */
#include "model/gpt/gpt_export.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *gpt_llama_arch(const gpt_config *cfg, char *err, size_t errlen) {
    const block_options *o = &cfg->block;
    block_options d = block_options_default();
    const char *why = NULL;
    if (cfg->position != GPT_POSITION_ROPE || !o->rope) why = "learned positions (the Llama family's are rotary)";
    else if (o->norm_type != BLOCK_NORM_TYPE_RMSNORM) why = "LayerNorm (the Llama family's norm is RMSNorm)";
    else if (o->mlp != BLOCK_MLP_SWIGLU) why = "a GELU MLP (the Llama family's is SwiGLU)";
    else if (o->norm != d.norm) why = "a norm placement other than pre";
    else if (o->residual != d.residual || o->layer != d.layer || o->sigma_reparam || o->residual_attention ||
             o->attn_temperature != 1.0f)
        why = "a stability option of kiln's own (residual, layer type, sigma-reparam, RealFormer or temperature)";
    else if (o->bias == BLOCK_BIAS_ALL) why = "biases on every linear";
    else if (o->qk_norm && o->bias != BLOCK_BIAS_NONE) why = "q/k norm with q/k/v biases";
    else if (o->rope_layout != 1 && (o->qk_norm || o->bias != BLOCK_BIAS_NONE))
        why = "adjacent rope pairs with Qwen's options (qwen2 and qwen3 rotate half-split pairs)";
    if (why) {
        snprintf(err, errlen, "this model has %s, which llama.cpp's llama, qwen2 and qwen3 cannot hold", why);
        return NULL;
    }
    return o->qk_norm ? "qwen3" : o->bias == BLOCK_BIAS_QKV ? "qwen2" : "llama";
}

/* The pieces of [in, out] values x (kiln's Conv1D), each as its [rows, in] transpose with
 * its rows in the file's order, handed to the sink one at a time. */
static int transposed_pieces(const import_recipe *r, const float *x, int64_t in, int64_t out, gpt_export_sink sink,
                             void *ctx, char *err, size_t errlen) {
    int64_t col = 0;
    for (int p = 0; p < r->n; p++) {
        const import_piece *pc = &r->piece[p];
        float *buf = malloc((size_t)(pc->rows * in) * sizeof *buf);
        if (!buf) return snprintf(err, errlen, "out of memory"), -1;
        for (int64_t o = 0; o < pc->rows; o++) {
            int64_t row = import_file_row(pc, o);
            for (int64_t i = 0; i < in; i++) buf[row * in + i] = x[i * out + col + o];
        }
        int rc = sink(ctx, pc->name, 2, pc->rows, in, buf, err, errlen);
        free(buf);
        if (rc) return -1;
        col += pc->rows;
    }
    return 0;
}

/* The pieces of [R, C] (or [R]) values x stacked along rows, each in the file's row order. */
static int row_pieces(const import_recipe *r, const float *x, int ndim, int64_t cols, gpt_export_sink sink, void *ctx,
                      char *err, size_t errlen) {
    int64_t at = 0;
    for (int p = 0; p < r->n; p++) {
        const import_piece *pc = &r->piece[p];
        float *buf = malloc((size_t)(pc->rows * cols) * sizeof *buf);
        if (!buf) return snprintf(err, errlen, "out of memory"), -1;
        for (int64_t o = 0; o < pc->rows; o++) memcpy(buf + import_file_row(pc, o) * cols, x + (at + o) * cols, (size_t)cols * 4);
        int rc = sink(ctx, pc->name, ndim, pc->rows, cols, buf, err, errlen);
        free(buf);
        if (rc) return -1;
        at += pc->rows;
    }
    return 0;
}

static int export_one(const gpt_param *p, const import_recipe *r, gpt_export_sink sink, void *ctx, char *err,
                      size_t errlen) {
    const param_spec *s = &p->spec;
    int64_t n = kiln_numel(p->t);
    float *x = malloc((size_t)n * sizeof *x);
    if (!x || kiln_download_f32(p->t, x, n)) {
        snprintf(err, errlen, "%s: cannot read the weight: %s", s->name, x ? kiln_error_message() : "out of memory");
        free(x);
        return -1;
    }
    int rc = s->ndim == 2 && r->transpose ? transposed_pieces(r, x, s->shape[0], s->shape[1], sink, ctx, err, errlen)
                                          : row_pieces(r, x, s->ndim, s->ndim == 2 ? s->shape[1] : 1, sink, ctx, err, errlen);
    free(x);
    return rc;
}

int gpt_export_pieces(const gpt_model *m, const gpt_names *names, gpt_export_sink sink, void *ctx, char *err,
                      size_t errlen) {
    if (m->quant) return snprintf(err, errlen, "a model read with quantized matrices cannot be exported again"), -1;
    for (int i = 0; i < m->n_params + m->n_buffers; i++) {
        const gpt_param *p = &m->params[i];
        import_recipe r;
        int rc = gpt_names_recipe(names, &p->spec, &r, err, errlen);
        if (rc < 0) return -1;
        if (rc == 0 && export_one(p, &r, sink, ctx, err, errlen)) return -1;
    }
    return 0;
}

/* The wavelength of rope pair i at head width hd and base theta. */
static double wavelength(int i, int hd, double base) { return 2.0 * 3.14159265358979323846 * pow(base, 2.0 * i / hd); }

/* Where no pair lies between the bands, any original length between them gives the same
 * factors: a power of two there (as the models' are), else the middle. */
static double orig_between(const float *f, int n, int hd, double base, double factor, double high) {
    double lo = 0, hi = 1e30;
    for (int i = 0; i < n; i++) {
        double wl = wavelength(i, hd, base);
        if (f[i] <= 1.0f && high * wl > lo) lo = high * wl; /* kept: wl < orig / high */
        if (f[i] >= (float)factor && wl < hi) hi = wl;      /* divided: wl > orig / low, low 1 */
    }
    for (double p = 1; p < hi; p *= 2)
        if (p > lo) return p;
    return hi < 1e30 ? floor((lo + hi) / 2) : lo * 2;
}

int gpt_rope_llama3_fit(const float *f, int n, int hd, double base, gpt_rope_llama3 *out) {
    double factor = 1;
    for (int i = 0; i < n; i++)
        if (f[i] > factor) factor = f[i];
    if (!(factor > 1) || n != hd / 2) return -1;
    *out = (gpt_rope_llama3){.factor = factor, .low_freq_factor = 1, .high_freq_factor = 4};
    for (int i = 0; i < n && !out->original_max_position_embeddings; i++)
        if (f[i] > 1.0f + 1e-6f && f[i] < (float)factor * (1 - 1e-6f)) { /* smoothed: orig from its factor */
            double s = (1.0 / f[i] - 1.0 / factor) / (1.0 - 1.0 / factor);
            out->original_max_position_embeddings = floor(wavelength(i, hd, base) * (1 + 3 * s) + 0.5);
        }
    if (!out->original_max_position_embeddings) out->original_max_position_embeddings = orig_between(f, n, hd, base, factor, 4);
    float *again = malloc((size_t)n * sizeof *again);
    char err[160];
    int rc = again && !gpt_rope_llama3_freqs(out, hd, base, again, err, sizeof err) ? 0 : -1;
    for (int i = 0; rc == 0 && i < n; i++)
        if (fabsf(again[i] - f[i]) > 1e-4f * f[i]) rc = -1;
    free(again);
    return rc;
}
