/* Quantized matrices on a device and their product with activations (kiln/quant.h).
 *
 * A kiln_qmatrix is an i32 tensor of [rows, row_words]: each row's blocks, padded to whole
 * 32-bit words so that every row starts on a word (GPU kernels read words where a device has
 * no 8-bit storage), plus the format and the logical shape.
 *
 * The product records on the tape when x or the bias requires a gradient: dX = dY W comes
 * from the blocks (the qmatmul_t kernel), dBias = the sum of dY's rows. W itself is frozen:
 * it never gets a gradient, and must outlive the backward of a product that used it. */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "kiln/quant.h"
#include "ops/op_grad.h"

struct kiln_qmatrix {
    kiln_tensor *data; /* i32 [rows, row_words] */
    kiln_qformat format;
    int64_t rows, cols, row_words;
};

kiln_qmatrix *kiln_qmatrix_new(kiln_ctx *ctx, kiln_qformat format, int64_t rows, int64_t cols) {
    if (!ctx) return kiln_fail(KILN_ERR_ARGUMENT, "kiln_qmatrix_new: no context");
    if ((int)format < 0 || format >= KILN_QFORMAT_COUNT)
        return kiln_fail(KILN_ERR_ARGUMENT, "kiln_qmatrix_new: unknown quantization format %d", (int)format);
    if (format == KILN_Q8_K)
        return kiln_fail(KILN_ERR_ARGUMENT, "kiln_qmatrix_new: q8_k is an activation format, not one for matrices");
    const int64_t block = (int64_t)kiln_qformat_block_values(format);
    if (rows <= 0 || cols <= 0 || cols % block)
        return kiln_fail(KILN_ERR_SHAPE,
                         "kiln_qmatrix_new: a [%lld, %lld] matrix cannot be quantized in %s: %s needs rows that are a "
                         "multiple of %lld",
                         (long long)rows, (long long)cols, kiln_qformat_name(format), kiln_qformat_name(format),
                         (long long)block);
    kiln_qmatrix *q = calloc(1, sizeof *q);
    if (!q) return kiln_fail(KILN_ERR_MEMORY, "out of host memory");
    q->format = format;
    q->rows = rows;
    q->cols = cols;
    q->row_words = ((int64_t)kiln_qformat_row_bytes(format, cols) + 3) / 4;
    int64_t shape[2] = {rows, q->row_words};
    if (!(q->data = kiln_tensor_new(ctx, KILN_I32, 2, shape))) {
        free(q);
        return NULL;
    }
    return q;
}

void kiln_qmatrix_free(kiln_qmatrix *q) {
    if (!q) return;
    kiln_tensor_free(q->data);
    free(q);
}

kiln_qformat kiln_qmatrix_format(const kiln_qmatrix *q) { return q->format; }
int64_t kiln_qmatrix_rows(const kiln_qmatrix *q) { return q->rows; }
int64_t kiln_qmatrix_cols(const kiln_qmatrix *q) { return q->cols; }
size_t kiln_qmatrix_bytes(const kiln_qmatrix *q) { return (size_t)(q->rows * q->row_words) * 4; }

kiln_status kiln_qmatrix_upload(kiln_qmatrix *q, const void *blocks) {
    if (!q || !blocks) return kiln_set_error(KILN_ERR_ARGUMENT, "kiln_qmatrix_upload: NULL argument");
    size_t row_bytes = kiln_qformat_row_bytes(q->format, q->cols), padded = (size_t)q->row_words * 4;
    unsigned char *host = calloc((size_t)q->rows, padded);
    if (!host) return kiln_set_error(KILN_ERR_MEMORY, "out of host memory");
    for (int64_t r = 0; r < q->rows; r++)
        memcpy(host + (size_t)r * padded, (const unsigned char *)blocks + (size_t)r * row_bytes, row_bytes);
    kiln_status s = kiln_upload(q->data, host, (size_t)q->rows * padded);
    free(host);
    return s;
}

