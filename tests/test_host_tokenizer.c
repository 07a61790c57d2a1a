/* Tokenizers: GPT-2's ids on a mixed corpus, exact round trips on arbitrary bytes, the file
 * format, the specials, training, and one-line errors for corrupt files. */
#define _POSIX_C_SOURCE 200809L

#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "testutil_host.h"
#include "text/pretokenize.h"
#include "text/tokenizer.h"
#include "testfile.h"

#ifndef KILN_TEST_DATA_DIR
#error "KILN_TEST_DATA_DIR (tests/data) is set by tests/host.cmake"
#endif
#ifndef KILN_FUZZ_CORPUS_DIR
#error "KILN_FUZZ_CORPUS_DIR (fuzz/corpus/tokenizer) is set by tests/host.cmake"
#endif

/* The fuzz target itself, so its properties run on the seeds under gcc (fuzz/fuzz_tokenizer.c). */
#include "../fuzz/fuzz_tokenizer.c"

/* A mixed corpus: English with contractions, code with tabs and CRLF, accents (composed and
 * combining), CJK, Hangul, Cyrillic, Arabic, emoji with a skin tone, a ZWJ family and a ZWJ
 * flag, digits (ASCII, Arabic-Indic, fractions, Roman numerals), runs of spaces, tabs and
 * newlines, NBSP, ideographic space, LINE SEPARATOR; then bytes that are not UTF-8: 0xFF
 * 0xFE, a lone continuation byte, a 4-byte sequence cut after 3 bytes, a 3-byte one cut after
 * 2, an encoded surrogate, an overlong '/', a code point above U+10FFFF and a trailing lead
 * byte. The first CORPUS_VALID_LEN bytes are valid UTF-8. */
static const char corpus[] =
    "Hello, world! It's a test: they're here, we've won, I'm sure you'll see"
    ", he'd go. DON'T 'Quote'\n"
    "def add(x, y):\n"
    "\treturn x + y  # sum\n"
    "\n"
    "\n"
    "    if (a[i] != 0) { b->c = 0x1F; }\r\n"
    "Caf\303\251 na\303\257ve r\303\251sum\303\251 \303\205ngstr\303\266m St"
    "ra\303\237e se\303\261or \305\251\314\201 \346\227\245\346\234\254\350\252"
    "\236\343\201\256\343\203\206\343\202\255\343\202\271\343\203\210 \344\270"
    "\255\346\226\207 \355\225\234\352\265\255\354\226\264 \320\240\321\203\321"
    "\201\321\201\320\272\320\270\320\271 \330\247\331\204\330\271\330\261\330"
    "\250\331\212\330\251 \360\237\230\200 \360\237\221\215\360\237\217\275 "
    "\360\237\221\250\342\200\215\360\237\221\251\342\200\215\360\237\221\247"
    "\342\200\215\360\237\221\246 \360\237\217\263\357\270\217\342\200\215\360"
    "\237\214\210 1234567890 3.14159 1,000,000 \331\243\331\244 \302\275 \342"
    "\205\247    spaces   \t\ttabs\n"
    "\n"
    "\n"
    "  \302\240nbsp\343\200\200ideo \342\200\250 end    bad\377\376utf8 lone"
    "\200cont trunc\360\237\230 trunc3\342\202! surr\355\240\200 over\300\257"
    " big\364\220\200\200 tail\303";
#define CORPUS_VALID_LEN 439

/* GPT-2's ids, obtained with tests/gpt2_reference.py (OpenAI's encoder.py algorithm with the
 * `regex` module, reading tests/data/gpt2; invalid bytes decoded with 'surrogateescape'):
 *   gpt2_reference.py tests/data/gpt2/vocab.json tests/data/gpt2/merges.txt encode FILE
 * The ids of the valid part were cross-checked with two independent implementations, the npm
 * packages gpt-tokenizer 4.0.0 (encoding r50k_base) and gpt-3-encoder 1.1.4, which gave the
 * same 218 ids. */
static const int32_t valid_ids[] = {
    15496, 11, 995, 0, 632, 338, 257, 1332, 25, 484, 821, 994, 11, 356, 1053, 1839, 11, 314, 1101, 1654,
    345, 1183, 766, 11, 339, 1549, 467, 13, 23917, 6, 51, 705, 25178, 6, 198, 4299, 751, 7, 87, 11, 331,
    2599, 198, 197, 7783, 2124, 1343, 331, 220, 1303, 2160, 628, 198, 220, 220, 220, 611, 357, 64, 58, 72,
    60, 14512, 657, 8, 1391, 275, 3784, 66, 796, 657, 87, 16, 37, 26, 1782, 201, 198, 34, 1878, 2634, 41492,
    40560, 16345, 2634, 6184, 227, 782, 2536, 9101, 76, 15195, 39683, 68, 384, 12654, 273, 25370, 102, 136,
    223, 10545, 245, 98, 17312, 105, 45739, 252, 5641, 24336, 25084, 43302, 220, 40792, 23877, 229, 220,
    47991, 250, 166, 113, 255, 168, 244, 112, 12466, 254, 35072, 21727, 21727, 31583, 18849, 140, 117,
    28981, 44690, 26897, 39848, 22654, 45632, 30325, 222, 50169, 235, 8582, 237, 121, 50169, 101, 447, 235,
    41840, 102, 447, 235, 41840, 100, 447, 235, 41840, 99, 12520, 237, 111, 37929, 447, 235, 8582, 234, 230,
    17031, 2231, 30924, 3829, 513, 13, 1415, 19707, 352, 11, 830, 11, 830, 18923, 96, 149, 97, 25208, 2343,
    227, 100, 220, 220, 220, 9029, 220, 220, 220, 197, 197, 8658, 82, 628, 198, 220, 220, 1849, 77, 24145,
    5099, 222, 1651, 564, 101, 886, 220, 220, 220};
