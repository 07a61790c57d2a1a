/* safetensors: round trips through the writer and reader, a file laid out byte for byte as
 * the Python library writes it, every kind of bad file (an error naming the problem, never
 * a crash), conversions, and the atomic save leaving the old file alone when a write fails.
 *
 * `test_host_safetensors --reference FILE` instead checks a file written by
 * tests/st_write_reference.py, and `--write-for-python FILE` writes one that the script's
 * `check` mode verifies (tests/host_formats.cmake registers both directions). */
#define _POSIX_C_SOURCE 200809L

#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "formats/json.h"
#include "formats/safetensors.h"
#include "kiln/tensor.h"
#include "testfile.h"
#include "testutil_host.h"

static char tmpdir[] = "/tmp/kiln_st_test_XXXXXX";

static void tmp_path(char *buf, size_t cap, const char *name) {
    snprintf(buf, cap, "%s/%s", tmpdir, name);
}

/* A safetensors image: 8-byte little-endian length, the header, the data. */
static unsigned char *make_file(const char *header, const void *data, size_t data_len,
                                size_t *size) {
    size_t h = strlen(header);
    *size = 8 + h + data_len;
    unsigned char *b = malloc(*size);
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)((uint64_t)h >> (8 * i));
    memcpy(b + 8, header, h);
    if (data_len) memcpy(b + 8 + h, data, data_len);
    return b;
}

/* Expects st_open_memory to fail with a message that names the file and contains what. */
static void expect_bad(const unsigned char *bytes, size_t size, const char *what) {
    st_file *f = (st_file *)1;
    char err[512] = "";
    int rc = st_open_memory(bytes, size, "bad.safetensors", &f, err, sizeof err);
    ck_assert_msg(rc == -1, "accepted a bad file (expected an error about \"%s\")", what);
    ck_assert_ptr_null(f);
    ck_assert_msg(strncmp(err, "bad.safetensors: ", 17) == 0, "message <%s>", err);
    ck_assert_msg(strstr(err, what) != NULL, "expected \"%s\" in <%s>", what, err);
}

static void expect_bad_header(const char *header, size_t data_len, const char *what) {
    unsigned char data[64] = {0};
    ck_assert_uint_le(data_len, sizeof data);
    size_t size;
    unsigned char *b = make_file(header, data, data_len, &size);
    expect_bad(b, size, what);
    free(b);
}

/* ---- a writer that covers every dtype the checkpoints use ---- */

static const float f32_vals[6] = {1.5f, -2.25f, 0.0f, 3e-5f, -65504.0f, 1e30f};
static const uint16_t f16_vals[4] = {0x3c00, 0xc000, 0x0001, 0x7c00}; /* 1, -2, 2^-24, inf */
static const uint16_t bf16_vals[4] = {0x3f80, 0xbfc0, 0x4049, 0x0000}; /* 1, -1.5, 3.140625, 0 */
static const double f64_vals[3] = {0.1, -1e300, 1e300};
static const int32_t i32_vals[5] = {0, -1, 2147483647, -2147483647 - 1, 42};
static const int64_t i64_vals[2] = {INT64_MIN, 123456789012345LL};
static const uint8_t u8_vals[3] = {0, 200, 255};
static const uint8_t bool_vals[2] = {1, 0};

