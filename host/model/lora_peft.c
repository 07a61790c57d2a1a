/* PEFT's files of a LoRA adapter (model/lora.h): adapter_config.json and
 * adapter_model.safetensors with PEFT's full module names, kiln's record of the base in the
 * safetensors metadata. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/file_open.h"
#include "formats/json.h"
#include "formats/safetensors.h"
#include "kiln/file.h"
#include "model/lora.h"
#include "model/lora_gguf.h"

/* PEFT's prefix of a layer's modules: the PeftModel wraps the base model's own names. */
static const char *layer_prefix(lora_family f) {
    return f == LORA_FAMILY_GPT2 ? "base_model.model.transformer.h." : "base_model.model.model.layers.";
}

void lora_peft_name(const lora_adapter *a, int i, char *buf, size_t size) {
    const param_spec *s = &a->params[i].spec;
    snprintf(buf, size, "%s%d.%s.lora_%c.weight", layer_prefix(a->family), s->layer, lora_target_modules[s->slot / 2],
             s->slot % 2 ? 'B' : 'A');
}

/* A number as JSON: integral values without a fraction (PEFT's r and lora_alpha are ints). */
static void json_number(FILE *f, double v) {
    if (v == (double)(long long)v)
        fprintf(f, "%lld", (long long)v);
    else
        fprintf(f, "%.9g", v);
}

static int write_config(const lora_adapter *a, const lora_base_info *base, const char *path, char *err,
                        size_t errlen) {
    kiln_file *kf = kiln_file_begin(path, err, errlen);
    if (!kf) return -1;
    FILE *f = kiln_file_stream(kf);
    fputs("{\n  \"base_model_name_or_path\": ", f);
    json_write_string(f, base && base->path[0] ? base->path : "");
    /* GPT-2's Conv1D holds W as [in, out]: PEFT's flag for it; the adapter's A and B keep
       PEFT's [r, in] and [out, r] either way */
    fprintf(f, ",\n  \"bias\": \"none\",\n  \"fan_in_fan_out\": %s,\n  \"inference_mode\": true,\n"
               "  \"init_lora_weights\": true,\n  \"layers_pattern\": null,\n  \"layers_to_transform\": null,\n"
               "  \"lora_alpha\": ",
            a->family == LORA_FAMILY_GPT2 ? "true" : "false");
    json_number(f, a->alpha);
    fputs(",\n  \"lora_dropout\": ", f);
    json_number(f, a->dropout);
    fprintf(f, ",\n  \"modules_to_save\": null,\n  \"peft_type\": \"LORA\",\n  \"r\": %d,\n  \"revision\": null,\n"
               "  \"target_modules\": [",
            a->rank);
    int first = 1;
    for (int t = 0; t < LORA_TARGET_COUNT; t++)
        if (a->targets >> t & 1u) {
            fprintf(f, "%s\"%s\"", first ? "" : ", ", lora_target_modules[t]);
            first = 0;
        }
    fputs("],\n  \"task_type\": \"CAUSAL_LM\"\n}\n", f);
    return kiln_file_commit(kf, err, errlen) ? -1 : 0;
}

/* The targets as a comma-separated list of module names. */
static void targets_text(unsigned targets, char *buf, size_t size) {
    size_t at = 0;
    buf[0] = 0;
    for (int t = 0; t < LORA_TARGET_COUNT && at < size; t++)
        if (targets >> t & 1u) at += (size_t)snprintf(buf + at, size - at, "%s%s", at ? "," : "", lora_target_modules[t]);
}

static void writer_put(void *w, const char *key, const char *value) { st_writer_meta(w, key, value); }

static int write_weights(const lora_adapter *a, const lora_base_info *base, const char *path, const model_meta *extra,
                         int n_extra, char *err, size_t errlen) {
    st_writer *w = st_writer_new();
    float **host = calloc((size_t)(a->n_params > 0 ? a->n_params : 1), sizeof *host);
    int rc = -1;
    if (!w || !host) {
        snprintf(err, errlen, "%s: out of host memory", path);
        goto done;
    }
    char value[256];
    st_writer_meta(w, "format", "pt");
    if (base) lora_base_to_meta(base, 1, writer_put, w);
    snprintf(value, sizeof value, "%d", a->rank);
    st_writer_meta(w, "kiln.lora.rank", value);
    snprintf(value, sizeof value, "%.9g", (double)a->alpha);
    st_writer_meta(w, "kiln.lora.alpha", value);
    snprintf(value, sizeof value, "%.9g", (double)a->dropout);
    st_writer_meta(w, "kiln.lora.dropout", value);
    targets_text(a->targets, value, sizeof value);
    st_writer_meta(w, "kiln.lora.targets", value);
    for (int i = 0; i < n_extra; i++)
        if (extra[i].value) st_writer_meta(w, extra[i].key, extra[i].value);
    for (int i = 0; i < a->n_params; i++) {
        const kiln_tensor *t = a->params[i].t;
        int64_t n = kiln_numel(t);
        char name[128];
        lora_peft_name(a, i, name, sizeof name);
        if (!(host[i] = malloc((size_t)n * sizeof(float))) || kiln_download_f32(t, host[i], n)) {
            snprintf(err, errlen, "%s: cannot read %s: %s", path, name, host[i] ? kiln_error_message() : "out of host memory");
            goto done;
        }
        st_writer_add_ref(w, name, "F32", 2, t->shape, host[i], (size_t)n * sizeof(float));
    }
    rc = st_writer_save(w, path, err, errlen);
done:
    if (host)
        for (int i = 0; i < a->n_params; i++) free(host[i]);
    free(host);
    st_writer_free(w);
    return rc;
}

