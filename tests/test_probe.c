/* Device measurement (kiln/probe.h) and the device's memory (kiln_device_memory,
 * kiln/context.h) on one backend (--backend cpu|vulkan|opencl).
 *
 * Timings are never asserted against numbers: the tests check that every figure is a
 * finite positive rate with a coherent spread, that each probe kernel computes exactly
 * what it claims (an FMA kernel that skipped work would report a ceiling too high), that
 * the timer brackets real work (a 1700x larger GEMM takes longer), and that bad arguments
 * and misuse give errors with messages. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "kiln/probe.h"
#include "testutil.h"

static void expect_figure(const kiln_measure *m, int repeats, const char *what) {
    ck_assert_msg(isfinite(m->median) && m->median > 0, "%s: median %g", what, m->median);
    ck_assert_msg(m->min > 0 && m->min <= m->median && m->median <= m->max && isfinite(m->max),
                  "%s: min %g median %g max %g", what, m->min, m->median, m->max);
    ck_assert_msg(isfinite(m->device_s) && m->device_s > 0, "%s: device time %g", what, m->device_s);
    ck_assert_msg(isfinite(m->wall_s) && m->wall_s > 0, "%s: wall time %g", what, m->wall_s);
    ck_assert_int_eq(m->repeats, repeats);
}

/* Every width of a dtype gives a figure or a clean "unsupported"; returns how many ran. */
static int fma_widths(kiln_ctx *ctx, kiln_dtype dtype) {
    int ran = 0;
    for (int w = 1; w <= 32; w *= 2) {
        kiln_measure m;
        kiln_clear_error();
        kiln_status s = kiln_probe_fma(ctx, dtype, w, 2, &m);
        if (s == KILN_ERR_UNSUPPORTED) {
            ck_assert_msg(kiln_error_message()[0] != 0, "unsupported without a message");
            continue;
        }
        ck_assert_msg(s == KILN_OK, "fma %s x%d: %s", kiln_dtype_name(dtype), w, kiln_error_message());
        char what[32];
        snprintf(what, sizeof what, "fma %s x%d", kiln_dtype_name(dtype), w);
        expect_figure(&m, 2, what);
        ran++;
    }
    return ran;
}

START_TEST(fma_f32_figures) { ck_assert_msg(fma_widths(kt_ctx(), KILN_F32) >= 1, "no f32 width ran"); }
END_TEST

START_TEST(fma_f16_figures_or_unsupported) { fma_widths(kt_ctx(), KILN_F16); }
END_TEST

/* The kernels themselves, through the backend slot: a few rounds of a recurrence whose
 * values do not settle, on an odd number of items, compared with the host. */
static void check_fma_kernel(kiln_dtype dtype, int width, float mul, float add, int64_t iters) {
    kiln_ctx *ctx = kt_ctx();
    enum { ITEMS = 37 };
    int64_t shape[1] = {ITEMS};
    kiln_tensor *t = kiln_tensor_new(ctx, KILN_F32, 1, shape);
    ck_assert(t != NULL);
    kiln_probe_fma_args a = {.out = kiln_ref_of(t), .dtype = dtype, .width = width, .items = ITEMS, .iters = iters,
                             .mul = mul, .add = add};
    kiln_status s = ctx->be->probe_fma(ctx->dev, &a);
    if (s == KILN_ERR_UNSUPPORTED) {
        kiln_tensor_free(t);
        return;
    }
    ck_assert_msg(s == KILN_OK, "%s", kiln_error_message());
    ck_assert_int_eq(a.items, ITEMS);
    ck_assert_msg(a.chains >= 1 && a.chains <= 64, "chains %d", a.chains);
    float got[ITEMS];
    ck_assert(kiln_download_f32(t, got, ITEMS) == KILN_OK);
    double want = kiln_probe_fma_expected(dtype, a.chains * width, mul, add, iters);
    for (int i = 0; i < ITEMS; i++)
        ck_assert_msg(fabs(got[i] - want) <= 1e-5 * fabs(want), "%s x%d item %d: %.9g, expected %.9g",
                      kiln_dtype_name(dtype), width, i, got[i], want);
    kiln_tensor_free(t);
}

