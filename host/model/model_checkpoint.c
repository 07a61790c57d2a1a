/* Checkpoint I/O shared by every model (model_checkpoint.h). */
#include "model/model_checkpoint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Appends `name` to a comma-separated list in buf, up to a few names and a count. */
static void list_add(char *buf, size_t size, int *count, const char *name) {
    (*count)++;
    size_t len = strlen(buf);
    if (*count <= 4) snprintf(buf + len, size - len, "%s%s", *count > 1 ? ", " : "", name);
}

static void list_finish(char *buf, size_t size, int count) {
    size_t len = strlen(buf);
    if (count > 4) snprintf(buf + len, size - len, " (and %d more)", count - 4);
}

static void shape_str(char *buf, size_t size, int ndim, const int64_t *shape) {
    size_t at = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < ndim && at < size; i++)
        at += (size_t)snprintf(buf + at, size - at, i ? ", %lld" : "%lld", (long long)shape[i]);
    if (at < size) snprintf(buf + at, size - at, "]");
}

int model_checkpoint_match(const st_file *f, const char *path, model_name_fn canonical, const param_spec *specs,
                           int n_specs, const char *config, const st_tensor **match, char *err, size_t errlen) {
    char unknown[512] = "", missing[512] = "";
    int n_unknown = 0, n_missing = 0;
    for (size_t i = 0; i < st_count(f); i++) {
        const st_tensor *t = st_tensor_at(f, i);
        const char *name = canonical ? canonical(t->name) : t->name;
        if (!name) continue;
        int idx = 0;
        while (idx < n_specs && strcmp(specs[idx].name, name)) idx++;
        if (idx == n_specs) {
            list_add(unknown, sizeof unknown, &n_unknown, t->name);
            continue;
        }
        const param_spec *p = &specs[idx];
        if (match[idx]) {
            snprintf(err, errlen, "%s: tensor %s appears twice (as %s and %s)", path, name, match[idx]->name, t->name);
            return -1;
        }
        int same = t->ndim == p->ndim;
        for (int d = 0; same && d < t->ndim; d++) same = t->shape[d] == p->shape[d];
        if (!same) {
            char got[96], want[96];
            shape_str(got, sizeof got, t->ndim, t->shape);
            shape_str(want, sizeof want, p->ndim, p->shape);
            snprintf(err, errlen, "%s: tensor %s has shape %s but the config (%s) needs %s", path, t->name, got,
                     config, want);
            return -1;
        }
        if (t->dtype != ST_F32 && t->dtype != ST_F16 && t->dtype != ST_BF16 && t->dtype != ST_F64) {
            snprintf(err, errlen, "%s: tensor %s is %s; weights must be F32, F16, BF16 or F64", path, t->name,
                     t->dtype_name);
            return -1;
        }
        match[idx] = t;
    }
    if (n_unknown) {
        list_finish(unknown, sizeof unknown, n_unknown);
        snprintf(err, errlen, "%s: unknown tensor%s %s (not part of the model its config describes: %s)", path,
                 n_unknown > 1 ? "s" : "", unknown, config);
        return -1;
    }
    for (int i = 0; i < n_specs; i++)
        if (!match[i]) list_add(missing, sizeof missing, &n_missing, specs[i].name);
    if (n_missing) {
        list_finish(missing, sizeof missing, n_missing);
        snprintf(err, errlen, "%s: missing tensor%s %s", path, n_missing > 1 ? "s" : "", missing);
        return -1;
    }
    return 0;
}

int model_checkpoint_read(const st_file *f, const char *path, const st_tensor *const *match, model_param *params, int n, char *err,
                          size_t errlen) {
    float *host = NULL;
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        const st_tensor *t = match[i];
        float *buf = realloc(host, (size_t)(t->numel > 0 ? t->numel : 1) * sizeof *buf);
        if (!buf) {
            snprintf(err, errlen, "out of host memory reading %s", t->name);
            rc = -1;
            break;
        }
        host = buf;
        if (st_read_f32(t, host, (size_t)t->numel) || kiln_upload_f32(params[i].t, host, t->numel)) {
            snprintf(err, errlen, "%s: cannot load %s: %s", path, t->name, kiln_error_message());
            rc = -1;
        }
        st_drop(f, t->data, t->nbytes); /* read: its pages go back, the weights are not held twice */
    }
    free(host);
    return rc;
}

