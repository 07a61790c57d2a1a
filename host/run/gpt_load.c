/* Loading a GPT from any file format kiln reads (gpt_load.h). */
#include "run/gpt_load.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "run/cli.h"
#include "run/gpt_tokenizer.h"
#include "model/gpt/gpt_checkpoint.h"
#include "model/gpt/gpt_gguf.h"
#include "model/gpt/gpt_hf.h"
#include "formats/gguf.h"

/* By its magic, or by its name: a .gguf too short to hold the magic then gets the GGUF
 * reader's message, not the safetensors reader's. */
int host_is_gguf(const char *path) {
    FILE *f = fopen(path, "rb");
    char magic[4] = {0};
    size_t n = f ? fread(magic, 1, 4, f) : 0;
    if (f) fclose(f);
    size_t len = strlen(path);
    return (n == 4 && !memcmp(magic, "GGUF", 4)) || (len >= 5 && !strcmp(path + len - 5, ".gguf"));
}

int host_load_gpt_model(kiln_ctx *ctx, const char *path, gpt_model **m, char *err, size_t errlen) {
    return host_load_gpt_model_as(ctx, path, KILN_F32, m, err, errlen);
}

int host_load_gpt_model_as(kiln_ctx *ctx, const char *path, kiln_dtype dtype, gpt_model **m, char *err, size_t errlen) {
    *m = NULL;
    if (gpt_hf_is_folder(path)) return gpt_load_hf(ctx, path, dtype, m, NULL, err, errlen);
    if (host_is_gguf(path)) {
        tokenizer *tok;
        int rc = gpt_load_gguf_as(ctx, path, dtype, m, &tok, err, errlen);
        if (rc == 0) tokenizer_free(tok);
        return rc;
    }
    if (gpt_checkpoint_load(ctx, path, m, err, errlen)) return -1;
    if (!gpt_set_precision(*m, dtype, 0)) return 0; /* a checkpoint is f32: converted after */
    snprintf(err, errlen, "%s: %s", path, kiln_error_message());
    gpt_free(*m);
    *m = NULL;
    return -1;
}

/* config.json's (and generation_config.json's) BOS and first EOS where tokenizer.json and
 * tokenizer_config.json name none: end-of-generation then stops decoding, and a GGUF export
 * carries the ids (llama.cpp takes a BPE's EOS for id 11 otherwise). */
static void apply_config_roles(const char *dir, tokenizer *tok) {
    hf_config c;
    char err[256];
    if (hf_config_read(dir, &c, err, sizeof err)) return; /* the model's reader has said it */
    if (tokenizer_special(tok, TOK_EOS) < 0 && c.n_eos > 0) tokenizer_set_role(tok, TOK_EOS, (int32_t)c.eos_ids[0]);
    if (tokenizer_special(tok, TOK_BOS) < 0 && c.bos_id >= 0) tokenizer_set_role(tok, TOK_BOS, (int32_t)c.bos_id);
}

/* A Hugging Face folder's tokenizer.json (text/tokenizer.h: tokenizer_import_hf, which reads
 * tokenizer_config.json beside it too), else bytes for a 256-token model. Its vocabulary may
 * be smaller than the model's: HF models pad their embedding (Qwen2's 151,936 rows for
 * 151,665 tokens), and those rows are never a text's. */
static int hf_tokenizer(const char *path, int32_t vocab, tokenizer **tok) {
    char dir[4096], json[4096 + 32], err[1024];
    gpt_hf_dir(path, dir, sizeof dir);
    snprintf(json, sizeof json, "%s/tokenizer.json", dir);
    FILE *probe = fopen(json, "rb");
    if (!probe) return gpt_tokenizer_choose(NULL, NULL, vocab, tok);
    fclose(probe);
    if (tokenizer_import_hf(json, tok, err, sizeof err)) return host_error("%s", err);
    apply_config_roles(dir, *tok);
    if (vocab < 0 || tokenizer_vocab_size(*tok) <= vocab) return 0;
    host_error("%s has %d tokens but the model's vocabulary %d", json, tokenizer_vocab_size(*tok), vocab);
    tokenizer_free(*tok);
    *tok = NULL;
    return 1;
}

