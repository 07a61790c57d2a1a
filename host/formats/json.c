/* A strict JSON parser into a tree (see json.h for what "strict" rejects).
 *
 * Recursive descent with an explicit depth limit. Every read checks the position against
 * the length first, so the input need not be NUL-terminated and a truncated document is
 * an error, never an over-read. Strings are decoded (escapes, UTF-8 validation) into
 * NUL-terminated space in chunks the document owns. */
#include "formats/json.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "formats/utf8.h"

/* Strings and keys live in chunks owned by the document, so a document of many tiny
 * strings costs a few bytes per string rather than a malloc block each. */
typedef struct chunk {
    struct chunk *next;
    size_t used, cap;
    char data[];
} chunk;

#define CHUNK_SIZE ((size_t)64 << 10)

/* What json_parse returns: the root comes first, so a json_value * to it is also a
 * pointer to the document (json_free relies on that). */
typedef struct json_doc {
    json_value root;
    chunk *chunks; /* the head has the free space */
} json_doc;

typedef struct parser {
    const char *text;
    size_t len;
    size_t pos;
    int depth;
    char *err;
    size_t errlen;
    int failed;
    json_doc *doc;
} parser;

/* Records the first error only, prefixed with the line and column of the current
 * position (both 1-based, columns counted in bytes). */
static int fail(parser *p, const char *fmt, ...) {
    if (p->failed) return -1;
    p->failed = 1;
    if (!p->err || p->errlen == 0) return -1;
    size_t line = 1, col = 1;
    size_t end = p->pos < p->len ? p->pos : p->len;
    for (size_t i = 0; i < end; i++) {
        if (p->text[i] == '\n') line++, col = 1;
        else col++;
    }
    int n = snprintf(p->err, p->errlen, "line %zu, column %zu: ", line, col);
    if (n >= 0 && (size_t)n < p->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static int at_end(const parser *p) { return p->pos >= p->len; }
static unsigned char peek(const parser *p) { return (unsigned char)p->text[p->pos]; }

static void skip_ws(parser *p) {
    while (!at_end(p)) {
        unsigned char c = peek(p);
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        p->pos++;
    }
}

/* A printable description of the byte at the current position, for messages. */
static const char *describe_here(const parser *p, char buf[16]) {
    if (at_end(p)) return "the end of the input";
    unsigned char c = peek(p);
    if (c >= 0x20 && c < 0x7f) snprintf(buf, 16, "'%c'", c);
    else snprintf(buf, 16, "byte 0x%02x", c);
    return buf;
}

static int parse_value(parser *p, json_value *out);

/* n bytes from the document's chunks, or NULL when out of memory. Large requests get a
 * chunk of their own behind the head, so the head keeps its free space. */
static char *doc_alloc(json_doc *doc, size_t n) {
    chunk *head = doc->chunks;
    if (head && head->cap - head->used >= n) {
        char *r = head->data + head->used;
        head->used += n;
        return r;
    }
    size_t cap = n > CHUNK_SIZE / 4 ? n : CHUNK_SIZE;
    chunk *c = malloc(sizeof *c + cap);
    if (!c) return NULL;
    c->cap = cap;
    c->used = n;
    if (head && cap == n) {
        c->next = head->next;
        head->next = c;
    } else {
        c->next = head;
        doc->chunks = c;
    }
    return c->data;
}

/* Returns the unused tail of the most recent doc_alloc of `had` bytes at r, which now
 * needs only `need`. */
static void doc_trim(json_doc *doc, char *r, size_t had, size_t need) {
    chunk *head = doc->chunks;
    if (head && r + had == head->data + head->used) head->used -= had - need;
}

/* ---- literals and numbers ---- */

static int parse_literal(parser *p, const char *word, json_value *out, json_type type, int b) {
    size_t n = strlen(word);
    if (p->len - p->pos < n || memcmp(p->text + p->pos, word, n) != 0)
        return fail(p, "invalid literal (expected %s)", word);
    p->pos += n;
    out->type = type;
    if (type == JSON_BOOL) out->as.boolean = b;
    return 0;
}

static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

/* Grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static int parse_number(parser *p, json_value *out) {
    size_t start = p->pos;
    int integral = 1;
    if (!at_end(p) && peek(p) == '-') p->pos++;
    if (at_end(p) || !is_digit(peek(p))) return fail(p, "expected a digit in a number");
    if (peek(p) == '0') {
        p->pos++;
        if (!at_end(p) && is_digit(peek(p))) return fail(p, "numbers may not have leading zeros");
    } else {
        while (!at_end(p) && is_digit(peek(p))) p->pos++;
    }
    if (!at_end(p) && peek(p) == '.') {
        integral = 0;
        p->pos++;
        if (at_end(p) || !is_digit(peek(p))) return fail(p, "expected a digit after '.'");
        while (!at_end(p) && is_digit(peek(p))) p->pos++;
    }
    if (!at_end(p) && (peek(p) == 'e' || peek(p) == 'E')) {
        integral = 0;
        p->pos++;
        if (!at_end(p) && (peek(p) == '+' || peek(p) == '-')) p->pos++;
        if (at_end(p) || !is_digit(peek(p))) return fail(p, "expected a digit in the exponent");
        while (!at_end(p) && is_digit(peek(p))) p->pos++;
    }
    size_t n = p->pos - start;
    const char *s = p->text + start;

    out->type = JSON_NUMBER;
    if (integral) {
        /* Exact int64 accumulation in the negative range, which is one larger. */
        int neg = s[0] == '-';
        int64_t v = 0;
        int fits = 1;
        for (size_t i = (size_t)neg; i < n; i++) {
            int d = s[i] - '0';
            if (v < (INT64_MIN + d) / 10) { fits = 0; break; }
            v = v * 10 - d;
        }
        if (fits && !neg && v == INT64_MIN) fits = 0;
        if (fits) {
            out->is_int = 1;
            out->as.integer = neg ? v : -v;
            return 0; /* exact; no double needed */
        }
    }
    /* strtod needs a terminated copy (the input is not terminated). It follows LC_NUMERIC,
     * which is "C" unless the program calls setlocale; kiln does not. */
    char small[64];
    char *buf = n < sizeof small ? small : malloc(n + 1);
    if (!buf) return fail(p, "out of memory");
    memcpy(buf, s, n);
    buf[n] = '\0';
    errno = 0;
    double d = strtod(buf, NULL);
    int range_err = errno == ERANGE && (d > 1.0 || d < -1.0);
    if (buf != small) free(buf);
    if (range_err) {
        p->pos = start;
        return fail(p, "number %.*s is out of the range of a double", (int)(n > 40 ? 40 : n), s);
    }
    out->as.number = d;
    return 0;
}

