/* safetensors reading (validate everything first, then hand out tensors) and writing
 * (build the header, write to a temporary file, fsync, rename). See safetensors.h. */
#define _POSIX_C_SOURCE 200809L

#include "safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json.h"
#include "kiln/tensor.h" /* kiln_f16_to_f32 */

/* ---- dtypes ---- */

static const struct {
    const char *name;
    size_t size;
} dtype_table[ST_DTYPE_COUNT] = {
    [ST_BOOL] = {"BOOL", 1}, [ST_U8] = {"U8", 1},     [ST_I8] = {"I8", 1},
    [ST_F8_E5M2] = {"F8_E5M2", 1}, [ST_F8_E4M3] = {"F8_E4M3", 1},
    [ST_I16] = {"I16", 2},   [ST_U16] = {"U16", 2},   [ST_F16] = {"F16", 2},
    [ST_BF16] = {"BF16", 2}, [ST_I32] = {"I32", 4},   [ST_U32] = {"U32", 4},
    [ST_F32] = {"F32", 4},   [ST_F64] = {"F64", 8},   [ST_I64] = {"I64", 8},
    [ST_U64] = {"U64", 8},
};

int st_dtype_from_name(const char *name) {
    if (!name) return -1;
    for (int i = 0; i < ST_DTYPE_COUNT; i++)
        if (strcmp(dtype_table[i].name, name) == 0) return i;
    return -1;
}

const char *st_dtype_name(st_dtype dtype) {
    return (unsigned)dtype < ST_DTYPE_COUNT ? dtype_table[dtype].name : NULL;
}

size_t st_dtype_size(st_dtype dtype) {
    return (unsigned)dtype < ST_DTYPE_COUNT ? dtype_table[dtype].size : 0;
}

/* ---- errors ---- */

