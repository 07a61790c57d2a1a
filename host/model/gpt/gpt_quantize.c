/* In-memory quantization of a GPT (gpt_quantize.h). Each tensor gets the ggml type the GGUF
 * writer gives it (gpt_quant_tensor_type, by the file's names) and ends as the reader leaves
 * it: in blocks where the reader keeps it so, else as floats rounded through that type. */
#include "model/gpt/gpt_quantize.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/gguf.h"
#include "model/gpt/gpt_export.h"
#include "model/gpt/gpt_gguf.h"
#include "model/gpt/gpt_import.h"
#include "model/gpt/gpt_names.h"

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

/* The token embedding's blocks on the host in `format`, for the lookup. */
static int embedding_blocks(gpt_model *m, kiln_qformat format, const float *v, const gpt_param_spec *s, char *err,
                            size_t errlen) {
    const int64_t rows = s->shape[0], cols = s->shape[1];
    gpt_quantized *q = m->quant;
    q->embd_format = format;
    q->embd_row_bytes = kiln_qformat_row_bytes(format, cols);
    if (!(q->embd = malloc(q->embd_row_bytes * (size_t)rows))) return snprintf(err, errlen, "out of host memory"), -1;
    for (int64_t r = 0; r < rows; r++)
        if (kiln_quantize_row(format, v + r * cols, cols, q->embd + (size_t)r * q->embd_row_bytes))
            return snprintf(err, errlen, "%s: %s", s->name, kiln_error_message()), -1;
    return 0;
}

/* Rows [r0, r0 + n) of cols values as a file of ggml type `type` holds them and its reader
 * gives them back: f16 rounded, blocks quantized and dequantized (f32 unchanged). */
static int round_rows(float *v, int64_t n, int64_t cols, int type, unsigned char *scratch) {
    int q = gpt_gguf_qformat(type);
    for (int64_t r = 0; r < n && type != GGML_TYPE_F32; r++) {
        float *row = v + r * cols;
        if (q < 0)
            for (int64_t c = 0; c < cols; c++) row[c] = kiln_f16_to_f32(kiln_f32_to_f16(row[c]));
        else if (kiln_quantize_row((kiln_qformat)q, row, cols, scratch) || kiln_dequantize_row((kiln_qformat)q, scratch, cols, row))
            return -1;
    }
    return 0;
}

/* Tensor p's f32 values rounded through the types of its file pieces (types[i] for piece i of
 * r: rows of kiln's [R, C], or columns of its Conv1D [in, out] when r->transpose). */
static int round_param(gpt_param *p, const import_recipe *r, const int *types, char *err, size_t errlen) {
    const param_spec *s = &p->spec;
    int64_t rows = s->shape[0], cols = s->shape[1], in = r->transpose ? rows : cols;
    float *v = host_values(p->t, s->name, err, errlen), *col = malloc((size_t)in * sizeof *col);
    unsigned char *scratch = malloc((size_t)in * 4 + 64);
    if (!v || !col || !scratch) {
        if (v) snprintf(err, errlen, "%s: out of host memory", s->name); /* else host_values said why */
        free(v), free(col), free(scratch);
        return -1;
    }
    int rc = 0;
    for (int i = 0, at = 0; rc == 0 && i < r->n; at += (int)r->piece[i].rows, i++)
        for (int64_t o = 0; rc == 0 && o < (r->transpose ? r->piece[i].rows : 0); o++) { /* a column each */
            for (int64_t k = 0; k < in; k++) col[k] = v[k * cols + at + o];
            rc = round_rows(col, 1, in, types[i], scratch);
            for (int64_t k = 0; k < in; k++) v[k * cols + at + o] = col[k];
        }
    for (int i = 0, at = 0; rc == 0 && !r->transpose && i < r->n; at += (int)r->piece[i].rows, i++)
        rc = round_rows(v + (int64_t)at * cols, r->piece[i].rows, cols, types[i], scratch);
    if (rc == 0 && kiln_upload_f32(p->t, v, rows * cols)) rc = -1;
    if (rc) snprintf(err, errlen, "%s: %s", s->name, kiln_error_message());
    free(v), free(col), free(scratch);
    return rc;
}