static st_writer *full_writer(void) {
    st_writer *w = st_writer_new();
    int64_t s23[2] = {2, 3}, s4[1] = {4}, s22[2] = {2, 2}, s3[1] = {3}, s5[1] = {5}, s2[1] = {2},
            s04[2] = {0, 4};
    float scalar = 7.0f;
    ck_assert_int_eq(st_writer_add(w, "h.0.attn.c_attn.weight", "F32", 2, s23, f32_vals, 24), 0);
    ck_assert_int_eq(st_writer_add(w, "f16", "F16", 1, s4, f16_vals, 8), 0);
    ck_assert_int_eq(st_writer_add(w, "bf16", "BF16", 2, s22, bf16_vals, 8), 0);
    ck_assert_int_eq(st_writer_add(w, "f64", "F64", 1, s3, f64_vals, 24), 0);
    ck_assert_int_eq(st_writer_add_ref(w, "i32", "I32", 1, s5, i32_vals, 20), 0);
    ck_assert_int_eq(st_writer_add(w, "i64", "I64", 1, s2, i64_vals, 16), 0);
    ck_assert_int_eq(st_writer_add(w, "u8", "U8", 1, s3, u8_vals, 3), 0);
    ck_assert_int_eq(st_writer_add(w, "bool", "BOOL", 1, s2, bool_vals, 2), 0);
    ck_assert_int_eq(st_writer_add(w, "scalar", "F32", 0, NULL, &scalar, 4), 0);
    scalar = -1; /* st_writer_add copied it */
    ck_assert_int_eq(st_writer_add(w, "empty", "F32", 2, s04, NULL, 0), 0);
    ck_assert_int_eq(st_writer_add(w, "n\xc3\xa4me \"with\" \\escapes\n", "U8", 1, s2, u8_vals, 2), 0);
    ck_assert_int_eq(st_writer_meta(w, "format", "pt"), 0);
    ck_assert_int_eq(st_writer_meta(w, "n_layer", "12"), 0);
    ck_assert_int_eq(st_writer_meta(w, "note", "quote\" back\\slash\ttab \xc3\xa9"), 0);
    ck_assert_int_eq(st_writer_meta(w, "n_layer", "2"), 0); /* replaces */
    ck_assert_ptr_null(st_writer_error(w));
    return w;
}

static void check_full_file(const st_file *f) {
    ck_assert_uint_eq(st_count(f), 11);
    const st_tensor *t = st_tensor_at(f, 0);
    ck_assert_str_eq(t->name, "h.0.attn.c_attn.weight");
    ck_assert_int_eq(t->dtype, ST_F32);
    ck_assert_str_eq(t->dtype_name, "F32");
    ck_assert_int_eq(t->ndim, 2);
    ck_assert(t->shape[0] == 2 && t->shape[1] == 3 && t->numel == 6 && t->nbytes == 24);
    float out[6];
    ck_assert_int_eq(st_read_f32(t, out, 6), 0);
    ck_assert(memcmp(out, f32_vals, 24) == 0);
    ck_assert_int_eq(st_read_f32(t, out, 5), -1); /* count must match */

    ck_assert_int_eq(st_read_f32(st_find(f, "f16"), out, 4), 0);
    ck_assert(out[0] == 1.0f && out[1] == -2.0f && out[2] == ldexpf(1.0f, -24) && isinf(out[3]));
    ck_assert_int_eq(st_read_f32(st_find(f, "bf16"), out, 4), 0);
    ck_assert(out[0] == 1.0f && out[1] == -1.5f && out[2] == 3.140625f && out[3] == 0.0f);
    ck_assert_int_eq(st_find(f, "bf16")->ndim, 2);
    ck_assert_int_eq(st_read_f32(st_find(f, "f64"), out, 3), 0);
    ck_assert(out[0] == 0.1f && isinf(out[1]) && out[1] < 0 && isinf(out[2]));

    int64_t iv[5];
    ck_assert_int_eq(st_read_i64(st_find(f, "i32"), iv, 5), 0);
    for (int i = 0; i < 5; i++) ck_assert(iv[i] == i32_vals[i]);
    ck_assert_int_eq(st_read_i64(st_find(f, "i64"), iv, 2), 0);
    ck_assert(iv[0] == INT64_MIN && iv[1] == 123456789012345LL);
    ck_assert_int_eq(st_read_i64(st_find(f, "u8"), iv, 3), 0);
    ck_assert(iv[0] == 0 && iv[1] == 200 && iv[2] == 255);
    ck_assert_int_eq(st_read_i64(st_find(f, "bool"), iv, 2), 0);
    ck_assert(iv[0] == 1 && iv[1] == 0);
    ck_assert_int_eq(st_read_i64(t, iv, 6), -1);        /* F32 is not an integer type */
    ck_assert_int_eq(st_read_f32(st_find(f, "i32"), out, 5), -1);

    const st_tensor *sc = st_find(f, "scalar");
    ck_assert(sc->ndim == 0 && sc->numel == 1);
    ck_assert_int_eq(st_read_f32(sc, out, 1), 0);
    ck_assert(out[0] == 7.0f);
    const st_tensor *e = st_find(f, "empty");
    ck_assert(e->ndim == 2 && e->shape[0] == 0 && e->shape[1] == 4 && e->numel == 0 && e->nbytes == 0);
    ck_assert_int_eq(st_read_f32(e, NULL, 0), 0);
    ck_assert_ptr_nonnull(st_find(f, "n\xc3\xa4me \"with\" \\escapes\n"));
    ck_assert_ptr_null(st_find(f, "missing"));
    ck_assert_ptr_null(st_tensor_at(f, 11));

    ck_assert_uint_eq(st_meta_count(f), 3);
    ck_assert_str_eq(st_meta(f, "format"), "pt");
    ck_assert_str_eq(st_meta(f, "n_layer"), "2");
    ck_assert_str_eq(st_meta(f, "note"), "quote\" back\\slash\ttab \xc3\xa9");
    ck_assert_ptr_null(st_meta(f, "missing"));
    const char *k, *v;
    ck_assert_int_eq(st_meta_at(f, 0, &k, &v), 0);
    ck_assert_str_eq(k, "format");
    ck_assert_int_eq(st_meta_at(f, 3, &k, &v), -1);
}

