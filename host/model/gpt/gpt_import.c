/* A GPT's weights from another tool's tensors (gpt_import.h). */
#include "model/gpt/gpt_import.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/quant.h"

/* Floats converted per upload: 4 MiB of f32 at a time. */
#define CHUNK_FLOATS ((int64_t)1 << 20)

static const char *const dtype_names[IMPORT_QUANT] = {"f32", "f16", "bf16"};

const char *import_dtype_name(const import_tensor *t) {
    return t->dtype == IMPORT_QUANT ? kiln_qformat_name(t->qformat) : t->dtype < IMPORT_QUANT ? dtype_names[t->dtype] : "?";
}

static int is_quant(import_dtype d) { return d == IMPORT_QUANT; }

const import_tensor *import_find(const import_source *src, const char *name) {
    for (size_t i = 0; i < src->count; i++)
        if (!strcmp(src->tensors[i].name, name)) return &src->tensors[i];
    return NULL;
}

/* Bytes of one row of t (a 1-D tensor's rows are its elements). */
static size_t row_bytes(const import_tensor *t) {
    static const size_t size[] = {4, 2, 2};
    return is_quant(t->dtype) ? kiln_qformat_row_bytes(t->qformat, t->cols) : (size_t)t->cols * size[t->dtype];
}

/* Elements [first, first + n) of t, in its flat order, as f32 (for a quantized tensor first
 * and n are whole blocks of its format, 32 or 256 values: rows are, and fill_transposed's
 * chunks). */
static void convert(const import_tensor *t, int64_t first, int64_t n, float *out) {
    const unsigned char *b = t->data;
    switch (t->dtype) {
    case IMPORT_F32: memcpy(out, b + 4 * first, (size_t)n * 4); break;
    case IMPORT_F16:
        for (int64_t i = 0; i < n; i++) {
            const unsigned char *p = b + 2 * (first + i);
            out[i] = kiln_f16_to_f32((uint16_t)(p[0] | p[1] << 8));
        }
        break;
    case IMPORT_BF16:
        for (int64_t i = 0; i < n; i++) {
            const unsigned char *p = b + 2 * (first + i);
            uint32_t bits = (uint32_t)(p[0] | p[1] << 8) << 16;
            memcpy(&out[i], &bits, 4);
        }
        break;
    default: {
        kiln_qformat f = t->qformat;
        size_t block = kiln_qformat_block_values(f);
        kiln_dequantize_row(f, b + (size_t)first / block * kiln_qformat_block_bytes(f), n, out);
    }
    }
}

int64_t import_file_row(const import_piece *p, int64_t r) {
    int64_t hd = p->unpermute_hd;
    if (hd <= 0) return r;
    int64_t w = r % hd, half = hd / 2;
    return r - w + 2 * (w % half) + w / half;
}

static void drop_all(const import_tensor *t) {
    if (t->drop) t->drop(t->owner, t->data, t->nbytes);
}

/* ---- checks ---- */

static int piece_error(const import_source *src, const import_tensor *t, const import_piece *p, int64_t cols,
                       const param_spec *s, const char *config, char *err, size_t errlen) {
    if (!t) snprintf(err, errlen, "%s: no tensor %s (kiln's %s)", src->path, p->name, s->name);
    else if (s->ndim == 1)
        snprintf(err, errlen, "%s: %s is %s[%lld%s] where kiln's %s needs [%lld] (%s)", src->path, t->name,
                 t->ndim == 2 ? "2-D " : "", (long long)t->rows, t->ndim == 2 ? ", ..." : "", s->name,
                 (long long)p->rows, config);
    else
        snprintf(err, errlen, "%s: %s is [%lld, %lld] where kiln's %s needs [%lld, %lld] (%s)", src->path, t->name,
                 (long long)t->rows, (long long)(t->ndim == 2 ? t->cols : 1), s->name, (long long)p->rows,
                 (long long)cols, config);
    return -1;
}