kiln_status kiln_qmatrix_download(const kiln_qmatrix *q, void *blocks) {
    if (!q || !blocks) return kiln_set_error(KILN_ERR_ARGUMENT, "kiln_qmatrix_download: NULL argument");
    size_t row_bytes = kiln_qformat_row_bytes(q->format, q->cols), padded = (size_t)q->row_words * 4;
    unsigned char *host = malloc((size_t)q->rows * padded);
    if (!host) return kiln_set_error(KILN_ERR_MEMORY, "out of host memory");
    kiln_status s = kiln_download(q->data, host, (size_t)q->rows * padded);
    for (int64_t r = 0; s == KILN_OK && r < q->rows; r++)
        memcpy((unsigned char *)blocks + (size_t)r * row_bytes, host + (size_t)r * padded, row_bytes);
    free(host);
    return s;
}

kiln_status kiln_qmatrix_quantize(kiln_qmatrix *q, const float *w, int transposed) {
    if (!q || !w) return kiln_set_error(KILN_ERR_ARGUMENT, "kiln_qmatrix_quantize: NULL argument");
    size_t row_bytes = kiln_qformat_row_bytes(q->format, q->cols);
    unsigned char *blocks = malloc((size_t)q->rows * row_bytes);
    float *row = transposed ? malloc((size_t)q->cols * sizeof *row) : NULL;
    kiln_status s = !blocks || (transposed && !row) ? kiln_set_error(KILN_ERR_MEMORY, "out of host memory") : KILN_OK;
    for (int64_t r = 0; s == KILN_OK && r < q->rows; r++) {
        const float *x = w + (size_t)r * (size_t)q->cols;
        if (transposed) {
            for (int64_t c = 0; c < q->cols; c++) row[c] = w[(size_t)c * (size_t)q->rows + (size_t)r];
            x = row;
        }
        s = kiln_quantize_row(q->format, x, q->cols, blocks + (size_t)r * row_bytes);
    }
    if (s == KILN_OK) s = kiln_qmatrix_upload(q, blocks);
    free(blocks);
    free(row);
    return s;
}

int kiln_qmatmul_rounds_activations(const kiln_ctx *ctx) {
    return ctx && ctx->be->qmatmul_rounds_x && ctx->be->qmatmul_rounds_x(ctx->dev);
}

/* y[m, k] = dy[m, n] W into y (the qmatmul_t kernel); w is the matrix's word tensor, n and k
 * its rows and columns. */
static kiln_status qt_into(const kiln_tensor *dy, const kiln_tensor *w, int format, int64_t n, int64_t k,
                           int64_t row_words, kiln_tensor *y) {
    kiln_qmatmul_args a = {.x = kiln_ref_of(dy), .w = kiln_ref_of(w), .y = kiln_ref_of(y), .format = format,
                           .m = kiln_numel(dy) / n, .n = n, .k = k, .row_words = row_words, .dtype = dy->dtype};
    return KILN_CALL(dy->ctx, qmatmul_t, &a);
}

kiln_tensor *kiln_matmul_qt(kiln_tensor *dy, const kiln_qmatrix *w) {
    if (!dy || !w) return kiln_fail(KILN_ERR_ARGUMENT, "matmul_qt: NULL operand");
    char sd[64];
    if (kiln_check_float("matmul_qt", dy, "dy")) return NULL;
    if (dy->ctx != w->data->ctx) return kiln_fail(KILN_ERR_ARGUMENT, "matmul_qt: the operands belong to different contexts");
    if (dy->ndim < 1 || dy->shape[dy->ndim - 1] != w->rows)
        return kiln_fail(KILN_ERR_SHAPE, "matmul_qt: dy %s does not end in the matrix's %lld rows",
                         kiln_shape_str(dy, sd, sizeof sd), (long long)w->rows);
    int64_t shape[KILN_MAX_DIMS];
    memcpy(shape, dy->shape, sizeof shape);
    shape[dy->ndim - 1] = w->cols;
    kiln_tensor *y = kiln_op_output(dy->ctx, dy->dtype, dy->ndim, shape);
    if (!y) return NULL;
    return qt_into(dy, w->data, (int)w->format, w->rows, w->cols, w->row_words, y) ? NULL : y;
}

/* in[0] x, in[1] the bias (when there is one); saved[0] the matrix's words; i[] its format,
 * rows, columns and row words. */
