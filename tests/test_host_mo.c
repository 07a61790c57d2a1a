/* GNU .mo catalogs (host/formats/mo_catalog.c) and the pairs taken from them
 * (host/formats/mo_pairs.c).
 *
 * The catalogs are built byte by byte here from the format's description in the gettext
 * manual ("The Format of GNU MO Files": magic, revision, N, O, T, S, H, then the two tables
 * of (length, offset) and the NUL-terminated strings), in both byte orders, and then lied
 * about: offsets and lengths past the end, a missing NUL, a bad magic or revision, a
 * truncated header. Real catalogs are read by tests/host_pairs.sh. */
#define _POSIX_C_SOURCE 200809L

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/mo_catalog.h"
#include "formats/mo_pairs.h"
#include "testutil.h"
#include "testutil_host.h"

/* A .mo image under construction. */
typedef struct mo_image {
    unsigned char b[4096];
    size_t n;
    int big;
} mo_image;

static void put32(mo_image *m, size_t at, uint32_t v) {
    for (int i = 0; i < 4; i++) m->b[at + (size_t)i] = (unsigned char)(v >> (m->big ? 8 * (3 - i) : 8 * i));
}

/* n_strings (original, translation) pairs; lengths given because strings may hold NULs.
 * Header at 0 (28 bytes, or 48 for a minor revision 1), originals' table, translations'
 * table, then each string with its NUL. */
static void build(mo_image *m, int big, uint32_t revision, int n_strings, const char *const *orig,
                  const size_t *orig_len, const char *const *trans, const size_t *trans_len) {
    memset(m, 0, sizeof *m);
    m->big = big;
    size_t header = (revision & 0xffff) ? 48 : 28, o = header, t = o + 8 * (size_t)n_strings;
    size_t pos = t + 8 * (size_t)n_strings;
    put32(m, 0, MO_MAGIC);
    put32(m, 4, revision);
    put32(m, 8, (uint32_t)n_strings);
    put32(m, 12, (uint32_t)o);
    put32(m, 16, (uint32_t)t);
    put32(m, 20, 0); /* no hash table */
    put32(m, 24, (uint32_t)pos);
    if (header == 48) /* no system-dependent segments or strings; their tables are empty */
        for (size_t k = 28; k < 48; k += 8) put32(m, k, 0), put32(m, k + 4, (uint32_t)pos);
    for (int i = 0; i < n_strings; i++) {
        const char *s[2] = {orig[i], trans[i]};
        size_t len[2] = {orig_len[i], trans_len[i]}, tab[2] = {o, t};
        for (int k = 0; k < 2; k++) {
            put32(m, tab[k] + 8 * (size_t)i, (uint32_t)len[k]);
            put32(m, tab[k] + 8 * (size_t)i + 4, (uint32_t)pos);
            memcpy(m->b + pos, s[k], len[k]);
            pos += len[k] + 1; /* the NUL: b is zeroed */
        }
    }
    m->n = pos;
}

/* The catalog every parsing test uses: a header, a plain entry, one with a context, a
 * plural, and an untranslated one (msgfmt sorts by original string; the order is kept). */
#define HEADER_TEXT "Project-Id-Version: demo 1.0\nContent-Type: text/plain; charset=UTF-8\n"
static const char *const orig[] = {"", "Menu\004_Open", "Open file", "Quit", "one file\0%d files"};
static const size_t orig_len[] = {0, 10, 9, 4, 17};
static const char *const trans[] = {HEADER_TEXT, "\xc3\x96_ffnen", "Datei \303\266ffnen", "", "eine Datei\0%d Dateien"};
static const size_t trans_len[] = {sizeof HEADER_TEXT - 1, 9, 13, 0, 21};
enum { N_DEMO = 5 };

static mo_catalog *parse_ok(const mo_image *m) {
    mo_catalog *c = NULL;
    char err[256] = "";
    ck_assert_msg(mo_parse(m->b, m->n, "demo.mo", &c, err, sizeof err) == 0, "%s", err);
    return c;
}

static void expect_error(const mo_image *m, size_t n, const char *want) {
    mo_catalog *c = (mo_catalog *)1;
    char err[256] = "";
    ck_assert_int_eq(mo_parse(m->b, n, "demo.mo", &c, err, sizeof err), -1);
    ck_assert_ptr_null(c);
    ck_assert_msg(strstr(err, want) && !strchr(err, '\n'), "expected \"%s\", got \"%s\"", want, err);
    ck_assert_msg(!strncmp(err, "demo.mo: ", 9), "%s", err);
}

