/* The Vulkan backend's memory: sub-allocation, the largest buffer, running out of device
 * memory, views at any element offset, and the ordering of uploads and frees against work
 * that is recorded but not yet run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "kiln/probe.h"
#include "testutil.h"

#ifdef KILN_HAVE_VULKAN

static kiln_ctx *open_vulkan(void) {
    kiln_ctx *ctx;
    ck_assert_msg(kiln_open("vulkan", &ctx) == KILN_OK, "%s", kiln_error_message());
    return ctx;
}

/* Thousands of small tensors: far more than the 4096 allocations some devices allow, so
 * they must share device allocations. */
START_TEST(many_small_tensors) {
    kiln_ctx *ctx = open_vulkan();
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

/* The largest buffer (maxMemoryAllocationSize) bounds one tensor, and the table says how
 * large; a tensor beyond one binding (maxStorageBufferRange, lowered by
 * KILN_VK_MAX_BINDING in this test's registration) still works, its kernels split. */
START_TEST(largest_buffer) {
    kiln_ctx *ctx = open_vulkan();
    size_t max = ctx->be->max_buffer_bytes;
    ck_assert_msg(max >= ((size_t)1 << 30), "max_buffer_bytes %zu", max); /* Vulkan's minimum */
    int64_t too_many = (int64_t)(max / 4) + 1;
    ck_assert_ptr_null(kiln_tensor_1d(ctx, KILN_F32, too_many));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_MEMORY);
    ck_assert_ptr_nonnull(strstr(kiln_error_message(), "largest buffer"));
    /* zeroed and filled in pieces, read back at both ends */
    const int64_t n = 300000; /* 1.2 MB, several bindings of KILN_VK_MAX_BINDING */
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

/* The copy-bandwidth probe over buffers larger than one binding: copied in pieces, and the
 * probe checks every byte it copied. */
START_TEST(copy_probe_beyond_one_binding) {
    kiln_ctx *ctx = open_vulkan();
    kiln_measure m;
    ck_assert_msg(kiln_probe_copy(ctx, (size_t)1 << 20, 1, &m) == KILN_OK, "%s", kiln_error_message());
    ck_assert(m.median > 0);
    kiln_close(ctx);
}
END_TEST

/* Filling the device returns KILN_ERR_MEMORY, and freeing makes room again (the heap is
 * lowered to 256 MiB by KILN_VK_HEAP_BUDGET in this test's registration). */
START_TEST(out_of_memory_is_an_error) {
    kiln_ctx *ctx = open_vulkan();
    int64_t n = (int64_t)16 << 20; /* 64 MiB */
    kiln_tensor *t[512];
    int count = 0;
    while (count < 512) {
        t[count] = kiln_tensor_1d(ctx, KILN_F32, n);
        if (!t[count]) break;
        count++;
    }
    ck_assert_msg(count < 512, "512 tensors of %lld floats fit: no limit was hit", (long long)n);
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_MEMORY);
    ck_assert_msg(strstr(kiln_error_message(), "out of device memory"), "%s", kiln_error_message());
    for (int i = 0; i < count; i++) kiln_tensor_free(t[i]);
    kiln_tensor *again = kiln_tensor_1d(ctx, KILN_F32, n);
    ck_assert_msg(again != NULL, "after freeing: %s", kiln_error_message());
    kiln_tensor_free(again);
    kiln_close(ctx);
}
END_TEST

/* Views start at any element: an f16 row at an odd half, an f32 row at 4 bytes. */
START_TEST(views_at_any_element) {
    kiln_ctx *ctx = open_vulkan();
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
    kiln_ctx *ctx = open_vulkan();
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

/* A tensor freed while work that reads it is pending keeps its memory until that work is
 * done, even when a new tensor is allocated and written at once. */
START_TEST(free_after_recorded_work) {
    kiln_ctx *ctx = open_vulkan();
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

static void add_tests(TCase *tc) {
    tcase_add_test(tc, many_small_tensors);
    tcase_add_test(tc, largest_buffer);
    tcase_add_test(tc, copy_probe_beyond_one_binding);
    tcase_add_test(tc, out_of_memory_is_an_error);
    tcase_add_test(tc, views_at_any_element);
    tcase_add_test(tc, upload_after_recorded_work);
    tcase_add_test(tc, free_after_recorded_work);
}

int main(void) {
    int skip = kt_require_backend("vulkan");
    return skip ? skip : kt_run_tests("vulkan_memory", "vulkan", add_tests);
}

#else
int main(void) { return 77; } /* built without Vulkan */
#endif
