/* Tokenizers for the GPT commands (gpt_tokenizer.h). */
#include "run/gpt_tokenizer.h"

#include <stdlib.h>

#include "formats/file_open.h"
#include "model/checkpoint_tokenizer.h"
#include "run/cli.h"

int gpt_tokenizer_is_bytes(const tokenizer *t) {
    return tokenizer_vocab_size(t) == 256 && tokenizer_merge_count(t) == 0;
}

char *gpt_tokenizer_checkpoint_text(const tokenizer *t) {
    size_t len;
    return gpt_tokenizer_is_bytes(t) ? NULL : tokenizer_serialize(t, &len);
}

int gpt_tokenizer_choose(const char *path, const char *ckpt, int32_t vocab, tokenizer **out) {
    char err[1024];
    *out = NULL;
    if (path) {
        if (tokenizer_load(path, out, err, sizeof err)) return host_error("%s", err);
    } else if (ckpt) {
        int found = checkpoint_tokenizer_load(ckpt, CKPT_TOKENIZER_KEY, out, err, sizeof err);
        if (found < 0) return host_error("%s", err);
    }
    if (!*out && (vocab == 256 || vocab < 0) && !(*out = tokenizer_bytes(0))) return host_error("out of host memory");
    if (!*out)
        return host_error("%s has a vocabulary of %d tokens and no tokenizer inside: give it with --tokenizer FILE "
                          "(kiln tokenizer import makes GPT-2's)", ckpt ? ckpt : "the model", vocab);
    if (vocab >= 0 && tokenizer_vocab_size(*out) != vocab) {
        int have = tokenizer_vocab_size(*out);
        tokenizer_free(*out);
        *out = NULL;
        return host_error("the tokenizer%s%s has %d tokens but the model's vocabulary %d", path ? " " : "",
                          path ? path : "", have, vocab);
    }
    return 0;
}

int gpt_tokenizer_load_data(const tokenizer *t, const char *path, const char *role, data_set **out) {
    char err[1024];
    if (gpt_tokenizer_is_bytes(t))
        return data_load_bytes_as(path, role, out, err, sizeof err) ? host_error("%s", err) : 0;
    char *text;
    size_t n;
    if (file_read_all(path, "--data", &text, &n, err, sizeof err)) return host_error("%s", err);
    int32_t *ids = NULL;
    int64_t n_ids = 0;
    int rc = 0;
    if (n == 0)
        rc = host_error("%s: empty file", path);
    else if (tokenizer_encode(t, (const uint8_t *)text, n, &ids, &n_ids, err, sizeof err))
        rc = host_error("%s: %s", path, err);
    else if (data_from_tokens(ids, n_ids, tokenizer_vocab_size(t), out, err, sizeof err))
        rc = host_error("%s: %s", path, err);
    free(text);
    free(ids);
    return rc;
}
