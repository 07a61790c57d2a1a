/* The base an adapter belongs to (model/lora.h's lora_base_info): its architecture, shapes,
 * tokenizer and a hash of its bytes, which an adapter records and a load checks. */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/gguf.h"
#include "formats/safetensors.h"
#include "model/gpt/gpt_export.h"
#include "model/lora.h"

#define FNV_INIT 14695981039346656037ull

static uint64_t fnv1a(uint64_t h, const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

/* Chains the bytes of the file at path into *h. */
static int hash_file(const char *path, uint64_t *h, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot read it to fingerprint the base", path);
        return -1;
    }
    unsigned char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) *h = fnv1a(*h, buf, n);
    int bad = ferror(f);
    fclose(f);
    if (bad) snprintf(err, errlen, "%s: read error while fingerprinting the base", path);
    return bad ? -1 : 0;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The *.safetensors files of a folder in name order (NULL-terminated; free each and the
 * array), or NULL. */
static char **safetensors_in(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return NULL;
    char **names = calloc(1, sizeof *names);
    size_t n = 0;
    for (struct dirent *e; names && (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 12 || strcmp(e->d_name + len - 12, ".safetensors")) continue;
        char **grown = realloc(names, (n + 2) * sizeof *names);
        if (!grown) break;
        names = grown;
        if (!(names[n] = strdup(e->d_name))) break;
        names[++n] = NULL;
    }
    closedir(d);
    if (names) qsort(names, n, sizeof *names, by_name);
    return names;
}

static void free_names(char **names) {
    for (size_t i = 0; names && names[i]; i++) free(names[i]);
    free(names);
}

/* A folder's config.json and its *.safetensors in name order. */
static int hash_folder(const char *dir, uint64_t *h, char *err, size_t errlen) {
    char path[2048];
    snprintf(path, sizeof path, "%s/config.json", dir);
    if (hash_file(path, h, err, errlen)) return -1;
    char **names = safetensors_in(dir);
    if (!names) {
        snprintf(err, errlen, "%s: cannot list the folder", dir);
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; names[i] && !rc; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        rc = hash_file(path, h, err, errlen);
    }
    free_names(names);
    return rc;
}

