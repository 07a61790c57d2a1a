/* safetensors reading: validate everything first, then hand out tensors; dtype names and
 * conversions. The writer is in safetensors_write.c. See safetensors.h. */
#define _POSIX_C_SOURCE 200809L

#include "formats/safetensors.h"

#include <float.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/error_printf.h"
#include "formats/file_map.h"
#include "formats/file_open.h"
#include "formats/json.h"
#include "kiln/tensor.h" /* kiln_f16_to_f32 */

/* ---- dtypes ---- */

static const struct {
    const char *name;
    size_t size;
} dtype_table[ST_DTYPE_COUNT] = {
    [ST_BOOL] = {.name = "BOOL", .size = 1},
    [ST_U8] = {.name = "U8", .size = 1},
    [ST_I8] = {.name = "I8", .size = 1},
    [ST_F8_E5M2] = {.name = "F8_E5M2", .size = 1},
    [ST_F8_E4M3] = {.name = "F8_E4M3", .size = 1},
    [ST_I16] = {.name = "I16", .size = 2},
    [ST_U16] = {.name = "U16", .size = 2},
    [ST_F16] = {.name = "F16", .size = 2},
    [ST_BF16] = {.name = "BF16", .size = 2},
    [ST_I32] = {.name = "I32", .size = 4},
    [ST_U32] = {.name = "U32", .size = 4},
    [ST_F32] = {.name = "F32", .size = 4},
    [ST_F64] = {.name = "F64", .size = 8},
    [ST_I64] = {.name = "I64", .size = 8},
    [ST_U64] = {.name = "U64", .size = 8},
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

/* ---- the reader ---- */

struct st_file {
    file_map map;       /* the whole file, mapped (formats/file_map.h) */
    unsigned char *buf; /* map.bytes */
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

/* A header entry's checks, in the order the reader makes them. Each takes the file's name,
 * the tensor's name and the caller's err; names and dtype strings point into the JSON tree. */

/* The entry is an object (and its name has no NUL) with a known "dtype". */
static int entry_dtype(const char *fname, const char *name, size_t name_len, const json_value *v,
                       st_tensor *t, char *err, size_t errlen) {
    if (strlen(name) != name_len) {
        error_printf(err, errlen, "%s: a tensor name contains a NUL character", fname);
        return -1;
    }
    if (v->type != JSON_OBJECT) {
        error_printf(err, errlen, "%s: tensor \"%s\" is described by a JSON %s, expected an object "
                     "with dtype, shape and data_offsets", fname, name, json_type_name(v->type));
        return -1;
    }
    t->name = name;
    const char *dt = json_as_string(json_get(v, "dtype"));
    if (!dt) {
        error_printf(err, errlen, "%s: tensor \"%s\" has no string \"dtype\"", fname, name);
        return -1;
    }
    int dtype = st_dtype_from_name(dt);
    if (dtype < 0) {
        error_printf(err, errlen, "%s: tensor \"%s\" has unknown dtype \"%.20s\" (known: F64, F32, "
                     "F16, BF16, I64, I32, I16, I8, U64, U32, U16, U8, BOOL, F8_E4M3, F8_E5M2)",
                     fname, name, dt);
        return -1;
    }
    t->dtype = (st_dtype)dtype;
    t->dtype_name = dtype_table[dtype].name;
    return 0;
}

/* "shape": at most ST_MAX_DIMS non-negative integers. */
static int entry_shape(const char *fname, const char *name, const json_value *v, st_tensor *t,
                       char *err, size_t errlen) {
    const json_value *shape = json_get(v, "shape");
    if (!shape || shape->type != JSON_ARRAY) {
        error_printf(err, errlen, "%s: tensor \"%s\" has no \"shape\" array", fname, name);
        return -1;
    }
    size_t ndim = json_count(shape);
    if (ndim > ST_MAX_DIMS) {
        error_printf(err, errlen, "%s: tensor \"%s\" has %zu dimensions, more than the %d supported",
                     fname, name, ndim, ST_MAX_DIMS);
        return -1;
    }
    t->ndim = (int)ndim;
    for (size_t d = 0; d < ndim; d++) {
        int64_t dim;
        if (!json_as_int64(json_at(shape, d), &dim) || dim < 0) {
            error_printf(err, errlen, "%s: tensor \"%s\": shape entry %zu is not a non-negative "
                         "integer", fname, name, d);
            return -1;
        }
        t->shape[d] = dim;
    }
    return 0;
}

/* The element count of t's shape in *numel; 1 when its bytes would overflow 64 bits ("too
 * big"), else 0. The exact byte count is compared with the offsets, which are bounded by
 * the file size. */
static int count_elements(const st_tensor *t, uint64_t *numel) {
    size_t item = dtype_table[t->dtype].size;
    *numel = 1;
    for (int d = 0; d < t->ndim; d++)
        if (t->shape[d] == 0) *numel = 0;
    for (int d = 0; d < t->ndim && *numel; d++) {
        uint64_t dim = (uint64_t)t->shape[d];
        if (*numel > UINT64_MAX / item / dim) return 1;
        *numel *= dim;
    }
    return 0;
}

/* "data_offsets": [begin, end] inside the data section, spanning exactly the shape's bytes. */
static int entry_offsets(const char *fname, const char *name, const json_value *v, uint64_t data_len,
                         st_tensor *t, char *err, size_t errlen) {
    size_t item = dtype_table[t->dtype].size;
    const char *dt = t->dtype_name;
    uint64_t numel;
    int too_big = count_elements(t, &numel);
    const json_value *off = json_get(v, "data_offsets");
    int64_t begin, end;
    if (!off || off->type != JSON_ARRAY || json_count(off) != 2 ||
        !json_as_int64(json_at(off, 0), &begin) || !json_as_int64(json_at(off, 1), &end) ||
        begin < 0 || end < 0) {
        error_printf(err, errlen, "%s: tensor \"%s\": \"data_offsets\" must be an array of two "
                     "non-negative integers [begin, end]", fname, name);
        return -1;
    }
    char sbuf[200];
    format_shape(t, sbuf, sizeof sbuf);
    if (begin > end) {
        error_printf(err, errlen, "%s: tensor \"%s\": data_offsets [%" PRId64 ", %" PRId64 "] end "
                     "before they begin", fname, name, begin, end);
        return -1;
    }
    if ((uint64_t)end > data_len) {
        error_printf(err, errlen, "%s: tensor \"%s\": data_offsets [%" PRId64 ", %" PRId64 "] run "
                     "past the end of the data section (%" PRIu64 " bytes; file truncated?)",
                     fname, name, begin, end, data_len);
        return -1;
    }
    if (too_big || numel * item != (uint64_t)(end - begin)) {
        if (too_big)
            error_printf(err, errlen, "%s: tensor \"%s\": shape %s of %s needs more than 2^64 bytes",
                         fname, name, sbuf, dt);
        else
            error_printf(err, errlen, "%s: tensor \"%s\": shape %s of %s needs %" PRIu64 " bytes but "
                         "data_offsets [%" PRId64 ", %" PRId64 "] span %" PRId64, fname, name, sbuf,
                         dt, numel * item, begin, end, end - begin);
        return -1;
    }
    t->numel = (int64_t)numel;
    t->nbytes = (size_t)(numel * item);
    t->offset = (uint64_t)begin;
    return 0;
}

/* Fills t from one header entry, checking dtype, shape and offsets against the data
 * section length. */
static int parse_tensor_entry(const char *fname, const char *name, size_t name_len,
                              const json_value *v, uint64_t data_len, st_tensor *t, char *err,
                              size_t errlen) {
    if (entry_dtype(fname, name, name_len, v, t, err, errlen)) return -1;
    if (entry_shape(fname, name, v, t, err, errlen)) return -1;
    return entry_offsets(fname, name, v, data_len, t, err, errlen);
}

static int parse_metadata(st_file *f, const char *fname, const json_value *m, char *err,
                          size_t errlen) {
    if (m->type != JSON_OBJECT) {
        error_printf(err, errlen, "%s: \"__metadata__\" must be an object of strings, not %s %s",
                     fname, m->type == JSON_ARRAY || m->type == JSON_OBJECT ? "an" : "a",
                     json_type_name(m->type));
        return -1;
    }
    size_t n = json_count(m);
    if (n == 0) return 0;
    f->meta_keys = malloc(n * sizeof *f->meta_keys);
    f->meta_values = malloc(n * sizeof *f->meta_values);
    if (!f->meta_keys || !f->meta_values) {
        error_printf(err, errlen, "%s: out of memory reading the metadata", fname);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        const json_value *v = json_at(m, i);
        const char *key = json_key_at(m, i), *value = json_as_string(v);
        if (v->type != JSON_STRING) {
            error_printf(err, errlen, "%s: metadata \"%.60s\" is a JSON %s; safetensors metadata "
                         "values must be strings", fname, key, json_type_name(v->type));
            return -1;
        }
        if (strlen(key) != json_key_len_at(m, i) || strlen(value) != json_string_len(v)) {
            error_printf(err, errlen, "%s: metadata \"%.60s\" contains a NUL character", fname, key);
            return -1;
        }
        f->meta_keys[i] = key;
        f->meta_values[i] = value;
    }
    f->meta_count = n;
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
            error_printf(err, errlen, "%s: the header lists no tensors but %" PRIu64 " bytes of data "
                         "follow it", fname, data_len);
            return -1;
        }
        return 0;
    }
    const st_tensor **order = malloc(f->count * sizeof *order);
    if (!order) {
        error_printf(err, errlen, "%s: out of memory", fname);
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
                error_printf(err, errlen, "%s: the first tensor's data (\"%s\") starts at byte %" PRIu64
                             " of the data section, not 0", fname, t->name, t->offset);
            else if (t->offset < expect)
                error_printf(err, errlen, "%s: the data of tensors \"%s\" and \"%s\" overlap", fname,
                             order[i - 1]->name, t->name);
            else
                error_printf(err, errlen, "%s: %" PRIu64 " unused bytes between the data of tensors "
                             "\"%s\" and \"%s\"", fname, t->offset - expect, order[i - 1]->name, t->name);
            rc = -1;
        }
        expect = t->offset + t->nbytes;
    }
    if (rc == 0 && expect != data_len) {
        error_printf(err, errlen, "%s: the tensors cover %" PRIu64 " bytes but the data section has %"
                     PRIu64 " (trailing bytes after the last tensor)", fname, expect, data_len);
        rc = -1;
    }
    free(order);
    return rc;
}

