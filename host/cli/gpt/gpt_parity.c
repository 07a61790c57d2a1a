/* `kiln dev parity`: the GPT's numbers for tests/gpt_parity.py.
 *
 *   kiln dev parity --ckpt W.safetensors --tokens T.safetensors --out R.safetensors
 *                   [--steps N --lr X --weight-decay X --beta1 X --beta2 X --clip X]
 *
 * The PyTorch parity test (tests/gpt_parity.py) writes the weights and the token batches
 * ("tokens": [S, B, T + 1] integers; batch s is inputs [:, :T] and targets [:, 1:]), runs
 * this, and compares R with PyTorch: "logits" [B, T, V] and "loss" [1] of batch 0 at the
 * initial weights, "grad.<weight name>" for every weight, and "losses" [N]: the loss of
 * each of N AdamW steps (step i trains on batch i mod S, constant learning rate).
 *
 * With an adapter (tests/lora_parity.py) the base is frozen and the adapter alone trains:
 *   --lora-rank R [--lora-alpha A --lora-targets LIST]  a fresh one (PEFT's init), or
 *   --lora DIR                                          one read from PEFT's files;
 * then R holds "grad.<name>" of the adapter's A and B only, and the adapter itself before
 * the steps ("init.<name>") and after them ("final.<name>"), kiln's names "h.N.<module>.lora_A".
 * Exit code 77 (CTest's "skipped") when the backend cannot be opened on this machine. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/cli.h"
#include "cli/gpt/gpt_commands.h"
#include "cli/dev_dump.h"
#include "run/device.h"
#include "run/gpt_load.h"
#include "formats/safetensors.h"
#include "model/gpt/gpt_checkpoint.h"
#include "model/lora.h"
#include "model/trainer.h"

typedef struct batches {
    int32_t *x, *y; /* [S][B * T] */
    int count, rows, block;
} batches;

static int load_batches(const char *path, int vocab, batches *b, char *err, size_t errlen) {
    st_file *f;
    if (st_open(path, &f, err, errlen)) return -1;
    const st_tensor *t = st_find(f, "tokens");
    int64_t *ids = NULL;
    int rc = -1;
    if (!t || t->ndim != 3 || t->shape[2] < 2) {
        snprintf(err, errlen, "%s: needs an integer tensor \"tokens\" of shape [S, B, T + 1]", path);
        goto done;
    }
    ids = malloc((size_t)t->numel * sizeof *ids);
    if (!ids || st_read_i64(t, ids, (size_t)t->numel)) {
        snprintf(err, errlen, "%s: cannot read \"tokens\" as integers", path);
        goto done;
    }
    b->count = (int)t->shape[0];
    b->rows = (int)t->shape[1];
    b->block = (int)t->shape[2] - 1;
    size_t cells = (size_t)b->count * b->rows * b->block;
    b->x = malloc(cells * sizeof *b->x);
    b->y = malloc(cells * sizeof *b->y);
    if (!b->x || !b->y) {
        snprintf(err, errlen, "out of host memory");
        goto done;
    }
    for (int64_t s = 0; s < b->count * (int64_t)b->rows; s++) {
        const int64_t *seq = ids + s * (b->block + 1);
        for (int i = 0; i < b->block; i++) {
            if (seq[i] < 0 || seq[i] >= vocab || seq[i + 1] < 0 || seq[i + 1] >= vocab) {
                snprintf(err, errlen, "%s: token outside [0, %d)", path, vocab);
                goto done;
            }
            b->x[s * b->block + i] = (int32_t)seq[i];
            b->y[s * b->block + i] = (int32_t)seq[i + 1];
        }
    }
    rc = 0;
done:
    free(ids);
    st_close(f);
    return rc;
}

/* "<prefix><name>" of each of the n weights p (grads: their gradients) into w. */
static int dump_params(st_writer *w, const char *prefix, const model_param *p, int n, int grads) {
    for (int i = 0; i < n; i++) {
        char name[160];
        snprintf(name, sizeof name, "%s%s", prefix, p[i].spec.name);
        if (dev_add_tensor(w, name, grads ? kiln_grad(p[i].t) : p[i].t)) return -1;
    }
    return 0;
}

/* Logits, loss and gradients of batch 0 at the current weights (with an adapter: its own
 * gradients alone), into w (a quantized model: the logits and loss alone). */