START_TEST(reads_both_byte_orders) {
    for (int big = 0; big <= 1; big++) {
        for (uint32_t revision = 0; revision <= 0x10001; revision += 0x10001) { /* 0.0 and 1.1 */
            mo_image m;
            build(&m, big, revision, N_DEMO, orig, orig_len, trans, trans_len);
            mo_catalog *c = parse_ok(&m);
            ck_assert_int_eq(c->big_endian, big);
            ck_assert_uint_eq(c->revision, revision);
            ck_assert_int_eq(c->count, N_DEMO);
            ck_assert(c->has_header && !c->header_fuzzy);
            ck_assert_str_eq(c->charset, "utf-8");
            const mo_entry *e = c->entries;
            ck_assert(e[0].header && !e[0].plural && e[0].id_len == 0);
            ck_assert(e[1].ctxt && e[1].ctxt_len == 4 && !memcmp(e[1].ctxt, "Menu", 4));
            ck_assert(e[1].id_len == 5 && !strcmp(e[1].id, "_Open") && !e[1].header && !e[1].plural);
            ck_assert(e[1].str_len == 9 && !strcmp(e[1].str, "\xc3\x96_ffnen"));
            ck_assert(!e[2].ctxt && !strcmp(e[2].id, "Open file") && e[2].str_len == 13);
            ck_assert(e[3].str_len == 0 && !e[3].plural);
            ck_assert(e[4].plural && e[4].id_len == 17 && !memcmp(e[4].id, "one file\0%d files", 17));
            ck_assert(e[4].str_len == 21 && !memcmp(e[4].str, "eine Datei\0%d Dateien", 21));
            mo_free(c);
        }
    }
}
END_TEST

START_TEST(refuses_lying_headers) {
    mo_image m;
    build(&m, 0, 0, N_DEMO, orig, orig_len, trans, trans_len);
    expect_error(&m, 27, "27 bytes are too few for a GNU .mo header");
    mo_image bad = m;
    bad.b[0] ^= 1;
    expect_error(&bad, bad.n, "not a GNU .mo file (magic 0x950412df");
    bad = m;
    put32(&bad, 4, 0x20000);
    expect_error(&bad, bad.n, "revision 2.0 is not one this reader knows");
    bad = m;
    put32(&bad, 4, 2);
    expect_error(&bad, bad.n, "revision 0.2 is not one this reader knows");
    bad = m;
    put32(&bad, 8, 1000); /* N: the tables would run past the end */
    expect_error(&bad, bad.n, "the table of 1000 original strings at offset 28 lies outside");
    bad = m;
    put32(&bad, 16, (uint32_t)m.n - 8);
    expect_error(&bad, bad.n, "the table of 5 translations at offset");
    bad = m;
    put32(&bad, 20, 0xffffffffu); /* a hash table of 4 G words */
    expect_error(&bad, bad.n, "the hash table of 4294967295 words");
    bad = m;
    put32(&bad, 28 + 8 * 2, 0xfffffff0u); /* original 2's length: offset + length wraps in 32 bits */
    expect_error(&bad, bad.n, "original string 2 (offset");
    bad = m;
    put32(&bad, 28 + 8 * N_DEMO + 8 * 3 + 4, (uint32_t)m.n); /* translation 3 at the end: no room for its NUL */
    expect_error(&bad, bad.n, "translation 3 (offset");
    bad = m;
    put32(&bad, 28 + 8 * 2, 8); /* "Open fil" is followed by 'e', not a NUL */
    expect_error(&bad, bad.n, "original string 2 (offset 200, length 8) is not followed by a NUL");
    /* truncated: the last translation's bytes are cut */
    expect_error(&m, m.n - 5, "translation 4");
    /* a revision 1.1 header must be 48 bytes, and its system-dependent tables inside the file */
    mo_image r1;
    build(&r1, 1, 0x10001, 0, NULL, NULL, NULL, NULL);
    mo_catalog *c = parse_ok(&r1);
    ck_assert(c->count == 0 && !c->has_header && c->charset[0] == '\0');
    mo_free(c);
    put32(&r1, 36, 3);
    expect_error(&r1, r1.n, "the tables of 3 system-dependent strings lie outside");
    bad = m;
    put32(&bad, 4, 1);
    expect_error(&bad, 40, "needs a 48-byte header");
}
END_TEST

