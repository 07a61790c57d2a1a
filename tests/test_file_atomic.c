/* Files replaced whole (kiln/file.h): a success replaces the target and leaves no temporary
 * file; every failure (no folder, a rename onto a folder, an abort, a write stopped midway
 * by a file-size limit) leaves the previous file byte-identical, removes the temporary file
 * and says which file in one line; the keep-previous mode keeps the replaced file, and a
 * failure in it touches neither file. */
#define _POSIX_C_SOURCE 200809L /* access */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kiln/file.h"
#include "testfile.h"
#include "testutil.h"

static char g_dir[64];

/* g_dir/name in a static buffer of its own per slot (0..3). */
static const char *at(int slot, const char *name) {
    static char paths[4][256];
    snprintf(paths[slot], sizeof paths[slot], "%s/%s", g_dir, name);
    return paths[slot];
}

static void expect_content(const char *path, const char *text) {
    size_t n;
    unsigned char *b = kt_read_file(path, &n);
    ck_assert_msg(n == strlen(text) && memcmp(b, text, n) == 0, "%s holds %.*s, not %s", path, (int)n, b, text);
    free(b);
}

static void expect_no_temporaries(const char *name) {
    char prefix[256];
    snprintf(prefix, sizeof prefix, "%s.tmp", name);
    ck_assert_int_eq(kt_count_files(g_dir, prefix), 0);
}

static void setup(void) { kt_make_temp_dir(g_dir, sizeof g_dir, "file"); }
static void teardown(void) { kt_remove_dir(g_dir); }

START_TEST(success_replaces) {
    const char *path = at(0, "a.txt");
    char err[512];
    /* a new file, then a replacement through the stream, then one through a buffer */
    ck_assert_int_eq(kiln_file_write_all(path, "first", 5, err, sizeof err), KILN_OK);
    expect_content(path, "first");
    kiln_file *f = kiln_file_begin(path, err, sizeof err);
    ck_assert_msg(f != NULL, "%s", err);
    fprintf(kiln_file_stream(f), "second %d", 2);
    kiln_file_write(f, "!", 1);
    expect_content(path, "first"); /* nothing shows before the commit */
    ck_assert_int_eq(kiln_file_commit(f, err, sizeof err), KILN_OK);
    expect_content(path, "second 2!");
    ck_assert_int_eq(kiln_file_write_all(path, "", 0, err, sizeof err), KILN_OK);
    expect_content(path, "");
    expect_no_temporaries("a.txt");
}
END_TEST

/* Two writers of one file at once (threads or processes) each have a temporary file of
 * their own: both commits succeed, and the last one wins whole. */
START_TEST(concurrent_writers_do_not_mix) {
    const char *path = at(0, "shared.bin");
    char err[512];
    kiln_file *a = kiln_file_begin(path, err, sizeof err), *b = kiln_file_begin(path, err, sizeof err);
    ck_assert(a && b);
    kiln_file_write(a, "aaaa", 4);
    kiln_file_write(b, "bb", 2);
    ck_assert_int_eq(kiln_file_commit(a, err, sizeof err), KILN_OK);
    ck_assert_int_eq(kiln_file_commit(b, err, sizeof err), KILN_OK);
    expect_content(path, "bb");
    expect_no_temporaries("shared.bin");
}
END_TEST

START_TEST(failures_leave_the_previous_file) {
    char err[512];
    /* no such folder: the temporary file cannot be created */
    const char *lost = at(0, "no/such/folder/x.bin");
    ck_assert_int_eq(kiln_file_write_all(lost, "x", 1, err, sizeof err), KILN_ERR_IO);
    ck_assert_msg(strstr(err, lost) && strstr(err, "cannot create the temporary file") && strstr(err, "No such file"),
                  "%s", err);
    ck_assert_msg(!strchr(err, '\n'), "not one line: %s", err);
    ck_assert_ptr_null(kiln_file_begin(lost, NULL, 0)); /* no buffer: no message, no crash */
    ck_assert_int_eq(kiln_file_write_all(NULL, "x", 1, err, sizeof err), KILN_ERR_ARGUMENT);
    ck_assert_int_eq(kiln_file_write_all("", "x", 1, err, sizeof err), KILN_ERR_ARGUMENT);

    /* the target is a folder: the rename fails, the temporary file is removed */
    const char *folder = at(0, "folder");
    ck_assert_int_eq(mkdir(folder, 0755), 0);
    ck_assert_int_eq(kiln_file_write_all(folder, "x", 1, err, sizeof err), KILN_ERR_IO);
    ck_assert_msg(strstr(err, folder) && strstr(err, "rename of") && strstr(err, "previous file is unchanged"), "%s",
                  err);
    struct stat st;
    ck_assert(stat(folder, &st) == 0 && S_ISDIR(st.st_mode));
    expect_no_temporaries("folder");

    /* an abort: the target is untouched, the temporary file removed */
    const char *path = at(1, "kept.txt");
    kt_write_file(path, "OLD", 3);
    kiln_file *f = kiln_file_begin(path, err, sizeof err);
    ck_assert_ptr_nonnull(f);
    kiln_file_write(f, "NEW", 3);
    kiln_file_abort(f);
    kiln_file_abort(NULL);
    expect_content(path, "OLD");
    expect_no_temporaries("kept.txt");
}
END_TEST

