/* `kiln train --model bert`, the BERT kind's phases of the train command (cli/train.c,
 * cli/kind_commands.h): trains BERT's masked language model (model/bert/bert.h) on a text
 * file.
 *
 * The text is tokenized with --tokenizer (which must have [CLS], [SEP] and [MASK]) or as
 * bytes with the six specials; the last 10% of the tokens are held out, as the GPT's. Each
 * micro-batch holds --batch sequences of --block positions: [CLS], --block - 2 consecutive
 * tokens drawn for (seed, draw), [SEP], masked as BERT does (model/bert/bert_data.h), so
 * --resume continues exactly. Evaluations give the held-out MLM loss and accuracy (the
 * masking drawn from a fixed seed); the checkpoint is in Hugging Face BertForMaskedLM's
 * layout, with config.json beside it. Post-LN by default, as BERT; every --norm/--residual
 * option applies. */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/cli.h"
#include "cli/bert/bert_commands.h"
#include "cli/train_loop.h"
#include "cli/train_monitor.h"
#include "cli/train_options.h"
#include "cli/train_parallel.h"
#include "model/bert/bert_checkpoint.h"
#include "model/bert/bert_data.h"
#include "model/checkpoint_tokenizer.h"
#include "model/metrics.h"
#include "model/precision.h"

typedef struct bert_run {
    train_options *o;
    tokenizer *tok;
    bert_vocab vocab;
    bert_model *m;
    data_set *ds;
    bert_batch batch;
    run_paths paths;
    char config_json[4096];
    int temperature_given; /* --attn-temperature on a resumed run overrides the checkpoint's */
    trainer *t;
    double accuracy; /* the last evaluation's MLM accuracy */
    train_monitor mon;
} bert_run;

static kiln_tensor *draw_loss(trainer *t, uint64_t draw, char *err, size_t errlen) {
    bert_run *r = t->model.data;
    if (bert_train_batch(&r->vocab, r->ds, t->hp.seed, draw, t->hp.batch, t->hp.block, &r->batch, err, errlen))
        return NULL;
    kiln_tensor *l = bert_batch_loss(r->m, &r->batch, t->hp.dropout, NULL);
    if (!l) snprintf(err, errlen, "training step: %s", kiln_error_message());
    return l;
}

static kiln_status precision_hook(void *m, kiln_dtype d, int keep) { return bert_set_precision(m, d, keep); }
static kiln_status sigma_hook(void *m) { return bert_sigma_step(m); }
static kiln_status grad_norms_hook(void *m, double unscale, double *out) {
    return bert_layer_grad_norms(m, unscale, out);
}

/* The tokenizer: a resumed run's own, else --tokenizer, else bytes with the specials. */
static int load_tokenizer(bert_run *r) {
    char err[1024];
    if (r->o->resume) {
        char type[64];
        int typed = model_checkpoint_meta(r->paths.model, "model_type", type, sizeof type, err, sizeof err);
        if (typed < 0) return host_error("%s", err);
        if (!typed || strcmp(type, BERT_MODEL_TYPE))
            return host_error("%s: not a BERT checkpoint to resume (model_type \"%s\")", r->paths.model,
                              typed ? type : "");
        int found = checkpoint_tokenizer_load(r->paths.model, CKPT_TOKENIZER_KEY, &r->tok, err, sizeof err);
        if (found < 0) return host_error("%s", err);
        if (!found) return host_error("%s holds no tokenizer to resume with", r->paths.model);
    } else if (r->o->tokenizer) {
        if (tokenizer_load(r->o->tokenizer, &r->tok, err, sizeof err)) return host_error("%s", err);
    } else if (!(r->tok = tokenizer_bytes(1))) {
        return host_error("out of host memory");
    }
    if (bert_vocab_init(&r->vocab, r->tok, err, sizeof err))
        return host_error("%s: %s", r->o->tokenizer && !r->o->resume ? r->o->tokenizer : "tokenizer", err);
    return 0;
}

