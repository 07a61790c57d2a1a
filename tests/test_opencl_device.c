/* The OpenCL backend's devices: listing, the default choice, and the errors for a device
 * that does not exist or a machine without any OpenCL platform.
 *
 * `test_opencl_device --expect-no-platform` is run by tests/opencl.cmake with
 * OCL_ICD_VENDORS=/nonexistent (the loader then finds no ICD) and checks the errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#ifdef KILN_HAVE_OPENCL

/* The whole listing as a string (malloc'd). */
static char *listing(kiln_status *status) {
    FILE *f = tmpfile();
    ck_assert_ptr_nonnull(f);
    *status = kiln_list_devices("opencl", f);
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
    /* what `kiln info` promises: platform, type, compute units, memory, local memory,
     * subgroups, cl_khr_fp16, and which device is the default */
    const char *expect[] = {"opencl:0", "platform", "compute units", "GiB memory", "KiB local memory",
                            "subgroups", "cl_khr_fp16", "[default]"};
    for (size_t i = 0; i < sizeof expect / sizeof expect[0]; i++)
        ck_assert_msg(strstr(text, expect[i]) != NULL, "listing lacks '%s':\n%s", expect[i], text);
    free(text);
}
END_TEST

START_TEST(opens_default_and_numbered) {
    kiln_ctx *a, *b;
    ck_assert_msg(kiln_open("opencl", &a) == KILN_OK, "%s", kiln_error_message());
    ck_assert_msg(kiln_open("opencl:0", &b) == KILN_OK, "%s", kiln_error_message());
    ck_assert_str_eq(kiln_backend_name(a), "opencl");
    ck_assert(strlen(kiln_device_name(a)) > 0);
    kiln_close(a);
    kiln_close(b);
}
END_TEST

START_TEST(missing_device_is_an_error) {
    kiln_ctx *ctx = (kiln_ctx *)1;
    ck_assert_int_eq(kiln_open("opencl:9", &ctx), KILN_ERR_NO_DEVICE);
    ck_assert_ptr_null(ctx);
    const char *msg = kiln_error_message();
    ck_assert_msg(one_line(msg), "not one line: '%s'", msg);
    ck_assert_msg(strstr(msg, "opencl:9 does not exist") != NULL, "%s", msg);
    ck_assert_int_eq(kiln_open("opencl:x", &ctx), KILN_ERR_NO_DEVICE);
}
END_TEST

/* Run with OCL_ICD_VENDORS=/nonexistent: no platform at all. */
START_TEST(no_platform_is_an_error) {
    kiln_ctx *ctx = NULL;
    ck_assert_int_eq(kiln_open("opencl", &ctx), KILN_ERR_NO_BACKEND);
    const char *msg = kiln_error_message();
    ck_assert_msg(one_line(msg), "not one line: '%s'", msg);
    ck_assert_msg(strstr(msg, "no OpenCL platform") != NULL, "%s", msg);
    ck_assert_int_eq(kiln_open("opencl:0", &ctx), KILN_ERR_NO_BACKEND);
    kiln_status s;
    free(listing(&s));
    ck_assert_int_eq(s, KILN_ERR_NO_BACKEND);
    /* auto falls back to another backend rather than failing */
    ck_assert_msg(kiln_open("auto", &ctx) == KILN_OK, "%s", kiln_error_message());
    ck_assert_str_ne(kiln_backend_name(ctx), "opencl");
    kiln_close(ctx);
}
END_TEST

static void add_missing_tests(TCase *tc) { tcase_add_test(tc, no_platform_is_an_error); }

static void add_tests(TCase *tc) {
    tcase_add_test(tc, lists_devices);
    tcase_add_test(tc, opens_default_and_numbered);
    tcase_add_test(tc, missing_device_is_an_error);
}

/* With --expect-no-platform, CTest runs this where the opencl driver is hidden and only the
 * error path is tested. */
int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--expect-no-platform")) return kt_run_tests("opencl_device", "opencl", add_missing_tests);
    int skip = kt_require_backend("opencl");
    return skip ? skip : kt_run_tests("opencl_device", "opencl", add_tests);
}

#else
int main(void) { return 77; } /* built without OpenCL */
#endif
