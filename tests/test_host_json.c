/* The host's strict JSON parser: values, escapes, exact integers, every kind of malformed
 * input (each must be an error with a position, never a crash or an over-read), and the
 * string escaper round-tripping through the parser. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "formats/json.h"
#include "formats/utf8.h"
#include "testutil.h"

/* Parses exactly len bytes from a heap copy of just that size, so ASan catches any read
 * past the end (the parser must not rely on a terminator). */
static int parse_exact(const char *text, size_t len, json_value **out, char *err, size_t errlen) {
    char *copy = malloc(len ? len : 1);
    ck_assert_ptr_nonnull(copy);
    memcpy(copy, text, len);
    int rc = json_parse(copy, len, out, err, errlen);
    free(copy);
    return rc;
}

static json_value *parse_ok(const char *text) {
    json_value *v = NULL;
    char err[256];
    int rc = parse_exact(text, strlen(text), &v, err, sizeof err);
    ck_assert_msg(rc == 0, "parse of <%s> failed: %s", text, err);
    ck_assert_ptr_nonnull(v);
    return v;
}

START_TEST(parses_values) {
    json_value *v = parse_ok(" {\"a\": [1, -2.5, true, false, null], \"b\": {\"c\": \"x\"},"
                             " \"e\": {}, \"f\": []}\n");
    ck_assert_int_eq(v->type, JSON_OBJECT);
    ck_assert_uint_eq(json_count(v), 4);
    ck_assert_str_eq(json_key_at(v, 0), "a");
    ck_assert_str_eq(json_key_at(v, 3), "f");
    ck_assert_ptr_null(json_key_at(v, 4));
    const json_value *a = json_get(v, "a");
    ck_assert_int_eq(a->type, JSON_ARRAY);
    ck_assert_uint_eq(json_count(a), 5);
    int64_t i;
    double d;
    ck_assert(json_as_int64(json_at(a, 0), &i) && i == 1);
    ck_assert(json_as_double(json_at(a, 1), &d) && d == -2.5);
    ck_assert(!json_as_int64(json_at(a, 1), &i));
    int b;
    ck_assert(json_as_bool(json_at(a, 2), &b) && b == 1);
    ck_assert(json_as_bool(json_at(a, 3), &b) && b == 0);
    ck_assert(!json_as_bool(json_at(a, 4), &b));
    ck_assert_int_eq(json_at(a, 4)->type, JSON_NULL);
    ck_assert_ptr_null(json_at(a, 5));
    ck_assert_str_eq(json_as_string(json_get(json_get(v, "b"), "c")), "x");
    ck_assert_ptr_null(json_as_string(json_get(v, "a")));
    ck_assert_ptr_null(json_get(v, "missing"));
    ck_assert_ptr_null(json_get(a, "a")); /* not an object */
    ck_assert_uint_eq(json_count(json_get(v, "e")), 0);
    ck_assert_uint_eq(json_count(json_get(v, "f")), 0);
    ck_assert_uint_eq(json_count(json_at(a, 0)), 0);
    ck_assert_uint_eq(json_key_len_at(v, 0), 1);
    ck_assert_uint_eq(json_key_len_at(v, 9), 0);
    ck_assert_str_eq(json_type_name(JSON_OBJECT), "object");
    json_free(v);

    /* scalars at the top level */
    v = parse_ok("\"top\"");
    ck_assert_str_eq(json_as_string(v), "top");
    json_free(v);
    v = parse_ok("0");
    ck_assert(json_as_int64(v, &i) && i == 0);
    json_free(v);
}
END_TEST

