/* The GGUF writer (gguf.h): version 3, the default alignment of 32 bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/error_printf.h"
#include "formats/gguf.h"
#include "kiln/file.h"

/* The bytes of the header (magic to the padding before the data), built as the values are
 * added; the tensors' data is referenced. */
typedef struct wtensor {
    char *name;
    int type, ndim;
    int64_t ne[GGUF_MAX_DIMS];
    const void *data;
    uint64_t nbytes, offset;
} wtensor;

struct gguf_writer {
    unsigned char *kv; /* the key-values, serialized */
    size_t kv_len, kv_cap;
    uint64_t n_kv;
    wtensor *tensors;
    size_t n_tensors, cap_tensors;
    uint64_t data_len; /* the data section so far, each tensor padded to the alignment */
    char error[256];
    int oom;
};

gguf_writer *gguf_writer_new(void) { return calloc(1, sizeof(gguf_writer)); }

void gguf_writer_free(gguf_writer *w) {
    if (!w) return;
    for (size_t i = 0; i < w->n_tensors; i++) free(w->tensors[i].name);
    free(w->tensors);
    free(w->kv);
    free(w);
}

static int refuse(gguf_writer *w, const char *fmt, const char *what) {
    if (!w->error[0]) snprintf(w->error, sizeof w->error, fmt, what);
    return -1;
}

static void put(gguf_writer *w, const void *bytes, size_t n) {
    if (w->oom || n == 0) return; /* nothing to copy (bytes may be NULL: no key-values yet) */
    if (w->kv_len + n > w->kv_cap) {
        size_t cap = w->kv_cap ? w->kv_cap : 256;
        while (cap < w->kv_len + n) cap *= 2;
        unsigned char *grown = realloc(w->kv, cap);
        if (!grown) {
            w->oom = 1;
            return;
        }
        w->kv = grown;
        w->kv_cap = cap;
    }
    memcpy(w->kv + w->kv_len, bytes, n);
    w->kv_len += n;
}

static void put_le(gguf_writer *w, uint64_t v, int n) {
    unsigned char b[8];
    for (int i = 0; i < n; i++) b[i] = (unsigned char)(v >> (8 * i));
    put(w, b, (size_t)n);
}

static void put_string(gguf_writer *w, const char *s) {
    size_t n = strlen(s);
    put_le(w, n, 8);
    put(w, s, n);
}

static int begin_kv(gguf_writer *w, const char *key, gguf_type type) {
    if (!w || !key || !key[0]) return w ? refuse(w, "%s", "a key-value without a key") : -1;
    put_string(w, key);
    put_le(w, (uint64_t)type, 4);
    w->n_kv++;
    return 0;
}

int gguf_writer_str(gguf_writer *w, const char *key, const char *value) {
    if (!value) return refuse(w, "%s: no value", key);
    if (begin_kv(w, key, GGUF_STRING)) return -1;
    put_string(w, value);
    return 0;
}

int gguf_writer_u32(gguf_writer *w, const char *key, uint32_t value) {
    if (begin_kv(w, key, GGUF_U32)) return -1;
    put_le(w, value, 4);
    return 0;
}

int gguf_writer_i32(gguf_writer *w, const char *key, int32_t value) {
    if (begin_kv(w, key, GGUF_I32)) return -1;
    put_le(w, (uint32_t)value, 4);
    return 0;
}

int gguf_writer_f32(gguf_writer *w, const char *key, float value) {
    uint32_t bits;
    memcpy(&bits, &value, 4);
    if (begin_kv(w, key, GGUF_F32)) return -1;
    put_le(w, bits, 4);
    return 0;
}

int gguf_writer_bool(gguf_writer *w, const char *key, int value) {
    if (begin_kv(w, key, GGUF_BOOL)) return -1;
    put_le(w, value ? 1 : 0, 1);
    return 0;
}

int gguf_writer_str_array(gguf_writer *w, const char *key, const char *const *values, size_t count) {
    if (begin_kv(w, key, GGUF_ARRAY)) return -1;
    put_le(w, GGUF_STRING, 4);
    put_le(w, count, 8);
    for (size_t i = 0; i < count; i++) put_string(w, values[i] ? values[i] : "");
    return 0;
}

int gguf_writer_i32_array(gguf_writer *w, const char *key, const int32_t *values, size_t count) {
    if (begin_kv(w, key, GGUF_ARRAY)) return -1;
    put_le(w, GGUF_I32, 4);
    put_le(w, count, 8);
    for (size_t i = 0; i < count; i++) put_le(w, (uint32_t)values[i], 4);
    return 0;
}

int gguf_writer_f32_array(gguf_writer *w, const char *key, const float *values, size_t count) {
    if (begin_kv(w, key, GGUF_ARRAY)) return -1;
    put_le(w, GGUF_F32, 4);
    put_le(w, count, 8);
    for (size_t i = 0; i < count; i++) {
        uint32_t bits;
        memcpy(&bits, &values[i], 4);
        put_le(w, bits, 4);
    }
    return 0;
}

