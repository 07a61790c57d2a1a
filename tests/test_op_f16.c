/* Mixed precision at the op level (issue #6), on every backend: a mix of f32 and f16 in one
 * op is an error that says what to convert; outputs take the inputs' dtype while the
 * statistics and scalars stay f32; gradients of f16 tensors are f16 and agree with the same
 * computation in f32; kiln_cast is differentiable both ways; and a device without 16-bit
 * storage refuses f16 tensors with a message that names the way out.
 *
 * The op tables of the other test_op_* programs run every case in f16 as well (testutil);
 * this file holds what a case table cannot express. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "testutil.h"

/* A persistent tensor of `dtype` from f32 values (rounded when dtype is f16). */
static kiln_tensor *make(kiln_ctx *ctx, kiln_dtype dtype, int ndim, const int64_t *shape, const float *v, int grad) {
    kiln_tensor *t = kt_tensor(ctx, dtype, ndim, shape, v);
    if (grad) kiln_set_requires_grad(t, 1);
    return t;
}

static void expect_dtype_error(const kiln_tensor *result, const char *call, const char *want) {
    ck_assert_msg(result == NULL, "%s accepted mixed dtypes", call);
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_DTYPE);
    const char *msg = kiln_error_message();
    ck_assert_msg(strstr(msg, want) && strstr(msg, "kiln_cast"), "%s: message '%s' lacks '%s' or kiln_cast", call, msg,
                  want);
}

START_TEST(mixed_dtypes_are_errors_that_say_what_to_convert) {
    if (!kt_f16_ok("mixed_dtypes_are_errors_that_say_what_to_convert")) return;
    kiln_ctx *ctx = kt_ctx();
    int64_t s2[2] = {2, 3}, s3[1] = {3}, s4[4] = {1, 1, 2, 3}, s32[2] = {3, 2};
    kiln_tensor *a32 = kiln_tensor_new(ctx, KILN_F32, 2, s2), *a16 = kiln_tensor_new(ctx, KILN_F16, 2, s2);
    kiln_tensor *w32 = kiln_tensor_new(ctx, KILN_F32, 1, s3), *w16 = kiln_tensor_new(ctx, KILN_F16, 1, s3);
    kiln_tensor *b32 = kiln_tensor_new(ctx, KILN_F32, 2, s32), *b16 = kiln_tensor_new(ctx, KILN_F16, 2, s32);
    kiln_tensor *p32 = kiln_tensor_new(ctx, KILN_F32, 4, s4), *p16 = kiln_tensor_new(ctx, KILN_F16, 4, s4);
    kiln_clear_error();
    expect_dtype_error(kiln_add(a16, a32), "add", "add: a is f16 but b is f32");
    expect_dtype_error(kiln_sub(a32, w16), "sub", "sub: a is f32 but b is f16");
    expect_dtype_error(kiln_mul(a16, w32), "mul", "mul: a is f16 but b is f32");
    expect_dtype_error(kiln_matmul(a16, b32, NULL, 0, 0), "matmul", "matmul: a is f16 but b is f32");
    int64_t s2b[1] = {2};
    kiln_tensor *bias32 = kiln_tensor_new(ctx, KILN_F32, 1, s2b);
    expect_dtype_error(kiln_matmul(a16, b16, bias32, 0, 0), "matmul bias", "bias is f32");
    expect_dtype_error(kiln_layernorm(a16, w32, NULL, 1e-5f), "layernorm weight", "x is f16 but weight is f32");
    expect_dtype_error(kiln_layernorm(a16, w16, w32, 1e-5f), "layernorm bias", "x is f16 but bias is f32");
    expect_dtype_error(kiln_rmsnorm(a32, w16, 1e-5f), "rmsnorm", "x is f32 but weight is f16");
    kiln_softmax_opts o = {.add = p32};
    expect_dtype_error(kiln_softmax(p16, &o), "softmax add", "scores is f16 but add is f32");
    kiln_tensor *cat[2] = {a32, a16};
    expect_dtype_error(kiln_concat(cat, 2, 0), "concat", "input 1 is f16 but input 0 is f32");
    kiln_tensor *norms[2] = {w16, a32};
    expect_dtype_error(kiln_global_norm(norms, 2), "global_norm", "tensor 1 is f32 but tensor 0 is f16");
    /* the same ops with one dtype throughout are fine */
    ck_assert_ptr_nonnull(kiln_add(a16, w16));
    ck_assert_ptr_nonnull(kiln_matmul(a16, b16, NULL, 0, 0));
    ck_assert_ptr_nonnull(kiln_layernorm(a16, w16, w16, 1e-5f));
    kiln_step_reset(ctx);
    kiln_tensor *all[] = {a32, a16, w32, w16, b32, b16, p32, p16, bias32};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) kiln_tensor_free(all[i]);
}
END_TEST