/* Frees weight p's f32 tensor once its blocks replace it (the model's pointers to it too). */
static void drop_floats(gpt_model *m, gpt_param *p) {
    const gpt_param_spec *s = &p->spec;
    if (s->layer >= 0) m->blocks[s->layer].w[s->slot] = NULL, m->masters[s->layer].w[s->slot] = NULL;
    else if (s->slot == GPT_SLOT_WTE) m->wte = NULL;
    else if (s->slot == GPT_SLOT_LM_HEAD) m->lm_head = NULL;
    kiln_tensor_free(p->t);
    p->t = NULL;
}

/* Weight p (values v) kept in blocks of `format`, as the readers keep it: a block's matrix
 * (kiln's Conv1D [in, out] is the transpose of the file's rows), the untied head, or the token
 * embedding's host blocks. */
static int keep_blocks(gpt_model *m, gpt_param *p, const float *v, kiln_qformat format, char *err, size_t errlen) {
    const gpt_param_spec *s = &p->spec;
    if (s->layer >= 0) {
        kiln_qmatrix *q = device_matrix(m, format, v, s->shape[1], s->shape[0], 1, s->name, err, errlen);
        if (!q) return -1;
        m->blocks[s->layer].q[s->slot] = q;
    } else if (s->slot == GPT_SLOT_LM_HEAD) {
        if (!(m->quant->head = device_matrix(m, format, v, s->shape[0], s->shape[1], 0, s->name, err, errlen))) return -1;
    } else if (embedding_blocks(m, format, v, s, err, errlen)) {
        return -1;
    }
    drop_floats(m, p);
    return 0;
}

/* Block matrix p (values v, kiln's [in, out]) whose file pieces differ in type, as the Llama
 * reader keeps it: one part per run of pieces of one type (block_weights' qpart), each the
 * run's columns of v in its own blocks. */
static int keep_parts(gpt_model *m, gpt_param *p, const float *v, const import_recipe *r, const int *types,
                      char *err, size_t errlen) {
    const gpt_param_spec *s = &p->spec;
    const int64_t in = s->shape[0], out = s->shape[1];
    kiln_qmatrix **part = m->blocks[s->layer].qpart[s->slot];
    int64_t c0 = 0;
    for (int i = 0, k = 0; i < r->n; k++) {
        const int first = i;
        int64_t n = 0;
        for (; i < r->n && types[i] == types[first]; i++) n += r->piece[i].rows;
        float *cols = malloc((size_t)(in * n) * sizeof *cols);
        if (!cols) return snprintf(err, errlen, "out of host memory"), -1;
        for (int64_t a = 0; a < in; a++) memcpy(cols + a * n, v + a * out + c0, (size_t)n * sizeof *cols);
        part[k] = device_matrix(m, (kiln_qformat)gpt_gguf_qformat(types[first]), cols, n, in, 1, s->name, err, errlen);
        free(cols);
        if (!part[k]) return -1;
        c0 += n;
    }
    drop_floats(m, p);
    return 0;
}

/* The position table rounded as the GGUF export stores it (f16 in the pure types). */
static int round_positions(gpt_model *m, const gpt_quant_type *type, char *err, size_t errlen) {
    gpt_param *p = gpt_find_param(m, "wpe.weight");
    if (!p) return 0; /* rotary positions: no table */
    import_recipe whole = {.n = 1, .piece = {{.rows = p->spec.shape[0]}}};
    int t = gpt_quant_table_type(type);
    return round_param(p, &whole, &t, err, errlen);
}

/* GPT-2's block (gpt_gguf.h): the four matrices of each block in their types, token_embd's
 * blocks for the lookup and output's (its own type: llama.cpp sees an output.weight) for the
 * head, the position table rounded. */
