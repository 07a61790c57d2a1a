/* The OpenCL backend's memory: the sub-allocator (no two live buffers overlap, freed ranges
 * are reused), tensors at offsets that are only element-aligned, many queued uploads before
 * one read, out-of-memory and too-large buffers as errors (KILN_CL_MEM_LIMIT and
 * KILN_CL_MAX_BUFFER shrink the device so the test stays small). */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#ifdef KILN_HAVE_OPENCL

static kiln_ctx *open_cl(void) {
    kiln_ctx *ctx;
    ck_assert_msg(kiln_open("opencl", &ctx) == KILN_OK, "%s", kiln_error_message());
    return ctx;
}

/* A tensor of n floats holding tag * 1000 + i. */
static kiln_tensor *tagged(kiln_ctx *ctx, int64_t n, int tag) {
    float *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = (float)(tag * 1000 + i % 1000);
    kiln_tensor *t = kt_tensor(ctx, KILN_F32, 1, &n, v);
    free(v);
    return t;
}

static void expect_tagged(const kiln_tensor *t, int tag) {
    int64_t n = kiln_numel(t);
    float *v = malloc((size_t)n * sizeof *v);
    ck_assert(kiln_download_f32(t, v, n) == KILN_OK);
    for (int64_t i = 0; i < n; i++)
        ck_assert_msg(v[i] == (float)(tag * 1000 + i % 1000), "tensor %d element %lld: %g", tag, (long long)i, v[i]);
    free(v);
}

START_TEST(buffers_never_overlap) {
    kiln_ctx *ctx = open_cl();
    enum { N = 40 };
    kiln_tensor *t[N];
    /* assorted sizes, some larger than half a block (a block of their own) */
    for (int i = 0; i < N; i++) t[i] = tagged(ctx, 1 + (i * 7919) % 5000 + (i == 7 ? 9000000 : 0), i);
    for (int i = 0; i < N; i += 3) kiln_tensor_free(t[i]), t[i] = NULL;
    for (int i = 0; i < N; i += 3) t[i] = tagged(ctx, 1 + (i * 104729) % 3000, i);
    for (int i = 0; i < N; i++) expect_tagged(t[i], i);
    for (int i = 0; i < N; i++) kiln_tensor_free(t[i]);
    kiln_close(ctx);
}
END_TEST

START_TEST(element_aligned_views) {
    kiln_ctx *ctx = open_cl();
    /* rows of 3 f16 values: row 1 starts 6 bytes into the buffer */
    int64_t shape[2] = {4, 3};
    float v[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    kiln_tensor *h = kt_tensor(ctx, KILN_F16, 2, shape, v);
    kiln_tensor *row = kiln_view_rows(h, 1, 2);
    float expect[6] = {4, 5, 6, 7, 8, 9};
    kt_expect_values(kiln_cast(row, KILN_F32), expect, 6, 0);
    /* and an f32 op reading and writing at odd element offsets */
    kiln_tensor *f = kt_tensor(ctx, KILN_F32, 2, shape, v);
    kiln_tensor *r3 = kiln_view_rows(f, 3, 1);
    float neg[3] = {-10, -11, -12};
    kt_expect_values(kiln_scale(r3, -1), neg, 3, 0);
    kiln_step_reset(ctx);
    kiln_tensor_free(h), kiln_tensor_free(f);
    kiln_close(ctx);
}
END_TEST

START_TEST(queued_uploads_then_one_read) {
    kiln_ctx *ctx = open_cl();
    int64_t n = 1000;
    kiln_tensor *t = kiln_tensor_new(ctx, KILN_F32, 1, &n);
    float *v = malloc((size_t)n * sizeof *v);
    /* each upload's source is overwritten right after the call: the backend must have
     * taken its copy by then */
    for (int round = 0; round < 50; round++) {
        for (int64_t i = 0; i < n; i++) v[i] = (float)(round * n + i);
        ck_assert(kiln_upload_f32(t, v, n) == KILN_OK);
    }
    memset(v, 0, (size_t)n * sizeof *v);
    ck_assert(kiln_download_f32(t, v, n) == KILN_OK);
    for (int64_t i = 0; i < n; i++) ck_assert_float_eq(v[i], (float)(49 * n + i));
    free(v);
    kiln_tensor_free(t);
    kiln_close(ctx);
}
END_TEST

START_TEST(out_of_memory_is_an_error) {
    setenv("KILN_CL_MEM_LIMIT", "100000000", 1); /* 100 MB */
    kiln_ctx *ctx = open_cl();
    unsetenv("KILN_CL_MEM_LIMIT");
    int64_t n = 8 << 20; /* 32 MiB each */
    kiln_tensor *t[8] = {0};
    int made = 0;
    while (made < 8 && (t[made] = kiln_tensor_new(ctx, KILN_F32, 1, &n)) != NULL) made++;
    ck_assert_msg(made >= 1 && made < 8, "made %d tensors of 32 MiB under a 100 MB limit", made);
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_MEMORY);
    ck_assert_msg(strstr(kiln_error_message(), "out of device memory") != NULL, "%s", kiln_error_message());
    /* freeing makes room again */
    kiln_tensor_free(t[0]);
    t[0] = kiln_tensor_new(ctx, KILN_F32, 1, &n);
    ck_assert_msg(t[0] != NULL, "%s", kiln_error_message());
    for (int i = 0; i < made; i++) kiln_tensor_free(t[i]);
    kiln_close(ctx);
}
END_TEST

START_TEST(larger_than_max_buffer_is_an_error) {
    setenv("KILN_CL_MAX_BUFFER", "1048576", 1); /* 1 MiB */
    kiln_ctx *ctx = open_cl();
    unsetenv("KILN_CL_MAX_BUFFER");
    int64_t n = 1 << 19; /* 2 MiB */
    ck_assert_ptr_null(kiln_tensor_new(ctx, KILN_F32, 1, &n));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_MEMORY);
    n = 1 << 17; /* 512 KiB fits */
    kiln_tensor *t = kiln_tensor_new(ctx, KILN_F32, 1, &n);
    ck_assert_msg(t != NULL, "%s", kiln_error_message());
    kiln_tensor_free(t);
    kiln_close(ctx);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, buffers_never_overlap);
    tcase_add_test(tc, element_aligned_views);
    tcase_add_test(tc, queued_uploads_then_one_read);
    tcase_add_test(tc, out_of_memory_is_an_error);
    tcase_add_test(tc, larger_than_max_buffer_is_an_error);
}

int main(void) {
    int skip = kt_require_backend("opencl");
    return skip ? skip : kt_run_tests("opencl_memory", "opencl", add_tests);
}

#else
int main(void) { return 77; } /* built without OpenCL */
#endif
