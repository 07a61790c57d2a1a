/* `kiln train` (--model gpt, the default kind): the GPT's phases of the train command
 * (cli/train.c, cli/kind_commands.h): trains a GPT on a text file, its bytes or --tokenizer's
 * tokens.
 *
 * The last 10% of the file is held out; every --eval-every steps and at the last step the
 * model is evaluated on it and a checkpoint is written (DIR/model.safetensors and
 * DIR/optimizer.safetensors, each replaced atomically). --resume continues a run exactly:
 * batches are drawn for (seed, step) and the dropout RNG stream is saved, so 10 steps plus a
 * resumed 10 equal 20 uninterrupted steps bit for bit.
 *
 * --precision fp16 trains in mixed precision (model/trainer.h): f16 weight copies, activations
 * and gradients, f32 master weights and Adam moments, and dynamic loss scaling whose state
 * is saved with the optimizer state. Checkpoints hold the f32 master weights either way. */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/cli.h"
#include "run/device.h"
#include "run/gpt_load.h"
#include "cli/gpt/gpt_arch_options.h"
#include "cli/gpt/gpt_train_lora.h"
#include "cli/kind_commands.h"
#include "run/gpt_tokenizer.h"
#include "cli/train_loop.h"
#include "cli/train_monitor.h"
#include "cli/train_options.h"
#include "cli/train_parallel.h"
#include "model/checkpoint_tokenizer.h"
#include "model/block.h"
#include "model/gpt/eval_loss.h"
#include "model/gpt/gpt_checkpoint.h"
#include "model/gpt/gpt_hf.h"
#include "model/metrics.h"
#include "model/precision.h"
#include "model/trainer.h"

/* The architecture options given on the command line must agree with a loaded model. */
static int check_arch(const gpt_config *c, const cli_opt *opts, int n, const train_options *o,
                      const gpt_config *want, const char *path) {
    if (gpt_arch_check_loaded(opts, n, want, c, path)) return 1;
    struct { const char *option; int value, model; const char *key; } arch[] = {
        {.option = "--layers", .value = o->layers, .model = c->n_layer, .key = "n_layer"},
        {.option = "--heads", .value = o->heads, .model = c->n_head, .key = "n_head"},
        {.option = "--dim", .value = o->dim, .model = c->n_embd, .key = "n_embd"},
    };
    for (size_t i = 0; i < sizeof arch / sizeof arch[0]; i++)
        if (cli_find(opts, n, arch[i].option)->seen && arch[i].value != arch[i].model)
            return host_error("%s %d differs from %s = %d in %s", arch[i].option, arch[i].value,
                              arch[i].key, arch[i].model, path);
    /* the block options shape the weights: a loaded model keeps its own */
    const block_options *mine = &o->st.block, *its = &c->block;
    struct { const char *option; int differs; const char *value; } block[] = {
        {.option = "--norm", .differs = mine->norm != its->norm, .value = block_norm_names[its->norm]},
        {.option = "--residual", .differs = mine->residual != its->residual,
         .value = block_residual_names[its->residual]},
        {.option = "--layer-type", .differs = mine->layer != its->layer, .value = block_layer_names[its->layer]},
        {.option = "--gau-attn", .differs = mine->gau_attn != its->gau_attn,
         .value = block_gau_attn_names[its->gau_attn]},
        {.option = "--gau-s", .differs = mine->gau_s != its->gau_s, .value = "another width"},
        {.option = "--sigma-reparam", .differs = mine->sigma_reparam != its->sigma_reparam,
         .value = its->sigma_reparam ? "on" : "off"},
        {.option = "--residual-attention", .differs = mine->residual_attention != its->residual_attention,
         .value = its->residual_attention ? "on" : "off"},
    };
    for (size_t i = 0; i < sizeof block / sizeof block[0]; i++)
        if (cli_find(opts, n, block[i].option)->seen && block[i].differs)
            return host_error("%s differs from the model in %s (%s)", block[i].option, path, block[i].value);
    /* a Hugging Face model may pad its embedding beyond its tokenizer (Qwen2's 151,936 rows) */
    if (c->vocab_size != o->vocab && !(gpt_hf_is_folder(path) && c->vocab_size > o->vocab))
        return host_error("%s has vocab_size %d but the tokenizer %d tokens", path, c->vocab_size, o->vocab);
    if (o->hp.block > c->n_positions)
        return host_error("--block %d exceeds n_positions = %d in %s", o->hp.block, c->n_positions, path);
    return 0;
}

