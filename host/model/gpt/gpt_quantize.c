/* In-memory quantization of a GPT (gpt_quantize.h). */
#include "model/gpt/gpt_quantize.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/gpt/gpt_gguf.h"

int gpt_keeps_quantized(const gpt_param_spec *s) {
    char name[96];
    int conv1d;
    if (s->ndim != 2 || gpt_gguf_name(s->name, name, sizeof name, &conv1d)) return 0;
    return conv1d || (s->layer < 0 && s->slot == GPT_SLOT_WTE);
}

/* The f32 values of t on the host (malloc'd), or NULL with err set. */
static float *host_values(const kiln_tensor *t, const char *name, char *err, size_t errlen) {
    int64_t n = kiln_numel(t);
    float *v = malloc((size_t)n * sizeof *v);
    if (!v) snprintf(err, errlen, "%s: out of host memory", name);
    else if (kiln_download_f32(t, v, n)) snprintf(err, errlen, "%s: %s", name, kiln_error_message()), free(v), v = NULL;
    return v;
}

/* A [rows, cols] qmatrix from host values ([cols, rows] when transposed: a Conv1D weight). */
static kiln_qmatrix *device_matrix(gpt_model *m, kiln_qformat format, const float *v, int64_t rows, int64_t cols,
                                   int transposed, const char *name, char *err, size_t errlen) {
    kiln_qmatrix *q = kiln_qmatrix_new(m->ctx, format, rows, cols);
    if (q && kiln_qmatrix_quantize(q, v, transposed) == KILN_OK) return q;
    snprintf(err, errlen, "%s: %s", name, kiln_error_message());
    kiln_qmatrix_free(q);
    return NULL;
}

/* The token embedding: its blocks on the host for the lookup, and on the device as the tied
 * output head. */
static int quantize_embedding(gpt_model *m, kiln_qformat format, const float *v, const gpt_param_spec *s, char *err,
                              size_t errlen) {
    const int64_t rows = s->shape[0], cols = s->shape[1];
    gpt_quantized *q = m->quant;
    q->embd_format = format;
    q->embd_row_bytes = kiln_qformat_row_bytes(format, cols);
    if (!(q->embd = malloc(q->embd_row_bytes * (size_t)rows))) return snprintf(err, errlen, "out of host memory"), -1;
    for (int64_t r = 0; r < rows; r++)
        if (kiln_quantize_row(format, v + r * cols, cols, q->embd + (size_t)r * q->embd_row_bytes))
            return snprintf(err, errlen, "%s: %s", s->name, kiln_error_message()), -1;
    return (q->head = device_matrix(m, format, v, rows, cols, 0, s->name, err, errlen)) ? 0 : -1;
}

/* The position table rounded to f16, as the GGUF export stores it in a quantized file. */
static int round_positions(gpt_model *m, char *err, size_t errlen) {
    if (!m->wpe) return 0; /* rotary positions: no table */
    float *v = host_values(m->wpe, "wpe.weight", err, errlen);
    if (!v) return -1;
    const int64_t n = kiln_numel(m->wpe);
    for (int64_t i = 0; i < n; i++) v[i] = kiln_f16_to_f32(kiln_f32_to_f16(v[i]));
    int rc = kiln_upload_f32(m->wpe, v, n) ? (snprintf(err, errlen, "wpe.weight: %s", kiln_error_message()), -1) : 0;
    free(v);
    return rc;
}

int gpt_quantize(gpt_model *m, kiln_qformat format, char *err, size_t errlen) {
    if (m->quant || m->dtype != KILN_F32)
        return snprintf(err, errlen, "only an f32 model that is not quantized yet can be quantized"), -1;
    if (m->cfg.n_embd % KILN_QBLOCK)
        return snprintf(err, errlen, "a model of width %d cannot be quantized in blocks of %d values", m->cfg.n_embd,
                        KILN_QBLOCK), -1;
    for (int i = 0; i < m->n_params + m->n_buffers; i++) {
        char name[96];
        int conv1d;
        if (gpt_gguf_name(m->params[i].spec.name, name, sizeof name, &conv1d))
            return snprintf(err, errlen, "%s: only GPT-2's own block can be quantized (as for GGUF)",
                            m->params[i].spec.name), -1;
    }
    if (round_positions(m, err, errlen)) return -1;
    if (!(m->quant = calloc(1, sizeof *m->quant))) return snprintf(err, errlen, "out of host memory"), -1;
    for (int i = 0; i < m->n_params; i++) {
        gpt_param *p = &m->params[i];
        const gpt_param_spec *s = &p->spec;
        if (!gpt_keeps_quantized(s)) continue;
        float *v = host_values(p->t, s->name, err, errlen);
        if (!v) return -1;
        int rc = 0;
        if (s->layer >= 0) { /* a Conv1D [in, out]: rows of the matrix are its outputs */
            kiln_qmatrix *q = device_matrix(m, format, v, s->shape[1], s->shape[0], 1, s->name, err, errlen);
            if (q) m->blocks[s->layer].q[s->slot] = q, m->blocks[s->layer].w[s->slot] = NULL,
                   m->masters[s->layer].w[s->slot] = NULL;
            rc = q ? 0 : -1;
        } else {
            rc = quantize_embedding(m, format, v, s, err, errlen);
            if (rc == 0) m->wte = NULL;
        }
        free(v);
        if (rc) return -1;
        kiln_tensor_free(p->t);
        p->t = NULL;
    }
    return 0;
}

double gpt_weight_bytes_per_token(const gpt_model *m) {
    double bytes = 0;
    for (int i = 0; i < m->n_params + m->n_buffers; i++) {
        const gpt_param *p = &m->params[i];
        const gpt_param_spec *s = &p->spec;
        const kiln_tensor *t = model_param_compute(p);
        double rows = s->ndim == 2 ? (double)s->shape[0] : 1, cols = s->ndim == 2 ? (double)s->shape[1] : (double)s->shape[0];
        int table = s->layer < 0 && (s->slot == GPT_SLOT_WTE || s->slot == GPT_SLOT_WPE);
        if (s->buffer) continue; /* sigma-reparam's vectors: not read by decoding */
        if (t) { /* floats: the whole matrix, or one row of a table (plus the head's whole matrix below) */
            bytes += (table ? cols : rows * cols) * (double)kiln_dtype_size(t->dtype);
            if (s->slot == GPT_SLOT_WTE && s->layer < 0) bytes += rows * cols * (double)kiln_dtype_size(t->dtype);
        } else if (s->layer >= 0) {
            bytes += (double)kiln_qmatrix_bytes(m->blocks[s->layer].q[s->slot]);
        } else { /* the quantized embedding: one row of blocks, and the head */
            bytes += (double)m->quant->embd_row_bytes + (double)kiln_qmatrix_bytes(m->quant->head);
        }
    }
    return bytes;
}
