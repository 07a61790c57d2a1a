/* f16 storage on OpenCL devices with or without cl_khr_fp16 (PoCL has none): kernels read
 * and write halves with vload_half / vstore_half_rte, so
 *  - f32 -> f16 casts round exactly as kiln_f32_to_f16 (nearest even, subnormals, overflow
 *    to inf, NaN kept), and f16 -> f32 is exact;
 *  - check_finite sees f16 infinities and NaNs;
 *  - an f16 matmul (f32 accumulation) agrees with the CPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#ifdef KILN_HAVE_OPENCL

/* Values that exercise every rounding path of f32 -> f16. */
static int interesting_values(float *v, int cap) {
    int n = 0;
    const float fixed[] = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65519.0f, 65520.0f, 1e6f, -1e6f,
                           6.1035156e-5f, 6.0e-8f, 5.96e-8f, 2.98e-8f, 2.99e-8f, 1e-9f,
                           1.00048828125f, 1.000732421875f, 1.0009765625f, /* halfway cases */
                           3.14159265f, -2.71828f, INFINITY, -INFINITY, NAN};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0] && n < cap; i++) v[n++] = fixed[i];
    for (int i = 0; n < cap; i++) {
        /* random magnitudes over the whole f16 range and beyond, both signs */
        float u = kiln_rng_uniform(3, 1, (uint64_t)i), s = kiln_rng_uniform(3, 2, (uint64_t)i);
        v[n++] = (s < 0.5f ? -1.0f : 1.0f) * powf(2.0f, -30.0f + 48.0f * u);
    }
    return n;
}

START_TEST(cast_rounds_like_the_host) {
    kiln_ctx *ctx = kt_ctx();
    enum { N = 4096 };
    float v[N];
    int64_t n = interesting_values(v, N);
    kiln_tensor *x = kiln_tensor_new(ctx, KILN_F32, 1, &n);
    ck_assert(kiln_upload(x, v, sizeof v) == KILN_OK);
    kiln_tensor *h = kiln_cast(x, KILN_F16);
    ck_assert_msg(h != NULL, "%s", kiln_error_message());
    uint16_t got[N];
    ck_assert(kiln_download(h, got, sizeof got) == KILN_OK);
    for (int64_t i = 0; i < n; i++) {
        uint16_t want = kiln_f32_to_f16(v[i]);
        int both_nan = (want & 0x7c00) == 0x7c00 && (want & 0x3ff) && (got[i] & 0x7c00) == 0x7c00 && (got[i] & 0x3ff);
        ck_assert_msg(got[i] == want || both_nan, "f32 %a (%g): device f16 0x%04x, host 0x%04x", v[i], v[i],
                      got[i], want);
    }
    /* and back: f16 -> f32 is exact */
    float back[N];
    ck_assert(kiln_download(kiln_cast(h, KILN_F32), back, sizeof back) == KILN_OK);
    for (int64_t i = 0; i < n; i++) {
        float want = kiln_f16_to_f32(got[i]);
        ck_assert_msg(memcmp(&back[i], &want, 4) == 0 || (isnan(back[i]) && isnan(want)),
                      "f16 0x%04x: device %g, host %g", got[i], back[i], want);
    }
    kiln_step_reset(ctx);
    kiln_tensor_free(x);
}
END_TEST

START_TEST(check_finite_sees_f16_inf_and_nan) {
    kiln_ctx *ctx = kt_ctx();
    int64_t n = 300;
    kiln_tensor *flag = kiln_tensor_new(ctx, KILN_I32, 0, NULL);
    uint16_t h[300];
    for (int i = 0; i < 300; i++) h[i] = kiln_f32_to_f16((float)i - 150.0f);
    kiln_tensor *x = kiln_tensor_new(ctx, KILN_F16, 1, &n);
    ck_assert(kiln_upload(x, h, sizeof h) == KILN_OK);
    float f;
    ck_assert(kiln_check_finite(x, flag) == KILN_OK);
    ck_assert(kiln_read_scalar(flag, &f) == KILN_OK);
    ck_assert_float_eq(f, 0);
    const uint16_t bad[2] = {0x7c00 /* +inf */, 0x7e01 /* NaN */};
    for (int k = 0; k < 2; k++) {
        h[217] = bad[k];
        ck_assert(kiln_upload(x, h, sizeof h) == KILN_OK);
        ck_assert(kiln_fill(flag, 0) == KILN_OK);
        ck_assert(kiln_check_finite(x, flag) == KILN_OK);
        ck_assert(kiln_read_scalar(flag, &f) == KILN_OK);
        ck_assert_float_eq(f, 1);
    }
    kiln_tensor_free(x), kiln_tensor_free(flag);
}
END_TEST

/* f16 operands (the bias too: an op takes one dtype), f32 accumulation, f16 output: the
 * forward and every gradient against the CPU's f16 matmul. */
static kiln_tensor *build_matmul_nt(kiln_tensor **in, const void *p) {
    (void)p;
    return kiln_matmul(in[0], in[1], in[2], 0, 1);
}
static kiln_tensor *build_matmul_tn(kiln_tensor **in, const void *p) {
    (void)p;
    return kiln_matmul(in[0], in[1], NULL, 1, 0);
}
#define F16(...) {KILN_F16, __VA_ARGS__}
static const kt_case cases[] = {
    {"f16_matmul_nt_bias", build_matmul_nt, NULL, 3,
     {F16(2, {37, 29}, KT_NORMAL, 0, 0, 0), F16(2, {23, 29}, KT_NORMAL, 0, 0, 0), F16(1, {23}, KT_NORMAL, 0, 0, 1)},
     1e-10, 0, 0, 0},
    {"f16_matmul_tn_large", build_matmul_tn, NULL, 2,
     {F16(2, {70, 90}, KT_NORMAL, 0, 0, 0), F16(2, {70, 65}, KT_NORMAL, 0, 0, 0)}, 1e-10, 0, 0, 1},
};

static void add_tests(Suite *s, TCase *tc) {
    (void)s;
    tcase_add_test(tc, cast_rounds_like_the_host);
    tcase_add_test(tc, check_finite_sees_f16_inf_and_nan);
}

int main(int argc, char **argv) {
    (void)argc;
    char *args[] = {argv[0], "--backend", "opencl", NULL};
    return kt_main(3, args, "opencl_f16", add_tests, cases, (int)(sizeof cases / sizeof cases[0]));
}

#else
int main(void) { return 77; } /* built without OpenCL */
#endif