/* Admin's omegas for a fresh model: the closed form, or a profiling pass over the first
 * training batch (the batch step 1 trains on). */
static int admin_init(gpt_model *m, const train_options *o, const data_set *ds) {
    char err[1024];
    if (!strcmp(o->st.admin_init, "closed")) return gpt_admin_closed_form(m) ? host_engine_error("admin init") : 0;
    const train_hparams *hp = &o->hp;
    size_t cells = (size_t)hp->batch * (size_t)hp->block;
    int32_t *x = malloc(cells * sizeof *x), *y = malloc(cells * sizeof *y);
    int n_omegas = m->cfg.n_layer * block_sublayers(&m->block.o);
    float *omegas = malloc((size_t)n_omegas * sizeof *omegas);
    int rc = 0;
    if (!x || !y || !omegas)
        rc = host_error("out of host memory");
    else if (data_sample_batch(ds, DATA_TRAIN, hp->batch, hp->block, hp->seed, 0, x, y, err, sizeof err))
        rc = host_error("%s", err);
    else {
        int64_t shape[2] = {hp->batch, hp->block};
        kiln_tensor *ids = kiln_tensor_temp(m->ctx, KILN_I32, 2, shape);
        if (!ids || kiln_upload(ids, x, cells * sizeof *x) || gpt_admin_profile(m, ids, omegas))
            rc = host_engine_error("admin profiling");
        else if (train_parallel_leads())
            fprintf(stderr, "kiln train: Admin's omegas from the profiling pass: %.4g, %.4g, ... %.4g (%d sublayers)\n",
                    (double)omegas[0], (double)omegas[n_omegas > 1 ? 1 : 0], (double)omegas[n_omegas - 1], n_omegas);
    }
    free(omegas);
    free(x);
    free(y);
    return rc;
}

/* A GPT run: the options, the tokenizer and data, the model, and the evaluations'
 * monitoring. */
typedef struct gpt_run {
    train_options *o;
    const cli_opt *opts;
    int n;
    const run_paths *paths;
    gpt_arch_options arch; /* the Llama family's flags, or --model llama's defaults */
    gpt_config want;       /* the architecture they make (sizes of the data's come later) */
    tokenizer *tok;
    data_set *ds;
    gpt_model *m;
    trainer *t;
    train_monitor mon;            /* the evaluations' per-layer monitoring */
    enum { PROBE_OFF, PROBE_ON, PROBE_UNDECIDED } probe_entropy; /* the evaluations' entropy (attention()) */
    lora_run lora;                /* o->lora: the adapters trained on a frozen base */
} gpt_run;

/* A loaded model's sizes and options become the run's (any given must agree). */
static int adopt_loaded(gpt_model *m, train_options *o, const cli_opt *opts, int n, const gpt_config *want,
                        const char *from) {
    if (!cli_find(opts, n, "--block")->seen) o->hp.block = m->cfg.n_positions;
    if (check_arch(&m->cfg, opts, n, o, want, from)) return 1;
    o->layers = m->cfg.n_layer;
    o->heads = m->cfg.n_head;
    o->dim = m->cfg.n_embd;
    /* the temperature is a knob, not a weight: the command line's wins */
    if (cli_find(opts, n, "--attn-temperature")->seen) gpt_set_attn_temperature(m, o->st.attn_temperature);
    return 0;
}

