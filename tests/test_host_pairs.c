/* Parallel text (host/formats/pairs.c): the TSV reader's pairs and its one-line errors,
 * and the invariants of the length-bucketed batches (pairs.h), checked against a brute-force
 * restatement of the rule; then the fuzz seeds (fuzz/corpus/pairs/) replayed through both. */
#define _POSIX_C_SOURCE 200809L

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/pairs.h"
#include "testutil_host.h"

static char tmpdir[] = "/tmp/kiln_pairs_test_XXXXXX";

static text_pairs *parse_ok(const char *text, size_t n) {
    text_pairs *p = NULL;
    char err[256] = "";
    ck_assert_msg(pairs_parse(text, n, "t.tsv", &p, err, sizeof err) == 0, "%s", err);
    ck_assert_ptr_nonnull(p);
    return p;
}

/* The error text for a bad input; the parse must fail and leave *out NULL. */
static const char *parse_error(const char *text, size_t n) {
    static char err[256];
    text_pairs *p = (text_pairs *)1;
    err[0] = '\0';
    ck_assert_msg(pairs_parse(text, n, "t.tsv", &p, err, sizeof err) == -1, "accepted: %s", text);
    ck_assert_ptr_null(p);
    ck_assert(strchr(err, '\n') == NULL && err[0]);
    return err;
}

#define EXPECT_ERROR(text, want)                                                          \
    do {                                                                                  \
        const char *e_ = parse_error(text, sizeof(text) - 1);                              \
        ck_assert_msg(strstr(e_, want), "for \"%s\" expected \"%s\", got \"%s\"", text, want, e_); \
    } while (0)

START_TEST(reads_pairs) {
    /* LF, CRLF, a last line without newline, bytes that are not UTF-8, spaces kept */
    static const char text[] = "Hello\tHallo\r\nOpen file\t Datei \xf6""ffnen\n\xff\xfe x\ty";
    text_pairs *p = parse_ok(text, sizeof text - 1);
    ck_assert_int_eq(p->count, 3);
    ck_assert_str_eq(p->src[0], "Hello");
    ck_assert_str_eq(p->tgt[0], "Hallo"); /* the CR of CRLF is not part of the target */
    ck_assert_uint_eq(p->tgt_len[0], 5);
    ck_assert_str_eq(p->src[1], "Open file");
    ck_assert_str_eq(p->tgt[1], " Datei \xf6""ffnen");
    ck_assert_uint_eq(p->tgt_len[1], 13);
    ck_assert_str_eq(p->src[2], "\xff\xfe x");
    ck_assert_uint_eq(p->src_len[2], 4);
    ck_assert_str_eq(p->tgt[2], "y");
    pairs_free(p);
    /* a trailing empty last line is not a pair; one final newline is not a line */
    static const char trailing[] = "a\tb\n\n";
    p = parse_ok(trailing, sizeof trailing - 1);
    ck_assert_int_eq(p->count, 1);
    pairs_free(p);
    p = parse_ok("a\tb\n", 4);
    ck_assert_int_eq(p->count, 1);
    pairs_free(p);
}
END_TEST

START_TEST(refuses_bad_lines_naming_them) {
    EXPECT_ERROR("a\tb\nno tab here\n", "t.tsv:2: no tab between source and target");
    EXPECT_ERROR("a\tb\tc\n", "t.tsv:1: 2 tabs");
    EXPECT_ERROR("x\ty\n\tb\n", "t.tsv:2: the source (before the tab) is empty");
    EXPECT_ERROR("a\t\r\n", "t.tsv:1: the target (after the tab) is empty");
    EXPECT_ERROR("a\tb\n\nc\td\n", "t.tsv:2: an empty line");
    EXPECT_ERROR("a\tb\n\n\n", "t.tsv:2: an empty line"); /* only the last empty line is ignored */
    EXPECT_ERROR("a\tb\nc\td\x00x\n", "t.tsv:2: a NUL byte at column 4");
    EXPECT_ERROR("", "t.tsv: empty file");
    EXPECT_ERROR("\n", "t.tsv: no pairs");
    EXPECT_ERROR("\r\n", "t.tsv: no pairs");
}
END_TEST