START_TEST(fma_kernels_compute_their_chains) {
    for (int w = 1; w <= 32; w *= 2) {
        check_fma_kernel(KILN_F32, w, 0.75f, 0.3f, 9); /* products not exact: a fused FMA */
        check_fma_kernel(KILN_F32, w, 0.5f, 1.0f, 3);
        check_fma_kernel(KILN_F16, w, 0.5f, 1.0f, 3);  /* exact in f16, fused or not */
        check_fma_kernel(KILN_F16, w, 0.5f, 0.25f, 2);
    }
}
END_TEST

START_TEST(copy_transfer_dispatch_figures) {
    kiln_ctx *ctx = kt_ctx();
    kiln_measure m;
    ck_assert_msg(kiln_probe_copy(ctx, 16u << 20, 3, &m) == KILN_OK, "%s", kiln_error_message());
    expect_figure(&m, 3, "copy");
    ck_assert_msg(kiln_probe_transfer(ctx, 8u << 20, 1, 3, &m) == KILN_OK, "%s", kiln_error_message());
    expect_figure(&m, 3, "host to device");
    ck_assert_msg(kiln_probe_transfer(ctx, 8u << 20, 0, 3, &m) == KILN_OK, "%s", kiln_error_message());
    expect_figure(&m, 3, "device to host");
    ck_assert_msg(kiln_probe_dispatch(ctx, 3, &m) == KILN_OK, "%s", kiln_error_message());
    expect_figure(&m, 3, "dispatch");
    ck_assert_msg(m.median < 1e5, "dispatch latency %g us", m.median); /* a unit slip, not a timing */
}
END_TEST

/* Device seconds of one n x n x n matmul, the least of three runs. */
static double gemm_device_s(kiln_ctx *ctx, kiln_tensor *a, kiln_tensor *b, int n) {
    double best = 1e30;
    for (int r = 0; r < 3; r++) {
        double dev, wall;
        ck_assert_msg(kiln_timer_begin(ctx) == KILN_OK, "%s", kiln_error_message());
        kiln_tensor *c = kiln_matmul(a, b, NULL, 0, 0);
        ck_assert_msg(c != NULL, "%s", kiln_error_message());
        ck_assert_msg(kiln_timer_end(ctx, &dev, &wall) == KILN_OK, "%s", kiln_error_message());
        ck_assert_msg(isfinite(dev) && dev > 0 && isfinite(wall) && wall > 0, "n=%d: device %g s, wall %g s", n, dev,
                      wall);
        if (dev < best) best = dev;
        kiln_step_reset(ctx);
    }
    return best;
}

START_TEST(timer_brackets_real_work) {
    kiln_ctx *ctx = kt_ctx();
    kiln_set_grad_enabled(ctx, 0);
    const int sizes[2] = {32, 384};
    double t[2];
    for (int i = 0; i < 2; i++) {
        int n = sizes[i];
        kiln_tensor *a = kiln_tensor_2d(ctx, KILN_F32, n, n), *b = kiln_tensor_2d(ctx, KILN_F32, n, n);
        ck_assert(a && b);
        ck_assert(kiln_init_uniform(a, 1, 1, -1, 1) == KILN_OK && kiln_init_uniform(b, 1, 2, -1, 1) == KILN_OK);
        ck_assert(kiln_sync(ctx) == KILN_OK);
        t[i] = gemm_device_s(ctx, a, b, n);
        kiln_tensor_free(a);
        kiln_tensor_free(b);
    }
    ck_assert_msg(t[1] > t[0], "a 1728x larger GEMM took %g s on the device, the small one %g s", t[1], t[0]);
    kiln_set_grad_enabled(ctx, 1);
}
END_TEST

