/* Test machinery for the files kiln writes whole (kiln/file.h): a writer stopped midway,
 * as by a full disk, must leave the previous file byte-identical and no temporary file.
 *
 * The stop is a file-size limit (RLIMIT_FSIZE) in a child process, with SIGXFSZ ignored so
 * that the write past it fails with EFBIG instead of killing the writer. The limit applies
 * to every file the child writes, so it must be below the size of the new file and above
 * zero: the writer then creates its temporary file, writes part of it and fails. */
#ifndef KILN_TESTFILE_H
#define KILN_TESTFILE_H

#include <stddef.h>

/* The whole of a file, malloc'd; *n its size. Fails the test when it cannot be read. */
unsigned char *kt_read_file(const char *path, size_t *n);
/* Replaces path with n bytes (a plain write: the previous file of a test). */
void kt_write_file(const char *path, const void *data, size_t n);
/* Entries of folder `dir` whose name starts with prefix. */
int kt_count_files(const char *dir, const char *prefix);
/* A new folder "/tmp/kiln_<name>_XXXXXX" into dir (cap bytes), and its removal with all it
 * holds: a test's fixture. */
void kt_make_temp_dir(char *dir, size_t cap, const char *name);
void kt_remove_dir(const char *dir);
/* The removal itself, outside a test (a suite runner's scratch folder): 0, or -1. */
int kt_remove_tree(const char *dir);

/* Runs fails(arg) in a child process whose files may grow to `limit` bytes only; fails()
 * runs a writer and returns 1 when it failed as expected (its message checked), else 0.
 * Then asserts that fails() returned 1, that each of the n_kept files in `kept` is
 * byte-identical to what it was before, and that no file named "<kept>.tmp..." is left
 * beside it. */
void kt_expect_failing_write(long limit, int (*fails)(void *arg), void *arg, const char *const *kept, int n_kept);

#endif
