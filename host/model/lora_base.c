/* The base an adapter belongs to (model/lora.h's lora_base_info): its architecture, shapes,
 * tokenizer and a hash of its bytes, which an adapter records and a load checks. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

/* A folder's config.json and its *.safetensors in name order. */
static int hash_folder(const char *dir, uint64_t *h, char *err, size_t errlen) {
    char path[2048];
    snprintf(path, sizeof path, "%s/config.json", dir);
    if (hash_file(path, h, err, errlen)) return -1;
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(err, errlen, "%s: cannot list the folder", dir);
        return -1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 12 || strcmp(e->d_name + len - 12, ".safetensors")) continue;
        if (n == cap) {
            char **grown = realloc(names, (cap = cap ? 2 * cap : 8) * sizeof *names);
            if (!grown) break;
            names = grown;
        }
        if (!(names[n] = strdup(e->d_name))) break;
        n++;
    }
    closedir(d);
    if (names) qsort(names, n, sizeof *names, by_name);
    for (size_t i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (!rc) rc = hash_file(path, h, err, errlen);
        free(names[i]);
    }
    free(names);
    return rc;
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
        struct stat st;
        uint64_t h = FNV_INIT;
        int folder = stat(path, &st) == 0 && S_ISDIR(st.st_mode);
        if (folder ? hash_folder(path, &h, err, errlen) : hash_file(path, &h, err, errlen)) return -1;
        snprintf(out->hash, sizeof out->hash, "%016" PRIx64, h);
    }
    return 0;
}