int gguf_writer_tensor(gguf_writer *w, const char *name, int type, int ndim, const int64_t *ne, const void *data,
                       uint64_t nbytes) {
    if (!w) return -1;
    if (!name || !name[0] || ndim < 1 || ndim > GGUF_MAX_DIMS || !ne || (!data && nbytes))
        return refuse(w, "tensor %s: a bad name, dimension count or data", name ? name : "(null)");
    uint64_t rows = 1;
    for (int d = 1; d < ndim; d++) rows *= ne[d] > 0 ? (uint64_t)ne[d] : 0;
    uint64_t row = gguf_row_bytes(type, ne[0]);
    if (!row || !rows || nbytes != row * rows)
        return refuse(w, "tensor %s: its bytes are not whole rows of its type and shape", name);
    if (w->n_tensors == w->cap_tensors) {
        size_t cap = w->cap_tensors ? 2 * w->cap_tensors : 64;
        wtensor *grown = realloc(w->tensors, cap * sizeof *grown);
        if (!grown) return w->oom = 1, -1;
        w->tensors = grown;
        w->cap_tensors = cap;
    }
    wtensor *t = &w->tensors[w->n_tensors];
    size_t len = strlen(name);
    if (!(t->name = malloc(len + 1))) return w->oom = 1, -1;
    memcpy(t->name, name, len + 1);
    t->type = type;
    t->ndim = ndim;
    memcpy(t->ne, ne, (size_t)ndim * sizeof *ne);
    t->data = data;
    t->nbytes = nbytes;
    t->offset = w->data_len;
    w->data_len += (nbytes + GGUF_DEFAULT_ALIGNMENT - 1) / GGUF_DEFAULT_ALIGNMENT * GGUF_DEFAULT_ALIGNMENT;
    w->n_tensors++;
    return 0;
}

/* The whole header: magic, version, counts, the key-values, the tensor infos, padding. */
static int build_header(gguf_writer *w, const char *what, unsigned char **out, size_t *len, char *err, size_t errlen) {
    if (w->error[0] || w->oom) {
        error_printf(err, errlen, "%s: not written: %s", what, w->oom ? "out of memory" : w->error);
        return -1;
    }
    gguf_writer h = {0}; /* a scratch writer: its kv buffer collects the header */
    put(&h, "GGUF", 4);
    put_le(&h, 3, 4);
    put_le(&h, w->n_tensors, 8);
    put_le(&h, w->n_kv, 8);
    put(&h, w->kv, w->kv_len);
    for (size_t i = 0; i < w->n_tensors; i++) {
        const wtensor *t = &w->tensors[i];
        put_string(&h, t->name);
        put_le(&h, (uint64_t)t->ndim, 4);
        for (int d = 0; d < t->ndim; d++) put_le(&h, (uint64_t)t->ne[d], 8);
        put_le(&h, (uint64_t)t->type, 4);
        put_le(&h, t->offset, 8);
    }
    static const unsigned char zeros[GGUF_DEFAULT_ALIGNMENT] = {0};
    put(&h, zeros, (GGUF_DEFAULT_ALIGNMENT - h.kv_len % GGUF_DEFAULT_ALIGNMENT) % GGUF_DEFAULT_ALIGNMENT);
    if (h.oom) {
        free(h.kv);
        error_printf(err, errlen, "%s: out of memory building the header", what);
        return -1;
    }
    *out = h.kv;
    *len = h.kv_len;
    return 0;
}

/* Writes the header and the padded data through `emit`. */
static void emit_all(gguf_writer *w, const unsigned char *header, size_t len, void (*emit)(void *, const void *, size_t),
                     void *sink) {
    static const unsigned char zeros[GGUF_DEFAULT_ALIGNMENT] = {0};
    emit(sink, header, len);
    for (size_t i = 0; i < w->n_tensors; i++) {
        const wtensor *t = &w->tensors[i];
        emit(sink, t->data, (size_t)t->nbytes);
        emit(sink, zeros, (size_t)((GGUF_DEFAULT_ALIGNMENT - t->nbytes % GGUF_DEFAULT_ALIGNMENT) % GGUF_DEFAULT_ALIGNMENT));
    }
}

static void to_file(void *sink, const void *data, size_t n) { kiln_file_write(sink, data, n); }

int gguf_writer_save(gguf_writer *w, const char *path, char *err, size_t errlen) {
    unsigned char *header;
    size_t len;
    if (build_header(w, path, &header, &len, err, errlen)) return -1;
    kiln_file *f = kiln_file_begin(path, err, errlen);
    if (!f) {
        free(header);
        return -1;
    }
    emit_all(w, header, len, to_file, f);
    free(header);
    return kiln_file_commit(f, err, errlen) == KILN_OK ? 0 : -1;
}

typedef struct membuf {
    unsigned char *p;
    size_t n;
} membuf;

static void to_memory(void *sink, const void *data, size_t n) {
    membuf *m = sink;
    if (n) memcpy(m->p + m->n, data, n);
    m->n += n;
}

int gguf_writer_serialize(gguf_writer *w, unsigned char **out, size_t *size, char *err, size_t errlen) {
    unsigned char *header;
    size_t len;
    *out = NULL;
    *size = 0;
    if (build_header(w, "<memory>", &header, &len, err, errlen)) return -1;
    membuf m = {.p = malloc(len + (size_t)w->data_len + 1)};
    if (!m.p) {
        free(header);
        error_printf(err, errlen, "<memory>: out of memory");
        return -1;
    }
    emit_all(w, header, len, to_memory, &m);
    free(header);
    *out = m.p;
    *size = m.n;
    return 0;
}