static int dump_gradients(gpt_model *m, const lora_adapter *a, trainer *t, const batches *b, st_writer *w) {
    kiln_ctx *ctx = m->ctx;
    int64_t shape[2] = {b->rows, b->block};
    size_t bytes = (size_t)b->rows * b->block * sizeof(int32_t);
    kiln_tensor *ids = kiln_tensor_temp(ctx, KILN_I32, 2, shape);
    kiln_tensor *targets = kiln_tensor_temp(ctx, KILN_I32, 2, shape);
    if (!ids || !targets || kiln_upload(ids, b->x, bytes) || kiln_upload(targets, b->y, bytes))
        return -1;
    kiln_tensor *logits;
    kiln_tensor *loss = gpt_loss(m, ids, targets, 0.0f, &logits);
    if (!loss || (!m->quant && kiln_backward(loss, 1.0f))) return -1;
    int64_t one = 1;
    kiln_tensor *loss1 = kiln_reshape(loss, 1, &one);
    if (!loss1 || dev_add_tensor(w, "logits", logits) || dev_add_tensor(w, "loss", loss1)) return -1;
    if (m->quant) { /* no gradients through quantized matrices */
        kiln_step_reset(ctx);
        return 0;
    }
    if (dump_params(w, "grad.", a ? a->params : m->params, a ? a->n_params : m->n_params, 1)) return -1;
    kiln_step_reset(ctx);
    return kiln_zero_grad(t->params, t->model.n_params) ? -1 : 0;
}

typedef struct parity_options {
    const char *ckpt, *tokens, *out, *backend;
    const char *lora, *lora_targets;
    int device, steps, lora_rank;
    float lora_alpha;
    train_hparams hp;
} parity_options;

/* Returns 0, 1 after --help, or -1 (printed). */
static int parse_options(int argc, char **argv, parity_options *o) {
    *o = (parity_options){.backend = "cpu", .device = -1, .steps = 10, .lora_alpha = 8.0f,
                          .hp = {.grad_accum = 1, .lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.99f,
                                 .weight_decay = 0.1f, .clip = 1.0f, .seed = 1}};
    train_hparams *hp = &o->hp;
    cli_opt opts[] = {
        {.name = "--ckpt", .kind = CLI_STRING, .target = &o->ckpt, .meta = "FILE",
         .help = "weights (GPT-2 layout safetensors)"},
        {.name = "--tokens", .kind = CLI_STRING, .target = &o->tokens, .meta = "FILE",
         .help = "safetensors with \"tokens\" [S, B, T + 1]"},
        {.name = "--out", .kind = CLI_STRING, .target = &o->out, .meta = "FILE",
         .help = "where the results go (safetensors)"},
        {.name = "--steps", .kind = CLI_INT, .target = &o->steps, .meta = "N",
         .help = "AdamW steps after the gradient dump", .min = 0, .max = 100000},
        {.name = "--lr", .kind = CLI_FLOAT, .target = &hp->lr, .meta = "X",
         .help = "constant learning rate", .min = 0, .max = 10},
        {.name = "--weight-decay", .kind = CLI_FLOAT, .target = &hp->weight_decay, .meta = "X",
         .help = "AdamW weight decay of 2-D weights", .min = 0, .max = 10},
        {.name = "--beta1", .kind = CLI_FLOAT, .target = &hp->beta1, .meta = "X",
         .help = "AdamW beta1", .min = 0, .max = 0.999999},
        {.name = "--beta2", .kind = CLI_FLOAT, .target = &hp->beta2, .meta = "X",
         .help = "AdamW beta2", .min = 0, .max = 0.999999},
        {.name = "--clip", .kind = CLI_FLOAT, .target = &hp->clip, .meta = "X",
         .help = "gradient clipping norm (0: off)", .min = 0, .max = 1e9},
        {.name = "--lora-rank", .kind = CLI_INT, .target = &o->lora_rank, .meta = "R",
         .help = "train a fresh LoRA adapter of rank R on the frozen base", .min = 1, .max = 65536},
        {.name = "--lora-alpha", .kind = CLI_FLOAT, .target = &o->lora_alpha, .meta = "A",
         .help = "its lora_alpha (scale A / R)", .min = 0, .max = 1e6},
        {.name = "--lora-targets", .kind = CLI_STRING, .target = &o->lora_targets, .meta = "LIST",
         .help = "its modules, PEFT's suffixes (default: every linear of the blocks)"},
        {.name = "--lora", .kind = CLI_STRING, .target = &o->lora, .meta = "DIR",
         .help = "train the adapter in this PEFT folder instead"},
        host_backend_option(&o->backend),
        host_device_option(&o->device),
    };
    int n = (int)(sizeof opts / sizeof opts[0]);
    int rc = cli_parse("dev parity", "Dumps logits, loss, gradients and AdamW losses for tests/gpt_parity.py.",
                       argc, argv, 3, opts, n);
    if (rc) return rc < 0 ? -1 : 1;
    if (!o->ckpt || !o->tokens || !o->out) return -host_error("kiln dev parity needs --ckpt, --tokens and --out");
    if (o->lora_rank && o->lora) return -host_error("kiln dev parity: --lora-rank and --lora exclude each other");
    if (o->lora_targets && !o->lora_rank) return -host_error("kiln dev parity: --lora-targets needs --lora-rank");
    return 0;
}

