/* What the `kiln dev` parity dumps share (cli/dev_dump.h). */
#include "cli/dev_dump.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"

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