static const int32_t corpus_ids[] = {
    15496, 11, 995, 0, 632, 338, 257, 1332, 25, 484, 821, 994, 11, 356, 1053, 1839, 11, 314, 1101, 1654,
    345, 1183, 766, 11, 339, 1549, 467, 13, 23917, 6, 51, 705, 25178, 6, 198, 4299, 751, 7, 87, 11, 331,
    2599, 198, 197, 7783, 2124, 1343, 331, 220, 1303, 2160, 628, 198, 220, 220, 220, 611, 357, 64, 58, 72,
    60, 14512, 657, 8, 1391, 275, 3784, 66, 796, 657, 87, 16, 37, 26, 1782, 201, 198, 34, 1878, 2634, 41492,
    40560, 16345, 2634, 6184, 227, 782, 2536, 9101, 76, 15195, 39683, 68, 384, 12654, 273, 25370, 102, 136,
    223, 10545, 245, 98, 17312, 105, 45739, 252, 5641, 24336, 25084, 43302, 220, 40792, 23877, 229, 220,
    47991, 250, 166, 113, 255, 168, 244, 112, 12466, 254, 35072, 21727, 21727, 31583, 18849, 140, 117,
    28981, 44690, 26897, 39848, 22654, 45632, 30325, 222, 50169, 235, 8582, 237, 121, 50169, 101, 447, 235,
    41840, 102, 447, 235, 41840, 100, 447, 235, 41840, 99, 12520, 237, 111, 37929, 447, 235, 8582, 234, 230,
    17031, 2231, 30924, 3829, 513, 13, 1415, 19707, 352, 11, 830, 11, 830, 18923, 96, 149, 97, 25208, 2343,
    227, 100, 220, 220, 220, 9029, 220, 220, 220, 197, 197, 8658, 82, 628, 198, 220, 220, 1849, 77, 24145,
    5099, 222, 1651, 564, 101, 886, 220, 220, 220, 2089, 187, 186, 40477, 23, 13497, 222, 3642, 40122,
    47249, 40122, 18, 158, 224, 0, 969, 81, 169, 254, 222, 625, 124, 107, 1263, 176, 238, 222, 222, 7894,
    127};

static tokenizer *gpt2(void) {
    static tokenizer *t;
    if (!t) {
        char err[512];
        ck_assert_msg(tokenizer_import_gpt2(KILN_TEST_DATA_DIR "/gpt2/vocab.json", KILN_TEST_DATA_DIR "/gpt2/merges.txt",
                                            &t, err, sizeof err) == 0,
                      "%s", err);
    }
    return t;
}

static void expect_ids(const tokenizer *t, const char *text, size_t n, const int32_t *want, size_t n_want) {
    int32_t *ids;
    int64_t n_ids;
    char err[256];
    ck_assert_msg(tokenizer_encode(t, (const uint8_t *)text, n, &ids, &n_ids, err, sizeof err) == 0, "%s", err);
    for (size_t i = 0; i < n_want && i < (size_t)n_ids; i++)
        ck_assert_msg(ids[i] == want[i], "id %zu: %d, GPT-2 gives %d", i, ids[i], want[i]);
    ck_assert_int_eq(n_ids, (int64_t)n_want);
    free(ids);
}