int lora_save_peft(const lora_adapter *a, const lora_base_info *base, const char *dir, const model_meta *extra,
                   int n_extra, char *err, size_t errlen) {
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", dir, LORA_WEIGHTS_FILE);
    if (write_weights(a, base, path, extra, n_extra, err, errlen)) return -1;
    snprintf(path, sizeof path, "%s/%s", dir, LORA_CONFIG_FILE);
    return write_config(a, base, path, err, errlen);
}

/* ---- reading ---- */

/* The weights file and the config beside it for a folder or a .safetensors path. */
static void adapter_paths(const char *path, char *weights, char *config, size_t size) {
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(weights, size, "%s/%s", path, LORA_WEIGHTS_FILE);
        snprintf(config, size, "%s/%s", path, LORA_CONFIG_FILE);
        return;
    }
    snprintf(weights, size, "%s", path);
    const char *slash = strrchr(path, '/');
    if (slash)
        snprintf(config, size, "%.*s/%s", (int)(slash - path), path, LORA_CONFIG_FILE);
    else
        snprintf(config, size, "%s", LORA_CONFIG_FILE);
}

int lora_file_meta(const char *path, const char *key, char *buf, size_t size, char *err, size_t errlen) {
    char weights[2048], config[2048];
    adapter_paths(path, weights, config, sizeof weights);
    st_file *f;
    if (st_open(weights, &f, err, errlen)) return -1;
    const char *v = st_meta(f, key);
    if (v) snprintf(buf, size, "%s", v);
    else snprintf(err, errlen, "%s: no %s in its metadata", weights, key);
    st_close(f);
    return v ? 0 : -1;
}

/* Parses "<prefix>N.<module>.lora_X.weight": the layer, the target and which of A, B. */
static int parse_name(lora_family f, const char *name, int *layer, int *target, int *is_b) {
    const char *prefix = layer_prefix(f);
    size_t pl = strlen(prefix);
    if (strncmp(name, prefix, pl)) return -1;
    char *end;
    long l = strtol(name + pl, &end, 10);
    if (end == name + pl || *end != '.' || l < 0 || l > 1 << 20) return -1;
    const char *module = end + 1;
    for (int t = 0; t < LORA_TARGET_COUNT; t++) {
        size_t n = strlen(lora_target_modules[t]);
        if (strncmp(module, lora_target_modules[t], n) || module[n] != '.') continue;
        const char *rest = module + n + 1;
        if (strcmp(rest, "lora_A.weight") && strcmp(rest, "lora_B.weight")) return -1;
        *layer = (int)l;
        *target = t;
        *is_b = rest[5] == 'B';
        return 0;
    }
    return -1;
}

static const char *file_get(void *f, const char *key) { return st_meta(f, key); }

/* r, lora_alpha and lora_dropout: kiln's metadata, else adapter_config.json. */
static int read_options(const st_file *f, const char *config, lora_options *o, char *err, size_t errlen) {
    const char *r = st_meta(f, "kiln.lora.rank"), *al = st_meta(f, "kiln.lora.alpha"), *dr = st_meta(f, "kiln.lora.dropout");
    if (r && al) {
        o->rank = atoi(r);
        o->alpha = strtof(al, NULL);
        o->dropout = dr ? strtof(dr, NULL) : 0.0f;
        return 0;
    }
    char *text;
    size_t n;
    json_value *root = NULL;
    if (file_read_all(config, "the LoRA adapter's config", &text, &n, err, errlen)) return -1;
    int rc = json_parse(text, n, &root, err, errlen);
    free(text);
    int64_t rank;
    double alpha, dropout = 0;
    if (!rc && (!json_as_int64(json_get(root, "r"), &rank) || !json_as_double(json_get(root, "lora_alpha"), &alpha))) {
        snprintf(err, errlen, "%s: no r and lora_alpha numbers", config);
        rc = -1;
    }
    if (!rc) {
        json_as_double(json_get(root, "lora_dropout"), &dropout);
        o->rank = (int)rank;
        o->alpha = (float)alpha;
        o->dropout = (float)dropout;
    }
    json_free(root);
    return rc;
}

