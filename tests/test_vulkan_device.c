/* The Vulkan backend's devices: the listing behind `kiln info`, the default choice, the
 * errors for a device that does not exist or a machine without any driver, and the
 * per-kernel GPU timings of KILN_VK_PROFILE.
 *
 * `test_vulkan_device --expect-no-driver` is run by tests/vulkan.cmake with
 * VK_ICD_FILENAMES (and VK_DRIVER_FILES) pointing at nothing, and checks the errors. */
#define _POSIX_C_SOURCE 200809L /* setenv, dup, mkdtemp, strdup */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

#ifdef KILN_HAVE_VULKAN

/* The whole listing as a string (malloc'd). */
static char *listing(kiln_status *status) {
    FILE *f = tmpfile();
    ck_assert_ptr_nonnull(f);
    *status = kiln_list_devices("vulkan", f);
    long size = ftell(f);
    char *text = calloc(1, (size_t)(size > 0 ? size : 0) + 1);
    rewind(f);
    if (size > 0) ck_assert_int_eq(fread(text, 1, (size_t)size, f), (size_t)size);
    fclose(f);
    return text;
}

static int one_line(const char *s) { return s[0] && !strchr(s, '\n'); }

START_TEST(lists_devices) {
    kiln_status s;
    char *text = listing(&s);
    ck_assert_msg(s == KILN_OK, "%s", kiln_error_message());
    /* what `kiln info` promises: type, driver, memory, subgroup size, the features kiln
     * uses, and which device is the default */
    const char *expect[] = {"vulkan:0", "driver", "GiB", "subgroup size", "16-bit storage", "f16 arithmetic",
                            "subgroup arithmetic", "cooperative matrix", "default"};
    for (size_t i = 0; i < sizeof expect / sizeof expect[0]; i++)
        ck_assert_msg(strstr(text, expect[i]) != NULL, "listing lacks '%s':\n%s", expect[i], text);
    free(text);
}
END_TEST

START_TEST(opens_default_and_numbered) {
    kiln_ctx *a, *b;
    ck_assert_msg(kiln_open("vulkan", &a) == KILN_OK, "%s", kiln_error_message());
    ck_assert_msg(kiln_open("vulkan:0", &b) == KILN_OK, "%s", kiln_error_message());
    ck_assert_str_eq(kiln_backend_name(a), "vulkan");
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
    ck_assert_int_eq(kiln_open("vulkan:7", &ctx), KILN_ERR_NO_DEVICE);
    ck_assert_ptr_null(ctx);
    const char *msg = kiln_error_message();
    ck_assert_msg(one_line(msg), "not one line: '%s'", msg);
    ck_assert_msg(strstr(msg, "vulkan:7 does not exist") != NULL, "%s", msg);
}
END_TEST

/* KILN_VK_PROFILE=1 prints one line per kernel with its device time when the context closes. */
START_TEST(profile_prints_kernel_times) {
    setenv("KILN_VK_PROFILE", "1", 1);
    kiln_ctx *ctx;
    ck_assert_msg(kiln_open("vulkan", &ctx) == KILN_OK, "%s", kiln_error_message());
    unsetenv("KILN_VK_PROFILE");
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
    long size = ftell(cap);
    char *text = calloc(1, (size_t)(size > 0 ? size : 0) + 1);
    rewind(cap);
    if (size > 0) ck_assert_int_eq(fread(text, 1, (size_t)size, cap), (size_t)size);
    fclose(cap);
    ck_assert_msg(strstr(text, "GPU time per kernel") && strstr(text, "gemm") && strstr(text, "fill"),
                  "profile report:\n%s", text);
    free(text);
}
END_TEST

/* Run with VK_ICD_FILENAMES=/nonexistent: no driver at all. */
START_TEST(no_driver_is_an_error) {
    kiln_ctx *ctx = NULL;
    ck_assert_int_eq(kiln_open("vulkan", &ctx), KILN_ERR_NO_BACKEND);
    const char *msg = kiln_error_message();
    ck_assert_msg(one_line(msg), "not one line: '%s'", msg);
    ck_assert_msg(strstr(msg, "no Vulkan driver") || strstr(msg, "no Vulkan device"), "%s", msg);
    ck_assert_int_eq(kiln_open("vulkan:0", &ctx), KILN_ERR_NO_BACKEND);
    kiln_status s;
    free(listing(&s));
    ck_assert_int_eq(s, KILN_ERR_NO_BACKEND);
    /* auto falls back to another backend rather than failing */
    ck_assert_msg(kiln_open("auto", &ctx) == KILN_OK, "%s", kiln_error_message());
    ck_assert_str_ne(kiln_backend_name(ctx), "vulkan");
    kiln_close(ctx);
}
END_TEST

static void add_missing_tests(TCase *tc) { tcase_add_test(tc, no_driver_is_an_error); }

static void add_tests(TCase *tc) {
    tcase_add_test(tc, lists_devices);
    tcase_add_test(tc, opens_default_and_numbered);
    tcase_add_test(tc, missing_device_is_an_error);
    tcase_add_test(tc, profile_prints_kernel_times);
}

/* With --expect-no-driver, CTest runs this where the vulkan driver is hidden and only the
 * error path is tested. */
int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--expect-no-driver")) return kt_run_tests("vulkan_device", "vulkan", add_missing_tests);
    int skip = kt_require_backend("vulkan");
    return skip ? skip : kt_run_tests("vulkan_device", "vulkan", add_tests);
}

#else
int main(void) { return 77; } /* built without Vulkan */
#endif