/* The adapter: fresh for --lora-rank (PEFT's init from the run's seed), read for --lora;
 * attached to m, whose base is frozen. *a stays NULL without either. Returns 0 or -1. */
static int lora_setup(gpt_model *m, const parity_options *o, lora_adapter **a, char *err, size_t errlen) {
    *a = NULL;
    if (o->lora_rank) {
        lora_options lo = {.rank = o->lora_rank, .alpha = o->lora_alpha};
        if (lora_targets_parse(&m->cfg, o->lora_targets, &lo.targets, err, errlen) ||
            !(*a = lora_new(m, &lo, o->hp.seed, err, errlen)))
            return -1;
    } else if (!o->lora) {
        return 0;
    } else if (lora_load(m, NULL, o->lora, 1.0f, a, err, errlen)) {
        return -1;
    }
    if (lora_attach(m, *a, err, errlen)) return -1;
    lora_freeze_base(m);
    return 0;
}

/* The model (and its adapter), its batches, and a trainer over them at a constant learning rate. */
static int start(kiln_ctx *ctx, parity_options *o, gpt_model **m, lora_adapter **a, batches *b, trainer *t) {
    char err[1024];
    if (host_load_gpt_model(ctx, o->ckpt, m, err, sizeof err) ||
        load_batches(o->tokens, (*m)->cfg.vocab_size, b, err, sizeof err) || lora_setup(*m, o, a, err, sizeof err))
        return host_error("%s", err);
    if (b->block > (*m)->cfg.n_positions)
        return host_error("%s: T = %d exceeds n_positions = %d", o->tokens, b->block, (*m)->cfg.n_positions);
    o->hp.batch = b->rows;
    o->hp.block = b->block;
    o->hp.steps = o->steps;
    o->hp.min_lr = o->hp.lr;
    if ((*m)->quant) /* no gradient flows through quantized matrices: the logits alone */
        return o->steps ? host_error("%s: quantized matrices cannot be trained: give --steps 0", o->ckpt) : 0;
    int failed = *a ? trainer_init_lora(t, *m, *a, NULL, &o->hp, err, sizeof err)
                    : trainer_init(t, *m, NULL, &o->hp, err, sizeof err);
    return failed ? host_error("%s", err) : 0;
}

/* The AdamW steps (step s on batch s mod S), their losses (and the adapter after them) added
 * to w, and w saved. */
static int train_and_save(trainer *t, const lora_adapter *a, const batches *b, const parity_options *o,
                          st_writer *w, float *losses) {
    char err[1024];
    size_t cells = (size_t)b->rows * b->block;
    for (int s = 0; s < o->steps; s++) {
        double loss, norm;
        int k = s % b->count;
        if (trainer_accumulate(t, b->x + k * cells, b->y + k * cells, b->rows, 1.0f, &loss, err, sizeof err) ||
            trainer_update(t, o->hp.lr, &norm, err, sizeof err))
            return host_error("%s", err);
        losses[s] = (float)loss;
    }
    int64_t shape = o->steps;
    if (o->steps > 0) st_writer_add(w, "losses", "F32", 1, &shape, losses, (size_t)o->steps * sizeof *losses);
    if (a && dump_params(w, "final.", a->params, a->n_params, 0)) return host_engine_error("dev parity");
    return st_writer_save(w, o->out, err, sizeof err) ? host_error("%s", err) : 0;
}

int gpt_parity_command(int argc, char **argv) {
    parity_options o;
    int parsed = parse_options(argc, argv, &o);
    if (parsed) return parsed < 0 ? 1 : 0;
    batches b = {0};
    gpt_model *m = NULL;
    lora_adapter *a = NULL;
    trainer t = {0};
    st_writer *w = st_writer_new();
    float *losses = calloc((size_t)o.steps + 1, sizeof *losses);
    int rc = 1;
    kiln_ctx *ctx = host_open_device(o.backend, o.device);
    if (!ctx)
        rc = 77; /* the backend is not available here: CTest's "skipped" */
    else if (!w || !losses)
        host_error("out of host memory");
    else if (start(ctx, &o, &m, &a, &b, &t) == 0) {
        host_say_device("dev parity", ctx);
        if ((a && dump_params(w, "init.", a->params, a->n_params, 0)) || dump_gradients(m, a, &t, &b, w))
            host_engine_error("dev parity");
        else
            rc = train_and_save(&t, a, &b, &o, w, losses);
    }
    st_writer_free(w);
    free(losses);
    free(b.x);
    free(b.y);
    trainer_free(&t);
    lora_free(a); /* detaches it from m: before m goes */
    gpt_free(m);
    kiln_close(ctx);
    return rc;
}