/* 0 when some tensor of f is named as PEFT's LoRA weights are (a model's file is not). */
static int check_is_adapter(const st_file *f, const char *path, char *err, size_t errlen) {
    for (size_t i = 0; i < st_count(f); i++)
        if (strstr(st_tensor_at(f, i)->name, ".lora_")) return 0;
    snprintf(err, errlen, "%s: not a LoRA adapter (none of its tensors is PEFT's lora_A or lora_B)", path);
    return -1;
}

/* The targets the file's tensors cover (every layer must hold the same ones). */
static int read_targets(const st_file *f, const char *path, lora_family fam, int n_layer, unsigned *targets, char *err,
                        size_t errlen) {
    *targets = 0;
    size_t count = st_count(f);
    for (size_t i = 0; i < count; i++) {
        int layer, t, b;
        const char *name = st_tensor_at(f, i)->name;
        if (parse_name(fam, name, &layer, &t, &b) || layer >= n_layer) {
            snprintf(err, errlen, "%s: tensor \"%s\" is not a LoRA weight of this %s base's blocks", path, name,
                     fam == LORA_FAMILY_GPT2 ? "GPT-2" : "Llama-family");
            return -1;
        }
        *targets |= 1u << t;
    }
    return 0;
}

/* Reads every weight of a (allocated for the file's options) from f. */
static int read_weights(lora_adapter *a, const st_file *f, const char *path, char *err, size_t errlen) {
    for (int i = 0; i < a->n_params; i++) {
        char name[128];
        lora_peft_name(a, i, name, sizeof name);
        const st_tensor *t = st_find(f, name);
        kiln_tensor *dst = a->params[i].t;
        if (!t) {
            snprintf(err, errlen, "%s: tensor %s is missing", path, name);
            return -1;
        }
        if (t->ndim != 2 || t->shape[0] != dst->shape[0] || t->shape[1] != dst->shape[1]) {
            snprintf(err, errlen, "%s: tensor %s has shape [%lld, %lld], this base needs [%lld, %lld]", path, name,
                     (long long)(t->ndim > 0 ? t->shape[0] : 0), (long long)(t->ndim > 1 ? t->shape[1] : 0),
                     (long long)dst->shape[0], (long long)dst->shape[1]);
            return -1;
        }
        float *host = malloc((size_t)t->numel * sizeof *host);
        int bad = !host || st_read_f32(t, host, (size_t)t->numel) || kiln_upload_f32(dst, host, t->numel);
        free(host);
        if (bad) {
            snprintf(err, errlen, "%s: cannot read tensor %s (%s)", path, name, t->dtype_name);
            return -1;
        }
    }
    return 0;
}

int lora_load(gpt_model *m, lora_base_info *base, const char *path, float scale, lora_adapter **out, char *err,
              size_t errlen) {
    *out = NULL;
    if (gpt_lora_is_gguf(path)) return lora_load_gguf(m, base, path, scale, out, err, errlen); /* llama.cpp's form */
    char weights[2048], config[2048];
    adapter_paths(path, weights, config, sizeof weights);
    lora_family fam;
    if (lora_family_of(&m->cfg, &fam, err, errlen)) return -1;
    st_file *f;
    struct stat st;
    if (st_open(weights, &f, err, errlen)) {
        if (stat(path, &st)) return -1; /* the path itself is missing: st_open said so */
        /* say what was expected: a model or a text file given as --lora is a likely slip */
        char why[512];
        snprintf(why, sizeof why, "%s", err);
        snprintf(err, errlen, "%s: not a LoRA adapter (PEFT's folder or adapter_model.safetensors, or llama.cpp's LoRA GGUF): %s",
                 path, why);
        return -1;
    }
    lora_options o = {0};
    lora_adapter *a = NULL;
    int rc = -1;
    if (check_is_adapter(f, weights, err, errlen) || lora_base_check(base, weights, file_get, f, err, errlen) ||
        read_options(f, config, &o, err, errlen) || read_targets(f, weights, fam, m->cfg.n_layer, &o.targets, err, errlen))
        goto done;
    if (!(a = lora_alloc(m, &o, err, errlen))) goto done;
    if (a->n_params != (int)st_count(f)) {
        snprintf(err, errlen, "%s: the adapter does not cover the same modules in every layer", weights);
        goto done;
    }
    if (read_weights(a, f, weights, err, errlen)) goto done;
    a->scale *= scale;
    *out = a;
    a = NULL;
    rc = 0;
done:
    lora_free(a);
    st_close(f);
    return rc;
}