static void set_err(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* ---- the reader ---- */

struct st_file {
    unsigned char *buf; /* the whole file */
    size_t size;
    size_t data_start;  /* 8 + header length */
    json_value *header; /* names and metadata strings point into it */
    st_tensor *tensors; /* header order */
    size_t count;
    const char **meta_keys, **meta_values;
    size_t meta_count;
};

static uint64_t load_le(const unsigned char *p, int bytes) {
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

/* "[2, 3, 4]" for messages. */
static void format_shape(const st_tensor *t, char *buf, size_t cap) {
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (int d = 0; d < t->ndim && n < cap; d++)
        n += (size_t)snprintf(buf + n, cap - n, d ? ", %" PRId64 : "%" PRId64, t->shape[d]);
    if (n < cap) snprintf(buf + n, cap - n, "]");
}

/* Fills t from one header entry, checking dtype, shape and offsets against the data
 * section length. Names and dtype strings point into the JSON tree. */
static int parse_tensor_entry(const char *fname, const char *name, size_t name_len,
                              const json_value *v, uint64_t data_len, st_tensor *t, char *err,
                              size_t errlen) {
    if (strlen(name) != name_len) {
        set_err(err, errlen, "%s: a tensor name contains a NUL character", fname);
        return -1;
    }
    if (v->type != JSON_OBJECT) {
        set_err(err, errlen, "%s: tensor \"%s\" is described by a JSON %s, expected an object "
                "with dtype, shape and data_offsets", fname, name, json_type_name(v->type));
        return -1;
    }
    t->name = name;
    const char *dt = json_as_string(json_get(v, "dtype"));
    if (!dt) {
        set_err(err, errlen, "%s: tensor \"%s\" has no string \"dtype\"", fname, name);
        return -1;
    }
    int dtype = st_dtype_from_name(dt);
    if (dtype < 0) {
        set_err(err, errlen, "%s: tensor \"%s\" has unknown dtype \"%.20s\" (known: F64, F32, "
                "F16, BF16, I64, I32, I16, I8, U64, U32, U16, U8, BOOL, F8_E4M3, F8_E5M2)",
                fname, name, dt);
        return -1;
    }
    t->dtype = (st_dtype)dtype;
    t->dtype_name = dtype_table[dtype].name;

    const json_value *shape = json_get(v, "shape");
    if (!shape || shape->type != JSON_ARRAY) {
        set_err(err, errlen, "%s: tensor \"%s\" has no \"shape\" array", fname, name);
        return -1;
    }
    if (shape->count > ST_MAX_DIMS) {
        set_err(err, errlen, "%s: tensor \"%s\" has %zu dimensions, more than the %d supported",
                fname, name, shape->count, ST_MAX_DIMS);
        return -1;
    }
    t->ndim = (int)shape->count;
    int empty = 0;
    for (size_t d = 0; d < shape->count; d++) {
        int64_t dim;
        if (!json_as_int64(&shape->items[d], &dim) || dim < 0) {
            set_err(err, errlen, "%s: tensor \"%s\": shape entry %zu is not a non-negative "
                    "integer", fname, name, d);
            return -1;
        }
        t->shape[d] = dim;
        if (dim == 0) empty = 1;
    }
    /* "too big" when the byte count would overflow 64 bits; otherwise the exact count is
     * compared with the offsets below, which are bounded by the file size. */
    size_t item = dtype_table[dtype].size;
    uint64_t numel = empty ? 0 : 1;
    int too_big = 0;
    for (size_t d = 0; d < shape->count && numel && !too_big; d++) {
        uint64_t dim = (uint64_t)t->shape[d];
        if (numel > UINT64_MAX / item / dim) too_big = 1;
        else numel *= dim;
    }

    const json_value *off = json_get(v, "data_offsets");
    int64_t begin, end;
    if (!off || off->type != JSON_ARRAY || off->count != 2 ||
        !json_as_int64(&off->items[0], &begin) || !json_as_int64(&off->items[1], &end) ||
        begin < 0 || end < 0) {
        set_err(err, errlen, "%s: tensor \"%s\": \"data_offsets\" must be an array of two "
                "non-negative integers [begin, end]", fname, name);
        return -1;
    }
    char sbuf[200];
    format_shape(t, sbuf, sizeof sbuf);
    if (begin > end) {
        set_err(err, errlen, "%s: tensor \"%s\": data_offsets [%" PRId64 ", %" PRId64 "] end "
                "before they begin", fname, name, begin, end);
        return -1;
    }
    if ((uint64_t)end > data_len) {
        set_err(err, errlen, "%s: tensor \"%s\": data_offsets [%" PRId64 ", %" PRId64 "] run "
                "past the end of the data section (%" PRIu64 " bytes; file truncated?)",
                fname, name, begin, end, data_len);
        return -1;
    }
    if (too_big || numel * item != (uint64_t)(end - begin)) {
        if (too_big)
            set_err(err, errlen, "%s: tensor \"%s\": shape %s of %s needs more than 2^64 bytes",
                    fname, name, sbuf, dt);
        else
            set_err(err, errlen, "%s: tensor \"%s\": shape %s of %s needs %" PRIu64 " bytes but "
                    "data_offsets [%" PRId64 ", %" PRId64 "] span %" PRId64, fname, name, sbuf,
                    dt, numel * item, begin, end, end - begin);
        return -1;
    }
    t->numel = (int64_t)numel;
    t->nbytes = (size_t)(numel * item);
    t->offset = (uint64_t)begin;
    return 0;
}

static int parse_metadata(st_file *f, const char *fname, const json_value *m, char *err,
                          size_t errlen) {
    if (m->type != JSON_OBJECT) {
        set_err(err, errlen, "%s: \"__metadata__\" must be an object of strings, not %s %s",
                fname, m->type == JSON_ARRAY || m->type == JSON_OBJECT ? "an" : "a",
                json_type_name(m->type));
        return -1;
    }
    if (m->count == 0) return 0;
    f->meta_keys = malloc(m->count * sizeof *f->meta_keys);
    f->meta_values = malloc(m->count * sizeof *f->meta_values);
    if (!f->meta_keys || !f->meta_values) {
        set_err(err, errlen, "%s: out of memory reading the metadata", fname);
        return -1;
    }
    for (size_t i = 0; i < m->count; i++) {
        const json_value *v = &m->items[i];
        if (v->type != JSON_STRING) {
            set_err(err, errlen, "%s: metadata \"%.60s\" is a JSON %s; safetensors metadata "
                    "values must be strings", fname, m->keys[i], json_type_name(v->type));
            return -1;
        }
        if (strlen(m->keys[i]) != m->key_lens[i] || strlen(v->string) != v->string_len) {
            set_err(err, errlen, "%s: metadata \"%.60s\" contains a NUL character", fname,
                    m->keys[i]);
            return -1;
        }
        f->meta_keys[i] = m->keys[i];
        f->meta_values[i] = v->string;
    }
    f->meta_count = m->count;
    return 0;
}

static int cmp_by_offset(const void *a, const void *b) {
    const st_tensor *x = *(const st_tensor *const *)a, *y = *(const st_tensor *const *)b;
    if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
    if (x->nbytes != y->nbytes) return x->nbytes < y->nbytes ? -1 : 1;
    return 0;
}

/* The reference implementation requires the byte ranges, sorted, to tile the data section:
 * the first starts at 0, each starts where the previous ended, the last ends at the end.
 * That rules out overlaps (two tensors sharing bytes) and hidden or trailing bytes. */
static int check_tiling(const st_file *f, const char *fname, uint64_t data_len, char *err,
                        size_t errlen) {
    if (f->count == 0) {
        if (data_len != 0) {
            set_err(err, errlen, "%s: the header lists no tensors but %" PRIu64 " bytes of data "
                    "follow it", fname, data_len);
            return -1;
        }
        return 0;
    }
    const st_tensor **order = malloc(f->count * sizeof *order);
    if (!order) {
        set_err(err, errlen, "%s: out of memory", fname);
        return -1;
    }
    for (size_t i = 0; i < f->count; i++) order[i] = &f->tensors[i];
    qsort(order, f->count, sizeof *order, cmp_by_offset);
    uint64_t expect = 0;
    int rc = 0;
    for (size_t i = 0; i < f->count && rc == 0; i++) {
        const st_tensor *t = order[i];
        if (t->offset != expect) {
            if (i == 0)
                set_err(err, errlen, "%s: the first tensor's data (\"%s\") starts at byte %" PRIu64
                        " of the data section, not 0", fname, t->name, t->offset);
            else if (t->offset < expect)
                set_err(err, errlen, "%s: the data of tensors \"%s\" and \"%s\" overlap", fname,
                        order[i - 1]->name, t->name);
            else
                set_err(err, errlen, "%s: %" PRIu64 " unused bytes between the data of tensors "
                        "\"%s\" and \"%s\"", fname, t->offset - expect, order[i - 1]->name, t->name);
            rc = -1;
        }
        expect = t->offset + t->nbytes;
    }
    if (rc == 0 && expect != data_len) {
        set_err(err, errlen, "%s: the tensors cover %" PRIu64 " bytes but the data section has %"
                PRIu64 " (trailing bytes after the last tensor)", fname, expect, data_len);
        rc = -1;
    }
    free(order);
    return rc;
}

/* Takes ownership of buf (freed on failure). */
static int st_parse(unsigned char *buf, size_t size, const char *fname, st_file **out, char *err,
                    size_t errlen) {
    *out = NULL;
    if (size == 0) {
        set_err(err, errlen, "%s: file is empty (not a safetensors file)", fname);
        free(buf);
        return -1;
    }
    if (size < 8) {
        set_err(err, errlen, "%s: file is only %zu bytes; a safetensors file starts with an "
                "8-byte header length", fname, size);
        free(buf);
        return -1;
    }
    uint64_t hlen = load_le(buf, 8);
    if (hlen > ST_MAX_HEADER) {
        set_err(err, errlen, "%s: header length %" PRIu64 " is larger than the %" PRIu64 " MiB "
                "limit (not a safetensors file, or corrupted)", fname, hlen, ST_MAX_HEADER >> 20);
        free(buf);
        return -1;
    }
    if (hlen > size - 8) {
        set_err(err, errlen, "%s: header length %" PRIu64 " runs past the end of the %zu-byte "
                "file (truncated?)", fname, hlen, size);
        free(buf);
        return -1;
    }
    if (hlen < 2 || buf[8] != '{') {
        set_err(err, errlen, "%s: the header does not start with '{' (not a safetensors file)",
                fname);
        free(buf);
        return -1;
    }
    st_file *f = calloc(1, sizeof *f);
    if (!f) {
        set_err(err, errlen, "%s: out of memory", fname);
        free(buf);
        return -1;
    }
    f->buf = buf;
    f->size = size;
    f->data_start = 8 + (size_t)hlen;
    uint64_t data_len = size - f->data_start;

    char jerr[200];
    if (json_parse((const char *)buf + 8, (size_t)hlen, &f->header, jerr, sizeof jerr) != 0) {
        set_err(err, errlen, "%s: the header is not valid JSON: %s", fname, jerr);
        st_close(f);
        return -1;
    }
    const json_value *root = f->header;
    if (root->type != JSON_OBJECT) {
        set_err(err, errlen, "%s: the header is a JSON %s, expected an object", fname,
                json_type_name(root->type));
        st_close(f);
        return -1;
    }
    f->tensors = calloc(root->count ? root->count : 1, sizeof *f->tensors);
    if (!f->tensors) {
        set_err(err, errlen, "%s: out of memory", fname);
        st_close(f);
        return -1;
    }
    /* Duplicate names cannot occur here: the JSON parser rejects duplicate keys. */
    for (size_t i = 0; i < root->count; i++) {
        const char *key = root->keys[i];
        int rc;
        if (strcmp(key, "__metadata__") == 0 && root->key_lens[i] == 12) {
            rc = parse_metadata(f, fname, &root->items[i], err, errlen);
        } else {
            st_tensor *t = &f->tensors[f->count];
            rc = parse_tensor_entry(fname, key, root->key_lens[i], &root->items[i], data_len, t,
                                    err, errlen);
            if (rc == 0) {
                t->data = buf + f->data_start + t->offset;
                f->count++;
            }
        }
        if (rc != 0) {
            st_close(f);
            return -1;
        }
    }
    if (check_tiling(f, fname, data_len, err, errlen) != 0) {
        st_close(f);
        return -1;
    }
    *out = f;
    return 0;
}

/* Reads a whole regular file. */
static int read_file(const char *path, unsigned char **buf, size_t *size, char *err,
                     size_t errlen) {
    *buf = NULL;
    *size = 0;
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        set_err(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    struct stat sb;
    if (fstat(fileno(fp), &sb) != 0) {
        set_err(err, errlen, "%s: cannot stat: %s", path, strerror(errno));
        fclose(fp);
        return -1;
    }
    if (!S_ISREG(sb.st_mode)) {
        set_err(err, errlen, "%s: not a regular file%s", path,
                S_ISDIR(sb.st_mode) ? " (it is a directory)" : "");
        fclose(fp);
        return -1;
    }
    if ((uint64_t)sb.st_size > (uint64_t)SIZE_MAX - 1) {
        set_err(err, errlen, "%s: file too large for this machine's address space", path);
        fclose(fp);
        return -1;
    }
    size_t n = (size_t)sb.st_size;
    unsigned char *b = malloc(n ? n : 1);
    if (!b) {
        set_err(err, errlen, "%s: out of memory reading %zu bytes", path, n);
        fclose(fp);
        return -1;
    }
    size_t got = fread(b, 1, n, fp);
    int read_error = ferror(fp);
    fclose(fp);
    if (got != n) {
        set_err(err, errlen, "%s: %s after %zu of %zu bytes", path,
                read_error ? "read error" : "file shrank while reading", got, n);
        free(b);
        return -1;
    }
    *buf = b;
    *size = n;
    return 0;
}

int st_open(const char *path, st_file **out, char *err, size_t errlen) {
    if (!out) return -1;
    *out = NULL;
    if (!path) {
        set_err(err, errlen, "st_open: NULL path");
        return -1;
    }
    unsigned char *buf;
    size_t size;
    if (read_file(path, &buf, &size, err, errlen) != 0) return -1;
    return st_parse(buf, size, path, out, err, errlen);
}

int st_open_memory(const void *bytes, size_t size, const char *name, st_file **out, char *err,
                   size_t errlen) {
    if (!out) return -1;
    *out = NULL;
    if (!name) name = "<memory>";
    if (!bytes && size) {
        set_err(err, errlen, "%s: NULL bytes", name);
        return -1;
    }
    unsigned char *buf = malloc(size ? size : 1);
    if (!buf) {
        set_err(err, errlen, "%s: out of memory", name);
        return -1;
    }
    if (size) memcpy(buf, bytes, size);
    return st_parse(buf, size, name, out, err, errlen);
}

void st_close(st_file *f) {
    if (!f) return;
    json_free(f->header);
    free(f->tensors);
    free(f->meta_keys);
    free(f->meta_values);
    free(f->buf);
    free(f);
}

size_t st_count(const st_file *f) { return f ? f->count : 0; }

const st_tensor *st_tensor_at(const st_file *f, size_t i) {
    return f && i < f->count ? &f->tensors[i] : NULL;
}

/* Linear: checkpoints hold hundreds of tensors, and loading looks each up once. */
const st_tensor *st_find(const st_file *f, const char *name) {
    if (!f || !name) return NULL;
    for (size_t i = 0; i < f->count; i++)
        if (strcmp(f->tensors[i].name, name) == 0) return &f->tensors[i];
    return NULL;
}

const char *st_meta(const st_file *f, const char *key) {
    if (!f || !key) return NULL;
    for (size_t i = 0; i < f->meta_count; i++)
        if (strcmp(f->meta_keys[i], key) == 0) return f->meta_values[i];
    return NULL;
}

size_t st_meta_count(const st_file *f) { return f ? f->meta_count : 0; }

int st_meta_at(const st_file *f, size_t i, const char **key, const char **value) {
    if (!f || i >= f->meta_count) return -1;
    if (key) *key = f->meta_keys[i];
    if (value) *value = f->meta_values[i];
    return 0;
}

/* ---- conversions (the data is little-endian and maybe unaligned) ---- */

static float f32_from_bits(uint32_t bits) {
    float v;
    memcpy(&v, &bits, 4);
    return v;
}

/* (float)d is undefined in C for finite d beyond the float range; round those to +-inf
 * as IEEE round-to-nearest would (the cut-off is FLT_MAX plus half an ulp). */
static float f64_to_f32(double d) {
    const double cut = (double)FLT_MAX + 0x1p103;
    if (d >= cut) return f32_from_bits(0x7f800000u);
    if (d <= -cut) return f32_from_bits(0xff800000u);
    return (float)d;
}

int st_read_f32(const st_tensor *t, float *dst, size_t count) {
    if (!t || (uint64_t)count != (uint64_t)t->numel || (count && !dst)) return -1;
    const unsigned char *p = t->data;
    switch (t->dtype) {
    case ST_F32:
        for (size_t i = 0; i < count; i++) dst[i] = f32_from_bits((uint32_t)load_le(p + 4 * i, 4));
        return 0;
    case ST_F16:
        for (size_t i = 0; i < count; i++) dst[i] = kiln_f16_to_f32((uint16_t)load_le(p + 2 * i, 2));
        return 0;
    case ST_BF16: /* bf16 is the top half of an f32 */
        for (size_t i = 0; i < count; i++)
            dst[i] = f32_from_bits((uint32_t)load_le(p + 2 * i, 2) << 16);
        return 0;
    case ST_F64:
        for (size_t i = 0; i < count; i++) {
            uint64_t bits = load_le(p + 8 * i, 8);
            double d;
            memcpy(&d, &bits, 8);
            dst[i] = f64_to_f32(d);
        }
        return 0;
    default: return -1;
    }
}

int st_read_i64(const st_tensor *t, int64_t *dst, size_t count) {
    if (!t || (uint64_t)count != (uint64_t)t->numel || (count && !dst)) return -1;
    const unsigned char *p = t->data;
    size_t item = st_dtype_size(t->dtype);
    int is_signed;
    switch (t->dtype) {
    case ST_BOOL:
        for (size_t i = 0; i < count; i++) dst[i] = p[i] != 0;
        return 0;
    case ST_U8: case ST_U16: case ST_U32: case ST_U64: is_signed = 0; break;
    case ST_I8: case ST_I16: case ST_I32: case ST_I64: is_signed = 1; break;
    default: return -1;
    }
    int bits = (int)item * 8;
    for (size_t i = 0; i < count; i++) {
        uint64_t u = load_le(p + item * i, (int)item);
        if (is_signed) {
            /* sign-extend without relying on implementation-defined conversions */
            if (bits < 64 && (u >> (bits - 1)) & 1) u |= ~(uint64_t)0 << bits;
            dst[i] = u >> 63 ? -(int64_t)(~u) - 1 : (int64_t)u;
        } else {
            if (u > (uint64_t)INT64_MAX) return -1;
            dst[i] = (int64_t)u;
        }
    }
    return 0;
}

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
    if (!json_utf8_valid(name, strlen(name)))
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
    if (!json_utf8_valid(key, strlen(key)) || !json_utf8_valid(value, strlen(value)))
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

/* fsync of the directory makes the rename itself durable. It runs after the rename, when
 * the new file is already in place, so a failure here (some filesystems do not support it)
 * is not reported as a failed save. */
static void fsync_parent_dir(const char *path) {
    const char *slash = strrchr(path, '/');
    char *dir;
    if (!slash) dir = dup_str(".");
    else if (slash == path) dir = dup_str("/");
    else {
        dir = malloc((size_t)(slash - path) + 1);
        if (dir) {
            memcpy(dir, path, (size_t)(slash - path));
            dir[slash - path] = '\0';
        }
    }
    if (!dir) return;
    int fd = open(dir, O_RDONLY);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    free(dir);
}

int st_writer_save(st_writer *w, const char *path, char *err, size_t errlen) {
    if (!w || !path || !path[0]) {
        set_err(err, errlen, "st_writer_save: NULL writer or empty path");
        return -1;
    }
    if (w->error[0]) {
        set_err(err, errlen, "%s: not written: %s", path, w->error);
        return -1;
    }
    sbuf header = {0};
    if (build_header(w, &header) != 0) {
        free(header.p);
        set_err(err, errlen, "%s: out of memory building the header", path);
        return -1;
    }
    size_t tmp_len = strlen(path) + 32;
    char *tmp = malloc(tmp_len);
    if (!tmp) {
        free(header.p);
        set_err(err, errlen, "%s: out of memory", path);
        return -1;
    }
    snprintf(tmp, tmp_len, "%s.tmp.%ld", path, (long)getpid());

    const char *step = NULL;
    int saved_errno = 0;
    FILE *fp = fopen(tmp, "wb");
    if (!fp) {
        saved_errno = errno;
        set_err(err, errlen, "%s: cannot create the temporary file %s: %s", path, tmp,
                strerror(saved_errno));
        free(tmp);
        free(header.p);
        return -1;
    }
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)header.n >> (8 * i));
    if (fwrite(len8, 1, 8, fp) != 8 || fwrite(header.p, 1, header.n, fp) != header.n)
        step = "write";
    for (size_t i = 0; !step && i < w->count; i++) {
        const st_entry *e = &w->entries[i];
        if (e->nbytes && fwrite(e->data, 1, e->nbytes, fp) != e->nbytes) step = "write";
    }
    if (!step && fflush(fp) != 0) step = "write";
    if (!step && fsync(fileno(fp)) != 0) step = "fsync";
    if (step) saved_errno = errno;
    if (fclose(fp) != 0 && !step) {
        step = "close";
        saved_errno = errno;
    }
    if (!step && rename(tmp, path) != 0) {
        step = "rename";
        saved_errno = errno;
    }
    free(header.p);
    if (step) {
        remove(tmp);
        set_err(err, errlen, "%s: not saved (%s of %s failed: %s); any previous file is unchanged",
                path, step, tmp, strerror(saved_errno));
        free(tmp);
        return -1;
    }
    free(tmp);
    fsync_parent_dir(path);
    return 0;
}
