/* The GGUF reader (gguf.h). Every length and count is checked against the bytes left before
 * it is used, so no value in the file decides an allocation or a read on its own. */
#include "formats/gguf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/error_printf.h"
#include "formats/file_map.h"
#include "formats/file_open.h"

/* ggml's type names by number (ggml.h, enum ggml_type), for messages about types kiln does
 * not read; NULL where ggml has retired a number. */
static const char *const ggml_type_names[] = {
    "f32",  "f16",  "q4_0", "q4_1", NULL,    NULL,    "q5_0", "q5_1", "q8_0", "q8_1",  "q2_K",  "q3_K",
    "q4_K", "q5_K", "q6_K", "q8_K", "iq2_xxs", "iq2_xs", "iq3_xxs", "iq1_s", "iq4_nl", "iq3_s", "iq2_s",
    "iq4_xs", "i8", "i16", "i32", "i64", "f64", "iq1_m", "bf16", NULL, NULL, NULL, "tq1_0", "tq2_0", NULL, NULL,
    NULL, "mxfp4"};

const char *gguf_tensor_type_name(int type, char *buf, size_t size) {
    if (type >= 0 && type < (int)(sizeof ggml_type_names / sizeof ggml_type_names[0]) && ggml_type_names[type])
        return ggml_type_names[type];
    snprintf(buf, size, "type %d", type);
    return buf;
}

/* Values per block and bytes per block of the types kiln reads (0: not one of them): ggml's
 * block sizes (ggml-common.h; kiln/quant.h holds the same layouts, and the host test checks
 * both agree). */
static int block_shape(int type, int *values, int *bytes) {
    switch (type) {
    case GGML_TYPE_F32: *values = 1, *bytes = 4; return 1;
    case GGML_TYPE_F16: *values = 1, *bytes = 2; return 1;
    case GGML_TYPE_BF16: *values = 1, *bytes = 2; return 1;
    case GGML_TYPE_Q8_0: *values = 32, *bytes = 34; return 1;
    case GGML_TYPE_Q4_0: *values = 32, *bytes = 18; return 1;
    case GGML_TYPE_Q4_1: *values = 32, *bytes = 20; return 1;
    case GGML_TYPE_Q5_0: *values = 32, *bytes = 22; return 1;
    case GGML_TYPE_Q5_1: *values = 32, *bytes = 24; return 1;
    case GGML_TYPE_Q4_K: *values = 256, *bytes = 144; return 1;
    case GGML_TYPE_Q5_K: *values = 256, *bytes = 176; return 1;
    case GGML_TYPE_Q6_K: *values = 256, *bytes = 210; return 1;
    default: return 0;
    }
}

uint64_t gguf_row_bytes(int type, int64_t n) {
    int values, bytes;
    if (!block_shape(type, &values, &bytes) || n <= 0 || n % values) return 0;
    return (uint64_t)(n / values) * (uint64_t)bytes;
}

struct gguf_file {
    file_map map;       /* the file, mapped (formats/file_map.h) */
    unsigned char *buf; /* map.bytes */
    size_t size;
    char *name;
    uint32_t version;
    gguf_kv *kvs;
    size_t n_kv;
    gguf_tensor *tensors;
    size_t n_tensors;
    void **owned; /* strings and string tables, freed by gguf_close */
    size_t n_owned, cap_owned;
};

typedef struct cursor {
    const unsigned char *p;
    size_t left;
    gguf_file *f;
    char *err;
    size_t errlen;
} cursor;

static int fail(cursor *c, const char *fmt, const char *what) {
    char msg[256];
    snprintf(msg, sizeof msg, fmt, what);
    error_printf(c->err, c->errlen, "%s: %s (not a valid GGUF file)", c->f->name, msg);
    return -1;
}

static int take(cursor *c, size_t n, const unsigned char **at, const char *what) {
    if (n > c->left) return fail(c, "the file ends inside %s", what);
    *at = c->p;
    c->p += n;
    c->left -= n;
    return 0;
}

