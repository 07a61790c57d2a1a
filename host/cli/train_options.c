/* The options every model trains with, and what a run directory holds (train_options.h). */
#define _POSIX_C_SOURCE 200809L
#include "cli/train_options.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/device_check.h"
#include "cli/kind_commands.h"
#include "formats/text_number.h"
#include "model/lora.h"
#include "model/model_checkpoint.h"
#include "run/device.h"
#include "run/precision_option.h"

/* One choice-valued option: its index among names, or a one-line error listing them. */
int train_parse_choice(const char *option, const char *text, const char *const *names, int count, int *out) {
    *out = block_choice(names, count, text);
    if (*out >= 0) return 0;
    char list[128] = "";
    for (int i = 0; i < count; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", names[i]);
    return host_error("%s %s is not one of %s", option, text, list);
}

/* The block options and the temperature schedule, checked together before any work. */
static int validate_stability(stability_options *s) {
    block_options *b = &s->block;
    *b = block_options_default();
    int v;
    if (train_parse_choice("--norm", s->norm, block_norm_names, BLOCK_NORM_COUNT, &v)) return 1;
    b->norm = (block_norm)v;
    if (train_parse_choice("--residual", s->residual, block_residual_names, BLOCK_RESIDUAL_COUNT, &v)) return 1;
    b->residual = (block_residual)v;
    if (train_parse_choice("--layer-type", s->layer_type, block_layer_names, BLOCK_LAYER_COUNT, &v)) return 1;
    b->layer = (block_layer)v;
    if (train_parse_choice("--gau-attn", s->gau_attn, block_gau_attn_names, BLOCK_GAU_ATTN_COUNT, &v)) return 1;
    b->gau_attn = (block_gau_attn)v;
    static const char *const admin_inits[] = {"profile", "closed"};
    if (train_parse_choice("--admin-init", s->admin_init, admin_inits, 2, &v)) return 1;
    b->sigma_reparam = s->sigma_reparam;
    b->residual_attention = s->residual_attention;
    b->attn_temperature = s->attn_temperature;
    b->gau_s = s->gau_s;
    char err[256];
    if (block_options_check(b, err, sizeof err)) return host_error("%s", err);
    for (int i = 0; i < s->temperature_at.count; i++) {
        const char *item = s->temperature_at.items[i], *colon = strchr(item, ':');
        char step[32];
        uint64_t at;
        double t;
        if (!colon || colon - item >= (ptrdiff_t)sizeof step)
            return host_error("--attn-temperature-at %s must be STEP:T", item);
        snprintf(step, sizeof step, "%.*s", (int)(colon - item), item);
        if (text_to_uint64(step, &at) || at < 1 || text_to_double(colon + 1, &t) || !(t > 0) || !isfinite(t))
            return host_error("--attn-temperature-at %s must be STEP:T with STEP >= 1 and T > 0", item);
        if (i && (int64_t)at <= s->change_step[i - 1])
            return host_error("--attn-temperature-at steps must increase (%s after step %lld)", item,
                              (long long)s->change_step[i - 1]);
        s->change_step[i] = (int64_t)at;
        s->change_temp[i] = (float)t;
        s->n_changes++;
    }
    return 0;
}

/* The LoRA options: a GPT's, with --init (or a LoRA run in --out to resume, whose adapter
 * keeps its own options: any given must agree). */
static int validate_lora(train_options *o, const cli_opt *opts, int n) {
    static const char *const names[] = {"--lora-rank", "--lora-alpha", "--lora-targets", "--lora-dropout"};
    const char *given = NULL;
    for (int i = 0; i < 4; i++)
        if (cli_find(opts, n, names[i])->seen) {
            o->lora_seen |= 1u << i;
            if (!given) given = names[i];
        }
    char adapter[4200];
    snprintf(adapter, sizeof adapter, "%s/%s", o->out, LORA_WEIGHTS_FILE);
    int resumes_lora = o->resume && train_file_exists(adapter);
    o->lora = resumes_lora; /* --init then names its base, else the adapter does */
    if (!given) return 0;
    const kind_commands *k = kind_commands_find(o->model);
    if (k && k != kind_commands_default())
        return host_error("%s applies to GPT models (--model gpt or llama), not --model %s", given, o->model);
    if (resumes_lora) return 0; /* the adapter's own must agree (cli/gpt/gpt_train_lora.c) */
    if (o->resume) return host_error("%s: --out %s holds no LoRA adapter to resume", given, o->out);
    if (!o->init) return host_error("%s needs --init BASE: LoRA adapts an existing model", given);
    if (!cli_find(opts, n, "--lora-rank")->seen) return host_error("%s needs --lora-rank R", given);
    if (o->lora_rank <= 0) return host_error("--lora-rank %d: the rank must be positive", o->lora_rank);
    o->lora = 1;
    return 0;
}

/* A run in `out` (its weights, an adapter or an optimizer state) is not replaced by a new
 * one unless --force says so: a slip of --out, or a forgotten --resume, would lose it. 1
 * (printed) when `out` holds one; nothing has been touched yet. */
static int refuse_existing_run(const char *out) {
    static const char *const files[] = {"model.safetensors", LORA_WEIGHTS_FILE, "optimizer.safetensors"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[4400];
        if ((size_t)snprintf(path, sizeof path, "%s/%s", out, files[i]) < sizeof path && train_file_exists(path))
            return host_error("--out %s holds a run (%s): --resume continues it, --force replaces it", out, files[i]);
    }
    return 0;
}

/* Semantic checks that the option table's ranges cannot express. */
int train_validate_options(train_options *o, const cli_opt *opts, int n) {
    if (validate_stability(&o->st)) return 1;
    int choice;
    if (train_parse_choice("--lr-schedule", o->schedule, train_schedule_names, TRAIN_SCHEDULE_COUNT, &choice)) return 1;
    o->hp.schedule = (train_schedule)choice;
    if (train_parse_choice("--optimizer", o->optimizer, train_optimizer_names, TRAIN_OPTIMIZER_COUNT, &choice)) return 1;
    o->hp.optimizer = (train_optimizer)choice;
    if (o->hp.schedule == TRAIN_SCHEDULE_NOAM) {
        static const char *const unused[] = {"--lr", "--min-lr"};
        for (int i = 0; i < 2; i++)
            if (cli_find(opts, n, unused[i])->seen)
                return host_error("%s does not apply to --lr-schedule noam (its rate is --noam-factor "
                                  "d_model^-1/2 min(s^-1/2, s warmup^-3/2))", unused[i]);
    } else if (cli_find(opts, n, "--noam-factor")->seen) {
        return host_error("--noam-factor applies to --lr-schedule noam only");
    }
    static const struct { const char *option, *needs; } scoped[] = {
        {.option = "--admin-init", .needs = "--residual admin"},
        {.option = "--gau-s", .needs = "--layer-type gau"},
        {.option = "--gau-attn", .needs = "--layer-type gau"},
    };
    int applies[] = {o->st.block.residual == BLOCK_RESIDUAL_ADMIN, o->st.block.layer == BLOCK_LAYER_GAU,
                     o->st.block.layer == BLOCK_LAYER_GAU};
    for (int i = 0; i < 3; i++)
        if (!applies[i] && cli_find(opts, n, scoped[i].option)->seen)
            return host_error("%s applies to %s only", scoped[i].option, scoped[i].needs);
    train_hparams *hp = &o->hp;
    if (host_parse_precision(o->precision, &hp->precision)) return 1;
    if (host_parse_attention(o->attention, &o->attention_mode)) return 1;
    static const char *const ls_options[] = {"--loss-scale-init", "--loss-scale-growth",
                                             "--loss-scale-backoff", "--loss-scale-interval"};
    for (int i = 0; i < 4; i++)
        if (hp->precision != KILN_F16 && cli_find(opts, n, ls_options[i])->seen)
            return host_error("%s applies to --precision fp16 only", ls_options[i]);
    hp->loss_scale = (kiln_loss_scale_opts){.init = o->ls_init, .growth = o->ls_growth, .backoff = o->ls_backoff,
                                            .interval = o->ls_interval};
    if (!o->data) return host_error("kiln train needs --data FILE");
    if (!o->out) return host_error("kiln train needs --out DIR");
    if (o->force && o->resume) return host_error("--force and --resume exclude each other (--force starts afresh)");
    if (!o->resume && !o->force && refuse_existing_run(o->out)) return 1;
    if (validate_lora(o, opts, n)) return 1;
    if (o->init && o->resume && !o->lora)
        return host_error("--init and --resume exclude each other (--resume continues the run in --out)");
    const cli_opt *head_dim = cli_find(opts, n, "--head-dim"); /* a GPT's heads may be of any width */
    if (o->dim % o->heads != 0 && !(head_dim && head_dim->seen))
        return host_error("--heads %d does not divide --dim %d", o->heads, o->dim);
    if (!(hp->lr > 0.0f)) return host_error("--lr must be above 0");
    if (hp->schedule != TRAIN_SCHEDULE_NOAM && hp->min_lr > hp->lr)
        return host_error("--min-lr %g is above --lr %g", (double)hp->min_lr, (double)hp->lr);
    /* legal (a schedule may be cut short on purpose) but more often a slip: said, not refused */
    if (cli_find(opts, n, "--warmup")->seen && hp->warmup >= hp->steps)
        fprintf(stderr, "kiln train: warning: --warmup %d is not below --steps %d: the run ends before its rate "
                "peaks\n", (int)hp->warmup, (int)hp->steps);
    return 0;
}

int train_attention(const train_options *o, kiln_ctx *ctx, const block_options *b, uint64_t elements,
                    const char *context) {
    attention_scores s = {.elements = elements, .dtype = o->hp.precision, .training = 1, .dropout = o->hp.dropout > 0};
    return host_attention_choose("train", o->attention_mode, b, ctx, &s, context);
}

int train_attention_stack(const train_options *o, kiln_ctx *ctx, block_config *b, int n_layer, int n_head) {
    uint64_t layer = (uint64_t)o->hp.batch * (uint64_t)n_head * (uint64_t)o->hp.block * (uint64_t)o->hp.block;
    char context[32];
    snprintf(context, sizeof context, "--block %d", o->hp.block);
    int fused = train_attention(o, ctx, &b->o, layer * (uint64_t)n_layer, context);
    if (fused >= 0) b->attention_fused = fused;
    return fused;
}

/* mkdir -p */
int train_make_dir(const char *path) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || !*p) {
            char c = *p;
            *p = 0;
            if (mkdir(buf, 0777) && errno != EEXIST)
                return host_error("cannot create directory %s: %s", buf, strerror(errno));
            *p = c;
            if (!c) break;
        }
    }
    struct stat st;
    if (stat(path, &st) || !S_ISDIR(st.st_mode)) return host_error("--out %s is not a directory", path);
    return 0;
}