START_TEST(round_trip) {
    char path[256], err[512];
    tmp_path(path, sizeof path, "round.safetensors");
    st_writer *w = full_writer();
    ck_assert_msg(st_writer_save(w, path, err, sizeof err) == 0, "%s", err);
    unsigned char *mem;
    size_t mem_size;
    ck_assert_msg(st_writer_serialize(w, &mem, &mem_size, err, sizeof err) == 0, "%s", err);
    st_writer_free(w);
    ck_assert_int_eq(kt_count_files(tmpdir, "round.safetensors.tmp"), 0);

    /* the layout: header padded with spaces to a multiple of 8, metadata first */
    size_t size;
    unsigned char *b = kt_read_file(path, &size);
    ck_assert(mem_size == size && memcmp(mem, b, size) == 0); /* serialize == save */
    free(mem);
    uint64_t h = 0;
    for (int i = 7; i >= 0; i--) h = h << 8 | b[i];
    ck_assert_uint_eq(h % 8, 0);
    ck_assert(memcmp(b + 8, "{\"__metadata__\":{", 17) == 0);
    ck_assert(b[8 + h - 1] == ' ' || b[8 + h - 1] == '}');
    free(b);

    st_file *f;
    ck_assert_msg(st_open(path, &f, err, sizeof err) == 0, "%s", err);
    check_full_file(f);
    st_close(f);
    remove(path);
}
END_TEST

/* Bytes as the Python library lays them out: metadata first, the header order differing
 * from the data order, data offsets relative to the data section, space padding. */
START_TEST(reads_python_layout) {
    const char *header = "{\"__metadata__\":{\"format\":\"pt\"},"
                         "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]},"
                         "\"a\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,8]}}";
    char padded[256];
    size_t h = strlen(header), p = (8 - h % 8) % 8;
    memcpy(padded, header, h);
    memset(padded + h, ' ', p);
    padded[h + p] = '\0';
    unsigned char data[16] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, /* a = -1 */
                              0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0xc0}; /* b = 1, -2 */
    size_t size;
    unsigned char *b = make_file(padded, data, sizeof data, &size);
    st_file *f;
    char err[512];
    ck_assert_msg(st_open_memory(b, size, "py.safetensors", &f, err, sizeof err) == 0, "%s", err);
    free(b); /* st_open_memory copied it */
    ck_assert_uint_eq(st_count(f), 2);
    ck_assert_str_eq(st_tensor_at(f, 0)->name, "b"); /* header order */
    float fv[2];
    int64_t iv;
    ck_assert_int_eq(st_read_f32(st_find(f, "b"), fv, 2), 0);
    ck_assert(fv[0] == 1.0f && fv[1] == -2.0f);
    ck_assert_int_eq(st_read_i64(st_find(f, "a"), &iv, 1), 0);
    ck_assert(iv == -1);
    ck_assert_str_eq(st_meta(f, "format"), "pt");
    st_close(f);

    /* no metadata and no tensors at all is a valid (empty) file */
    b = make_file("{}      ", NULL, 0, &size);
    ck_assert_int_eq(st_open_memory(b, size, "empty.safetensors", &f, err, sizeof err), 0);
    ck_assert_uint_eq(st_count(f), 0);
    ck_assert_uint_eq(st_meta_count(f), 0);
    st_close(f);
    free(b);
}
END_TEST