/* The model to train: fresh from --seed, from --init, or the run in --out for --resume. */
static gpt_model *build_model(kiln_ctx *ctx, train_options *o, const cli_opt *opts, int n,
                              const run_paths *paths, const data_set *ds, const gpt_config *want) {
    char err[1024];
    const char *from = o->resume ? paths->model : o->init;
    if (!from) {
        gpt_config cfg = *want;
        cfg.n_layer = o->layers;
        cfg.n_head = o->heads;
        cfg.n_embd = o->dim;
        cfg.n_positions = o->hp.block;
        cfg.vocab_size = o->vocab;
        if (gpt_config_check(&cfg, err, sizeof err)) {
            host_error("%s", err);
            return NULL;
        }
        gpt_model *m = gpt_new(ctx, &cfg);
        if (!m || gpt_init(m, o->hp.seed)) {
            host_engine_error("cannot create the model");
            gpt_free(m);
            return NULL;
        }
        if (cfg.block.residual == BLOCK_RESIDUAL_ADMIN && admin_init(m, o, ds)) {
            gpt_free(m);
            return NULL;
        }
        return m;
    }
    if (o->resume && !train_file_exists(from)) {
        host_error("nothing to resume in %s: it has no model.safetensors", o->out);
        return NULL;
    }
    gpt_model *m;
    /* --init: a kiln checkpoint, a GGUF file or a Hugging Face folder (run/gpt_load.h) */
    if (host_load_gpt_model(ctx, from, &m, err, sizeof err)) {
        host_error("%s", err);
        return NULL;
    }
    if (m->quant) {
        host_error("%s: its matrices are quantized and cannot be trained; --init takes f32, f16 or bf16 weights "
                   "(or LoRA adapters on the quantized model: --lora-rank)", from);
        gpt_free(m);
        return NULL;
    }
    if (adopt_loaded(m, o, opts, n, want, from)) {
        gpt_free(m);
        return NULL;
    }
    return m;
}

/* Writes both checkpoint files, optimizer state first: each is atomic, and resume_state
 * refuses a pair whose steps differ. */
static int save_checkpoint(const trainer *t, const run_paths *paths, const tokenizer *tok) {
    char err[1024], step[32];
    snprintf(step, sizeof step, "%" PRId64, t->step);
    char *tok_text = gpt_tokenizer_checkpoint_text(tok);
    /* the weights are the f32 masters whatever the precision; it is recorded for people */
    gpt_meta meta[] = {{.key = "step", .value = step},
                       {.key = "written_by", .value = "kiln train"},
                       {.key = "training_precision", .value = precision_name(t->hp.precision)},
                       {.key = CKPT_TOKENIZER_KEY, .value = tok_text}};
    int rc = train_save_optimizer(t, paths, err, sizeof err) ||
             gpt_checkpoint_save(t->m, paths->model, meta, tok_text ? 4 : 3, err, sizeof err);
    free(tok_text);
    return rc ? host_error("%s", err) : 0;
}

/* The temperature for optimizer step `step` (1-based): the last --attn-temperature-at
 * change at or before it, else the model's own. */
static void apply_temperature(gpt_model *m, const stability_options *s, int64_t step) {
    for (int i = s->n_changes - 1; i >= 0; i--) {
        if (s->change_step[i] <= step) {
            gpt_set_attn_temperature(m, s->change_temp[i]);
            return;
        }
    }
}

/* The monitoring of an evaluation: per-layer attention entropy on the first validation
 * batch. */
static int measure_entropy(gpt_model *m, const data_set *ds, const train_hparams *hp, double *per_layer,
                           double *lowest, int32_t *x, int32_t *y) {
    char err[1024];
    int64_t windows = data_windows(ds, DATA_VAL, hp->block);
    int rows = (int)(windows < hp->batch ? windows : hp->batch);
    for (int r = 0; r < rows; r++)
        if (data_window(ds, DATA_VAL, hp->block, r, x + (size_t)r * hp->block, y + (size_t)r * hp->block, err,
                        sizeof err))
            return host_error("%s", err);
    int64_t shape[2] = {rows, hp->block};
    kiln_tensor *ids = kiln_tensor_temp(m->ctx, KILN_I32, 2, shape);
    if (!ids || kiln_upload(ids, x, (size_t)rows * (size_t)hp->block * sizeof *x) ||
        gpt_attention_entropy(m, ids, per_layer, lowest))
        return host_engine_error("attention entropy");
    return 0;
}

/* The evaluations' attention-entropy probe needs the probabilities, so its pass runs unfused
 * (the block takes the unfused path where a pass asks for entropy): always with the unfused
 * path, never with --attention fused (check refuses --entropy-alert there), and with auto's
 * fused steps as decide_entropy_probe finds at the first evaluation. */
static void choose_entropy_probe(gpt_run *r, int fused) {
    r->probe_entropy = !fused ? PROBE_ON : r->o->attention_mode == HOST_ATTENTION_AUTO ? PROBE_UNDECIDED : PROBE_OFF;
    if (r->probe_entropy == PROBE_OFF && train_parallel_leads())
        host_say("train", "attention fused: the evaluations measure no attention entropy (it needs the "
                          "probabilities: --attention auto or unfused)");
}