START_TEST(fuzzy_header_and_charsets) {
    static const char *const o[] = {""};
    static const char tmpl[] = "PO-Revision-Date: YEAR-MO-DA HO:MI+ZONE\nContent-Type: text/plain; charset=CHARSET\n";
    const char *const t[] = {tmpl};
    size_t ol[] = {0}, tl[] = {sizeof tmpl - 1};
    mo_image m;
    build(&m, 0, 0, 1, o, ol, t, tl);
    mo_catalog *c = parse_ok(&m);
    ck_assert(c->header_fuzzy);
    ck_assert_str_eq(c->charset, "charset");
    ck_assert_int_eq(mo_catalog_encoding(c), MO_UTF8);
    mo_free(c);
    static const char latin[] = "Content-Type: text/plain; charset=ISO-8859-1\n";
    const char *const t2[] = {latin};
    size_t tl2[] = {sizeof latin - 1};
    build(&m, 0, 0, 1, o, ol, t2, tl2);
    c = parse_ok(&m);
    ck_assert_str_eq(c->charset, "iso-8859-1");
    ck_assert_int_eq(mo_catalog_encoding(c), MO_LATIN1);
    snprintf(c->charset, sizeof c->charset, "koi8-r");
    ck_assert_int_eq(mo_catalog_encoding(c), MO_UNSUPPORTED);
    mo_free(c);
}
END_TEST

/* mo_entry_pair on one entry given as (id, str) */
static int verdict_of(const char *id, const char *str, mo_encoding enc, char *src, char *tgt) {
    mo_entry e = {.id = id, .id_len = strlen(id), .str = str, .str_len = strlen(str)};
    e.header = e.id_len == 0;
    char *s, *t;
    size_t sn, tn;
    int v = mo_entry_pair(&e, enc, &s, &sn, &t, &tn);
    if (v == MO_PAIR_KEPT) {
        ck_assert(strlen(s) == sn && strlen(t) == tn);
        snprintf(src, 256, "%s", s);
        snprintf(tgt, 256, "%s", t);
        free(s);
        free(t);
    } else {
        ck_assert(s == NULL && t == NULL);
    }
    return v;
}

#define EXPECT_PAIR(id, str, want_src, want_tgt)                                         \
    do {                                                                                 \
        char s_[256], t_[256];                                                           \
        ck_assert_int_eq(verdict_of(id, str, MO_UTF8, s_, t_), MO_PAIR_KEPT);            \
        ck_assert_str_eq(s_, want_src);                                                  \
        ck_assert_str_eq(t_, want_tgt);                                                  \
    } while (0)
#define EXPECT_DROPPED(id, str, verdict)                                                 \
    do {                                                                                 \
        char s_[256], t_[256];                                                           \
        ck_assert_int_eq(verdict_of(id, str, MO_UTF8, s_, t_), verdict);                 \
    } while (0)