START_TEST(bad_framing) {
    unsigned char b[16] = {0};
    expect_bad(b, 0, "empty");
    expect_bad(b, 5, "only 5 bytes");
    /* header length 2^62 */
    b[7] = 0x40;
    expect_bad(b, 16, "larger than the 100 MiB limit");
    /* all ones: 2^64 - 1 */
    memset(b, 0xff, 8);
    expect_bad(b, 16, "larger than");
    /* 100 bytes of header promised, 8 present */
    memset(b, 0, 16);
    b[0] = 100;
    expect_bad(b, 16, "runs past the end");
    /* header length 0 */
    b[0] = 0;
    expect_bad(b, 8, "header length is 0");
    expect_bad_header("{", 0, "not valid JSON");
    expect_bad_header("[1, 2]  ", 0, "does not start with '{'");
    expect_bad_header("{\"a\":  ", 0, "not valid JSON");
    expect_bad_header("{} x    ", 0, "not valid JSON");
    expect_bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                      "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8,
                      "duplicate key \"a\"");
}
END_TEST

START_TEST(bad_tensor_entries) {
    expect_bad_header("{\"a\":{\"dtype\":\"F31\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
                      "unknown dtype \"F31\"");
    expect_bad_header("{\"a\":{\"dtype\":\"f32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
                      "unknown dtype");
    expect_bad_header("{\"a\":{\"dtype\":3,\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "dtype");
    expect_bad_header("{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "no string \"dtype\"");
    expect_bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4,
                      "shape entry 0 is not a non-negative integer");
    expect_bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", 4,
                      "shape entry 0");
    expect_bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[\"1\"],\"data_offsets\":[0,4]}}", 4,
                      "shape entry 0");
    expect_bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":1,\"data_offsets\":[0,4]}}", 4,
                      "no \"shape\" array");
    expect_bad_header("{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4, "no \"shape\"");
    expect_bad_header("{\"a\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1],"
                      "\"data_offsets\":[0,1]}}", 1, "9 dimensions");
    expect_bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8,
                      "shape [3] of F32 needs 12 bytes but data_offsets [0, 8] span 8");
    expect_bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[1099511627776,1099511627776],"
                      "\"data_offsets\":[0,8]}}", 8, "needs more than 2^64 bytes");
    expect_bad_header("{\"a\":{\"dtype\":\"F64\",\"shape\":[4611686018427387904,4],"
                      "\"data_offsets\":[0,8]}}", 8, "needs more than 2^64 bytes");
    expect_bad_header("{\"a\":{\"dtype\":\"U8\",\"shape\":[4294967296,4294967295],"
                      "\"data_offsets\":[0,8]}}", 8, "needs 18446744069414584320 bytes");
    expect_bad_header("{\"a\":{\"dtype\":\"U8\",\"shape\":[4294967296,4294967296,0],"
                      "\"data_offsets\":[0,8]}}", 8, "needs 0 bytes but");
    expect_bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 8,
                      "run past the end of the data section");
    expect_bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],"
                      "\"data_offsets\":[9223372036854775800,9223372036854775804]}}", 8,
                      "run past the end");
    expect_bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8,
                      "end before they begin");
    expect_bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}}", 8,
                      "\"data_offsets\" must be an array of two");
    expect_bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8,8]}}", 8,
                      "data_offsets");
    expect_bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[-8,0]}}", 8,
                      "data_offsets");
    expect_bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":"
                      "[0,18446744073709551616]}}", 8, "data_offsets");
    expect_bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8, "data_offsets");
    expect_bad_header("{\"a\":[1,2]}", 0, "expected an object");
    expect_bad_header("{\"a\\u0000b\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}",
                      1, "NUL");
}
END_TEST

