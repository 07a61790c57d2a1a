/* `kiln train --model seq2seq`, the encoder-decoder kind's phases of the train command
 * (cli/train.c, cli/kind_commands.h): trains the encoder-decoder Transformer (model/seq2seq/seq2seq.h) on
 * source<TAB>target pairs.
 *
 * The defaults are the paper's (Vaswani et al. 2017): Post-LN, the Noam schedule (its factor
 * lowered where the rate would peak above 1e-3: train_noam_factor), Adam with beta2 0.98, dropout 0.1 and label smoothing 0.1; every --norm/--residual option applies.
 * Pairs are tokenized with --tokenizer (both sides), --src-tokenizer and --tgt-tokenizer
 * (two vocabularies, two embeddings), or bytes; the tokenizers go into the checkpoint's
 * metadata. Batches hold at most --batch-tokens padded tokens, pairs of similar lengths
 * together; each epoch visits every batch once in a shuffled order drawn from (seed,
 * epoch), so --resume continues exactly. --valid FILE holds pairs out for the validation
 * loss; without it the last 10% of the pairs are held out. */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/cli.h"
#include "cli/seq2seq/seq2seq_commands.h"
#include "cli/train_loop.h"
#include "cli/train_monitor.h"
#include "cli/train_options.h"
#include "cli/train_parallel.h"
#include "model/checkpoint_tokenizer.h"
#include "model/metrics.h"
#include "model/precision.h"
#include "model/seq2seq/seq2seq_checkpoint.h"
#include "model/seq2seq/seq2seq_data.h"

typedef struct s2s_run {
    train_options *o;
    const char *valid, *src_tok_path, *tgt_tok_path;
    tokenizer *src_tok, *tgt_tok; /* the same object when shared */
    seq2seq_model *m;
    seq2seq_data *train, *val;
    seq2seq_batch batch;
    double step_tokens; /* target tokens of the step's micro-batches, for throughput */
    run_paths paths;
    trainer *t;
    train_monitor mon; /* encoder layers then decoder layers */
} s2s_run;

static kiln_tensor *draw_loss(trainer *t, uint64_t draw, char *err, size_t errlen) {
    s2s_run *r = t->model.data;
    int64_t b = seq2seq_data_draw(r->train, t->hp.seed, draw);
    if (seq2seq_data_batch(r->train, b, &r->batch)) {
        snprintf(err, errlen, "out of host memory");
        return NULL;
    }
    for (int64_t k = r->train->starts[b]; k < r->train->starts[b + 1]; k++)
        r->step_tokens += r->train->tgt_len[r->train->order[k]];
    kiln_tensor *l = seq2seq_batch_loss(r->m, &r->batch, t->hp.dropout, t->hp.label_smoothing);
    if (!l) snprintf(err, errlen, "training step: %s", kiln_error_message());
    return l;
}

static kiln_status precision_hook(void *m, kiln_dtype d, int keep) { return seq2seq_set_precision(m, d, keep); }
static kiln_status sigma_hook(void *m) { return seq2seq_sigma_step(m); }
static kiln_status grad_norms_hook(void *m, double unscale, double *out) {
    return seq2seq_layer_grad_norms(m, unscale, out);
}

/* The tokenizers: a resumed run's own, else the options', else bytes with the specials. */
static int load_tokenizers(s2s_run *r) {
    char err[1024];
    if (r->o->resume) {
        int shared = checkpoint_tokenizer_load(r->paths.model, CKPT_TOKENIZER_KEY, &r->src_tok, err, sizeof err);
        if (shared < 0) return host_error("%s", err);
        if (shared) {
            r->tgt_tok = r->src_tok;
            return 0;
        }
        if (checkpoint_tokenizer_load(r->paths.model, CKPT_SRC_TOKENIZER_KEY, &r->src_tok, err, sizeof err) != 1 ||
            checkpoint_tokenizer_load(r->paths.model, CKPT_TGT_TOKENIZER_KEY, &r->tgt_tok, err, sizeof err) != 1)
            return host_error("%s", *err ? err : "the checkpoint to resume holds no tokenizer");
        return 0;
    }
    if (r->o->tokenizer && (r->src_tok_path || r->tgt_tok_path))
        return host_error("--tokenizer serves both sides: give it, or --src-tokenizer and --tgt-tokenizer");
    if (!r->src_tok_path != !r->tgt_tok_path) return host_error("--src-tokenizer and --tgt-tokenizer go together");
    if (r->src_tok_path) {
        if (tokenizer_load(r->src_tok_path, &r->src_tok, err, sizeof err) ||
            tokenizer_load(r->tgt_tok_path, &r->tgt_tok, err, sizeof err))
            return host_error("%s", err);
        return 0;
    }
    if (r->o->tokenizer) {
        if (tokenizer_load(r->o->tokenizer, &r->src_tok, err, sizeof err)) return host_error("%s", err);
    } else if (!(r->src_tok = tokenizer_bytes(1))) {
        return host_error("out of host memory");
    }
    r->tgt_tok = r->src_tok;
    return 0;
}

