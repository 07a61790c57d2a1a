/* `kiln dev seq2seq-parity`: the encoder-decoder's numbers for tests/seq2seq_parity.py.
 *
 *   kiln dev seq2seq-parity --ckpt W.safetensors --batch B.safetensors --out R.safetensors
 *                           [--steps N --lr X --label-smoothing X]
 *
 * B holds one padded batch as integers: "src" [B, S], "src_len" [B], "tgt_in" [B, T] and
 * "tgt_out" [B, T] (-1 where padded). R receives "logits" [B, T, V] and "loss" [1] at the
 * initial weights, "grad.<name>" for every trained tensor, and "losses" [N]: the loss of
 * each of N AdamW steps on the same batch (constant learning rate, weight decay 0.1 on
 * matrices and embeddings, beta2 0.99, no clipping). Exit 77 when the backend is not
 * available here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/dev_dump.h"
#include "formats/safetensors.h"
#include "model/seq2seq_checkpoint.h"
#include "model/trainer.h"
#include "run/cli.h"
#include "run/device.h"

/* Reads integer tensor `name` of rank ndim into a new i32 array, checking [lo, hi). */
static int32_t *read_ints(const st_file *f, const char *path, const char *name, int ndim, int64_t lo, int64_t hi,
                          int64_t *shape, char *err, size_t errlen) {
    const st_tensor *t = st_find(f, name);
    if (!t || t->ndim != ndim) {
        snprintf(err, errlen, "%s: needs an integer tensor \"%s\" of rank %d", path, name, ndim);
        return NULL;
    }
    int64_t *wide = malloc((size_t)t->numel * sizeof *wide);
    int32_t *out = malloc((size_t)t->numel * sizeof *out);
    if (!wide || !out || st_read_i64(t, wide, (size_t)t->numel)) {
        snprintf(err, errlen, "%s: cannot read \"%s\" as integers", path, name);
        free(wide);
        free(out);
        return NULL;
    }
    for (int64_t i = 0; i < t->numel; i++) {
        if (wide[i] < lo || wide[i] >= hi) {
            snprintf(err, errlen, "%s: %s holds %lld, outside [%lld, %lld)", path, name, (long long)wide[i],
                     (long long)lo, (long long)hi);
            free(wide);
            free(out);
            return NULL;
        }
        out[i] = (int32_t)wide[i];
    }
    for (int d = 0; d < ndim; d++) shape[d] = t->shape[d];
    free(wide);
    return out;
}

static int load_batch(const char *path, const seq2seq_model *m, seq2seq_batch *b, char *err, size_t errlen) {
    st_file *f;
    if (st_open(path, &f, err, errlen)) return -1;
    int64_t ss[2] = {0}, ls[1] = {0}, ts[2] = {0}, os[2] = {0};
    int rc = -1;
    b->src = read_ints(f, path, "src", 2, 0, m->cfg.src_vocab, ss, err, errlen);
    if (b->src) b->src_len = read_ints(f, path, "src_len", 1, 1, ss[1] + 1, ls, err, errlen);
    if (b->src_len) b->tgt_in = read_ints(f, path, "tgt_in", 2, 0, m->cfg.tgt_vocab, ts, err, errlen);
    if (b->tgt_in) b->tgt_out = read_ints(f, path, "tgt_out", 2, -1, m->cfg.tgt_vocab, os, err, errlen);
    if (b->tgt_out) {
        if (ls[0] != ss[0] || ts[0] != ss[0] || os[0] != ss[0] || os[1] != ts[1])
            snprintf(err, errlen, "%s: the batch's shapes disagree", path);
        else
            rc = 0;
        b->rows = (int)ss[0];
        b->src_width = (int)ss[1];
        b->tgt_width = (int)ts[1];
    }
    st_close(f);
    return rc;
}

typedef struct parity_run {
    seq2seq_model *m;
    seq2seq_batch b;
    float smoothing;
} parity_run;

static kiln_tensor *same_batch_loss(trainer *t, uint64_t draw, char *err, size_t errlen) {
    (void)draw;
    parity_run *r = t->model.data;
    kiln_tensor *l = seq2seq_batch_loss(r->m, &r->b, 0.0f, r->smoothing);
    if (!l) snprintf(err, errlen, "%s", kiln_error_message());
    return l;
}

static kiln_status precision_hook(void *m, kiln_dtype dtype, int keep) { return seq2seq_set_precision(m, dtype, keep); }