static int check_one(const import_source *src, const param_spec *s, const import_recipe *r, const char *config,
                     char *err, size_t errlen) {
    int64_t cols = s->ndim == 1 ? 1 : r->transpose ? s->shape[0] : s->shape[1], rows = 0;
    for (int i = 0; i < r->n; i++) {
        const import_piece *p = &r->piece[i];
        const import_tensor *t = import_find(src, p->name);
        if (!t || t->ndim != s->ndim || t->rows != p->rows || (s->ndim == 2 && t->cols != cols))
            return piece_error(src, t, p, cols, s, config, err, errlen);
        if (s->ndim == 1 && is_quant(t->dtype))
            return snprintf(err, errlen, "%s: %s is %s; kiln reads 1-D tensors as f32, f16 or bf16", src->path, t->name,
                            import_dtype_name(t)), -1;
        if (p->unpermute_hd > 0 && (p->unpermute_hd % 2 || t->rows % p->unpermute_hd))
            return snprintf(err, errlen, "%s: %s: %lld rows are not whole heads of %lld", src->path, t->name,
                            (long long)t->rows, (long long)p->unpermute_hd), -1;
        rows += t->rows;
    }
    int64_t want = s->ndim == 2 && r->transpose ? s->shape[1] : s->shape[0];
    if (rows != want)
        return snprintf(err, errlen, "%s: the tensors of kiln's %s have %lld rows where it needs %lld (%s)", src->path,
                        s->name, (long long)rows, (long long)want, config), -1;
    return 0;
}

int import_check(const import_source *src, const param_spec *specs, int n, import_recipe_fn recipe, const void *ctx,
                 const char *config, char *err, size_t errlen) {
    for (int i = 0; i < n; i++) {
        import_recipe r;
        int rc = recipe(ctx, &specs[i], &r, err, errlen);
        if (rc < 0) return -1;
        if (rc == 0 && check_one(src, &specs[i], &r, config, err, errlen)) return -1;
    }
    return 0;
}

/* 1 for the tensors a quantized model keeps in blocks (model/gpt/gpt_quantize.h). */
static int keepable(const param_spec *s) {
    return s->ndim == 2 && (s->layer >= 0 || !strcmp(s->name, "wte.weight") || !strcmp(s->name, "lm_head.weight"));
}

int import_stays_quantized(const import_source *src, const param_spec *s, import_recipe_fn recipe, const void *ctx) {
    import_recipe r;
    char err[8];
    if (!keepable(s) || recipe(ctx, s, &r, err, sizeof err) != 0 || r.transpose != (s->layer >= 0)) return 0;
    if (s->layer < 0 && (r.n != 1 || r.piece[0].unpermute_hd)) return 0;
    for (int i = 0; i < r.n; i++) { /* q, k and v of different formats stay as parts (fill_quant) */
        const import_tensor *t = import_find(src, r.piece[i].name);
        if (!t || !is_quant(t->dtype)) return 0;
    }
    return 1;
}

/* ---- float tensors ---- */

static int upload_rows(kiln_tensor *t, int64_t r0, int64_t n, const float *buf, int64_t row_len, const char *name,
                       char *err, size_t errlen) {
    kiln_tensor *v = t->ndim == 1 ? t : kiln_view_rows(t, r0, n);
    if (v && kiln_upload_f32(v, buf, n * row_len) == KILN_OK) return 0;
    snprintf(err, errlen, "%s: %s", name, kiln_error_message());
    return -1;
}

/* kiln's [R, C] = the pieces' rows one after the other, in chunks of rows (a 1-D tensor at
 * once). */