/* The training pairs and the held-out ones, tokenized and batched. */
static int load_data(s2s_run *r) {
    char err[1024];
    text_pairs *p = NULL, *v = NULL;
    if (pairs_load(r->o->data, &p, err, sizeof err) || (r->valid && pairs_load(r->valid, &v, err, sizeof err))) {
        pairs_free(p);
        return host_error("%s", err);
    }
    int64_t held = v ? 0 : p->count / 10, train_count = p->count - held;
    int rc = 0, built = 0;
    if (!v && held == 0)
        rc = host_error("%s: %lld pairs leave none to hold out (give --valid FILE)", r->o->data, (long long)p->count);
    else if ((built = seq2seq_data_build(p, 0, train_count, r->src_tok, r->tgt_tok, r->o->max_len,
                                         r->o->batch_tokens, &r->train, err, sizeof err)) == 0)
        built = seq2seq_data_build(v ? v : p, v ? 0 : train_count, v ? v->count : held, r->src_tok, r->tgt_tok,
                                   r->o->max_len, r->o->batch_tokens, &r->val, err, sizeof err);
    if (built) /* --max-len sets the positions */
        rc = host_error("%s: %s%s", v && r->train ? r->valid : r->o->data, err,
                        built == SEQ2SEQ_DATA_TOO_LONG ? " (--max-len)" : "");
    if (rc == 0 && (r->train->dropped || r->val->dropped))
        fprintf(stderr, "kiln train: %lld training and %lld held-out pairs are longer than --max-len %d and left out\n",
                (long long)r->train->dropped, (long long)r->val->dropped, r->o->max_len);
    if (rc == 0 && r->train->oversized)
        fprintf(stderr, "kiln train: %lld pairs exceed --batch-tokens %d alone; each is a batch of its own\n",
                (long long)r->train->oversized, r->o->batch_tokens);
    pairs_free(p);
    pairs_free(v);
    return rc;
}

/* A fresh model from the options, or the run to resume. */
static int build_model(s2s_run *r, kiln_ctx *ctx) {
    char err[1024];
    if (r->o->resume) {
        if (!train_file_exists(r->paths.model))
            return host_error("nothing to resume in %s: it has no model.safetensors", r->o->out);
        if (seq2seq_checkpoint_load(ctx, r->paths.model, &r->m, err, sizeof err)) return host_error("%s", err);
        r->o->max_len = r->m->cfg.max_len;
        return 0;
    }
    int shared = r->src_tok == r->tgt_tok;
    seq2seq_config cfg = {.enc_layers = r->o->enc_layers ? r->o->enc_layers : r->o->layers,
                          .dec_layers = r->o->dec_layers ? r->o->dec_layers : r->o->layers,
                          .n_head = r->o->heads, .n_embd = r->o->dim, .max_len = r->o->max_len,
                          .src_vocab = tokenizer_vocab_size(r->src_tok), .tgt_vocab = tokenizer_vocab_size(r->tgt_tok),
                          .shared_vocab = shared, .ln_eps = 1e-5f, .block = r->o->st.block};
    if (seq2seq_config_check(&cfg, err, sizeof err)) return host_error("%s", err);
    if (train_admin_closed_only(r->o, &cfg.block, "seq2seq")) return 1;
    if (!(r->m = seq2seq_new(ctx, &cfg)) || seq2seq_init(r->m, r->o->hp.seed) ||
        (cfg.block.residual == BLOCK_RESIDUAL_ADMIN && seq2seq_admin_closed_form(r->m)))
        return host_engine_error("cannot create the model");
    return 0;
}

/* The optimizer state, then the weights with the tokenizers: each atomic, and a resume
 * refuses a pair whose steps differ. */