/* Outputs take the inputs' dtype; losses, reductions, norms and entropies are f32. */
START_TEST(outputs_f16_statistics_f32) {
    if (!kt_f16_ok("outputs_f16_statistics_f32")) return;
    kiln_ctx *ctx = kt_ctx();
    int64_t sx[2] = {2, 3}, sw[2] = {3, 4}, sp[4] = {1, 2, 2, 3}, st[1] = {2};
    const float xv[] = {1, -2, 0.5f, 3, 0.25f, -1}, wv[] = {1, 0, -1, 2, 0.5f, 1, 1, -1, 2, 2, 0, 1};
    const float pv[] = {0.5f, 0.25f, 0.25f, 1, 0, 0, 0.125f, 0.375f, 0.5f, 0.5f, 0.5f, 0};
    const int32_t tv[] = {1, 3};
    kiln_tensor *x = make(ctx, KILN_F16, 2, sx, xv, 0), *w = make(ctx, KILN_F16, 2, sw, wv, 0);
    kiln_tensor *p = make(ctx, KILN_F16, 4, sp, pv, 0), *t = kt_tensor_i32(ctx, 1, st, tv);
    kiln_tensor *y = kiln_matmul(x, w, NULL, 0, 0);
    ck_assert_ptr_nonnull(y);
    ck_assert_int_eq(y->dtype, KILN_F16);
    /* small integers and halves: exact in f16, so the product is too */
    const float want[] = {1.0f, -1.0f, -3.0f, 4.5f, 1.125f, -1.75f, -2.75f, 4.75f};
    kt_expect_values(y, want, 8, 0);
    kiln_tensor *loss = kiln_cross_entropy(y, t, 0.0f, -1);
    ck_assert_ptr_nonnull(loss);
    ck_assert_int_eq(loss->dtype, KILN_F32);
    ck_assert_int_eq(kiln_sum(x)->dtype, KILN_F32);
    ck_assert_int_eq(kiln_mean(x)->dtype, KILN_F32);
    ck_assert_int_eq(kiln_global_norm(&x, 1)->dtype, KILN_F32);
    ck_assert_int_eq(kiln_attention_entropy(p)->dtype, KILN_F32);
    ck_assert_int_eq(kiln_gelu(x)->dtype, KILN_F16);
    ck_assert_int_eq(kiln_layernorm(x, NULL, NULL, 1e-5f)->dtype, KILN_F16);
    ck_assert_int_eq(kiln_softmax(p, NULL)->dtype, KILN_F16);
    ck_assert_int_eq(kiln_slice(x, 1, 1, 2)->dtype, KILN_F16);
    float sum;
    ck_assert(kiln_read_scalar(kiln_sum(x), &sum) == KILN_OK);
    ck_assert_float_eq(sum, 1.75f);
    kiln_step_reset(ctx);
    kiln_tensor_free(x), kiln_tensor_free(w), kiln_tensor_free(p), kiln_tensor_free(t);
}
END_TEST

/* One small model twice, in f32 and in f16 from the same (f16-exact) values: every
 * gradient of an f16 tensor is f16, and close to the f32 one. The loss is f32 in both. */
typedef struct model {
    kiln_tensor *x, *w, *b, *ln_w, *table, *ids, *targets;
} model;