static int fill_rows(kiln_tensor *dst, const param_spec *s, const import_tensor *const *t, const import_recipe *r,
                     float *buf, char *err, size_t errlen) {
    int64_t total = s->shape[0], cols = s->ndim == 1 ? 1 : s->shape[1];
    int64_t chunk = s->ndim == 1 ? total : CHUNK_FLOATS / cols > 0 ? CHUNK_FLOATS / cols : 1, local = 0;
    int p = 0;
    for (int64_t r0 = 0; r0 < total; r0 += chunk) {
        int64_t n = total - r0 < chunk ? total - r0 : chunk;
        for (int64_t k = 0; k < n; k++, local++) {
            for (; local == t[p]->rows; local = 0) drop_all(t[p++]);
            convert(t[p], import_file_row(&r->piece[p], local) * cols, cols, buf + k * cols);
        }
        if (upload_rows(dst, r0, n, buf, cols, s->name, err, errlen)) return -1;
        if (!r->piece[p].unpermute_hd && t[p]->drop) /* the rows converted: their pages go back */
            t[p]->drop(t[p]->owner, t[p]->data, (size_t)local * row_bytes(t[p]));
    }
    for (int i = 0; i < r->n; i++) drop_all(t[i]);
    return 0;
}

/* kiln's [in, out] = the transpose of the pieces' [out_i, in] stacked along out, in chunks of
 * kiln's rows (whole super-blocks of 256, so whole blocks of any format). */
static int fill_transposed(kiln_tensor *dst, const param_spec *s, const import_tensor *const *t, const import_recipe *r,
                           float *buf, float *run, char *err, size_t errlen) {
    int64_t in = s->shape[0], out = s->shape[1];
    int64_t width = CHUNK_FLOATS / out / KILN_QK_K * KILN_QK_K;
    if (width < KILN_QK_K) width = KILN_QK_K;
    for (int64_t i0 = 0; i0 < in; i0 += width) {
        int64_t n = in - i0 < width ? in - i0 : width, col = 0;
        for (int p = 0; p < r->n; p++)
            for (int64_t o = 0; o < t[p]->rows; o++, col++) {
                convert(t[p], import_file_row(&r->piece[p], o) * in + i0, n, run);
                for (int64_t k = 0; k < n; k++) buf[k * out + col] = run[k];
            }
        if (upload_rows(dst, i0, n, buf, out, s->name, err, errlen)) return -1;
    }
    for (int p = 0; p < r->n; p++) drop_all(t[p]);
    return 0;
}

static int fill_float(model_param *p, const import_tensor *const *t, const import_recipe *r, char *err, size_t errlen) {
    const param_spec *s = &p->spec;
    int64_t in = s->ndim == 2 ? s->shape[0] : 1;
    size_t cap = (size_t)(CHUNK_FLOATS + (s->ndim == 2 ? s->shape[1] + s->shape[0] : s->shape[0]) * KILN_QK_K);
    float *buf = malloc(cap * sizeof *buf), *run = malloc((size_t)(in + KILN_QK_K) * sizeof *run);
    int rc = -1;
    if (!buf || !run) snprintf(err, errlen, "%s: out of host memory", s->name);
    else if (s->ndim == 2 && r->transpose) rc = fill_transposed(p->t, s, t, r, buf, run, err, errlen);
    else rc = fill_rows(p->t, s, t, r, buf, err, errlen);
    free(buf);
    free(run);
    return rc;
}

/* ---- quantized matrices ---- */

/* The pieces' block rows one after the other, in kiln's row order, as one matrix on the
 * device (staged on the host when they must be stacked or reordered). */
static kiln_qmatrix *quant_matrix(kiln_ctx *ctx, const import_tensor *const *t, const import_recipe *r, char *err,
                                  size_t errlen) {
    int64_t rows = 0;
    for (int i = 0; i < r->n; i++) rows += t[i]->rows;
    size_t rb = row_bytes(t[0]);
    kiln_qmatrix *q = kiln_qmatrix_new(ctx, t[0]->qformat, rows, t[0]->cols);
    int direct = r->n == 1 && !r->piece[0].unpermute_hd;
    unsigned char *stage = direct ? NULL : malloc((size_t)rows * rb);
    if (q && (direct || stage)) {
        unsigned char *at = stage;
        for (int i = 0; !direct && i < r->n; i++)
            for (int64_t o = 0; o < t[i]->rows; o++, at += rb) memcpy(at, t[i]->data + import_file_row(&r->piece[i], o) * rb, rb);
        if (kiln_qmatrix_upload(q, direct ? t[0]->data : stage) == KILN_OK) {
            free(stage);
            for (int i = 0; i < r->n; i++) drop_all(t[i]);
            return q;
        }
    }
    snprintf(err, errlen, "%s: %s", t[0]->name, q && (direct || stage) ? kiln_error_message() : "out of memory");
    free(stage);
    kiln_qmatrix_free(q);
    return NULL;
}