/* The text as tokens, the last 10% held out. */
static int load_data(bert_run *r, int T) {
    char err[1024];
    data_set *bytes = NULL;
    if (data_load_bytes(r->o->data, &bytes, err, sizeof err)) return host_error("%s", err);
    uint8_t *text = malloc((size_t)bytes->n_tokens);
    int32_t *ids = NULL;
    int64_t n = 0;
    int rc = 0;
    if (!text) {
        rc = host_error("out of host memory");
    } else {
        for (int64_t i = 0; i < bytes->n_tokens; i++) text[i] = (uint8_t)bytes->tokens[i];
        if (tokenizer_encode(r->tok, text, (size_t)bytes->n_tokens, &ids, &n, err, sizeof err) ||
            data_from_tokens(ids, n, tokenizer_vocab_size(r->tok), &r->ds, err, sizeof err))
            rc = host_error("%s: %s", r->o->data, err);
    }
    if (rc == 0 && data_check_block(r->ds, DATA_TRAIN, T - 2, err, sizeof err))
        rc = host_error("%s: %s (each sequence holds --block - 2 = %d tokens)", r->o->data, err, T - 2);
    if (rc == 0 && r->ds->n_tokens == r->ds->n_train)
        rc = host_error("%s: %lld tokens leave none to hold out", r->o->data, (long long)r->ds->n_tokens);
    free(text);
    free(ids);
    data_free(bytes);
    return rc;
}

/* A fresh model from the options, or the run to resume. */
static int build_model(bert_run *r, kiln_ctx *ctx) {
    char err[1024];
    int V = tokenizer_vocab_size(r->tok);
    if (r->o->resume) {
        if (bert_checkpoint_load(ctx, r->paths.model, &r->m, err, sizeof err)) return host_error("%s", err);
        if (r->m->cfg.vocab_size != V)
            return host_error("%s: its vocabulary (%d) is not its tokenizer's (%d)", r->paths.model,
                              r->m->cfg.vocab_size, V);
        r->o->hp.block = r->m->cfg.max_len;
        if (r->temperature_given) bert_set_attn_temperature(r->m, r->o->st.attn_temperature);
        return 0;
    }
    bert_config cfg = {.n_layer = r->o->layers, .n_head = r->o->heads, .n_embd = r->o->dim, .max_len = r->o->hp.block,
                       .vocab_size = V, .ln_eps = 1e-12f, .block = r->o->st.block};
    if (bert_config_check(&cfg, err, sizeof err)) return host_error("%s", err);
    if (train_admin_closed_only(r->o, &cfg.block, "bert")) return 1;
    if (!(r->m = bert_new(ctx, &cfg)) || bert_init(r->m, r->o->hp.seed) ||
        (cfg.block.residual == BLOCK_RESIDUAL_ADMIN && bert_admin_closed_form(r->m)))
        return host_engine_error("cannot create the model");
    return 0;
}

/* The optimizer state, then the weights with the tokenizer, then config.json: each atomic,
 * and a resume refuses a pair whose steps differ. */
static int save_checkpoint(const trainer *t, bert_run *r) {
    char err[1024], step[32];
    snprintf(step, sizeof step, "%" PRId64, t->step);
    size_t n;
    char *tok = tokenizer_serialize(r->tok, &n);
    if (!tok) return host_error("out of host memory");
    model_meta meta[] = {{.key = "step", .value = step},
                         {.key = "written_by", .value = "kiln train"},
                         {.key = "training_precision", .value = precision_name(t->hp.precision)},
                         {.key = CKPT_TOKENIZER_KEY, .value = tok}};
    int rc = train_save_optimizer(t, &r->paths, err, sizeof err) ||
             bert_checkpoint_save(r->m, r->paths.model, meta, 4, err, sizeof err) ||
             bert_write_hf_config(r->m, r->config_json, err, sizeof err);
    free(tok);
    return rc ? host_error("%s", err) : 0;
}

