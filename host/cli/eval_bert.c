/* `kiln eval` with a BERT checkpoint on a text file:
 *   loss X       the mean MLM cross-entropy per predicted (chosen) position
 *   accuracy Y   the fraction of chosen positions whose most likely token is the original
 * The text is tokenized with the checkpoint's tokenizer and cut into consecutive windows of
 * max_len - 2 tokens (the last one may be shorter), each framed [CLS] ... [SEP] and masked
 * as in training from a fixed seed (model/bert_data.h), so two evaluations agree. --split
 * held-out evaluates the last 10% of the tokens only: the windows `kiln train` evaluates. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/device_check.h"
#include "model/bert_checkpoint.h"
#include "model/bert_data.h"
#include "model/checkpoint_tokenizer.h"
#include "run/cli.h"
#include "run/device.h"
#include "run/precision_option.h"

/* The file's tokens. */
static int read_tokens(const char *path, const tokenizer *tok, int32_t **ids, int64_t *n) {
    char err[1024];
    data_set *bytes = NULL;
    if (data_load_bytes(path, &bytes, err, sizeof err)) return host_error("%s", err);
    uint8_t *text = malloc((size_t)bytes->n_tokens);
    int rc = 0;
    if (!text) {
        rc = host_error("out of host memory");
    } else {
        for (int64_t i = 0; i < bytes->n_tokens; i++) text[i] = (uint8_t)bytes->tokens[i];
        if (tokenizer_encode(tok, text, (size_t)bytes->n_tokens, ids, n, err, sizeof err))
            rc = host_error("%s: %s", path, err);
    }
    free(text);
    data_free(bytes);
    return rc;
}

int cmd_eval_bert(int argc, char **argv) {
    const char *ckpt = NULL, *data = NULL, *tok_path = NULL, *backend = "auto", *precision = "fp32", *split = "all";
    int device = -1, batch = 8, trust = 0;
    cli_opt opts[] = {
        {.name = "--ckpt", .kind = CLI_STRING, .target = &ckpt, .meta = "FILE", .help = "a BERT checkpoint"},
        {.name = "--data", .kind = CLI_STRING, .target = &data, .meta = "FILE", .help = "a text file"},
        {.name = "--split", .kind = CLI_STRING, .target = &split, .meta = "WHICH",
         .help = "all (the whole file) or held-out (its last 10% of tokens, as training holds out)"},
        {.name = "--batch", .kind = CLI_INT, .target = &batch, .meta = "N", .help = "windows per forward pass",
         .min = 1, .max = 65536},
        host_precision_option(&precision),
        {.name = "--tokenizer", .kind = CLI_STRING, .target = &tok_path, .meta = "FILE",
         .help = "the model's tokenizer (default: the checkpoint's own)"},
        host_backend_option(&backend),
        host_device_option(&device),
        host_trust_device_option(&trust),
    };
    int n = (int)(sizeof opts / sizeof opts[0]);
    const char *summary =
        "Prints `loss X` and `accuracy Y`: a BERT checkpoint's masked-LM loss and accuracy on a text\n"
        "file, its windows masked as in training from a fixed seed.";
    int rc = cli_parse("eval", summary, argc, argv, 2, opts, n);
    if (rc) return rc < 0 ? 1 : 0;
    if (!ckpt || !data) return host_error("kiln eval needs --ckpt FILE and --data FILE");
    int held_out = !strcmp(split, "held-out");
    if (!held_out && strcmp(split, "all")) return host_error("--split %s is not one of all, held-out", split);
    kiln_dtype dtype;
    if (host_parse_precision(precision, &dtype)) return 1;
    char err[1024];
    tokenizer *tok = NULL;
    if (tok_path) {
        if (tokenizer_load(tok_path, &tok, err, sizeof err)) return host_error("%s", err);
    } else {
        int found = checkpoint_tokenizer_load(ckpt, CKPT_TOKENIZER_KEY, &tok, err, sizeof err);
        if (found < 0) return host_error("%s", err);
        if (!found) return host_error("%s holds no tokenizer (kiln.tokenizer): give it with --tokenizer FILE", ckpt);
    }
    bert_vocab vocab = {0};
    int32_t *ids = NULL;
    int64_t n_ids = 0;
    kiln_ctx *ctx = NULL;
    bert_model *m = NULL;
    rc = 1;
    if (bert_vocab_init(&vocab, tok, err, sizeof err)) {
        host_error("%s: %s", ckpt, err);
        goto done;
    }
    if (read_tokens(data, tok, &ids, &n_ids)) goto done;
    int64_t first = held_out ? n_ids - n_ids / 10 : 0, count = n_ids - first;
    if (count < 1) {
        host_error("%s: no tokens to evaluate%s", data, held_out ? " in its last 10%" : "");
        goto done;
    }
    if (!(ctx = host_open_checked_device("eval", backend, device, trust)) || host_check_precision(ctx, dtype)) goto done;
    if (bert_checkpoint_load(ctx, ckpt, &m, err, sizeof err)) {
        host_error("%s", err);
        goto done;
    }
    if (m->cfg.vocab_size != tokenizer_vocab_size(tok)) {
        host_error("%s: its vocabulary (%d) is not its tokenizer's (%d)", ckpt, m->cfg.vocab_size,
                   tokenizer_vocab_size(tok));
        goto done;
    }
    if (bert_set_precision(m, dtype, 0)) {
        host_engine_error("--precision fp16");
        goto done;
    }
    host_say_device("eval", ctx);
    double loss, accuracy;
    if (bert_eval(m, &vocab, ids + first, count, batch, 0, &loss, &accuracy, err, sizeof err)) {
        host_error("%s: %s", data, err);
        goto done;
    }
    fprintf(stderr, "kiln eval: %lld tokens in %lld windows of up to %d\n", (long long)count,
            (long long)bert_eval_windows(count, m->cfg.max_len), m->cfg.max_len - 2);
    printf("loss %.6f\naccuracy %.4f\n", loss, accuracy);
    rc = 0;
done:
    bert_free(m);
    kiln_close(ctx);
    free(ids);
    bert_vocab_free(&vocab);
    tokenizer_free(tok);
    return rc;
}
