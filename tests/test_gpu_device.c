/* A GPU backend's devices (--backend vulkan or opencl): the listing behind `kiln info`, the
 * default choice, two contexts side by side, the errors for a device that does not exist or
 * a machine without any driver, and the per-kernel device times of the profiler.
 *
 * `test_gpu_device --backend NAME --expect-no-driver` is registered with the backend's driver
 * hidden (kiln_backend_error_tests in tests/CMakeLists.txt) and checks the errors. */
#define _POSIX_C_SOURCE 200809L /* setenv, dup */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

/* What one backend promises about its devices. */
typedef struct device_expectations {
    const char *backend;
    const char *listing[11]; /* in `kiln info`'s listing (NULL-terminated) */
    const char *missing;     /* a device no machine here has */
    const char *no_driver;   /* in the error without a driver */
    const char *no_driver_also; /* or this, where the loader finds a driver but no device */
    const char *profile_env; /* prints every kernel's device time at close when "1" */
    const char *profile_title;
} device_expectations;

static const device_expectations g_expectations[] = {
    /* type, driver, memory, subgroup size, the features kiln uses, and the default */
    {.backend = "vulkan",
     .listing = {"vulkan:0", "driver", "GiB", "subgroup size", "16-bit storage", "f16 arithmetic",
                 "subgroup arithmetic", "cooperative matrix", "integer dot product", "default"},
     .missing = "vulkan:7",
     .no_driver = "no Vulkan driver",
     .no_driver_also = "no Vulkan device",
     .profile_env = "KILN_VK_PROFILE",
     .profile_title = "GPU time per kernel"},
    /* platform, type, compute units, memory, local memory, subgroups, cl_khr_fp16, the default */
    {.backend = "opencl",
     .listing = {"opencl:0", "platform", "compute units", "GiB memory", "KiB local memory", "subgroups",
                 "cl_khr_fp16", "[default]"},
     .missing = "opencl:9",
     .no_driver = "no OpenCL platform",
     .profile_env = "KILN_CL_PROFILE",
     .profile_title = "device time per kernel"},
};

static const device_expectations *g_expect;

/* Everything written to `f` from its start, as a string (malloc'd); closes f. */
static char *contents(FILE *f) {
    long size = ftell(f);
    char *text = calloc(1, (size_t)(size > 0 ? size : 0) + 1);
    rewind(f);
    if (size > 0) ck_assert_int_eq(fread(text, 1, (size_t)size, f), (size_t)size);
    fclose(f);
    return text;
}

/* The whole listing as a string (malloc'd). */
static char *listing(kiln_status *status) {
    FILE *f = tmpfile();
    ck_assert_ptr_nonnull(f);
    *status = kiln_list_devices(g_expect->backend, f);
    return contents(f);
}

static int one_line(const char *s) { return s[0] && !strchr(s, '\n'); }

START_TEST(lists_devices) {
    kiln_status s;
    char *text = listing(&s);
    ck_assert_msg(s == KILN_OK, "%s", kiln_error_message());
    for (const char *const *want = g_expect->listing; *want; want++)
        ck_assert_msg(strstr(text, *want) != NULL, "listing lacks '%s':\n%s", *want, text);
    free(text);
}
END_TEST

START_TEST(opens_default_and_numbered) {
    char numbered[32];
    snprintf(numbered, sizeof numbered, "%s:0", g_expect->backend);
    kiln_ctx *a, *b;
    ck_assert_msg(kiln_open(g_expect->backend, &a) == KILN_OK, "%s", kiln_error_message());
    ck_assert_msg(kiln_open(numbered, &b) == KILN_OK, "%s", kiln_error_message());
    ck_assert_str_eq(kiln_backend_name(a), g_expect->backend);
    ck_assert(strlen(kiln_device_name(a)) > 0);
    /* two contexts on one device work side by side */
    kiln_tensor *x = kiln_tensor_1d(a, KILN_F32, 5), *y = kiln_tensor_1d(b, KILN_F32, 5);
    ck_assert(x && y);
    ck_assert_int_eq(kiln_fill(x, 2.0f), KILN_OK);
    ck_assert_int_eq(kiln_fill(y, 3.0f), KILN_OK);
    float vx, vy;
    ck_assert_int_eq(kiln_read_scalar(x, &vx), KILN_OK);
    ck_assert_int_eq(kiln_read_scalar(y, &vy), KILN_OK);
    ck_assert(vx == 2.0f && vy == 3.0f);
    kiln_tensor_free(x);
    kiln_tensor_free(y);
    kiln_close(a);
    kiln_close(b);
}
END_TEST

