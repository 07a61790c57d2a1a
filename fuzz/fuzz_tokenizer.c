/* Fuzzes the tokenizer readers: the input is up to three parts separated by "\n#--\n".
 *   - tokenizer_parse(part 1): the kiln file format;
 *   - tokenizer_import_gpt2_memory(part 1 as vocab.json, part 2 as merges.txt).
 * A refusal must be one line and leave no tokenizer. An accepted tokenizer must serialize
 * back to a file that parses to the same text, and encode then decode a text back to the
 * same bytes (for the file format, all the input after the first separator; for the import,
 * part 3), with every id inside the vocabulary and none of them special. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_parts.h"
#include "fuzz_tokenizer_checks.h"

static void fuzz_check_accepted(const tokenizer *t, const uint8_t *text, size_t n) {
    char err[512];
    tokenizer *back = fuzz_tokenizer_reparsed(t);
    int32_t *ids;
    int64_t n_ids;
    FUZZ_CHECK(tokenizer_encode(back, text, n, &ids, &n_ids, err, sizeof err) == 0);
    fuzz_tokenizer_ids_inside(t, ids, n_ids);
    uint8_t *bytes;
    size_t n_bytes;
    FUZZ_CHECK(tokenizer_decode(t, ids, n_ids, &bytes, &n_bytes, err, sizeof err) == 0);
    FUZZ_CHECK(n_bytes == n && (n == 0 || !memcmp(bytes, text, n)));
    free(bytes);
    free(ids);
    tokenizer_free(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *p2, *p3, *p4;
    size_t n2, n3, n4;
    size_t n1 = fuzz_part(data, size, &p2, &n2);
    size_t len2 = fuzz_part(p2, n2, &p3, &n3);
    size_t len3 = fuzz_part(p3, n3, &p4, &n4);
    (void)p4;
    (void)n4;
    char err[512] = "";
    tokenizer *t = NULL;
    int rc = tokenizer_parse((const char *)data, n1, "fuzz", &t, err, sizeof err);
    fuzz_tokenizer_refusal(rc, t, err);
    if (rc == 0) fuzz_check_accepted(t, p2, n2);
    tokenizer_free(t);

    t = NULL;
    err[0] = '\0';
    rc = tokenizer_import_gpt2_memory((const char *)data, n1, "vocab.json", (const char *)p2, len2, "merges.txt", &t, err,
                                      sizeof err);
    fuzz_tokenizer_refusal(rc, t, err);
    if (rc == 0) fuzz_check_accepted(t, p3, len3);
    tokenizer_free(t);
    return 0;
}