static int evaluate(bert_run *r, int64_t max_windows, double *loss, double *accuracy) {
    char err[1024];
    const int32_t *val;
    int64_t n;
    data_split(r->ds, DATA_VAL, &val, &n);
    if (bert_eval(r->m, &r->vocab, val, n, r->o->hp.batch, max_windows, loss, accuracy, err, sizeof err))
        return host_error("%s", err);
    return 0;
}

/* The shared loop's hooks (cli/train_loop.h). */
static void before_step(void *self, int64_t step, int evaluates) {
    bert_run *r = self;
    train_monitor_before_step(&r->mon, r->t, evaluates);
    /* --attn-temperature-at: the last change at or before this step */
    for (int i = r->o->st.n_changes - 1; i >= 0; i--) {
        if (r->o->st.change_step[i] <= step) {
            bert_set_attn_temperature(r->m, r->o->st.change_temp[i]);
            break;
        }
    }
}

static int evaluate_hook(void *self, int full, metrics_row *row) {
    bert_run *r = self;
    if (evaluate(r, full ? 0 : r->o->eval_windows, &row->val_loss, &r->accuracy)) return 1;
    row->mlm_accuracy = &r->accuracy;
    /* the attention entropy on the first held-out windows (the training batch's buffers:
     * the next step fills them again) */
    const int32_t *val;
    int64_t n;
    data_split(r->ds, DATA_VAL, &val, &n);
    int64_t windows = bert_eval_windows(n, r->o->hp.block);
    int rows = (int)(windows < r->o->hp.batch ? windows : r->o->hp.batch);
    if (bert_eval_batch(&r->vocab, val, n, r->o->hp.block, 0, rows, &r->batch)) return host_error("out of host memory");
    if (bert_attention_entropy(r->m, &r->batch, r->mon.entropy, &r->mon.lowest))
        return host_engine_error("attention entropy");
    train_monitor_row(&r->mon, r->t, row);
    return 0;
}

static int save_hook(void *self) {
    bert_run *r = self;
    return save_checkpoint(r->t, r);
}

static void *create(train_options *o, cli_opt *own, int *n_own) {
    bert_run *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->o = o;
    train_hparams *hp = &o->hp;
    o->model = "bert";
    o->st.norm = "post"; /* BERT's */
    hp->block = 64;
    const cli_opt bert_only[] = {
        {.name = "--block", .kind = CLI_INT, .target = &hp->block, .meta = "T",
         .help = "positions per sequence: [CLS], T - 2 tokens, [SEP]", .min = 3, .max = 1 << 20},
        {.name = "--batch", .kind = CLI_INT, .target = &hp->batch, .meta = "N", .help = "sequences per micro-batch",
         .min = 1, .max = 1 << 20},
        {.name = "--eval-windows", .kind = CLI_INT, .target = &o->eval_windows, .meta = "N",
         .help = "held-out windows per evaluation before the last step (0: all)", .min = 0, .max = 1 << 30},
        {.name = "--tokenizer", .kind = CLI_STRING, .target = &o->tokenizer, .meta = "FILE",
         .help = "a tokenizer with [CLS], [SEP] and [MASK] (default: bytes with the specials)"},
    };
    _Static_assert(sizeof bert_only / sizeof bert_only[0] <= TRAIN_KIND_OPTIONS, "TRAIN_KIND_OPTIONS is too small");
    memcpy(own, bert_only, sizeof bert_only);
    *n_own = (int)(sizeof bert_only / sizeof bert_only[0]);
    return r;
}

static int check(void *self, const cli_opt *opts, int n) {
    bert_run *r = self;
    if (r->o->init) return host_error("--init applies to --model gpt only");
    r->temperature_given = cli_find(opts, n, "--attn-temperature")->seen;
    return 0;
}

