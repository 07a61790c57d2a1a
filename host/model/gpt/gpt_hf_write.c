/* A GPT as a Hugging Face folder (gpt_hf.h: gpt_export_hf). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/file_open.h"
#include "formats/json.h"
#include "formats/safetensors.h"
#include "kiln/file.h"
#include "model/gpt/gpt_export.h"
#include "model/gpt/gpt_gguf.h"
#include "model/gpt/gpt_hf.h"
#include "text/gpt2_bytes.h"

/* A growing text (config.json, tokenizer.json). */
typedef struct text {
    char *s;
    size_t n, cap;
    int failed;
} text;

static void add(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(text *t, const char *fmt, ...) {
    for (int tries = 0; tries < 2 && !t->failed; tries++) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(t->s ? t->s + t->n : NULL, t->s ? t->cap - t->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0) t->failed = 1;
        else if (t->s && (size_t)k < t->cap - t->n) return (void)(t->n += (size_t)k);
        size_t cap = (t->cap + (size_t)k + 1) * 2;
        char *grown = realloc(t->s, cap);
        if (!grown) t->failed = 1;
        t->s = grown, t->cap = cap;
    }
}

/* A JSON string of s. */
static void add_string(text *t, const char *s) {
    size_t need = json_escape(s, NULL, 0);
    char *buf = malloc(need + 1);
    if (!buf) return (void)(t->failed = 1);
    json_escape(s, buf, need + 1);
    add(t, "%s", buf);
    free(buf);
}

/* The shortest decimal that reads back as the same float (1e-05, not 9.99999975e-06), as
 * Python writes a config's numbers. */
static void add_float(text *t, float x) {
    char buf[32];
    for (int digits = 1; digits <= 9; digits++) {
        snprintf(buf, sizeof buf, "%.*g", digits, (double)x);
        if (strtof(buf, NULL) == x) break;
    }
    add(t, "%s", buf);
}

