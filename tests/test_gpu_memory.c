/* A GPU backend's memory (--backend vulkan or opencl): sub-allocation (thousands of small
 * tensors, no two live buffers overlapping, freed ranges reused), views at any element
 * offset, the ordering of uploads and frees against work that is recorded but not yet run,
 * the largest buffer, and running out of device memory.
 *
 * The limits are lowered so that the test stays small: on Vulkan by its registration
 * (tests/vulkan.cmake: KILN_VK_MAX_BINDING splits tensors over several bindings and
 * KILN_VK_HEAP_BUDGET gives a 256 MiB heap to fill), on OpenCL here, at open
 * (KILN_CL_MEM_LIMIT, KILN_CL_MAX_BUFFER). */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "kiln/probe.h"
#include "testutil.h"

/* A variable that lowers a limit of the device when a context opens. */
typedef struct env_setting {
    const char *name, *value;
} env_setting;

/* How a backend's limits are reached. */
typedef struct memory_limits {
    const char *backend;
    env_setting memory;          /* lowers the device's memory (none: the registration does) */
    int64_t filling_floats;      /* tensors of this many floats fill it... */
    int filling_cap;             /* ...before this many of them */
    env_setting largest_buffer;  /* lowers the largest buffer (none: the device's own) */
    size_t least_largest_buffer; /* the largest buffer the API guarantees */
    int64_t large_floats;        /* a tensor that fits (spanning several bindings on Vulkan) */
} memory_limits;

static const memory_limits g_limits[] = {
    {.backend = "vulkan",
     .filling_floats = (int64_t)16 << 20, /* 64 MiB */
     .filling_cap = 512,
     .least_largest_buffer = (size_t)1 << 30, /* maxMemoryAllocationSize's minimum */
     .large_floats = 300000},                 /* 1.2 MB, several bindings of KILN_VK_MAX_BINDING */
    {.backend = "opencl",
     .memory = {.name = "KILN_CL_MEM_LIMIT", .value = "100000000"}, /* 100 MB */
     .filling_floats = 8 << 20,                                     /* 32 MiB */
     .filling_cap = 8,
     .largest_buffer = {.name = "KILN_CL_MAX_BUFFER", .value = "1048576"}, /* 1 MiB */
     .large_floats = 1 << 17},                                              /* 512 KiB */
};

static const memory_limits *g_lim;

static kiln_ctx *open_device(void) {
    kiln_ctx *ctx;
    ck_assert_msg(kiln_open(kt_backend(), &ctx) == KILN_OK, "%s", kiln_error_message());
    return ctx;
}