static kiln_status matmul_q_backward(kiln_tape_rec *rec) {
    kiln_tensor *x = rec->in[0], *bias = rec->n_in > 1 ? rec->in[1] : NULL, *dy = rec->out->grad;
    kiln_ctx *ctx = dy->ctx;
    const int64_t n = rec->i[1], k = rec->i[2];
    int fresh;
    kiln_tensor *dx;
    kiln_status s = op_grad_to_write(x, &dx, &fresh);
    if (s == KILN_OK && dx) {
        /* the kernel overwrites its output: straight into a fresh gradient, else added */
        kiln_tensor *t = fresh ? dx : kiln_tensor_temp(ctx, dx->dtype, dx->ndim, dx->shape);
        if (!t) return kiln_error_status();
        s = qt_into(dy, rec->saved[0], (int)rec->i[0], n, k, rec->i[3], t);
        if (s == KILN_OK && !fresh) {
            kiln_axpby_args ax = {.x = kiln_ref_of(t), .y = kiln_ref_of(dx), .n = kiln_numel(dx), .alpha = 1.0f,
                                  .beta = 1.0f, .dtype = dx->dtype};
            s = KILN_CALL(ctx, axpby, &ax);
        }
    }
    kiln_tensor *dbias;
    if (s == KILN_OK && (s = op_grad_to_add(bias, &dbias)) == KILN_OK && dbias) {
        kiln_sum_rows_args sr = {.x = kiln_ref_of(dy), .out = kiln_ref_of(dbias), .rows = kiln_numel(dy) / n,
                                 .cols = n, .alpha = 1.0f, .dtype = dy->dtype};
        s = KILN_CALL(ctx, sum_rows, &sr);
    }
    return s;
}

kiln_tensor *kiln_matmul_q(kiln_tensor *x, const kiln_qmatrix *w, kiln_tensor *bias) {
    if (!x || !w) return kiln_fail(KILN_ERR_ARGUMENT, "matmul_q: NULL operand");
    char sx[64], sb[64];
    if (kiln_check_float("matmul_q", x, "x")) return NULL;
    if (x->ctx != w->data->ctx || (bias && bias->ctx != x->ctx))
        return kiln_fail(KILN_ERR_ARGUMENT, "matmul_q: the operands belong to different contexts");
    if (x->ndim < 1 || x->shape[x->ndim - 1] != w->cols)
        return kiln_fail(KILN_ERR_SHAPE, "matmul_q: x %s does not end in the matrix's %lld columns",
                         kiln_shape_str(x, sx, sizeof sx), (long long)w->cols);
    if (bias && (bias->ndim != 1 || bias->shape[0] != w->rows || bias->dtype != x->dtype))
        return kiln_fail(KILN_ERR_SHAPE, "matmul_q: the bias %s %s is not [%lld] %s like x",
                         kiln_shape_str(bias, sb, sizeof sb), kiln_dtype_name(bias->dtype), (long long)w->rows,
                         kiln_dtype_name(x->dtype));
    int64_t shape[KILN_MAX_DIMS];
    memcpy(shape, x->shape, sizeof shape);
    shape[x->ndim - 1] = w->rows;
    kiln_tensor *y = kiln_op_output(x->ctx, x->dtype, x->ndim, shape);
    if (!y) return NULL;
    kiln_qmatmul_args a = {.x = kiln_ref_of(x), .w = kiln_ref_of(w->data), .bias = kiln_ref_of(bias),
                           .y = kiln_ref_of(y), .format = (int)w->format, .m = kiln_numel(x) / w->cols,
                           .n = w->rows, .k = w->cols, .row_words = w->row_words, .dtype = x->dtype};
    if (KILN_CALL(x->ctx, qmatmul, &a)) return NULL;
    kiln_tensor *ins[2] = {x, bias};
    const int n_in = bias ? 2 : 1;
    if (kiln_needs_tape(x->ctx, n_in, ins)) {
        kiln_tape_rec *rec = kiln_tape_push(x->ctx, matmul_q_backward, y, n_in, ins);
        if (!rec) return NULL;
        rec->saved[0] = w->data;
        rec->i[0] = (int64_t)w->format, rec->i[1] = w->rows, rec->i[2] = w->cols, rec->i[3] = w->row_words;
    }
    return y;
}
