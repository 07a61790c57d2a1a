/* A small, strict JSON parser (RFC 8259) into a tree, and a string escaper for writers.
 *
 * Strict means: exactly one value, no trailing commas, no comments, no NaN/Infinity, no
 * leading zeros, strings must be valid UTF-8 without raw control characters, \u escapes
 * must form valid code points (lone surrogates are rejected), and an object may not name a
 * key twice (safetensors relies on that: a duplicated tensor name is an error, not "last one
 * wins"). The parser never reads past `len` bytes and never recurses deeper than
 * JSON_MAX_DEPTH, so it is safe on hostile input.
 *
 * The tree is read-only for callers; everything belongs to the root and is released by
 * json_free(root). */
#ifndef KILN_HOST_FORMATS_JSON_H
#define KILN_HOST_FORMATS_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Nesting deeper than this ([[[[...) is an error rather than a stack overflow. */
#define JSON_MAX_DEPTH 64
/* Inputs larger than this are refused outright (callers cap far lower, e.g. safetensors). */
#define JSON_MAX_TEXT ((size_t)1 << 30)

typedef enum json_type {
    JSON_NULL = 0,
    JSON_BOOL,
    JSON_NUMBER,
    JSON_STRING,
    JSON_ARRAY,
    JSON_OBJECT
} json_type;

typedef struct json_value json_value;
typedef struct json_member json_member;

/* One node: 24 bytes, and strings live in chunks owned by the root, so even a hostile
 * document ("[0,0,0,...]", measured) needs at most about 13 times its size in memory.
 * Prefer the accessors below to the union. */
struct json_value {
    json_type type;
    int is_int; /* JSON_NUMBER: 1 when the literal is an integer that fits int64 (as.integer
                 * holds it exactly), 0 when as.number holds it */
    union {
        int boolean;    /* JSON_BOOL: 0 or 1 */
        double number;  /* JSON_NUMBER with is_int == 0 */
        int64_t integer; /* JSON_NUMBER with is_int == 1 */
        struct {
            char *chars; /* UTF-8, NUL-terminated (and may contain \u0000 as a 0 byte) */
            size_t len;  /* in bytes, without the terminator */
        } string;
        struct {
            size_t count;
            json_value *items;
        } array;
        struct {
            size_t count;
            json_member *members; /* in document order */
        } object;
    } as;
};

struct json_member {
    char *key; /* NUL-terminated */
    size_t key_len;
    json_value value;
};

/* Parses text[0..len). On success stores the root in *out and returns 0. On failure
 * returns -1, sets *out to NULL and writes a one-line message such as
 * "line 3, column 14: expected ',' or '}' after an object member" into err (if err is not
 * NULL and errlen > 0). */
int json_parse(const char *text, size_t len, json_value **out, char *err, size_t errlen);
void json_free(json_value *root);

/* The member named `key` of an object, or NULL (also when obj is not an object or NULL). */
const json_value *json_get(const json_value *obj, const char *key);
/* Number of elements of an array or members of an object; 0 for anything else. */
size_t json_count(const json_value *v);
/* Element i of an array or member value i of an object, or NULL when out of range. */
const json_value *json_at(const json_value *v, size_t i);
/* Member name i of an object, or NULL; json_key_len_at gives its length in bytes (which
 * differs from strlen when it contains \u0000), 0 when out of range. */
const char *json_key_at(const json_value *obj, size_t i);
size_t json_key_len_at(const json_value *obj, size_t i);

/* Conversions: return 1 and store the value when v has the right type and the value fits,
 * 0 otherwise (v may be NULL). json_as_int64 accepts integer literals that fit int64 and
 * number literals with an integral value that fits exactly (1e3 -> 1000); 1.5 is refused.
 * json_as_double accepts every number (large integers are rounded to a double). */
int json_as_int64(const json_value *v, int64_t *out);
int json_as_double(const json_value *v, double *out);
int json_as_bool(const json_value *v, int *out);
/* The string of a JSON_STRING, or NULL for any other type; json_string_len gives its
 * length in bytes (which differs from strlen when it contains \u0000; 0 for non-strings). */
const char *json_as_string(const json_value *v);
size_t json_string_len(const json_value *v);
/* A short name for a type: "null", "boolean", "number", "string", "array", "object". */
const char *json_type_name(json_type type);

/* Writes s as a quoted JSON string: '"' and '\' are escaped, control characters become
 * \n, \t, ... or \u00XX; other bytes (UTF-8) pass through. Returns 0, or -1 on a write
 * error. */
int json_write_string(FILE *f, const char *s);
/* The same into a buffer, snprintf-style: writes at most cap bytes (NUL-terminated when
 * cap > 0) and returns the length the full escaped string needs, quotes included,
 * terminator excluded. */
size_t json_escape(const char *s, char *dst, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