/* A context opened with `setting` in the environment (none: as it is). */
static kiln_ctx *open_device_with(env_setting setting) {
    if (!setting.name) return open_device();
    setenv(setting.name, setting.value, 1);
    kiln_ctx *ctx = open_device();
    unsetenv(setting.name);
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

/* Asserts once, on the first wrong element: an assertion per element of the 36 MB tensor
 * would cost a minute (Check records the place of every assertion that passes). */
static void expect_tagged(const kiln_tensor *t, int tag) {
    int64_t n = kiln_numel(t), i = 0;
    float *v = malloc((size_t)n * sizeof *v);
    ck_assert(kiln_download_f32(t, v, n) == KILN_OK);
    while (i < n && v[i] == (float)(tag * 1000 + i % 1000)) i++;
    ck_assert_msg(i == n, "tensor %d element %lld: %g", tag, (long long)i, i < n ? v[i] : 0.0f);
    free(v);
}

/* Thousands of small tensors: far more than the 4096 allocations some devices allow, so
 * they must share device allocations. */
START_TEST(many_small_tensors) {
    kiln_ctx *ctx = open_device();
    enum { COUNT = 5000 };
    kiln_tensor **t = calloc(COUNT, sizeof *t);
    for (int i = 0; i < COUNT; i++) {
        t[i] = kiln_tensor_1d(ctx, KILN_F32, 1 + i % 7);
        ck_assert_msg(t[i] != NULL, "tensor %d: %s", i, kiln_error_message());
    }
    ck_assert_int_eq(kiln_fill(t[4321], 4321.0f), KILN_OK);
    float v;
    ck_assert_int_eq(kiln_read_scalar(t[4321], &v), KILN_OK);
    ck_assert(v == 4321.0f);
    ck_assert_int_eq(kiln_read_scalar(t[4320], &v), KILN_OK);
    ck_assert(v == 0.0f);
    for (int i = 0; i < COUNT; i += 2) kiln_tensor_free(t[i]);
    for (int i = 0; i < COUNT; i += 2) ck_assert_ptr_nonnull(t[i] = kiln_tensor_1d(ctx, KILN_F32, 3));
    for (int i = 0; i < COUNT; i++) kiln_tensor_free(t[i]);
    free(t);
    kiln_close(ctx);
}
END_TEST

/* No two live buffers overlap, and freed ranges are reused. */
START_TEST(buffers_never_overlap) {
    kiln_ctx *ctx = open_device();
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

/* The largest buffer bounds one tensor, and the error says how large it is; a tensor below
 * it works (on Vulkan it spans several bindings, its kernels split), zeroed, filled and read
 * back at both ends. */
START_TEST(largest_buffer) {
    kiln_ctx *ctx = open_device_with(g_lim->largest_buffer);
    size_t max = ctx->be->max_buffer_bytes;
    ck_assert_msg(max >= g_lim->least_largest_buffer, "max_buffer_bytes %zu", max);
    int64_t too_many = (int64_t)(max / 4) + 1;
    ck_assert_ptr_null(kiln_tensor_1d(ctx, KILN_F32, too_many));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_MEMORY);
    ck_assert_ptr_nonnull(strstr(kiln_error_message(), "largest buffer"));
    const int64_t n = g_lim->large_floats;
    kiln_tensor *big = kiln_tensor_1d(ctx, KILN_F32, n);
    ck_assert_msg(big != NULL, "%s", kiln_error_message());
    kiln_tensor *last = kiln_view_rows(big, n - 1, 1);
    ck_assert_int_eq(kiln_fill(last, 7.0f), KILN_OK);
    float v;
    ck_assert_int_eq(kiln_read_scalar(last, &v), KILN_OK);
    ck_assert(v == 7.0f);
    ck_assert_int_eq(kiln_read_scalar(kiln_view_rows(big, 0, 1), &v), KILN_OK);
    ck_assert(v == 0.0f);
    kiln_step_reset(ctx);
    kiln_tensor_free(big);
    kiln_close(ctx);
}
END_TEST

/* The copy-bandwidth probe over a buffer larger than one Vulkan binding: copied in pieces,
 * and the probe checks every byte it copied. */
START_TEST(copy_probe_beyond_one_binding) {
    kiln_ctx *ctx = open_device();
    kiln_measure m;
    ck_assert_msg(kiln_probe_copy(ctx, (size_t)1 << 20, 1, &m) == KILN_OK, "%s", kiln_error_message());
    ck_assert(m.median > 0);
    kiln_close(ctx);
}
END_TEST

/* Filling the device returns KILN_ERR_MEMORY, and freeing makes room again. */
START_TEST(out_of_memory_is_an_error) {
    kiln_ctx *ctx = open_device_with(g_lim->memory);
    const int64_t n = g_lim->filling_floats;
    kiln_tensor *t[512] = {0};
    int made = 0;
    while (made < g_lim->filling_cap && (t[made] = kiln_tensor_1d(ctx, KILN_F32, n)) != NULL) made++;
    ck_assert_msg(made >= 1 && made < g_lim->filling_cap, "made %d tensors of %lld floats: no limit was hit", made,
                  (long long)n);
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_MEMORY);
    ck_assert_msg(strstr(kiln_error_message(), "out of device memory"), "%s", kiln_error_message());
    kiln_tensor_free(t[0]);
    t[0] = kiln_tensor_1d(ctx, KILN_F32, n);
    ck_assert_msg(t[0] != NULL, "after freeing: %s", kiln_error_message());
    for (int i = 0; i < made; i++) kiln_tensor_free(t[i]);
    kiln_close(ctx);
}
END_TEST

/* Views start at any element: an f16 row at an odd half (6 bytes into the buffer), an f32
 * row at 4 bytes; ops read and write through them. */
