/* A GPT quantized in memory (model/gpt/gpt_quantize.h) is the model that `kiln export --format
 * gguf --type q8_0|q4_0|q4_1` and loading that file give: the same logits, bit for bit (the same
 * blocks through the same kernels). Loading a quantized GGUF never allocates the f32 tensors
 * of the weights it keeps in blocks. The weight bytes a token reads shrink as the formats
 * say (Q8_0 34, Q4_0 18 and Q4_1 20 bytes per 32 weights for every matrix). Every pure type
 * and mix, on GPT-2's block and the Llama family (tied and untied), holds the same: the same
 * tensors in the same formats, the same floats, and (where the backend decodes the format) the
 * same logits. */
#define _POSIX_C_SOURCE 200809L /* mkstemp */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/gguf.h"
#include "model/gpt/gpt_gguf.h"
#include "model/gpt/gpt_quantize.h"
#include "testutil.h"

static const gpt_config small = {.n_layer = 2, .n_head = 2, .n_embd = 64, .n_positions = 16,
                                 .vocab_size = GPT_BYTE_VOCAB, .ln_eps = GPT_DEFAULT_LN_EPS};

static gpt_model *initialised(void) {
    gpt_model *m = gpt_new(kt_ctx(), &small);
    ck_assert_msg(m != NULL, "%s", kiln_error_message());
    ck_assert_int_eq(gpt_init(m, 7), KILN_OK);
    return m;
}

static void logits_of(gpt_model *m, float *out, int64_t n) {
    int64_t shape[2] = {1, 9};
    int32_t ids[9] = {72, 101, 108, 108, 111, 44, 32, 119, 0};
    kiln_tensor *t = kiln_tensor_new(m->ctx, KILN_I32, 2, shape);
    ck_assert_int_eq(kiln_upload(t, ids, sizeof ids), KILN_OK);
    kiln_tensor *logits = gpt_forward(m, t, 0.0f);
    ck_assert_msg(logits != NULL, "%s", kiln_error_message());
    ck_assert_int_eq(kiln_download_f32(logits, out, n), KILN_OK);
    kiln_step_reset(m->ctx);
    kiln_tensor_free(t);
}

/* Loop index: Q8_0, Q4_0, Q4_1. */
START_TEST(quantized_in_memory_equals_the_gguf_round_trip) {
    static const char *const types[] = {"q8_0", "q4_0", "q4_1"};
    const gpt_quant_type *type = gpt_quant_type_find(types[_i]);
    const kiln_qformat format = (kiln_qformat)gpt_gguf_qformat(type->ggml_type);
    char path[] = "/tmp/kiln_test_quantize_XXXXXX", err[256];
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    kiln_set_grad_enabled(kt_ctx(), 0);
    gpt_model *source = initialised();
    tokenizer *bytes = tokenizer_bytes(0), *tok = NULL;
    ck_assert_msg(gpt_export_gguf(source, bytes, type, path, err, sizeof err) == 0, "%s", err);
    const double f32_bytes = gpt_weight_bytes_per_token(source);
    ck_assert_msg(gpt_quantize(source, type, err, sizeof err) == 0, "%s", err);
    gpt_model *loaded = NULL;
    ck_assert_msg(gpt_load_gguf(kt_ctx(), path, &loaded, &tok, err, sizeof err) == 0, "%s", err);
    unlink(path);
    for (int i = 0; i < loaded->n_params; i++) /* kept in blocks: never an f32 tensor */
        ck_assert_msg(!gpt_keeps_quantized(&loaded->params[i].spec) == (loaded->params[i].t != NULL),
                      "%s", loaded->params[i].spec.name);
    const int64_t n = 9 * GPT_BYTE_VOCAB;
    float *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b);
    logits_of(source, a, n);
    logits_of(loaded, b, n);
    for (int64_t i = 0; i < n; i++) ck_assert_msg(a[i] == b[i], "logit %lld: %g in memory, %g from the file", (long long)i, a[i], b[i]);
    /* the matrices dominate: their bytes scale by 34/128, 18/128 or 20/128 of f32's */
    const double ratio = gpt_weight_bytes_per_token(source) / f32_bytes,
                 want = (double)kiln_qformat_block_bytes(format) / (4.0 * KILN_QBLOCK);
    ck_assert_msg(ratio > want && ratio < want * 1.1, "bytes per token %.4f of f32's, expected just above %.4f", ratio,
                  want);
    ck_assert_double_eq(gpt_weight_bytes_per_token(source), gpt_weight_bytes_per_token(loaded));
    /* a quantized model is not quantized again */
    ck_assert_int_eq(gpt_quantize(source, type, err, sizeof err), -1);
    free(a), free(b);
    gpt_free(source), gpt_free(loaded);
    tokenizer_free(bytes), tokenizer_free(tok);
    kiln_set_grad_enabled(kt_ctx(), 1);
}
END_TEST