START_TEST(missing_device_is_an_error) {
    kiln_ctx *ctx = (kiln_ctx *)1;
    ck_assert_int_eq(kiln_open(g_expect->missing, &ctx), KILN_ERR_NO_DEVICE);
    ck_assert_ptr_null(ctx);
    const char *msg = kiln_error_message();
    ck_assert_msg(one_line(msg), "not one line: '%s'", msg);
    char want[64];
    snprintf(want, sizeof want, "%s does not exist", g_expect->missing);
    ck_assert_msg(strstr(msg, want) != NULL, "%s", msg);
    /* a device index that is not a number */
    char bad[32];
    snprintf(bad, sizeof bad, "%s:x", g_expect->backend);
    ck_assert_int_eq(kiln_open(bad, &ctx), KILN_ERR_NO_DEVICE);
}
END_TEST

/* The profiler prints one line per kernel with its device time when the context closes. */
START_TEST(profile_prints_kernel_times) {
    setenv(g_expect->profile_env, "1", 1);
    kiln_ctx *ctx;
    ck_assert_msg(kiln_open(g_expect->backend, &ctx) == KILN_OK, "%s", kiln_error_message());
    unsetenv(g_expect->profile_env);
    kiln_tensor *a = kiln_tensor_2d(ctx, KILN_F32, 33, 17), *b = kiln_tensor_2d(ctx, KILN_F32, 17, 9);
    ck_assert(a && b);
    ck_assert_int_eq(kiln_fill(a, 1.0f), KILN_OK);
    ck_assert_int_eq(kiln_fill(b, 0.5f), KILN_OK);
    kiln_tensor *c = kiln_matmul(a, b, NULL, 0, 0);
    float v;
    ck_assert_int_eq(kiln_read_scalar(c, &v), KILN_OK);
    ck_assert(v == 8.5f);
    kiln_step_reset(ctx);
    kiln_tensor_free(a);
    kiln_tensor_free(b);
    /* the report goes to stderr at close: capture it */
    fflush(stderr);
    FILE *cap = tmpfile();
    ck_assert_ptr_nonnull(cap);
    int saved = dup(fileno(stderr));
    dup2(fileno(cap), fileno(stderr));
    kiln_close(ctx);
    fflush(stderr);
    dup2(saved, fileno(stderr));
    close(saved);
    char *text = contents(cap);
    ck_assert_msg(strstr(text, g_expect->profile_title) && strstr(text, "gemm") && strstr(text, "fill"),
                  "profile report:\n%s", text);
    free(text);
}
END_TEST

/* Run where the driver is hidden: no driver at all. */
START_TEST(no_driver_is_an_error) {
    char numbered[32];
    snprintf(numbered, sizeof numbered, "%s:0", g_expect->backend);
    kiln_ctx *ctx = NULL;
    ck_assert_int_eq(kiln_open(g_expect->backend, &ctx), KILN_ERR_NO_BACKEND);
    const char *msg = kiln_error_message();
    ck_assert_msg(one_line(msg), "not one line: '%s'", msg);
    ck_assert_msg(strstr(msg, g_expect->no_driver) ||
                      (g_expect->no_driver_also && strstr(msg, g_expect->no_driver_also)),
                  "%s", msg);
    ck_assert_int_eq(kiln_open(numbered, &ctx), KILN_ERR_NO_BACKEND);
    kiln_status s;
    free(listing(&s));
    ck_assert_int_eq(s, KILN_ERR_NO_BACKEND);
    /* auto falls back to another backend rather than failing */
    ck_assert_msg(kiln_open("auto", &ctx) == KILN_OK, "%s", kiln_error_message());
    ck_assert_str_ne(kiln_backend_name(ctx), g_expect->backend);
    kiln_close(ctx);
}
END_TEST

static void add_no_driver_tests(TCase *tc) { tcase_add_test(tc, no_driver_is_an_error); }

static void add_tests(Suite *s, TCase *tc) {
    (void)s;
    tcase_add_test(tc, lists_devices);
    tcase_add_test(tc, opens_default_and_numbered);
    tcase_add_test(tc, missing_device_is_an_error);
    tcase_add_test(tc, profile_prints_kernel_times);
}

int main(int argc, char **argv) {
    const char *backend = kt_parse_backend(argc, argv);
    for (size_t i = 0; i < sizeof g_expectations / sizeof g_expectations[0]; i++)
        if (!strcmp(g_expectations[i].backend, backend)) g_expect = &g_expectations[i];
    if (!g_expect) {
        fprintf(stderr, "test_gpu_device: --backend vulkan or opencl, not %s\n", backend);
        return 1;
    }
    /* with the driver hidden only the error path is tested (the backend cannot open) */
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--expect-no-driver")) return kt_run_tests("gpu_device", backend, add_no_driver_tests);
    return kt_main(argc, argv, "gpu_device", add_tests, NULL, 0);
}
