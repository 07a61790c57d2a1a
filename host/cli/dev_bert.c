/* `kiln dev bert-parity`: BERT's numbers for tests/bert_parity.py.
 *
 *   kiln dev bert-parity --ckpt W.safetensors --batch B.safetensors --out R.safetensors
 *                        [--steps N --lr X]
 *
 * W is a checkpoint in Hugging Face's layout (model/bert_checkpoint.h). B holds one padded
 * batch as integers: "ids" [B, T], "lengths" [B] and "targets" [B, T] (-1 where nothing is
 * predicted). R receives, at the initial weights, "logits" [B, T, V] (every position),
 * "loss" [1] (the MLM loss, computed on the gathered target rows as training does) and
 * "grad.<name>" for every trained tensor in Hugging Face's layout; then "losses" [N]: the loss
 * of each of N AdamW steps on the same batch (constant learning rate, weight decay 0.1 on
 * matrices and embeddings, beta2 0.99, no clipping). Exit 77 when the backend is not
 * available here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/dev_dump.h"
#include "formats/safetensors.h"
#include "model/bert_checkpoint.h"
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
    int64_t *wide = malloc((size_t)(t->numel > 0 ? t->numel : 1) * sizeof *wide);
    int32_t *out = malloc((size_t)(t->numel > 0 ? t->numel : 1) * sizeof *out);
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

static int load_batch(const char *path, const bert_model *m, bert_batch *b, char *err, size_t errlen) {
    st_file *f;
    if (st_open(path, &f, err, errlen)) return -1;
    int64_t is[2] = {0}, ls[1] = {0}, ts[2] = {0};
    int rc = -1;
    b->ids = read_ints(f, path, "ids", 2, 0, m->cfg.vocab_size, is, err, errlen);
    if (b->ids) b->lengths = read_ints(f, path, "lengths", 1, 1, is[1] + 1, ls, err, errlen);
    if (b->lengths) b->targets = read_ints(f, path, "targets", 2, -1, m->cfg.vocab_size, ts, err, errlen);
    if (b->targets) {
        if (ls[0] != is[0] || ts[0] != is[0] || ts[1] != is[1])
            snprintf(err, errlen, "%s: the batch's shapes disagree", path);
        else
            rc = 0;
        b->rows = (int)is[0];
        b->width = (int)is[1];
    }
    st_close(f);
    return rc;
}

typedef struct parity_run {
    bert_model *m;
    bert_batch b;
} parity_run;

static kiln_tensor *same_batch_loss(trainer *t, uint64_t draw, char *err, size_t errlen) {
    (void)draw;
    parity_run *r = t->model.data;
    kiln_tensor *l = bert_batch_loss(r->m, &r->b, 0.0f, NULL);
    if (!l) snprintf(err, errlen, "%s", kiln_error_message());
    return l;
}

static kiln_status precision_hook(void *m, kiln_dtype dtype, int keep) { return bert_set_precision(m, dtype, keep); }

/* Logits of every position, then the loss and every gradient at the current weights. */
static int dump_gradients(parity_run *r, st_writer *w, char *err, size_t errlen) {
    bert_model *m = r->m;
    const bert_batch *b = &r->b;
    kiln_set_grad_enabled(m->ctx, 0);
    int64_t shape[2] = {b->rows, b->width}, rows = b->rows;
    kiln_tensor *ids = kiln_tensor_temp(m->ctx, KILN_I32, 2, shape), *len = kiln_tensor_temp(m->ctx, KILN_I32, 1, &rows);
    if (!ids || !len || kiln_upload(ids, b->ids, (size_t)(shape[0] * shape[1]) * 4) ||
        kiln_upload(len, b->lengths, (size_t)rows * 4) || dev_add_tensor(w, "logits", bert_logits(m, ids, len, 0)))
        goto engine;
    kiln_step_reset(m->ctx);
    kiln_set_grad_enabled(m->ctx, 1);
    kiln_tensor *loss = bert_batch_loss(m, b, 0.0f, NULL);
    int64_t one = 1;
    if (!loss || kiln_backward(loss, 1.0f) || dev_add_tensor(w, "loss", kiln_reshape(loss, 1, &one))) goto engine;
    if (bert_hf_add(m, 1, "grad.", w, err, errlen)) return -1;
    kiln_step_reset(m->ctx);
    return 0;
engine:
    snprintf(err, errlen, "%s", kiln_error_message());
    return -1;
}

int cmd_dev_bert_parity(int argc, char **argv) {
    const char *ckpt = NULL, *batch = NULL, *out = NULL, *backend = "cpu";
    int device = -1, steps = 6;
    train_hparams hp = {.grad_accum = 1, .batch = 1, .block = 1, .lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.99f,
                        .weight_decay = 0.1f, .clip = 0.0f, .seed = 1};
    cli_opt opts[] = {
        {.name = "--ckpt", .kind = CLI_STRING, .target = &ckpt, .meta = "FILE", .help = "BERT weights"},
        {.name = "--batch", .kind = CLI_STRING, .target = &batch, .meta = "FILE",
         .help = "safetensors with ids, lengths, targets"},
        {.name = "--out", .kind = CLI_STRING, .target = &out, .meta = "FILE", .help = "results (safetensors)"},
        {.name = "--steps", .kind = CLI_INT, .target = &steps, .meta = "N", .help = "AdamW steps", .min = 0,
         .max = 1000},
        {.name = "--lr", .kind = CLI_FLOAT, .target = &hp.lr, .meta = "X", .help = "learning rate", .min = 0, .max = 10},
        host_backend_option(&backend),
        host_device_option(&device),
    };
    int rc = cli_parse("dev bert-parity", "Dumps BERT's logits, MLM loss, gradients and AdamW losses.", argc, argv, 3,
                       opts, (int)(sizeof opts / sizeof opts[0]));
    if (rc) return rc < 0 ? 1 : 0;
    if (!ckpt || !batch || !out) return host_error("kiln dev bert-parity needs --ckpt, --batch and --out");
    char err[1024];
    parity_run r = {0};
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
    if (bert_checkpoint_load(ctx, ckpt, &r.m, err, sizeof err) || load_batch(batch, r.m, &r.b, err, sizeof err)) {
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
    host_say_device("dev bert-parity", ctx);
    if (dump_gradients(&r, w, err, sizeof err)) {
        host_error("dev bert-parity: %s", err);
        goto done;
    }
    if (kiln_zero_grad(t.leaves, r.m->n_params)) {
        host_engine_error("dev bert-parity");
        goto done;
    }
    if (dev_train_and_save(&t, steps, w, out)) goto done;
    rc = 0;
done:
    st_writer_free(w);
    bert_batch_free(&r.b);
    trainer_free(&t);
    bert_free(r.m);
    kiln_close(ctx);
    return rc;
}