static int save_checkpoint(const trainer *t, s2s_run *r) {
    char err[1024], step[32];
    snprintf(step, sizeof step, "%" PRId64, t->step);
    size_t n;
    char *src = tokenizer_serialize(r->src_tok, &n), *tgt = r->tgt_tok == r->src_tok ? NULL : tokenizer_serialize(r->tgt_tok, &n);
    if (!src || (r->tgt_tok != r->src_tok && !tgt)) {
        free(src);
        return host_error("out of host memory");
    }
    model_meta meta[] = {{.key = "step", .value = step},
                         {.key = "written_by", .value = "kiln train"},
                         {.key = "training_precision", .value = precision_name(t->hp.precision)},
                         {.key = tgt ? CKPT_SRC_TOKENIZER_KEY : CKPT_TOKENIZER_KEY, .value = src},
                         {.key = CKPT_TGT_TOKENIZER_KEY, .value = tgt}};
    int rc = train_save_optimizer(t, &r->paths, err, sizeof err) ||
             seq2seq_checkpoint_save(r->m, r->paths.model, meta, tgt ? 5 : 4, err, sizeof err);
    free(src);
    free(tgt);
    return rc ? host_error("%s", err) : 0;
}

/* The shared loop's hooks (cli/train_loop.h). */
static void before_step(void *self, int64_t step, int evaluates) {
    s2s_run *r = self;
    (void)step;
    r->step_tokens = 0;
    train_monitor_before_step(&r->mon, r->t, evaluates);
}

static double step_tokens(void *self) { return ((s2s_run *)self)->step_tokens; }

static int evaluate(void *self, int full, metrics_row *row) {
    s2s_run *r = self;
    char err[1024];
    (void)full; /* the held-out pairs are few: always all of them */
    if (seq2seq_data_loss(r->m, r->val, &row->val_loss, err, sizeof err)) return host_error("%s", err);
    /* the attention entropy on the first held-out batch (the training batch's buffers:
     * the next step fills them again) */
    if (seq2seq_data_batch(r->val, 0, &r->batch)) return host_error("out of host memory");
    if (seq2seq_attention_entropy(r->m, &r->batch, r->mon.entropy, &r->mon.lowest))
        return host_engine_error("attention entropy");
    train_monitor_row(&r->mon, r->t, row);
    return 0;
}

static int save(void *self) {
    s2s_run *r = self;
    return save_checkpoint(r->t, r);
}

/* The paper's training recipe where the user said nothing. */
static void paper_defaults(train_options *o) {
    o->model = "seq2seq";
    o->st.norm = "post";
    o->schedule = "noam";
    o->hp.warmup = 400;
    o->hp.beta2 = 0.98f;
    o->hp.weight_decay = 0.0f;
    o->hp.dropout = 0.1f;
    o->hp.label_smoothing = 0.1f;
    o->max_len = 128;
    o->batch_tokens = 4096;
}

static void *create(train_options *o, cli_opt *own, int *n_own) {
    s2s_run *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->o = o;
    paper_defaults(o);
    const cli_opt s2s_only[] = {
        {.name = "--valid", .kind = CLI_STRING, .target = &r->valid, .meta = "FILE",
         .help = "held-out pairs for the validation loss (default: the last 10% of --data)"},
        {.name = "--enc-layers", .kind = CLI_INT, .target = &o->enc_layers, .meta = "N",
         .help = "encoder blocks (0: --layers)", .min = 0, .max = 1024},
        {.name = "--dec-layers", .kind = CLI_INT, .target = &o->dec_layers, .meta = "N",
         .help = "decoder blocks (0: --layers)", .min = 0, .max = 1024},
        {.name = "--max-len", .kind = CLI_INT, .target = &o->max_len, .meta = "N",
         .help = "positions: longer pairs (source + EOS, BOS + target) are left out", .min = 2, .max = 1 << 16},
        {.name = "--batch-tokens", .kind = CLI_INT, .target = &o->batch_tokens, .meta = "N",
         .help = "padded tokens (source + target) per micro-batch", .min = 2, .max = 1 << 26},
        {.name = "--tokenizer", .kind = CLI_STRING, .target = &o->tokenizer, .meta = "FILE",
         .help = "one tokenizer for both sides, one shared embedding (default: bytes)"},
        {.name = "--src-tokenizer", .kind = CLI_STRING, .target = &r->src_tok_path, .meta = "FILE",
         .help = "the source's tokenizer (with --tgt-tokenizer: two vocabularies, two embeddings)"},
        {.name = "--tgt-tokenizer", .kind = CLI_STRING, .target = &r->tgt_tok_path, .meta = "FILE",
         .help = "the target's tokenizer"},
    };
    _Static_assert(sizeof s2s_only / sizeof s2s_only[0] <= TRAIN_KIND_OPTIONS, "TRAIN_KIND_OPTIONS is too small");
    memcpy(own, s2s_only, sizeof s2s_only);
    *n_own = (int)(sizeof s2s_only / sizeof s2s_only[0]);
    return r;
}

static int prepare(void *self, const cli_opt *opts, int n, const run_paths *paths) {
    s2s_run *r = self;
    (void)opts;
    (void)n;
    r->paths = *paths;
    return load_tokenizers(r);
}

