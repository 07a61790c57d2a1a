/* Test machinery for files written whole: see testfile.h. */
#define _XOPEN_SOURCE 700 /* fork, waitpid, setrlimit, nftw */
#include "testfile.h"

#include <check.h>
#include <dirent.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

unsigned char *kt_read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
    long size = ftell(f);
    ck_assert_int_ge(size, 0);
    rewind(f);
    unsigned char *b = malloc((size_t)size + 1);
    ck_assert_ptr_nonnull(b);
    ck_assert_uint_eq(fread(b, 1, (size_t)size, f), (size_t)size);
    fclose(f);
    *n = (size_t)size;
    return b;
}

void kt_write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "cannot create %s", path);
    ck_assert_uint_eq(fwrite(data, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
}

int kt_count_files(const char *dir, const char *prefix) {
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "cannot list %s", dir);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return n;
}

void kt_make_temp_dir(char *dir, size_t cap, const char *name) {
    snprintf(dir, cap, "/tmp/kiln_%s_XXXXXX", name);
    ck_assert_msg(mkdtemp(dir) != NULL, "cannot make %s", dir);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

int kt_remove_tree(const char *dir) { return nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS); }

void kt_remove_dir(const char *dir) { ck_assert_msg(kt_remove_tree(dir) == 0, "cannot remove %s", dir); }

/* "<name>.tmp" of path, and its folder, for kt_count_files. */
static void temporary_prefix(const char *path, char *dir, char *prefix, size_t cap) {
    const char *slash = strrchr(path, '/');
    if (slash) snprintf(dir, cap, "%.*s", (int)(slash - path), path);
    else snprintf(dir, cap, ".");
    snprintf(prefix, cap, "%s.tmp", slash ? slash + 1 : path);
}

void kt_expect_failing_write(long limit, int (*fails)(void *arg), void *arg, const char *const *kept, int n_kept) {
    enum { MAX_KEPT = 4 };
    ck_assert_int_le(n_kept, MAX_KEPT);
    unsigned char *before[MAX_KEPT];
    size_t size[MAX_KEPT];
    for (int i = 0; i < n_kept; i++) before[i] = kt_read_file(kept[i], &size[i]);
    fflush(NULL); /* the child must not write out the parent's buffered output again */
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {.rlim_cur = (rlim_t)limit, .rlim_max = (rlim_t)limit};
        _exit(setrlimit(RLIMIT_FSIZE, &rl) == 0 && fails(arg) == 1 ? 0 : 1);
    }
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "the write under a %ld-byte file-size limit did not fail as expected (child status %d)", limit,
                  status);
    for (int i = 0; i < n_kept; i++) {
        size_t n;
        unsigned char *after = kt_read_file(kept[i], &n);
        ck_assert_msg(n == size[i] && memcmp(after, before[i], n) == 0, "%s changed", kept[i]);
        free(after);
        free(before[i]);
        char dir[1024], prefix[1024];
        temporary_prefix(kept[i], dir, prefix, sizeof dir);
        ck_assert_msg(kt_count_files(dir, prefix) == 0, "a temporary file %s/%s... was left", dir, prefix);
    }
}
