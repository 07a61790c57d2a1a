/* The OpenCL program-binary cache and the build-log path:
 *  - a first run writes binaries under $XDG_CACHE_HOME/kiln/opencl, a second run loads them,
 *    the f16 variant of a program as a file of its own;
 *  - a corrupt cache file is ignored (rebuilt), an unwritable cache is not an error, a write
 *    stopped midway (a file-size limit) leaves the cached file as it was;
 *  - a kernel that does not compile is an error that quotes the build log. */
#define _POSIX_C_SOURCE 200809L /* setenv, mkdtemp */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testfile.h"
#include "testutil.h"

#ifdef KILN_HAVE_OPENCL
#include "opencl/cl_internal.h"

/* Number of files in dir whose name starts with prefix; the first one's path in `first`. */
static int count_files(const char *dir, const char *prefix, char *first, size_t size) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, strlen(prefix))) continue;
        if (n++ == 0 && first) snprintf(first, size, "%s/%s", dir, e->d_name);
    }
    closedir(d);
    return n;
}

/* Opens opencl, runs a small computation (kernels of the memory program and of both
 * variants, f32 and f16, of the activation program) and checks its result. */
static void run_something(void) {
    kiln_ctx *ctx;
    ck_assert_msg(kiln_open("opencl", &ctx) == KILN_OK, "%s", kiln_error_message());
    int64_t shape[1] = {3};
    float v[3] = {-1, 0.5f, 4}, expect[3] = {0, 0.5f, 4};
    for (int f16 = 0; f16 < 2; f16++) {
        kiln_tensor *x = kt_tensor(ctx, f16 ? KILN_F16 : KILN_F32, 1, shape, v);
        kt_expect_values(kiln_relu(x), expect, 3, 0);
        kiln_step_reset(ctx);
        kiln_tensor_free(x);
    }
    kiln_close(ctx);
}

static char g_dir[256];

START_TEST(writes_then_reads_binaries) {
    char cache[300], path[600];
    snprintf(cache, sizeof cache, "%s/kiln/opencl", g_dir);
    int writes = kiln_cl_cache_writes, hits = kiln_cl_cache_hits;
    run_something();
    ck_assert_msg(kiln_cl_cache_writes > writes, "no binary was written");
    ck_assert_int_ge(count_files(cache, "memory-", path, sizeof path), 1);
    ck_assert_int_ge(count_files(cache, "activation-", NULL, 0), 2);
    ck_assert_int_ge(count_files(cache, "activation-f16-", NULL, 0), 1); /* the f16 variant's own */
    hits = kiln_cl_cache_hits;
    run_something();
    ck_assert_msg(kiln_cl_cache_hits >= hits + 3, "binaries were not loaded (%d hits)", kiln_cl_cache_hits - hits);

    /* a damaged file is ignored: the program is compiled again and the file rewritten */
    FILE *f = fopen(path, "r+b");
    ck_assert_ptr_nonnull(f);
    fseek(f, 20, SEEK_SET);
    fputs("garbage garbage garbage", f);
    fclose(f);
    writes = kiln_cl_cache_writes;
    run_something();
    ck_assert_int_gt(kiln_cl_cache_writes, writes);
}
END_TEST

START_TEST(unwritable_cache_is_not_an_error) {
    setenv("XDG_CACHE_HOME", "/proc/kiln-cannot-write-here", 1);
    int writes = kiln_cl_cache_writes;
    run_something();
    ck_assert_int_eq(kiln_cl_cache_writes, writes);
    setenv("XDG_CACHE_HOME", g_dir, 1);
}
END_TEST

/* A binary of 256 KiB cached under the key of an existing entry, stopped midway by a
 * file-size limit: silent (no count of a write), like every cache failure. */
static int big_binary_write_fails(void *arg) {
    (void)arg;
    enum { N = 256 << 10 };
    unsigned char *big = calloc(N, 1);
    int writes = kiln_cl_cache_writes;
    if (big) cl_cache_write(0x5eedu, "midway", big, N);
    free(big);
    return big && kiln_cl_cache_writes == writes;
}

START_TEST(write_stopped_midway_keeps_the_old_file) {
    const unsigned char small[] = "a small binary";
    cl_cache_write(0x5eedu, "midway", small, sizeof small);
    char cache[300], path[600];
    snprintf(cache, sizeof cache, "%s/kiln/opencl", g_dir);
    ck_assert_int_eq(count_files(cache, "midway-", path, sizeof path), 1);
    const char *kept = path;
    kt_expect_failing_write(4096, big_binary_write_fails, NULL, &kept, 1);
    size_t n;
    unsigned char *back = cl_cache_read(0x5eedu, "midway", &n);
    ck_assert_msg(back && n == sizeof small && !memcmp(back, small, n), "the cached binary changed");
    free(back);
    remove(path);
}
END_TEST

START_TEST(build_errors_quote_the_log) {
    kiln_ctx *ctx;
    ck_assert_msg(kiln_open("opencl", &ctx) == KILN_OK, "%s", kiln_error_message());
    cl_dev *d = ctx->dev;
    cl_program p = NULL;
    const char *broken = "__kernel void f(__global float *x) { x[0] = no_such_variable; }";
    ck_assert_int_eq(cl_build_program(d, "broken", broken, &p), KILN_ERR_DEVICE);
    ck_assert_ptr_null(p);
    const char *msg = kiln_error_message();
    ck_assert_msg(strstr(msg, "does not compile") && strstr(msg, "no_such_variable"),
                  "the message does not quote the build log: %s", msg);
    ck_assert_msg(!strchr(msg, '\n'), "not one line: %s", msg);
    kiln_close(ctx);
}
END_TEST

int main(void) {
    kiln_ctx *probe;
    if (kiln_open("opencl", &probe) != KILN_OK) {
        fprintf(stderr, "skipping: %s\n", kiln_error_message());
        return 77;
    }
    kiln_close(probe);
    snprintf(g_dir, sizeof g_dir, "/tmp/kiln-cl-cache-XXXXXX");
    if (!mkdtemp(g_dir)) return 1;
    setenv("XDG_CACHE_HOME", g_dir, 1);
    setenv("KILN_CL_CACHE", "1", 1);
    Suite *s = suite_create("opencl_cache");
    TCase *tc = tcase_create("opencl");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, writes_then_reads_binaries);
    tcase_add_test(tc, unwritable_cache_is_not_an_error);
    tcase_add_test(tc, write_stopped_midway_keeps_the_old_file);
    tcase_add_test(tc, build_errors_quote_the_log);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_dir);
    return failed ? 1 : 0;
}

#else
int main(void) { return 77; } /* built without OpenCL */
#endif
