/* GGUF (formats/gguf.h): a round trip through the writer and the reader of every value kind
 * and of f32, f16, Q8_0 and Q4_0 tensors (offsets aligned, bytes intact, the atomic save,
 * which a write stopped midway leaves undone);
 * then bad files, each refused with one line naming the problem, never a crash: a wrong
 * magic or version, counts, lengths and array sizes that lie about the bytes left,
 * duplicate keys and tensors, dimensions out of range, a ggml type kiln does not read
 * (named), rows that are not whole blocks, offsets misaligned, beyond the end or
 * overlapping, a bad alignment; every truncation and every single-byte change of a valid
 * file. */
#define _POSIX_C_SOURCE 200809L

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/gguf.h"
#include "testfile.h"
#include "testutil.h"

/* ---- a hand-made file, for the bad ones ---- */

typedef struct bytes {
    unsigned char b[4096];
    size_t n;
} bytes;

static void le(bytes *o, uint64_t v, int n) {
    for (int i = 0; i < n; i++) o->b[o->n++] = (unsigned char)(v >> (8 * i));
}
static void str(bytes *o, const char *s) {
    le(o, strlen(s), 8);
    memcpy(o->b + o->n, s, strlen(s));
    o->n += strlen(s);
}
static void head(bytes *o, uint32_t version, uint64_t tensors, uint64_t kvs) {
    o->n = 0;
    memcpy(o->b, "GGUF", 4);
    o->n = 4;
    le(o, version, 4);
    le(o, tensors, 8);
    le(o, kvs, 8);
}
/* One tensor info. */
static void info(bytes *o, const char *name, int ndim, const uint64_t *ne, int type, uint64_t offset) {
    str(o, name);
    le(o, (uint64_t)ndim, 4);
    for (int d = 0; d < ndim; d++) le(o, ne[d], 8);
    le(o, (uint64_t)type, 4);
    le(o, offset, 8);
}
/* Pads to 32 and appends n data bytes. */
static void data(bytes *o, size_t n) {
    while (o->n % 32) o->b[o->n++] = 0;
    memset(o->b + o->n, 0x3c, n);
    o->n += n;
}

/* A file of one key-value "k": an array of `count` elements of type `elem`, with no elements
 * after the count. */
static void array_header(bytes *o, gguf_type elem, uint64_t count) {
    head(o, 3, 0, 1);
    str(o, "k");
    le(o, GGUF_ARRAY, 4);
    le(o, elem, 4);
    le(o, count, 8);
}

/* The file must be refused with a message containing `part`. */
static void expect_refused(const bytes *o, const char *part) {
    gguf_file *f = NULL;
    char err[512] = "";
    int rc = gguf_open_memory(o->b, o->n, "bad.gguf", &f, err, sizeof err);
    ck_assert_msg(rc == -1 && f == NULL, "accepted a file that should fail with \"%s\"", part);
    ck_assert_msg(strstr(err, part) != NULL, "expected \"%s\" in: %s", part, err);
    ck_assert_msg(strstr(err, "bad.gguf") == err && !strchr(err, '\n'), "not one line naming the file: %s", err);
}

/* ---- the round trip ---- */

static unsigned char q8[2 * 2 * 34], q4[3 * 18];
static float f32v[6] = {1.5f, -2.0f, 0.25f, 3.0f, -4.5f, 6.0f};
static uint16_t f16v[64];