static uint64_t le(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static int read_u32(cursor *c, uint32_t *v, const char *what) {
    const unsigned char *p;
    if (take(c, 4, &p, what)) return -1;
    *v = (uint32_t)le(p, 4);
    return 0;
}

static int read_u64(cursor *c, uint64_t *v, const char *what) {
    const unsigned char *p;
    if (take(c, 8, &p, what)) return -1;
    *v = le(p, 8);
    return 0;
}

static void *own(gguf_file *f, void *p) {
    if (!p) return NULL;
    if (f->n_owned == f->cap_owned) {
        size_t cap = f->cap_owned ? 2 * f->cap_owned : 64;
        void **grown = realloc(f->owned, cap * sizeof *grown);
        if (!grown) {
            free(p);
            return NULL;
        }
        f->owned = grown;
        f->cap_owned = cap;
    }
    return f->owned[f->n_owned++] = p;
}

/* A GGUF string (u64 length, bytes) as a NUL-terminated copy; `no_nul`: refuse a NUL inside
 * (keys and tensor names are C strings to everyone who reads them). */
static int read_string(cursor *c, const char **out, int no_nul, const char *what) {
    uint64_t len;
    const unsigned char *p;
    if (read_u64(c, &len, what) || len > c->left || take(c, (size_t)len, &p, what)) return fail(c, "%s is cut short", what);
    if (no_nul && memchr(p, 0, (size_t)len)) return fail(c, "%s holds a NUL byte", what);
    char *s = own(c->f, malloc((size_t)len + 1));
    if (!s) return fail(c, "out of memory for %s", what);
    memcpy(s, p, (size_t)len);
    s[len] = '\0';
    *out = s;
    return 0;
}

static size_t scalar_size(gguf_type t) {
    static const size_t sizes[GGUF_TYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    return (int)t >= 0 && t < GGUF_TYPE_COUNT ? sizes[t] : 0;
}

/* A scalar of type t at p, widened into kv's i / u / f. */
static void widen(gguf_kv *kv, gguf_type t, const unsigned char *p) {
    uint64_t raw = le(p, (int)scalar_size(t));
    switch (t) {
    case GGUF_I8: kv->i = (int8_t)raw; break;
    case GGUF_I16: kv->i = (int16_t)raw; break;
    case GGUF_I32: kv->i = (int32_t)raw; break;
    case GGUF_I64: kv->i = (int64_t)raw; break;
    case GGUF_F32: {
        uint32_t bits = (uint32_t)raw;
        float v;
        memcpy(&v, &bits, 4);
        kv->f = v;
        return;
    }
    case GGUF_F64: memcpy(&kv->f, &raw, 8); return;
    default: kv->u = raw; kv->i = (int64_t)raw; return;
    }
    kv->u = kv->i < 0 ? 0 : (uint64_t)kv->i;
}

static int read_value(cursor *c, gguf_kv *kv) {
    uint32_t type;
    if (read_u32(c, &type, "a value type")) return -1;
    if (type >= GGUF_TYPE_COUNT) return fail(c, "the value of %s has an unknown type", kv->key);
    kv->type = (gguf_type)type;
    const unsigned char *p;
    if (kv->type == GGUF_STRING) return read_string(c, &kv->str, 0, kv->key);
    if (kv->type != GGUF_ARRAY) {
        if (take(c, scalar_size(kv->type), &p, kv->key)) return -1;
        widen(kv, kv->type, p);
        return 0;
    }
    uint32_t elem;
    if (read_u32(c, &elem, kv->key) || read_u64(c, &kv->count, kv->key)) return -1;
    if (elem >= GGUF_TYPE_COUNT || elem == GGUF_ARRAY)
        return fail(c, "the array %s holds arrays or values of an unknown type", kv->key);
    kv->elem_type = (gguf_type)elem;
    if (kv->elem_type == GGUF_STRING) {
        if (kv->count > c->left / 8) return fail(c, "the array %s counts more strings than the file holds", kv->key);
        const char **strs = own(c->f, malloc((size_t)(kv->count ? kv->count : 1) * sizeof *strs));
        if (!strs) return fail(c, "out of memory for %s", kv->key);
        for (uint64_t i = 0; i < kv->count; i++)
            if (read_string(c, &strs[i], 0, kv->key)) return -1;
        kv->strs = strs;
        return 0;
    }
    size_t size = scalar_size(kv->elem_type);
    if (kv->count > c->left / size) return fail(c, "the array %s counts more values than the file holds", kv->key);
    if (take(c, (size_t)kv->count * size, &p, kv->key)) return -1;
    kv->data = p;
    return 0;
}

static int read_kvs(cursor *c, uint64_t n) {
    gguf_file *f = c->f;
    /* the smallest key-value: an empty key (8), a type (4) and a u8 (1) */
    if (n > c->left / 13) return fail(c, "it counts more key-values than the file holds%s", "");
    f->kvs = calloc((size_t)(n ? n : 1), sizeof *f->kvs);
    if (!f->kvs) return fail(c, "out of memory for the key-values%s", "");
    for (uint64_t i = 0; i < n; i++) {
        gguf_kv *kv = &f->kvs[i];
        if (read_string(c, &kv->key, 1, "a key")) return -1;
        if (gguf_find_kv(f, kv->key)) return fail(c, "the key %s appears twice", kv->key);
        f->n_kv++;
        if (read_value(c, kv)) return -1;
    }
    return 0;
}

static int read_tensor_infos(cursor *c, uint64_t n) {
    gguf_file *f = c->f;
    /* the smallest tensor info: an empty name (8), n_dims (4), one dimension (8), a type (4), an offset (8) */
    if (n > c->left / 32) return fail(c, "it counts more tensors than the file holds%s", "");
    f->tensors = calloc((size_t)(n ? n : 1), sizeof *f->tensors);
    if (!f->tensors) return fail(c, "out of memory for the tensors%s", "");
    for (uint64_t i = 0; i < n; i++) {
        gguf_tensor *t = &f->tensors[i];
        uint32_t ndim, type;
        if (read_string(c, &t->name, 1, "a tensor name")) return -1;
        /* a tensor is found by its name; the writer refuses an empty one, so a file the reader
         * accepts can always be written back */
        if (!t->name[0]) {
            char number[24];
            snprintf(number, sizeof number, "%llu", (unsigned long long)i + 1);
            return fail(c, "tensor number %s has an empty name", number);
        }
        if (gguf_find_tensor(f, t->name)) return fail(c, "the tensor %s appears twice", t->name);
        f->n_tensors++;
        if (read_u32(c, &ndim, t->name)) return -1;
        if (ndim < 1 || ndim > GGUF_MAX_DIMS) return fail(c, "the tensor %s does not have 1 to 4 dimensions", t->name);
        t->ndim = (int)ndim;
        uint64_t numel = 1;
        for (uint32_t d = 0; d < ndim; d++) {
            uint64_t ne;
            if (read_u64(c, &ne, t->name)) return -1;
            if (ne < 1 || ne > ((uint64_t)1 << 40) || numel > ((uint64_t)1 << 50) / ne)
                return fail(c, "the tensor %s has a dimension of 0 or too many values", t->name);
            numel *= ne;
            t->ne[d] = (int64_t)ne;
        }
        if (read_u32(c, &type, t->name) || read_u64(c, &t->offset, t->name)) return -1;
        t->type = (int)type;
        char name[32];
        int values, bytes;
        if (!block_shape(t->type, &values, &bytes)) {
            error_printf(c->err, c->errlen,
                         "%s: the tensor %s is %s, which kiln does not read (it reads f32, f16, bf16, q8_0, q4_0, "
                         "q4_1, q5_0, q5_1, q4_K, q5_K and q6_K)",
                         f->name, t->name, gguf_tensor_type_name(t->type, name, sizeof name));
            return -1;
        }
        if (t->ne[0] % values) {
            error_printf(c->err, c->errlen, "%s: a row of the tensor %s (%s, %lld values) is not a whole number of its "
                         "type's blocks of %d values", f->name, t->name, gguf_tensor_type_name(t->type, name, sizeof name),
                         (long long)t->ne[0], values);
            return -1;
        }
        t->nbytes = numel / (uint64_t)values * (uint64_t)bytes;
    }
    return 0;
}

static int by_offset(const void *a, const void *b) {
    const gguf_tensor *x = *(const gguf_tensor *const *)a, *y = *(const gguf_tensor *const *)b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* The alignment, the data section, and every tensor's bytes inside it, aligned, apart. */
static int place_tensors(cursor *c) {
    gguf_file *f = c->f;
    uint64_t alignment = GGUF_DEFAULT_ALIGNMENT;
    const gguf_kv *a = gguf_find_kv(f, "general.alignment");
    if (a) {
        if (a->type != GGUF_U32 || a->u == 0 || (a->u & (a->u - 1)))
            return fail(c, "general.alignment is not a power of two (u32)%s", "");
        alignment = a->u;
    }
    size_t header = f->size - c->left;
    uint64_t start = (header + alignment - 1) / alignment * alignment;
    uint64_t data_size = start <= f->size ? f->size - start : 0;
    gguf_tensor **order = malloc((f->n_tensors ? f->n_tensors : 1) * sizeof *order);
    if (!order) return fail(c, "out of memory%s", "");
    int rc = 0;
    for (size_t i = 0; i < f->n_tensors && rc == 0; i++) {
        gguf_tensor *t = &f->tensors[i];
        order[i] = t;
        if (t->offset % alignment) rc = fail(c, "the tensor %s is not at an aligned offset", t->name);
        else if (t->offset > data_size || t->nbytes > data_size - t->offset)
            rc = fail(c, "the tensor %s lies beyond the end of the file", t->name);
        else t->data = f->buf + start + t->offset;
    }
    if (rc == 0 && f->n_tensors > 1) {
        qsort(order, f->n_tensors, sizeof *order, by_offset);
        for (size_t i = 1; i < f->n_tensors && rc == 0; i++)
            if (order[i]->offset < order[i - 1]->offset + order[i - 1]->nbytes)
                rc = fail(c, "the tensor %s overlaps another", order[i]->name);
    }
    free(order);
    return rc;
}

/* Reads a file from the map, which it takes over (closed on failure with the rest). */
static int gguf_parse(file_map *map, const char *name, gguf_file **out, char *err, size_t errlen) {
    *out = NULL;
    gguf_file *f = calloc(1, sizeof *f);
    size_t name_len = strlen(name);
    if (!f || !(f->name = malloc(name_len + 1))) {
        free(f);
        file_map_close(map);
        error_printf(err, errlen, "%s: out of memory", name);
        return -1;
    }
    memcpy(f->name, name, name_len + 1);
    f->map = *map;
    f->buf = map->bytes;
    f->size = map->size;
    size_t size = f->size;
    cursor c = {.p = f->buf, .left = size, .f = f, .err = err, .errlen = errlen};
    const unsigned char *magic;
    uint64_t n_tensors, n_kv;
    if (size < 4) { /* not even the magic: say so rather than which part is missing */
        error_printf(err, errlen, "%s: too short to be a GGUF file (%zu byte%s)", name, size,
                     size == 1 ? "" : "s");
        gguf_close(f);
        return -1;
    }
    int rc = take(&c, 4, &magic, "the magic") || memcmp(magic, "GGUF", 4) ? fail(&c, "it does not start with GGUF%s", "")
                                                                         : 0;
    if (rc == 0) rc = read_u32(&c, &f->version, "the version");
    if (rc == 0 && (f->version < 2 || f->version > 3))
        rc = fail(&c, "its version is not 2 or 3%s", "");
    if (rc == 0) rc = read_u64(&c, &n_tensors, "the tensor count") || read_u64(&c, &n_kv, "the key-value count");
    if (rc == 0) rc = read_kvs(&c, n_kv);
    if (rc == 0) rc = read_tensor_infos(&c, n_tensors);
    if (rc == 0) rc = place_tensors(&c);
    if (rc) {
        /* keys and tensor names come from the file: whatever they hold, the message stays
           one line of printable text */
        for (char *p = err; p && errlen && *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
        gguf_close(f);
        return -1;
    }
    *out = f;
    return 0;
}

int gguf_open_memory(const void *bytes, size_t size, const char *name, gguf_file **out, char *err, size_t errlen) {
    *out = NULL;
    unsigned char *copy = malloc(size ? size : 1);
    if (!copy) {
        error_printf(err, errlen, "%s: out of memory", name ? name : "<memory>");
        return -1;
    }
    if (size) memcpy(copy, bytes, size);
    file_map map;
    file_map_adopt(&map, copy, size);
    return gguf_parse(&map, name ? name : "<memory>", out, err, errlen);
}

int gguf_open(const char *path, gguf_file **out, char *err, size_t errlen) {
    file_map map;
    *out = NULL;
    if (file_map_open(path, "a GGUF file", &map, err, errlen)) return -1;
    return gguf_parse(&map, path, out, err, errlen);
}

void gguf_drop(const gguf_file *f, const void *p, size_t n) { file_map_drop(&f->map, p, n); }

void gguf_close(gguf_file *f) {
    if (!f) return;
    for (size_t i = 0; i < f->n_owned; i++) free(f->owned[i]);
    free(f->owned);
    free(f->kvs);
    free(f->tensors);
    file_map_close(&f->map);
    free(f->name);
    free(f);
}

uint32_t gguf_version(const gguf_file *f) { return f->version; }
size_t gguf_kv_count(const gguf_file *f) { return f->n_kv; }
const gguf_kv *gguf_kv_at(const gguf_file *f, size_t i) { return i < f->n_kv ? &f->kvs[i] : NULL; }
size_t gguf_tensor_count(const gguf_file *f) { return f->n_tensors; }
const gguf_tensor *gguf_tensor_at(const gguf_file *f, size_t i) { return i < f->n_tensors ? &f->tensors[i] : NULL; }

const gguf_kv *gguf_find_kv(const gguf_file *f, const char *key) {
    for (size_t i = 0; i < f->n_kv; i++)
        if (!strcmp(f->kvs[i].key, key)) return &f->kvs[i];
    return NULL;
}

const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name) {
    for (size_t i = 0; i < f->n_tensors; i++)
        if (!strcmp(f->tensors[i].name, name)) return &f->tensors[i];
    return NULL;
}

static const gguf_kv *need(const gguf_file *f, const char *key, char *err, size_t errlen) {
    const gguf_kv *kv = gguf_find_kv(f, key);
    if (!kv) error_printf(err, errlen, "%s: %s is missing", f->name, key);
    return kv;
}

int gguf_get_uint(const gguf_file *f, const char *key, uint64_t *out, char *err, size_t errlen) {
    const gguf_kv *kv = need(f, key, err, errlen);
    if (!kv) return -1;
    int integer = kv->type <= GGUF_I32 || kv->type == GGUF_U64 || kv->type == GGUF_I64;
    if (!integer || kv->i < 0) {
        error_printf(err, errlen, "%s: %s is not a non-negative integer", f->name, key);
        return -1;
    }
    *out = kv->u;
    return 0;
}

int gguf_get_float(const gguf_file *f, const char *key, double *out, char *err, size_t errlen) {
    const gguf_kv *kv = need(f, key, err, errlen);
    if (!kv) return -1;
    if (kv->type != GGUF_F32 && kv->type != GGUF_F64) {
        error_printf(err, errlen, "%s: %s is not a float", f->name, key);
        return -1;
    }
    *out = kv->f;
    return 0;
}

int gguf_get_string(const gguf_file *f, const char *key, const char **out, char *err, size_t errlen) {
    const gguf_kv *kv = need(f, key, err, errlen);
    if (!kv) return -1;
    if (kv->type != GGUF_STRING) {
        error_printf(err, errlen, "%s: %s is not a string", f->name, key);
        return -1;
    }
    *out = kv->str;
    return 0;
}