/* The models of every type and mix: GPT-2's block at widths 64 (every K type falls back to
 * Q5_0, Q5_1 or Q8_0) and 256, and the Llama family at width 256 tied (the embedding quantized
 * as the head) and untied with q/k/v biases (attn_v of another type than q and k: c_attn
 * in floats). */
static gpt_config model_config(int which) {
    gpt_config c = small;
    if (which == 0) return c;
    c.n_embd = 256, c.n_head = 4, c.n_layer = which == 1 ? 1 : 2; /* 2: use_more_bits picks layer 1, not 0 */
    if (which == 1) return c;
    c.block.norm_type = BLOCK_NORM_TYPE_RMSNORM, c.block.mlp = BLOCK_MLP_SWIGLU, c.block.rope = 1;
    c.block.rope_layout = 1, c.position = GPT_POSITION_ROPE, c.n_kv_head = 2, c.n_ffn = 256, c.ln_eps = 1e-5f;
    c.block.bias = which == 3 ? BLOCK_BIAS_QKV : BLOCK_BIAS_NONE;
    c.untied = which == 3;
    char err[256];
    ck_assert_msg(gpt_config_check(&c, err, sizeof err) == 0, "%s", err);
    return c;
}

/* 1 when m's backend multiplies by format f: Vulkan and OpenCL gain the new formats in their
 * own branches (KILN_ERR_UNSUPPORTED until then); the CPU must. */
static int backend_decodes(gpt_model *m, kiln_qformat f) {
    const int64_t cols = (int64_t)kiln_qformat_block_values(f), shape[2] = {1, cols};
    float *w = calloc((size_t)cols, sizeof *w);
    kiln_qmatrix *q = kiln_qmatrix_new(m->ctx, f, 1, cols);
    kiln_tensor *x = kiln_tensor_new(m->ctx, KILN_F32, 2, shape);
    ck_assert_msg(q && x && kiln_qmatrix_quantize(q, w, 0) == KILN_OK, "%s", kiln_error_message());
    kiln_tensor *y = kiln_matmul_q(x, q, NULL);
    int ok = y != NULL;
    if (!ok) ck_assert_msg(kiln_error_status() == KILN_ERR_UNSUPPORTED && strcmp(kiln_backend_name(m->ctx), "cpu"),
                           "%s", kiln_error_message());
    kiln_clear_error();
    kiln_step_reset(m->ctx);
    kiln_tensor_free(x);
    kiln_qmatrix_free(q);
    free(w);
    return ok;
}

/* 1 when the backend multiplies by every format m keeps. */
static int decodes(gpt_model *m) {
    int ok = !m->quant->head || backend_decodes(m, kiln_qmatrix_format(m->quant->head));
    for (int l = 0; l < m->cfg.n_layer; l++)
        for (int s = 0; s < BLOCK_SLOT_COUNT; s++)
            if (m->blocks[l].q[s]) ok = ok && backend_decodes(m, kiln_qmatrix_format(m->blocks[l].q[s]));
    return ok;
}

/* Both models keep the same tensors in blocks, of the same formats, and the same floats. */
static void same_state(gpt_model *a, gpt_model *b, const char *what) {
    for (int l = 0; l < a->cfg.n_layer; l++)
        for (int s = 0; s < BLOCK_SLOT_COUNT; s++) {
            const kiln_qmatrix *x = a->blocks[l].q[s], *y = b->blocks[l].q[s];
            ck_assert_msg(!x == !y && (!x || kiln_qmatrix_format(x) == kiln_qmatrix_format(y)),
                          "%s: block %d slot %d: %s in memory, %s from the file", what, l, s,
                          x ? kiln_qformat_name(kiln_qmatrix_format(x)) : "floats",
                          y ? kiln_qformat_name(kiln_qmatrix_format(y)) : "floats");
        }
    ck_assert_msg(!a->quant->head == !b->quant->head && !a->quant->embd == !b->quant->embd, "%s: head, embedding", what);
    if (a->quant->head) ck_assert_int_eq(kiln_qmatrix_format(a->quant->head), kiln_qmatrix_format(b->quant->head));
    if (a->quant->embd) ck_assert_int_eq(a->quant->embd_format, b->quant->embd_format);
    for (int i = 0; i < a->n_params + a->n_buffers; i++) {
        gpt_param *p = &a->params[i], *q = gpt_find_param(b, p->spec.name);
        ck_assert_msg(q && !p->t == !q->t, "%s: %s kept differently", what, p->spec.name);
        if (!p->t) continue;
        int64_t n = kiln_numel(p->t);
        float *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
        ck_assert_int_eq(kiln_download_f32(p->t, x, n), KILN_OK);
        ck_assert_int_eq(kiln_download_f32(q->t, y, n), KILN_OK);
        for (int64_t k = 0; k < n; k++)
            ck_assert_msg(x[k] == y[k], "%s: %s[%lld]: %g in memory, %g from the file", what, p->spec.name,
                          (long long)k, x[k], y[k]);
        free(x), free(y);
    }
}

