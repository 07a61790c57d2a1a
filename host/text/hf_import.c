/* `kiln tokenizer import --hf tokenizer.json`: a Hugging Face tokenizer (a BPE model and
 * the components around it) as a version 2 kiln tokenizer.
 *
 * The vocabulary's strings become bytes: through GPT-2's byte-to-unicode map when the
 * pre-tokenizer is ByteLevel (Llama 3, Qwen, SmolLM), else as they are, UTF-8 with "▁"
 * for spaces (Llama 2, Mistral), where "<0xNN>" is the byte NN (byte fallback). The merges
 * keep their ranks; each joins two tokens into the token of their joined strings. The
 * added tokens are specials: decoding writes their text, encoding never makes them from text
 * (the string "<|im_end|>" in data stays data). Their roles come from tokenizer_config.json
 * beside the file when there is one (bos_token, eos_token, pad_token, unk_token,
 * add_bos_token), else from the post_processor's template; the end-of-generation tokens
 * are EOS and the added tokens llama.cpp takes for the end of a turn or message. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "formats/error_printf.h"
#include "formats/file_open.h"
#include "text/hf_import.h"
#include "text/tokenizer_internal.h"

#define HF_ERROR(im, ...) (error_printf((im)->msg, sizeof (im)->msg, __VA_ARGS__), -1)
#define TOKEN_ARG(s, len) (int)((len) > 40 ? 40 : (len)), (s)

/* "<0xNN>": the byte NN, else -1. */
static int fallback_byte(const char *s, size_t len) {
    static const char hex[] = "0123456789ABCDEF";
    if (len != 6 || memcmp(s, "<0x", 3) || s[5] != '>') return -1;
    const char *hi = memchr(hex, s[3], 16), *lo = memchr(hex, s[4], 16);
    return hi && lo && s[3] && s[4] ? (int)((hi - hex) * 16 + (lo - hex)) : -1;
}

/* The vocabulary's size: one more than the largest id of the vocab and the added tokens. */
static int vocab_size(hf_import *im, const json_value *vocab, const json_value *added, int32_t *n) {
    int64_t max = -1, id;
    for (size_t i = 0; i < json_count(vocab); i++) {
        if (!json_as_int64(json_at(vocab, i), &id) || id < 0 || id >= TOKENIZER_MAX_VOCAB)
            return HF_ERROR(im, "model.vocab: the id of \"%.*s\" is not a whole number below %d",
                            TOKEN_ARG(json_key_at(vocab, i), json_key_len_at(vocab, i)), TOKENIZER_MAX_VOCAB);
        if (id > max) max = id;
    }
    for (size_t i = 0; i < json_count(added); i++) {
        if (!json_as_int64(json_get(json_at(added, i), "id"), &id) || id < 0 || id >= TOKENIZER_MAX_VOCAB ||
            !json_as_string(json_get(json_at(added, i), "content")))
            return HF_ERROR(im, "added_tokens[%zu]: needs an \"id\" below %d and a \"content\" string", i,
                            TOKENIZER_MAX_VOCAB);
        if (id > max) max = id;
    }
    if (max < 255) return HF_ERROR(im, "model.vocab: fewer than 256 tokens");
    *n = (int32_t)(max + 1);
    return 0;
}

