/* `kiln eval` with a BERT checkpoint on a text file:
 *   loss X       the mean MLM cross-entropy per predicted (chosen) position
 *   accuracy Y   the fraction of chosen positions whose most likely token is the original
 * The text is tokenized with the checkpoint's tokenizer and cut into consecutive windows of
 * max_len - 2 tokens (the last one may be shorter), each framed [CLS] ... [SEP] and masked
 * as in training from a fixed seed (model/bert/bert_data.h), so two evaluations agree. --split
 * held-out evaluates the last 10% of the tokens only: the windows `kiln train` evaluates. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/cli.h"
#include "run/count_progress.h"
#include "cli/bert/bert_commands.h"
#include "run/device.h"
#include "cli/device_check.h"
#include "run/attention_option.h"
#include "run/precision_option.h"
#include "model/bert/bert_checkpoint.h"
#include "model/bert/bert_data.h"
#include "model/checkpoint_tokenizer.h"

/* The file's tokens. */
static int read_tokens(const char *path, const tokenizer *tok, int32_t **ids, int64_t *n) {
    char err[1024];
    data_set *bytes = NULL;
    if (data_load_bytes_as(path, "the evaluation data", &bytes, err, sizeof err)) return host_error("%s", err);
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

typedef struct eval_options {
    const char *ckpt, *data, *tok_path, *backend, *precision, *split, *attention;
    int device, batch, trust, held_out;
    kiln_dtype dtype;
    host_attention attention_mode;
} eval_options;

/* Returns 0, 1 after --help, or -1 (printed). */
static int parse_options(int argc, char **argv, eval_options *o) {
    *o = (eval_options){.backend = "auto", .precision = "fp32", .split = "all", .attention = "auto", .device = -1,
                        .batch = 8};
    cli_opt opts[] = {
        {.name = "--ckpt", .kind = CLI_STRING, .target = &o->ckpt, .meta = "FILE", .help = "a BERT checkpoint"},
        {.name = "--data", .kind = CLI_STRING, .target = &o->data, .meta = "FILE", .help = "a text file"},
        {.name = "--split", .kind = CLI_STRING, .target = &o->split, .meta = "WHICH",
         .help = "all (the whole file) or held-out (its last 10% of tokens, as training holds out)"},
        {.name = "--batch", .kind = CLI_INT, .target = &o->batch, .meta = "N", .help = "windows per forward pass",
         .min = 1, .max = 65536},
        host_precision_option(&o->precision),
        host_attention_option(&o->attention),
        {.name = "--tokenizer", .kind = CLI_STRING, .target = &o->tok_path, .meta = "FILE",
         .help = "the model's tokenizer (default: the checkpoint's own)"},
        host_backend_option(&o->backend),
        host_device_option(&o->device),
        host_trust_device_option(&o->trust),
    };
    int n = (int)(sizeof opts / sizeof opts[0]);
    const char *summary =
        "Prints `loss X` and `accuracy Y`: a BERT checkpoint's masked-LM loss and accuracy on a text\n"
        "file, its windows masked as in training from a fixed seed.";
    int rc = cli_parse("eval", summary, argc, argv, 2, opts, n);
    if (rc) return rc < 0 ? -1 : 1;
    if (!o->ckpt || !o->data) return -host_error("kiln eval needs --ckpt FILE and --data FILE");
    o->held_out = !strcmp(o->split, "held-out");
    if (!o->held_out && strcmp(o->split, "all")) return -host_error("--split %s is not one of all, held-out", o->split);
    return host_parse_precision(o->precision, &o->dtype) || host_parse_attention(o->attention, &o->attention_mode) ? -1 : 0;
}

/* --tokenizer's, else the checkpoint's own. */
static int load_tokenizer(const eval_options *o, tokenizer **tok) {
    char err[1024];
    if (o->tok_path) return tokenizer_load(o->tok_path, tok, err, sizeof err) ? host_error("%s", err) : 0;
    int found = checkpoint_tokenizer_load(o->ckpt, CKPT_TOKENIZER_KEY, tok, err, sizeof err);
    if (found < 0) return host_error("%s", err);
    if (!found) return host_error("%s holds no tokenizer (kiln.tokenizer): give it with --tokenizer FILE", o->ckpt);
    return 0;
}

/* The model on the device, in the precision asked for, agreeing with its tokenizer. */
static int open_model(const eval_options *o, const tokenizer *tok, kiln_ctx **ctx, bert_model **m) {
    char err[1024];
    if (!(*ctx = host_open_checked_device("eval", o->backend, o->device, o->dtype, o->trust))) return 1;
    if (bert_checkpoint_load(*ctx, o->ckpt, m, err, sizeof err)) return host_error("%s", err);
    if ((*m)->cfg.vocab_size != tokenizer_vocab_size(tok))
        return host_error("%s: its vocabulary (%d) is not its tokenizer's (%d)", o->ckpt, (*m)->cfg.vocab_size,
                          tokenizer_vocab_size(tok));
    if (bert_set_precision(*m, o->dtype, 0)) return host_engine_error("--precision fp16");
    /* --attention: --batch windows of max_len through every layer */
    const bert_config *c = &(*m)->cfg;
    char context[64];
    snprintf(context, sizeof context, "max_len %d, --batch %d", c->max_len, o->batch);
    int fused = host_attention_forward("eval", o->attention_mode, &c->block, *ctx,
                                       (uint64_t)o->batch * (uint64_t)c->n_head * (uint64_t)c->max_len *
                                           (uint64_t)c->max_len * (uint64_t)c->n_layer,
                                       o->dtype, context);
    if (fused < 0) return 1;
    (*m)->block.attention_fused = fused;
    return 0;
}

/* Evaluates tokens [first, first + count) and prints the figures. */
static int evaluate(const eval_options *o, bert_model *m, const bert_vocab *vocab, const int32_t *ids,
                    int64_t count) {
    char err[1024];
    double loss, accuracy;
    count_progress bar;
    count_progress_init(&bar, stderr, "eval", "windows", bert_eval_windows(count, m->cfg.max_len));
    eval_watch watch = {.done = count_progress_done, .self = &bar};
    int failed = bert_eval_watched(m, vocab, ids, count, o->batch, 0, &watch, &loss, &accuracy, err, sizeof err);
    count_progress_finish(&bar);
    if (failed) return host_error("%s: %s", o->data, err);
    fprintf(stderr, "kiln eval: %lld tokens in %lld windows of up to %d\n", (long long)count,
            (long long)bert_eval_windows(count, m->cfg.max_len), m->cfg.max_len - 2);
    printf("loss %.6f\naccuracy %.4f\n", loss, accuracy);
    return 0;
}

int bert_eval_command(int argc, char **argv) {
    eval_options o;
    int parsed = parse_options(argc, argv, &o);
    if (parsed) return parsed < 0 ? 1 : 0;
    char err[1024];
    tokenizer *tok = NULL;
    if (load_tokenizer(&o, &tok)) return 1;
    bert_vocab vocab = {0};
    int32_t *ids = NULL;
    int64_t n_ids = 0;
    kiln_ctx *ctx = NULL;
    bert_model *m = NULL;
    int rc = 1;
    if (bert_vocab_init(&vocab, tok, err, sizeof err)) {
        host_error("%s: %s", o.ckpt, err);
    } else if (read_tokens(o.data, tok, &ids, &n_ids) == 0) {
        int64_t first = o.held_out ? n_ids - n_ids / 10 : 0, count = n_ids - first;
        if (count < 1)
            host_error("%s: no tokens to evaluate%s", o.data, o.held_out ? " in its last 10%" : "");
        else if (open_model(&o, tok, &ctx, &m) == 0) {
            host_say_device("eval", ctx);
            rc = evaluate(&o, m, &vocab, ids + first, count);
        }
    }
    bert_free(m);
    kiln_close(ctx);
    free(ids);
    bert_vocab_free(&vocab);
    tokenizer_free(tok);
    return rc;
}