START_TEST(integers_are_exact) {
    json_value *v = parse_ok("[9223372036854775807, -9223372036854775808, 9223372036854775808,"
                             " 1e3, 1.5, -0, 12345678901234567, 2.5e-3, 1E+2]");
    int64_t i;
    double d;
    ck_assert(json_as_int64(json_at(v, 0), &i) && i == INT64_MAX);
    ck_assert(json_as_int64(json_at(v, 1), &i) && i == INT64_MIN);
    ck_assert(!json_as_int64(json_at(v, 2), &i)); /* 2^63 does not fit */
    ck_assert(json_as_double(json_at(v, 2), &d) && d == 9223372036854775808.0);
    ck_assert(json_as_int64(json_at(v, 3), &i) && i == 1000);
    ck_assert(!json_as_int64(json_at(v, 4), &i));
    ck_assert(json_as_int64(json_at(v, 5), &i) && i == 0);
    /* exact although not representable as a double */
    ck_assert(json_as_int64(json_at(v, 6), &i) && i == 12345678901234567LL);
    ck_assert(json_as_double(json_at(v, 7), &d) && d == 2.5e-3);
    ck_assert(json_as_int64(json_at(v, 8), &i) && i == 100);
    ck_assert(json_as_double(json_at(v, 0), &d) && d == 9223372036854775807.0);
    ck_assert(json_as_double(json_at(v, 6), &d) && d == 12345678901234567.0);
    ck_assert(!json_as_int64(NULL, &i));
    json_free(v);
}
END_TEST

START_TEST(string_escapes_decode_to_utf8) {
    json_value *v = parse_ok("[\"q\\\"b\\\\s\\/\\b\\f\\n\\r\\t\", \"\\u00e9\\u20AC\", "
                             "\"\\ud83d\\ude00\", \"a\\u0000b\", \"\xc3\xa9 \xf0\x9f\x98\x80\"]");
    ck_assert_str_eq(json_as_string(json_at(v, 0)), "q\"b\\s/\b\f\n\r\t");
    ck_assert_str_eq(json_as_string(json_at(v, 1)), "\xc3\xa9\xe2\x82\xac");
    ck_assert_str_eq(json_as_string(json_at(v, 2)), "\xf0\x9f\x98\x80");
    const json_value *nul = json_at(v, 3);
    ck_assert_uint_eq(json_string_len(nul), 3);
    ck_assert(memcmp(json_as_string(nul), "a\0b", 4) == 0);
    ck_assert_str_eq(json_as_string(json_at(v, 4)), "\xc3\xa9 \xf0\x9f\x98\x80");
    json_free(v);
}
END_TEST

/* Each must fail with a message; none may crash or read out of bounds (ASan build). */
static const char *const bad_inputs[] = {
    "", " ", "{", "}", "[", "[1,]", "[,1]", "{\"a\":1,}", "{\"a\" 1}", "{\"a\":}", "{1:2}",
    "{a:1}", "[1 2]", "01", "-01", "1.", ".5", "+1", "1e", "1e+", "-", "--1", "NaN",
    "Infinity", "-Infinity", "tru", "nul", "falsey", "True", "\"abc", "\"\\x\"", "\"\\u12\"",
    "\"\\u12g4\"", "\"\\ud800\"", "\"\\udc00\"", "\"\\ud800\\u0041\"", "\"\\ud800\\\"",
    "\"a\tb\"", "\"a\nb\"", "\"\xff\"", "\"\xc0\xaf\"", "\"\xed\xa0\x80\"",
    "\"\xf4\x90\x80\x80\"", "\"\xe2\x82\"", "\"\x80\"", "{} x", "[] []", "/* c */ 1",
    "[1] // c", "{\"a\":1,\"a\":2}", "1e999", "-1e999", "\xef\xbb\xbf{}", "'a'", "[\"\\",
    "\"\\", "[1,", "{\"a\"", "{\"a\":1", "nulll"};

START_TEST(rejects_malformed_input) {
    for (size_t k = 0; k < sizeof bad_inputs / sizeof bad_inputs[0]; k++) {
        json_value *v = (json_value *)1;
        char err[256] = "";
        int rc = parse_exact(bad_inputs[k], strlen(bad_inputs[k]), &v, err, sizeof err);
        ck_assert_msg(rc == -1, "input %zu <%s> was accepted", k, bad_inputs[k]);
        ck_assert_ptr_null(v);
        ck_assert_msg(strncmp(err, "line ", 5) == 0, "input %zu: message <%s>", k, err);
    }
}
END_TEST