/* The byte tokens (one-byte tokens of a ByteLevel vocabulary, or <0xNN>), then the others. */
static int read_vocab(hf_import *im, const json_value *vocab, const uint8_t *added) {
    tokenizer *t = im->t;
    int32_t byte_ids[256];
    char msg[200];
    uint8_t *buf = NULL;
    size_t cap = 0;
    for (int b = 0; b < 256; b++) byte_ids[b] = -1;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < json_count(vocab); i++) {
            const char *key = json_key_at(vocab, i);
            size_t klen = json_key_len_at(vocab, i);
            int64_t id;
            json_as_int64(json_at(vocab, i), &id);
            if (added[id]) continue;
            if (klen > cap && !(buf = realloc(buf, cap = 2 * klen + 16))) return HF_ERROR(im, "out of memory");
            long n = tok_unspell(t, key, klen, buf);
            if (n < 0) {
                free(buf);
                return HF_ERROR(im, "model.vocab: \"%.*s\" is not in ByteLevel's spelling of bytes", TOKEN_ARG(key, klen));
            }
            int byte = t->byte_level ? (n == 1 ? buf[0] : -1) : t->byte_fallback ? fallback_byte(key, klen) : -1;
            if (pass == 0 && byte >= 0) {
                if (byte_ids[byte] >= 0) {
                    free(buf);
                    return HF_ERROR(im, "model.vocab: two tokens for the byte 0x%02X", (unsigned)byte);
                }
                byte_ids[byte] = (int32_t)id;
            } else if (pass == 1 && byte < 0 && tok_add_token(t, (int32_t)id, buf, (size_t)n, msg, sizeof msg)) {
                free(buf);
                return HF_ERROR(im, "model.vocab: \"%.*s\": %s", TOKEN_ARG(key, klen), msg);
            }
        }
        for (int b = 0; pass == 0 && b < 256; b++)
            if (byte_ids[b] < 0) {
                free(buf);
                return HF_ERROR(im, "model.vocab: no token for the byte 0x%02X%s", (unsigned)b,
                                t->byte_level ? "" : " (<0xNN> tokens)");
            }
        if (pass == 0 && tok_set_bytes(t, byte_ids, msg, sizeof msg)) {
            free(buf);
            return HF_ERROR(im, "model.vocab: %s", msg);
        }
    }
    free(buf);
    return 0;
}

/* One merge, "LEFT RIGHT" or ["LEFT", "RIGHT"]: the three tokens by their bytes. */
static int read_merge(hf_import *im, const json_value *m, size_t rank, tok_buf *scratch) {
    const char *part[2];
    size_t plen[2];
    const char *s = json_as_string(m);
    if (s) {
        const char *sp = strchr(s, ' ');
        if (!sp || strchr(sp + 1, ' ') || sp == s || !sp[1])
            return HF_ERROR(im, "model.merges[%zu]: expected two tokens separated by one space", rank);
        part[0] = s, plen[0] = (size_t)(sp - s), part[1] = sp + 1, plen[1] = strlen(sp + 1);
    } else if (json_count(m) == 2 && m->type == JSON_ARRAY && json_as_string(json_at(m, 0)) && json_as_string(json_at(m, 1))) {
        for (int k = 0; k < 2; k++) part[k] = json_as_string(json_at(m, (size_t)k)), plen[k] = json_string_len(json_at(m, (size_t)k));
    } else {
        return HF_ERROR(im, "model.merges[%zu]: expected \"LEFT RIGHT\" or [\"LEFT\", \"RIGHT\"]", rank);
    }
    int32_t id[3];
    size_t at[2];
    scratch->len = 0;
    for (int k = 0; k < 2; k++) {
        if (tok_buf_put(scratch, NULL, plen[k])) return HF_ERROR(im, "out of memory");
        at[k] = scratch->len - plen[k];
        long n = tok_unspell(im->t, part[k], plen[k], scratch->p + at[k]);
        scratch->len = at[k] + (size_t)(n < 0 ? 0 : n);
        id[k] = n < 0 ? -1 : tok_lookup(im->t, scratch->p + at[k], (size_t)n);
        if (id[k] < 0) return HF_ERROR(im, "model.merges[%zu]: \"%.*s\" is not in the vocabulary", rank, TOKEN_ARG(part[k], plen[k]));
    }
    id[2] = tok_lookup(im->t, scratch->p, scratch->len);
    if (id[2] < 0)
        return HF_ERROR(im, "model.merges[%zu]: \"%.*s\" joined with \"%.*s\" is not in the vocabulary", rank,
                        TOKEN_ARG(part[0], plen[0]), TOKEN_ARG(part[1], plen[1]));
    char msg[200];
    if (tok_add_merge(im->t, id[0], id[1], id[2], msg, sizeof msg)) return HF_ERROR(im, "model.merges[%zu]: %s", rank, msg);
    return 0;
}

static int read_merges(hf_import *im, const json_value *merges) {
    char msg[200];
    tok_buf scratch = {0};
    int rc = tok_build_lookup(im->t, msg, sizeof msg) ? HF_ERROR(im, "%s", msg) : 0;
    for (size_t i = 0; i < json_count(merges) && !rc; i++) rc = read_merge(im, json_at(merges, i), i, &scratch);
    free(scratch.p);
    return rc;
}