static int prepare(void *self, const cli_opt *opts, int n, const run_paths *paths) {
    bert_run *r = self;
    (void)opts;
    (void)n;
    r->paths = *paths;
    snprintf(r->config_json, sizeof r->config_json, "%s/config.json", r->o->out);
    if (r->o->resume && !train_file_exists(r->paths.model))
        return host_error("nothing to resume in %s: it has no model.safetensors", r->o->out);
    return load_tokenizer(r);
}

static int start(void *self, kiln_ctx *ctx, trainer *t) {
    bert_run *r = self;
    char err[1024];
    if (build_model(r, ctx) || load_data(r, r->o->hp.block)) return 1;
    train_model model = {.self = r->m, .ctx = ctx, .params = r->m->params, .n_params = r->m->n_params,
                         .d_model = r->m->cfg.n_embd, .data_tokens = (uint64_t)r->ds->n_train,
                         .set_precision = precision_hook, .sigma_step = sigma_hook,
                         .layer_grad_norms = grad_norms_hook, .micro_loss = draw_loss, .data = r};
    if (trainer_init_model(t, &model, &r->o->hp, err, sizeof err)) return host_error("%s", err);
    r->t = t;
    return train_monitor_init(&r->mon, r->m->cfg.n_layer);
}

/* --attention: a micro-batch's self-attention over --batch sequences of --block tokens. */
static int attention(void *self, kiln_ctx *ctx) {
    bert_run *r = self;
    return train_attention_stack(r->o, ctx, &r->m->block, r->m->cfg.n_layer, r->m->cfg.n_head) < 0;
}

static void describe(void *self, const trainer *t) {
    bert_run *r = self;
    const train_hparams *hp = &r->o->hp;
    fprintf(stderr, "kiln train: bert, %d layers, %d heads, dim %d, vocab %d, %d positions: %.2fM weights; "
        "%lld training and %lld held-out tokens; steps %" PRId64 " to %d; %s\n",
        r->m->cfg.n_layer, r->m->cfg.n_head, r->m->cfg.n_embd, r->m->cfg.vocab_size, r->m->cfg.max_len,
        (double)bert_param_count(r->m) / 1e6, (long long)r->ds->n_train,
        (long long)(r->ds->n_tokens - r->ds->n_train), t->step + 1, hp->steps,
        hp->precision == KILN_F16 ? "fp16 (mixed precision, dynamic loss scaling)" : "fp32");
}

static int last_evaluation(void *self, double *val) {
    bert_run *r = self;
    return evaluate(r, 0, val, &r->accuracy);
}

static void report(void *self, const trainer *t, double val) {
    bert_run *r = self;
    (void)t;
    printf("val loss %.4f\nval accuracy %.4f\n", val, r->accuracy);
}

static void destroy(void *self) {
    bert_run *r = self;
    train_monitor_free(&r->mon, r->t);
    bert_batch_free(&r->batch);
    data_free(r->ds);
    bert_free(r->m);
    bert_vocab_free(&r->vocab);
    tokenizer_free(r->tok);
    free(r);
}

const train_kind bert_train_kind = {
    .command = "train --model bert",
    .summary =
        "Trains BERT's masked language model on a text file: sequences [CLS] ... [SEP], 15% of\n"
        "the tokens chosen (80% [MASK], 10% a random token, 10% unchanged), the loss on the chosen\n"
        "ones. The last 10% of the tokens are held out; at the end it prints `val loss X` and\n"
        "`val accuracy Y` (MLM). DIR receives model.safetensors (Hugging Face BertForMaskedLM's\n"
        "layout, with the tokenizer), config.json, optimizer.safetensors and metrics.jsonl.",
    .create = create,
    .check = check,
    .prepare = prepare,
    .start = start,
    .attention = attention,
    .describe = describe,
    .loop = {.before_step = before_step, .evaluate = evaluate_hook, .save = save_hook},
    .last_evaluation = last_evaluation,
    .report = report,
    .destroy = destroy,
};
