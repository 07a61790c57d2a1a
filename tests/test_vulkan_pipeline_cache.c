/* The Vulkan pipeline cache on disk: written under $XDG_CACHE_HOME/kiln when a context that
 * compiled pipelines closes, named by device and driver, read back by the next context, and
 * never an error when it cannot be written (or is turned off with KILN_VK_PIPELINE_CACHE=0),
 * and a write stopped midway leaves the previous file as it was. */
#define _POSIX_C_SOURCE 200809L /* setenv, dup, mkdtemp, strdup */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testfile.h"
#include "testutil.h"

#ifdef KILN_HAVE_VULKAN

/* Runs a few kernels (so that pipelines get compiled) and closes the context. */
static void use_vulkan(void) {
    kiln_ctx *ctx;
    ck_assert_msg(kiln_open("vulkan", &ctx) == KILN_OK, "%s", kiln_error_message());
    int64_t shape[4] = {1, 1, 9, 5};
    kiln_tensor *x = kiln_tensor_new(ctx, KILN_F32, 4, shape);
    ck_assert_ptr_nonnull(x);
    ck_assert_int_eq(kiln_fill(x, 1.5f), KILN_OK);
    kiln_tensor *y = kiln_softmax(kiln_scale(x, 2.0f), NULL);
    float v;
    ck_assert_msg(y && kiln_read_scalar(y, &v) == KILN_OK, "%s", kiln_error_message());
    ck_assert(fabsf(v - 0.2f) < 1e-6f);
    kiln_step_reset(ctx);
    kiln_tensor_free(x);
    kiln_close(ctx);
}

/* The cache file in dir/kiln, or "" (static buffer). */
static const char *cache_file(const char *dir, long *size) {
    static char path[1300];
    char sub[900];
    snprintf(sub, sizeof sub, "%s/kiln", dir);
    path[0] = 0;
    *size = 0;
    DIR *dp = opendir(sub);
    if (!dp) return path;
    struct dirent *e;
    while ((e = readdir(dp))) {
        if (strncmp(e->d_name, "vulkan-", 7) != 0 || !strstr(e->d_name, ".bin")) continue;
        snprintf(path, sizeof path, "%s/%s", sub, e->d_name);
        struct stat st;
        if (stat(path, &st) == 0) *size = (long)st.st_size;
    }
    closedir(dp);
    return path;
}

static char *temp_dir(void) {
    char tmpl[] = "/tmp/kiln_vkcache_XXXXXX";
    char *d = mkdtemp(tmpl);
    ck_assert_ptr_nonnull(d);
    return strdup(d);
}

START_TEST(cache_written_and_reused) {
    char *dir = temp_dir();
    setenv("XDG_CACHE_HOME", dir, 1);
    unsetenv("KILN_VK_PIPELINE_CACHE");
    use_vulkan();
    long size;
    const char *path = cache_file(dir, &size);
    ck_assert_msg(path[0], "no cache file under %s/kiln", dir);
    /* named by device and driver: two UUIDs in hex */
    ck_assert_msg(strlen(strrchr(path, '/')) > 60, "cache file name %s", path);
    /* lavapipe keeps little in it; any size is fine, but the file must be a whole cache */
    ck_assert_msg(size >= 32, "cache file of %ld bytes", size);
    /* a second run reads it (and may rewrite it); a corrupt file is ignored */
    use_vulkan();
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    fputs("not a pipeline cache", f);
    fclose(f);
    use_vulkan();
    char cmd[1100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
    free(dir);
}
END_TEST

START_TEST(unwritable_cache_is_not_an_error) {
    char *dir = temp_dir();
    char file[1000], below[1100];
    snprintf(file, sizeof file, "%s/a_file", dir);
    FILE *f = fopen(file, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    snprintf(below, sizeof below, "%s/under", file); /* mkdir fails: a file is in the way */
    setenv("XDG_CACHE_HOME", below, 1);
    use_vulkan();
    setenv("XDG_CACHE_HOME", dir, 1);
    setenv("KILN_VK_PIPELINE_CACHE", "0", 1); /* off: nothing written */
    use_vulkan();
    long size;
    ck_assert_str_eq(cache_file(dir, &size), "");
    unsetenv("KILN_VK_PIPELINE_CACHE");
    char cmd[1100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
    free(dir);
}
END_TEST

/* use_vulkan without assertions, for a child process: 1 when the kernels ran and the
 * context closed (the cache write that a file-size limit stops is silent). */
static int vulkan_runs(void *arg) {
    (void)arg;
    kiln_ctx *ctx;
    if (kiln_open("vulkan", &ctx) != KILN_OK) return 0;
    int64_t shape[4] = {1, 1, 9, 5};
    kiln_tensor *x = kiln_tensor_new(ctx, KILN_F32, 4, shape);
    float v = 0;
    int ok = x && kiln_fill(x, 1.5f) == KILN_OK && kiln_read_scalar(kiln_softmax(kiln_scale(x, 2.0f), NULL), &v) == KILN_OK &&
             fabsf(v - 0.2f) < 1e-6f;
    kiln_step_reset(ctx);
    kiln_tensor_free(x);
    kiln_close(ctx);
    return ok;
}

/* A cache write stopped midway (a file-size limit of 16 bytes, below any cache's 32-byte
 * header) leaves the file there as it was. That file is not a cache (too short), so the
 * run compiles its pipelines and saves. */
START_TEST(write_stopped_midway_keeps_the_old_file) {
    char *dir = temp_dir();
    setenv("XDG_CACHE_HOME", dir, 1);
    unsetenv("KILN_VK_PIPELINE_CACHE");
    use_vulkan(); /* to learn the file's name */
    long size;
    char path[1300];
    snprintf(path, sizeof path, "%s", cache_file(dir, &size));
    ck_assert_msg(path[0], "no cache file under %s/kiln", dir);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    fputs("not a cache", f);
    fclose(f);
    const char *kept = path;
    kt_expect_failing_write(16, vulkan_runs, NULL, &kept, 1);
    char cmd[1100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
    free(dir);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, cache_written_and_reused);
    tcase_add_test(tc, unwritable_cache_is_not_an_error);
    tcase_add_test(tc, write_stopped_midway_keeps_the_old_file);
}

int main(void) {
    int skip = kt_require_backend("vulkan");
    return skip ? skip : kt_run_tests("vulkan_pipeline_cache", "vulkan", add_tests);
}

#else
int main(void) { return 77; } /* built without Vulkan */
#endif
