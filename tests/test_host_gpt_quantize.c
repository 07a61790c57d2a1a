/* A GPT quantized in memory (model/gpt/gpt_quantize.h) is the model that `kiln export --format
 * gguf --type q8_0|q4_0|q4_1` and loading that file give: the same logits, bit for bit (the same
 * blocks through the same kernels). Loading a quantized GGUF never allocates the f32 tensors
 * of the weights it keeps in blocks. The weight bytes a token reads shrink as the formats
 * say (Q8_0 34, Q4_0 18 and Q4_1 20 bytes per 32 weights for every matrix). */
#define _POSIX_C_SOURCE 200809L /* mkstemp */
#include <stdio.h>
#include <stdlib.h>
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

static void add_tests(Suite *s, TCase *tc) {
    (void)s;
    tcase_add_loop_test(tc, quantized_in_memory_equals_the_gguf_round_trip, 0, 3);
}

int main(int argc, char **argv) { return kt_main(argc, argv, "host_gpt_quantize", add_tests, NULL, 0); }
