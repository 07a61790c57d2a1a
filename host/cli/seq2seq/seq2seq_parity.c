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

#include "run/cli.h"
#include "cli/seq2seq/seq2seq_commands.h"
#include "cli/dev_dump.h"
#include "run/device.h"
#include "formats/safetensors.h"
#include "model/seq2seq/seq2seq_checkpoint.h"
#include "model/trainer.h"


static int load_batch(const char *path, const seq2seq_model *m, seq2seq_batch *b, char *err, size_t errlen) {
    st_file *f;
    if (st_open(path, &f, err, errlen)) return -1;
    int64_t ss[2] = {0}, ls[1] = {0}, ts[2] = {0}, os[2] = {0};
    int rc = -1;
    b->src = dev_read_ints(f, path, "src", 2, 0, m->cfg.src_vocab, ss, err, errlen);
    if (b->src) b->src_len = dev_read_ints(f, path, "src_len", 1, 1, ss[1] + 1, ls, err, errlen);
    if (b->src_len) b->tgt_in = dev_read_ints(f, path, "tgt_in", 2, 0, m->cfg.tgt_vocab, ts, err, errlen);
    if (b->tgt_in) b->tgt_out = dev_read_ints(f, path, "tgt_out", 2, -1, m->cfg.tgt_vocab, os, err, errlen);
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

static int load(void *self, kiln_ctx *ctx, const char *ckpt, const char *batch, train_model *model, char *err,
                size_t errlen) {
    parity_run *r = self;
    if (seq2seq_checkpoint_load(ctx, ckpt, &r->m, err, errlen) || load_batch(batch, r->m, &r->b, err, errlen))
        return -1;
    *model = (train_model){.self = r->m, .ctx = ctx, .params = r->m->params, .n_params = r->m->n_params,
                           .d_model = r->m->cfg.n_embd, .set_precision = precision_hook,
                           .micro_loss = same_batch_loss, .data = r};
    return 0;
}

static int dump(void *self, st_writer *w, char *err, size_t errlen) {
    if (dump_gradients(self, w) == 0) return 0;
    const char *msg = kiln_error_message(); /* as host_engine_error says it */
    snprintf(err, errlen, "%s", msg && *msg ? msg : "unknown engine error");
    return -1;
}

static void free_run(void *self) {
    parity_run *r = self;
    free(r->b.src);
    free(r->b.src_len);
    free(r->b.tgt_in);
    free(r->b.tgt_out);
    seq2seq_free(r->m);
}

int seq2seq_parity_command(int argc, char **argv) {
    parity_run r = {0};
    const dev_batch_parity k = {
        .command = "dev seq2seq-parity",
        .summary = "Dumps the encoder-decoder's logits, loss, gradients and AdamW losses.",
        .ckpt_help = "seq2seq weights",
        .batch_help = "safetensors with src, src_len, tgt_in, tgt_out",
        .extra = {.name = "--label-smoothing", .kind = CLI_FLOAT, .target = &r.smoothing, .meta = "X",
                  .help = "label smoothing of the loss", .min = 0, .max = 0.999},
        .load = load,
        .dump = dump,
        .free = free_run,
    };
    return dev_batch_parity_run(&k, &r, argc, argv);
}