START_TEST(which_entries_make_pairs) {
    EXPECT_PAIR("Open file", "Datei \303\266ffnen", "Open file", "Datei \303\266ffnen");
    EXPECT_PAIR("Usage: %s\n", "Aufruf: %s\n", "Usage: %s", "Aufruf: %s"); /* edge newlines trimmed */
    EXPECT_PAIR("\nDone.\n\n", "\nFertig.\n", "Done.", "Fertig.");
    EXPECT_PAIR("  spaced  ", " x ", "  spaced  ", " x ");                  /* nothing else trimmed */
    EXPECT_PAIR("_Convert", "_Umwandeln", "Convert", "Umwandeln");          /* GTK mnemonics */
    EXPECT_PAIR("Pri_ority:", "_Priorit\xc3\xa4t:", "Priority:", "Priorit\xc3\xa4t:");
    EXPECT_PAIR("_Open", "\xc3\x96_ffnen", "Open", "\xc3\x96""ffnen");
    EXPECT_PAIR("value of \"archive_library\"", "Wert von \xc2\xbb""archive_library\xc2\xab",
                "value of \"archive_library\"", "Wert von \xc2\xbb""archive_library\xc2\xab"); /* an identifier */
    EXPECT_PAIR("a_b and c_d", "_x", "a_b and c_d", "_x"); /* two in the source: left alone */
    EXPECT_PAIR("&Open", "\xc3\x96""&ffnen", "&Open", "\xc3\x96""&ffnen"); /* '&' is left alone */
    EXPECT_PAIR("100 MB", "100 MB", "100 MB", "100 MB");
    EXPECT_PAIR("%s: \xc3\xa9t\xc3\xa9", "%s: Sommer", "%s: \xc3\xa9t\xc3\xa9", "%s: Sommer"); /* non-ASCII letters */
    EXPECT_DROPPED("", "Content-Type: text/plain\n", MO_PAIR_HEADER);
    EXPECT_DROPPED("Quit", "", MO_PAIR_UNTRANSLATED);
    EXPECT_DROPPED("Quit", "\n", MO_PAIR_UNTRANSLATED);
    EXPECT_DROPPED("two\nlines", "zwei\nZeilen", MO_PAIR_MULTILINE);
    EXPECT_DROPPED("Name", "Na\nme", MO_PAIR_MULTILINE);
    /* the word check sees the text after its mnemonic goes: "%._a3" has the letter a, but
     * "%.a3" is the placeholder %.a and a digit (fuzz_mo's one finding) */
    EXPECT_DROPPED("%._a3", "_x", MO_PAIR_NO_WORDS);
    EXPECT_DROPPED("a\tb", "a b", MO_PAIR_CONTROL);
    EXPECT_DROPPED("bell", "Glocke\a", MO_PAIR_CONTROL);
    EXPECT_DROPPED("crlf\r", "x", MO_PAIR_CONTROL);
    EXPECT_DROPPED("caf\xe9", "Caf\xc3\xa9", MO_PAIR_NOT_UTF8);
    EXPECT_DROPPED("overlong \xc0\xaf", "x", MO_PAIR_NOT_UTF8);
    EXPECT_DROPPED("surrogate \xed\xa0\x80", "x", MO_PAIR_NOT_UTF8);
    static const char *const no_words[] = {"%s", "%d: %s", "  ", "%1$s (%2$d)", "%-10.3lf %%", "%<PRIu64> / %zu",
                                           "{0}: {name}", "--", "100%", "(%s)", "\xe2\x80\xa6", "\xc2\xbb%s\xc2\xab",
                                           "%ls \xe2\x86\x92 %lu"};
    for (size_t i = 0; i < sizeof no_words / sizeof no_words[0]; i++) {
        EXPECT_DROPPED(no_words[i], "x", MO_PAIR_NO_WORDS);
        ck_assert_msg(!mo_text_has_word(no_words[i], strlen(no_words[i])), "%s", no_words[i]);
    }
    static const char *const words[] = {"%sx", "a", "%y", "{a b}", "\xc3\x84", "\xe4\xb8\xad"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        ck_assert_msg(mo_text_has_word(words[i], strlen(words[i])), "%s", words[i]);
    /* plural entries */
    mo_entry plural = {.id = "a\0b", .id_len = 3, .str = "x\0y", .str_len = 3, .plural = 1};
    char *s, *t;
    size_t sn, tn;
    ck_assert_int_eq(mo_entry_pair(&plural, MO_UTF8, &s, &sn, &t, &tn), MO_PAIR_PLURAL);
    /* ISO-8859-1 catalogs are converted */
    char s_[256], t_[256];
    ck_assert_int_eq(verdict_of("caf\xe9", "Caf\xe9", MO_LATIN1, s_, t_), MO_PAIR_KEPT);
    ck_assert_str_eq(s_, "caf\xc3\xa9");
    ck_assert_str_eq(t_, "Caf\xc3\xa9");
    for (int v = 0; v < MO_PAIR_N_VERDICTS; v++) ck_assert(strcmp(mo_pair_verdict_name((mo_pair_verdict)v), "unknown"));
}
END_TEST

/* Catalogs written by GNU msgfmt itself (gettext 0.21, `msgfmt --endianness=big|little`,
 * from the .po text below), kept as fuzz seeds: msgfmt, not this test, laid them out.
 *   msgid "" / msgstr "Project-Id-Version: kiln seed\n" "Content-Type: text/plain;
 *   charset=UTF-8\n" "Plural-Forms: nplurals=2; plural=(n != 1);\n"
 *   msgctxt "menu" msgid "_Open" msgstr "Ö_ffnen"
 *   msgid "Open file" msgstr "Datei öffnen"
 *   msgid "one file" msgid_plural "%d files" msgstr[0] "eine Datei" msgstr[1] "%d Dateien"
 *   msgid "Usage: %s\n" msgstr "Aufruf: %s\n"
 *   #, fuzzy msgid "Quit" msgstr "Beenden"      (left out by msgfmt) */
START_TEST(reads_msgfmt_catalogs) {
    const char *names[] = {"msgfmt_big_endian.mo", "msgfmt_little_endian.mo"};
    for (int k = 0; k < 2; k++) {
        char path[1024], err[256];
        snprintf(path, sizeof path, "%s/mo/%s", KILN_FUZZ_CORPUS, names[k]);
        mo_catalog *c;
        ck_assert_msg(mo_load(path, &c, err, sizeof err) == 0, "%s", err);
        ck_assert_int_eq(c->big_endian, k == 0);
        ck_assert_int_eq(c->count, 5); /* msgfmt sorts by original string and drops the fuzzy entry */
        const mo_entry *e = c->entries;
        ck_assert(e[0].header && c->has_header && !c->header_fuzzy && !strcmp(c->charset, "utf-8"));
        ck_assert(!strcmp(e[1].id, "Open file") && !strcmp(e[1].str, "Datei \303\266ffnen"));
        ck_assert(!strcmp(e[2].id, "Usage: %s\n") && !strcmp(e[2].str, "Aufruf: %s\n"));
        ck_assert(e[3].ctxt_len == 4 && !memcmp(e[3].ctxt, "menu", 4) && !strcmp(e[3].id, "_Open"));
        ck_assert(!strcmp(e[3].str, "\xc3\x96_ffnen"));
        ck_assert(e[4].plural && !strcmp(e[4].id, "one file") && !strcmp(e[4].id + 9, "%d files"));
        ck_assert(e[4].str_len == 21 && !strcmp(e[4].str + 11, "%d Dateien"));
        int verdicts[MO_PAIR_N_VERDICTS] = {0};
        for (int i = 0; i < 5; i++) {
            char *s, *t;
            size_t sn, tn;
            verdicts[mo_entry_pair(&e[i], MO_UTF8, &s, &sn, &t, &tn)]++;
            if (i == 3) ck_assert(!strcmp(s, "Open") && !strcmp(t, "\xc3\x96""ffnen"));
            free(s);
            free(t);
        }
        ck_assert(verdicts[MO_PAIR_KEPT] == 3 && verdicts[MO_PAIR_HEADER] == 1 && verdicts[MO_PAIR_PLURAL] == 1);
        mo_free(c);
    }
}
END_TEST

/* One fuzz seed: it parses or fails with one line naming the file; accepted entries lie
 * inside the input. */
static int replay_seed(const char *path, const char *name) {
    char err[256];
    mo_catalog *c;
    if (mo_load(path, &c, err, sizeof err) != 0) {
        ck_assert(strchr(err, '\n') == NULL && strstr(err, name));
        return 0;
    }
    const char *lo = (const char *)c->data, *hi = lo + c->size;
    for (int64_t i = 0; i < c->count; i++) {
        const mo_entry *e = &c->entries[i];
        ck_assert(e->id >= lo && e->id + e->id_len < hi && e->str >= lo && e->str + e->str_len < hi);
        ck_assert(!e->ctxt || (e->ctxt >= lo && e->ctxt + e->ctxt_len < hi));
        char *s, *t;
        size_t sn, tn;
        int v = mo_entry_pair(e, mo_catalog_encoding(c), &s, &sn, &t, &tn);
        ck_assert(v >= 0 && v < MO_PAIR_N_VERDICTS);
        free(s);
        free(t);
    }
    mo_free(c);
    return 1;
}

START_TEST(fuzz_seeds_replay) { kt_replay_seeds(KILN_FUZZ_CORPUS "/mo", replay_seed, 3, 2); }
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, reads_both_byte_orders);
    tcase_add_test(tc, refuses_lying_headers);
    tcase_add_test(tc, fuzzy_header_and_charsets);
    tcase_add_test(tc, which_entries_make_pairs);
    tcase_add_test(tc, reads_msgfmt_catalogs);
    tcase_add_test(tc, fuzz_seeds_replay);
}

int main(void) { return kt_run_tcase("host_mo", "mo", 0, add_tests); }
