/* Loading a GPT from either file format (gpt_load.h). */
#include "run/gpt_load.h"

#include <stdio.h>
#include <string.h>

#include "run/cli.h"
#include "run/gpt_tokenizer.h"
#include "model/gpt/gpt_checkpoint.h"
#include "model/gpt/gpt_gguf.h"

int host_is_gguf(const char *path) {
    FILE *f = fopen(path, "rb");
    char magic[4] = {0};
    size_t n = f ? fread(magic, 1, 4, f) : 0;
    if (f) fclose(f);
    return n == 4 && !memcmp(magic, "GGUF", 4);
}

int host_load_gpt(kiln_ctx *ctx, const char *path, const char *tok_path, gpt_model **m, tokenizer **tok) {
    char err[1024];
    *m = NULL;
    *tok = NULL;
    if (host_is_gguf(path)) {
        if (gpt_load_gguf(ctx, path, m, tok, err, sizeof err)) return host_error("%s", err);
        if (!tok_path) return 0;
        tokenizer_free(*tok); /* --tokenizer wins over the file's own */
        *tok = NULL;
        return gpt_tokenizer_choose(tok_path, NULL, (*m)->cfg.vocab_size, tok);
    }
    if (gpt_checkpoint_load(ctx, path, m, err, sizeof err)) return host_error("%s", err);
    return gpt_tokenizer_choose(tok_path, path, (*m)->cfg.vocab_size, tok);
}