/* auto with fused steps, at the first evaluation: the probe's scores (one validation batch,
 * no backward) are made when they take no more than the steps' arena at its peak and fit the
 * device beside the run, so that monitoring never more than doubles what a step needs nor
 * makes memory grow with the square of the context. Said in one line either way. */
static void decide_entropy_probe(gpt_run *r) {
    kiln_ctx *ctx = r->m->ctx;
    const train_hparams *hp = &r->o->hp;
    int64_t windows = data_windows(r->ds, DATA_VAL, hp->block);
    uint64_t rows = (uint64_t)(windows < hp->batch ? windows : hp->batch);
    attention_scores probe = {.elements = rows * (uint64_t)r->m->cfg.n_head * (uint64_t)hp->block *
                                          (uint64_t)hp->block * (uint64_t)r->m->cfg.n_layer,
                              .dtype = hp->precision};
    uint64_t scores = host_attention_scores_bytes(&probe), steps = kiln_memory_arena_peak(ctx), usable = 0;
    int fits = host_attention_fits(ctx, &probe, kiln_memory_persistent(ctx), NULL, &usable);
    r->probe_entropy = fits > 0 && scores <= steps ? PROBE_ON : PROBE_OFF;
    if (!train_parallel_leads()) return;
    char a[32], b[32], c[32];
    if (r->probe_entropy == PROBE_ON)
        host_say("train", "the evaluations' attention-entropy probe runs unfused (it needs the probabilities)");
    else
        host_say("train", "the evaluations measure no attention entropy: its unfused scores would take %s, more than "
                 "the steps' %s or the device's %s usable (--attention unfused measures it)",
                 host_bytes_text(scores, a, sizeof a), host_bytes_text(steps, b, sizeof b),
                 host_bytes_text(usable, c, sizeof c));
}

static void before_step(void *self, int64_t step, int evaluates) {
    gpt_run *r = self;
    apply_temperature(r->t->m, &r->o->st, step);
    train_monitor_before_step(&r->mon, r->t, evaluates);
}

static int evaluate(void *self, int full, metrics_row *row) {
    gpt_run *r = self;
    trainer *t = r->t;
    const train_hparams *hp = &t->hp;
    char err[1024];
    /* each rank evaluates its share of the windows */
    double sum;
    int64_t windows;
    if (eval_loss_share(t->m, t->ds, DATA_VAL, hp->block, hp->batch, full ? 0 : r->o->eval_windows, world_rank(),
                        world_ranks(), &sum, &windows, err, sizeof err) ||
        world_sum(&sum, 1, err, sizeof err))
        return host_error("%s", err);
    row->val_loss = sum / (double)windows;
    if (r->probe_entropy == PROBE_UNDECIDED) decide_entropy_probe(r);
    r->mon.entropy_off = r->probe_entropy != PROBE_ON;
    if (!r->mon.entropy_off && measure_entropy(t->m, t->ds, hp, r->mon.entropy, &r->mon.lowest, t->x, t->y))
        return 1;
    train_monitor_row(&r->mon, t, row);
    return 0;
}

static int save(void *self) {
    gpt_run *r = self;
    if (r->o->lora) return lora_run_save(&r->lora, r->t, r->o, r->paths);
    return save_checkpoint(r->t, r->paths, r->tok);
}

static void *create(train_options *o, cli_opt *own, int *n_own) {
    gpt_run *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->o = o;
    train_hparams *hp = &o->hp;
    const cli_opt gpt_only[] = {
        {.name = "--tokenizer", .kind = CLI_STRING, .target = &o->tokenizer, .meta = "FILE",
         .help = "tokens from this tokenizer (kiln tokenizer train/import; default: bytes); kept in the checkpoint"},
        {.name = "--block", .kind = CLI_INT, .target = &hp->block, .meta = "N",
         .help = "context length in tokens (n_positions)", .min = 1, .max = 1 << 20},
        {.name = "--batch", .kind = CLI_INT, .target = &hp->batch, .meta = "N",
         .help = "sequences per micro-batch", .min = 1, .max = 1 << 20},
        {.name = "--eval-windows", .kind = CLI_INT, .target = &o->eval_windows, .meta = "N",
         .help = "windows per evaluation before the last step (0: all)", .min = 0, .max = 1 << 30},
        {.name = "--init", .kind = CLI_STRING, .target = &o->init, .meta = "CKPT",
         .help = "start from these weights: a kiln checkpoint, a GGUF file or a Hugging Face folder (the model's "
                 "options come from it; any given must agree)"},
    };
    _Static_assert(sizeof gpt_only / sizeof gpt_only[0] + GPT_ARCH_OPTIONS <= TRAIN_KIND_OPTIONS,
                   "TRAIN_KIND_OPTIONS is too small");
    memcpy(own, gpt_only, sizeof gpt_only);
    *n_own = (int)(sizeof gpt_only / sizeof gpt_only[0]);
    r->arch = gpt_arch_defaults(o->model);
    *n_own += gpt_arch_cli_options(&r->arch, own + *n_own);
    return r;
}