/* A special token named in tokenizer_config.json: "text" or {"content": "text"}. */
static const char *config_token(const json_value *config, const char *key) {
    const json_value *v = json_get(config, key);
    const char *s = json_as_string(v);
    return s ? s : json_as_string(json_get(v, "content"));
}

static int same(const char *a, const char *b, size_t blen) { return a && strlen(a) == blen && !memcmp(a, b, blen); }

/* The roles of the added token `content`. */
static unsigned token_roles(const hf_import *im, const json_value *config, const char *unk, const char *content,
                            size_t len) {
    unsigned roles = 0;
    if (same(config ? config_token(config, "bos_token") : im->template_bos, content, len)) roles |= 1u << TOK_BOS;
    if (same(config ? config_token(config, "eos_token") : im->template_eos, content, len)) roles |= 1u << TOK_EOS;
    if (config && same(config_token(config, "pad_token"), content, len)) roles |= 1u << TOK_PAD;
    if (same(config && config_token(config, "unk_token") ? config_token(config, "unk_token") : unk, content, len))
        roles |= 1u << TOKROLE_UNK;
    if (!(roles >> TOK_EOS & 1) && tok_is_eog_name(content, len)) roles |= 1u << TOKROLE_EOG;
    return roles;
}

static int read_added(hf_import *im, const json_value *added, const json_value *config, const char *unk) {
    char msg[200];
    for (size_t i = 0; i < json_count(added); i++) {
        const json_value *a = json_at(added, i);
        int64_t id;
        json_as_int64(json_get(a, "id"), &id);
        const char *content = json_as_string(json_get(a, "content"));
        size_t len = json_string_len(json_get(a, "content"));
        if (tok_add_special(im->t, (int32_t)id, content, len, token_roles(im, config, unk, content, len), msg, sizeof msg))
            return HF_ERROR(im, "added_tokens[%zu] (\"%.*s\"): %s", i, TOKEN_ARG(content, len), msg);
    }
    int flag;
    const json_value *add_bos = json_get(config, "add_bos_token"), *add_eos = json_get(config, "add_eos_token");
    im->t->add_bos = add_bos && json_as_bool(add_bos, &flag) ? flag : im->template_bos != NULL;
    im->t->add_eos = add_eos && json_as_bool(add_eos, &flag) ? flag : im->template_eos != NULL;
    return 0;
}

/* The model's options kiln follows; the ones it does not are refused. */
static int read_model_options(hf_import *im, const json_value *model) {
    const char *type = json_as_string(json_get(model, "type"));
    const json_value *dropout = json_get(model, "dropout");
    if (!model || model->type != JSON_OBJECT) return HF_ERROR(im, "no \"model\" object");
    if (type && strcmp(type, "BPE")) return HF_ERROR(im, "model type %.40s is not supported (only BPE)", type);
    if (dropout && dropout->type != JSON_NULL) return HF_ERROR(im, "model.dropout is not supported");
    static const char *const affixes[] = {"continuing_subword_prefix", "end_of_word_suffix"};
    for (int k = 0; k < 2; k++) {
        const json_value *v = json_get(model, affixes[k]);
        if (v && v->type != JSON_NULL && json_string_len(v) != 0) return HF_ERROR(im, "model.%s is not supported", affixes[k]);
    }
    const json_value *fb = json_get(model, "byte_fallback"), *ig = json_get(model, "ignore_merges");
    if ((fb && fb->type != JSON_NULL && !json_as_bool(fb, &im->t->byte_fallback)) ||
        (ig && ig->type != JSON_NULL && !json_as_bool(ig, &im->t->ignore_merges)))
        return HF_ERROR(im, "model.byte_fallback and model.ignore_merges must be true or false");
    if (json_get(model, "vocab") == NULL || json_get(model, "vocab")->type != JSON_OBJECT ||
        json_get(model, "merges") == NULL || json_get(model, "merges")->type != JSON_ARRAY)
        return HF_ERROR(im, "model needs a \"vocab\" object and a \"merges\" array");
    return 0;
}