/* Loop index: the 12 quantized types on model 0 (of width 64: the K types fall back), then
 * three mixes on models 1 to 3 (of width 256), which between them hold Q4_K, Q5_K and Q6_K
 * (a K type's quantizer is the slow one: the pure K types are these formats again). */
START_TEST(every_type_and_mix_in_memory_equals_the_file) {
    static const char *const wide[] = {"q4_k_m", "q4_k_s", "q5_k_m"};
    const int model = _i < 12 ? 0 : 1 + (_i - 12) / 3;
    const gpt_config c = model_config(model);
    const gpt_quant_type *type = _i < 12 ? gpt_quant_type_at(2 + _i) : gpt_quant_type_find(wide[(_i - 12) % 3]);
    char path[] = "/tmp/kiln_test_quantize_XXXXXX", err[256], what[96];
    snprintf(what, sizeof what, "model %d %s", model, type->name);
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    kiln_set_grad_enabled(kt_ctx(), 0);
    gpt_model *source = gpt_new(kt_ctx(), &c), *loaded = NULL;
    ck_assert_int_eq(gpt_init(source, 7), KILN_OK);
    tokenizer *bytes = tokenizer_bytes(0), *tok = NULL;
    ck_assert_msg(gpt_export_gguf(source, bytes, type, path, err, sizeof err) == 0, "%s: %s", what, err);
    ck_assert_msg(gpt_quantize(source, type, err, sizeof err) == 0, "%s: %s", what, err);
    ck_assert_msg(gpt_load_gguf(kt_ctx(), path, &loaded, &tok, err, sizeof err) == 0, "%s: %s", what, err);
    unlink(path);
    same_state(source, loaded, what);
    ck_assert_double_eq(gpt_weight_bytes_per_token(source), gpt_weight_bytes_per_token(loaded));
    const int64_t n = 9 * GPT_BYTE_VOCAB;
    float *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b);
    if (decodes(loaded)) {
        logits_of(source, a, n);
        logits_of(loaded, b, n);
        for (int64_t i = 0; i < n; i++)
            ck_assert_msg(a[i] == b[i], "%s: logit %lld: %g in memory, %g from the file", what, (long long)i, a[i], b[i]);
    }
    free(a), free(b);
    gpt_free(source), gpt_free(loaded);
    tokenizer_free(bytes), tokenizer_free(tok);
    kiln_set_grad_enabled(kt_ctx(), 1);
}
END_TEST

/* formats/gguf.c's block sizes of the ggml types and kiln/quant.h's of the formats
 * gpt_gguf_qformat maps them to are one layout; the K types' rows are whole 256-value
 * super-blocks, and no other ggml number maps to a format. */
START_TEST(ggml_types_and_kiln_formats_agree) {
    static const int mapped[] = {GGML_TYPE_Q8_0, GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q5_0,
                                 GGML_TYPE_Q5_1, GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K};
    int seen[KILN_QFORMAT_COUNT] = {0};
    for (size_t i = 0; i < sizeof mapped / sizeof mapped[0]; i++) {
        const int q = gpt_gguf_qformat(mapped[i]);
        ck_assert_int_ge(q, 0);
        ck_assert_int_eq(seen[q]++, 0);
        for (int64_t n = 256; n <= 1024; n += 256)
            ck_assert_uint_eq(gguf_row_bytes(mapped[i], n), kiln_qformat_row_bytes((kiln_qformat)q, n));
        ck_assert_uint_eq(gguf_row_bytes(mapped[i], 192), kiln_qformat_block_values((kiln_qformat)q) == 256 ? 0
                          : kiln_qformat_row_bytes((kiln_qformat)q, 192));
    }
    ck_assert_int_eq(seen[KILN_Q8_K], 0); /* an activation format, never a weight */
    for (int t = 0; t < 40; t++) {
        int listed = 0;
        for (size_t i = 0; i < sizeof mapped / sizeof mapped[0]; i++) listed |= mapped[i] == t;
        if (!listed) ck_assert_int_eq(gpt_gguf_qformat(t), -1);
    }
}
END_TEST

static void add_tests(Suite *s, TCase *tc) {
    (void)s;
    tcase_add_test(tc, ggml_types_and_kiln_formats_agree);
    tcase_add_loop_test(tc, quantized_in_memory_equals_the_gguf_round_trip, 0, 3);
    tcase_add_loop_test(tc, every_type_and_mix_in_memory_equals_the_file, 0, 12 + 3 * 3);
}

int main(int argc, char **argv) { return kt_main(argc, argv, "host_gpt_quantize", add_tests, NULL, 0); }