int train_file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

/* Restores the optimizer state of a resumed run, after checking that the model file and
 * the optimizer file were written by the same checkpoint. */
train_options train_default_options(void) {
    kiln_loss_scale_opts ls = kiln_loss_scale_defaults();
    train_options o = {.model = "gpt", .backend = "auto", .precision = "fp32", .attention = "auto", .device = -1,
                       .schedule = "cosine",
                       .optimizer = "adamw",
                       .ls_init = (float)ls.init, .ls_growth = (float)ls.growth,
                       .ls_backoff = (float)ls.backoff, .ls_interval = (int)ls.interval,
                       .layers = 4, .heads = 4, .dim = 128,
                       .st = {.norm = "pre", .residual = "plain", .layer_type = "transformer",
                              .gau_attn = "relu2", .admin_init = "profile", .gau_s = 128,
                              .attn_temperature = 1.0f, .entropy_alert = 0.5f},
                       .eval_every = 250, .eval_windows = 200, .log_every = 10, .lora_alpha = 8.0f,
                       .hp = train_nanogpt_hparams()};
    return o;
}

/* The run: data, model size, steps, the optimizer's numbers, resuming. */
static int run_options(train_options *o, cli_opt *opts) {
    const cli_opt own[] = {
        {.name = "--data", .kind = CLI_STRING, .target = &o->data, .meta = "FILE",
         .help = "training data: a text file (gpt, bert) or source<TAB>target pairs, one per line (seq2seq)"},
        {.name = "--model", .kind = CLI_STRING, .target = &o->model, .meta = "KIND",
         .help = "gpt (a decoder-only language model), llama (the same with the Llama family's defaults: "
                 "rmsnorm, rope, swiglu, no biases), seq2seq (the encoder-decoder Transformer), "
                 "bert (a masked language model)"},
        {.name = "--out", .kind = CLI_STRING, .target = &o->out, .meta = "DIR",
         .help = "directory for the checkpoint and metrics (one holding a run: --resume or --force)"},
        {.name = "--layers", .kind = CLI_INT, .target = &o->layers, .meta = "N",
         .help = "transformer blocks", .min = 1, .max = 1024},
        {.name = "--heads", .kind = CLI_INT, .target = &o->heads, .meta = "N",
         .help = "attention heads (must divide --dim)", .min = 1, .max = 1024},
        {.name = "--dim", .kind = CLI_INT, .target = &o->dim, .meta = "N",
         .help = "embedding width", .min = 1, .max = 65536},
        {.name = "--steps", .kind = CLI_INT, .target = &o->hp.steps, .meta = "N",
         .help = "optimizer steps in all", .min = 1, .max = 1 << 30},
        {.name = "--lr", .kind = CLI_FLOAT, .target = &o->hp.lr, .meta = "X",
         .help = "peak learning rate", .min = 0, .max = 10},
        {.name = "--min-lr", .kind = CLI_FLOAT, .target = &o->hp.min_lr, .meta = "X",
         .help = "learning rate at the end of the cosine decay", .min = 0, .max = 10},
        {.name = "--warmup", .kind = CLI_INT, .target = &o->hp.warmup, .meta = "N",
         .help = "steps of linear warmup (noam: its warmup steps)", .min = 0, .max = 1 << 30},
        {.name = "--beta1", .kind = CLI_FLOAT, .target = &o->hp.beta1, .meta = "X",
         .help = "Adam's beta1", .min = 0, .max = 0.999999},
        {.name = "--beta2", .kind = CLI_FLOAT, .target = &o->hp.beta2, .meta = "X",
         .help = "Adam's beta2", .min = 0, .max = 0.999999},
        {.name = "--weight-decay", .kind = CLI_FLOAT, .target = &o->hp.weight_decay, .meta = "X",
         .help = "weight decay of 2-D weights", .min = 0, .max = 10},
        {.name = "--clip", .kind = CLI_FLOAT, .target = &o->hp.clip, .meta = "X",
         .help = "clip gradients to this global norm (0: off)", .min = 0, .max = 1e9},
        {.name = "--dropout", .kind = CLI_FLOAT, .target = &o->hp.dropout, .meta = "P",
         .help = "dropout probability", .min = 0, .max = 0.99},
        {.name = "--grad-accum", .kind = CLI_INT, .target = &o->hp.grad_accum, .meta = "N",
         .help = "micro-batches per optimizer step", .min = 1, .max = 1 << 20},
        {.name = "--eval-every", .kind = CLI_INT, .target = &o->eval_every, .meta = "N",
         .help = "evaluate and checkpoint every N steps (0: at the end only)", .min = 0, .max = 1 << 30},
        {.name = "--log-every", .kind = CLI_INT, .target = &o->log_every, .meta = "N",
         .help = "a plain progress line every N steps (off a terminal)", .min = 1, .max = 1 << 30},
        {.name = "--seed", .kind = CLI_U64, .target = &o->hp.seed, .meta = "N",
         .help = "seed of the init, the batches and dropout"},
        {.name = "--resume", .kind = CLI_FLAG, .target = &o->resume,
         .help = "continue the run in --out exactly where it stopped (its model, tokenizer and batch come from "
                 "the run; a --batch or --batch-tokens given must be the run's)"},
        {.name = "--force", .kind = CLI_FLAG, .target = &o->force,
         .help = "start afresh in an --out that holds a run, replacing its checkpoint and metrics (without "
                 "--force or --resume such an --out is refused)"},
    };
    _Static_assert(sizeof own / sizeof own[0] <= 22, "TRAIN_COMMON_OPTIONS's share is too small");
    memcpy(opts, own, sizeof own);
    return (int)(sizeof own / sizeof own[0]);
}