_Static_assert(IMPORT_MAX_PIECES <= BLOCK_QPARTS, "a linear's pieces fit its parts");

/* A block's matrix: one when its pieces share a format, else one part per run of pieces of
 * one format (block_weights' qpart), each in its own blocks. */
static int block_quant(block_weights *w, int slot, kiln_ctx *ctx, const import_tensor *const *t,
                       const import_recipe *r, char *err, size_t errlen) {
    int k = 0;
    for (int i = 0; i < r->n; k++) {
        import_recipe run = {.n = 0, .transpose = r->transpose};
        const int first = i;
        for (; i < r->n && t[i]->qformat == t[first]->qformat; i++) run.piece[run.n++] = r->piece[i];
        if (first == 0 && i == r->n) return (w->q[slot] = quant_matrix(ctx, t, r, err, errlen)) ? 0 : -1;
        if (!(w->qpart[slot][k] = quant_matrix(ctx, t + first, &run, err, errlen))) return -1;
    }
    return 0;
}

static int fill_quant(gpt_model *m, const model_param *p, const import_tensor *const *t, const import_recipe *r,
                      char *err, size_t errlen) {
    const param_spec *s = &p->spec;
    if (s->layer >= 0) /* its w[] stays NULL: gpt_new_except made none */
        return block_quant(&m->blocks[s->layer], s->slot, m->ctx, t, r, err, errlen);
    if (!strcmp(s->name, "lm_head.weight")) {
        kiln_qmatrix *q = quant_matrix(m->ctx, t, r, err, errlen);
        if (!q) return -1;
        m->quant->head = q;
        return 0;
    }
    gpt_quantized *q = m->quant; /* the token embedding: its blocks on the host */
    q->embd_format = t[0]->qformat;
    q->embd_row_bytes = row_bytes(t[0]);
    if (!(q->embd = malloc(t[0]->nbytes))) return snprintf(err, errlen, "out of host memory"), -1;
    memcpy(q->embd, t[0]->data, t[0]->nbytes);
    drop_all(t[0]);
    return 0;
}

/* A tied head of a quantized embedding: the same blocks as a matrix on the device. */
static int tied_quant_head(gpt_model *m, char *err, size_t errlen) {
    gpt_quantized *q = m->quant;
    if (!q || !q->embd || q->head || gpt_find_param(m, "lm_head.weight")) return 0;
    q->head = kiln_qmatrix_new(m->ctx, q->embd_format, m->cfg.vocab_size, m->cfg.n_embd);
    if (q->head && kiln_qmatrix_upload(q->head, q->embd) == KILN_OK) return 0;
    snprintf(err, errlen, "the output head: %s", kiln_error_message());
    return -1;
}

int import_fill(gpt_model *m, const import_source *src, import_recipe_fn recipe, const void *ctx, char *err,
                size_t errlen) {
    for (int i = 0; i < m->n_params + m->n_buffers; i++) {
        model_param *p = &m->params[i];
        import_recipe r;
        int rc = recipe(ctx, &p->spec, &r, err, errlen);
        if (rc < 0) return -1;
        if (rc > 0) continue;
        const import_tensor *t[IMPORT_MAX_PIECES];
        for (int k = 0; k < r.n; k++)
            if (!(t[k] = import_find(src, r.piece[k].name)))
                return snprintf(err, errlen, "%s: no tensor %s (kiln's %s)", src->path, r.piece[k].name, p->spec.name), -1;
        if (p->t ? fill_float(p, t, &r, err, errlen) : fill_quant(m, p, t, &r, err, errlen)) return -1;
    }
    return tied_quant_head(m, err, errlen);
}