static gguf_writer *sample_writer(void) {
    for (size_t i = 0; i < sizeof q8; i++) q8[i] = (unsigned char)(i * 7);
    for (size_t i = 0; i < sizeof q4; i++) q4[i] = (unsigned char)(i * 13 + 1);
    for (int i = 0; i < 64; i++) f16v[i] = (uint16_t)(0x3c00 + i);
    gguf_writer *w = gguf_writer_new();
    const char *tokens[] = {"a", "", "\xc4\xa0the"};
    int32_t types[] = {1, 3, 1};
    ck_assert_int_eq(gguf_writer_str(w, "general.architecture", "gpt2"), 0);
    ck_assert_int_eq(gguf_writer_u32(w, "gpt2.block_count", 4), 0);
    ck_assert_int_eq(gguf_writer_i32(w, "test.negative", -7), 0);
    ck_assert_int_eq(gguf_writer_f32(w, "gpt2.attention.layer_norm_epsilon", 1e-5f), 0);
    ck_assert_int_eq(gguf_writer_bool(w, "test.flag", 1), 0);
    ck_assert_int_eq(gguf_writer_str_array(w, "tokenizer.ggml.tokens", tokens, 3), 0);
    ck_assert_int_eq(gguf_writer_i32_array(w, "tokenizer.ggml.token_type", types, 3), 0);
    int64_t ne_f32[2] = {3, 2}, ne_f16[1] = {64}, ne_q8[2] = {64, 2}, ne_q4[2] = {32, 3};
    ck_assert_int_eq(gguf_writer_tensor(w, "a.f32", GGML_TYPE_F32, 2, ne_f32, f32v, sizeof f32v), 0);
    ck_assert_int_eq(gguf_writer_tensor(w, "b.f16", GGML_TYPE_F16, 1, ne_f16, f16v, sizeof f16v), 0);
    ck_assert_int_eq(gguf_writer_tensor(w, "c.q8", GGML_TYPE_Q8_0, 2, ne_q8, q8, sizeof q8), 0);
    ck_assert_int_eq(gguf_writer_tensor(w, "d.q4", GGML_TYPE_Q4_0, 2, ne_q4, q4, sizeof q4), 0);
    return w;
}

static void check_sample(const gguf_file *f) {
    char err[256];
    ck_assert_uint_eq(gguf_version(f), 3);
    ck_assert_uint_eq(gguf_kv_count(f), 7);
    const char *s;
    uint64_t u;
    double x;
    ck_assert_int_eq(gguf_get_string(f, "general.architecture", &s, err, sizeof err), 0);
    ck_assert_str_eq(s, "gpt2");
    ck_assert_int_eq(gguf_get_uint(f, "gpt2.block_count", &u, err, sizeof err), 0);
    ck_assert_uint_eq(u, 4);
    ck_assert_int_eq(gguf_find_kv(f, "test.negative")->i, -7);
    ck_assert_int_eq(gguf_get_uint(f, "test.negative", &u, err, sizeof err), -1);
    ck_assert_int_eq(gguf_get_float(f, "gpt2.attention.layer_norm_epsilon", &x, err, sizeof err), 0);
    ck_assert_float_eq((float)x, 1e-5f);
    ck_assert_int_eq(gguf_find_kv(f, "test.flag")->u, 1);
    const gguf_kv *tok = gguf_find_kv(f, "tokenizer.ggml.tokens");
    ck_assert_int_eq(tok->elem_type, GGUF_STRING);
    ck_assert_uint_eq(tok->count, 3);
    ck_assert_str_eq(tok->strs[2], "\xc4\xa0the");
    ck_assert_str_eq(tok->strs[1], "");
    const gguf_kv *tt = gguf_find_kv(f, "tokenizer.ggml.token_type");
    ck_assert_int_eq(tt->elem_type, GGUF_I32);
    ck_assert_int_eq(((const unsigned char *)tt->data)[4], 3);
    ck_assert_int_eq(gguf_get_string(f, "missing.key", &s, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "missing.key is missing"));
    ck_assert_uint_eq(gguf_tensor_count(f), 4);
    const struct {
        const char *name;
        const void *bytes;
        size_t n;
        int type;
        int64_t ne0;
    } want[] = {{"a.f32", f32v, sizeof f32v, GGML_TYPE_F32, 3}, {"b.f16", f16v, sizeof f16v, GGML_TYPE_F16, 64},
                {"c.q8", q8, sizeof q8, GGML_TYPE_Q8_0, 64}, {"d.q4", q4, sizeof q4, GGML_TYPE_Q4_0, 32}};
    for (int i = 0; i < 4; i++) {
        const gguf_tensor *t = gguf_find_tensor(f, want[i].name);
        ck_assert_ptr_nonnull(t);
        ck_assert_int_eq(t->type, want[i].type);
        ck_assert_int_eq(t->ne[0], want[i].ne0);
        ck_assert_uint_eq(t->nbytes, want[i].n);
        ck_assert_uint_eq(t->offset % 32, 0);
        ck_assert_int_eq(memcmp(t->data, want[i].bytes, want[i].n), 0);
    }
}