START_TEST(errors_say_where_and_what) {
    json_value *v;
    char err[256];
    const char *text = "{\n  \"a\": x}";
    ck_assert_int_eq(parse_exact(text, strlen(text), &v, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "line 2, column 8") && strstr(err, "'x'"), "%s", err);
    text = "{\"name\": 1, \"name\": 2}";
    ck_assert_int_eq(parse_exact(text, strlen(text), &v, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "duplicate key \"name\""), "%s", err);
    /* a small error buffer truncates, never overflows */
    char tiny[8];
    ck_assert_int_eq(parse_exact(text, strlen(text), &v, tiny, sizeof tiny), -1);
    ck_assert_uint_eq(strlen(tiny), 7);
    ck_assert_int_eq(parse_exact(text, strlen(text), &v, NULL, 0), -1);
}
END_TEST

START_TEST(duplicates_in_large_objects) {
    /* more than 16 members takes the sorted path */
    char text[2048];
    size_t n = (size_t)snprintf(text, sizeof text, "{");
    for (int i = 0; i < 40; i++)
        n += (size_t)snprintf(text + n, sizeof text - n, "%s\"k%d\":%d", i ? "," : "", i, i);
    snprintf(text + n, sizeof text - n, "}");
    json_value *v = parse_ok(text);
    int64_t x;
    ck_assert(json_as_int64(json_get(v, "k39"), &x) && x == 39);
    json_free(v);
    /* now repeat k7 at the end */
    snprintf(text + n, sizeof text - n, ",\"k7\":0}");
    char err[256];
    ck_assert_int_eq(parse_exact(text, strlen(text), &v, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "duplicate key \"k7\""), "%s", err);
    /* keys that differ only after an embedded NUL are distinct */
    v = parse_ok("{\"a\\u0000x\":1,\"a\\u0000y\":2}");
    json_free(v);
}
END_TEST

START_TEST(depth_is_limited) {
    char text[2 * (JSON_MAX_DEPTH + 1) + 1];
    for (int d = 0; d < JSON_MAX_DEPTH; d++) text[d] = '[', text[JSON_MAX_DEPTH + d] = ']';
    json_value *v;
    char err[256];
    ck_assert_int_eq(parse_exact(text, 2 * JSON_MAX_DEPTH, &v, err, sizeof err), 0);
    json_free(v);
    for (int d = 0; d <= JSON_MAX_DEPTH; d++) text[d] = '[', text[JSON_MAX_DEPTH + 1 + d] = ']';
    ck_assert_int_eq(parse_exact(text, 2 * (JSON_MAX_DEPTH + 1), &v, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "nesting deeper"), "%s", err);
    /* a deep but unterminated input must not recurse without bound either */
    size_t big = 100000;
    char *deep = malloc(big);
    memset(deep, '{', big);
    ck_assert_int_eq(parse_exact(deep, big, &v, err, sizeof err), -1);
    memset(deep, '[', big);
    ck_assert_int_eq(parse_exact(deep, big, &v, err, sizeof err), -1);
    free(deep);
}
END_TEST

START_TEST(respects_length) {
    /* the parser sees only len bytes: "[1,2]" cut after 3 bytes is unterminated */
    json_value *v;
    char err[256];
    ck_assert_int_eq(json_parse("[1,2]", 3, &v, err, sizeof err), -1);
    ck_assert_int_eq(json_parse("12345", 2, &v, err, sizeof err), 0);
    int64_t i;
    ck_assert(json_as_int64(v, &i) && i == 12);
    json_free(v);
    ck_assert_int_eq(json_parse("\"ab\"", 3, &v, err, sizeof err), -1);
    ck_assert_int_eq(json_parse(NULL, 0, &v, err, sizeof err), -1);
}
END_TEST