START_TEST(timer_misuse_is_an_error) {
    kiln_ctx *ctx = kt_ctx();
    double d, w;
    ck_assert_int_eq(kiln_timer_end(ctx, &d, &w), KILN_ERR_STATE);
    ck_assert(strstr(kiln_error_message(), "kiln_timer_begin") != NULL);
    ck_assert_int_eq(kiln_timer_begin(ctx), KILN_OK);
    ck_assert_int_eq(kiln_timer_begin(ctx), KILN_ERR_STATE);
    kiln_measure m; /* probes time themselves */
    ck_assert_int_eq(kiln_probe_dispatch(ctx, 1, &m), KILN_ERR_STATE);
    ck_assert_int_eq(kiln_timer_end(ctx, &d, &w), KILN_OK);
    ck_assert_int_eq(kiln_timer_end(ctx, &d, &w), KILN_ERR_STATE);
    ck_assert_int_eq(kiln_timer_begin(NULL), KILN_ERR_ARGUMENT);
    ck_assert_int_eq(kiln_timer_end(NULL, &d, &w), KILN_ERR_ARGUMENT);
}
END_TEST

/* A context closed with its timer running frees the timer (ASan, the validation layer). */
START_TEST(close_with_timer_running) {
    kiln_ctx *ctx;
    ck_assert_msg(kiln_open(kt_backend(), &ctx) == KILN_OK, "%s", kiln_error_message());
    ck_assert_int_eq(kiln_timer_begin(ctx), KILN_OK);
    kiln_tensor *t = kiln_tensor_2d(ctx, KILN_F32, 4, 4);
    ck_assert(t && kiln_init_uniform(t, 1, 1, -1, 1) == KILN_OK);
    kiln_tensor_free(t);
    kiln_close(ctx);
}
END_TEST

START_TEST(bad_arguments_are_errors) {
    kiln_ctx *ctx = kt_ctx();
    kiln_measure m;
    ck_assert_int_eq(kiln_probe_fma(NULL, KILN_F32, 1, 1, &m), KILN_ERR_ARGUMENT);
    ck_assert_int_eq(kiln_probe_fma(ctx, KILN_F32, 1, 1, NULL), KILN_ERR_ARGUMENT);
    ck_assert_int_eq(kiln_probe_fma(ctx, KILN_I32, 1, 1, &m), KILN_ERR_ARGUMENT);
    ck_assert(strstr(kiln_error_message(), "i32") != NULL);
    ck_assert_int_eq(kiln_probe_fma(ctx, KILN_F32, 3, 1, &m), KILN_ERR_ARGUMENT);
    ck_assert_int_eq(kiln_probe_fma(ctx, KILN_F32, 0, 1, &m), KILN_ERR_ARGUMENT);
    ck_assert_int_eq(kiln_probe_fma(ctx, KILN_F32, 64, 1, &m), KILN_ERR_ARGUMENT);
    ck_assert_int_eq(kiln_probe_fma(ctx, KILN_F32, 1, 0, &m), KILN_ERR_ARGUMENT);
    ck_assert(strstr(kiln_error_message(), "repeats") != NULL);
    ck_assert_int_eq(kiln_probe_copy(ctx, 100, 1, &m), KILN_ERR_ARGUMENT);
    ck_assert_int_eq(kiln_probe_copy(NULL, 1 << 20, 1, &m), KILN_ERR_ARGUMENT);
    ck_assert_int_eq(kiln_probe_copy(ctx, 1 << 20, -1, &m), KILN_ERR_ARGUMENT);
    ck_assert_int_eq(kiln_probe_transfer(ctx, 0, 1, 1, &m), KILN_ERR_ARGUMENT);
    ck_assert_int_eq(kiln_probe_transfer(ctx, 1 << 20, 0, 1, NULL), KILN_ERR_ARGUMENT);
    ck_assert_int_eq(kiln_probe_dispatch(ctx, 0, &m), KILN_ERR_ARGUMENT);
    ck_assert_int_eq(kiln_probe_dispatch(NULL, 1, &m), KILN_ERR_ARGUMENT);
}
END_TEST