static int quantize_gpt2(gpt_model *m, const gpt_quant_type *type, char *err, size_t errlen) {
    const gpt_config *c = &m->cfg;
    if (c->n_embd % KILN_QBLOCK)
        return snprintf(err, errlen, "a model of width %d cannot be quantized in blocks of %d values", c->n_embd,
                        KILN_QBLOCK), -1;
    if (round_positions(m, type, err, errlen)) return -1;
    for (int i = 0; i < m->n_params; i++) {
        gpt_param *p = &m->params[i];
        char name[96];
        int conv1d;
        if (!gpt_keeps_quantized(&p->spec) || gpt_gguf_name(p->spec.name, name, sizeof name, &conv1d)) continue;
        int64_t cols = conv1d ? p->spec.shape[0] : p->spec.shape[1];
        int t = gpt_quant_tensor_type(type, name, cols, c->n_layer, 0);
        float *v = host_values(p->t, p->spec.name, err, errlen);
        int rc = v ? 0 : -1;
        if (rc == 0 && p->spec.layer < 0) { /* the head first: keep_blocks frees the embedding's floats */
            int h = gpt_quant_tensor_type(type, "output.weight", cols, c->n_layer, 0);
            m->quant->head = device_matrix(m, (kiln_qformat)gpt_gguf_qformat(h), v, p->spec.shape[0], cols, 0,
                                           "output.weight", err, errlen);
            rc = m->quant->head ? 0 : -1;
        }
        if (rc == 0) rc = keep_blocks(m, p, v, (kiln_qformat)gpt_gguf_qformat(t), err, errlen);
        free(v);
        if (rc) return -1;
    }
    return 0;
}

/* One of m's tensors as the writer would write it: its recipe (GGUF's names) and each piece's
 * ggml type. */
typedef struct planned {
    import_recipe r;
    int rc; /* gpt_names_recipe's: 1 for a tensor the file does not hold */
    int types[IMPORT_MAX_PIECES];
} planned;

/* The file gpt_export_gguf_llama would write, as the import_tensor list its reader sees (the
 * names in plan[].r, the types without the bytes). Returns the tensors' number, or -1. */
static int plan_llama(const gpt_model *m, const gpt_names *names, const gpt_quant_type *type, planned *plan,
                      import_tensor *file, char *err, size_t errlen) {
    int count = 0;
    for (int i = 0; i < m->n_params + m->n_buffers; i++) {
        const param_spec *s = &m->params[i].spec;
        planned *p = &plan[i];
        if ((p->rc = gpt_names_recipe(names, s, &p->r, err, errlen)) < 0) return -1;
        for (int k = 0; p->rc == 0 && k < p->r.n; k++) {
            int64_t cols = s->ndim == 2 ? (p->r.transpose ? s->shape[0] : s->shape[1]) : 1;
            int t = s->ndim == 2 ? gpt_quant_tensor_type(type, p->r.piece[k].name, cols, m->cfg.n_layer, !m->cfg.untied)
                                 : GGML_TYPE_F32, q = gpt_gguf_qformat(t);
            p->types[k] = t;
            file[count++] = (import_tensor){.name = p->r.piece[k].name, .ndim = s->ndim, .rows = p->r.piece[k].rows,
                                            .cols = cols, .qformat = q < 0 ? KILN_Q8_0 : (kiln_qformat)q,
                                            .dtype = q >= 0 ? IMPORT_QUANT : t == GGML_TYPE_F16 ? IMPORT_F16 : IMPORT_F32};
        }
    }
    return count;
}

/* The Llama family (gpt_gguf_llama.h): what import_stays_quantized keeps of that file goes to
 * blocks, the rest is rounded through its pieces' types; a tied head shares the embedding's
 * blocks. */