int host_load_tokenizer(const char *path, const char *tok_path, int32_t vocab, tokenizer **tok) {
    char err[1024];
    *tok = NULL;
    if (tok_path) return gpt_tokenizer_choose(tok_path, NULL, vocab, tok);
    if (gpt_hf_is_folder(path)) return hf_tokenizer(path, vocab, tok);
    if (!host_is_gguf(path)) return gpt_tokenizer_choose(NULL, path, vocab, tok);
    gguf_file *f;
    if (gguf_open(path, &f, err, sizeof err)) return host_error("%s", err);
    int rc = gguf_find_kv(f, "tokenizer.ggml.model") && tokenizer_from_gguf(f, tok, err, sizeof err) ? 1 : 0;
    gguf_close(f);
    if (rc) return host_error("%s: %s", path, err);
    if (*tok && vocab >= 0 && tokenizer_vocab_size(*tok) != vocab) {
        tokenizer_free(*tok);
        *tok = NULL;
        return host_error("%s: tokenizer.ggml.tokens is not %d strings", path, vocab);
    }
    return *tok ? 0 : gpt_tokenizer_choose(NULL, NULL, vocab, tok);
}

int host_load_gpt(kiln_ctx *ctx, const char *path, const char *tok_path, gpt_model **m, tokenizer **tok) {
    return host_load_gpt_as(ctx, path, tok_path, KILN_F32, m, tok);
}

/* A model file of 100 MB or more (a Hugging Face folder: its model.safetensors) takes a
 * second or more to read and upload: it says so first. */
static void say_loading(const char *path) {
    struct stat st;
    char file[4200];
    if (stat(path, &st)) return;
    if (S_ISDIR(st.st_mode)) {
        snprintf(file, sizeof file, "%s/model.safetensors", path);
        if (stat(file, &st)) return;
    }
    if (st.st_size >= 100 * 1000 * 1000)
        fprintf(stderr, "kiln: loading %s (%.0f MB)...\n", path, (double)st.st_size / 1e6);
}

/* host_load_gpt_as, a GGUF's quantized matrices in blocks when keep_blocks, else floats. */
static int load_gpt(kiln_ctx *ctx, const char *path, const char *tok_path, kiln_dtype dtype, int keep_blocks,
                    gpt_model **m, tokenizer **tok) {
    char err[1024];
    *m = NULL;
    *tok = NULL;
    say_loading(path);
    if (host_is_gguf(path)) {
        if (keep_blocks ? gpt_load_gguf_as(ctx, path, dtype, m, tok, err, sizeof err)
                        : gpt_load_gguf_floats(ctx, path, m, tok, err, sizeof err))
            return host_error("%s", err);
        if (!tok_path && *tok) return 0; /* a Llama-family file may come without tokenizer.ggml.* */
        tokenizer_free(*tok); /* --tokenizer wins over the file's own */
        *tok = NULL;
        return gpt_tokenizer_choose(tok_path, NULL, (*m)->cfg.vocab_size, tok);
    }
    if (host_load_gpt_model_as(ctx, path, dtype, m, err, sizeof err)) return host_error("%s", err);
    return host_load_tokenizer(path, tok_path, (*m)->cfg.vocab_size, tok);
}

int host_load_gpt_as(kiln_ctx *ctx, const char *path, const char *tok_path, kiln_dtype dtype, gpt_model **m,
                     tokenizer **tok) {
    return load_gpt(ctx, path, tok_path, dtype, 1, m, tok);
}

int host_load_gpt_floats(kiln_ctx *ctx, const char *path, const char *tok_path, gpt_model **m, tokenizer **tok) {
    return load_gpt(ctx, path, tok_path, KILN_F32, 0, m, tok);
}