START_TEST(driver_is_named) {
    const char *d = kiln_device_driver(kt_ctx());
    ck_assert_msg(d && d[0], "empty driver string");
    ck_assert_ptr_eq(kiln_device_driver(kt_ctx()), d); /* cached in the context */
    ck_assert_str_eq(kiln_device_driver(NULL), "");
}
END_TEST

/* MemTotal of /proc/meminfo in bytes (0 where unreadable): the host's RAM as the kernel
 * reports it, read another way than the backend does. */
static uint64_t meminfo_total(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    unsigned long long kib = 0;
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemTotal: %llu kB", &kib) == 1) break;
    if (f) fclose(f);
    return (uint64_t)kib * 1024;
}

START_TEST(memory_is_reported) {
    kiln_memory_info mi;
    unsetenv("KILN_MEMORY_LIMIT");
    ck_assert_msg(kiln_device_memory(kt_ctx(), &mi) == KILN_OK, "%s", kiln_error_message());
    ck_assert_msg(mi.total >= (64u << 20), "total %llu bytes", (unsigned long long)mi.total);
    ck_assert_msg(mi.usable > 0 && mi.usable <= mi.total, "usable %llu of %llu", (unsigned long long)mi.usable,
                  (unsigned long long)mi.total);
    ck_assert_msg(mi.max_buffer <= mi.total, "max buffer %llu", (unsigned long long)mi.max_buffer);
    if (!strcmp(kt_backend(), "cpu") && meminfo_total()) ck_assert_uint_eq(mi.total, meminfo_total());
}
END_TEST

/* KILN_MEMORY_LIMIT lowers what kiln may use, never raises it, and a bad value is an error
 * naming the variable. */
START_TEST(memory_limit_from_environment) {
    kiln_memory_info mi, capped;
    unsetenv("KILN_MEMORY_LIMIT");
    ck_assert_int_eq(kiln_device_memory(kt_ctx(), &mi), KILN_OK);
    setenv("KILN_MEMORY_LIMIT", "123456789", 1);
    ck_assert_int_eq(kiln_device_memory(kt_ctx(), &capped), KILN_OK);
    ck_assert_uint_eq(capped.usable, 123456789u);
    ck_assert_uint_eq(capped.total, mi.total);
    setenv("KILN_MEMORY_LIMIT", "18446744073709551615", 1);
    ck_assert_int_eq(kiln_device_memory(kt_ctx(), &capped), KILN_OK);
    ck_assert_uint_eq(capped.usable, mi.usable);
    const char *bad[] = {"0", "abc", "12x", "-5", " 7"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("KILN_MEMORY_LIMIT", bad[i], 1);
        ck_assert_int_eq(kiln_device_memory(kt_ctx(), &capped), KILN_ERR_ARGUMENT);
        ck_assert_msg(strstr(kiln_error_message(), "KILN_MEMORY_LIMIT"), "%s", kiln_error_message());
    }
    unsetenv("KILN_MEMORY_LIMIT");
    ck_assert_int_eq(kiln_device_memory(NULL, &mi), KILN_ERR_ARGUMENT);
    ck_assert_int_eq(kiln_device_memory(kt_ctx(), NULL), KILN_ERR_ARGUMENT);
}
END_TEST

static void add_tests(Suite *s, TCase *tc) {
    (void)s;
    tcase_add_test(tc, bad_arguments_are_errors);
    tcase_add_test(tc, timer_misuse_is_an_error);
    tcase_add_test(tc, driver_is_named);
    tcase_add_test(tc, memory_is_reported);
    tcase_add_test(tc, memory_limit_from_environment);
    tcase_add_test(tc, fma_kernels_compute_their_chains);
    tcase_add_test(tc, fma_f32_figures);
    tcase_add_test(tc, fma_f16_figures_or_unsupported);
    tcase_add_test(tc, copy_transfer_dispatch_figures);
    tcase_add_test(tc, timer_brackets_real_work);
    tcase_add_test(tc, close_with_timer_running);
}

int main(int argc, char **argv) { return kt_main(argc, argv, "probe", add_tests, NULL, 0); }
