/* safetensors writing: check each tensor as it is added, build the header (metadata
 * first, tensors in the order added, space padding to a multiple of 8), and replace the
 * target file atomically. See safetensors.h. */
#define _POSIX_C_SOURCE 200809L

#include "formats/safetensors.h"
#include "formats/utf8.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/error_printf.h"
#include "formats/json.h"
#include "kiln/file.h"

/* ---- the writer ---- */

typedef struct st_entry {
    char *name;
    st_dtype dtype;
    int ndim;
    int64_t shape[ST_MAX_DIMS];
    const void *data;
    void *owned; /* data, when the writer copied it */
    size_t nbytes;
} st_entry;

struct st_writer {
    st_entry *entries;
    size_t count, cap;
    char **meta_keys, **meta_values;
    size_t meta_count, meta_cap;
    char error[256]; /* the first add/meta error ("" if none) */
};

st_writer *st_writer_new(void) { return calloc(1, sizeof(st_writer)); }

void st_writer_free(st_writer *w) {
    if (!w) return;
    for (size_t i = 0; i < w->count; i++) {
        free(w->entries[i].name);
        free(w->entries[i].owned);
    }
    free(w->entries);
    for (size_t i = 0; i < w->meta_count; i++) {
        free(w->meta_keys[i]);
        free(w->meta_values[i]);
    }
    free(w->meta_keys);
    free(w->meta_values);
    free(w);
}

const char *st_writer_error(const st_writer *w) {
    if (!w) return "st_writer: NULL writer";
    return w->error[0] ? w->error : NULL;
}

static int writer_fail(st_writer *w, const char *fmt, ...) {
    if (w->error[0]) return -1; /* keep the first */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->error, sizeof w->error, fmt, ap);
    va_end(ap);
    if (!w->error[0]) snprintf(w->error, sizeof w->error, "st_writer: error");
    return -1;
}

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

static int writer_add(st_writer *w, const char *name, const char *dtype, int ndim,
                      const int64_t *shape, const void *data, size_t nbytes, int copy) {
    if (!w) return -1;
    if (!name || !name[0]) return writer_fail(w, "st_writer_add: empty tensor name");
    if (!utf8_valid(name, strlen(name)))
        return writer_fail(w, "st_writer_add: tensor name \"%.60s\" is not valid UTF-8", name);
    if (strcmp(name, "__metadata__") == 0)
        return writer_fail(w, "st_writer_add: \"__metadata__\" is reserved, not a tensor name");
    for (size_t i = 0; i < w->count; i++)
        if (strcmp(w->entries[i].name, name) == 0)
            return writer_fail(w, "st_writer_add: tensor \"%.60s\" added twice", name);
    int dt = st_dtype_from_name(dtype);
    if (dt < 0)
        return writer_fail(w, "st_writer_add: tensor \"%.60s\": unknown dtype \"%.20s\"", name,
                           dtype ? dtype : "(null)");
    if (ndim < 0 || ndim > ST_MAX_DIMS || (ndim > 0 && !shape))
        return writer_fail(w, "st_writer_add: tensor \"%.60s\": ndim %d is outside 0..%d", name,
                           ndim, ST_MAX_DIMS);
    uint64_t numel = 1;
    int overflow = 0;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0)
            return writer_fail(w, "st_writer_add: tensor \"%.60s\": negative dimension %" PRId64,
                               name, shape[d]);
        if (shape[d] && numel > UINT64_MAX / (uint64_t)shape[d]) overflow = 1;
        numel *= (uint64_t)shape[d];
    }
    size_t item = st_dtype_size((st_dtype)dt);
    if (numel == 0) overflow = 0;
    if (overflow || numel > UINT64_MAX / item || numel * item != (uint64_t)nbytes)
        return writer_fail(w, "st_writer_add: tensor \"%.60s\": %zu bytes given but the shape "
                           "of %s needs %" PRIu64, name, nbytes, dtype,
                           overflow ? UINT64_MAX : numel * item);
    if (nbytes && !data)
        return writer_fail(w, "st_writer_add: tensor \"%.60s\": NULL data", name);
    if (w->count == w->cap) {
        size_t ncap = w->cap ? 2 * w->cap : 16;
        st_entry *e = realloc(w->entries, ncap * sizeof *e);
        if (!e) return writer_fail(w, "st_writer_add: out of memory");
        w->entries = e;
        w->cap = ncap;
    }
    st_entry *e = &w->entries[w->count];
    memset(e, 0, sizeof *e);
    e->name = dup_str(name);
    if (!e->name) return writer_fail(w, "st_writer_add: out of memory");
    e->dtype = (st_dtype)dt;
    e->ndim = ndim;
    for (int d = 0; d < ndim; d++) e->shape[d] = shape[d];
    e->nbytes = nbytes;
    e->data = data;
    if (copy && nbytes) {
        e->owned = malloc(nbytes);
        if (!e->owned) {
            free(e->name);
            return writer_fail(w, "st_writer_add: out of memory copying %zu bytes of \"%.60s\"",
                               nbytes, name);
        }
        memcpy(e->owned, data, nbytes);
        e->data = e->owned;
    }
    w->count++;
    return 0;
}

