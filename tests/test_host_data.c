/* Training data: loading and its errors, the 90/10 split, batches that depend only on
 * (seed, step) and follow the documented formula, and the evaluation windows. */
#define _POSIX_C_SOURCE 200809L

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "formats/data.h"
#include "kiln/rng.h"
#include "testutil_host.h"

static char tmpdir[] = "/tmp/kiln_data_test_XXXXXX";

/* A data set whose token at position p is p itself (vocab n), so a batch row's first
 * token is its window start. */
static data_set *positions(int64_t n) {
    int32_t *t = malloc((size_t)n * sizeof *t);
    for (int64_t i = 0; i < n; i++) t[i] = (int32_t)i;
    data_set *ds;
    char err[256];
    ck_assert_msg(data_from_tokens(t, n, (int32_t)n, &ds, err, sizeof err) == 0, "%s", err);
    free(t);
    return ds;
}

START_TEST(loads_bytes_and_splits) {
    char path[256], err[256];
    snprintf(path, sizeof path, "%s/text.txt", tmpdir);
    unsigned char bytes[100];
    for (int i = 0; i < 100; i++) bytes[i] = (unsigned char)(i * 37 + 200); /* bytes >= 128 too */
    FILE *f = fopen(path, "wb");
    fwrite(bytes, 1, sizeof bytes, f);
    fclose(f);
    data_set *ds;
    ck_assert_msg(data_load_bytes(path, &ds, err, sizeof err) == 0, "%s", err);
    remove(path);
    ck_assert_int_eq(ds->vocab_size, 256);
    ck_assert_int_eq(ds->n_tokens, 100);
    ck_assert_int_eq(ds->n_train, 90);
    for (int i = 0; i < 100; i++) ck_assert_int_eq(ds->tokens[i], bytes[i]); /* never negative */
    const int32_t *t;
    int64_t n;
    ck_assert_int_eq(data_split(ds, DATA_TRAIN, &t, &n), 0);
    ck_assert(t == ds->tokens && n == 90);
    ck_assert_int_eq(data_split(ds, DATA_VAL, &t, &n), 0);
    ck_assert(t == ds->tokens + 90 && n == 10);
    ck_assert_int_eq(data_split(ds, 2, &t, &n), -1);
    data_free(ds);

    /* 10% rounds down: 9 tokens hold out nothing, 19 hold out 1 */
    ck_assert_int_eq(data_from_bytes(bytes, 9, &ds, err, sizeof err), 0);
    ck_assert_int_eq(ds->n_train, 9);
    ck_assert_int_eq(data_windows(ds, DATA_VAL, 1), 0);
    data_free(ds);
    ck_assert_int_eq(data_from_bytes(bytes, 19, &ds, err, sizeof err), 0);
    ck_assert_int_eq(ds->n_train, 18);
    data_free(ds);
}
END_TEST

START_TEST(load_errors) {
    char path[256], err[256];
    data_set *ds = (data_set *)1;
    snprintf(path, sizeof path, "%s/missing.txt", tmpdir);
    ck_assert_int_eq(data_load_bytes(path, &ds, err, sizeof err), -1);
    ck_assert_ptr_null(ds);
    ck_assert_msg(strstr(err, "missing.txt: cannot open the training data: No such file"), "%s", err);
    ck_assert_int_eq(data_load_bytes(tmpdir, &ds, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "is a directory"), "%s", err);
    snprintf(path, sizeof path, "%s/empty.txt", tmpdir);
    fclose(fopen(path, "wb"));
    ck_assert_int_eq(data_load_bytes(path, &ds, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "empty.txt: the training data file is empty"), "%s", err);
    remove(path);
    ck_assert_int_eq(data_from_bytes((const uint8_t *)"", 0, &ds, err, sizeof err), -1);

    int32_t bad[3] = {1, 5, 2};
    ck_assert_int_eq(data_from_tokens(bad, 3, 5, &ds, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "token 1 has id 5, outside the vocabulary [0, 5)"), "%s", err);
    bad[1] = -1;
    ck_assert_int_eq(data_from_tokens(bad, 3, 5, &ds, err, sizeof err), -1);
    ck_assert_int_eq(data_from_tokens(bad, 0, 5, &ds, err, sizeof err), -1);
    ck_assert_int_eq(data_from_tokens(bad, 3, 0, &ds, err, sizeof err), -1);
}
END_TEST

/* A pipe has no size up front: the loader must grow its buffer and still return the
 * stream byte for byte. */