/* The recipe: schedules, optimizers, the loss, and the stability toolkit. */
static int recipe_options(train_options *o, cli_opt *opts) {
    const cli_opt own[] = {
        /* schedules, optimizers, the loss */
        {.name = "--lr-schedule", .kind = CLI_STRING, .target = &o->schedule, .meta = "NAME",
         .help = "cosine (to --min-lr), linear (to --min-lr), constant, inverse-sqrt (lr sqrt(warmup/step)) or "
                 "noam (--noam-factor d^-1/2 min(step^-1/2, step warmup^-3/2)); all but noam warm up linearly"},
        {.name = "--noam-factor", .kind = CLI_FLOAT, .target = &o->hp.noam_factor, .meta = "X",
         .help = "the noam schedule's factor (default: the paper's 1, lowered where the rate would peak above "
                 "1e-3: min(1, 1e-3 sqrt(d warmup)))", .min = 1e-6, .max = 1e6},
        {.name = "--optimizer", .kind = CLI_STRING, .target = &o->optimizer, .meta = "NAME",
         .help = "adamw (decoupled weight decay), adam (weight decay as L2) or radam (rectified Adam)"},
        {.name = "--label-smoothing", .kind = CLI_FLOAT, .target = &o->hp.label_smoothing, .meta = "E",
         .help = "smooth the training targets by E (the validation loss stays plain cross-entropy)",
         .min = 0, .max = 0.999},
        /* the stability toolkit (model/block.h, docs/stability.md) */
        {.name = "--norm", .kind = CLI_STRING, .target = &o->st.norm, .meta = "WHERE",
         .help = "LayerNorm placement: pre (GPT-2), post (the original Transformer) or none"},
        {.name = "--residual", .kind = CLI_STRING, .target = &o->st.residual, .meta = "KIND",
         .help = "residual scheme: plain, rezero, admin or deepnorm (admin and deepnorm need --norm post)"},
        {.name = "--admin-init", .kind = CLI_STRING, .target = &o->st.admin_init, .meta = "HOW",
         .help = "Admin's omegas: profile (a forward pass over the first batch) or closed (the closed form)"},
        {.name = "--sigma-reparam", .kind = CLI_FLAG, .target = &o->st.sigma_reparam,
         .help = "use every linear weight as (gamma / sigma(W)) W (spectral reparametrization)"},
        {.name = "--residual-attention", .kind = CLI_FLAG, .target = &o->st.residual_attention,
         .help = "RealFormer: each layer adds the previous layer's raw attention scores to its own"},
        {.name = "--attn-temperature", .kind = CLI_FLOAT, .target = &o->st.attn_temperature, .meta = "T",
         .help = "divides the attention scores (below 1 sharpens attention)", .min = 1e-3, .max = 1e3},
        {.name = "--attn-temperature-at", .kind = CLI_LIST, .target = &o->st.temperature_at, .meta = "STEP:T",
         .help = "from optimizer step STEP on, use temperature T"},
        {.name = "--layer-type", .kind = CLI_STRING, .target = &o->st.layer_type, .meta = "KIND",
         .help = "transformer (attention + MLP) or gau (FLASH's gated attention unit)"},
        {.name = "--gau-s", .kind = CLI_INT, .target = &o->st.gau_s, .meta = "N",
         .help = "GAU: width of the shared query/key projection", .min = 1, .max = 65536},
        {.name = "--gau-attn", .kind = CLI_STRING, .target = &o->st.gau_attn, .meta = "KIND",
         .help = "GAU's attention: relu2 (relu(s)^2 / n, as FLASH) or softmax"},
        {.name = "--entropy-alert", .kind = CLI_FLOAT, .target = &o->st.entropy_alert, .meta = "H",
         .help = "show the lowest head's attention entropy (nats) on the progress line below this", .min = 0, .max = 100},
    };
    _Static_assert(sizeof own / sizeof own[0] <= 16, "TRAIN_COMMON_OPTIONS's share is too small");
    memcpy(opts, own, sizeof own);
    return (int)(sizeof own / sizeof own[0]);
}