/* The architecture flags, with the toolkit's block options parsed before them. */
static int check(void *self, const cli_opt *opts, int n) {
    gpt_run *r = self;
    r->want = (gpt_config){.n_layer = r->o->layers, .n_head = r->o->heads, .n_embd = r->o->dim,
                           .n_positions = r->o->hp.block};
    if (r->o->attention_mode == HOST_ATTENTION_FUSED && cli_find(opts, n, "--entropy-alert")->seen)
        return host_error("--entropy-alert needs the attention probabilities, which --attention fused never forms; "
                          "use --attention auto or unfused");
    return gpt_arch_apply(&r->arch, &r->o->st.block, &r->want);
}

/* The tokenizer of `from` (a checkpoint, GGUF file or HF folder: run/gpt_load.h) unless
 * --tokenizer names another, or that one (else bytes) for a fresh model. */
static int host_load_tokenizer_or(const char *from, const char *tok_path, tokenizer **tok) {
    return from ? host_load_tokenizer(from, tok_path, -1, tok) : gpt_tokenizer_choose(tok_path, NULL, -1, tok);
}

/* The tokenizer (the run's own on resume, --init's unless --tokenizer names another) and
 * the data in its tokens. */
static int prepare(void *self, const cli_opt *opts, int n, const run_paths *paths) {
    gpt_run *r = self;
    r->opts = opts;
    r->n = n;
    r->paths = paths;
    const char *from = r->o->resume ? paths->model : r->o->init;
    if (r->o->lora) { /* the base's tokenizer */
        if (lora_run_base(&r->lora, r->o, paths)) return 1;
        from = r->lora.base;
    }
    if (host_load_tokenizer_or(from && train_file_exists(from) ? from : NULL, r->o->tokenizer, &r->tok) ||
        gpt_tokenizer_load_data(r->tok, r->o->data, "the training data", &r->ds))
        return 1;
    r->o->vocab = tokenizer_vocab_size(r->tok);
    return 0;
}

static int start(void *self, kiln_ctx *ctx, trainer *t) {
    gpt_run *r = self;
    char err[1024];
    const train_hparams *hp = &r->o->hp;
    if (r->o->lora) {
        if (!(r->m = lora_run_load(&r->lora, ctx, r->o)) ||
            adopt_loaded(r->m, r->o, r->opts, r->n, &r->want, r->lora.base) ||
            lora_run_adapter(&r->lora, r->m, r->tok, r->o, r->paths))
            return 1;
    } else if (!(r->m = build_model(ctx, r->o, r->opts, r->n, r->paths, r->ds, &r->want))) {
        return 1;
    }
    if (data_check_block(r->ds, DATA_TRAIN, hp->block, err, sizeof err) ||
        data_check_block(r->ds, DATA_VAL, hp->block, err, sizeof err))
        return host_error("%s: %s", r->o->data, err);
    if (r->o->lora ? trainer_init_lora(t, r->m, r->lora.a, r->ds, hp, err, sizeof err)
                   : trainer_init(t, r->m, r->ds, hp, err, sizeof err))
        return host_error("%s", err);
    r->t = t;
    return train_monitor_init(&r->mon, r->m->cfg.n_layer);
}

/* --attention: the steps' path (train_attention), then the evaluations' entropy probe. */
static int attention(void *self, kiln_ctx *ctx) {
    gpt_run *r = self;
    int fused = train_attention_stack(r->o, ctx, &r->m->block, r->m->cfg.n_layer, r->m->cfg.n_head);
    if (fused < 0) return 1;
    choose_entropy_probe(r, fused);
    return 0;
}