START_TEST(views_at_any_element) {
    kiln_ctx *ctx = open_device();
    int64_t shape[2] = {7, 3};
    float vals[21];
    for (int i = 0; i < 21; i++) vals[i] = (float)i - 10.0f;
    kiln_tensor *h = kt_tensor(ctx, KILN_F16, 2, shape, vals);
    kiln_tensor *f = kt_tensor(ctx, KILN_F32, 2, shape, vals);
    for (int64_t start = 0; start < 7; start++) {
        kiln_tensor *hv = kiln_view_rows(h, start, 7 - start), *fv = kiln_view_rows(f, start, 7 - start);
        float expect[21];
        for (int64_t i = 0; i < (7 - start) * 3; i++) expect[i] = vals[start * 3 + i] * 2.0f;
        kt_expect_values(kiln_scale(kiln_cast(hv, KILN_F32), 2.0f), expect, (7 - start) * 3, 0);
        kt_expect_values(kiln_scale(fv, 2.0f), expect, (7 - start) * 3, 0);
        /* and writing through a view leaves the neighbouring halves alone */
        ck_assert_int_eq(kiln_fill(kiln_view_rows(h, start, 1), 0.5f), KILN_OK);
    }
    float back[21];
    ck_assert_int_eq(kiln_download_f32(h, back, 21), KILN_OK);
    for (int i = 0; i < 21; i++) ck_assert_msg(back[i] == 0.5f, "element %d: %g", i, back[i]);
    kiln_step_reset(ctx);
    kiln_tensor_free(h);
    kiln_tensor_free(f);
    kiln_close(ctx);
}
END_TEST

/* An upload lands after the work recorded before it, which still sees the old contents. */
START_TEST(upload_after_recorded_work) {
    kiln_ctx *ctx = open_device();
    int64_t shape[1] = {1000};
    float one[1000], two[1000];
    for (int i = 0; i < 1000; i++) one[i] = (float)i, two[i] = -(float)i;
    kiln_tensor *x = kt_tensor(ctx, KILN_F32, 1, shape, one);
    kiln_tensor *y = kiln_scale(x, 2.0f); /* recorded, not run */
    ck_assert_int_eq(kiln_upload_f32(x, two, 1000), KILN_OK);
    kiln_tensor *z = kiln_scale(x, 3.0f);
    float ey[1000], ez[1000];
    for (int i = 0; i < 1000; i++) ey[i] = 2.0f * one[i], ez[i] = 3.0f * two[i];
    kt_expect_values(y, ey, 1000, 0);
    kt_expect_values(z, ez, 1000, 0);
    kiln_step_reset(ctx);
    kiln_tensor_free(x);
    kiln_close(ctx);
}
END_TEST

/* Many uploads queued before one read: each upload's source is overwritten right after
 * the call, so the backend must have taken its copy by then. */
START_TEST(queued_uploads_then_one_read) {
    kiln_ctx *ctx = open_device();
    int64_t n = 1000;
    kiln_tensor *t = kiln_tensor_new(ctx, KILN_F32, 1, &n);
    float *v = malloc((size_t)n * sizeof *v);
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

/* A tensor freed while work that reads it is pending keeps its memory until that work is
 * done, even when a new tensor is allocated and written at once. */
START_TEST(free_after_recorded_work) {
    kiln_ctx *ctx = open_device();
    int64_t shape[1] = {4096};
    float vals[4096], other[4096], expect[4096];
    for (int i = 0; i < 4096; i++) vals[i] = (float)(i % 97), other[i] = 1e6f, expect[i] = 0.5f * vals[i];
    for (int round = 0; round < 8; round++) {
        kiln_tensor *x = kt_tensor(ctx, KILN_F32, 1, shape, vals);
        kiln_tensor *y = kiln_scale(x, 0.5f);
        kiln_tensor_free(x);
        kiln_tensor *reuse = kt_tensor(ctx, KILN_F32, 1, shape, other);
        kt_expect_values(y, expect, 4096, 0);
        kiln_tensor_free(reuse);
        kiln_step_reset(ctx);
    }
    kiln_close(ctx);
}
END_TEST

static void add_tests(Suite *s, TCase *tc) {
    (void)s;
    tcase_add_test(tc, many_small_tensors);
    tcase_add_test(tc, buffers_never_overlap);
    tcase_add_test(tc, largest_buffer);
    tcase_add_test(tc, copy_probe_beyond_one_binding);
    tcase_add_test(tc, out_of_memory_is_an_error);
    tcase_add_test(tc, views_at_any_element);
    tcase_add_test(tc, upload_after_recorded_work);
    tcase_add_test(tc, queued_uploads_then_one_read);
    tcase_add_test(tc, free_after_recorded_work);
}

int main(int argc, char **argv) {
    const char *backend = kt_parse_backend(argc, argv);
    for (size_t i = 0; i < sizeof g_limits / sizeof g_limits[0]; i++)
        if (!strcmp(g_limits[i].backend, backend)) g_lim = &g_limits[i];
    if (!g_lim) {
        fprintf(stderr, "test_gpu_memory: --backend vulkan or opencl, not %s\n", backend);
        return 1;
    }
    return kt_main(argc, argv, "gpu_memory", add_tests, NULL, 0);
}