static int is_folder(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The storage type of the first attention matrix of a GGUF or safetensors file. */
static void file_format(const char *path, char *buf, size_t size) {
    char err[256];
    gguf_file *g;
    st_file *f;
    snprintf(buf, size, "unknown");
    FILE *probe = fopen(path, "rb");
    char magic[4] = {0};
    size_t got = probe ? fread(magic, 1, 4, probe) : 0;
    if (probe) fclose(probe);
    if (got == 4 && !memcmp(magic, "GGUF", 4)) {
        if (gguf_open(path, &g, err, sizeof err)) return;
        for (size_t i = 0; i < gguf_tensor_count(g); i++) {
            const gguf_tensor *t = gguf_tensor_at(g, i);
            if (t->ndim == 2 && strstr(t->name, "attn")) {
                char other[32];
                snprintf(buf, size, "%s", gguf_tensor_type_name(t->type, other, sizeof other));
                for (char *c = buf; *c; c++) *c = (char)toupper((unsigned char)*c); /* as safetensors spells them */
                break;
            }
        }
        gguf_close(g);
    } else if (!st_open(path, &f, err, sizeof err)) {
        for (size_t i = 0; i < st_count(f); i++) {
            const st_tensor *t = st_tensor_at(f, i);
            if (t->ndim == 2 && strstr(t->name, "attn")) {
                snprintf(buf, size, "%s", t->dtype_name);
                break;
            }
        }
        st_close(f);
    }
}

void lora_base_format(const char *path, char *buf, size_t size) {
    if (!is_folder(path)) {
        file_format(path, buf, size);
        return;
    }
    char **names = safetensors_in(path);
    snprintf(buf, size, "unknown");
    if (names && names[0]) {
        char file[2048];
        snprintf(file, sizeof file, "%s/%s", path, names[0]);
        file_format(file, buf, size);
    }
    free_names(names);
}

int lora_base_trainable(gpt_model *m, char *err, size_t errlen) {
    kiln_qmatrix *q = NULL;
    for (int s = 0; s < BLOCK_SLOT_COUNT && !q; s++) q = m->blocks[0].q[s] ? m->blocks[0].q[s] : m->blocks[0].qpart[s][0];
    if (!q) return 0;
    /* a quantized product that records no backward would cut the gradient to the layers
       below: ask the engine whether it records one */
    int64_t shape[2] = {1, kiln_qmatrix_cols(q)};
    kiln_tensor *x = kiln_tensor_temp(m->ctx, m->dtype, 2, shape);
    int grad = kiln_grad_enabled(m->ctx), records = 0;
    kiln_set_grad_enabled(m->ctx, 1);
    if (x && !kiln_fill(x, 0.0f)) {
        kiln_set_requires_grad(x, 1);
        kiln_tensor *y = kiln_matmul_q(x, q, NULL);
        records = y && kiln_requires_grad(y);
    }
    kiln_set_grad_enabled(m->ctx, grad);
    kiln_step_reset(m->ctx);
    if (records) return 0;
    snprintf(err, errlen, "this build of kiln cannot backpropagate through quantized matrices, which LoRA on a "
                          "quantized base needs; use an f16 or f32 base");
    return -1;
}

int lora_base_info_of(const gpt_model *m, const tokenizer *tok, const char *path, lora_base_info *out, char *err,
                      size_t errlen) {
    memset(out, 0, sizeof *out);
    lora_family f;
    if (lora_family_of(&m->cfg, &f, err, errlen)) return -1;
    char why[256];
    const char *arch = f == LORA_FAMILY_GPT2 ? "gpt2" : gpt_llama_arch(&m->cfg, why, sizeof why);
    snprintf(out->arch, sizeof out->arch, "%s", arch ? arch : "unknown");
    const block_config *b = &m->block;
    snprintf(out->shapes, sizeof out->shapes, "n_layer=%d,n_embd=%d,n_head=%d,n_kv_head=%d,head_dim=%d,n_ffn=%d,vocab=%d",
             m->cfg.n_layer, m->cfg.n_embd, m->cfg.n_head, block_kv_heads(b), block_head_dim(b), block_ffn(b),
             m->cfg.vocab_size);
    snprintf(out->tokenizer, sizeof out->tokenizer, "none");
    if (tok) {
        size_t len;
        char *text = tokenizer_serialize(tok, &len);
        if (!text) {
            snprintf(err, errlen, "cannot serialize the base's tokenizer to fingerprint it");
            return -1;
        }
        snprintf(out->tokenizer, sizeof out->tokenizer, "%016" PRIx64, fnv1a(FNV_INIT, (unsigned char *)text, len));
        free(text);
    }
    snprintf(out->hash, sizeof out->hash, "none");
    if (path) {
        snprintf(out->path, sizeof out->path, "%s", path);
        uint64_t h = FNV_INIT;
        if (is_folder(path) ? hash_folder(path, &h, err, errlen) : hash_file(path, &h, err, errlen)) return -1;
        snprintf(out->hash, sizeof out->hash, "%016" PRIx64, h);
    }
    return 0;
}

void lora_base_to_meta(const lora_base_info *base, int with_path, block_meta_put put, void *ctx) {
    put(ctx, "kiln.base.architecture", base->arch);
    put(ctx, "kiln.base.shapes", base->shapes);
    put(ctx, "kiln.base.tokenizer", base->tokenizer);
    put(ctx, "kiln.base.hash", base->hash);
    if (with_path) put(ctx, "kiln.base.path", base->path);
}

int lora_base_check(lora_base_info *base, const char *path, block_meta_get get, void *ctx, char *err, size_t errlen) {
    if (!base) return 0;
    base->warning[0] = 0;
    const struct { const char *key, *mine; } must[] = {{"kiln.base.architecture", base->arch},
                                                       {"kiln.base.shapes", base->shapes},
                                                       {"kiln.base.tokenizer", base->tokenizer}};
    for (size_t i = 0; i < sizeof must / sizeof must[0]; i++) {
        const char *v = get(ctx, must[i].key);
        if (v && strcmp(v, must[i].mine)) {
            snprintf(err, errlen, "%s: the adapter is for another base: its %s is %.200s, the base's %s", path,
                     must[i].key + 10, v, must[i].mine);
            return -1;
        }
    }
    const char *h = get(ctx, "kiln.base.hash");
    if (h && strcmp(h, base->hash))
        snprintf(base->warning, sizeof base->warning,
                 "%.300s: the adapter was trained on another file of this model (fingerprint %.20s, this base's %.20s)",
                 path, h, base->hash);
    return 0;
}