/* The 8-byte header length and what it promises: *hlen bytes of a JSON object within the file.
 * 0, or -1 with err. */
static int check_framing(const unsigned char *buf, size_t size, const char *fname, uint64_t *hlen,
                         char *err, size_t errlen) {
    if (size == 0) {
        error_printf(err, errlen, "%s: file is empty (not a safetensors file)", fname);
        return -1;
    }
    if (size < 8) {
        error_printf(err, errlen, "%s: file is only %zu bytes; a safetensors file starts with an "
                     "8-byte header length", fname, size);
        return -1;
    }
    *hlen = load_le(buf, 8);
    if (*hlen > ST_MAX_HEADER) {
        error_printf(err, errlen, "%s: header length %" PRIu64 " is larger than the %" PRIu64 " MiB "
                     "limit (not a safetensors file, or corrupted)", fname, *hlen, ST_MAX_HEADER >> 20);
        return -1;
    }
    if (*hlen > size - 8) {
        error_printf(err, errlen, "%s: header length %" PRIu64 " runs past the end of the %zu-byte "
                     "file (truncated?)", fname, *hlen, size);
        return -1;
    }
    if (*hlen == 0) {
        error_printf(err, errlen, "%s: the header length is 0 (not a safetensors file)", fname);
        return -1;
    }
    if (buf[8] != '{') {
        error_printf(err, errlen, "%s: the header does not start with '{' (not a safetensors file)",
                     fname);
        return -1;
    }
    return 0;
}