static void opened(void *self, const trainer *t) {
    gpt_run *r = self;
    if (train_parallel_leads() && r->o->resume && t->scaler && cli_find(r->opts, r->n, "--loss-scale-init")->seen)
        fprintf(stderr, "kiln train: --loss-scale-init is not used: the resumed run continues at its saved scale %g\n",
                (double)kiln_loss_scale_value(t->scaler));
}

/* The Llama family's choices of a model, for the run's first line ("" for GPT-2's). */
static const char *llama_choices(const gpt_model *m, char *buf, size_t size) {
    const block_config *b = &m->block;
    if (!m->cfg.n_kv_head && !m->cfg.head_dim && !m->cfg.n_ffn && !m->cfg.untied && !b->o.rope &&
        b->o.norm_type == BLOCK_NORM_TYPE_LAYERNORM && b->o.mlp == BLOCK_MLP_GELU && b->o.bias == BLOCK_BIAS_ALL &&
        !b->o.qk_norm)
        return "";
    snprintf(buf, size, " (%d kv heads of %d, %s, %s positions, %s %d, bias %s%s%s)", block_kv_heads(b),
             block_head_dim(b), block_norm_type_names[b->o.norm_type], b->o.rope ? "rope" : "learned",
             block_mlp_names[b->o.mlp], block_ffn(b), block_bias_names[b->o.bias], b->o.qk_norm ? ", qk-norm" : "",
             m->cfg.untied ? ", untied" : "");
    return buf;
}

static void describe(void *self, const trainer *t) {
    gpt_run *r = self;
    const train_options *o = r->o;
    const train_hparams *hp = &o->hp;
    char choices[160];
    fprintf(stderr, "kiln train: %d layers, %d heads, dim %d%s, block %d: %.2fM weights; %lld "
        "training and %lld validation tokens; steps %" PRId64 " to %d; %s\n", o->layers, o->heads,
        o->dim, llama_choices(r->m, choices, sizeof choices), hp->block, (double)gpt_param_count(r->m) / 1e6,
        (long long)r->ds->n_train, (long long)(r->ds->n_tokens - r->ds->n_train), t->step + 1, hp->steps,
        hp->precision == KILN_F16 ? "fp16 (mixed precision, dynamic loss scaling)" : "fp32");
    if (o->lora) lora_run_describe(&r->lora, r->m);
}

static int last_evaluation(void *self, double *val) {
    gpt_run *r = self;
    char err[1024];
    const train_hparams *hp = &r->o->hp;
    if (eval_loss(r->m, r->ds, DATA_VAL, hp->block, hp->batch, 0, val, err, sizeof err)) return host_error("%s", err);
    return 0;
}

static void report(void *self, const trainer *t, double val) {
    (void)self;
    if (t->scaler) {
        kiln_loss_scale_state ls = kiln_loss_scaler_state(t->scaler);
        fprintf(stderr, "kiln train: loss scale %g, %" PRId64 " overflowing steps skipped in all\n", ls.scale,
                ls.skipped_steps);
    }
    printf("val loss %.4f\n", val);
}

static void destroy(void *self) {
    gpt_run *r = self;
    train_monitor_free(&r->mon, r->t);
    lora_run_free(&r->lora);
    gpt_free(r->m);
    data_free(r->ds);
    tokenizer_free(r->tok);
    free(r);
}

const train_kind gpt_train_kind = {
    .command = "train",
    .summary =
        "Trains a model: a GPT (this help) on a text file, its bytes or --tokenizer's tokens, with GPT-2's\n"
        "architecture, or with --model llama the Llama family's (RMSNorm, rotary positions, SwiGLU, no biases;\n"
        "--norm-type to --ffn choose each of its options); --model seq2seq (an encoder-decoder on translation\n"
        "pairs) and --model bert (a masked language model) have their own options: add --help to see them.\n"
        "The last 10% of the tokens are held out for evaluation; at the end it prints `val loss X`. DIR\n"
        "receives model.safetensors (Hugging Face GPT-2 layout), optimizer.safetensors and metrics.jsonl.",
    .create = create,
    .check = check,
    .prepare = prepare,
    .start = start,
    .attention = attention,
    .opened = opened,
    .describe = describe,
    .loop = {.before_step = before_step, .evaluate = evaluate, .save = save},
    .last_evaluation = last_evaluation,
    .report = report,
    .destroy = destroy,
};
