/* What the two tokenizer fuzzers (fuzz_tokenizer, fuzz_tokenizer_json) check of any reader's
 * result: a refusal is one line and leaves no tokenizer; an accepted tokenizer serializes to a
 * file that parses back to the same text; encoded ids lie inside the vocabulary, none special. */
#ifndef KILN_FUZZ_TOKENIZER_CHECKS_H
#define KILN_FUZZ_TOKENIZER_CHECKS_H
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "text/tokenizer.h"

static inline void fuzz_tokenizer_refusal(int rc, const tokenizer *t, const char *err) {
    if (rc == 0) return;
    FUZZ_CHECK(rc == -1 && t == NULL && err[0] && !strchr(err, '\n'));
}

/* t serialized and parsed back (the caller frees it), checked to serialize to the same text. */
static inline tokenizer *fuzz_tokenizer_reparsed(const tokenizer *t) {
    size_t n1, n2;
    char *s1 = tokenizer_serialize(t, &n1), err[512];
    FUZZ_CHECK(s1 != NULL);
    tokenizer *back = NULL;
    FUZZ_CHECK(tokenizer_parse(s1, n1, "serialized", &back, err, sizeof err) == 0);
    char *s2 = tokenizer_serialize(back, &n2);
    FUZZ_CHECK(s2 && n1 == n2 && !memcmp(s1, s2, n1));
    free(s1);
    free(s2);
    return back;
}

static inline void fuzz_tokenizer_ids_inside(const tokenizer *t, const int32_t *ids, int64_t n_ids) {
    for (int64_t i = 0; i < n_ids; i++)
        FUZZ_CHECK(ids[i] >= 0 && ids[i] < tokenizer_vocab_size(t) && !tokenizer_is_special(t, ids[i]));
}
#endif