/* The JSON header of f (hlen bytes after the length): its tensor entries and metadata. */
static int parse_header(st_file *f, const char *fname, uint64_t hlen, char *err, size_t errlen) {
    uint64_t data_len = f->size - f->data_start;
    char jerr[200];
    if (json_parse((const char *)f->buf + 8, (size_t)hlen, &f->header, jerr, sizeof jerr) != 0) {
        error_printf(err, errlen, "%s: the header is not valid JSON: %s", fname, jerr);
        return -1;
    }
    const json_value *root = f->header;
    if (root->type != JSON_OBJECT) {
        error_printf(err, errlen, "%s: the header is a JSON %s, expected an object", fname,
                     json_type_name(root->type));
        return -1;
    }
    size_t entries = json_count(root);
    f->tensors = calloc(entries ? entries : 1, sizeof *f->tensors);
    if (!f->tensors) {
        error_printf(err, errlen, "%s: out of memory", fname);
        return -1;
    }
    /* Duplicate names cannot occur here: the JSON parser rejects duplicate keys. */
    for (size_t i = 0; i < entries; i++) {
        const char *key = json_key_at(root, i);
        if (strcmp(key, "__metadata__") == 0 && json_key_len_at(root, i) == 12) {
            if (parse_metadata(f, fname, json_at(root, i), err, errlen) != 0) return -1;
            continue;
        }
        st_tensor *t = &f->tensors[f->count];
        if (parse_tensor_entry(fname, key, json_key_len_at(root, i), json_at(root, i), data_len, t,
                               err, errlen) != 0)
            return -1;
        t->data = f->buf + f->data_start + t->offset;
        f->count++;
    }
    return 0;
}