START_TEST(round_trip) {
    gguf_writer *w = sample_writer();
    unsigned char *buf;
    size_t n;
    char err[256];
    ck_assert_int_eq(gguf_writer_serialize(w, &buf, &n, err, sizeof err), 0);
    gguf_file *f;
    ck_assert_msg(gguf_open_memory(buf, n, "mem", &f, err, sizeof err) == 0, "%s", err);
    check_sample(f);
    gguf_close(f);
    /* the atomic save writes the same bytes */
    char path[] = "/tmp/kiln_gguf_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_msg(gguf_writer_save(w, path, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(gguf_open(path, &f, err, sizeof err) == 0, "%s", err);
    check_sample(f);
    gguf_close(f);
    remove(path);
    free(buf);
    gguf_writer_free(w);
}
END_TEST

/* A GGUF of 256 KiB saved over the sample, stopped midway by a file-size limit: 1 when the
 * save fails with a message naming the file and the write. */
static int big_save_fails(void *path) {
    enum { N = 1 << 16 };
    float *big = calloc(N, sizeof *big);
    int64_t ne[1] = {N};
    gguf_writer *w = gguf_writer_new();
    char err[512];
    int ok = big && gguf_writer_tensor(w, "big", GGML_TYPE_F32, 1, ne, big, N * sizeof *big) == 0 &&
             gguf_writer_save(w, path, err, sizeof err) == -1 && strstr(err, path) == err && strstr(err, "write of");
    gguf_writer_free(w);
    free(big);
    return ok;
}

START_TEST(save_stopped_midway_keeps_the_old_file) {
    char path[] = "/tmp/kiln_gguf_XXXXXX", err[256];
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    gguf_writer *w = sample_writer();
    ck_assert_msg(gguf_writer_save(w, path, err, sizeof err) == 0, "%s", err);
    gguf_writer_free(w);
    const char *kept = path;
    kt_expect_failing_write(4096, big_save_fails, path, &kept, 1);
    gguf_file *f;
    ck_assert_msg(gguf_open(path, &f, err, sizeof err) == 0, "%s", err);
    check_sample(f);
    gguf_close(f);
    remove(path);
}
END_TEST

START_TEST(writer_refuses_bad_tensors) {
    gguf_writer *w = gguf_writer_new();
    int64_t ne[2] = {48, 2};
    unsigned char b[256] = {0};
    ck_assert_int_eq(gguf_writer_tensor(w, "x", GGML_TYPE_Q8_0, 2, ne, b, 2 * 34), -1); /* 48: not whole blocks */
    unsigned char *buf;
    size_t n;
    char err[256];
    ck_assert_int_eq(gguf_writer_serialize(w, &buf, &n, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "tensor x"));
    gguf_writer_free(w);
}
END_TEST