START_TEST(escaper_round_trips) {
    char all[160];
    size_t n = 0;
    for (int c = 1; c < 128; c++) all[n++] = (char)c;
    const char *utf8 = "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"\\";
    memcpy(all + n, utf8, strlen(utf8) + 1);

    /* through a FILE */
    FILE *f = tmpfile();
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(json_write_string(f, all), 0);
    long len = ftell(f);
    rewind(f);
    char *text = malloc((size_t)len);
    ck_assert_uint_eq(fread(text, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    json_value *v;
    char err[256];
    ck_assert_msg(parse_exact(text, (size_t)len, &v, err, sizeof err) == 0, "%s", err);
    ck_assert_str_eq(json_as_string(v), all);
    json_free(v);

    /* through a buffer: the same text, and snprintf-style truncation */
    size_t need = json_escape(all, NULL, 0);
    ck_assert_uint_eq(need, (size_t)len);
    char *buf = malloc(need + 1);
    ck_assert_uint_eq(json_escape(all, buf, need + 1), need);
    ck_assert(memcmp(buf, text, need) == 0 && buf[need] == '\0');
    char small[5];
    ck_assert_uint_eq(json_escape("abcdef", small, sizeof small), 8);
    ck_assert_str_eq(small, "\"abc");
    ck_assert_uint_eq(json_escape("\n", small, sizeof small), 4);
    ck_assert_str_eq(small, "\"\\n\"");
    free(buf);
    free(text);
}
END_TEST

/* Strings are stored in chunks owned by the document: many small ones span several chunks,
 * a large one gets its own, and all stay intact until json_free. */
START_TEST(many_and_large_strings) {
    size_t n_small = 30000, big = 100000;
    size_t cap = n_small * 12 + big + 64, n = 0;
    char *text = malloc(cap);
    text[n++] = '[';
    for (size_t i = 0; i < n_small; i++) n += (size_t)snprintf(text + n, cap - n, "\"s%zu\",", i);
    text[n++] = '"';
    for (size_t i = 0; i < big; i++) text[n++] = (char)('a' + i % 26);
    n += (size_t)snprintf(text + n, cap - n, "\\n\",\"tail\"]");
    json_value *v;
    char err[256];
    ck_assert_msg(parse_exact(text, n, &v, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(json_count(v), n_small + 2);
    char want[32];
    for (size_t i = 0; i < n_small; i++) {
        snprintf(want, sizeof want, "s%zu", i);
        ck_assert_str_eq(json_as_string(json_at(v, i)), want);
    }
    const json_value *b = json_at(v, n_small);
    ck_assert_uint_eq(json_string_len(b), big + 1);
    for (size_t i = 0; i < big; i++) ck_assert(json_as_string(b)[i] == (char)('a' + i % 26));
    ck_assert(json_as_string(b)[big] == '\n');
    ck_assert_str_eq(json_as_string(json_at(v, n_small + 1)), "tail");
    json_free(v);
    free(text);
}
END_TEST

START_TEST(utf8_validation) {
    ck_assert(utf8_valid("plain", 5));
    ck_assert(utf8_valid("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf", 13));
    ck_assert(!utf8_valid("\xc3", 1));
    ck_assert(!utf8_valid("\xe0\x80\x80", 3)); /* overlong */
    ck_assert(!utf8_valid("\xed\xbf\xbf", 3)); /* surrogate */
    ck_assert(!utf8_valid("\xf4\x90\x80\x80", 4)); /* > U+10FFFF */
    ck_assert(!utf8_valid("\xfe", 1));
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, parses_values);
    tcase_add_test(tc, integers_are_exact);
    tcase_add_test(tc, string_escapes_decode_to_utf8);
    tcase_add_test(tc, rejects_malformed_input);
    tcase_add_test(tc, errors_say_where_and_what);
    tcase_add_test(tc, duplicates_in_large_objects);
    tcase_add_test(tc, depth_is_limited);
    tcase_add_test(tc, respects_length);
    tcase_add_test(tc, escaper_round_trips);
    tcase_add_test(tc, many_and_large_strings);
    tcase_add_test(tc, utf8_validation);
}

int main(void) { return kt_run_tcase("host_json", "json", 0, add_tests); }