int model_checkpoint_build(const st_file *f, const char *path, kiln_ctx *ctx, const model_loader *l, void **out,
                           char *err, size_t errlen) {
    *out = NULL;
    int n = l->specs(l->cfg, NULL), rc = -1;
    param_spec *specs = calloc((size_t)(n > 0 ? n : 1), sizeof *specs);
    const st_tensor **match = calloc((size_t)(n > 0 ? n : 1), sizeof *match);
    void *m = NULL;
    if (!specs || !match) {
        snprintf(err, errlen, "out of host memory");
        goto done;
    }
    l->specs(l->cfg, specs);
    if (model_checkpoint_match(f, path, l->canonical, specs, n, l->config, match, err, errlen)) goto done;
    if (!(m = l->build(ctx, l->cfg))) {
        snprintf(err, errlen, "%s: cannot allocate the model: %s", path, kiln_error_message());
        goto done;
    }
    if (model_checkpoint_read(f, path, match, l->params(m), n, err, errlen)) goto done;
    *out = m;
    m = NULL;
    rc = 0;
done:
    if (m) l->free(m);
    free(match);
    free(specs);
    return rc;
}

static void meta_put(void *w, const char *key, const char *value) { st_writer_meta(w, key, value); }

st_writer *model_checkpoint_writer(const model_checkpoint_config *c, const model_meta *extra, int n_extra,
                                   const char *path, char *err, size_t errlen) {
    st_writer *w = st_writer_new();
    if (!w) {
        snprintf(err, errlen, "%s: out of host memory", path);
        return NULL;
    }
    char value[32];
    st_writer_meta(w, "format", "pt");
    st_writer_meta(w, "model_type", c->model_type);
    for (int i = 0; i < c->n_ints; i++) {
        snprintf(value, sizeof value, "%lld", (long long)c->ints[i]);
        st_writer_meta(w, c->int_names[i], value);
    }
    snprintf(value, sizeof value, "%.9g", (double)c->ln_eps);
    st_writer_meta(w, c->eps_key, value);
    for (int i = 0; i < c->n_fixed; i++) st_writer_meta(w, c->fixed[i].key, c->fixed[i].value);
    block_options_to_meta(c->block, meta_put, w);
    for (int i = 0; i < n_extra; i++) st_writer_meta(w, extra[i].key, extra[i].value);
    return w;
}

int model_checkpoint_save(const model_param *params, int n, const model_checkpoint_config *c, const model_meta *extra,
                          int n_extra, const char *path, char *err, size_t errlen) {
    st_writer *w = model_checkpoint_writer(c, extra, n_extra, path, err, errlen);
    if (!w) return -1;
    int rc = model_checkpoint_write(params, n, w, path, err, errlen);
    st_writer_free(w);
    return rc;
}

int model_checkpoint_write(const model_param *params, int n, st_writer *w, const char *path, char *err,
                           size_t errlen) {
    float **host = calloc((size_t)(n > 0 ? n : 1), sizeof *host);
    int rc = -1;
    if (!w || !host) {
        snprintf(err, errlen, "%s: out of host memory", path);
        goto done;
    }
    for (int i = 0; i < n; i++) {
        const kiln_tensor *t = params[i].t;
        int64_t count = kiln_numel(t);
        host[i] = malloc((size_t)count * sizeof(float));
        if (!host[i]) {
            snprintf(err, errlen, "%s: out of host memory", path);
            goto done;
        }
        if (kiln_download_f32(t, host[i], count)) {
            snprintf(err, errlen, "%s: reading %s from the device: %s", path, params[i].spec.name,
                     kiln_error_message());
            goto done;
        }
        st_writer_add_ref(w, params[i].spec.name, "F32", t->ndim, t->shape, host[i], (size_t)count * sizeof(float));
    }
    rc = st_writer_save(w, path, err, errlen);
done:
    if (host)
        for (int i = 0; i < n; i++) free(host[i]);
    free(host);
    return rc;
}

int model_checkpoint_meta(const char *path, const char *key, char *value, size_t size, char *err, size_t errlen) {
    st_file *f;
    if (st_open(path, &f, err, errlen)) return -1;
    const char *v = st_meta(f, key);
    if (v) snprintf(value, size, "%s", v);
    st_close(f);
    return v ? 1 : 0;
}