static model model_new(kiln_ctx *ctx, kiln_dtype dt) {
    int64_t sx[3] = {2, 3, 8}, sw[2] = {8, 8}, s8[1] = {8}, stab[2] = {11, 8}, sid[2] = {2, 3};
    float xv[48], wv[64], bv[8], lnv[8], tabv[88];
    for (int i = 0; i < 48; i++) xv[i] = kiln_f16_to_f32(kiln_f32_to_f16(kiln_rng_normal(3, 0, (uint64_t)i)));
    for (int i = 0; i < 64; i++) wv[i] = kiln_f16_to_f32(kiln_f32_to_f16(0.3f * kiln_rng_normal(3, 1, (uint64_t)i)));
    for (int i = 0; i < 8; i++) bv[i] = 0.125f * (float)(i - 4), lnv[i] = 1.0f + 0.0625f * (float)i;
    for (int i = 0; i < 88; i++) tabv[i] = kiln_f16_to_f32(kiln_f32_to_f16(kiln_rng_normal(3, 2, (uint64_t)i)));
    const int32_t idv[] = {1, 4, 4, 10, 0, 4}, tv[] = {2, 7, 0, 5, 5, 1};
    model m = {.x = make(ctx, dt, 3, sx, xv, 1), .w = make(ctx, dt, 2, sw, wv, 1), .b = make(ctx, dt, 1, s8, bv, 1),
               .ln_w = make(ctx, dt, 1, s8, lnv, 1), .table = make(ctx, dt, 2, stab, tabv, 1),
               .ids = kt_tensor_i32(ctx, 2, sid, idv), .targets = kt_tensor_i32(ctx, 2, sid, tv)};
    return m;
}

static void model_free(model *m) {
    kiln_tensor *all[] = {m->x, m->w, m->b, m->ln_w, m->table, m->ids, m->targets};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) kiln_tensor_free(all[i]);
}

/* loss = xent(matmul(gelu(layernorm(x + embed(ids))), w) + b ... through split/merge heads) */
static kiln_tensor *model_loss(model *m) {
    kiln_tensor *h = kiln_add(m->x, kiln_embedding(m->table, m->ids));
    h = kiln_gelu(kiln_layernorm(h, m->ln_w, NULL, 1e-5f));
    h = kiln_merge_heads(kiln_split_heads(h, 2));
    kiln_tensor *logits = kiln_matmul(h, m->w, m->b, 0, 0);
    return kiln_cross_entropy(logits, m->targets, 0.1f, -1);
}

START_TEST(gradients_of_f16_tensors_are_f16) {
    if (!kt_f16_ok("gradients_of_f16_tensors_are_f16")) return;
    kiln_ctx *ctx = kt_ctx();
    model m32 = model_new(ctx, KILN_F32), m16 = model_new(ctx, KILN_F16);
    /* one backward per step: the f32 model's, then the f16 model's */
    float v32, v16;
    kiln_tensor *l32 = model_loss(&m32);
    ck_assert_msg(l32 && kiln_backward(l32, 1.0f) == KILN_OK, "%s", kiln_error_message());
    ck_assert(kiln_read_scalar(l32, &v32) == KILN_OK);
    kiln_step_reset(ctx);
    kiln_tensor *l16 = model_loss(&m16);
    ck_assert_msg(l16 != NULL, "%s", kiln_error_message());
    ck_assert_int_eq(l16->dtype, KILN_F32);
    ck_assert_msg(kiln_backward(l16, 1.0f) == KILN_OK, "%s", kiln_error_message());
    ck_assert(kiln_read_scalar(l16, &v16) == KILN_OK);
    ck_assert_msg(fabsf(v32 - v16) < 2e-3f * fabsf(v32), "loss f32 %g vs f16 %g", v32, v16);
    kiln_tensor *p32[] = {m32.x, m32.w, m32.b, m32.ln_w, m32.table}, *p16[] = {m16.x, m16.w, m16.b, m16.ln_w, m16.table};
    for (int i = 0; i < 5; i++) {
        kiln_tensor *g32 = kiln_grad(p32[i]), *g16 = kiln_grad(p16[i]);
        ck_assert_msg(g16 != NULL, "parameter %d has no gradient in f16", i);
        ck_assert_int_eq(g32->dtype, KILN_F32);
        ck_assert_msg(g16->dtype == KILN_F16, "the gradient of f16 parameter %d is %s", i, kiln_dtype_name(g16->dtype));
        int64_t n = kiln_numel(g32);
        float *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b);
        ck_assert(kiln_download_f32(g32, a, n) == KILN_OK && kiln_download_f32(g16, b, n) == KILN_OK);
        double err = kt_normalized_error(a, b, n);
        ck_assert_msg(err < 1e-5, "parameter %d: f16 gradient vs f32: normalized error %g", i, err);
        free(a), free(b);
    }
    kiln_step_reset(ctx);
    model_free(&m32), model_free(&m16);
}
END_TEST