static int start(void *self, kiln_ctx *ctx, trainer *t) {
    s2s_run *r = self;
    char err[1024];
    if (build_model(r, ctx) || load_data(r)) return 1;
    train_model model = {.self = r->m, .ctx = ctx, .params = r->m->params, .n_params = r->m->n_params,
                         .d_model = r->m->cfg.n_embd, .data_tokens = (uint64_t)r->train->target_tokens,
                         .set_precision = precision_hook, .sigma_step = sigma_hook,
                         .layer_grad_norms = grad_norms_hook, .micro_loss = draw_loss, .data = r};
    /* the geometry a resume must share: the token budget and the positions */
    train_hparams *hp = &r->o->hp;
    hp->batch = r->o->batch_tokens;
    hp->block = r->o->max_len;
    if (trainer_init_model(t, &model, hp, err, sizeof err)) return host_error("%s", err);
    r->t = t;
    return train_monitor_init(&r->mon, r->m->cfg.enc_layers + r->m->cfg.dec_layers);
}

/* --attention: a micro-batch holds at most --batch-tokens target tokens in sequences of at
 * most --max-len, so each self- or cross-attention sublayer's scores are at most heads x
 * batch-tokens x max-len (the encoder's self-attention, the decoder's self- and cross-). */
static int attention(void *self, kiln_ctx *ctx) {
    s2s_run *r = self;
    const seq2seq_config *c = &r->m->cfg;
    uint64_t len = (uint64_t)(r->o->max_len < r->o->batch_tokens ? r->o->max_len : r->o->batch_tokens);
    uint64_t sublayer = (uint64_t)c->n_head * (uint64_t)r->o->batch_tokens * len;
    char context[64];
    snprintf(context, sizeof context, "--max-len %d --batch-tokens %d", r->o->max_len, r->o->batch_tokens);
    int fused = train_attention(r->o, ctx, &c->block, sublayer * (uint64_t)(c->enc_layers + 2 * c->dec_layers), context);
    if (fused < 0) return 1;
    r->m->enc_block.attention_fused = r->m->dec_block.attention_fused = fused;
    return 0;
}

static void describe(void *self, const trainer *t) {
    s2s_run *r = self;
    const train_hparams *hp = &r->o->hp;
    fprintf(stderr, "kiln train: seq2seq, %d encoder and %d decoder layers, %d heads, dim %d, vocab %d/%d: %.2fM "
        "weights; %lld training pairs in %lld batches, %lld held out; steps %" PRId64 " to %d; %s\n",
        r->m->cfg.enc_layers, r->m->cfg.dec_layers, r->m->cfg.n_head, r->m->cfg.n_embd, r->m->cfg.src_vocab,
        r->m->cfg.tgt_vocab, (double)seq2seq_param_count(r->m) / 1e6, (long long)r->train->count,
        (long long)r->train->n_batches, (long long)r->val->count, t->step + 1, hp->steps,
        hp->precision == KILN_F16 ? "fp16 (mixed precision, dynamic loss scaling)" : "fp32");
}

static int last_evaluation(void *self, double *val) {
    s2s_run *r = self;
    char err[1024];
    return seq2seq_data_loss(r->m, r->val, val, err, sizeof err) ? host_error("%s", err) : 0;
}

static void report(void *self, const trainer *t, double val) {
    (void)self;
    (void)t;
    printf("val loss %.4f\n", val);
}

static void destroy(void *self) {
    s2s_run *r = self;
    train_monitor_free(&r->mon, r->t);
    seq2seq_batch_free(&r->batch);
    seq2seq_data_free(r->train);
    seq2seq_data_free(r->val);
    seq2seq_free(r->m);
    if (r->tgt_tok != r->src_tok) tokenizer_free(r->tgt_tok);
    tokenizer_free(r->src_tok);
    free(r);
}

const train_kind seq2seq_train_kind = {
    .command = "train --model seq2seq",
    .summary =
        "Trains the encoder-decoder Transformer (Vaswani et al. 2017) on source<TAB>target pairs,\n"
        "one per line. At the end it prints `val loss X` (per target token, without label\n"
        "smoothing). DIR receives model.safetensors (with the tokenizers), optimizer.safetensors\n"
        "and metrics.jsonl.",
    .create = create,
    .prepare = prepare,
    .start = start,
    .attention = attention,
    .describe = describe,
    .loop = {.before_step = before_step, .step_tokens = step_tokens, .evaluate = evaluate, .save = save},
    .last_evaluation = last_evaluation,
    .report = report,
    .destroy = destroy,
};