/* decode(encode(x)) == x */
static void expect_round_trip(const tokenizer *t, const uint8_t *text, size_t n) {
    int32_t *ids;
    int64_t n_ids;
    uint8_t *back;
    size_t n_back;
    char err[256];
    ck_assert_msg(tokenizer_encode(t, text, n, &ids, &n_ids, err, sizeof err) == 0, "%s", err);
    for (int64_t i = 0; i < n_ids; i++) {
        ck_assert(ids[i] >= 0 && ids[i] < tokenizer_vocab_size(t));
        ck_assert(!tokenizer_is_special(t, ids[i])); /* text never encodes to a special */
    }
    ck_assert_msg(tokenizer_decode(t, ids, n_ids, &back, &n_back, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(n_back, n);
    int32_t *raw; /* the cache changes nothing */
    int64_t n_raw;
    ck_assert(tokenizer_encode_uncached(t, text, n, &raw, &n_raw, err, sizeof err) == 0);
    ck_assert(n_raw == n_ids && memcmp(raw, ids, (size_t)n_ids * sizeof *ids) == 0);
    free(raw);
    ck_assert(n == 0 || memcmp(back, text, n) == 0);
    free(ids);
    free(back);
}

START_TEST(gpt2_ids_on_a_mixed_corpus) {
    tokenizer *t = gpt2();
    ck_assert_int_eq(tokenizer_vocab_size(t), 50257);
    ck_assert_int_eq(tokenizer_merge_count(t), 50000);
    expect_ids(t, corpus, CORPUS_VALID_LEN, valid_ids, sizeof valid_ids / sizeof valid_ids[0]);
    expect_ids(t, corpus, sizeof corpus - 1, corpus_ids, sizeof corpus_ids / sizeof corpus_ids[0]);
    expect_round_trip(t, (const uint8_t *)corpus, sizeof corpus - 1);
    /* token by token too: the streaming decoder's bytes */
    uint8_t joined[sizeof corpus];
    size_t at = 0;
    for (size_t i = 0; i < sizeof corpus_ids / sizeof corpus_ids[0]; i++) {
        size_t len;
        const uint8_t *b = tokenizer_token_bytes(t, corpus_ids[i], &len);
        ck_assert(b && at + len < sizeof joined);
        memcpy(joined + at, b, len);
        at += len;
    }
    ck_assert_uint_eq(at, sizeof corpus - 1);
    ck_assert(memcmp(joined, corpus, at) == 0);
}
END_TEST

START_TEST(gpt2_specials_and_plain_text) {
    tokenizer *t = gpt2();
    ck_assert_int_eq(tokenizer_special(t, TOK_BOS), 50256);
    ck_assert_int_eq(tokenizer_special(t, TOK_EOS), 50256);
    ck_assert_int_eq(tokenizer_special(t, TOK_PAD), -1);
    ck_assert_int_eq(tokenizer_special(t, TOK_CLS), -1);
    ck_assert_int_eq(tokenizer_special(t, TOK_SEP), -1);
    ck_assert_int_eq(tokenizer_special(t, TOK_MASK), -1);
    /* the special's name in the text is data: GPT-2's ids for the 13 characters, from
     * gpt2_reference.py as above ("<", "|", "end", "of", "text", "|", ">") */
    static const int32_t eot_as_text[] = {27, 91, 437, 1659, 5239, 91, 29};
    expect_ids(t, "<|endoftext|>", 13, eot_as_text, 7);
    uint8_t *bytes;
    size_t n;
    char err[256];
    int32_t ids[] = {50256, 15496};
    ck_assert(tokenizer_decode(t, ids, 2, &bytes, &n, err, sizeof err) == 0);
    ck_assert_uint_eq(n, 18);
    ck_assert(memcmp(bytes, "<|endoftext|>Hello", 18) == 0);
    free(bytes);
    ids[1] = 50257;
    ck_assert_int_eq(tokenizer_decode(t, ids, 2, &bytes, &n, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "id 50257 is outside the vocabulary (0..50256)") && !strchr(err, '\n'), "%s", err);
    ids[1] = -1;
    ck_assert_int_eq(tokenizer_decode(t, ids, 2, &bytes, &n, err, sizeof err), -1);
    /* empty text: no ids */
    int32_t *none;
    int64_t n_none;
    ck_assert(tokenizer_encode(t, (const uint8_t *)"", 0, &none, &n_none, err, sizeof err) == 0 && n_none == 0);
    free(none);
}
END_TEST

/* A small deterministic generator (xorshift64*), so the random texts are the same every run. */
static uint64_t rng_state;
static uint32_t next_u32(void) {
    rng_state ^= rng_state >> 12, rng_state ^= rng_state << 25, rng_state ^= rng_state >> 27;
    return (uint32_t)((rng_state * UINT64_C(2685821657736338717)) >> 32);
}

/* Random texts: uniform bytes; long runs of one byte; a mixture of words, spaces, UTF-8
 * fragments and stray bytes. */
static size_t random_text(uint8_t *buf, size_t cap, int kind) {
    static const char *const pieces[] = {"the", " cat", "'s", " ", "   ", "\n", "\t", "caf\xc3\xa9", "\xe6\x97\xa5",
                                         "\xf0\x9f\x98\x80", "\xe2\x80\x8d", "42", " 7", "!?", "'ll", "\xc3", "\x80",
                                         "\xf0\x9f", "\xff", "\r\n", "\xc2\xa0", "\xe3\x80\x80"};
    size_t n = 1 + next_u32() % (cap - 8);
    if (kind == 0) {
        for (size_t i = 0; i < n; i++) buf[i] = (uint8_t)next_u32();
        return n;
    }
    if (kind == 1) {
        size_t i = 0;
        while (i < n) {
            uint8_t b = (uint8_t)next_u32();
            size_t run = 1 + next_u32() % 300;
            for (size_t k = 0; k < run && i < n; k++) buf[i++] = b;
        }
        return n;
    }
    size_t i = 0;
    while (i + 5 < n) {
        const char *p = pieces[next_u32() % (sizeof pieces / sizeof pieces[0])];
        size_t len = strlen(p);
        memcpy(buf + i, p, len);
        i += len;
    }
    return i;
}

START_TEST(round_trip_on_arbitrary_bytes) {
    tokenizer *bytes = tokenizer_bytes(1), *trained;
    char err[256];
    ck_assert_msg(tokenizer_train((const uint8_t *)corpus, sizeof corpus - 1, 400, &trained, err, sizeof err) == 0,
                  "%s", err);
    const tokenizer *all[] = {bytes, trained, gpt2()};
    uint8_t every[256];
    for (int b = 0; b < 256; b++) every[b] = (uint8_t)b;
    size_t cap = 1 << 14;
    uint8_t *buf = malloc(cap);
    for (int k = 0; k < 3; k++) {
        expect_round_trip(all[k], every, 256);
        rng_state = 0x6b696c6e + (uint64_t)k;
        for (int rep = 0; rep < 60; rep++) {
            size_t n = random_text(buf, cap, rep % 3);
            expect_round_trip(all[k], buf, n);
        }
    }
    /* a long piece exercises the heap: 100000 letters without a space */
    uint8_t *letters = malloc(100000);
    for (size_t i = 0; i < 100000; i++) letters[i] = (uint8_t)("abcdefgh"[next_u32() % 8]);
    expect_round_trip(gpt2(), letters, 100000);
    free(letters);
    free(buf);
    tokenizer_free(bytes);
    tokenizer_free(trained);
}
END_TEST

START_TEST(byte_level_tokenizers) {
    tokenizer *plain = tokenizer_bytes(0), *t = tokenizer_bytes(1);
    ck_assert_int_eq(tokenizer_vocab_size(plain), 256);
    for (int k = 0; k < TOK_SPECIAL_COUNT; k++) ck_assert_int_eq(tokenizer_special(plain, (tokenizer_special_kind)k), -1);
    ck_assert_int_eq(tokenizer_vocab_size(t), 262);
    static const char *const names[] = {"[PAD]", "[BOS]", "[EOS]", "[CLS]", "[SEP]", "[MASK]"};
    for (int k = 0; k < TOK_SPECIAL_COUNT; k++) {
        ck_assert_int_eq(tokenizer_special(t, (tokenizer_special_kind)k), 256 + k);
        size_t len;
        const uint8_t *b = tokenizer_token_bytes(t, 256 + k, &len);
        ck_assert(len == strlen(names[k]) && memcmp(b, names[k], len) == 0);
    }
    size_t len;
    ck_assert_ptr_null(tokenizer_token_bytes(t, 262, &len));
    ck_assert_uint_eq(len, 0);
    /* ids are the bytes */
    int32_t *ids;
    int64_t n;
    char err[256];
    ck_assert(tokenizer_encode(t, (const uint8_t *)"a\xff[MASK]", 8, &ids, &n, err, sizeof err) == 0);
    ck_assert_int_eq(n, 8);
    ck_assert_int_eq(ids[0], 'a');
    ck_assert_int_eq(ids[1], 255);
    ck_assert_int_eq(ids[2], '[');
    free(ids);
    tokenizer_free(plain);
    tokenizer_free(t);
}
END_TEST

/* serialize -> parse -> serialize is the identity, and the parsed tokenizer encodes alike */
static void expect_file_round_trip(const tokenizer *t) {
    size_t n, n2;
    char *text = tokenizer_serialize(t, &n), err[256];
    ck_assert_ptr_nonnull(text);
    ck_assert(n > strlen(TOKENIZER_MAGIC) && memcmp(text, TOKENIZER_MAGIC "\n", strlen(TOKENIZER_MAGIC) + 1) == 0);
    tokenizer *back;
    ck_assert_msg(tokenizer_parse(text, n, "mem", &back, err, sizeof err) == 0, "%s", err);
    char *text2 = tokenizer_serialize(back, &n2);
    ck_assert(n2 == n && memcmp(text, text2, n) == 0);
    ck_assert_int_eq(tokenizer_vocab_size(back), tokenizer_vocab_size(t));
    for (int k = 0; k < TOK_SPECIAL_COUNT; k++)
        ck_assert_int_eq(tokenizer_special(back, (tokenizer_special_kind)k), tokenizer_special(t, (tokenizer_special_kind)k));
    int32_t *a, *b;
    int64_t na, nb;
    ck_assert(tokenizer_encode(t, (const uint8_t *)corpus, sizeof corpus - 1, &a, &na, err, sizeof err) == 0);
    ck_assert(tokenizer_encode(back, (const uint8_t *)corpus, sizeof corpus - 1, &b, &nb, err, sizeof err) == 0);
    ck_assert(na == nb && memcmp(a, b, (size_t)na * sizeof *a) == 0);
    free(a);
    free(b);
    free(text);
    free(text2);
    tokenizer_free(back);
}

START_TEST(file_format_round_trip) {
    tokenizer *bytes = tokenizer_bytes(1), *trained;
    char err[256];
    ck_assert(tokenizer_train((const uint8_t *)corpus, sizeof corpus - 1, 300, &trained, err, sizeof err) == 0);
    expect_file_round_trip(bytes);
    expect_file_round_trip(trained);
    expect_file_round_trip(gpt2());
    /* save and load through a file; the save leaves no temporary file behind */
    char dir[] = "/tmp/kiln_tok_test_XXXXXX", path[256];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/gpt2.tok", dir);
    ck_assert_msg(tokenizer_save(gpt2(), path, err, sizeof err) == 0, "%s", err);
    tokenizer *loaded;
    ck_assert_msg(tokenizer_load(path, &loaded, err, sizeof err) == 0, "%s", err);
    expect_ids(loaded, corpus, sizeof corpus - 1, corpus_ids, sizeof corpus_ids / sizeof corpus_ids[0]);
    tokenizer_free(loaded);
    DIR *d = opendir(dir);
    int entries = 0;
    for (struct dirent *e; (e = readdir(d));) entries += e->d_name[0] != '.';
    closedir(d);
    ck_assert_int_eq(entries, 1);
    remove(path);
    snprintf(path, sizeof path, "%s/missing.tok", dir);
    ck_assert_int_eq(tokenizer_load(path, &loaded, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "missing.tok: cannot open the tokenizer") && !strchr(err, '\n'), "%s", err);
    ck_assert_int_eq(tokenizer_load(dir, &loaded, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "not a regular file"), "%s", err);
    rmdir(dir);
    tokenizer_free(bytes);
    tokenizer_free(trained);
}
END_TEST

/* Saving GPT-2's tokenizer (about 1 MB) over a smaller one, stopped midway by a file-size
 * limit: 1 when the save fails with a message naming the file and the write. */
static int gpt2_save_fails(void *path) {
    char err[512];
    return tokenizer_save(gpt2(), path, err, sizeof err) == -1 && strstr(err, path) == err &&
           strstr(err, "write of") && !strchr(err, '\n');
}

START_TEST(save_stopped_midway_keeps_the_old_file) {
    char dir[] = "/tmp/kiln_tok_test_XXXXXX", path[256], err[256];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/t.tok", dir);
    tokenizer *bytes = tokenizer_bytes(1);
    ck_assert_msg(tokenizer_save(bytes, path, err, sizeof err) == 0, "%s", err);
    tokenizer_free(bytes);
    const char *kept = path;
    kt_expect_failing_write(64 << 10, gpt2_save_fails, path, &kept, 1);
    remove(path);
    ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/* A valid small file to corrupt: 256 byte ids (identity), the six specials, one merge. */
static char *small_file(void) {
    tokenizer *t = tokenizer_bytes(1);
    size_t n;
    char *text = tokenizer_serialize(t, &n);
    tokenizer_free(t);
    return text;
}

START_TEST(parse_errors_name_the_line) {
    char *good = small_file(); /* 8 lines: magic, vocab, pretokenizer, bytes, 6 specials... */
    char bytes_line[2048];
    const char *b = strstr(good, "bytes ");
    snprintf(bytes_line, sizeof bytes_line, "%.*s", (int)(strchr(b, '\n') - b), b);
    static const struct {
        const char *head; /* lines before the bytes line */
        const char *tail; /* lines after it */
        const char *want;
    } cases[] = {
        {"kiln-tokenizer 3\n", "", "x:1: not a kiln tokenizer"},
        {"kiln-tokenizer 1\nvocab 255\npretokenizer none\n", "", "x:2: expected \"vocab N\" with 256 <= N"},
        {"kiln-tokenizer 1\nvocab 99999999\npretokenizer none\n", "", "x:2: expected \"vocab N\""},
        {"kiln-tokenizer 1\nvocab 0257\npretokenizer none\n", "", "x:2: expected \"vocab N\""},
        {"kiln-tokenizer 1\nvocab 257\npretokenizer bert\n", "", "x:3: expected \"pretokenizer gpt2\""},
        {"kiln-tokenizer 1\nvocab 257\npretokenizer none\n", "", "x:4: id 256 is not defined"},
        {"kiln-tokenizer 1\nvocab 256\npretokenizer none\n", "merge 1 2 3\n", "x:5: id 3 is defined twice"},
        {"kiln-tokenizer 1\nvocab 257\npretokenizer none\n", "merge 1 2\n", "x:5: expected \"merge LEFT RIGHT ID\""},
        {"kiln-tokenizer 1\nvocab 257\npretokenizer none\n", "merge 1 2 257\n", "x:5: expected \"merge LEFT RIGHT ID\""},
        {"kiln-tokenizer 1\nvocab 258\npretokenizer none\n", "merge 1 256 257\n", "x:5: merge operand 256 is not a byte"},
        {"kiln-tokenizer 1\nvocab 258\npretokenizer none\n", "merge 1 2 256\nmerge 1 2 257\n", "x:6: the pair 1 2 is merged twice"},
        {"kiln-tokenizer 1\nvocab 258\npretokenizer none\n", "special 256 [A] bos\nspecial 257 [B] bos\n", "x:6: two special tokens are bos"},
        {"kiln-tokenizer 1\nvocab 257\npretokenizer none\n", "special 256 [A] boss\n", "x:5: ROLES must be"},
        {"kiln-tokenizer 1\nvocab 257\npretokenizer none\n", "special 256 [A] bos,\n", "x:5: ROLES ends with a comma"},
        {"kiln-tokenizer 1\nvocab 257\npretokenizer none\n", "special 256 [A]\n", "x:5: expected \"special ID NAME ROLES\""},
        {"kiln-tokenizer 1\nvocab 258\npretokenizer none\n", "merge 1 2 256\nspecial 257 [A] -\n", "x:6: special tokens come before"},
        {"kiln-tokenizer 1\nvocab 257\npretokenizer none\n", "\n", "x:5: an empty line"},
        {"kiln-tokenizer 1\nvocab 257\npretokenizer none\n", "token 256\n", "x:5: unknown record \"token\""},
        {"kiln-tokenizer 1\nvocab 257\npretokenizer none\n", "merge 1 2 256 \n", "x:5: a space at the end of the line"},
        {"kiln-tokenizer 1\nvocab 257\npretokenizer none\n", "merge 1  2 256\n", "x:5: expected \"merge LEFT RIGHT ID\""},
        {"kiln-tokenizer 1\nvocab 257\n", NULL, "x:3: the file ends before the \"pretokenizer\" line"},
        {"kiln-tokenizer 1\nvocab 257\npretokenizer none\nbytes 1 2 3\n", NULL, "x:4: expected \"bytes\" and 256 ids"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[4096], err[256];
        if (cases[i].tail)
            snprintf(text, sizeof text, "%s%s\n%s", cases[i].head, bytes_line, cases[i].tail);
        else
            snprintf(text, sizeof text, "%s", cases[i].head);
        tokenizer *t = (tokenizer *)1;
        ck_assert_msg(tokenizer_parse(text, strlen(text), "x", &t, err, sizeof err) == -1, "case %zu parsed", i);
        ck_assert_ptr_null(t);
        ck_assert_msg(strstr(err, cases[i].want) == err, "case %zu: \"%s\", want \"%s\"", i, err, cases[i].want);
        ck_assert_msg(!strchr(err, '\n'), "case %zu: not one line: %s", i, err);
    }
    /* a duplicate byte id */
    char text[4096], err[256];
    snprintf(text, sizeof text, "kiln-tokenizer 1\nvocab 256\npretokenizer none\nbytes 0 0%s\n", bytes_line + 9);
    tokenizer *t;
    ck_assert_int_eq(tokenizer_parse(text, strlen(text), "x", &t, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "x:4: id 0 is defined twice"), "%s", err);
    /* CRLF line ends and a missing last newline are accepted */
    snprintf(text, sizeof text, "kiln-tokenizer 1\r\nvocab 257\r\npretokenizer gpt2\r\n%s\r\nmerge 97 98 256", bytes_line);
    ck_assert_msg(tokenizer_parse(text, strlen(text), "x", &t, err, sizeof err) == 0, "%s", err);
    static const int32_t ab[] = {256, 99, 256};
    expect_ids(t, "abcab", 5, ab, 3);
    tokenizer_free(t);
    free(good);
}
END_TEST

/* GPT-2's byte-to-unicode map, written out for the synthetic vocabularies below. */
static void byte_string(int b, char *out) {
    static int cp[256];
    if (!cp[1]) {
        int n = 0;
        for (int i = 0; i < 256; i++) {
            int printable = (i >= '!' && i <= '~') || (i >= 0xA1 && i <= 0xAC) || (i >= 0xAE);
            cp[i] = printable ? i : 256 + n++;
        }
    }
    if (cp[b] < 0x80) {
        out[0] = (char)cp[b], out[1] = 0;
    } else {
        out[0] = (char)(0xC0 | cp[b] >> 6), out[1] = (char)(0x80 | (cp[b] & 0x3F)), out[2] = 0;
    }
}

/* A tiny GPT-2-style vocab.json: the 256 bytes at ids 0..255 (as JSON strings), then
 * `extra` (", \"Ġt\": 256, ..."), then "}". */
static char *tiny_vocab(const char *extra) {
    size_t cap = 8192;
    char *v = malloc(cap), s[4], esc[16];
    size_t at = (size_t)snprintf(v, cap, "{");
    for (int b = 0; b < 256; b++) {
        byte_string(b, s);
        if (s[0] == '"' || s[0] == '\\')
            snprintf(esc, sizeof esc, "\\%s", s);
        else
            snprintf(esc, sizeof esc, "%s", s);
        at += (size_t)snprintf(v + at, cap - at, "%s\"%s\": %d", b ? ", " : "", esc, b);
    }
    snprintf(v + at, cap - at, "%s}", extra);
    return v;
}

START_TEST(gpt2_import_errors_are_one_line) {
    static const struct {
        const char *extra, *merges, *want;
    } cases[] = {
        {", \"\xc4\xa0t\": 256, \"<|endoftext|>\": 257", "#version: 0.2\n\xc4\xa0 t\n", NULL},
        {", \"\xc4\xa0t\": 256, \"<|endoftext|>\": 257", "\xc4\xa0 t\r\n", NULL}, /* no #version, CRLF */
        {", \"\xc4\xa0t\": 256,", "", "v.json: line 1, column"},                      /* bad JSON */
        {", \"\xc4\xa0t\": 256", "\xc4\xa0 q\xc3\xa9\n", "m.txt:1: \"q\xc3\xa9\" is not in v.json"},
        {", \"\xc4\xa0t\": 256", "#version: 0.2\n\xc4\xa0t\n", "m.txt:2: expected two tokens separated by one space"},
        {", \"\xc4\xa0t\": 256", "\xc4\xa0 t x\n", "m.txt:1: expected two tokens"},
        {", \"\xc4\xa0t\": 256", "t \xc4\xa0\n", "m.txt:1: the merge's result \"t\xc4\xa0\" is not in v.json"},
        {", \"\xc4\xa0t\": 255", "", "v.json: the id 255 is given to both"},
        {", \"\xc4\xa0t\": 300", "", "v.json: the id 300 of \"\xc4\xa0t\" is not contiguous: 257 tokens need ids 0..256"},
        {", \"\xc4\xa0t\": 1.5", "", "v.json: the id of \"\xc4\xa0t\" is not a whole number"},
        {", \"\xc4\xa0t\": 256, \"\xc4\xa0th\": 257", "\xc4\xa0t h\n\xc4\xa0 t\n", "m.txt:1: \xc4\xa0t h: merge operand 256 is not a byte nor"},
        {", \"\xc4\xa0t\": 256", "\xc4\xa0 t\n\xc4\xa0 t\n", "m.txt:2: \xc4\xa0 t: the pair"},
        {", \"\xc4\xa0t\": 256, \"bad name\": 257", "\xc4\xa0 t\n", "v.json: \"bad name\" (id 257) is neither a byte"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *vocab = tiny_vocab(cases[i].extra), err[512] = "";
        tokenizer *t = (tokenizer *)1;
        int rc = tokenizer_import_gpt2_memory(vocab, strlen(vocab), "v.json", cases[i].merges, strlen(cases[i].merges),
                                              "m.txt", &t, err, sizeof err);
        free(vocab);
        if (!cases[i].want) {
            ck_assert_msg(rc == 0, "case %zu: %s", i, err);
            ck_assert_int_eq(tokenizer_vocab_size(t), 258);
            ck_assert_int_eq(tokenizer_special(t, TOK_EOS), 257);
            /* "a to": "a", "Ġt", "o" (the tiny vocabulary gives byte b the id b) */
            int32_t wanted[] = {'a', 256, 'o'};
            expect_ids(t, "a to", 4, wanted, 3);
            tokenizer_free(t);
            continue;
        }
        ck_assert_msg(rc == -1 && t == NULL, "case %zu imported", i);
        ck_assert_msg(strstr(err, cases[i].want) == err, "case %zu: \"%s\", want \"%s\"", i, err, cases[i].want);
        ck_assert_msg(!strchr(err, '\n'), "case %zu: not one line: %s", i, err);
    }
    char err[512];
    tokenizer *t;
    ck_assert_int_eq(tokenizer_import_gpt2("/nonexistent/vocab.json", KILN_TEST_DATA_DIR "/gpt2/merges.txt", &t, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "/nonexistent/vocab.json: cannot open the vocabulary"), "%s", err);
}
END_TEST

START_TEST(training_refuses_a_small_vocab) {
    tokenizer *t = (tokenizer *)1;
    char err[256];
    ck_assert_int_eq(tokenizer_train((const uint8_t *)"abc", 3, 261, &t, err, sizeof err), -1);
    ck_assert_ptr_null(t);
    ck_assert_msg(!strcmp(err, "a vocabulary of 261 is too small: the 256 bytes and the 6 special tokens need 262"), "%s",
                  err);
    ck_assert_int_eq(tokenizer_train((const uint8_t *)"abc", 3, 262, &t, err, sizeof err), 0);
    ck_assert_int_eq(tokenizer_vocab_size(t), 262); /* no merges: byte-level with specials */
    ck_assert_int_eq(tokenizer_special(t, TOK_MASK), 261);
    tokenizer_free(t);
}
END_TEST

START_TEST(training_is_deterministic_and_learns_words) {
    /* 200 lines of a few words; " the" and " cat" are the most frequent pieces */
    size_t cap = 200 * 64, n = 0;
    char *text = malloc(cap);
    static const char *const lines[] = {"the cat sat on the mat\n", "the dog and the cat\n", "a cat, the end\n"};
    for (int i = 0; i < 200; i++) n += (size_t)snprintf(text + n, cap - n, "%s", lines[i % 3]);
    tokenizer *a, *b;
    char err[256];
    ck_assert(tokenizer_train((const uint8_t *)text, n, 300, &a, err, sizeof err) == 0);
    ck_assert(tokenizer_train((const uint8_t *)text, n, 300, &b, err, sizeof err) == 0);
    size_t na, nb;
    char *fa = tokenizer_serialize(a, &na), *fb = tokenizer_serialize(b, &nb);
    ck_assert(na == nb && memcmp(fa, fb, na) == 0);
    /* few distinct pairs: training stops before 300 ids when no pair occurs twice */
    ck_assert_int_lt(tokenizer_vocab_size(a), 300);
    static const char *const words[] = {" the", " cat", "the", " sat", " mat", " dog", " end", " on"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        int32_t *ids;
        int64_t n_ids;
        ck_assert(tokenizer_encode(a, (const uint8_t *)words[i], strlen(words[i]), &ids, &n_ids, err, sizeof err) == 0);
        ck_assert_msg(n_ids == 1 && ids[0] >= 262, "\"%s\" is %lld tokens", words[i], (long long)n_ids);
        free(ids);
    }
    /* merges are numbered from 262 on; that they are the right ones is checked against
     * tests/bpe_train_reference.py (a naive trainer) in tests/host_tokenizer.sh */
    ck_assert(strstr(fa, "\nmerge ") && strstr(fa, " 262\n"));
    free(fa);
    free(fb);
    free(text);
    tokenizer_free(a);
    tokenizer_free(b);
}
END_TEST

START_TEST(pretokenizer_pieces) {
    /* pieces as Python's regex.findall gives them for GPT-2's pattern (gpt2_reference.py) */
    static const struct {
        const char *text;
        const char *pieces[12];
    } cases[] = {
        {"Hello world", {"Hello", " world"}},
        {"it's they're", {"it", "'s", " they", "'re"}},
        {"a   b", {"a", "  ", " b"}},
        {"a \n b", {"a", " \n", " b"}},
        {"x\n\ny", {"x", "\n", "\n", "y"}},
        {"end   ", {"end", "   "}},
        {" 42x", {" 42", "x"}},
        {" ?!'s", {" ?!'", "s"}},
        {"a\xff\x80" "b", {"a", "\xff\x80", "b"}},
        {"\xc3\xa9t\xc3\xa9 caf\xc3\xa9", {"\xc3\xa9t\xc3\xa9", " caf\xc3\xa9"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const uint8_t *s = (const uint8_t *)cases[i].text;
        size_t n = strlen(cases[i].text), pos = 0;
        int k = 0;
        while (pos < n) {
            size_t end = pretokenize_next(s, n, pos);
            ck_assert_msg(cases[i].pieces[k] != NULL, "case %zu: too many pieces", i);
            ck_assert_msg(end - pos == strlen(cases[i].pieces[k]) && !memcmp(s + pos, cases[i].pieces[k], end - pos),
                          "case %zu piece %d: \"%.*s\"", i, k, (int)(end - pos), s + pos);
            pos = end;
            k++;
        }
        ck_assert_msg(cases[i].pieces[k] == NULL, "case %zu: too few pieces", i);
    }
}
END_TEST

/* One committed fuzz seed through the fuzz target's properties (fuzz_seeds_replay runs them
 * all). */
static int replay_seed(const char *path, const char *name) {
    (void)name;
    size_t n;
    uint8_t *buf = kt_read_file(path, &n);
    ck_assert_ptr_nonnull(buf);
    ck_assert_int_eq(LLVMFuzzerTestOneInput(buf, n), 0);
    free(buf);
    return 1;
}

START_TEST(fuzz_seeds_replay) { kt_replay_seeds(KILN_FUZZ_CORPUS_DIR, replay_seed, 4, 0); }
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, gpt2_ids_on_a_mixed_corpus);
    tcase_add_test(tc, gpt2_specials_and_plain_text);
    tcase_add_test(tc, round_trip_on_arbitrary_bytes);
    tcase_add_test(tc, byte_level_tokenizers);
    tcase_add_test(tc, file_format_round_trip);
    tcase_add_test(tc, save_stopped_midway_keeps_the_old_file);
    tcase_add_test(tc, parse_errors_name_the_line);
    tcase_add_test(tc, gpt2_import_errors_are_one_line);
    tcase_add_test(tc, training_refuses_a_small_vocab);
    tcase_add_test(tc, training_is_deterministic_and_learns_words);
    tcase_add_test(tc, pretokenizer_pieces);
    tcase_add_test(tc, fuzz_seeds_replay);
}

/* 300 s: the sanitizer build takes about 40 s in all */
int main(void) { return kt_run_tcase("tokenizer", "tokenizer", 300, add_tests); }
