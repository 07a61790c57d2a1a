/* Fuzzes the GGUF reader: any bytes are read or refused with a message naming the file. An
 * accepted file's tensors lie inside the input and have unique names; its tensors and the
 * key-values the writer can express are written back, and must read back the same. */
#include <stdint.h>
#include <string.h>

#include "formats/gguf.h"
#include "fuzz_check.h"

static void rewrite_and_compare(const gguf_file *f) {
    gguf_writer *w = gguf_writer_new();
    for (size_t i = 0; i < gguf_kv_count(f); i++) {
        const gguf_kv *kv = gguf_kv_at(f, i);
        if (!strcmp(kv->key, "general.alignment") || !kv->key[0]) continue; /* the writer uses its own */
        if (kv->type == GGUF_STRING) FUZZ_CHECK(gguf_writer_str(w, kv->key, kv->str) == 0);
        if (kv->type == GGUF_U32) FUZZ_CHECK(gguf_writer_u32(w, kv->key, (uint32_t)kv->u) == 0);
        if (kv->type == GGUF_ARRAY && kv->elem_type == GGUF_STRING)
            FUZZ_CHECK(gguf_writer_str_array(w, kv->key, kv->strs, (size_t)kv->count) == 0);
    }
    for (size_t i = 0; i < gguf_tensor_count(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        FUZZ_CHECK(gguf_writer_tensor(w, t->name, t->type, t->ndim, t->ne, t->data, t->nbytes) == 0);
    }
    unsigned char *bytes;
    size_t size;
    char err[512];
    FUZZ_CHECK(gguf_writer_serialize(w, &bytes, &size, err, sizeof err) == 0);
    gguf_writer_free(w);
    gguf_file *g;
    if (gguf_open_memory(bytes, size, "rewritten", &g, err, sizeof err) != 0) {
        fprintf(stderr, "rewritten file refused: %s\n", err);
        abort();
    }
    FUZZ_CHECK(gguf_tensor_count(g) == gguf_tensor_count(f));
    for (size_t i = 0; i < gguf_tensor_count(f); i++) {
        const gguf_tensor *a = gguf_tensor_at(f, i), *b = gguf_tensor_at(g, i);
        FUZZ_CHECK(!strcmp(a->name, b->name) && a->type == b->type && a->ndim == b->ndim);
        FUZZ_CHECK(memcmp(a->ne, b->ne, sizeof a->ne[0] * (size_t)a->ndim) == 0);
        FUZZ_CHECK(a->nbytes == b->nbytes && memcmp(a->data, b->data, (size_t)a->nbytes) == 0);
    }
    gguf_close(g);
    free(bytes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gguf_file *f = NULL;
    char err[512];
    err[0] = '\0';
    if (gguf_open_memory(data, size, "fuzz", &f, err, sizeof err) != 0) {
        FUZZ_CHECK(f == NULL && strncmp(err, "fuzz: ", 6) == 0 && !strchr(err, '\n'));
        return 0;
    }
    for (size_t i = 0; i < gguf_tensor_count(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        uint64_t rows = 1;
        for (int d = 1; d < t->ndim; d++) rows *= (uint64_t)t->ne[d];
        FUZZ_CHECK(t->nbytes <= size && t->nbytes == gguf_row_bytes(t->type, t->ne[0]) * rows);
        FUZZ_CHECK(gguf_find_kv(f, "general.alignment") || t->offset % GGUF_DEFAULT_ALIGNMENT == 0);
        FUZZ_CHECK(gguf_find_tensor(f, t->name) == t);
    }
    for (size_t i = 0; i < gguf_kv_count(f); i++) FUZZ_CHECK(gguf_find_kv(f, gguf_kv_at(f, i)->key) == gguf_kv_at(f, i));
    rewrite_and_compare(f);
    gguf_close(f);
    return 0;
}
