/* `kiln eval`: a checkpoint's mean cross-entropy on a text file. */
#include <stdio.h>

#include "cli.h"
#include "commands.h"
#include "device.h"
#include "eval.h"
#include "gpt_checkpoint.h"
#include "precision.h"

int cmd_eval(int argc, char **argv) {
    const char *ckpt = NULL, *data = NULL, *backend = "auto", *precision = "fp32";
    int device = -1, batch = 8;
    cli_opt opts[] = {
        {"--ckpt", CLI_STRING, &ckpt, "FILE", "the model (safetensors, GPT-2 layout)", 0, 0, 0},
        {"--data", CLI_STRING, &data, "FILE", "a text file; its bytes are the tokens", 0, 0, 0},
        {"--batch", CLI_INT, &batch, "N", "windows per forward pass", 1, 65536, 0},
        {"--precision", CLI_STRING, &precision, "P", HOST_PRECISION_HELP, 0, 0, 0},
        {"--backend", CLI_STRING, &backend, "NAME", HOST_BACKEND_HELP, 0, 0, 0},
        {"--device", CLI_INT, &device, "N", HOST_DEVICE_HELP, -1, 1000, 0},
    };
    int n = (int)(sizeof opts / sizeof opts[0]);
    const char *summary =
        "Prints `loss X`: the model's mean cross-entropy over the file's byte tokens, cut into\n"
        "consecutive non-overlapping windows of n_positions inputs (only full windows).";
    int rc = cli_parse("eval", summary, argc, argv, 2, opts, n);
    if (rc) return rc < 0 ? 1 : 0;
    if (!ckpt) return host_error("kiln eval needs --ckpt FILE");
    if (!data) return host_error("kiln eval needs --data FILE");
    kiln_dtype dtype;
    if (host_parse_precision(precision, &dtype)) return 1;

    char err[1024];
    data_set *ds = NULL;
    if (data_load_bytes(data, &ds, err, sizeof err)) return host_error("%s", err);
    /* The whole file is evaluated, not a held-out tenth: the same tokens seen as one
     * training split that covers all of them. */
    data_set whole = *ds;
    whole.n_train = whole.n_tokens;
    kiln_ctx *ctx = host_open_device(backend, device);
    gpt_model *m = NULL;
    rc = 1;
    if (!ctx || host_check_precision(ctx, dtype)) goto done;
    if (gpt_checkpoint_load(ctx, ckpt, &m, err, sizeof err)) {
        host_error("%s", err);
        goto done;
    }
    /* fp16: the f32 weights are replaced by f16 ones (no masters: nothing trains) */
    if (gpt_set_precision(m, dtype, 0)) {
        host_engine_error("--precision fp16");
        goto done;
    }
    if (m->cfg.vocab_size != GPT_BYTE_VOCAB) {
        host_error("%s has vocab_size %d; kiln eval reads byte tokens and needs vocab_size %d",
                   ckpt, m->cfg.vocab_size, GPT_BYTE_VOCAB);
        goto done;
    }
    if (data_windows(&whole, DATA_TRAIN, m->cfg.n_positions) <= 0) {
        host_error("%s has %lld bytes; evaluating needs at least n_positions + 1 = %d", data,
                   (long long)whole.n_tokens, m->cfg.n_positions + 1);
        goto done;
    }
    host_say_device("eval", ctx);
    double loss;
    if (eval_loss(m, &whole, DATA_TRAIN, m->cfg.n_positions, batch, 0, &loss, err, sizeof err)) {
        host_error("%s: %s", data, err);
        goto done;
    }
    printf("loss %.6f\n", loss);
    rc = 0;
done:
    gpt_free(m);
    kiln_close(ctx);
    data_free(ds);
    return rc;
}