int st_writer_add(st_writer *w, const char *name, const char *dtype, int ndim,
                  const int64_t *shape, const void *data, size_t nbytes) {
    return writer_add(w, name, dtype, ndim, shape, data, nbytes, 1);
}

int st_writer_add_ref(st_writer *w, const char *name, const char *dtype, int ndim,
                      const int64_t *shape, const void *data, size_t nbytes) {
    return writer_add(w, name, dtype, ndim, shape, data, nbytes, 0);
}

int st_writer_meta(st_writer *w, const char *key, const char *value) {
    if (!w) return -1;
    if (!key || !value) return writer_fail(w, "st_writer_meta: NULL key or value");
    if (!utf8_valid(key, strlen(key)) || !utf8_valid(value, strlen(value)))
        return writer_fail(w, "st_writer_meta: \"%.60s\" is not valid UTF-8", key);
    char *v = dup_str(value);
    if (!v) return writer_fail(w, "st_writer_meta: out of memory");
    for (size_t i = 0; i < w->meta_count; i++) {
        if (strcmp(w->meta_keys[i], key) == 0) {
            free(w->meta_values[i]);
            w->meta_values[i] = v;
            return 0;
        }
    }
    if (w->meta_count == w->meta_cap) {
        size_t ncap = w->meta_cap ? 2 * w->meta_cap : 8;
        char **k = realloc(w->meta_keys, ncap * sizeof *k);
        if (k) w->meta_keys = k;
        char **vv = k ? realloc(w->meta_values, ncap * sizeof *vv) : NULL;
        if (!vv) {
            free(v);
            return writer_fail(w, "st_writer_meta: out of memory");
        }
        w->meta_values = vv;
        w->meta_cap = ncap;
    }
    char *k = dup_str(key);
    if (!k) {
        free(v);
        return writer_fail(w, "st_writer_meta: out of memory");
    }
    w->meta_keys[w->meta_count] = k;
    w->meta_values[w->meta_count] = v;
    w->meta_count++;
    return 0;
}

/* A growable text buffer for the header; an allocation failure is remembered and checked
 * once at the end. */
typedef struct sbuf {
    char *p;
    size_t n, cap;
    int oom;
} sbuf;

static void sb_reserve(sbuf *b, size_t extra) {
    if (b->oom || b->n + extra + 1 <= b->cap) return;
    size_t ncap = b->cap ? b->cap : 256;
    while (ncap < b->n + extra + 1) ncap *= 2;
    char *p = realloc(b->p, ncap);
    if (!p) {
        b->oom = 1;
        return;
    }
    b->p = p;
    b->cap = ncap;
}

static void sb_printf(sbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->oom = 1;
        return;
    }
    sb_reserve(b, (size_t)n);
    if (b->oom) return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
    va_end(ap);
    b->n += (size_t)n;
}

static void sb_string(sbuf *b, const char *s) {
    size_t n = json_escape(s, NULL, 0);
    sb_reserve(b, n);
    if (b->oom) return;
    json_escape(s, b->p + b->n, b->cap - b->n);
    b->n += n;
}

/* The header JSON, padded with spaces so that 8 + its length is a multiple of 8 (the data
 * section then starts 8-aligned, as the Python library writes it). */
