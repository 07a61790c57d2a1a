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
