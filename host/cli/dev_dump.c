/* What the `kiln dev` parity dumps share (cli/dev_dump.h). */
#include "cli/dev_dump.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/cli.h"
#include "run/device.h"

int32_t *dev_read_ints(const st_file *f, const char *path, const char *name, int ndim, int64_t lo, int64_t hi,
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

int dev_add_tensor(st_writer *w, const char *name, const kiln_tensor *t) {
    int64_t n = kiln_numel(t);
    float *host = malloc((size_t)n * sizeof *host);
    int rc = !host || kiln_download_f32(t, host, n) ? -1 : 0;
    if (rc == 0)
        rc = st_writer_add(w, name, "F32", t->ndim, t->shape, host, (size_t)n * sizeof *host);
    free(host);
    return rc;
}

int dev_train_and_save(trainer *t, int steps, st_writer *w, const char *out) {
    char err[1024];
    float *losses = calloc((size_t)steps + 1, sizeof *losses);
    if (!losses) return host_error("out of host memory");
    int rc = 0;
    for (int s = 0; s < steps && rc == 0; s++) {
        train_step_stats st = {0};
        if (trainer_step(t, &st, err, sizeof err))
            rc = host_error("%s%s", err, isfinite(st.loss) ? "" : " (try a lower --lr, or --clip)");
        else
            losses[s] = (float)st.loss;
    }
    int64_t shape = steps;
    if (rc == 0 && steps > 0 &&
        st_writer_add(w, "losses", "F32", 1, &shape, losses, (size_t)steps * sizeof *losses))
        rc = host_error("out of host memory");
    if (rc == 0 && st_writer_save(w, out, err, sizeof err)) rc = host_error("%s", err);
    free(losses);
    return rc;
}

int dev_batch_parity_run(const dev_batch_parity *k, void *self, int argc, char **argv) {
    const char *ckpt = NULL, *batch = NULL, *out = NULL, *backend = "cpu";
    int device = -1, steps = 6;
    train_hparams hp = {.grad_accum = 1, .batch = 1, .block = 1, .lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.99f,
                        .weight_decay = 0.1f, .clip = 0.0f, .seed = 1};
    cli_opt opts[] = {
        {.name = "--ckpt", .kind = CLI_STRING, .target = &ckpt, .meta = "FILE", .help = k->ckpt_help},
        {.name = "--batch", .kind = CLI_STRING, .target = &batch, .meta = "FILE", .help = k->batch_help},
        {.name = "--out", .kind = CLI_STRING, .target = &out, .meta = "FILE", .help = "results (safetensors)"},
        {.name = "--steps", .kind = CLI_INT, .target = &steps, .meta = "N", .help = "AdamW steps", .min = 0,
         .max = 1000},
        {.name = "--lr", .kind = CLI_FLOAT, .target = &hp.lr, .meta = "X", .help = "learning rate", .min = 0, .max = 10},
        k->extra,
        host_backend_option(&backend),
        host_device_option(&device),
    };
    int n = (int)(sizeof opts / sizeof opts[0]);
    if (!k->extra.name) { /* no option of its own: close the gap */
        memmove(&opts[5], &opts[6], 2 * sizeof opts[0]);
        n--;
    }
    int rc = cli_parse(k->command, k->summary, argc, argv, 3, opts, n);
    if (rc) return rc < 0 ? 1 : 0;
    if (!ckpt || !batch || !out) return host_error("kiln %s needs --ckpt, --batch and --out", k->command);
    char err[1024];
    trainer t = {0};
    st_writer *w = st_writer_new();
    rc = 1;
    kiln_ctx *ctx = host_open_device(backend, device);
    train_model model = {0};
    if (!ctx) {
        rc = 77;
    } else if (!w) {
        host_error("out of host memory");
    } else if (k->load(self, ctx, ckpt, batch, &model, err, sizeof err)) {
        host_error("%s", err);
    } else {
        hp.min_lr = hp.lr;
        hp.steps = steps;
        if (trainer_init_model(&t, &model, &hp, err, sizeof err)) {
            host_error("%s", err);
        } else {
            host_say_device(k->command, ctx);
            if (k->dump(self, w, err, sizeof err))
                host_error("%s: %s", k->command, err);
            else if (kiln_zero_grad(t.leaves, model.n_params))
                host_engine_error(k->command);
            else if (dev_train_and_save(&t, steps, w, out) == 0)
                rc = 0;
        }
    }
    st_writer_free(w);
    trainer_free(&t);
    k->free(self);
    kiln_close(ctx);
    return rc;
}