static int quantize_llama(gpt_model *m, const gpt_quant_type *type, char *err, size_t errlen) {
    const int n = m->n_params + m->n_buffers;
    gpt_names names = gpt_names_for(GPT_NAMES_GGUF, &m->cfg);
    names.rope_freqs_file = 1;
    planned *plan = calloc((size_t)n, sizeof *plan);
    import_tensor *file = calloc((size_t)n * IMPORT_MAX_PIECES, sizeof *file);
    int count = plan && file ? plan_llama(m, &names, type, plan, file, err, errlen) : -1, rc = count < 0 ? -1 : 0;
    if (!plan || !file) snprintf(err, errlen, "out of host memory");
    import_source src = {.tensors = file, .count = (size_t)(count > 0 ? count : 0), .path = "the model"};
    for (int i = 0; rc == 0 && i < n; i++) {
        gpt_param *p = &m->params[i];
        if (plan[i].rc || p->spec.ndim != 2) continue;
        if (!import_stays_quantized(&src, &p->spec, gpt_names_recipe, &names)) {
            rc = round_param(p, &plan[i].r, plan[i].types, err, errlen);
            continue;
        }
        const int *types = plan[i].types, n_piece = plan[i].r.n;
        const int mixed = n_piece > 1 && memcmp(types, types + 1, (size_t)(n_piece - 1) * sizeof *types);
        float *v = host_values(p->t, p->spec.name, err, errlen);
        if (!v) rc = -1;
        else if (mixed) rc = keep_parts(m, p, v, &plan[i].r, types, err, errlen);
        else rc = keep_blocks(m, p, v, (kiln_qformat)gpt_gguf_qformat(types[0]), err, errlen);
        free(v);
    }
    gpt_quantized *q = m->quant;
    if (rc == 0 && q->embd && !q->head && !m->cfg.untied) { /* the tied head: the embedding's blocks */
        q->head = kiln_qmatrix_new(m->ctx, q->embd_format, m->cfg.vocab_size, m->cfg.n_embd);
        if (!q->head || kiln_qmatrix_upload(q->head, q->embd) != KILN_OK)
            rc = (snprintf(err, errlen, "the output head: %s", kiln_error_message()), -1);
    }
    free(plan);
    free(file);
    return rc;
}

int gpt_quantize(gpt_model *m, const gpt_quant_type *type, char *err, size_t errlen) {
    char option[64];
    if (m->quant || m->dtype != KILN_F32)
        return snprintf(err, errlen, "only an f32 model that is not quantized yet can be quantized"), -1;
    if (!gpt_quant_type_quantized(type)) return snprintf(err, errlen, "%s is not a quantized type", type->name), -1;
    int gpt2 = gpt_gguf_writes_gpt2(&m->cfg);
    if (gpt2 && gpt_not_gpt2(&m->cfg, option, sizeof option))
        return snprintf(err, errlen, "a model trained with %s cannot be quantized: GGUF's gpt2 is GPT-2's own block",
                        option), -1;
    if (!gpt2 && !gpt_llama_arch(&m->cfg, err, errlen)) return -1;
    if (!(m->quant = calloc(1, sizeof *m->quant))) return snprintf(err, errlen, "out of host memory"), -1;
    return gpt2 ? quantize_gpt2(m, type, err, errlen) : quantize_llama(m, type, err, errlen);
}
double gpt_weight_bytes_per_token(const gpt_model *m) {
    const kiln_qmatrix *head = m->quant ? m->quant->head : NULL;
    double bytes = 0;
    for (int i = 0; i < m->n_params + m->n_buffers; i++) {
        const gpt_param *p = &m->params[i];
        const gpt_param_spec *s = &p->spec;
        const kiln_tensor *t = model_param_compute(p);
        double rows = s->ndim == 2 ? (double)s->shape[0] : 1, cols = s->ndim == 2 ? (double)s->shape[1] : (double)s->shape[0];
        int wte = s->layer < 0 && s->slot == GPT_SLOT_WTE, table = wte || (s->layer < 0 && s->slot == GPT_SLOT_WPE);
        int head_too = wte && !m->cfg.untied; /* the tied head reads the embedding's matrix, or its blocks */
        if (s->buffer) continue; /* sigma-reparam's vectors: not read by decoding */
        if (t) /* floats: the whole matrix, or one row of a table */
            bytes += (table ? cols : rows * cols) * (double)kiln_dtype_size(t->dtype);
        else if (s->layer >= 0) /* its blocks, in one matrix or in parts */
            for (int k = -1; k < BLOCK_QPARTS; k++) {
                const block_weights *w = &m->blocks[s->layer];
                const kiln_qmatrix *q = k < 0 ? w->q[s->slot] : w->qpart[s->slot][k];
                bytes += q ? (double)kiln_qmatrix_bytes(q) : 0;
            }
        else if (wte) /* the quantized embedding: one row of blocks */
            bytes += (double)m->quant->embd_row_bytes;
        if ((head_too || (s->layer < 0 && s->slot == GPT_SLOT_LM_HEAD)) && (head || !t))
            bytes += (double)kiln_qmatrix_bytes(head);
        else if (head_too)
            bytes += rows * cols * (double)kiln_dtype_size(t->dtype);
    }
    return bytes;
}