/* Logits, loss and every gradient at the current weights. */
static int dump_gradients(parity_run *r, st_writer *w) {
    seq2seq_model *m = r->m;
    kiln_set_grad_enabled(m->ctx, 1);
    const seq2seq_batch *b = &r->b;
    int64_t ss[2] = {b->rows, b->src_width}, ts[2] = {b->rows, b->tgt_width}, rows = b->rows;
    kiln_tensor *src = kiln_tensor_temp(m->ctx, KILN_I32, 2, ss), *len = kiln_tensor_temp(m->ctx, KILN_I32, 1, &rows);
    kiln_tensor *tin = kiln_tensor_temp(m->ctx, KILN_I32, 2, ts), *tout = kiln_tensor_temp(m->ctx, KILN_I32, 2, ts);
    size_t sb = (size_t)(ss[0] * ss[1]) * 4, tb = (size_t)(ts[0] * ts[1]) * 4;
    if (!src || !len || !tin || !tout || kiln_upload(src, b->src, sb) || kiln_upload(len, b->src_len, (size_t)rows * 4) ||
        kiln_upload(tin, b->tgt_in, tb) || kiln_upload(tout, b->tgt_out, tb))
        return -1;
    kiln_tensor *logits = seq2seq_decode(m, seq2seq_encode(m, src, len, 0), len, tin, 0);
    kiln_tensor *loss = kiln_cross_entropy(logits, tout, r->smoothing, -1);
    int64_t one = 1;
    if (!loss || kiln_backward(loss, 1.0f) || dev_add_tensor(w, "logits", logits) ||
        dev_add_tensor(w, "loss", kiln_reshape(loss, 1, &one)))
        return -1;
    for (int i = 0; i < m->n_params; i++) {
        char name[96];
        snprintf(name, sizeof name, "grad.%s", m->params[i].spec.name);
        if (dev_add_tensor(w, name, kiln_grad(m->params[i].t))) return -1;
    }
    kiln_step_reset(m->ctx);
    return 0;
}

int cmd_dev_seq2seq_parity(int argc, char **argv) {
    const char *ckpt = NULL, *batch = NULL, *out = NULL, *backend = "cpu";
    int device = -1, steps = 6;
    float smoothing = 0.0f;
    train_hparams hp = {.grad_accum = 1, .batch = 1, .block = 1, .lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.99f,
                        .weight_decay = 0.1f, .clip = 0.0f, .seed = 1};
    cli_opt opts[] = {
        {.name = "--ckpt", .kind = CLI_STRING, .target = &ckpt, .meta = "FILE", .help = "seq2seq weights"},
        {.name = "--batch", .kind = CLI_STRING, .target = &batch, .meta = "FILE",
         .help = "safetensors with src, src_len, tgt_in, tgt_out"},
        {.name = "--out", .kind = CLI_STRING, .target = &out, .meta = "FILE", .help = "results (safetensors)"},
        {.name = "--steps", .kind = CLI_INT, .target = &steps, .meta = "N", .help = "AdamW steps", .min = 0,
         .max = 1000},
        {.name = "--lr", .kind = CLI_FLOAT, .target = &hp.lr, .meta = "X", .help = "learning rate", .min = 0, .max = 10},
        {.name = "--label-smoothing", .kind = CLI_FLOAT, .target = &smoothing, .meta = "X",
         .help = "label smoothing of the loss", .min = 0, .max = 0.999},
        host_backend_option(&backend),
        host_device_option(&device),
    };
    int rc = cli_parse("dev seq2seq-parity", "Dumps the encoder-decoder's logits, loss, gradients and AdamW losses.",
                       argc, argv, 3, opts, (int)(sizeof opts / sizeof opts[0]));
    if (rc) return rc < 0 ? 1 : 0;
    if (!ckpt || !batch || !out) return host_error("kiln dev seq2seq-parity needs --ckpt, --batch and --out");
    char err[1024];
    parity_run r = {.smoothing = smoothing};
    trainer t = {0};
    st_writer *w = st_writer_new();
    rc = 1;
    kiln_ctx *ctx = host_open_device(backend, device);
    if (!ctx) {
        rc = 77;
        goto done;
    }
    if (!w) {
        host_error("out of host memory");
        goto done;
    }
    if (seq2seq_checkpoint_load(ctx, ckpt, &r.m, err, sizeof err) || load_batch(batch, r.m, &r.b, err, sizeof err)) {
        host_error("%s", err);
        goto done;
    }
    hp.min_lr = hp.lr;
    hp.steps = steps;
    train_model model = {.self = r.m, .ctx = ctx, .params = r.m->params, .n_params = r.m->n_params,
                         .d_model = r.m->cfg.n_embd, .set_precision = precision_hook,
                         .micro_loss = same_batch_loss, .data = &r};
    if (trainer_init_model(&t, &model, &hp, err, sizeof err)) {
        host_error("%s", err);
        goto done;
    }
    host_say_device("dev seq2seq-parity", ctx);
    if (dump_gradients(&r, w) || kiln_zero_grad(t.leaves, r.m->n_params)) {
        host_engine_error("dev seq2seq-parity");
        goto done;
    }
    if (dev_train_and_save(&t, steps, w, out)) goto done;
    rc = 0;
done:
    st_writer_free(w);
    free(r.b.src);
    free(r.b.src_len);
    free(r.b.tgt_in);
    free(r.b.tgt_out);
    trainer_free(&t);
    seq2seq_free(r.m);
    kiln_close(ctx);
    return rc;
}