START_TEST(bad_data_layout) {
    const char *two = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                      "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[%d,%d]}}";
    char h[256];
    snprintf(h, sizeof h, two, 4, 12);
    expect_bad_header(h, 12, "overlap");
    snprintf(h, sizeof h, two, 12, 20);
    expect_bad_header(h, 20, "4 unused bytes between");
    snprintf(h, sizeof h, two, 0, 8); /* both the same bytes */
    expect_bad_header(h, 8, "overlap");
    snprintf(h, sizeof h, two, 8, 16);
    expect_bad_header(h, 20, "trailing bytes");
    expect_bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8,
                      "starts at byte 4");
    expect_bad_header("{}", 4, "lists no tensors but 4 bytes");
    expect_bad_header("{\"__metadata__\":{\"a\":1}}", 0, "must be strings");
    expect_bad_header("{\"__metadata__\":[\"a\"]}", 0, "\"__metadata__\" must be an object of strings, not an array");
    expect_bad_header("{\"__metadata__\":{\"a\":\"x\\u0000y\"}}", 0, "NUL");
    /* an empty tensor at the end, in the middle and alone is fine */
    snprintf(h, sizeof h, two, 8, 16);
    size_t size;
    unsigned char data[16] = {0};
    unsigned char *b = make_file("{\"e\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,4]},"
                                 "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                                 "\"z\":{\"dtype\":\"I8\",\"shape\":[3,0],\"data_offsets\":[4,4]}}",
                                 data, 4, &size);
    st_file *f;
    char err[512];
    ck_assert_msg(st_open_memory(b, size, "x", &f, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(st_count(f), 3);
    st_close(f);
    free(b);
}
END_TEST

/* Every prefix of a valid file and every single-bit flip of it is either read or refused
 * with a message: never a crash, hang or out-of-bounds read (the ASan build checks). */
START_TEST(truncations_and_bit_flips) {
    char path[256], err[512];
    tmp_path(path, sizeof path, "flips.safetensors");
    st_writer *w = full_writer();
    ck_assert_msg(st_writer_save(w, path, err, sizeof err) == 0, "%s", err);
    st_writer_free(w);
    size_t size;
    unsigned char *b = kt_read_file(path, &size);
    remove(path);
    for (size_t n = 0; n < size; n++) {
        st_file *f;
        err[0] = '\0';
        ck_assert_msg(st_open_memory(b, n, "cut", &f, err, sizeof err) == -1,
                      "a file cut to %zu of %zu bytes was accepted", n, size);
        ck_assert(strncmp(err, "cut: ", 5) == 0);
    }
    int accepted = 0;
    for (size_t i = 0; i < size; i++) {
        for (int bit = 0; bit < 8; bit++) {
            b[i] ^= (unsigned char)(1u << bit);
            st_file *f;
            err[0] = '\0';
            if (st_open_memory(b, size, "flip", &f, err, sizeof err) == 0) {
                accepted++;
                float tmp[16];
                for (size_t t = 0; t < st_count(f); t++) {
                    const st_tensor *ti = st_tensor_at(f, t);
                    if (ti->numel <= 16) st_read_f32(ti, tmp, (size_t)ti->numel);
                }
                st_close(f);
            } else {
                ck_assert_msg(strncmp(err, "flip: ", 6) == 0, "<%s>", err);
            }
            b[i] ^= (unsigned char)(1u << bit);
        }
    }
    /* flips in the data section (and some in names) keep the file valid */
    ck_assert_int_gt(accepted, 0);
    free(b);
}
END_TEST

START_TEST(open_errors) {
    st_file *f;
    char err[512], path[256];
    tmp_path(path, sizeof path, "does-not-exist.safetensors");
    ck_assert_int_eq(st_open(path, &f, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "does-not-exist.safetensors: cannot open: No such file"), "%s", err);
    ck_assert_int_eq(st_open(tmpdir, &f, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "directory"), "%s", err);
    tmp_path(path, sizeof path, "empty.safetensors");
    kt_write_file(path, "", 0);
    ck_assert_int_eq(st_open(path, &f, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "empty.safetensors: file is empty"), "%s", err);
    remove(path);
}
END_TEST

START_TEST(conversions) {
    /* I8/I16 sign extension, U64 above INT64_MAX refused, F16 via the engine helper */
    unsigned char data[2 + 4 + 8 + 4];
    data[0] = 0xff, data[1] = 0x80;                 /* I8: -1, -128 */
    data[2] = 0x00, data[3] = 0x80, data[4] = 0xff, data[5] = 0x7f; /* I16: -32768, 32767 */
    memset(data + 6, 0xff, 8);                      /* U64: 2^64 - 1 */
    uint16_t h = kiln_f32_to_f16(0.333251953125f);  /* exactly representable */
    data[14] = (unsigned char)h, data[15] = (unsigned char)(h >> 8);
    data[16] = 0x00, data[17] = 0x7e;               /* F16 NaN */
    size_t size;
    unsigned char *b = make_file("{\"i8\":{\"dtype\":\"I8\",\"shape\":[2],\"data_offsets\":[0,2]},"
                                 "\"i16\":{\"dtype\":\"I16\",\"shape\":[2],\"data_offsets\":[2,6]},"
                                 "\"u64\":{\"dtype\":\"U64\",\"shape\":[],\"data_offsets\":[6,14]},"
                                 "\"f16\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[14,18]}}",
                                 data, sizeof data, &size);
    st_file *f;
    char err[512];
    ck_assert_msg(st_open_memory(b, size, "c", &f, err, sizeof err) == 0, "%s", err);
    int64_t iv[2];
    ck_assert_int_eq(st_read_i64(st_find(f, "i8"), iv, 2), 0);
    ck_assert(iv[0] == -1 && iv[1] == -128);
    ck_assert_int_eq(st_read_i64(st_find(f, "i16"), iv, 2), 0);
    ck_assert(iv[0] == -32768 && iv[1] == 32767);
    ck_assert_int_eq(st_read_i64(st_find(f, "u64"), iv, 1), -1);
    float fv[2];
    ck_assert_int_eq(st_read_f32(st_find(f, "f16"), fv, 2), 0);
    ck_assert(fv[0] == 0.333251953125f && isnan(fv[1]));
    st_close(f);
    free(b);

    ck_assert_int_eq(st_dtype_from_name("BF16"), ST_BF16);
    ck_assert_int_eq(st_dtype_from_name("bf16"), -1);
    ck_assert_int_eq(st_dtype_from_name(NULL), -1);
    ck_assert_str_eq(st_dtype_name(ST_F8_E4M3), "F8_E4M3");
    ck_assert_ptr_null(st_dtype_name(ST_DTYPE_COUNT));
    ck_assert_uint_eq(st_dtype_size(ST_F64), 8);
    ck_assert_uint_eq(st_dtype_size(ST_DTYPE_COUNT), 0);
}
END_TEST

START_TEST(writer_rejects_bad_arguments) {
    int64_t s2[1] = {2}, neg[1] = {-2};
    float v[2] = {1, 2};
    st_writer *w = st_writer_new();
    ck_assert_int_eq(st_writer_add(w, "a", "F99", 1, s2, v, 8), -1);
    ck_assert_msg(strstr(st_writer_error(w), "unknown dtype \"F99\""), "%s", st_writer_error(w));
    /* the first error sticks, and the save reports it without creating a file */
    ck_assert_int_eq(st_writer_add(w, "", "F32", 1, s2, v, 8), -1);
    char path[256], err[512];
    tmp_path(path, sizeof path, "never.safetensors");
    ck_assert_int_eq(st_writer_save(w, path, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "never.safetensors: not written") && strstr(err, "F99"), "%s", err);
    ck_assert_int_eq(access(path, F_OK), -1);
    st_writer_free(w);

    struct {
        const char *name, *dtype;
        int ndim;
        const int64_t *shape;
        size_t nbytes;
        const char *what;
    } bad[] = {
        {"a", "F32", 1, s2, 4, "4 bytes given but the shape of F32 needs 8"},
        {"a", "F32", 1, neg, 8, "negative dimension -2"},
        {"a", "F32", 9, s2, 8, "ndim 9"},
        {"a", "F32", -1, s2, 8, "ndim -1"},
        {"", "F32", 1, s2, 8, "empty tensor name"},
        {"__metadata__", "F32", 1, s2, 8, "reserved"},
        {"bad\xff", "F32", 1, s2, 8, "not valid UTF-8"},
        {"dup", "F32", 1, s2, 8, "added twice"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        w = st_writer_new();
        ck_assert_int_eq(st_writer_add(w, "dup", "F32", 1, s2, v, 8), 0);
        ck_assert_int_eq(st_writer_add(w, bad[k].name, bad[k].dtype, bad[k].ndim, bad[k].shape, v,
                                       bad[k].nbytes), -1);
        ck_assert_msg(strstr(st_writer_error(w), bad[k].what), "case %zu: %s", k, st_writer_error(w));
        st_writer_free(w);
    }
    w = st_writer_new();
    ck_assert_int_eq(st_writer_meta(w, "k", "\xc0\x80"), -1);
    ck_assert_int_eq(st_writer_meta(w, NULL, "v"), -1);
    st_writer_free(w);
    ck_assert_int_eq(st_writer_add(NULL, "a", "F32", 1, s2, v, 8), -1);
    ck_assert_int_eq(st_writer_save(NULL, path, err, sizeof err), -1);
}
END_TEST

static void write_old_file(const char *path) { kt_write_file(path, "OLD CONTENT", 11); }

static void expect_old_file(const char *path) {
    size_t n;
    unsigned char *b = kt_read_file(path, &n);
    ck_assert_msg(n == 11 && memcmp(b, "OLD CONTENT", 11) == 0, "the old file was changed");
    free(b);
}

/* A save of 256 KiB to path (kept as `previous` when set) that a file-size limit stops:
 * 1 when it fails with a message about the write (kt_expect_failing_write). */
typedef struct big_save {
    const char *path, *previous;
} big_save;

static int big_save_fails(void *arg) {
    const big_save *s = arg;
    size_t n = 1 << 16;
    float *big = calloc(n, sizeof *big);
    int64_t shape[1] = {(int64_t)n};
    st_writer *cw = st_writer_new();
    st_writer_add_ref(cw, "big", "F32", 1, shape, big, n * sizeof *big);
    char cerr[512];
    int rc = st_writer_save_keeping(cw, s->path, s->previous, cerr, sizeof cerr);
    st_writer_free(cw);
    free(big);
    return rc == -1 && strstr(cerr, "write of") && strstr(cerr, "previous file is unchanged");
}

START_TEST(atomic_save) {
    char path[256], err[512];
    float v[4] = {1, 2, 3, 4};
    int64_t s4[1] = {4};

    /* the directory does not exist */
    st_writer *w = st_writer_new();
    st_writer_add(w, "a", "F32", 1, s4, v, 16);
    tmp_path(path, sizeof path, "no-such-dir/x.safetensors");
    ck_assert_int_eq(st_writer_save(w, path, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "cannot create the temporary file") && strstr(err, "No such file"),
                  "%s", err);

    /* the target is a directory: the rename fails, the temporary file is removed */
    tmp_path(path, sizeof path, "adir");
    ck_assert_int_eq(mkdir(path, 0755), 0);
    ck_assert_int_eq(st_writer_save(w, path, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "rename"), "%s", err);
    ck_assert_int_eq(kt_count_files(tmpdir, "adir.tmp"), 0);
    struct stat sb;
    ck_assert(stat(path, &sb) == 0 && S_ISDIR(sb.st_mode));
    rmdir(path);

    /* a success replaces an existing file and leaves no temporary behind */
    tmp_path(path, sizeof path, "replace.safetensors");
    write_old_file(path);
    ck_assert_msg(st_writer_save(w, path, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(kt_count_files(tmpdir, "replace.safetensors.tmp"), 0);
    st_file *f;
    ck_assert_msg(st_open(path, &f, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(st_count(f), 1);
    st_close(f);
    remove(path);
    st_writer_free(w);

    /* a write that fails half-way (file size limit, in a child process so the limit does
     * not leak): the old file stays as it was, the temporary file is gone */
    tmp_path(path, sizeof path, "full.safetensors");
    write_old_file(path);
    big_save save = {.path = path};
    const char *kept[] = {path, NULL};
    kt_expect_failing_write(4096, big_save_fails, &save, kept, 1);
    expect_old_file(path);
    ck_assert_int_eq(kt_count_files(tmpdir, "full.safetensors.tmp"), 0);

    /* the same in the keep-previous mode (the optimizer state): neither file changes */
    char previous[256];
    tmp_path(previous, sizeof previous, "full.prev.safetensors");
    kt_write_file(previous, "OLDER CONTENT", 13);
    save.previous = kept[1] = previous;
    kt_expect_failing_write(4096, big_save_fails, &save, kept, 2);
    expect_old_file(path);
    remove(path);
    remove(previous);
}
END_TEST

/* ---- interop with tests/st_write_reference.py ---- */

/* The tensors the script writes (see the script): keep the two in sync. */
static int check_reference(const char *path) {
    st_file *f;
    char err[512];
    if (st_open(path, &f, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    int bad = 0;
#define EXPECT(cond)                                                      \
    do {                                                                  \
        if (!(cond)) fprintf(stderr, "%s: failed: %s\n", path, #cond), bad = 1; \
    } while (0)
    EXPECT(st_count(f) == 5);
    const st_tensor *w = st_find(f, "wte.weight"), *h = st_find(f, "h.0.ln_1.weight"),
                    *b = st_find(f, "bf"), *d = st_find(f, "d"), *i = st_find(f, "ids");
    EXPECT(w && h && b && d && i);
    if (w && h && b && d && i) {
        float buf[12];
        EXPECT(w->dtype == ST_F32 && w->ndim == 2 && w->shape[0] == 3 && w->shape[1] == 4);
        EXPECT(st_read_f32(w, buf, 12) == 0);
        for (int k = 0; k < 12; k++) EXPECT(buf[k] == 0.5f * (float)k - 1.0f);
        EXPECT(h->dtype == ST_F16 && st_read_f32(h, buf, 4) == 0);
        for (int k = 0; k < 4; k++) EXPECT(buf[k] == 0.25f * (float)k);
        EXPECT(b->dtype == ST_BF16 && st_read_f32(b, buf, 2) == 0);
        EXPECT(buf[0] == 1.0f && buf[1] == -3.0f);
        EXPECT(d->dtype == ST_F64 && st_read_f32(d, buf, 1) == 0 && buf[0] == 0.5f);
        int64_t ids[3];
        EXPECT(i->dtype == ST_I64 && st_read_i64(i, ids, 3) == 0);
        EXPECT(ids[0] == 7 && ids[1] == -1 && ids[2] == 50256);
        /* header order as the library sorts: widest dtype first, then by name */
        EXPECT(strcmp(st_tensor_at(f, 0)->name, "ids") == 0);
        EXPECT(strcmp(st_tensor_at(f, 2)->name, "wte.weight") == 0);
    }
    EXPECT(st_meta(f, "format") && strcmp(st_meta(f, "format"), "pt") == 0);
    EXPECT(st_meta(f, "n_layer") && strcmp(st_meta(f, "n_layer"), "1") == 0);
#undef EXPECT
    st_close(f);
    if (!bad) printf("%s: read back as written by Python\n", path);
    return bad;
}

static int write_for_python(const char *path) {
    st_writer *w = st_writer_new();
    float a[6] = {1, -2, 3.5f, 0, 1e-3f, 65504};
    uint16_t half[3] = {kiln_f32_to_f16(1.0f), kiln_f32_to_f16(-0.5f), kiln_f32_to_f16(2048)};
    int32_t ids[4] = {0, 1, -5, 2147483647};
    int64_t s23[2] = {2, 3}, s3[1] = {3}, s4[1] = {4};
    st_writer_add(w, "transformer.wpe.weight", "F32", 2, s23, a, sizeof a);
    st_writer_add(w, "half", "F16", 1, s3, half, sizeof half);
    st_writer_add(w, "ids", "I32", 1, s4, ids, sizeof ids);
    st_writer_meta(w, "n_embd", "3");
    st_writer_meta(w, "quote", "a\"b\\c\n\xc3\xa9");
    char err[512];
    int rc = st_writer_save(w, path, err, sizeof err);
    if (rc != 0) fprintf(stderr, "%s\n", err);
    st_writer_free(w);
    return rc != 0;
}

static void add_tests(TCase *tc) {
    tcase_add_test(tc, round_trip);
    tcase_add_test(tc, reads_python_layout);
    tcase_add_test(tc, bad_framing);
    tcase_add_test(tc, bad_tensor_entries);
    tcase_add_test(tc, bad_data_layout);
    tcase_add_test(tc, truncations_and_bit_flips);
    tcase_add_test(tc, open_errors);
    tcase_add_test(tc, conversions);
    tcase_add_test(tc, writer_rejects_bad_arguments);
    tcase_add_test(tc, atomic_save);
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "--reference") == 0) return check_reference(argv[2]);
    if (argc == 3 && strcmp(argv[1], "--write-for-python") == 0) return write_for_python(argv[2]);
    return kt_run_tcase_in(tmpdir, "host_safetensors", "safetensors", 60, add_tests);
}