/* Takes ownership of the map (closed on failure). */
static int st_parse(file_map *map, const char *fname, st_file **out, char *err, size_t errlen) {
    *out = NULL;
    uint64_t hlen;
    if (check_framing(map->bytes, map->size, fname, &hlen, err, errlen) != 0) {
        file_map_close(map);
        return -1;
    }
    st_file *f = calloc(1, sizeof *f);
    if (!f) {
        error_printf(err, errlen, "%s: out of memory", fname);
        file_map_close(map);
        return -1;
    }
    f->map = *map;
    f->buf = map->bytes;
    f->size = map->size;
    f->data_start = 8 + (size_t)hlen;
    if (parse_header(f, fname, hlen, err, errlen) != 0 ||
        check_tiling(f, fname, f->size - f->data_start, err, errlen) != 0) {
        st_close(f);
        return -1;
    }
    *out = f;
    return 0;
}

int st_open(const char *path, st_file **out, char *err, size_t errlen) {
    if (!out) return -1;
    *out = NULL;
    if (!path) {
        error_printf(err, errlen, "st_open: NULL path");
        return -1;
    }
    struct stat sb;
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) { /* pipes and devices too: a checkpoint is a file */
        error_printf(err, errlen, "%s: not a regular file%s", path, S_ISDIR(sb.st_mode) ? " (it is a directory)" : "");
        return -1;
    }
    file_map map;
    if (file_map_open(path, "", &map, err, errlen) != 0) return -1;
    return st_parse(&map, path, out, err, errlen);
}

void st_drop(const st_file *f, const void *p, size_t n) { file_map_drop(&f->map, p, n); }

int st_open_memory(const void *bytes, size_t size, const char *name, st_file **out, char *err,
                   size_t errlen) {
    if (!out) return -1;
    *out = NULL;
    if (!name) name = "<memory>";
    if (!bytes && size) {
        error_printf(err, errlen, "%s: NULL bytes", name);
        return -1;
    }
    unsigned char *buf = malloc(size ? size : 1);
    if (!buf) {
        error_printf(err, errlen, "%s: out of memory", name);
        return -1;
    }
    if (size) memcpy(buf, bytes, size);
    file_map map;
    file_map_adopt(&map, buf, size);
    return st_parse(&map, name, out, err, errlen);
}

void st_close(st_file *f) {
    if (!f) return;
    json_free(f->header);
    free(f->tensors);
    free(f->meta_keys);
    free(f->meta_values);
    file_map_close(&f->map);
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
