/* Fuzzes json_parse: any input is parsed or refused with a message, never a crash or an
 * over-read; an accepted tree is walked through every accessor, and every string survives
 * json_escape -> json_parse unchanged. */
#include <stdint.h>
#include <string.h>

#include "formats/json.h"
#include "formats/utf8.h"
#include "fuzz_check.h"

static void check_string_round_trip(const char *s, size_t len) {
    if (strlen(s) != len) return; /* an embedded \u0000 cannot pass through a C string */
    size_t need = json_escape(s, NULL, 0);
    char *buf = malloc(need + 1);
    FUZZ_CHECK(json_escape(s, buf, need + 1) == need);
    json_value *v;
    char err[128];
    FUZZ_CHECK(json_parse(buf, need, &v, err, sizeof err) == 0);
    FUZZ_CHECK(json_string_len(v) == len && memcmp(json_as_string(v), s, len) == 0);
    json_free(v);
    free(buf);
}

static void walk(const json_value *v, int depth) {
    FUZZ_CHECK(depth <= JSON_MAX_DEPTH + 1);
    int64_t i;
    double d;
    switch (v->type) {
    case JSON_NUMBER:
        FUZZ_CHECK(json_as_double(v, &d));
        if (json_as_int64(v, &i) && v->is_int) FUZZ_CHECK(i == v->as.integer);
        break;
    case JSON_STRING:
        FUZZ_CHECK(json_as_string(v)[json_string_len(v)] == '\0');
        FUZZ_CHECK(utf8_valid(json_as_string(v), json_string_len(v)));
        check_string_round_trip(json_as_string(v), json_string_len(v));
        break;
    case JSON_OBJECT:
        for (size_t k = 0; k < json_count(v); k++) {
            const char *key = json_key_at(v, k);
            FUZZ_CHECK(key && utf8_valid(key, json_key_len_at(v, k)));
            /* keys are unique, so a lookup finds this very member (unless a NUL hides
             * the rest of the key from json_get) */
            if (strlen(key) == json_key_len_at(v, k)) FUZZ_CHECK(json_get(v, key) == json_at(v, k));
            walk(json_at(v, k), depth + 1);
        }
        FUZZ_CHECK(json_at(v, json_count(v)) == NULL && json_key_at(v, json_count(v)) == NULL);
        break;
    case JSON_ARRAY:
        for (size_t k = 0; k < json_count(v); k++) walk(json_at(v, k), depth + 1);
        FUZZ_CHECK(json_at(v, json_count(v)) == NULL);
        break;
    default: break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    json_value *v = NULL;
    char err[256];
    err[0] = '\0';
    if (json_parse((const char *)data, size, &v, err, sizeof err) == 0) {
        FUZZ_CHECK(v != NULL);
        walk(v, 0);
        json_free(v);
    } else {
        FUZZ_CHECK(v == NULL && strncmp(err, "line ", 5) == 0);
    }
    return 0;
}