START_TEST(loads_from_a_pipe) {
    char path[256], err[256];
    snprintf(path, sizeof path, "%s/fifo", tmpdir);
    ck_assert_int_eq(mkfifo(path, 0600), 0);
    size_t n = 300000; /* several 64 KiB growth steps */
    unsigned char *bytes = malloc(n);
    for (size_t i = 0; i < n; i++) bytes[i] = (unsigned char)(kiln_rng_u32(1, 2, i) & 0xff);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        FILE *f = fopen(path, "wb");
        size_t w = f ? fwrite(bytes, 1, n, f) : 0;
        if (f) fclose(f);
        _exit(w == n ? 0 : 1);
    }
    data_set *ds;
    int rc = data_load_bytes(path, &ds, err, sizeof err);
    int status;
    waitpid(pid, &status, 0);
    remove(path);
    ck_assert_msg(rc == 0, "%s", err);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    ck_assert_int_eq(ds->n_tokens, (int64_t)n);
    for (size_t i = 0; i < n; i++)
        if (ds->tokens[i] != bytes[i]) ck_abort_msg("token %zu differs", i);
    data_free(ds);
    free(bytes);
}
END_TEST

START_TEST(batches_follow_the_documented_formula) {
    data_set *ds = positions(1000); /* train 900, val 100 */
    enum { B = 4, T = 8 };
    int32_t x[B * T], y[B * T];
    char err[256];
    uint64_t seed = 1234, step = 77;
    ck_assert_msg(data_sample_batch(ds, DATA_TRAIN, B, T, seed, step, x, y, err, sizeof err) == 0,
                  "%s", err);
    for (int b = 0; b < B; b++) {
        uint64_t key = seed ^ DATA_RNG_SALT;
        uint64_t r = ((uint64_t)kiln_rng_u32(key, step, 2 * (uint64_t)b) << 32) |
                     kiln_rng_u32(key, step, 2 * (uint64_t)b + 1);
        int32_t start = (int32_t)(r % (900 - T));
        for (int i = 0; i < T; i++) {
            ck_assert_int_eq(x[b * T + i], start + i);
            ck_assert_int_eq(y[b * T + i], start + i + 1);
        }
    }
    data_free(ds);
}
END_TEST

START_TEST(batches_are_reproducible_and_vary) {
    data_set *ds = positions(5000);
    enum { B = 8, T = 16 };
    int32_t x1[B * T], y1[B * T], x2[B * T], y2[B * T];
    char err[256];
    ck_assert_int_eq(data_sample_batch(ds, DATA_TRAIN, B, T, 7, 100, x1, y1, err, sizeof err), 0);
    ck_assert_int_eq(data_sample_batch(ds, DATA_TRAIN, B, T, 7, 100, x2, y2, err, sizeof err), 0);
    ck_assert(memcmp(x1, x2, sizeof x1) == 0 && memcmp(y1, y2, sizeof y1) == 0);
    /* a larger batch at the same step starts with the same rows */
    int32_t x3[2 * B * T], y3[2 * B * T];
    ck_assert_int_eq(data_sample_batch(ds, DATA_TRAIN, 2 * B, T, 7, 100, x3, y3, err, sizeof err), 0);
    ck_assert(memcmp(x1, x3, sizeof x1) == 0);
    ck_assert_int_eq(data_sample_batch(ds, DATA_TRAIN, B, T, 7, 101, x2, y2, err, sizeof err), 0);
    ck_assert(memcmp(x1, x2, sizeof x1) != 0);
    ck_assert_int_eq(data_sample_batch(ds, DATA_TRAIN, B, T, 8, 100, x2, y2, err, sizeof err), 0);
    ck_assert(memcmp(x1, x2, sizeof x1) != 0);
    data_free(ds);
}
END_TEST