/* ---- strings ---- */

static int hex4(const char *s, unsigned *out) {
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return -1;
    }
    *out = v;
    return 0;
}

static size_t put_utf8(char *dst, unsigned cp) {
    if (cp < 0x80) {
        dst[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        dst[0] = (char)(0xc0 | (cp >> 6));
        dst[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        dst[0] = (char)(0xe0 | (cp >> 12));
        dst[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        dst[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    dst[0] = (char)(0xf0 | (cp >> 18));
    dst[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    dst[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    dst[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* Parses a string starting at the opening quote into space from the document's chunks. */
static int parse_string_raw(parser *p, char **out, size_t *out_len) {
    p->pos++; /* the opening quote */
    /* Find the closing quote first: the decoded string is never longer than the source,
     * so one allocation suffices. */
    size_t end = p->pos;
    while (end < p->len && p->text[end] != '"') end += p->text[end] == '\\' ? 2 : 1;
    if (end >= p->len) {
        p->pos = p->len;
        return fail(p, "unterminated string");
    }
    size_t cap = end - p->pos + 1;
    char *buf = doc_alloc(p->doc, cap);
    if (!buf) return fail(p, "out of memory");
    size_t n = 0;
    while (p->pos < end) {
        unsigned char c = peek(p);
        if (c == '\\') {
            /* end points at the closing quote, so pos + 1 < len holds here */
            char e = p->text[p->pos + 1];
            static const char names[] = "\"\\/bfnrt", decoded[] = "\"\\/\b\f\n\r\t";
            const char *simple = e != '\0' ? strchr(names, e) : NULL;
            if (simple) {
                buf[n++] = decoded[simple - names];
                p->pos += 2;
                continue;
            }
            if (e != 'u') return fail(p, "invalid escape sequence in a string");
            unsigned cp;
            if (end - p->pos < 6 || hex4(p->text + p->pos + 2, &cp) != 0)
                return fail(p, "\\u must be followed by 4 hex digits");
            if (cp >= 0xdc00 && cp <= 0xdfff)
                return fail(p, "unpaired low surrogate \\u%04X in a string", cp);
            if (cp >= 0xd800 && cp <= 0xdbff) {
                unsigned lo;
                if (end - p->pos < 12 || p->text[p->pos + 6] != '\\' ||
                    p->text[p->pos + 7] != 'u' || hex4(p->text + p->pos + 8, &lo) != 0 ||
                    lo < 0xdc00 || lo > 0xdfff)
                    return fail(p, "high surrogate \\u%04X is not followed by a low surrogate", cp);
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                p->pos += 6;
            }
            n += put_utf8(buf + n, cp);
            p->pos += 6;
        } else if (c < 0x20) {
            return fail(p, "raw control character 0x%02x in a string (escape it)", c);
        } else {
            uint32_t cp;
            size_t k = (size_t)utf8_decode((const uint8_t *)p->text + p->pos, end - p->pos, &cp);
            if (k == 0) return fail(p, "invalid UTF-8 in a string");
            memcpy(buf + n, p->text + p->pos, k);
            n += k;
            p->pos += k;
        }
    }
    p->pos = end + 1;
    buf[n] = '\0';
    doc_trim(p->doc, buf, cap, n + 1);
    *out = buf;
    *out_len = n;
    return 0;
}

/* ---- arrays and objects ---- */

/* Grows a parse-time array of `size`-byte slots to hold one more; *cap tracks capacity. */
static void *grow(parser *p, void *items, size_t count, size_t *cap, size_t size) {
    if (count < *cap) return items;
    size_t ncap = *cap ? *cap * 2 : 4;
    void *n = realloc(items, ncap * size);
    if (!n) return fail(p, "out of memory"), NULL;
    *cap = ncap;
    return n;
}

/* Gives back the growth slack once an array or object is complete. */
static void *shrink(void *items, size_t count, size_t size) {
    if (!items || count == 0) return items;
    void *n = realloc(items, count * size);
    return n ? n : items;
}

static int parse_array(parser *p, json_value *out) {
    size_t cap = 0;
    out->type = JSON_ARRAY;
    p->pos++; /* '[' */
    skip_ws(p);
    if (!at_end(p) && peek(p) == ']') {
        p->pos++;
        return 0;
    }
    for (;;) {
        json_value *items = grow(p, out->as.array.items, out->as.array.count, &cap, sizeof *items);
        if (!items) return -1;
        out->as.array.items = items;
        json_value *slot = &items[out->as.array.count++]; /* counted first: freed if partial */
        memset(slot, 0, sizeof *slot);
        if (parse_value(p, slot) != 0) return -1;
        skip_ws(p);
        char buf[16];
        if (!at_end(p) && peek(p) == ',') {
            p->pos++;
            continue;
        }
        if (!at_end(p) && peek(p) == ']') {
            p->pos++;
            out->as.array.items = shrink(items, out->as.array.count, sizeof *items);
            return 0;
        }
        return fail(p, "expected ',' or ']' after an array element, found %s", describe_here(p, buf));
    }
}

static int key_order(const json_member *x, const json_member *y) {
    if (x->key_len != y->key_len) return x->key_len < y->key_len ? -1 : 1;
    return memcmp(x->key, y->key, x->key_len);
}

static int member_ptr_cmp(const void *a, const void *b) {
    return key_order(*(const json_member *const *)a, *(const json_member *const *)b);
}

/* Duplicate member names: pairwise for small objects, sorted for large ones so a hostile
 * object with 10^6 members stays O(n log n). */
static int check_duplicates(parser *p, const json_value *obj) {
    size_t n = obj->as.object.count;
    const json_member *m = obj->as.object.members;
    if (n <= 16) {
        for (size_t i = 0; i < n; i++)
            for (size_t j = i + 1; j < n; j++)
                if (key_order(&m[i], &m[j]) == 0)
                    return fail(p, "duplicate key \"%.60s\" in an object", m[i].key);
        return 0;
    }
    const json_member **sorted = malloc(n * sizeof *sorted);
    if (!sorted) return fail(p, "out of memory");
    for (size_t i = 0; i < n; i++) sorted[i] = &m[i];
    qsort(sorted, n, sizeof *sorted, member_ptr_cmp);
    int rc = 0;
    for (size_t i = 1; i < n && rc == 0; i++)
        if (key_order(sorted[i - 1], sorted[i]) == 0)
            rc = fail(p, "duplicate key \"%.60s\" in an object", sorted[i]->key);
    free(sorted);
    return rc;
}

static int parse_object(parser *p, json_value *out) {
    size_t cap = 0;
    size_t open = p->pos;
    out->type = JSON_OBJECT;
    p->pos++; /* '{' */
    skip_ws(p);
    if (!at_end(p) && peek(p) == '}') {
        p->pos++;
        return 0;
    }
    for (;;) {
        char buf[16];
        skip_ws(p);
        if (at_end(p) || peek(p) != '"')
            return fail(p, "expected a string key in an object, found %s", describe_here(p, buf));
        json_member *members = grow(p, out->as.object.members, out->as.object.count, &cap,
                                    sizeof *members);
        if (!members) return -1;
        out->as.object.members = members;
        json_member *m = &members[out->as.object.count++]; /* counted first: freed if partial */
        memset(m, 0, sizeof *m);
        if (parse_string_raw(p, &m->key, &m->key_len) != 0) return -1;
        skip_ws(p);
        if (at_end(p) || peek(p) != ':')
            return fail(p, "expected ':' after an object key, found %s", describe_here(p, buf));
        p->pos++;
        if (parse_value(p, &m->value) != 0) return -1;
        skip_ws(p);
        if (!at_end(p) && peek(p) == ',') {
            p->pos++;
            continue;
        }
        if (!at_end(p) && peek(p) == '}') {
            p->pos++;
            out->as.object.members = shrink(members, out->as.object.count, sizeof *members);
            size_t close = p->pos;
            p->pos = open; /* report duplicates at the object's start */
            if (check_duplicates(p, out) != 0) return -1;
            p->pos = close;
            return 0;
        }
        return fail(p, "expected ',' or '}' after an object member, found %s", describe_here(p, buf));
    }
}

static int parse_value(parser *p, json_value *out) {
    char buf[16];
    skip_ws(p);
    if (at_end(p)) return fail(p, "expected a value, found the end of the input");
    unsigned char c = peek(p);
    if (c == '{' || c == '[') {
        if (p->depth >= JSON_MAX_DEPTH)
            return fail(p, "nesting deeper than %d levels", JSON_MAX_DEPTH);
        p->depth++;
        int rc = c == '{' ? parse_object(p, out) : parse_array(p, out);
        p->depth--;
        return rc;
    }
    if (c == '"') {
        out->type = JSON_STRING;
        return parse_string_raw(p, &out->as.string.chars, &out->as.string.len);
    }
    if (c == '-' || is_digit(c)) return parse_number(p, out);
    if (c == 't') return parse_literal(p, "true", out, JSON_BOOL, 1);
    if (c == 'f') return parse_literal(p, "false", out, JSON_BOOL, 0);
    if (c == 'n') return parse_literal(p, "null", out, JSON_NULL, 0);
    return fail(p, "expected a value, found %s", describe_here(p, buf));
}

int json_parse(const char *text, size_t len, json_value **out, char *err, size_t errlen) {
    parser p = {.text = text, .len = len, .err = err, .errlen = errlen};
    if (err && errlen) err[0] = '\0';
    if (out) *out = NULL;
    if (!out || (!text && len)) return fail(&p, "json_parse: NULL argument");
    if (len > JSON_MAX_TEXT) return fail(&p, "input of %zu bytes is larger than the limit", len);
    p.doc = calloc(1, sizeof *p.doc);
    if (!p.doc) return fail(&p, "out of memory");
    json_value *root = &p.doc->root;
    if (parse_value(&p, root) == 0) {
        skip_ws(&p);
        if (!at_end(&p)) {
            char buf[16];
            fail(&p, "unexpected %s after the value", describe_here(&p, buf));
        }
    }
    if (p.failed) {
        json_free(root);
        return -1;
    }
    *out = root;
    return 0;
}

static void free_children(json_value *v) {
    switch (v->type) {
    case JSON_STRING: break; /* in the document's chunks */
    case JSON_ARRAY:
        for (size_t i = 0; i < v->as.array.count; i++) free_children(&v->as.array.items[i]);
        free(v->as.array.items);
        break;
    case JSON_OBJECT:
        for (size_t i = 0; i < v->as.object.count; i++)
            free_children(&v->as.object.members[i].value);
        free(v->as.object.members);
        break;
    default: break;
    }
}

void json_free(json_value *root) {
    if (!root) return;
    json_doc *doc = (json_doc *)root; /* the root is the document's first member */
    free_children(root);
    for (chunk *c = doc->chunks, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    free(doc);
}

/* ---- accessors ---- */

const json_value *json_get(const json_value *obj, const char *key) {
    if (!obj || obj->type != JSON_OBJECT || !key) return NULL;
    size_t n = strlen(key);
    for (size_t i = 0; i < obj->as.object.count; i++) {
        const json_member *m = &obj->as.object.members[i];
        if (m->key_len == n && memcmp(m->key, key, n) == 0) return &m->value;
    }
    return NULL;
}

size_t json_count(const json_value *v) {
    if (!v) return 0;
    if (v->type == JSON_ARRAY) return v->as.array.count;
    if (v->type == JSON_OBJECT) return v->as.object.count;
    return 0;
}

const json_value *json_at(const json_value *v, size_t i) {
    if (i >= json_count(v)) return NULL;
    return v->type == JSON_ARRAY ? &v->as.array.items[i] : &v->as.object.members[i].value;
}

const char *json_key_at(const json_value *obj, size_t i) {
    if (!obj || obj->type != JSON_OBJECT || i >= obj->as.object.count) return NULL;
    return obj->as.object.members[i].key;
}

size_t json_key_len_at(const json_value *obj, size_t i) {
    if (!obj || obj->type != JSON_OBJECT || i >= obj->as.object.count) return 0;
    return obj->as.object.members[i].key_len;
}

int json_as_int64(const json_value *v, int64_t *out) {
    if (!v || v->type != JSON_NUMBER) return 0;
    if (v->is_int) {
        *out = v->as.integer;
        return 1;
    }
    double d = v->as.number;
    /* -2^63 is exact as a double; 2^63 is the first value that does not fit. */
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) return 0;
    int64_t i = (int64_t)d;
    if ((double)i != d) return 0;
    *out = i;
    return 1;
}

int json_as_double(const json_value *v, double *out) {
    if (!v || v->type != JSON_NUMBER) return 0;
    *out = v->is_int ? (double)v->as.integer : v->as.number;
    return 1;
}

int json_as_bool(const json_value *v, int *out) {
    if (!v || v->type != JSON_BOOL) return 0;
    *out = v->as.boolean;
    return 1;
}

const char *json_as_string(const json_value *v) {
    return v && v->type == JSON_STRING ? v->as.string.chars : NULL;
}

size_t json_string_len(const json_value *v) {
    return v && v->type == JSON_STRING ? v->as.string.len : 0;
}

const char *json_type_name(json_type type) {
    switch (type) {
    case JSON_NULL: return "null";
    case JSON_BOOL: return "boolean";
    case JSON_NUMBER: return "number";
    case JSON_STRING: return "string";
    case JSON_ARRAY: return "array";
    case JSON_OBJECT: return "object";
    }
    return "invalid";
}

/* ---- writing ---- */

/* The escape for byte c, or NULL when it passes through unchanged. */
static const char *escape_of(unsigned char c, char buf[8]) {
    switch (c) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\b': return "\\b";
    case '\f': return "\\f";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    default: break;
    }
    if (c < 0x20) {
        snprintf(buf, 8, "\\u%04x", c);
        return buf;
    }
    return NULL;
}

size_t json_escape(const char *s, char *dst, size_t cap) {
    size_t n = 0;
    char buf[8];
    /* emit one byte, keeping room for the terminator */
#define EMIT(ch)                                   \
    do {                                           \
        if (n + 1 < cap) dst[n] = (char)(ch);      \
        n++;                                       \
    } while (0)
    EMIT('"');
    for (const unsigned char *u = (const unsigned char *)(s ? s : ""); *u; u++) {
        const char *e = escape_of(*u, buf);
        if (!e) {
            EMIT(*u);
            continue;
        }
        for (; *e; e++) EMIT(*e);
    }
    EMIT('"');
#undef EMIT
    if (cap > 0) dst[n < cap ? n : cap - 1] = '\0';
    return n;
}

int json_write_string(FILE *f, const char *s) {
    char buf[8];
    if (fputc('"', f) == EOF) return -1;
    for (const unsigned char *u = (const unsigned char *)(s ? s : ""); *u; u++) {
        const char *e = escape_of(*u, buf);
        if (e ? fputs(e, f) == EOF : fputc(*u, f) == EOF) return -1;
    }
    return fputc('"', f) == EOF ? -1 : 0;
}
