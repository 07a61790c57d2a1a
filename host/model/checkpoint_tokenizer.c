/* Tokenizers inside checkpoints (checkpoint_tokenizer.h). */
#include "model/checkpoint_tokenizer.h"

#include <stdio.h>
#include <string.h>

#include "formats/safetensors.h"

int checkpoint_tokenizer_load(const char *ckpt, const char *key, tokenizer **out, char *err, size_t errlen) {
    *out = NULL;
    st_file *f;
    if (st_open(ckpt, &f, err, errlen)) return -1;
    const char *text = st_meta(f, key);
    int rc = 0;
    if (text) {
        char name[512];
        snprintf(name, sizeof name, "%s (metadata %s)", ckpt, key);
        rc = tokenizer_parse(text, strlen(text), name, out, err, errlen) ? -1 : 1;
    }
    st_close(f);
    return rc;
}

int checkpoint_tokenizer_pair(const char *ckpt, tokenizer **src, tokenizer **tgt, char *err, size_t errlen) {
    *src = *tgt = NULL;
    int shared = checkpoint_tokenizer_load(ckpt, CKPT_TOKENIZER_KEY, src, err, errlen);
    if (shared < 0) return -1;
    if (shared) {
        *tgt = *src;
        return 0;
    }
    int a = checkpoint_tokenizer_load(ckpt, CKPT_SRC_TOKENIZER_KEY, src, err, errlen);
    int b = a == 1 ? checkpoint_tokenizer_load(ckpt, CKPT_TGT_TOKENIZER_KEY, tgt, err, errlen) : 0;
    if (a == 1 && b == 1) return 0;
    tokenizer_free(*src);
    *src = NULL;
    if (a >= 0 && b >= 0)
        snprintf(err, errlen, "%s holds no tokenizer (%s, or %s and %s in its metadata)", ckpt, CKPT_TOKENIZER_KEY,
                 CKPT_SRC_TOKENIZER_KEY, CKPT_TGT_TOKENIZER_KEY);
    return -1;
}