/* ---- a write stopped midway by a file-size limit ---- */

typedef struct big_write {
    const char *path, *previous; /* previous: the keep-previous mode */
    int stream;                  /* through the stream (fprintf) rather than kiln_file_write */
} big_write;

static int big_write_fails(void *arg) {
    const big_write *w = arg;
    char err[512];
    kiln_file *f = kiln_file_begin_keeping(w->path, w->previous, err, sizeof err);
    if (!f) return 0;
    static char block[4096];
    memset(block, 'n', sizeof block);
    for (int i = 0; i < 64; i++) {
        if (w->stream)
            fprintf(kiln_file_stream(f), "%.*s", (int)sizeof block, block);
        else
            kiln_file_write(f, block, sizeof block);
    }
    if (kiln_file_commit(f, err, sizeof err) != KILN_ERR_IO) return 0;
    /* "PATH: not saved (write of TMP failed: File too large); any previous file is unchanged" */
    return strstr(err, w->path) == err && strstr(err, "not saved (write of") && strstr(err, strerror(EFBIG)) &&
           strstr(err, "any previous file is unchanged") && !strchr(err, '\n');
}

START_TEST(write_stopped_midway) {
    const char *path = at(0, "big.bin");
    kt_write_file(path, "OLD CONTENT", 11);
    for (int stream = 0; stream < 2; stream++) {
        big_write w = {.path = path, .stream = stream};
        kt_expect_failing_write(8192, big_write_fails, &w, &path, 1);
    }
    expect_content(path, "OLD CONTENT");
}
END_TEST

START_TEST(keep_previous) {
    const char *path = at(0, "state.bin"), *prev = at(1, "state.prev.bin");
    char err[512];
    /* nothing to keep yet: no previous file appears */
    kiln_file *f = kiln_file_begin_keeping(path, prev, err, sizeof err);
    ck_assert_ptr_nonnull(f);
    kiln_file_write(f, "one", 3);
    ck_assert_int_eq(kiln_file_commit(f, err, sizeof err), KILN_OK);
    expect_content(path, "one");
    ck_assert_int_eq(access(prev, F_OK), -1);
    /* each commit keeps the file it replaces */
    for (int i = 0; i < 2; i++) {
        f = kiln_file_begin_keeping(path, prev, err, sizeof err);
        ck_assert_ptr_nonnull(f);
        kiln_file_write(f, i ? "three" : "two", i ? 5 : 3);
        ck_assert_int_eq(kiln_file_commit(f, err, sizeof err), KILN_OK);
    }
    expect_content(path, "three");
    expect_content(prev, "two");
    /* an abort, and a write stopped midway, touch neither file */
    f = kiln_file_begin_keeping(path, prev, err, sizeof err);
    ck_assert_ptr_nonnull(f);
    kiln_file_write(f, "four", 4);
    kiln_file_abort(f);
    big_write w = {.path = path, .previous = prev};
    const char *kept[] = {path, prev};
    kt_expect_failing_write(8192, big_write_fails, &w, kept, 2);
    expect_content(path, "three");
    expect_content(prev, "two");
    expect_no_temporaries("state.bin");
    expect_no_temporaries("state.prev.bin");
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, success_replaces);
    tcase_add_test(tc, concurrent_writers_do_not_mix);
    tcase_add_test(tc, failures_leave_the_previous_file);
    tcase_add_test(tc, write_stopped_midway);
    tcase_add_test(tc, keep_previous);
}

int main(void) { return kt_run_tests("file_atomic", "file", add_tests); }