START_TEST(batches_cover_the_split_evenly) {
    /* train = 45 tokens, block 5: 40 possible starts, each about equally often, none
     * outside [0, 40) (a window never reaches into the validation part) */
    data_set *ds = positions(50);
    enum { B = 64, T = 5, STEPS = 100 };
    int counts[64] = {0};
    int32_t x[B * T], y[B * T];
    char err[256];
    for (uint64_t s = 0; s < STEPS; s++) {
        ck_assert_int_eq(data_sample_batch(ds, DATA_TRAIN, B, T, 3, s, x, y, err, sizeof err), 0);
        for (int b = 0; b < B; b++) {
            ck_assert(x[b * T] >= 0 && x[b * T] < 40);
            ck_assert(y[b * T + T - 1] <= 44);
            counts[x[b * T]]++;
        }
    }
    /* 6400 draws over 40 starts: 160 expected each */
    for (int i = 0; i < 40; i++) ck_assert_msg(counts[i] > 100 && counts[i] < 220, "start %d: %d", i, counts[i]);
    /* the validation split draws from its own tokens only */
    for (uint64_t s = 0; s < 20; s++) {
        ck_assert_int_eq(data_sample_batch(ds, DATA_VAL, B, 2, 3, s, x, y, err, sizeof err), 0);
        for (int b = 0; b < B; b++) ck_assert(x[b * 2] >= 45 && y[b * 2 + 1] <= 49);
    }
    data_free(ds);
}
END_TEST

START_TEST(block_too_long_is_a_clear_error) {
    data_set *ds = positions(100); /* val = 10 tokens */
    int32_t x[16], y[16];
    char err[256];
    ck_assert_int_eq(data_sample_batch(ds, DATA_VAL, 1, 10, 0, 0, x, y, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "the validation split has 10 tokens but a block of 10 needs at least 11"),
                  "%s", err);
    ck_assert_int_eq(data_check_block(ds, DATA_TRAIN, 90, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "training split has 90 tokens"), "%s", err);
    ck_assert_int_eq(data_sample_batch(ds, DATA_VAL, 1, 9, 0, 0, x, y, err, sizeof err), 0);
    for (int i = 0; i < 9; i++) ck_assert(x[i] == 90 + i && y[i] == 91 + i); /* the one window */
    ck_assert_int_eq(data_sample_batch(ds, DATA_TRAIN, 0, 4, 0, 0, x, y, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "batch size 0"), "%s", err);
    ck_assert_int_eq(data_sample_batch(ds, DATA_TRAIN, 1, 0, 0, 0, x, y, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "block length 0"), "%s", err);
    ck_assert_int_eq(data_sample_batch(ds, 5, 1, 4, 0, 0, x, y, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "unknown data split 5"), "%s", err);
    data_free(ds);
}
END_TEST

START_TEST(evaluation_windows) {
    data_set *ds = positions(100); /* val = positions 90..99 */
    int32_t x[10], y[10];
    char err[256];
    ck_assert_int_eq(data_windows(ds, DATA_VAL, 3), 3); /* (10 - 1) / 3 */
    ck_assert_int_eq(data_window(ds, DATA_VAL, 3, 2, x, y, err, sizeof err), 0);
    int32_t ex[3] = {96, 97, 98}, ey[3] = {97, 98, 99};
    ck_assert(memcmp(x, ex, sizeof ex) == 0 && memcmp(y, ey, sizeof ey) == 0);
    ck_assert_int_eq(data_window(ds, DATA_VAL, 3, 3, x, y, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "window 3 is out of range: the validation split has 3 full windows of 3"),
                  "%s", err);
    ck_assert_int_eq(data_window(ds, DATA_VAL, 3, -1, x, y, err, sizeof err), -1);
    ck_assert_int_eq(data_windows(ds, DATA_VAL, 9), 1);
    ck_assert_int_eq(data_windows(ds, DATA_VAL, 10), 0);
    ck_assert_int_eq(data_windows(ds, DATA_VAL, 0), -1);
    ck_assert_int_eq(data_windows(ds, 7, 3), -1);
    /* the windows together predict every token of the split after the first exactly once
     * when n divides len - 1 */
    ck_assert_int_eq(data_windows(ds, DATA_TRAIN, 89), 1);
    ck_assert_int_eq(data_windows(ds, DATA_TRAIN, 1), 89);
    for (int64_t i = 0; i < 89; i++) {
        ck_assert_int_eq(data_window(ds, DATA_TRAIN, 1, i, x, y, err, sizeof err), 0);
        ck_assert(x[0] == i && y[0] == i + 1);
    }
    data_free(ds);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, loads_bytes_and_splits);
    tcase_add_test(tc, load_errors);
    tcase_add_test(tc, loads_from_a_pipe);
    tcase_add_test(tc, batches_follow_the_documented_formula);
    tcase_add_test(tc, batches_are_reproducible_and_vary);
    tcase_add_test(tc, batches_cover_the_split_evenly);
    tcase_add_test(tc, block_too_long_is_a_clear_error);
    tcase_add_test(tc, evaluation_windows);
}

int main(void) { return kt_run_tcase_in(tmpdir, "host_data", "data", 0, add_tests); }
