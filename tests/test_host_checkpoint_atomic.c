/* A model's files written over the previous ones and stopped midway (a file-size limit, as
 * a full disk would stop them) leave those previous files byte-identical: a GPT checkpoint
 * (the same safetensors writer saves every model kind and the optimizer state) and a BERT's
 * config.json. The model is made in the child process that writes it, so no context or
 * thread pool crosses the fork. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/bert/bert.h"
#include "model/bert/bert_checkpoint.h"
#include "model/gpt/gpt.h"
#include "model/gpt/gpt_checkpoint.h"
#include "testfile.h"
#include "testutil.h"

static char g_dir[64];

static void setup(void) { kt_make_temp_dir(g_dir, sizeof g_dir, "ckpt"); }
static void teardown(void) { kt_remove_dir(g_dir); }

/* Writes `old` to g_dir/name, then runs fails(path) under a file-size limit of `limit`
 * bytes: path must still hold `old`. */
static void expect_kept(const char *name, const char *old, long limit, int (*fails)(void *path)) {
    char path[128];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    kt_write_file(path, old, strlen(old));
    const char *kept = path;
    kt_expect_failing_write(limit, fails, path, &kept, 1);
}

/* 1 when err is one line that names path and a failed write. */
static int names_the_write(const char *err, const char *path) {
    return strstr(err, path) == err && strstr(err, "write of") && !strchr(err, '\n');
}

/* A GPT of about 40 KB saved to path: 1 when the save fails as names_the_write says. */
static int gpt_save_fails(void *path) {
    kiln_ctx *ctx;
    if (kiln_open("cpu", &ctx) != KILN_OK) return 0;
    const gpt_config cfg = {.n_layer = 2, .n_head = 2, .n_embd = 32, .n_positions = 16, .vocab_size = 64,
                            .ln_eps = GPT_DEFAULT_LN_EPS};
    gpt_model *m = gpt_new(ctx, &cfg);
    char err[512] = "";
    int failed = m && gpt_init(m, 1) == KILN_OK && gpt_checkpoint_save(m, path, NULL, 0, err, sizeof err) == -1;
    if (m) gpt_free(m);
    kiln_close(ctx);
    return failed && names_the_write(err, path);
}

START_TEST(gpt_checkpoint_stopped_midway) {
    expect_kept("model.safetensors", "the previous checkpoint", 4096, gpt_save_fails);
}
END_TEST

/* A BERT's config.json (about 700 bytes) saved to path: 1 when it fails as
 * names_the_write says. Only the configuration is read, so no weights are made. */
static int bert_config_fails(void *path) {
    bert_model m = {.cfg = {.n_layer = 2, .n_head = 2, .n_embd = 16, .max_len = 16, .vocab_size = 64,
                            .ln_eps = 1e-12f, .block = block_options_default()}};
    char err[512] = "";
    return bert_write_hf_config(&m, path, err, sizeof err) == -1 && names_the_write(err, path);
}

START_TEST(bert_config_stopped_midway) {
    expect_kept("config.json", "{\"previous\": true}\n", 100, bert_config_fails);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, gpt_checkpoint_stopped_midway);
    tcase_add_test(tc, bert_config_stopped_midway);
}

int main(void) { return kt_run_tests("checkpoint_atomic", "checkpoint", add_tests); }