static int import_root(hf_import *im, const json_value *root, const json_value *config) {
    const json_value *model = json_get(root, "model"), *added = json_get(root, "added_tokens");
    const json_value *vocab = json_get(model, "vocab");
    int32_t n = 1;
    const char *type = json_as_string(json_get(model, "type"));
    if (!model || model->type != JSON_OBJECT) return HF_ERROR(im, "no \"model\" object");
    if (type && strcmp(type, "BPE")) return HF_ERROR(im, "model type %.40s is not supported (only BPE)", type);
    if (!json_get(model, "vocab") || vocab->type != JSON_OBJECT) return HF_ERROR(im, "model needs a \"vocab\" object");
    if (added && added->type != JSON_ARRAY) return HF_ERROR(im, "\"added_tokens\" must be an array");
    /* the components first: a refused one is named even when the vocabulary is wrong too */
    char size_msg[sizeof im->msg];
    int size_rc = vocab_size(im, vocab, added, &n);
    memcpy(size_msg, im->msg, sizeof size_msg);
    if (!(im->t = tok_new(size_rc ? 1 : n, PRETOK_STEPS))) return HF_ERROR(im, "out of memory");
    im->t->version = 2;
    if (read_model_options(im, model) || hf_read_pipeline(im, root)) return -1;
    if (size_rc) {
        memcpy(im->msg, size_msg, sizeof size_msg);
        return -1;
    }
    im->t->byte_level |= im->decoder_byte_level;
    if (!im->t->byte_level && !im->t->byte_fallback)
        return HF_ERROR(im, "a model without ByteLevel needs model.byte_fallback true (characters without a token)");
    uint8_t *is_added = calloc((size_t)n, 1);
    if (!is_added) return HF_ERROR(im, "out of memory");
    for (size_t i = 0; i < json_count(added); i++) {
        int64_t id;
        json_as_int64(json_get(json_at(added, i), "id"), &id);
        is_added[id] = 1;
    }
    const char *unk = json_as_string(json_get(model, "unk_token"));
    int rc = read_vocab(im, vocab, is_added) || read_added(im, added, config, unk) ||
             read_merges(im, json_get(model, "merges"));
    free(is_added);
    char msg[200];
    if (!rc && tok_finish(im->t, msg, sizeof msg)) rc = HF_ERROR(im, "%s", msg);
    return rc;
}

int tokenizer_import_hf_memory(const char *json, size_t len, const char *name, const char *config_json,
                               size_t config_len, tokenizer **out, char *err, size_t errlen) {
    hf_import im = {0};
    json_value *root = NULL, *config = NULL;
    char msg[256];
    *out = NULL;
    int rc = 0;
    if (json_parse(json, len, &root, msg, sizeof msg)) {
        error_printf(err, errlen, "%s: %s", name, msg);
        return -1;
    }
    if (config_json && json_parse(config_json, config_len, &config, msg, sizeof msg)) {
        error_printf(err, errlen, "%s's tokenizer_config.json: %s", name, msg);
        rc = -1;
    }
    if (!rc && import_root(&im, root, config)) {
        error_printf(err, errlen, "%s: %s", name, im.msg);
        rc = -1;
    }
    json_free(root);
    json_free(config);
    free(im.template_bos);
    free(im.template_eos);
    if (rc) tokenizer_free(im.t);
    else *out = im.t;
    return rc;
}

int tokenizer_import_hf(const char *path, tokenizer **out, char *err, size_t errlen) {
    char *json = NULL, *config = NULL;
    size_t len, config_len = 0;
    *out = NULL;
    if (file_read_all(path, "tokenizer.json", &json, &len, err, errlen)) return -1;
    /* tokenizer_config.json beside it, when there is one */
    const char *slash = strrchr(path, '/');
    size_t dir = slash ? (size_t)(slash - path + 1) : 0;
    char *config_path = malloc(dir + sizeof "tokenizer_config.json");
    if (!config_path) {
        free(json);
        error_printf(err, errlen, "out of memory");
        return -1;
    }
    {
        memcpy(config_path, path, dir);
        memcpy(config_path + dir, "tokenizer_config.json", sizeof "tokenizer_config.json");
        FILE *probe = fopen(config_path, "rb");
        if (probe) {
            fclose(probe);
            if (file_read_all(config_path, "tokenizer_config.json", &config, &config_len, err, errlen)) {
                free(config_path);
                free(json);
                return -1;
            }
        }
    }
    free(config_path);
    int rc = tokenizer_import_hf_memory(json, len, path, config, config_len, out, err, errlen);
    free(json);
    free(config);
    return rc;
}