START_TEST(bad_framing) {
    bytes o;
    head(&o, 3, 0, 0);
    o.b[0] = 'X';
    expect_refused(&o, "does not start with GGUF");
    head(&o, 1, 0, 0);
    expect_refused(&o, "version is not 2 or 3");
    head(&o, 3, 0, (uint64_t)1 << 40);
    expect_refused(&o, "more key-values than the file holds");
    head(&o, 3, (uint64_t)1 << 40, 0);
    expect_refused(&o, "more tensors than the file holds");
    /* a key whose length runs past the end */
    head(&o, 3, 0, 1);
    le(&o, 1000, 8);
    le(&o, 0, 8);
    expect_refused(&o, "a key is cut short");
    /* an array that counts more values than there are bytes */
    array_header(&o, GGUF_U32, (uint64_t)1 << 60);
    expect_refused(&o, "counts more values than the file holds");
    array_header(&o, GGUF_STRING, 1000);
    expect_refused(&o, "counts more strings than the file holds");
    array_header(&o, GGUF_ARRAY, 0);
    expect_refused(&o, "holds arrays");
    head(&o, 3, 0, 1);
    str(&o, "k");
    le(&o, 99, 4);
    expect_refused(&o, "unknown type");
    head(&o, 3, 0, 2);
    str(&o, "k");
    le(&o, GGUF_U8, 4);
    le(&o, 1, 1);
    str(&o, "k");
    le(&o, GGUF_U8, 4);
    le(&o, 1, 1);
    expect_refused(&o, "the key k appears twice");
    head(&o, 3, 0, 2); /* a name from the file is made printable: the message stays one line */
    str(&o, "line\nbreak");
    le(&o, GGUF_U8, 4);
    le(&o, 1, 1);
    str(&o, "line\nbreak");
    le(&o, GGUF_U8, 4);
    le(&o, 1, 1);
    expect_refused(&o, "the key line?break appears twice");
    head(&o, 3, 0, 1);
    str(&o, "general.alignment");
    le(&o, GGUF_U32, 4);
    le(&o, 24, 4);
    expect_refused(&o, "general.alignment is not a power of two");
}
END_TEST

START_TEST(bad_tensors) {
    bytes o;
    uint64_t ne2[2] = {32, 2}, ne0[1] = {0}, ne48[1] = {48}, ne5[5] = {1, 1, 1, 1, 1}, ne32[1] = {32};
    uint64_t ne192[1] = {192}, ne256x2[2] = {256, 2};
    head(&o, 3, 1, 0);
    info(&o, "t", 5, ne5, GGML_TYPE_F32, 0);
    expect_refused(&o, "does not have 1 to 4 dimensions");
    head(&o, 3, 1, 0);
    info(&o, "t", 1, ne0, GGML_TYPE_F32, 0);
    expect_refused(&o, "a dimension of 0");
    head(&o, 3, 1, 0);
    info(&o, "t", 2, ne2, 10, 0); /* Q2_K: refused by name */
    data(&o, 2 * 84);
    expect_refused(&o, "the tensor t is q2_K, which kiln does not read");
    head(&o, 3, 1, 0);
    info(&o, "t", 2, ne2, 15, 0); /* Q8_K: ggml's activation format, never a weight */
    data(&o, 2 * 292);
    expect_refused(&o, "the tensor t is q8_K, which kiln does not read");
    head(&o, 3, 1, 0);
    info(&o, "t", 2, ne2, 23, 0);
    data(&o, 2 * 136);
    expect_refused(&o, "the tensor t is iq4_xs, which kiln does not read");
    head(&o, 3, 1, 0);
    info(&o, "t", 2, ne2, 99, 0);
    data(&o, 256);
    expect_refused(&o, "the tensor t is type 99, which kiln does not read");
    head(&o, 3, 1, 0); /* a K type's rows are whole super-blocks of 256 */
    info(&o, "t", 1, ne192, GGML_TYPE_Q4_K, 0);
    data(&o, 144);
    expect_refused(&o, "a row of the tensor t (q4_K, 192 values) is not a whole number of its type's blocks of 256");
    head(&o, 3, 1, 0); /* a truncated block: the tensor's bytes run past the file */
    info(&o, "t", 2, ne256x2, GGML_TYPE_Q6_K, 0);
    data(&o, 2 * 210 - 1);
    expect_refused(&o, "the tensor t lies beyond the end of the file");
    head(&o, 3, 1, 0);
    info(&o, "t", 1, ne48, GGML_TYPE_Q8_0, 0);
    data(&o, 68);
    expect_refused(&o, "not a whole number of its type's blocks");
    head(&o, 3, 1, 0);
    info(&o, "t", 1, ne32, GGML_TYPE_F32, 8);
    data(&o, 200);
    expect_refused(&o, "not at an aligned offset");
    head(&o, 3, 1, 0);
    info(&o, "t", 1, ne32, GGML_TYPE_F32, 0);
    data(&o, 100); /* 128 needed */
    expect_refused(&o, "beyond the end of the file");
    head(&o, 3, 1, 0);
    info(&o, "t", 1, ne32, GGML_TYPE_F32, (uint64_t)1 << 62);
    data(&o, 128);
    expect_refused(&o, "beyond the end of the file");
    head(&o, 3, 2, 0);
    info(&o, "t", 1, ne32, GGML_TYPE_F32, 0);
    info(&o, "u", 1, ne32, GGML_TYPE_F32, 96);
    data(&o, 256);
    expect_refused(&o, "overlaps another");
    head(&o, 3, 2, 0);
    info(&o, "t", 1, ne32, GGML_TYPE_F32, 0);
    info(&o, "t", 1, ne32, GGML_TYPE_F32, 128);
    data(&o, 256);
    expect_refused(&o, "the tensor t appears twice");
    /* the writer cannot name a tensor "", so the reader refuses one (fuzz_gguf's finding) */
    head(&o, 3, 2, 0);
    info(&o, "t", 1, ne32, GGML_TYPE_F32, 0);
    info(&o, "", 1, ne32, GGML_TYPE_F32, 128);
    data(&o, 256);
    expect_refused(&o, "tensor number 2 has an empty name");
}
END_TEST