/* Precision, the attention's path, the device, and data parallelism. */
static int device_options(train_options *o, cli_opt *opts) {
    const cli_opt own[] = {
        host_precision_option(&o->precision),
        host_attention_option(&o->attention),
        {.name = "--loss-scale-init", .kind = CLI_FLOAT, .target = &o->ls_init, .meta = "S",
         .help = "fp16: the first loss scale", .min = 0x1p-126, .max = 0x1p126},
        {.name = "--loss-scale-growth", .kind = CLI_FLOAT, .target = &o->ls_growth, .meta = "X",
         .help = "fp16: the scale's factor after --loss-scale-interval clean steps", .min = 1, .max = 65536},
        {.name = "--loss-scale-backoff", .kind = CLI_FLOAT, .target = &o->ls_backoff, .meta = "X",
         .help = "fp16: the scale's factor after an overflow (the step is skipped)", .min = 1e-6, .max = 1},
        {.name = "--loss-scale-interval", .kind = CLI_INT, .target = &o->ls_interval, .meta = "N",
         .help = "fp16: clean steps in a row before the scale grows", .min = 1, .max = 1 << 30},
        host_backend_option(&o->backend),
        host_device_option(&o->device),
        host_trust_device_option(&o->trust_device),
        /* data parallelism under mpirun (cli/train_parallel.h) */
        {.name = "--devices", .kind = CLI_STRING, .target = &o->devices, .meta = "LIST",
         .help = "under mpirun: each rank's backend and device, as BACKEND[:N],... (rank 0 first; ranks may "
                 "use different backends); default: --backend with device = the rank's number on its machine"},
        {.name = "--bucket-mb", .kind = CLI_FLOAT, .target = &o->bucket_mb, .meta = "X",
         .help = "under mpirun: gradients are summed over the ranks in buckets of about X MiB, each started "
                 "as soon as the backward has finished it (0: a quarter of the gradients, within 1 to 25 MiB)",
         .min = 0, .max = 1 << 20},
    };
    _Static_assert(sizeof own / sizeof own[0] <= 11, "TRAIN_COMMON_OPTIONS's share is too small");
    memcpy(opts, own, sizeof own);
    return (int)(sizeof own / sizeof own[0]);
}

