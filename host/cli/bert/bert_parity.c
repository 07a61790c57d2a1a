/* `kiln dev bert-parity`: BERT's numbers for tests/bert_parity.py.
 *
 *   kiln dev bert-parity --ckpt W.safetensors --batch B.safetensors --out R.safetensors
 *                        [--steps N --lr X]
 *
 * W is a checkpoint in Hugging Face's layout (model/bert/bert_checkpoint.h). B holds one padded
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

#include "run/cli.h"
#include "cli/bert/bert_commands.h"
#include "cli/dev_dump.h"
#include "run/device.h"
#include "formats/safetensors.h"
#include "model/bert/bert_checkpoint.h"
#include "model/trainer.h"


static int load_batch(const char *path, const bert_model *m, bert_batch *b, char *err, size_t errlen) {
    st_file *f;
    if (st_open(path, &f, err, errlen)) return -1;
    int64_t is[2] = {0}, ls[1] = {0}, ts[2] = {0};
    int rc = -1;
    b->ids = dev_read_ints(f, path, "ids", 2, 0, m->cfg.vocab_size, is, err, errlen);
    if (b->ids) b->lengths = dev_read_ints(f, path, "lengths", 1, 1, is[1] + 1, ls, err, errlen);
    if (b->lengths) b->targets = dev_read_ints(f, path, "targets", 2, -1, m->cfg.vocab_size, ts, err, errlen);
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

static int load(void *self, kiln_ctx *ctx, const char *ckpt, const char *batch, train_model *model, char *err,
                size_t errlen) {
    parity_run *r = self;
    if (bert_checkpoint_load(ctx, ckpt, &r->m, err, errlen) || load_batch(batch, r->m, &r->b, err, errlen)) return -1;
    *model = (train_model){.self = r->m, .ctx = ctx, .params = r->m->params, .n_params = r->m->n_params,
                           .d_model = r->m->cfg.n_embd, .set_precision = precision_hook,
                           .micro_loss = same_batch_loss, .data = r};
    return 0;
}

static int dump(void *self, st_writer *w, char *err, size_t errlen) { return dump_gradients(self, w, err, errlen); }

static void free_run(void *self) {
    parity_run *r = self;
    bert_batch_free(&r->b);
    bert_free(r->m);
}

int bert_parity_command(int argc, char **argv) {
    static const dev_batch_parity k = {
        .command = "dev bert-parity",
        .summary = "Dumps BERT's logits, MLM loss, gradients and AdamW losses.",
        .ckpt_help = "BERT weights",
        .batch_help = "safetensors with ids, lengths, targets",
        .load = load,
        .dump = dump,
        .free = free_run,
    };
    parity_run r = {0};
    return dev_batch_parity_run(&k, &r, argc, argv);
}
