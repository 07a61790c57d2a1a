/* Fuzzes the parallel-text layer: the first 2 bytes choose the batch size in tokens
 * (1..512), the rest is a TSV of pairs. pairs_parse must either fail with one line naming
 * the file or return pairs whose strings are exactly the input's fields; the batches over
 * their lengths must keep every invariant pairs.h states. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats/pairs.h"
#include "fuzz_check.h"

static void check_batches(const int32_t *s, const int32_t *t, int64_t n, int64_t max_tokens) {
    int64_t *starts, *order, nb;
    char err[256];
    int rc = pairs_make_batches(s, t, n, max_tokens, &starts, &order, &nb, err, sizeof err);
    FUZZ_CHECK(rc >= 0);
    FUZZ_CHECK(starts[0] == 0 && starts[nb] == n);
    char *seen = calloc((size_t)n + 1, 1);
    FUZZ_CHECK(seen != NULL);
    for (int64_t i = 0; i < n; i++) { /* a permutation, sorted by (src, tgt, index) */
        FUZZ_CHECK(order[i] >= 0 && order[i] < n && !seen[order[i]]);
        seen[order[i]] = 1;
        if (i) {
            int64_t a = order[i - 1], b = order[i];
            FUZZ_CHECK(s[a] < s[b] || (s[a] == s[b] && (t[a] < t[b] || (t[a] == t[b] && a < b))));
        }
    }
    free(seen);
    int64_t oversized = 0;
    for (int64_t b = 0; b < nb; b++) {
        FUZZ_CHECK(starts[b] < starts[b + 1]);
        int64_t ms = 0, mt = 0, rows = starts[b + 1] - starts[b];
        for (int64_t i = starts[b]; i < starts[b + 1]; i++) {
            if (s[order[i]] > ms) ms = s[order[i]];
            if (t[order[i]] > mt) mt = t[order[i]];
        }
        int over = rows * (ms + mt) > max_tokens;
        if (over) FUZZ_CHECK(rows == 1);
        oversized += over;
        if (!over && starts[b + 1] < n) { /* maximal: the next example would not fit */
            int64_t next = order[starts[b + 1]];
            int64_t ms2 = s[next] > ms ? s[next] : ms, mt2 = t[next] > mt ? t[next] : mt;
            FUZZ_CHECK((rows + 1) * (ms2 + mt2) > max_tokens);
        }
    }
    FUZZ_CHECK(rc == oversized);
    free(starts);
    free(order);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    int64_t max_tokens = 1 + ((data[0] << 8 | data[1]) % 512);
    const char *text = (const char *)data + 2;
    size_t n = size - 2;
    text_pairs *p = NULL;
    char err[256];
    if (pairs_parse(text, n, "f.tsv", &p, err, sizeof err) != 0) {
        FUZZ_CHECK(p == NULL && !strncmp(err, "f.tsv", 5) && !strchr(err, '\n'));
        return 0;
    }
    FUZZ_CHECK(p->count >= 1);
    int32_t *s = malloc((size_t)p->count * sizeof *s), *t = malloc((size_t)p->count * sizeof *t);
    FUZZ_CHECK(s && t);
    /* each pair is "src\ttgt" at the current position of the input, then "\n" or "\r\n" */
    size_t pos = 0;
    for (int64_t i = 0; i < p->count; i++) {
        size_t sl = p->src_len[i], tl = p->tgt_len[i];
        FUZZ_CHECK(sl >= 1 && tl >= 1 && strlen(p->src[i]) == sl && strlen(p->tgt[i]) == tl);
        FUZZ_CHECK(!memchr(p->src[i], '\t', sl) && !memchr(p->tgt[i], '\t', tl));
        FUZZ_CHECK(pos + sl + 1 + tl <= n && !memcmp(text + pos, p->src[i], sl) && text[pos + sl] == '\t' &&
                   !memcmp(text + pos + sl + 1, p->tgt[i], tl));
        pos += sl + 1 + tl;
        if (pos < n && text[pos] == '\r') pos++;
        FUZZ_CHECK(pos == n || text[pos] == '\n');
        pos++;
        s[i] = (int32_t)sl, t[i] = (int32_t)tl;
    }
    FUZZ_CHECK(pos >= n || (n - pos <= 2 && (text[pos] == '\n' || text[pos] == '\r'))); /* only an empty last line left */
    check_batches(s, t, p->count, max_tokens);
    free(s);
    free(t);
    pairs_free(p);
    return 0;
}