START_TEST(loads_files) {
    char path[512], err[256];
    snprintf(path, sizeof path, "%s/pairs.tsv", tmpdir);
    FILE *f = fopen(path, "wb");
    fputs("one\teins\ntwo\tzwei\nthree\n", f);
    fclose(f);
    text_pairs *p = (text_pairs *)1;
    ck_assert_int_eq(pairs_load(path, &p, err, sizeof err), -1);
    ck_assert_ptr_null(p);
    char want[600];
    snprintf(want, sizeof want, "%s:3: no tab between source and target", path);
    ck_assert_str_eq(err, want);
    f = fopen(path, "wb");
    fputs("one\teins\ntwo\tzwei\n", f);
    fclose(f);
    ck_assert_msg(pairs_load(path, &p, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(p->count, 2);
    ck_assert_str_eq(p->tgt[1], "zwei");
    pairs_free(p);
    remove(path);
    ck_assert_int_eq(pairs_load(path, &p, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "pairs.tsv: cannot open"), "%s", err);
    ck_assert_int_eq(pairs_load(tmpdir, &p, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "is a directory"), "%s", err);
}
END_TEST

/* Every invariant pairs.h promises, checked directly. Returns the batch count. */
static int64_t check_batches(const int32_t *s, const int32_t *t, int64_t n, int64_t max_tokens) {
    int64_t *starts = NULL, *order = NULL, nb = -1;
    char err[256] = "";
    int rc = pairs_make_batches(s, t, n, max_tokens, &starts, &order, &nb, err, sizeof err);
    ck_assert_msg(rc >= 0, "%s", err);
    ck_assert_int_eq(starts[0], 0);
    ck_assert_int_eq(starts[nb], n);
    /* order is a permutation, sorted by (src, tgt, index) */
    char *seen = calloc((size_t)n + 1, 1);
    for (int64_t i = 0; i < n; i++) {
        ck_assert(order[i] >= 0 && order[i] < n && !seen[order[i]]);
        seen[order[i]] = 1;
        if (i) {
            int64_t a = order[i - 1], b = order[i];
            ck_assert(s[a] < s[b] || (s[a] == s[b] && (t[a] < t[b] || (t[a] == t[b] && a < b))));
        }
    }
    free(seen);
    int64_t oversized = 0;
    for (int64_t b = 0; b < nb; b++) {
        ck_assert(starts[b] < starts[b + 1]); /* no empty batch */
        int64_t ms = 0, mt = 0, rows = starts[b + 1] - starts[b];
        for (int64_t i = starts[b]; i < starts[b + 1]; i++) {
            if (s[order[i]] > ms) ms = s[order[i]];
            if (t[order[i]] > mt) mt = t[order[i]];
        }
        if (rows * (ms + mt) > max_tokens) { /* only an example too long alone */
            ck_assert_int_eq(rows, 1);
            oversized++;
        }
        if (starts[b + 1] < n && rows * (ms + mt) <= max_tokens) { /* maximal */
            int64_t next = order[starts[b + 1]];
            int64_t ms2 = s[next] > ms ? s[next] : ms, mt2 = t[next] > mt ? t[next] : mt;
            ck_assert_msg((rows + 1) * (ms2 + mt2) > max_tokens, "batch %lld could take one more", (long long)b);
        }
    }
    ck_assert_int_eq(rc, oversized);
    if (oversized) ck_assert_msg(strstr(err, "batch of its own"), "%s", err);
    /* deterministic */
    int64_t *starts2, *order2, nb2;
    ck_assert_int_eq(pairs_make_batches(s, t, n, max_tokens, &starts2, &order2, &nb2, err, sizeof err), rc);
    ck_assert(nb2 == nb && !memcmp(starts, starts2, (size_t)(nb + 1) * sizeof *starts) &&
              !memcmp(order, order2, (size_t)n * sizeof *order));
    free(starts2);
    free(order2);
    free(starts);
    free(order);
    return nb;
}

START_TEST(batches_by_hand) {
    /* lengths (src, tgt): sorted order is 3 (1,1), 1 (2,1), 0 (2,3), 4 (2,3), 2 (5,5) */
    int32_t s[] = {2, 2, 5, 1, 2}, t[] = {3, 1, 5, 1, 3};
    int64_t *starts, *order, nb;
    char err[256];
    /* 10 tokens: [3 1 0] costs 3 * (2 + 3) = 15 > 10, so [3 1] (2 * 3 = 6), [0 4] (2 * 5 = 10), [2] (10) */
    ck_assert_int_eq(pairs_make_batches(s, t, 5, 10, &starts, &order, &nb, err, sizeof err), 0);
    ck_assert_int_eq(nb, 3);
    int64_t want_order[] = {3, 1, 0, 4, 2}, want_starts[] = {0, 2, 4, 5};
    ck_assert(!memcmp(order, want_order, sizeof want_order));
    ck_assert(!memcmp(starts, want_starts, sizeof want_starts));
    free(starts);
    free(order);
    /* 9 tokens: example 2 (10 tokens) is alone and reported */
    ck_assert_int_eq(pairs_make_batches(s, t, 5, 9, &starts, &order, &nb, err, sizeof err), 1);
    ck_assert_msg(strstr(err, "1 example is longer than the 9-token batch alone (the longest: 10 tokens)"), "%s", err);
    ck_assert_int_eq(nb, 4);
    ck_assert_int_eq(starts[3], 4);
    free(starts);
    free(order);
    /* errors */
    ck_assert_int_eq(pairs_make_batches(s, t, 5, 0, &starts, &order, &nb, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "must be at least 1"), "%s", err);
    int32_t neg[] = {1, -1};
    ck_assert_int_eq(pairs_make_batches(neg, neg, 2, 10, &starts, &order, &nb, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "example 1 has a negative length"), "%s", err);
    /* no examples: no batches */
    ck_assert_int_eq(pairs_make_batches(NULL, NULL, 0, 10, &starts, &order, &nb, err, sizeof err), 0);
    ck_assert(nb == 0 && starts[0] == 0);
    free(starts);
    free(order);
}
END_TEST

START_TEST(batch_invariants_on_random_lengths) {
    uint64_t x = 88172645463325252ULL;
    for (int trial = 0; trial < 200; trial++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int64_t n = (int64_t)(x % 300);
        int64_t max_tokens = 1 + (int64_t)((x >> 20) % 400);
        int32_t *s = malloc((size_t)(n + 1) * sizeof *s), *t = malloc((size_t)(n + 1) * sizeof *t);
        for (int64_t i = 0; i < n; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            s[i] = (int32_t)(x % 60), t[i] = (int32_t)((x >> 16) % 60); /* duplicates and zeros */
        }
        int64_t nb = check_batches(s, t, n, max_tokens);
        ck_assert(n == 0 || nb >= 1);
        free(s);
        free(t);
    }
    /* lengths near INT32_MAX: the cost check must not overflow */
    int32_t big[] = {INT32_MAX, INT32_MAX, 1};
    ck_assert_int_eq(check_batches(big, big, 3, INT64_C(5000000000)), 3);
}
END_TEST

/* One fuzz seed: it parses (or fails with one line), and its batches keep the invariants. */
static int replay_seed(const char *path, const char *name) {
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    if (n < 2) return 0;
    text_pairs *p;
    char err[256];
    /* the fuzzer's layout: 2 bytes choose max_tokens, the rest is the file */
    int64_t max_tokens = 1 + (((unsigned char)buf[0] << 8 | (unsigned char)buf[1]) % 512);
    if (pairs_parse(buf + 2, n - 2, name, &p, err, sizeof err) != 0) {
        ck_assert(strchr(err, '\n') == NULL && strstr(err, name));
        return 0;
    }
    int32_t *s = malloc((size_t)p->count * sizeof *s), *t = malloc((size_t)p->count * sizeof *t);
    for (int64_t i = 0; i < p->count; i++) s[i] = (int32_t)p->src_len[i], t[i] = (int32_t)p->tgt_len[i];
    check_batches(s, t, p->count, max_tokens);
    free(s);
    free(t);
    pairs_free(p);
    return 1;
}

START_TEST(fuzz_seeds_replay) { kt_replay_seeds(KILN_FUZZ_CORPUS "/pairs", replay_seed, 3, 2); }
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, reads_pairs);
    tcase_add_test(tc, refuses_bad_lines_naming_them);
    tcase_add_test(tc, loads_files);
    tcase_add_test(tc, batches_by_hand);
    tcase_add_test(tc, batch_invariants_on_random_lengths);
    tcase_add_test(tc, fuzz_seeds_replay);
}

int main(void) { return kt_run_tcase_in(tmpdir, "host_pairs", "pairs", 0, add_tests); }
