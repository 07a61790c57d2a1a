/* `kiln eval`: a checkpoint's mean cross-entropy on a text file. */
#include <stdio.h>

#include "run/attention_option.h"
#include "run/cli.h"
#include "run/count_progress.h"
#include "cli/gpt/gpt_commands.h"
#include "run/device.h"
#include "cli/device_check.h"
#include "run/precision_option.h"
#include "run/gpt_load.h"
#include "run/gpt_tokenizer.h"
#include "run/lora_option.h"
#include "model/gpt/eval_loss.h"
#include "model/gpt/gpt_checkpoint.h"

int gpt_eval_command(int argc, char **argv) {
    const char *ckpt = NULL, *data = NULL, *tok_path = NULL, *backend = "auto", *precision = "fp32", *attention = "auto";
    int device = -1, batch = 8, trust = 0;
    static cli_list lora; /* --lora PATH[:SCALE] (static: 32 KiB) */
    lora.count = 0;
    cli_opt opts[] = {
        {.name = "--ckpt", .kind = CLI_STRING, .target = &ckpt, .meta = "FILE",
         .help = "the GPT: a kiln checkpoint, a GGUF file or a Hugging Face folder"},
        {.name = "--data", .kind = CLI_STRING, .target = &data, .meta = "FILE",
         .help = "a text file, tokenized as the model was trained"},
        {.name = "--tokenizer", .kind = CLI_STRING, .target = &tok_path, .meta = "FILE",
         .help = "the model's tokenizer (default: the checkpoint's own, else bytes)"},
        {.name = "--lora", .kind = CLI_LIST, .target = &lora, .meta = "PATH[:SCALE]", .help = HOST_LORA_HELP},
        {.name = "--batch", .kind = CLI_INT, .target = &batch, .meta = "N",
         .help = "windows per forward pass", .min = 1, .max = 65536},
        host_precision_option(&precision),
        host_attention_option(&attention),
        host_backend_option(&backend),
        host_device_option(&device),
        host_trust_device_option(&trust),
    };
    int n = (int)(sizeof opts / sizeof opts[0]);
    const char *summary =
        "Prints `loss X`: the model's mean cross-entropy over the file's tokens, cut into\n"
        "consecutive non-overlapping windows of n_positions inputs (only full windows). A seq2seq\n"
        "checkpoint is scored by BLEU on pairs (--beam, --length-penalty), a BERT one by masked-token\n"
        "loss (--split): `kiln eval --help` lists every kind's options, `kiln eval --ckpt FILE --help`\n"
        "those of FILE's kind. --lora applies LoRA adapters to the GPT.";
    int rc = cli_parse("eval", summary, argc, argv, 2, opts, n);
    if (rc) return rc < 0 ? 1 : 0;
    if (!ckpt) return host_error("kiln eval needs --ckpt FILE");
    if (!data) return host_error("kiln eval needs --data FILE");
    kiln_dtype dtype;
    host_attention mode;
    if (host_parse_precision(precision, &dtype) || host_parse_attention(attention, &mode)) return 1;

    char err[1024];
    data_set *ds = NULL;
    tokenizer *tok = NULL;
    kiln_ctx *ctx = host_open_checked_device("eval", backend, device, dtype, trust);
    gpt_model *m = NULL;
    lora_adapter **adapters = NULL;
    data_set whole = {0};
    rc = 1;
    if (!ctx) goto done;
    if (host_load_gpt_as(ctx, ckpt, tok_path, dtype, &m, &tok) || gpt_tokenizer_load_data(tok, data, "the evaluation data", &ds))
        goto done;
    /* The whole file is evaluated, not a held-out tenth: the same tokens seen as one
     * training split that covers all of them. */
    whole = *ds;
    whole.n_train = whole.n_tokens;
    /* fp16: the f32 weights are replaced by f16 ones (no masters: nothing trains) */
    if (gpt_set_precision(m, dtype, 0)) {
        host_engine_error("--precision fp16");
        goto done;
    }
    if (host_load_loras(m, tok, ckpt, &lora, 1, &adapters)) goto done;
    if (data_windows(&whole, DATA_TRAIN, m->cfg.n_positions) <= 0) {
        host_error("%s has %lld tokens; evaluating needs at least n_positions + 1 = %d", data,
                   (long long)whole.n_tokens, m->cfg.n_positions + 1);
        goto done;
    }
    char context[64];
    snprintf(context, sizeof context, "n_positions %d, --batch %d", m->cfg.n_positions, batch);
    int fused = host_attention_forward("eval", mode, &m->block.o, ctx,
                                       (uint64_t)batch * (uint64_t)m->cfg.n_head * (uint64_t)m->cfg.n_positions *
                                           (uint64_t)m->cfg.n_positions * (uint64_t)m->cfg.n_layer,
                                       dtype, context);
    if (fused < 0) goto done;
    m->block.attention_fused = fused;
    host_say_device("eval", ctx);
    double loss;
    count_progress bar;
    count_progress_init(&bar, stderr, "eval", "windows", data_windows(&whole, DATA_TRAIN, m->cfg.n_positions));
    eval_watch watch = {.done = count_progress_done, .self = &bar};
    int failed = eval_loss_watched(m, &whole, DATA_TRAIN, m->cfg.n_positions, batch, &watch, &loss, err, sizeof err);
    count_progress_finish(&bar);
    if (failed) {
        host_error("%s: %s", data, err);
        goto done;
    }
    printf("loss %.6f\n", loss);
    rc = 0;
done:
    host_free_loras(adapters, lora.count);
    gpt_free(m);
    kiln_close(ctx);
    data_free(ds);
    tokenizer_free(tok);
    return rc;
}