/* rope_scaling: llama3's parameters, or null. */
static void add_rope_scaling(text *t, const gpt_rope_llama3 *s) {
    if (!s) return add(t, ",\n  \"rope_scaling\": null");
    add(t, ",\n  \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": ");
    add_float(t, (float)s->factor);
    add(t, ", \"low_freq_factor\": ");
    add_float(t, (float)s->low_freq_factor);
    add(t, ", \"high_freq_factor\": ");
    add_float(t, (float)s->high_freq_factor);
    add(t, ", \"original_max_position_embeddings\": %.0f}", s->original_max_position_embeddings);
}

static void add_special_ids(text *t, const tokenizer *tok) {
    int32_t bos = tok ? tokenizer_special(tok, TOK_BOS) : -1, eos = tok ? tokenizer_special(tok, TOK_EOS) : -1;
    if (bos >= 0) add(t, ",\n  \"bos_token_id\": %d", bos);
    if (eos >= 0) add(t, ",\n  \"eos_token_id\": %d", eos);
}

/* config.json as transformers' config classes spell it. */
static void config_json(text *t, const gpt_config *c, const char *arch, const char *dtype, const tokenizer *tok,
                        const gpt_rope_llama3 *scaling) {
    if (!arch) {
        add(t, "{\n  \"architectures\": [\"GPT2LMHeadModel\"],\n  \"model_type\": \"gpt2\",\n  \"n_layer\": %d,\n"
               "  \"n_head\": %d,\n  \"n_embd\": %d,\n  \"n_positions\": %d,\n  \"n_ctx\": %d,\n  \"n_inner\": null,\n"
               "  \"vocab_size\": %d,\n  \"activation_function\": \"gelu_new\",\n"
               "  \"tie_word_embeddings\": true,\n  \"torch_dtype\": \"%s\",\n  \"layer_norm_epsilon\": ",
            c->n_layer, c->n_head, c->n_embd, c->n_positions, c->n_positions, c->vocab_size, dtype);
        add_float(t, c->ln_eps);
    } else {
        static const char *const classes[][2] = {{"llama", "LlamaForCausalLM"}, {"qwen2", "Qwen2ForCausalLM"},
                                                 {"qwen3", "Qwen3ForCausalLM"}};
        const char *cls = classes[!strcmp(arch, "qwen2") ? 1 : !strcmp(arch, "qwen3") ? 2 : 0][1];
        block_config b = gpt_block_config(c);
        add(t, "{\n  \"architectures\": [\"%s\"],\n  \"model_type\": \"%s\",\n  \"num_hidden_layers\": %d,\n"
               "  \"num_attention_heads\": %d,\n  \"num_key_value_heads\": %d,\n  \"head_dim\": %d,\n"
               "  \"hidden_size\": %d,\n  \"intermediate_size\": %d,\n  \"max_position_embeddings\": %d,\n"
               "  \"vocab_size\": %d,\n  \"hidden_act\": \"silu\",\n  \"attention_bias\": %s,\n"
               "  \"tie_word_embeddings\": %s,\n  \"torch_dtype\": \"%s\",\n  \"rms_norm_eps\": ",
            cls, arch, c->n_layer, c->n_head, block_kv_heads(&b), block_head_dim(&b), c->n_embd, block_ffn(&b),
            c->n_positions, c->vocab_size, c->block.bias == BLOCK_BIAS_QKV ? "true" : "false",
            c->untied ? "false" : "true", dtype);
        add_float(t, c->ln_eps);
        add(t, ",\n  \"rope_theta\": ");
        add_float(t, c->block.rope_base > 0 ? c->block.rope_base : 10000.0f);
        add_rope_scaling(t, scaling);
    }
    add_special_ids(t, tok);
    add(t, "\n}\n");
}

/* 1 for a version 1 tokenizer (kiln's bytes, trained BPEs and GPT-2's): GPT-2's kind of
 * tokenizer.json holds it; *regex says whether it splits with GPT-2's pattern. A version 2
 * one (a Hugging Face import: its own pipeline) has no writer here. */
static int gpt2_style(const tokenizer *tok, int *regex) {
    size_t n;
    char *s = tokenizer_serialize(tok, &n);
    int v1 = s && !strncmp(s, TOKENIZER_MAGIC "\n", strlen(TOKENIZER_MAGIC) + 1);
    *regex = v1 && !strstr(s, "\npretokenizer none\n");
    free(s);
    return v1;
}

/* tokenizer.json of a byte-level BPE (GPT-2's kind: kiln's byte and BPE tokenizers): the
 * vocabulary in GPT-2's byte spelling, the merges by rank, the specials as added tokens. */
static int tokenizer_json(text *t, const tokenizer *tok, int regex) {
    int32_t n = tokenizer_vocab_size(tok), merges = tokenizer_merge_count(tok);
    char **spelled = calloc((size_t)n, sizeof *spelled);
    if (!spelled) return -1;
    for (int32_t id = 0; id < n && !t->failed; id++) {
        size_t len;
        uint8_t *name;
        char err[64];
        if (tokenizer_is_special(tok, id)) { /* a special is its name ("<|endoftext|>") */
            if (tokenizer_decode(tok, &id, 1, &name, &len, err, sizeof err) || !(spelled[id] = realloc(name, len + 1)))
                t->failed = 1;
            else spelled[id][len] = '\0';
            continue;
        }
        const uint8_t *b = tokenizer_token_bytes(tok, id, &len);
        if (!(spelled[id] = malloc(2 * len + 1))) t->failed = 1;
        size_t at = 0;
        for (size_t i = 0; spelled[id] && i < len; i++) at += (size_t)gpt2_byte_spell(b[i], spelled[id] + at);
        if (spelled[id]) spelled[id][at] = '\0';
    }
    add(t, "{\n  \"version\": \"1.0\",\n  \"added_tokens\": [");
    for (int32_t id = 0, first = 1; id < n; id++)
        if (tokenizer_is_special(tok, id)) {
            add(t, "%s\n    {\"id\": %d, \"content\": ", first ? "" : ",", id);
            add_string(t, spelled[id]);
            add(t, ", \"single_word\": false, \"lstrip\": false, \"rstrip\": false, \"normalized\": false, "
                   "\"special\": true}");
            first = 0;
        }
    add(t, "],\n  \"normalizer\": null,\n  \"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false, "
           "\"trim_offsets\": true, \"use_regex\": %s},\n  \"post_processor\": null,\n", regex ? "true" : "false");
    add(t, "  \"decoder\": {\"type\": \"ByteLevel\", \"add_prefix_space\": true, \"trim_offsets\": true, "
           "\"use_regex\": true},\n  \"model\": {\"type\": \"BPE\", \"dropout\": null, \"unk_token\": null, "
           "\"continuing_subword_prefix\": null, \"end_of_word_suffix\": null, \"fuse_unk\": false, "
           "\"byte_fallback\": false,\n    \"vocab\": {");
    for (int32_t id = 0; id < n; id++) {
        add(t, "%s", id ? ", " : "");
        add_string(t, spelled[id]);
        add(t, ": %d", id);
    }
    add(t, "},\n    \"merges\": [");
    for (int32_t r = 0; r < merges; r++) {
        int32_t left, right;
        if (tokenizer_merge_at(tok, r, &left, &right)) t->failed = 1;
        else {
            size_t len = strlen(spelled[left]) + strlen(spelled[right]) + 2;
            char *pair = malloc(len);
            if (!pair) t->failed = 1;
            else snprintf(pair, len, "%s %s", spelled[left], spelled[right]), add(t, "%s", r ? ", " : ""),
                add_string(t, pair);
            free(pair);
        }
    }
    add(t, "]\n  }\n}\n");
    for (int32_t id = 0; id < n; id++) free(spelled[id]);
    free(spelled);
    return t->failed ? -1 : 0;
}

/* The sink: each piece into the safetensors writer (copied) in the folder's dtype. */
typedef struct st_sink {
    st_writer *w;
    const char *dtype; /* "F32", "F16", "BF16" */
} st_sink;

static uint16_t to_bf16(float x) { /* round to nearest even, as torch's .to(bfloat16) */
    uint32_t b;
    memcpy(&b, &x, 4);
    if ((b & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((b >> 16) | 0x40); /* NaN stays NaN */
    return (uint16_t)((b + 0x7fffu + ((b >> 16) & 1)) >> 16);
}

static int add_tensor(void *ctx, const char *name, int ndim, int64_t rows, int64_t cols, const float *v, char *err,
                      size_t errlen) {
    st_sink *s = ctx;
    int64_t shape[2] = {rows, cols}, n = rows * cols;
    if (!strcmp(s->dtype, "F32")) return st_writer_add(s->w, name, "F32", ndim, shape, v, (size_t)n * 4) ? -1 : 0;
    uint16_t *h = malloc((size_t)(n ? n : 1) * 2);
    if (!h) return snprintf(err, errlen, "%s: out of memory", name), -1;
    for (int64_t i = 0; i < n; i++) h[i] = !strcmp(s->dtype, "F16") ? kiln_f32_to_f16(v[i]) : to_bf16(v[i]);
    int rc = st_writer_add(s->w, name, s->dtype, ndim, shape, h, (size_t)n * 2) ? -1 : 0;
    free(h);
    return rc;
}

/* The llama3 parameters of the model's rope.freqs (gpt_rope_llama3_fit). */
static int fit_rope_scaling(const gpt_model *m, gpt_rope_llama3 *out) {
    gpt_param *p = gpt_find_param((gpt_model *)m, "rope.freqs");
    block_config b = gpt_block_config(&m->cfg);
    int64_t n = p ? kiln_numel(p->t) : 0;
    float *f = n ? malloc((size_t)n * sizeof *f) : NULL;
    int rc = f && !kiln_download_f32(p->t, f, n) &&
                     !gpt_rope_llama3_fit(f, (int)n, block_head_dim(&b), m->cfg.block.rope_base > 0 ? m->cfg.block.rope_base : 10000, out)
                 ? 0
                 : -1;
    free(f);
    return rc;
}


static int write_text(const char *dir, const char *file, const text *t, char *err, size_t errlen) {
    char path[4096 + 32];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    if (t->failed) return snprintf(err, errlen, "%s: out of memory", path), -1;
    return kiln_file_write_all(path, t->s, t->n, err, errlen) ? -1 : 0;
}

/* The source folder's tokenizer files, byte for byte (0 when it has tokenizer.json, 1 when
 * not, -1 on an error). */
static int copy_tokenizer(const char *source, const char *dir, char *err, size_t errlen) {
    static const char *const files[] = {"tokenizer.json", "tokenizer_config.json"};
    int found = 1;
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char from[4096 + 32], *bytes;
        size_t n;
        snprintf(from, sizeof from, "%s/%s", source, files[i]);
        FILE *probe = fopen(from, "rb");
        if (!probe) continue;
        fclose(probe);
        if (file_read_all(from, files[i], &bytes, &n, err, errlen)) return -1;
        text t = {.s = bytes, .n = n};
        int rc = write_text(dir, files[i], &t, err, errlen);
        free(bytes);
        if (rc) return -1;
        if (i == 0) found = 0;
    }
    return found;
}

/* tokenizer.json: the source folder's, else written for a version 1 tokenizer. */
static int write_tokenizer(const tokenizer *tok, const char *source, const char *dir, char *err, size_t errlen) {
    int regex, rc = source ? copy_tokenizer(source, dir, err, errlen) : 1;
    if (rc <= 0) return rc;
    if (!gpt2_style(tok, &regex))
        return snprintf(err, errlen, "this tokenizer (imported from Hugging Face or GGUF) has no tokenizer.json writer: "
                        "export from the model's Hugging Face folder, whose tokenizer.json is copied"), -1;
    text tj = {0};
    rc = tokenizer_json(&tj, tok, regex) ? (snprintf(err, errlen, "out of memory"), -1) : 0;
    if (rc == 0) rc = write_text(dir, "tokenizer.json", &tj, err, errlen);
    free(tj.s);
    return rc;
}

int gpt_export_hf(const gpt_model *m, const tokenizer *tok, const char *dtype, const gpt_rope_llama3 *scaling,
                  const char *source, const char *dir, char *err, size_t errlen) {
    const gpt_config *c = &m->cfg;
    int gpt2 = c->block.norm_type == BLOCK_NORM_TYPE_LAYERNORM && c->block.mlp == BLOCK_MLP_GELU && !c->block.rope;
    const char *arch = gpt2 ? NULL : gpt_llama_arch(c, err, errlen);
    if (!gpt2 && !arch) return -1;
    char option[64];
    if (gpt2 && gpt_not_gpt2(c, option, sizeof option))
        return snprintf(err, errlen, "this model has %s, which Hugging Face's GPT2LMHeadModel cannot hold", option), -1;
    gpt_rope_llama3 fitted;
    if (c->rope_freqs && !scaling) {
        if (fit_rope_scaling(m, &fitted))
            return snprintf(err, errlen, "the rope scaling's parameters (config.json's rope_scaling) are not known for "
                            "this model and no llama3 scaling gives its rope.freqs: export it as GGUF"), -1;
        scaling = &fitted;
    }
    if (tok && tokenizer_vocab_size(tok) != c->vocab_size)
        return snprintf(err, errlen, "the tokenizer has %d tokens but the model %d", tokenizer_vocab_size(tok),
                        c->vocab_size), -1;
    if (mkdir(dir, 0777) && errno != EEXIST) return snprintf(err, errlen, "%s: %s", dir, strerror(errno)), -1;
    text config = {0};
    config_json(&config, c, arch, !strcmp(dtype, "F32") ? "float32" : !strcmp(dtype, "F16") ? "float16" : "bfloat16",
                tok, c->rope_freqs ? scaling : NULL);
    st_sink s = {.w = st_writer_new(), .dtype = dtype};
    gpt_names names = gpt_names_for(gpt2 ? GPT_NAMES_HF_GPT2 : GPT_NAMES_HF, c);
    names.prefix = "transformer.";
    char path[4096 + 32];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    int rc = s.w ? 0 : (snprintf(err, errlen, "out of memory"), -1);
    if (rc == 0) st_writer_meta(s.w, "format", "pt");
    if (rc == 0) rc = gpt_export_pieces(m, &names, add_tensor, &s, err, errlen);
    if (rc == 0) rc = st_writer_save(s.w, path, err, errlen);
    if (rc == 0) rc = write_text(dir, "config.json", &config, err, errlen);
    if (rc == 0 && tok) rc = write_tokenizer(tok, source, dir, err, errlen);
    st_writer_free(s.w);
    free(config.s);
    return rc;
}