/* kiln_cast carries gradients both ways, each arriving in its tensor's dtype. */
START_TEST(cast_is_differentiable_both_ways) {
    if (!kt_f16_ok("cast_is_differentiable_both_ways")) return;
    kiln_ctx *ctx = kt_ctx();
    int64_t s[1] = {4};
    const float v[] = {1.0f, -2.5f, 0.1f, 3.0f}, wv[] = {0.5f, 2.0f, -1.0f, 0.25f};
    kiln_tensor *x32 = make(ctx, KILN_F32, 1, s, v, 1), *x16 = make(ctx, KILN_F16, 1, s, v, 1);
    kiln_tensor *w32 = make(ctx, KILN_F32, 1, s, wv, 0), *w16 = make(ctx, KILN_F16, 1, s, wv, 0);
    /* f32 -> f16 -> (f16 math) and f16 -> f32 -> (f32 math), each used twice so that the
     * second use accumulates into the first's gradient */
    kiln_tensor *h = kiln_cast(x32, KILN_F16), *f = kiln_cast(x16, KILN_F32);
    kiln_tensor *loss = kiln_add(kiln_sum(kiln_mul(h, w16)), kiln_sum(kiln_add(kiln_mul(f, w32), kiln_mul(x32, w32))));
    ck_assert_msg(loss != NULL, "%s", kiln_error_message());
    ck_assert(kiln_backward(loss, 1.0f) == KILN_OK);
    ck_assert_int_eq(kiln_grad(x32)->dtype, KILN_F32);
    ck_assert_int_eq(kiln_grad(x16)->dtype, KILN_F16);
    const float want32[] = {1.0f, 4.0f, -2.0f, 0.5f}; /* w16 through the cast, plus w32 */
    kt_expect_values(kiln_grad(x32), want32, 4, 0);
    kt_expect_values(kiln_grad(x16), wv, 4, 0);
    kiln_step_reset(ctx);
    kiln_tensor_free(x32), kiln_tensor_free(x16), kiln_tensor_free(w32), kiln_tensor_free(w16);
}
END_TEST

/* A device that cannot store f16 (here: the test context's table with supports_f16 saying
 * no, as Vulkan's minimum-limits mode does) refuses f16 tensors, clearly. */
static int no_f16(void *dev) {
    (void)dev;
    return 0;
}

START_TEST(devices_without_f16_storage_refuse_f16) {
    kiln_ctx *ctx = kt_ctx();
    ck_assert_int_eq(kiln_supports_dtype(ctx, KILN_F32), 1);
    ck_assert_int_eq(kiln_supports_dtype(ctx, KILN_I32), 1);
    ck_assert_int_eq(kiln_supports_dtype(NULL, KILN_F32), 0);
    const kiln_backend *real = ctx->be;
    kiln_backend limited = *real;
    limited.supports_f16 = no_f16;
    ctx->be = &limited;
    ck_assert_int_eq(kiln_supports_dtype(ctx, KILN_F16), 0);
    int64_t s[1] = {3};
    kiln_tensor *t = kiln_tensor_new(ctx, KILN_F16, 1, s);
    kiln_tensor *f = kiln_tensor_new(ctx, KILN_F32, 1, s);
    kiln_tensor *tmp = kiln_tensor_temp(ctx, KILN_F16, 1, s);
    ctx->be = real;
    ck_assert_ptr_null(t);
    ck_assert_ptr_null(tmp);
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_UNSUPPORTED);
    const char *msg = kiln_error_message();
    ck_assert_msg(strstr(msg, kiln_device_name(ctx)) && strstr(msg, "cannot store f16") && strstr(msg, "use fp32"),
                  "message: %s", msg);
    ck_assert_ptr_nonnull(f); /* f32 is unaffected */
    kiln_tensor_free(f);
    kiln_step_reset(ctx);
}
END_TEST

static void add_tests(Suite *s, TCase *tc) {
    (void)s;
    tcase_add_test(tc, mixed_dtypes_are_errors_that_say_what_to_convert);
    tcase_add_test(tc, outputs_f16_statistics_f32);
    tcase_add_test(tc, gradients_of_f16_tensors_are_f16);
    tcase_add_test(tc, cast_is_differentiable_both_ways);
    tcase_add_test(tc, devices_without_f16_storage_refuse_f16);
}

int main(int argc, char **argv) { return kt_main(argc, argv, "f16", add_tests, NULL, 0); }