/* LoRA fine-tuning of --init's model (model/lora.h). */
static int lora_cli_options(train_options *o, cli_opt *opts) {
    const cli_opt own[] = {
        {.name = "--lora-rank", .kind = CLI_INT, .target = &o->lora_rank, .meta = "R",
         .help = "train LoRA adapters of rank R on --init's frozen model instead of its weights (GPT-2 and the "
                 "Llama family; --out receives PEFT's adapter_config.json and adapter_model.safetensors)",
         .min = -(1 << 30), .max = 1 << 30},
        {.name = "--lora-alpha", .kind = CLI_FLOAT, .target = &o->lora_alpha, .meta = "A",
         .help = "LoRA's alpha: the adapters' output is scaled by A / R (PEFT's default)", .min = 1e-6,
         .max = 1e6},
        {.name = "--lora-targets", .kind = CLI_STRING, .target = &o->lora_targets, .meta = "LIST",
         .help = "the linears to adapt, by PEFT's suffix matching (c_proj: both of GPT-2's; q_proj,v_proj: the "
                 "Llama family's); default: every linear of the blocks"},
        {.name = "--lora-dropout", .kind = CLI_FLOAT, .target = &o->lora_dropout, .meta = "P",
         .help = "dropout on the adapters' input while training", .min = 0, .max = 0.99},
    };
    _Static_assert(sizeof own / sizeof own[0] <= 4, "TRAIN_COMMON_OPTIONS's share is too small");
    memcpy(opts, own, sizeof own);
    return (int)(sizeof own / sizeof own[0]);
}

int train_common_options(train_options *o, cli_opt *opts) {
    int n = run_options(o, opts);
    n += recipe_options(o, opts + n);
    n += device_options(o, opts + n);
    n += lora_cli_options(o, opts + n);
    return n;
}

int train_admin_closed_only(const train_options *o, const block_options *block, const char *kind) {
    if (block->residual == BLOCK_RESIDUAL_ADMIN && strcmp(o->st.admin_init, "closed"))
        return host_error("--residual admin for %s needs --admin-init closed", kind);
    return 0;
}

const char *train_model_option(int argc, char **argv) {
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--model")) return i + 1 < argc ? argv[i + 1] : NULL;
        if (!strncmp(argv[i], "--model=", 8)) return argv[i] + 8;
    }
    return NULL;
}
