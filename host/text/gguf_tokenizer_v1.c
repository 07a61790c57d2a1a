/* A GGUF gpt2 tokenizer with GPT-2's pre-tokenizer as a version 1 tokenizer, as kiln read
 * GGUF files before version 2 (so its GPT-2 exports read back to the same file): a vocabulary
 * of the 256 bytes alone is the byte tokenizer; otherwise kiln's text format is written out
 * (its bytes, its specials (token type 3), each merge "A B" as the ids of A, B and AB) and
 * parsed. -1 (no message) when the vocabulary does not fit version 1: the caller reads it
 * as version 2. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/utf8.h"
#include "text/gpt2_bytes.h"
#include "text/tokenizer_internal.h"

/* The one byte a token spells, or -1 when it spells none or several. */
static int single_byte(const char *s) {
    uint32_t cp;
    size_t n = strlen(s);
    if (n == 0) return -1;
    int len = utf8_decode((const uint8_t *)s, n, &cp);
    return len > 0 && (size_t)len == n ? gpt2_byte_of(cp) : -1;
}

/* qsort's comparison of token ids by their text (qsort takes no context argument). */
static const char *const *g_sort_tokens;
static int by_text(const void *a, const void *b) {
    return strcmp(g_sort_tokens[*(const int32_t *)a], g_sort_tokens[*(const int32_t *)b]);
}

/* The first id whose text is s (ids sorted by text), or -1. */
static int32_t find_token(const char *const *strs, const int32_t *sorted, int32_t n, const char *s) {
    int32_t lo = 0, hi = n;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (strcmp(strs[sorted[mid]], s) < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo < n && !strcmp(strs[sorted[lo]], s) ? sorted[lo] : -1;
}

/* The merge lines, appended to text at *at. */
static int v1_merges(const gguf_kv *tokens, const gguf_kv *merges, int32_t vocab, char *text, size_t cap, size_t *at) {
    int32_t *sorted = malloc((size_t)vocab * sizeof *sorted);
    int rc = sorted ? 0 : -1;
    for (int32_t i = 0; rc == 0 && i < vocab; i++) sorted[i] = i;
    if (rc == 0) {
        g_sort_tokens = tokens->strs;
        qsort(sorted, (size_t)vocab, sizeof *sorted, by_text);
    }
    for (uint64_t r = 0; rc == 0 && merges && r < merges->count; r++) {
        const char *pair = merges->strs[r], *space = strchr(pair, ' ');
        size_t len = strlen(pair);
        char *left = malloc(len + 1), *joined = malloc(len + 1);
        int32_t ids[3] = {-1, -1, -1};
        if (left && joined && space) {
            memcpy(left, pair, (size_t)(space - pair));
            left[space - pair] = '\0';
            snprintf(joined, len + 1, "%s%s", left, space + 1);
            ids[0] = find_token(tokens->strs, sorted, vocab, left);
            ids[1] = find_token(tokens->strs, sorted, vocab, space + 1);
            ids[2] = find_token(tokens->strs, sorted, vocab, joined);
        }
        free(left);
        free(joined);
        if (ids[0] < 0 || ids[1] < 0 || ids[2] < 0) rc = -1;
        else *at += (size_t)snprintf(text + *at, cap - *at, "merge %d %d %d\n", ids[0], ids[1], ids[2]);
    }
    free(sorted);
    return rc;
}

int tok_from_gguf_v1(const gguf_kv *tokens, const gguf_kv *types, const gguf_kv *merges, tokenizer **out) {
    int32_t vocab = (int32_t)tokens->count;
    uint64_t n_merges = merges ? merges->count : 0;
    int bytes_only = vocab == 256 && n_merges == 0;
    for (int32_t i = 0; bytes_only && i < 256; i++) bytes_only = single_byte(tokens->strs[i]) == i;
    if (bytes_only) return (*out = tokenizer_bytes(0)) ? 0 : -1;
    size_t cap = 64 + (size_t)vocab * 48 + (size_t)n_merges * 40, at = 0;
    char *text = malloc(cap), err[256];
    int32_t byte_id[256];
    for (int b = 0; b < 256; b++) byte_id[b] = -1;
    if (!text) return -1;
    at += (size_t)snprintf(text + at, cap - at, "%s\nvocab %d\npretokenizer gpt2\n", TOKENIZER_MAGIC, vocab);
    for (int32_t i = 0; i < vocab; i++) {
        int b = single_byte(tokens->strs[i]);
        if (b >= 0 && byte_id[b] < 0) byte_id[b] = i;
    }
    int rc = 0;
    at += (size_t)snprintf(text + at, cap - at, "bytes");
    for (int b = 0; b < 256 && rc == 0; b++) {
        if (byte_id[b] < 0) rc = -1;
        else at += (size_t)snprintf(text + at, cap - at, " %d", byte_id[b]);
    }
    at += (size_t)snprintf(text + at, cap - at, "\n");
    for (int32_t i = 0; rc == 0 && i < vocab; i++) {
        int32_t type = 1;
        if (types) memcpy(&type, (const unsigned char *)types->data + 4 * (size_t)i, 4);
        if (type == 3 && at + strlen(tokens->strs[i]) + 32 < cap)
            at += (size_t)snprintf(text + at, cap - at, "special %d %s -\n", i, tokens->strs[i]);
    }
    if (rc == 0) rc = v1_merges(tokens, merges, vocab, text, cap, &at);
    if (rc == 0 && tokenizer_parse(text, at, "gguf", out, err, sizeof err)) rc = -1;
    free(text);
    return rc;
}
