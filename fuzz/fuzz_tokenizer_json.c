/* Fuzzes the tokenizer.json import: the input is up to three parts separated by "\n#--\n":
 * a tokenizer.json, a tokenizer_config.json (an empty part: none) and a text.
 * A refusal must be one line and leave no tokenizer. An accepted tokenizer must serialize to
 * a version 2 file that parses back to the same text and encodes the text to the same ids,
 * inside the vocabulary and none special; they decode, and when nothing normalizes the text
 * and the tokens are bytes (ByteLevel), they decode to the text itself. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_parts.h"
#include "fuzz_tokenizer_checks.h"
#include "text/tokenizer_internal.h"

/* Does decoding give the text back: no normalizer, no decoder, tokens that are bytes, and
 * pre-tokenizers that neither drop nor add anything? */
static int fuzz_json_exact(const tokenizer *t) {
    if (!t->byte_level || t->n_steps[TOK_STAGE_NORMALIZER] || t->n_steps[TOK_STAGE_DECODER]) return 0;
    for (int i = 0; i < t->n_steps[TOK_STAGE_PRETOKENIZER]; i++) {
        const tok_step *st = &t->steps[TOK_STAGE_PRETOKENIZER][i];
        if (st->kind == STEP_METASPACE || (st->kind == STEP_BYTELEVEL && st->prefix_space) ||
            (st->kind == STEP_SPLIT && st->behaviour == SPLIT_REMOVED))
            return 0;
    }
    return 1;
}

static void fuzz_json_accepted(const tokenizer *t, const uint8_t *text, size_t n) {
    char err[512];
    tokenizer *back = fuzz_tokenizer_reparsed(t);
    int32_t *ids, *ids2;
    int64_t n_ids, n_ids2;
    FUZZ_CHECK(tokenizer_encode(t, text, n, &ids, &n_ids, err, sizeof err) == 0);
    FUZZ_CHECK(tokenizer_encode_uncached(back, text, n, &ids2, &n_ids2, err, sizeof err) == 0);
    FUZZ_CHECK(n_ids == n_ids2 && (n_ids == 0 || !memcmp(ids, ids2, (size_t)n_ids * sizeof *ids)));
    fuzz_tokenizer_ids_inside(t, ids, n_ids);
    uint8_t *bytes;
    size_t n_bytes;
    FUZZ_CHECK(tokenizer_decode(t, ids, n_ids, &bytes, &n_bytes, err, sizeof err) == 0);
    if (fuzz_json_exact(t)) FUZZ_CHECK(n_bytes == n && (n == 0 || !memcmp(bytes, text, n)));
    free(bytes);
    free(ids);
    free(ids2);
    tokenizer_free(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *p2, *p3;
    size_t n2, n3;
    size_t n1 = fuzz_part(data, size, &p2, &n2);
    size_t len2 = fuzz_part(p2, n2, &p3, &n3);
    char err[512] = "";
    tokenizer *t = NULL;
    int rc = tokenizer_import_hf_memory((const char *)data, n1, "tokenizer.json", len2 ? (const char *)p2 : NULL, len2,
                                        &t, err, sizeof err);
    fuzz_tokenizer_refusal(rc, t, err);
    if (rc == 0) fuzz_json_accepted(t, p3, n3);
    tokenizer_free(t);
    return 0;
}