/* Every prefix of a valid file and every single-byte change: refused or read, never a crash
 * (the sanitizer build checks every access). */
START_TEST(truncations_and_byte_changes) {
    gguf_writer *w = sample_writer();
    unsigned char *buf;
    size_t n;
    char err[256];
    ck_assert_int_eq(gguf_writer_serialize(w, &buf, &n, err, sizeof err), 0);
    gguf_file *f;
    for (size_t len = 0; len < n; len++) {
        int rc = gguf_open_memory(buf, len, "cut", &f, err, sizeof err);
        if (rc == 0) gguf_close(f); /* a cut inside the last padding can still be whole */
        else ck_assert_ptr_null(f);
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char keep = buf[i];
        buf[i] ^= 0xa5;
        if (gguf_open_memory(buf, n, "flip", &f, err, sizeof err) == 0) gguf_close(f);
        buf[i] = keep;
    }
    free(buf);
    gguf_writer_free(w);
}
END_TEST

/* The fuzzer's seeds (fuzz/corpus/gguf) are valid files: each reads. */
START_TEST(fuzz_seeds_read) {
    const char *seeds[] = {"f32.gguf", "quant.gguf", "aligned64.gguf"};
    for (int i = 0; i < 3; i++) {
        char path[1024], err[256];
        snprintf(path, sizeof path, "%s/gguf/%s", KILN_FUZZ_CORPUS, seeds[i]);
        gguf_file *f;
        ck_assert_msg(gguf_open(path, &f, err, sizeof err) == 0, "%s", err);
        ck_assert_uint_ge(gguf_tensor_count(f), 1);
        gguf_close(f);
    }
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, round_trip);
    tcase_add_test(tc, save_stopped_midway_keeps_the_old_file);
    tcase_add_test(tc, writer_refuses_bad_tensors);
    tcase_add_test(tc, bad_framing);
    tcase_add_test(tc, bad_tensors);
    tcase_add_test(tc, truncations_and_byte_changes);
    tcase_add_test(tc, fuzz_seeds_read);
}

int main(void) { return kt_run_tcase("host_gguf", "gguf", 120, add_tests); }