static int build_header(const st_writer *w, sbuf *b) {
    sb_printf(b, "{");
    int first = 1;
    if (w->meta_count) {
        sb_printf(b, "\"__metadata__\":{");
        for (size_t i = 0; i < w->meta_count; i++) {
            if (i) sb_printf(b, ",");
            sb_string(b, w->meta_keys[i]);
            sb_printf(b, ":");
            sb_string(b, w->meta_values[i]);
        }
        sb_printf(b, "}");
        first = 0;
    }
    uint64_t offset = 0;
    for (size_t i = 0; i < w->count; i++) {
        const st_entry *e = &w->entries[i];
        if (!first) sb_printf(b, ",");
        first = 0;
        sb_string(b, e->name);
        sb_printf(b, ":{\"dtype\":\"%s\",\"shape\":[", st_dtype_name(e->dtype));
        for (int d = 0; d < e->ndim; d++) sb_printf(b, d ? ",%" PRId64 : "%" PRId64, e->shape[d]);
        sb_printf(b, "],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}", offset, offset + e->nbytes);
        offset += e->nbytes;
    }
    sb_printf(b, "}");
    while (!b->oom && b->n % 8 != 0) sb_printf(b, " ");
    return b->oom ? -1 : 0;
}

/* The checks and the header shared by save and serialize; `what` names the target in
 * messages. */
static int prepare_header(const st_writer *w, const char *what, sbuf *header, char *err,
                          size_t errlen) {
    if (w->error[0]) {
        error_printf(err, errlen, "%s: not written: %s", what, w->error);
        return -1;
    }
    if (build_header(w, header) != 0) {
        free(header->p);
        error_printf(err, errlen, "%s: out of memory building the header", what);
        return -1;
    }
    if ((uint64_t)header->n > ST_MAX_HEADER) {
        free(header->p);
        error_printf(err, errlen, "%s: not written: the header would be %zu bytes, more than the %"
                     PRIu64 " MiB readers accept", what, header->n, ST_MAX_HEADER >> 20);
        return -1;
    }
    return 0;
}

int st_writer_serialize(st_writer *w, unsigned char **out, size_t *size, char *err,
                        size_t errlen) {
    if (!w || !out || !size) {
        error_printf(err, errlen, "st_writer_serialize: NULL argument");
        return -1;
    }
    *out = NULL;
    *size = 0;
    sbuf header = {0};
    if (prepare_header(w, "<memory>", &header, err, errlen) != 0) return -1;
    size_t total = 8 + header.n;
    for (size_t i = 0; i < w->count; i++) {
        if (w->entries[i].nbytes > SIZE_MAX - total) {
            free(header.p);
            error_printf(err, errlen, "<memory>: the file would not fit in memory");
            return -1;
        }
        total += w->entries[i].nbytes;
    }
    unsigned char *b = malloc(total);
    if (!b) {
        free(header.p);
        error_printf(err, errlen, "<memory>: out of memory for %zu bytes", total);
        return -1;
    }
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)((uint64_t)header.n >> (8 * i));
    memcpy(b + 8, header.p, header.n);
    size_t pos = 8 + header.n;
    for (size_t i = 0; i < w->count; i++) {
        if (w->entries[i].nbytes) memcpy(b + pos, w->entries[i].data, w->entries[i].nbytes);
        pos += w->entries[i].nbytes;
    }
    free(header.p);
    *out = b;
    *size = total;
    return 0;
}

int st_writer_save(st_writer *w, const char *path, char *err, size_t errlen) {
    return st_writer_save_keeping(w, path, NULL, err, errlen);
}

int st_writer_save_keeping(st_writer *w, const char *path, const char *previous, char *err, size_t errlen) {
    if (!w || !path || !path[0]) {
        error_printf(err, errlen, "st_writer_save: NULL writer or empty path");
        return -1;
    }
    sbuf header = {0};
    if (prepare_header(w, path, &header, err, errlen) != 0) return -1;
    kiln_file *f = kiln_file_begin_keeping(path, previous, err, errlen);
    if (!f) {
        free(header.p);
        return -1;
    }
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)header.n >> (8 * i));
    kiln_file_write(f, len8, 8);
    kiln_file_write(f, header.p, header.n);
    for (size_t i = 0; i < w->count; i++) kiln_file_write(f, w->entries[i].data, w->entries[i].nbytes);
    free(header.p);
    return kiln_file_commit(f, err, errlen) == KILN_OK ? 0 : -1;
}
